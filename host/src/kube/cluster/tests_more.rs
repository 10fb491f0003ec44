//! The cluster target against `kube-double`, continued: Helm hooks,
//! opt-in recreate of immutable changes, the Deployment/StatefulSet kind
//! change, Released volumes, and the diff against the live cluster.
//! Fixtures are those of [`super::tests`].

use std::time::{Duration, Instant};

use kube_double::Options;
use serde_json::json;

use super::error::Error;
use super::tests::{apply_text, cluster_error, fixture, options, paths, release, start};
use crate::kube::target::{ApplyOptions, NoProgress};
use crate::kube::{ApplyTarget, HookEvent, LiveChange, parse_manifests};

fn job_hook(name: &str, event: &str, weight: i32, policy: Option<&str>) -> String {
    let policy = policy
        .map(|p| format!(", helm.sh/hook-delete-policy: '{p}'"))
        .unwrap_or_default();
    format!(
        "---\napiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}, annotations: \
         {{helm.sh/hook: {event}, helm.sh/hook-weight: '{weight}'{policy}}}}}\n\
         spec: {{template: {{spec: {{restartPolicy: Never, containers: [{{name: m, image: busybox}}]}}}}}}\n"
    )
}

fn creates(f: &super::tests::Fixture) -> Vec<String> {
    f.double
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && !r.query.contains("dryRun"))
        .filter(|r| !r.path.contains("/namespaces/") || r.path.matches('/').count() > 5)
        .map(|r| r.path.rsplit('/').next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn hooks_run_in_weight_order_and_stay_out_of_the_inventory() {
    let f = fixture();
    let text = [
        job_hook("second", "pre-install", 5, None),
        job_hook("first", "pre-install", -2, None),
        job_hook("upgrade-only", "pre-upgrade", 0, None),
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: hook-config, annotations: \
         {helm.sh/hook: pre-install, helm.sh/hook-weight: '5'}}\n"
            .to_string(),
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: smoke, annotations: {helm.sh/hook: test}}\n\
         spec: {containers: [{name: t, image: busybox}]}\n"
            .to_string(),
    ]
    .concat();
    let hooks = parse_manifests(&text).unwrap();
    f.double.clear_requests();
    let ran = f
        .target
        .run_hooks(
            &release(),
            HookEvent::PreInstall,
            &hooks,
            &ApplyOptions::default(),
            &NoProgress,
        )
        .unwrap();
    let names: Vec<&str> = ran.iter().map(|r| r.name.as_str()).collect();
    // Weight first; at weight 5 the ConfigMap's kind installs before Jobs.
    assert_eq!(names, ["first", "hook-config", "second"]);
    let written = creates(&f);
    assert_eq!(written, ["first", "hook-config", "second"], "{written:?}");
    let job = f
        .double
        .object("batch/v1", "Job", Some("shop"), "second")
        .unwrap();
    assert_eq!(job["metadata"]["labels"]["app.capstan.dev/app"], "shop");
    assert!(
        f.double
            .object("v1", "Pod", Some("shop"), "smoke")
            .is_none()
    );
    // Not recorded: no inventory Secret, nothing applied.
    assert!(f.target.applied(&release()).unwrap().is_empty());
}

#[test]
fn before_hook_creation_replaces_the_old_job_and_hook_succeeded_deletes_it() {
    let f = fixture();
    let hooks = parse_manifests(&job_hook("migrate", "pre-upgrade", 0, None)).unwrap();
    let run = |event| {
        f.target.run_hooks(
            &release(),
            event,
            &hooks,
            &ApplyOptions::default(),
            &NoProgress,
        )
    };
    run(HookEvent::PreUpgrade).unwrap();
    let first = f
        .double
        .object("batch/v1", "Job", Some("shop"), "migrate")
        .unwrap();
    // Left in place (default policy), complete.
    assert_eq!(first["status"]["conditions"][1]["type"], "Complete");
    f.double.clear_requests();
    run(HookEvent::PreUpgrade).unwrap();
    let second = f
        .double
        .object("batch/v1", "Job", Some("shop"), "migrate")
        .unwrap();
    assert_ne!(first["metadata"]["uid"], second["metadata"]["uid"]);
    let requests = f.double.requests();
    let delete = requests
        .iter()
        .position(|r| r.method == "DELETE" && r.path.ends_with("/jobs/migrate"))
        .unwrap_or_else(|| panic!("{:#?}", paths(&requests)));
    let create = requests
        .iter()
        .position(|r| r.method == "PATCH" && r.path.ends_with("/jobs/migrate"))
        .unwrap_or_else(|| panic!("{:#?}", paths(&requests)));
    assert!(delete < create, "{:#?}", paths(&requests));
    assert!(requests[delete].body.contains("Background"));

    let cleaned = parse_manifests(&job_hook(
        "cleaned",
        "post-upgrade",
        0,
        Some("hook-succeeded"),
    ))
    .unwrap();
    let ran = f
        .target
        .run_hooks(
            &release(),
            HookEvent::PostUpgrade,
            &cleaned,
            &ApplyOptions::default(),
            &NoProgress,
        )
        .unwrap();
    assert_eq!(ran.len(), 1);
    assert!(
        f.double
            .object("batch/v1", "Job", Some("shop"), "cleaned")
            .is_none()
    );
    assert!(
        f.double
            .requests()
            .iter()
            .any(|r| r.method == "PATCH" && r.path.ends_with("/jobs/cleaned"))
    );
}

#[test]
fn a_failed_hook_job_fails_naming_the_hook_the_event_and_the_cause() {
    let f = start(
        Options {
            simulate_controllers: false,
            ..Options::default()
        },
        options(),
    );
    let text = [
        job_hook("migrate", "pre-install", 0, Some("hook-failed")),
        job_hook("after", "pre-install", 1, None),
    ]
    .concat();
    let hooks = parse_manifests(&text).unwrap();
    let double = &f.double;
    std::thread::scope(|scope| {
        let runner = scope.spawn(|| {
            f.target.run_hooks(
                &release(),
                HookEvent::PreInstall,
                &hooks,
                &ApplyOptions::default(),
                &NoProgress,
            )
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while double
            .object("batch/v1", "Job", Some("shop"), "migrate")
            .is_none()
        {
            assert!(Instant::now() < deadline, "the hook Job was never created");
            std::thread::sleep(Duration::from_millis(20));
        }
        double.set_status(
            "batch/v1",
            "Job",
            Some("shop"),
            "migrate",
            json!({"failed": 1, "conditions": [
                {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                 "message": "Job has reached the specified backoff limit"}]}),
        );
        let err = cluster_error(runner.join().unwrap().unwrap_err());
        assert!(matches!(err, Error::HookFailed { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            "pre-install hook Job shop/migrate (batch/v1) failed: \
             BackoffLimitExceeded: Job has reached the specified backoff limit"
        );
    });
    // hook-failed deleted it; the next hook never ran.
    assert!(
        f.double
            .object("batch/v1", "Job", Some("shop"), "migrate")
            .is_none()
    );
    assert!(
        f.double
            .object("batch/v1", "Job", Some("shop"), "after")
            .is_none()
    );
}

#[test]
fn pre_delete_hooks_run_before_the_remove_deletes_anything() {
    let f = fixture();
    apply_text(
        &f,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n",
        &ApplyOptions::default(),
    )
    .unwrap();
    let hooks =
        parse_manifests(&job_hook("backup", "pre-delete", 0, Some("hook-succeeded"))).unwrap();
    f.double.clear_requests();
    // What the lifecycle does for `app remove`: pre-delete, remove.
    f.target
        .run_hooks(
            &release(),
            HookEvent::PreDelete,
            &hooks,
            &ApplyOptions::default(),
            &NoProgress,
        )
        .unwrap();
    f.target.remove(&release()).unwrap();
    let requests = f.double.requests();
    let hook = requests
        .iter()
        .position(|r| r.method == "PATCH" && r.path.ends_with("/jobs/backup"))
        .unwrap_or_else(|| panic!("{:#?}", paths(&requests)));
    let first_delete = requests
        .iter()
        .position(|r| r.method == "DELETE" && r.path.ends_with("/configmaps/settings"))
        .unwrap_or_else(|| panic!("{:#?}", paths(&requests)));
    assert!(hook < first_delete, "{:#?}", paths(&requests));
    assert!(
        f.double
            .object("v1", "ConfigMap", Some("shop"), "settings")
            .is_none()
    );
}

const STATEFULSET: &str = "apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
";

fn wait_for_claim(f: &super::tests::Fixture, name: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(claim) = f
            .double
            .object("v1", "PersistentVolumeClaim", Some("shop"), name)
        {
            return claim;
        }
        assert!(Instant::now() < deadline, "claim {name} never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_immutable_change_is_refused_with_the_field_and_recreated_when_opted_in() {
    let f = fixture();
    apply_text(&f, STATEFULSET, &ApplyOptions::default()).unwrap();
    let claim = wait_for_claim(&f, "data-db-0");
    let before = f
        .double
        .object("apps/v1", "StatefulSet", Some("shop"), "db")
        .unwrap();
    let bigger = STATEFULSET.replace("storage: 1Gi", "storage: 2Gi");

    let err = cluster_error(apply_text(&f, &bigger, &ApplyOptions::default()).unwrap_err());
    assert!(matches!(err, Error::Immutable { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message
            .starts_with("StatefulSet shop/db (apps/v1) cannot be changed in place (field spec): "),
        "{message}"
    );
    assert!(
        message.ends_with("; pass --recreate StatefulSet/db to delete and create it again"),
        "{message}"
    );

    f.double.clear_requests();
    let recreate = ApplyOptions {
        recreate: vec!["statefulset/db".into()],
        ..ApplyOptions::default()
    };
    apply_text(&f, &bigger, &recreate).unwrap();
    let after = f
        .double
        .object("apps/v1", "StatefulSet", Some("shop"), "db")
        .unwrap();
    assert_ne!(before["metadata"]["uid"], after["metadata"]["uid"]);
    assert_eq!(
        after["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"],
        "2Gi"
    );
    let requests = f.double.requests();
    let delete = requests
        .iter()
        .find(|r| r.method == "DELETE" && r.path.ends_with("/statefulsets/db"))
        .unwrap_or_else(|| panic!("{:#?}", paths(&requests)));
    assert!(delete.body.contains("Orphan"), "{}", delete.body);
    // The claim survived: same object, same uid.
    let kept = f
        .double
        .object("v1", "PersistentVolumeClaim", Some("shop"), "data-db-0")
        .unwrap();
    assert_eq!(kept["metadata"]["uid"], claim["metadata"]["uid"]);
    assert_eq!(f.target.applied(&release()).unwrap().len(), 1);
}

#[test]
fn a_deployment_becoming_a_statefulset_orphans_the_old_one_and_keeps_the_claim() {
    let f = fixture();
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: db}\n\
        spec: {selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, \
        spec: {containers: [{name: db, image: postgres}]}}}\n---\n\
        apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data-db-0}\n\
        spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n";
    apply_text(&f, deployment, &ApplyOptions::default()).unwrap();
    let claim = f
        .double
        .object("v1", "PersistentVolumeClaim", Some("shop"), "data-db-0")
        .unwrap();
    f.double.clear_requests();
    // The new render: a StatefulSet of the same name; the claim is no
    // longer rendered (the StatefulSet's template makes it).
    let applied = apply_text(&f, STATEFULSET, &ApplyOptions::default()).unwrap();
    let requests = f.double.requests();
    let delete = requests
        .iter()
        .position(|r| r.method == "DELETE" && r.path.ends_with("/deployments/db"))
        .unwrap_or_else(|| panic!("{:#?}", paths(&requests)));
    assert!(
        requests[delete].body.contains("Orphan"),
        "{}",
        requests[delete].body
    );
    let create = requests
        .iter()
        .position(|r| {
            r.method == "PATCH"
                && r.path.ends_with("/statefulsets/db")
                && !r.query.contains("dryRun")
        })
        .unwrap_or_else(|| panic!("{:#?}", paths(&requests)));
    assert!(delete < create, "{:#?}", paths(&requests));
    assert!(
        f.double
            .object("apps/v1", "Deployment", Some("shop"), "db")
            .is_none()
    );
    let kept = f
        .double
        .object("v1", "PersistentVolumeClaim", Some("shop"), "data-db-0")
        .unwrap();
    assert_eq!(kept["metadata"]["uid"], claim["metadata"]["uid"]);
    assert!(applied.pruned.is_empty(), "{:?}", applied.pruned);
    let recorded: Vec<String> = f
        .target
        .applied(&release())
        .unwrap()
        .iter()
        .map(|r| r.id().kind.clone())
        .collect();
    assert_eq!(recorded, ["StatefulSet"]);
}

#[test]
fn a_released_volume_of_the_release_gets_its_claim_ref_cleared() {
    let f = fixture();
    let volume = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: shop-data}\n\
        spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], \
        persistentVolumeReclaimPolicy: Retain, hostPath: {path: /var/lib/capstan/volumes/shop-data}, \
        claimRef: {namespace: shop, name: data}}\n";
    let claim = "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\n\
        spec: {accessModes: [ReadWriteOnce], volumeName: shop-data, resources: {requests: {storage: 1Gi}}}\n";
    apply_text(&f, &format!("{volume}{claim}"), &ApplyOptions::default()).unwrap();
    // The claim goes (a purge, an operator); the controller binds the
    // volume's claimRef to the old claim's uid, then marks it Released.
    let old_uid = f
        .double
        .object("v1", "PersistentVolumeClaim", Some("shop"), "data")
        .unwrap()["metadata"]["uid"]
        .clone();
    let mut pv = f
        .double
        .object("v1", "PersistentVolume", None, "shop-data")
        .unwrap();
    pv["spec"]["claimRef"]["uid"] = old_uid;
    pv["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    f.double.put_object(pv, "kube-controller-manager");
    f.double.set_status(
        "v1",
        "PersistentVolume",
        None,
        "shop-data",
        json!({"phase": "Released"}),
    );
    f.double.clear_requests();
    apply_text(&f, &format!("{volume}{claim}"), &ApplyOptions::default()).unwrap();
    let requests = f.double.requests();
    let patch = requests
        .iter()
        .find(|r| {
            r.method == "PATCH"
                && r.path.ends_with("/persistentvolumes/shop-data")
                && r.content_type.as_deref() == Some("application/merge-patch+json")
        })
        .unwrap_or_else(|| panic!("{:#?}", paths(&requests)));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&patch.body).unwrap(),
        json!({"spec": {"claimRef": null}})
    );
    let pv = f
        .double
        .object("v1", "PersistentVolume", None, "shop-data")
        .unwrap();
    // The chart's claimRef is back, without the old claim's uid.
    assert_eq!(pv["spec"]["claimRef"]["name"], "data");
    assert!(pv["spec"]["claimRef"].get("uid").is_none(), "{pv}");
}

#[test]
fn the_live_diff_dry_runs_on_the_server_and_masks_secrets() {
    let f = fixture();
    let text = "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: old}\n---\n\
                apiVersion: v1\nkind: ConfigMap\nmetadata: {name: same}\ndata: {k: v}\n---\n\
                apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dropped}\n";
    apply_text(&f, text, &ApplyOptions::default()).unwrap();
    let next = "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: new}\n---\n\
                apiVersion: v1\nkind: ConfigMap\nmetadata: {name: same}\ndata: {k: v}\n---\n\
                apiVersion: v1\nkind: ConfigMap\nmetadata: {name: added}\n";
    f.double.clear_requests();
    let diffs = f
        .target
        .diff_live(
            &release(),
            &parse_manifests(next).unwrap(),
            &ApplyOptions::default(),
        )
        .unwrap()
        .unwrap();
    let summary: Vec<(String, LiveChange)> = diffs
        .iter()
        .map(|d| (d.object.name.clone(), d.change))
        .collect();
    assert_eq!(
        summary,
        [
            ("creds".to_string(), LiveChange::Update),
            ("added".to_string(), LiveChange::Create),
            ("dropped".to_string(), LiveChange::Prune),
        ]
    );
    let secret = &diffs[0];
    assert_eq!(secret.secret_changes, ["password"]);
    assert!(
        !secret.text.contains("bmV3") && !secret.text.contains("b2xk"),
        "{}",
        secret.text
    );
    assert!(secret.text.contains("*** (changed)"), "{}", secret.text);
    let requests = f.double.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.method == "GET" || r.query.contains("dryRun=All")),
        "{:#?}",
        paths(&requests)
    );
}

#[test]
fn a_failed_hook_pod_names_its_reason_and_a_foreign_object_is_not_replaced() {
    let f = start(
        Options {
            simulate_controllers: false,
            ..Options::default()
        },
        options(),
    );
    f.double.put_object(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "theirs", "namespace": "shop"}}),
        "kubectl",
    );
    let foreign = parse_manifests(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: theirs, annotations: {helm.sh/hook: post-install}}\n",
    )
    .unwrap();
    let err = cluster_error(
        f.target
            .run_hooks(
                &release(),
                HookEvent::PostInstall,
                &foreign,
                &ApplyOptions::default(),
                &NoProgress,
            )
            .unwrap_err(),
    );
    assert!(matches!(err, Error::Ownership { .. }), "{err}");
    assert!(
        f.double
            .object("v1", "ConfigMap", Some("shop"), "theirs")
            .is_some()
    );

    let pod = parse_manifests(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: check, annotations: {helm.sh/hook: post-install}}\n\
         spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}\n",
    )
    .unwrap();
    let double = &f.double;
    std::thread::scope(|scope| {
        let runner = scope.spawn(|| {
            f.target.run_hooks(
                &release(),
                HookEvent::PostInstall,
                &pod,
                &ApplyOptions::default(),
                &NoProgress,
            )
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while double.object("v1", "Pod", Some("shop"), "check").is_none() {
            assert!(Instant::now() < deadline, "the hook Pod was never created");
            std::thread::sleep(Duration::from_millis(20));
        }
        double.set_status(
            "v1",
            "Pod",
            Some("shop"),
            "check",
            json!({"phase": "Failed", "reason": "DeadlineExceeded",
                   "message": "Pod was active on the node longer than the specified deadline"}),
        );
        let err = cluster_error(runner.join().unwrap().unwrap_err());
        assert_eq!(
            err.to_string(),
            "post-install hook Pod shop/check (v1) failed: DeadlineExceeded: \
             Pod was active on the node longer than the specified deadline"
        );
    });
}

#[test]
fn concurrent_applies_keep_kinds_in_install_order() {
    let f = fixture();
    let mut text = String::from(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n\
         spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, \
         spec: {containers: [{name: web, image: nginx}]}}}\n",
    );
    for i in 0..40 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n"
        ));
    }
    f.double.clear_requests();
    let applied = apply_text(&f, &text, &ApplyOptions::default()).unwrap();
    assert_eq!(applied.applied.len(), 41);
    assert_eq!(applied.applied[40].kind, "Deployment");
    let requests = f.double.requests();
    let last_config_map = requests
        .iter()
        .rposition(|r| r.method == "PATCH" && r.path.contains("/configmaps/c"))
        .unwrap_or_else(|| panic!("{:#?}", paths(&requests)));
    let deployment = requests
        .iter()
        .position(|r| r.method == "PATCH" && r.path.ends_with("/deployments/web"))
        .unwrap_or_else(|| panic!("{:#?}", paths(&requests)));
    assert!(last_config_map < deployment, "{:#?}", paths(&requests));
    // Every ConfigMap is recorded applied, in the order rendered.
    let names: Vec<String> = applied.applied[..40]
        .iter()
        .map(|r| r.name.clone())
        .collect();
    let expected: Vec<String> = (0..40).map(|i| format!("c{i}")).collect();
    assert_eq!(names, expected);
}

#[test]
fn admit_refuses_an_object_another_owns_and_writes_nothing() {
    let f = fixture();
    f.double.put_object(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "shared", "namespace": "shop"}}),
        "kubectl",
    );
    f.double.put_object(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "handed", "namespace": "shop",
                            "annotations": {"app.capstan.dev/release": "shop/old"}}}),
        "capstan",
    );
    let objects = |text: &str| parse_manifests(text).unwrap();
    let shared = objects("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\n");
    let handed = objects("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: handed}\n");
    let fresh = objects(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fresh}\n---\n\
         apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
    );
    let before = f.double.requests().len();
    let none = ApplyOptions::default();
    let err = cluster_error(f.target.admit(&release(), &shared, &none).unwrap_err());
    assert_eq!(
        err.to_string(),
        "ConfigMap shop/shared (v1) already exists and is not created by capstan; pass --adopt to take it over"
    );
    let err = cluster_error(f.target.admit(&release(), &handed, &none).unwrap_err());
    assert!(
        err.to_string()
            .contains("owned by capstan release shop/old"),
        "{err}"
    );
    let requests = f.double.requests();
    assert!(
        requests[before..].iter().all(|r| r.method == "GET"),
        "admit only reads"
    );

    let adopt = ApplyOptions {
        adopt: true,
        ..ApplyOptions::default()
    };
    f.target.admit(&release(), &shared, &adopt).unwrap();
    let take_over = ApplyOptions {
        take_over: vec!["shop/old".into()],
        ..ApplyOptions::default()
    };
    f.target.admit(&release(), &handed, &take_over).unwrap();
    // Absent objects, and kinds not served yet, are free.
    f.target.admit(&release(), &fresh, &none).unwrap();
    // Once this release holds it, it is its own.
    apply_text(
        &f,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\n",
        &adopt,
    )
    .unwrap();
    f.target.admit(&release(), &shared, &none).unwrap();
    f.target
        .admit_restart(&crate::kube::ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        })
        .unwrap();
}
