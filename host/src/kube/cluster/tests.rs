//! The cluster target against `kube-double`, the API-server test double
//! (test-support/kube-double), in process: each test starts a double, connects a
//! [`ClusterTarget`] through the kubeconfig the double writes, applies
//! plans made by [`plan_apply`], and checks the objects the double holds
//! and the requests it recorded.

use std::time::{Duration, Instant};

use kube_double::{Fault, FaultKind, KubeDouble, Options, RecordedRequest};
use serde_json::{Value, json};

use super::error::Error;
use super::{ClusterOptions, ClusterTarget, Connect, RetryPolicy};
use crate::kube::target::{ApplyOptions, NoProgress, Purge, RemoveOptions};
use crate::kube::{ApplyTarget, Release, Resource, parse_manifests, plan_apply};

pub(super) struct Fixture {
    pub(super) double: KubeDouble,
    pub(super) target: ClusterTarget,
    _dir: tempfile::TempDir,
}

pub(super) fn options() -> ClusterOptions {
    ClusterOptions {
        retry: RetryPolicy {
            first_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(200),
            budget: Duration::from_secs(10),
            request_timeout: Duration::from_secs(5),
        },
        timeout: Duration::from_secs(10),
        poll_interval: Duration::from_millis(50),
        discovery_wait: Duration::from_secs(5),
    }
}

pub(super) fn start(double: Options, options: ClusterOptions) -> Fixture {
    let double = KubeDouble::start(double).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    double.write_kubeconfig(&path).unwrap();
    let connect = Connect::Kubeconfig {
        path,
        context: None,
    };
    let target = ClusterTarget::connect(&connect, options).unwrap();
    Fixture {
        double,
        target,
        _dir: dir,
    }
}

pub(super) fn fixture() -> Fixture {
    start(Options::default(), options())
}

pub(super) fn release() -> Release {
    Release {
        app: "shop".into(),
        chart: "web".into(),
        namespace: "shop".into(),
        release_name: "web".into(),
    }
}

pub(super) fn apply_text(
    f: &Fixture,
    text: &str,
    options: &ApplyOptions,
) -> Result<crate::kube::Applied, crate::kube::Error> {
    let desired = parse_manifests(text).unwrap();
    apply(f, &desired, options)
}

pub(super) fn apply(
    f: &Fixture,
    desired: &[Resource],
    options: &ApplyOptions,
) -> Result<crate::kube::Applied, crate::kube::Error> {
    let release = release();
    let plan = plan_apply(&f.target.applied(&release)?, desired)?;
    f.target.apply_with(&release, &plan, options, &NoProgress)
}

/// The cluster error inside a target error.
pub(super) fn cluster_error(err: crate::kube::Error) -> Error {
    match err {
        crate::kube::Error::Cluster { source, .. } => *source,
        other => panic!("not a cluster error: {other}"),
    }
}

pub(super) fn writes(requests: &[RecordedRequest]) -> Vec<&RecordedRequest> {
    requests
        .iter()
        .filter(|r| r.method != "GET" && !r.query.contains("dryRun=All"))
        .collect()
}

pub(super) fn position(requests: &[RecordedRequest], method: &str, path_end: &str) -> usize {
    requests
        .iter()
        .position(|r| {
            r.method == method && r.path.ends_with(path_end) && !r.query.contains("dryRun")
        })
        .unwrap_or_else(|| panic!("no {method} …{path_end} in {:#?}", paths(requests)))
}

pub(super) fn paths(requests: &[RecordedRequest]) -> Vec<String> {
    requests
        .iter()
        .map(|r| format!("{} {}?{}", r.method, r.path, r.query))
        .collect()
}

const CRD_AND_WIDGET: &str = "
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: 3}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
";

#[test]
fn a_crd_goes_first_and_its_custom_resource_resolves_after_it() {
    let f = fixture();
    let applied = apply_text(&f, CRD_AND_WIDGET, &ApplyOptions::default()).unwrap();
    assert_eq!(applied.applied.len(), 3);
    assert_eq!(applied.unchanged, 0);
    let requests = f.double.requests();
    let crd = position(
        &requests,
        "PATCH",
        "/customresourcedefinitions/widgets.example.com",
    );
    let widget = position(&requests, "PATCH", "/namespaces/shop/widgets/w1");
    assert!(crd < widget, "{:#?}", paths(&requests));
    let apply = &requests[widget];
    assert_eq!(
        apply.content_type.as_deref(),
        Some("application/apply-patch+yaml")
    );
    assert!(
        apply.query.contains("fieldManager=capstan"),
        "{}",
        apply.query
    );
    assert!(
        apply.query.contains("fieldValidation=Strict"),
        "{}",
        apply.query
    );
    let widget = f
        .double
        .object("example.com/v1", "Widget", Some("shop"), "w1")
        .unwrap();
    assert_eq!(widget["spec"]["size"], 3);
    assert_eq!(widget["metadata"]["labels"]["app.capstan.dev/app"], "shop");
    assert_eq!(
        widget["metadata"]["annotations"]["app.capstan.dev/release"],
        "shop/web"
    );
    let secret = f
        .double
        .object("v1", "Secret", Some("shop"), "capstan.release.v1.shop.web")
        .unwrap();
    assert_eq!(secret["type"], "capstan.dev/release.v1");
    let recorded = f.target.applied(&release()).unwrap();
    assert_eq!(recorded.len(), 3);
}

#[test]
fn a_reapply_of_the_same_render_writes_nothing() {
    let f = fixture();
    apply_text(&f, CRD_AND_WIDGET, &ApplyOptions::default()).unwrap();
    f.double.clear_requests();
    let again = apply_text(&f, CRD_AND_WIDGET, &ApplyOptions::default()).unwrap();
    assert_eq!(again.unchanged, 3);
    let requests = f.double.requests();
    assert!(writes(&requests).is_empty(), "{:#?}", paths(&requests));
    let dry_runs = requests
        .iter()
        .filter(|r| r.method == "PATCH" && r.query.contains("dryRun=All"))
        .count();
    assert_eq!(dry_runs, 3);
}

#[test]
fn a_changed_object_is_written_and_the_rest_are_not() {
    let f = fixture();
    apply_text(&f, CRD_AND_WIDGET, &ApplyOptions::default()).unwrap();
    f.double.clear_requests();
    let changed = CRD_AND_WIDGET.replace("color: blue", "color: red");
    let again = apply_text(&f, &changed, &ApplyOptions::default()).unwrap();
    assert_eq!(again.unchanged, 2);
    let requests = f.double.requests();
    let written: Vec<String> = writes(&requests).iter().map(|r| r.path.clone()).collect();
    assert!(
        written.iter().any(|p| p.ends_with("/configmaps/settings")),
        "{written:?}"
    );
    assert!(
        !written.iter().any(|p| p.contains("widgets")),
        "{written:?}"
    );
}

#[test]
fn readiness_names_the_blocking_object_and_its_pods() {
    let f = start(
        Options {
            simulate_controllers: false,
            ..Options::default()
        },
        ClusterOptions {
            timeout: Duration::from_millis(800),
            ..options()
        },
    );
    f.double.put_object(
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web-5d8-x2", "namespace": "shop", "labels": {"app": "web"}},
               "spec": {"containers": [{"name": "web", "image": "nginx:nope"}]}}),
        "kube-controller-manager",
    );
    assert!(f.double.set_status(
        "v1",
        "Pod",
        Some("shop"),
        "web-5d8-x2",
        json!({"phase": "Pending", "containerStatuses": [{"name": "web", "ready": false,
            "state": {"waiting": {"reason": "ImagePullBackOff",
                                  "message": "Back-off pulling image \"nginx:nope\""}}}]})
    ));
    let text = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: 'nginx:nope'}]}
";
    let started = Instant::now();
    let err = cluster_error(apply_text(&f, text, &ApplyOptions::default()).unwrap_err());
    assert!(started.elapsed() < Duration::from_secs(5));
    let message = err.to_string();
    assert!(matches!(err, Error::NotReady { .. }), "{message}");
    assert!(
        message.starts_with(
            "timed out after 800ms waiting for Deployment shop/web (apps/v1) is InProgress"
        ),
        "{message}"
    );
    assert!(
        message.contains("pod web-5d8-x2: container web waiting: ImagePullBackOff"),
        "{message}"
    );
    // The inventory says the Deployment was applied, so a remove finds it.
    let recorded = f.target.applied(&release()).unwrap();
    assert_eq!(recorded.len(), 1);
}

#[test]
fn a_failed_job_fails_the_wait_at_once() {
    let f = start(
        Options {
            simulate_controllers: false,
            ..Options::default()
        },
        options(),
    );
    let release = release();
    let desired = parse_manifests(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate}\n\
         spec: {template: {spec: {restartPolicy: Never, containers: [{name: m, image: busybox}]}}}\n",
    )
    .unwrap();
    let plan = plan_apply(&[], &desired).unwrap();
    let double = &f.double;
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            f.target
                .apply_with(&release, &plan, &ApplyOptions::default(), &NoProgress)
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while double
            .object("batch/v1", "Job", Some("shop"), "migrate")
            .is_none()
        {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(20));
        }
        double.set_status(
            "batch/v1",
            "Job",
            Some("shop"),
            "migrate",
            json!({"startTime": "2025-01-01T00:00:00Z", "failed": 1, "conditions": [
                {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                 "message": "Job has reached the specified backoff limit"}]}),
        );
        let started = Instant::now();
        let err = cluster_error(waiter.join().unwrap().unwrap_err());
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(matches!(err, Error::ReadinessFailed { .. }), "{err}");
        assert!(err.to_string().contains("BackoffLimitExceeded"), "{err}");
    });
}

#[test]
fn a_reapply_prunes_what_the_render_dropped_but_keeps_keep() {
    let f = fixture();
    let three = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\
                 apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, annotations: {helm.sh/resource-policy: keep}}\n---\n\
                 apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
    apply_text(&f, three, &ApplyOptions::default()).unwrap();
    let one = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";
    let applied = apply_text(&f, one, &ApplyOptions::default()).unwrap();
    let pruned: Vec<&str> = applied.pruned.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(pruned, ["c"]);
    assert!(
        f.double
            .object("v1", "ConfigMap", Some("shop"), "c")
            .is_none()
    );
    assert!(
        f.double
            .object("v1", "ConfigMap", Some("shop"), "b")
            .is_some()
    );
    let recorded: Vec<String> = f
        .target
        .applied(&release())
        .unwrap()
        .iter()
        .map(|r| r.id().name.clone())
        .collect();
    assert_eq!(recorded, ["a"]);
    let deletes: Vec<RecordedRequest> = f
        .double
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 1, "{:#?}", paths(&deletes));
    assert!(
        deletes[0].body.contains("Background"),
        "{}",
        deletes[0].body
    );
}

#[test]
fn remove_goes_in_reverse_order_and_names_the_finalizer_that_holds() {
    let f = start(
        Options::default(),
        ClusterOptions {
            timeout: Duration::from_millis(600),
            ..options()
        },
    );
    let held = CRD_AND_WIDGET.replace(
        "metadata: {name: w1}",
        "metadata: {name: w1, finalizers: [example.com/hold]}",
    );
    apply_text(&f, &held, &ApplyOptions::default()).unwrap();
    f.double.clear_requests();
    let err = cluster_error(f.target.remove(&release()).unwrap_err());
    assert_eq!(
        err.to_string(),
        "deletion not finished after 600ms: Widget shop/w1 (example.com/v1) is held by finalizer example.com/hold"
    );
    // Nothing after the held custom resource was deleted.
    assert!(
        f.double
            .object(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                "widgets.example.com"
            )
            .is_some()
    );
    assert_eq!(f.target.applied(&release()).unwrap().len(), 3);

    assert!(
        f.double
            .remove_finalizers("example.com/v1", "Widget", Some("shop"), "w1")
    );
    let removed = f.target.remove(&release()).unwrap();
    // The Widget went when its finalizer did: the second remove confirms
    // it gone (404) and deletes the rest.
    let kinds: Vec<&str> = removed.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["CustomResourceDefinition", "ConfigMap"]);
    let requests = f.double.requests();
    let widget = position(&requests, "DELETE", "/widgets/w1");
    let crd = position(
        &requests,
        "DELETE",
        "/customresourcedefinitions/widgets.example.com",
    );
    assert!(widget < crd);
    assert!(
        f.double
            .object("v1", "Secret", Some("shop"), "capstan.release.v1.shop.web")
            .is_none()
    );
    assert!(f.target.applied(&release()).unwrap().is_empty());
    // A second remove finds nothing to do.
    assert!(f.target.remove(&release()).unwrap().is_empty());
}

#[test]
fn claims_survive_a_remove_unless_purged() {
    let f = fixture();
    let text = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\n\
                spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n";
    apply_text(&f, text, &ApplyOptions::default()).unwrap();
    f.target.remove(&release()).unwrap();
    assert!(
        f.double
            .object("v1", "PersistentVolumeClaim", Some("shop"), "data")
            .is_some()
    );
    apply_text(
        &f,
        text,
        &ApplyOptions {
            adopt: false,
            ..ApplyOptions::default()
        },
    )
    .unwrap();
    let purge = RemoveOptions {
        purge: Purge {
            volumes: true,
            all: false,
        },
        ..RemoveOptions::default()
    };
    f.target
        .remove_with(&release(), &purge, &NoProgress)
        .unwrap();
    assert!(
        f.double
            .object("v1", "PersistentVolumeClaim", Some("shop"), "data")
            .is_none()
    );
}

#[test]
fn transient_failures_are_retried_then_succeed() {
    let f = fixture();
    // The namespace exists, so each object is read first.
    f.double.put_object(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
        "kubectl",
    );
    f.double.inject_fault(Fault {
        method: Some("PATCH".into()),
        path_contains: "/configmaps/settings".into(),
        times: 2,
        kind: FaultKind::Status(500),
    });
    f.double.inject_fault(Fault {
        method: Some("GET".into()),
        path_contains: "/configmaps/settings".into(),
        times: 1,
        kind: FaultKind::TooManyRequests {
            retry_after_secs: 1,
        },
    });
    f.double.inject_fault(Fault {
        method: Some("GET".into()),
        path_contains: "/configmaps/other".into(),
        times: 1,
        kind: FaultKind::DropConnection,
    });
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n---\n\
                apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n";
    let started = Instant::now();
    apply_text(&f, text, &ApplyOptions::default()).unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was not honoured"
    );
    assert!(
        f.double
            .object("v1", "ConfigMap", Some("shop"), "settings")
            .is_some()
    );
    let patches = f
        .double
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path.ends_with("/configmaps/settings"))
        .count();
    assert_eq!(patches, 3);
}

#[test]
fn a_request_past_the_timeout_is_retried() {
    let f = start(
        Options::default(),
        ClusterOptions {
            retry: RetryPolicy {
                request_timeout: Duration::from_millis(300),
                ..options().retry
            },
            ..options()
        },
    );
    f.double.inject_fault(Fault {
        method: Some("PATCH".into()),
        path_contains: "/configmaps/slow".into(),
        times: 1,
        kind: FaultKind::Delay(Duration::from_secs(2)),
    });
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: slow}\n";
    apply_text(&f, text, &ApplyOptions::default()).unwrap();
    assert!(
        f.double
            .object("v1", "ConfigMap", Some("shop"), "slow")
            .is_some()
    );
}

#[test]
fn retries_give_up_after_the_budget_naming_verb_object_and_cause() {
    let f = start(
        Options::default(),
        ClusterOptions {
            retry: RetryPolicy {
                budget: Duration::from_millis(700),
                ..options().retry
            },
            ..options()
        },
    );
    f.double.inject_fault(Fault {
        method: Some("PATCH".into()),
        path_contains: "/configmaps/settings".into(),
        times: 1000,
        kind: FaultKind::Status(503),
    });
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n";
    let started = Instant::now();
    let err = cluster_error(apply_text(&f, text, &ApplyOptions::default()).unwrap_err());
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(matches!(err, Error::GaveUp { .. }), "{err}");
    let message = chain(&err);
    assert!(
        message.starts_with("apply ConfigMap shop/settings (v1) failed after "),
        "{message}"
    );
    assert!(message.contains("server answered 503"), "{message}");
    // Outcome unknown: the object stays recorded as pending.
    assert_eq!(f.target.applied(&release()).unwrap().len(), 1);
}

pub(super) fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[test]
fn validation_errors_fail_at_once_and_leave_no_record() {
    let f = fixture();
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\nbogus: field\n";
    let err = cluster_error(apply_text(&f, text, &ApplyOptions::default()).unwrap_err());
    assert!(matches!(err, Error::Refused { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.starts_with("apply ConfigMap shop/bad (v1) refused with"),
        "{message}"
    );
    let patches = f
        .double
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path.ends_with("/configmaps/bad"))
        .count();
    assert_eq!(patches, 1);
    assert!(f.target.applied(&release()).unwrap().is_empty());
}

#[test]
fn a_foreign_object_is_a_conflict_unless_adopted() {
    let f = fixture();
    f.double.put_object(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
        "kubectl",
    );
    f.double.put_object(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "shared", "namespace": "shop"}, "data": {"k": "theirs"}}),
        "kubectl",
    );
    f.double.put_object(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "banks", "namespace": "shop",
                            "labels": {"app.capstan.dev/app": "bank", "app.capstan.dev/chart": "db"}}}),
        "capstan",
    );
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\ndata: {k: ours}\n";
    let err = cluster_error(apply_text(&f, text, &ApplyOptions::default()).unwrap_err());
    assert_eq!(
        err.to_string(),
        "ConfigMap shop/shared (v1) already exists and is not created by capstan; pass --adopt to take it over"
    );
    assert!(f.target.applied(&release()).unwrap().is_empty());
    let other = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: banks}\n";
    let err = cluster_error(apply_text(&f, other, &ApplyOptions::default()).unwrap_err());
    assert!(
        err.to_string().contains("is owned by app bank (chart db)"),
        "{err}"
    );

    let adopt = ApplyOptions {
        adopt: true,
        ..ApplyOptions::default()
    };
    apply_text(&f, text, &adopt).unwrap();
    let live = f
        .double
        .object("v1", "ConfigMap", Some("shop"), "shared")
        .unwrap();
    assert_eq!(live["data"]["k"], "ours");
    assert_eq!(live["metadata"]["labels"]["app.capstan.dev/app"], "shop");
    assert_eq!(f.target.applied(&release()).unwrap().len(), 1);
    // Adopted once, owned from then on.
    apply_text(&f, text, &ApplyOptions::default()).unwrap();
}

#[test]
fn a_field_another_manager_owns_fails_under_conflicts_fail_and_is_taken_back_by_default() {
    let f = fixture();
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: one}\n";
    apply_text(&f, text, &ApplyOptions::default()).unwrap();
    let mut live = f
        .double
        .object("v1", "ConfigMap", Some("shop"), "settings")
        .unwrap();
    live["data"]["k"] = json!("theirs");
    live["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    f.double.put_object(live, "kubectl");
    let changed = text.replace("k: one", "k: two");
    let fail = ApplyOptions {
        fields: crate::model::FieldPolicy {
            conflicts: crate::model::Conflicts::Fail,
            ..crate::model::FieldPolicy::default()
        },
        ..ApplyOptions::default()
    };
    let err = cluster_error(apply_text(&f, &changed, &fail).unwrap_err());
    assert!(
        err.to_string().starts_with(
            "apply of ConfigMap shop/settings (v1) conflicts with other field managers: \
             .data.k owned by \"kubectl\"; `capstan app diff` shows who changed what"
        ),
        "{err}"
    );
    let live = f.double.object("v1", "ConfigMap", Some("shop"), "settings");
    assert_eq!(live.unwrap()["data"]["k"], "theirs", "nothing written");
    // The default policy takes the field back.
    apply_text(&f, &changed, &ApplyOptions::default()).unwrap();
    let live = f.double.object("v1", "ConfigMap", Some("shop"), "settings");
    assert_eq!(live.unwrap()["data"]["k"], "two");
}

/// Helm's YAML reading reaches the wire: `0644` is 420 and `yes` is
/// true, as sigs.k8s.io/yaml (go-yaml v2) reads them. The renderer's
/// reader (`values::parse_yaml_documents`) does this; the manifest
/// parser of `kube::parse_manifests` (a YAML 1.2 reader) does not.
#[test]
fn manifests_reach_the_server_with_helms_yaml_semantics() {
    let f = fixture();
    let text = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      automountServiceAccountToken: yes
      containers: [{name: web, image: nginx}]
      volumes:
      - name: config
        secret: {secretName: web, defaultMode: 0644}
";
    let desired: Vec<Resource> = crate::values::parse_yaml_documents(text)
        .unwrap()
        .iter()
        .map(|doc| Resource::from_value(Value::from(doc), "document 1").unwrap())
        .collect();
    apply(&f, &desired, &ApplyOptions::default()).unwrap();
    let request = f
        .double
        .requests()
        .into_iter()
        .find(|r| r.method == "PATCH" && r.path.ends_with("/deployments/web"))
        .unwrap();
    let sent: Value = serde_json::from_str(&request.body).unwrap();
    let spec = &sent["spec"]["template"]["spec"];
    assert_eq!(spec["volumes"][0]["secret"]["defaultMode"], json!(420));
    assert_eq!(spec["automountServiceAccountToken"], json!(true));
    let live = f
        .double
        .object("apps/v1", "Deployment", Some("shop"), "web")
        .unwrap();
    assert_eq!(
        live["spec"]["template"]["spec"]["volumes"][0]["secret"]["defaultMode"],
        420
    );
    assert_eq!(
        live["spec"]["template"]["spec"]["automountServiceAccountToken"],
        true
    );

    // `parse_manifests` (the directory target's and `app diff`'s reader)
    // reads the text the same way.
    let read = parse_manifests(text).unwrap();
    let spec = &read[0].object()["spec"]["template"]["spec"];
    assert_eq!(spec["volumes"][0]["secret"]["defaultMode"], json!(420));
    assert_eq!(spec["automountServiceAccountToken"], json!(true));
}

#[test]
fn connecting_to_nothing_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let err = ClusterTarget::connect(
        &Connect::Kubeconfig {
            path: missing.clone(),
            context: None,
        },
        options(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::ReadKubeconfig { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!("reading kubeconfig {}", missing.display())
    );

    let double = KubeDouble::start(Options::default()).unwrap();
    let path = dir.path().join("kubeconfig");
    double.write_kubeconfig(&path).unwrap();
    drop(double);
    let quick = ClusterOptions {
        retry: RetryPolicy {
            budget: Duration::from_millis(300),
            ..options().retry
        },
        ..options()
    };
    let err = ClusterTarget::connect(
        &Connect::Kubeconfig {
            path: path.clone(),
            context: Some("nope".into()),
        },
        quick,
    )
    .unwrap_err();
    assert!(matches!(err, Error::KubeconfigContext { .. }), "{err}");
    let err = ClusterTarget::connect(
        &Connect::Kubeconfig {
            path,
            context: None,
        },
        quick,
    )
    .unwrap_err();
    assert!(matches!(err, Error::Unreachable { .. }), "{err}");
    assert!(
        err.to_string().starts_with("cluster at http://127.0.0.1:"),
        "{err}"
    );
}

#[test]
fn the_first_apply_costs_one_write_per_object_and_discovery_once_per_group_version() {
    let f = fixture();
    let mut text = String::new();
    for i in 0..20 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d{i}}}\n\
             spec: {{selector: {{matchLabels: {{app: d{i}}}}}, template: {{metadata: {{labels: {{app: d{i}}}}}, spec: {{containers: [{{name: c, image: nginx}}]}}}}}}\n"
        ));
    }
    f.double.clear_requests();
    apply_text(&f, &text, &ApplyOptions::default()).unwrap();
    let requests = f.double.requests();
    let object_writes = writes(&requests)
        .iter()
        .filter(|r| !r.path.contains("/secrets/") && !r.path.ends_with("/namespaces/shop"))
        .count();
    assert_eq!(object_writes, 40, "{:#?}", paths(&requests));
    let discovery = requests
        .iter()
        .filter(|r| r.path == "/api/v1" || r.path == "/apis/apps/v1")
        .count();
    assert_eq!(discovery, 2, "{:#?}", paths(&requests));
}

#[test]
fn an_immutable_change_is_reported_as_such() {
    let f = fixture();
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate}\n\
               spec: {template: {spec: {restartPolicy: Never, containers: [{name: m, image: 'busybox:1'}]}}}\n";
    apply_text(&f, job, &ApplyOptions::default()).unwrap();
    let err = cluster_error(
        apply_text(
            &f,
            &job.replace("busybox:1", "busybox:2"),
            &ApplyOptions::default(),
        )
        .unwrap_err(),
    );
    assert!(matches!(err, Error::Immutable { .. }), "{err}");
    assert!(
        err.to_string().starts_with(
            "Job shop/migrate (batch/v1) cannot be changed in place (field spec.template): "
        ),
        "{err}"
    );
    let sts = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\n\
               spec: {serviceName: db, selector: {matchLabels: {app: db}}, \
               template: {metadata: {labels: {app: db}}, spec: {containers: [{name: db, image: pg}]}}}\n";
    apply_text(&f, sts, &ApplyOptions::default()).unwrap();
    let err = cluster_error(
        apply_text(
            &f,
            &sts.replace("serviceName: db", "serviceName: db2"),
            &ApplyOptions::default(),
        )
        .unwrap_err(),
    );
    assert!(matches!(err, Error::Immutable { .. }), "{err}");
}

/// Not a timed test: prints what 200 objects cost against the double on
/// loopback (run with `--ignored --nocapture`). The criterion bench is
/// `host/benches/cluster.rs`.
#[test]
#[ignore = "measurement; prints numbers"]
fn measure_200_objects() {
    let f = fixture();
    let mut text = String::new();
    for i in 0..100 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata: {{k: v{i}}}\n---\n\
             apiVersion: v1\nkind: Service\nmetadata: {{name: s{i}}}\nspec: {{ports: [{{port: 80}}]}}\n"
        ));
    }
    let desired = parse_manifests(&text).unwrap();
    for (label, options) in [
        (
            "no wait",
            ApplyOptions {
                no_wait: true,
                ..ApplyOptions::default()
            },
        ),
        ("with wait", ApplyOptions::default()),
    ] {
        f.target.remove(&release()).unwrap();
        f.double.clear_requests();
        let started = Instant::now();
        apply(&f, &desired, &options).unwrap();
        let first = started.elapsed();
        let first_requests = f.double.requests().len();
        f.double.clear_requests();
        let started = Instant::now();
        let again = apply(&f, &desired, &options).unwrap();
        let second = started.elapsed();
        let requests = f.double.requests();
        assert_eq!(again.unchanged, 200);
        println!(
            "{label}: first apply {first:?} ({:.0} objects/s, {:.2} requests/object), \
             re-apply {second:?} ({:.0} objects/s, {:.2} requests/object, {} writes)",
            200.0 / first.as_secs_f64(),
            first_requests as f64 / 200.0,
            200.0 / second.as_secs_f64(),
            requests.len() as f64 / 200.0,
            writes(&requests).len(),
        );
    }
}
