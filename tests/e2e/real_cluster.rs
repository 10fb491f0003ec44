//! The daemon against the real control plane (`control_plane`): a real
//! kube-apiserver with etcd, the controller-manager's controllers (garbage
//! collector, namespace, PV binder, Deployment, StatefulSet, Job), the
//! scheduler, and kwok's simulated nodes and pods. The daemon runs as the
//! `capstan` ServiceAccount bound to `deploy/clusterrole.yaml`, not as
//! `system:masters`. What the API server receives from the daemon is read
//! from its audit log.
//!
//! Each test keeps to its own app and namespace; faults a real server
//! cannot be made to produce stay on the double (`cluster`).

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

use crate::control_plane::{ControlPlane, control_plane, own_shop};
use crate::daemon::{Daemon, text};

const APP_LABEL: &str = "app.capstan.dev/app";

/// Who the daemon is on the control plane.
const DAEMON_USER: &str = "system:serviceaccount:capstan-system:capstan";

/// A daemon on the control plane with the shop app, made the test's own
/// (`name` is the app and its namespace), uploaded.
pub(crate) fn shop(cp: &ControlPlane, name: &str, tweak: impl FnOnce(&Path)) -> Daemon {
    cp.delete_namespace(name);
    let d = cp.daemon(name);
    let bundle = d.shop_bundle("1.0.0", |app| {
        own_shop(app, name);
        tweak(app);
    });
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    d
}

/// The requests the daemon sent that touched `namespace` (or the namespace
/// itself), from the API server's audit log: `VERB URI` for each write
/// that was not a dry run.
pub(crate) fn writes(cp: &ControlPlane, namespace: &str, since_line: usize) -> Vec<String> {
    audit_events(cp)
        .into_iter()
        .skip(since_line)
        .filter(|e| e["user"]["username"] == DAEMON_USER && e["stage"] == "ResponseComplete")
        .filter(|e| {
            e["objectRef"]["namespace"] == namespace
                || (e["objectRef"]["resource"] == "namespaces"
                    && e["objectRef"]["name"] == namespace)
        })
        .filter(|e| {
            matches!(
                e["verb"].as_str(),
                Some("create" | "update" | "patch" | "delete" | "deletecollection")
            )
        })
        .filter_map(|e| {
            let uri = e["requestURI"].as_str()?;
            let verb = e["verb"].as_str()?;
            (!uri.contains("dryRun=All")).then(|| format!("{verb} {uri}"))
        })
        .collect()
}

/// Every audit event so far (the control plane audits the daemon's
/// ServiceAccount and the bench's peers).
pub(crate) fn audit_events(cp: &ControlPlane) -> Vec<Value> {
    let path = cp.admin_kubeconfig().with_file_name("logs/audit.log");
    std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The release Secrets' inventories in `namespace`: `(chart, revision,
/// object names)`, sorted by chart.
pub(crate) fn release_secrets(
    cp: &ControlPlane,
    namespace: &str,
) -> Vec<(String, u64, Vec<String>)> {
    let mut out: Vec<_> = cp
        .list("secrets", namespace)
        .into_iter()
        .filter(|s| s["type"] == "capstan.dev/release.v1")
        .map(|s| {
            let data = s["data"]["release"].as_str().unwrap_or_default();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data)
                .expect("base64");
            let inventory: Value = serde_json::from_slice(&bytes).expect("inventory JSON");
            let names = inventory["objects"]
                .as_array()
                .into_iter()
                .flatten()
                .map(entry_name)
                .collect();
            (
                inventory["chart"].as_str().unwrap_or_default().to_owned(),
                inventory["revision"].as_u64().expect("a revision"),
                names,
            )
        })
        .collect();
    out.sort();
    out
}

/// An inventory entry as `Kind/name`, in the release Secret and in the
/// store alike.
fn entry_name(entry: &Value) -> String {
    format!(
        "{}/{}",
        entry["kind"].as_str().unwrap_or("?"),
        entry["name"].as_str().unwrap_or("?")
    )
}

/// What the store says of the same releases (`app show`).
pub(crate) fn stored_releases(d: &Daemon, app: &str) -> Vec<(String, u64, Vec<String>)> {
    let mut out: Vec<_> = d.show(app)["releases"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["chart"].as_str().unwrap_or_default().to_owned(),
                r["revision"].as_u64().expect("a revision"),
                r["objects"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(entry_name)
                    .collect(),
            )
        })
        .collect();
    out.sort();
    out
}

fn ready(pod: &Value) -> bool {
    pod["status"]["phase"] == "Running"
        && pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// The shop on the real control plane: every pod Running and Ready on a
/// node, the database's claim Bound by the PV controller through the
/// `general` class, revisions in the store and the release Secrets alike;
/// a re-apply with nothing changed sends no write at all (what the server
/// defaults does not count as a change); an override writes only the
/// chart it changes; remove leaves nothing of the app.
#[test]
fn the_shop_runs_on_the_control_plane_and_a_reapply_writes_nothing() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-shop";
    let d = shop(&cp, app, |_| {});
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());

    let pods = cp.list("pods", app);
    assert!(pods.len() >= 6, "{pods:#?}");
    for pod in &pods {
        assert!(ready(pod), "not Running and Ready: {pod:#}");
        assert!(
            pod["spec"]["nodeName"]
                .as_str()
                .is_some_and(|n| !n.is_empty())
        );
    }
    let web = cp.object("deployment", Some(app), "web").expect("web");
    assert_eq!(web["spec"]["replicas"], 2, "the plugin's duplex sizing");
    assert_eq!(
        web["status"]["readyReplicas"], 2,
        "the Deployment controller's count"
    );
    let db = cp
        .object("statefulset", Some(app), "db")
        .expect("db is a StatefulSet");
    assert_eq!(db["metadata"]["labels"][APP_LABEL], app);
    let claims = cp.list("pvc", app);
    assert_eq!(claims.len(), 1, "{claims:#?}");
    assert_eq!(claims[0]["status"]["phase"], "Bound", "{:#}", claims[0]);
    assert_eq!(claims[0]["spec"]["storageClassName"], "general");
    let managers: Vec<String> = web["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["manager"].as_str().map(str::to_owned))
        .collect();
    assert!(managers.iter().any(|m| m == "capstan"), "{managers:?}");
    let first = release_secrets(&cp, app);
    assert_eq!(
        first,
        stored_releases(&d, app),
        "the store and the cluster agree"
    );
    assert_eq!(first.len(), 5, "{first:?}");
    assert!(first.iter().all(|(_, rev, _)| *rev == 1), "{first:?}");

    let mark = audit_events(&cp).len();
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert_eq!(
        writes(&cp, app, mark),
        Vec::<String>::new(),
        "nothing changed"
    );
    assert_eq!(release_secrets(&cp, app), first, "the revisions stay");

    d.ok(&["override", "set", app, "web", "--set", "replicaCount=3"]);
    let mark = audit_events(&cp).len();
    d.ok(&["app", "apply", app]);
    let written = writes(&cp, app, mark);
    assert!(
        written.iter().any(|w| w.contains("/deployments/web")),
        "{written:?}"
    );
    assert!(
        !written
            .iter()
            .any(|w| w.contains("/deployments/api") || w.contains("/statefulsets/db")),
        "only what changed is written: {written:?}"
    );
    let web = cp.object("deployment", Some(app), "web").expect("web");
    assert_eq!(web["status"]["readyReplicas"], 3);
    let revisions: Vec<(String, u64)> = release_secrets(&cp, app)
        .into_iter()
        .map(|(chart, rev, _)| (chart, rev))
        .collect();
    for (chart, revision) in &revisions {
        assert_eq!(
            *revision,
            if chart == "web" { 2 } else { 1 },
            "{revisions:?}"
        );
    }

    d.ok(&["app", "remove", app]);
    assert_eq!(d.state_of(app), "uploaded", "{}", d.log());
    let left = cp.kubectl_ok(&[
        "get",
        "all,cm,secret,pvc,pdb",
        "-n",
        app,
        "-l",
        &format!("{APP_LABEL}={app}"),
        "-o",
        "name",
    ]);
    assert_eq!(left.trim(), "", "left behind");
    assert!(release_secrets(&cp, app).is_empty());
    cp.delete_namespace(app);
}

/// The opt-in suite's flow, on the control plane here so that it cannot
/// rot: install, update, remove, nothing left. With
/// `CAPSTAN_E2E_KUBECONFIG` set, the same test runs against that cluster
/// instead (`--ignored` no longer needed).
#[test]
fn install_update_remove_on_a_real_cluster() {
    let (kubeconfig, cp) = match std::env::var_os("CAPSTAN_E2E_KUBECONFIG") {
        Some(path) => (std::path::PathBuf::from(path), None),
        None => {
            let Some(cp) = control_plane() else { return };
            (cp.capstan_kubeconfig(), Some(cp))
        }
    };
    let app = "cp-install";
    if let Some(cp) = &cp {
        cp.delete_namespace(app);
    }
    let d = Daemon::start_with_target(
        app,
        vec!["--kubeconfig".into(), kubeconfig.display().to_string()],
    );
    let v1 = d.shop_bundle("1.0.0", |a| own_shop(a, app));
    d.ok(&["app", "upload", v1.to_str().unwrap_or_default()]);
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    let v2 = d.shop_bundle("1.1.0", |a| own_shop(a, app));
    d.ok(&["app", "update", v2.to_str().unwrap_or_default()]);
    assert_eq!(d.show(app)["active_version"], "1.1.0");
    d.ok(&["app", "remove", app]);
    assert_eq!(d.state_of(app), "uploaded");
    let kubectl = cp.as_ref().map_or_else(
        || {
            let mut k = std::process::Command::new("kubectl");
            k.arg("--kubeconfig").arg(&kubeconfig);
            k
        },
        ControlPlane::kubectl_command,
    );
    let mut kubectl = kubectl;
    let out = kubectl
        .args([
            "get",
            "all",
            "-A",
            "-l",
            &format!("{APP_LABEL}={app}"),
            "-o",
            "name",
        ])
        .output()
        .expect("kubectl");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).trim().is_empty(),
        "left behind: {}",
        text(&out.stdout)
    );
    if let Some(cp) = &cp {
        cp.delete_namespace(app);
    }
}

/// The worker chart of an owned shop with a short readiness timeout, and
/// `change` applied to its folder.
fn worker_with(app: &Path, change: impl FnOnce(&Path)) {
    crate::daemon::edit(
        &app.join("capstan.yaml"),
        "release: worker}",
        "release: worker, timeout: 20s}",
    );
    change(&app.join("charts/worker"));
}

/// Applies a shop whose worker cannot become ready, and returns the
/// failed apply's message after checking the state.
fn failed_apply(cp: &ControlPlane, app: &str, change: impl FnOnce(&Path)) -> String {
    let d = shop(cp, app, |a| worker_with(a, change));
    let out = d.cli(&["app", "apply", app]);
    assert!(!out.status.success(), "{}", d.log());
    let shown = d.show(app);
    let message = shown["message"].as_str().unwrap_or_default().to_owned();
    assert_eq!(shown["state"], "apply-failed", "{message}");
    assert!(
        message.contains("worker"),
        "names the blocking object: {message}"
    );
    let _ = d.cli(&["app", "remove", app]);
    cp.delete_namespace(app);
    message
}

/// A nodeSelector no node matches: the real scheduler's own message.
#[test]
fn an_unschedulable_pod_fails_the_apply_with_the_schedulers_message() {
    let Some(cp) = control_plane() else { return };
    let message = failed_apply(&cp, "cp-unschedulable", |chart| {
        crate::daemon::edit(
            &chart.join("values.yaml"),
            "affinity: {}",
            "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      \
             nodeSelectorTerms:\n      - matchExpressions:\n        - {key: capstan.dev/pool, operator: In, values: [nowhere]}",
        );
    });
    assert!(
        message.contains("Unschedulable")
            && message.contains("didn't match Pod's node affinity/selector"),
        "{message}"
    );
}

/// An image that cannot be pulled (kwok's stage for the tag `:missing`).
#[test]
fn an_image_pull_backoff_fails_the_apply_naming_the_container() {
    let Some(cp) = control_plane() else { return };
    let message = failed_apply(&cp, "cp-image-pull", |chart| {
        crate::daemon::edit(&chart.join("values.yaml"), "tag: \"1.0.0\"", "tag: missing");
    });
    assert!(message.contains("ImagePullBackOff"), "{message}");
}

/// A container that keeps crashing (kwok's stage for a container named
/// `crash`).
#[test]
fn a_crash_loop_fails_the_apply_naming_the_container() {
    let Some(cp) = control_plane() else { return };
    let message = failed_apply(&cp, "cp-crash-loop", |chart| {
        crate::daemon::edit(
            &chart.join("templates/deployment.yaml"),
            "- name: {{ .Chart.Name }}",
            "- name: crash",
        );
    });
    assert!(
        message.contains("CrashLoopBackOff") && message.contains("crash"),
        "{message}"
    );
}

const FAILING_JOB: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-once
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: fail
          image: busybox:1.36
          command: ["false"]
"#;

/// A Job whose pod fails (kwok's stage for a container named `fail`): the
/// Job controller marks it Failed and the apply says so.
#[test]
fn a_failed_job_fails_the_apply() {
    let Some(cp) = control_plane() else { return };
    let message = failed_apply(&cp, "cp-failed-job", |chart| {
        std::fs::write(chart.join("templates/job.yaml"), FAILING_JOB).unwrap();
    });
    assert!(
        message.contains("worker-once") && message.contains("Failed"),
        "{message}"
    );
}

const MIGRATE_HOOK: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-5"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: busybox:1.36
          command: ["true"]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-goodbye
  annotations:
    helm.sh/hook: pre-delete
data:
  said: goodbye
"#;

/// A Helm hook Job completed by the real Job controller (its pod Succeeded
/// on a kwok node): `pre-install` runs before the chart's objects and is
/// deleted on success; `pre-upgrade` runs again on a re-apply; `pre-delete`
/// runs on remove.
#[test]
fn a_hook_job_completes_through_the_job_controller() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-hooks";
    let d = shop(&cp, app, |a| {
        std::fs::write(a.join("charts/config/templates/hooks.yaml"), MIGRATE_HOOK).unwrap();
    });
    let mark = audit_events(&cp).len();
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    let written = writes(&cp, app, mark);
    let position = |needle: &str, verb: &str| {
        written
            .iter()
            .position(|w| w.starts_with(verb) && w.contains(needle))
    };
    let hook = position("/jobs/shop-config-migrate", "patch").expect("the hook ran");
    let config = position("/configmaps/shop-config", "patch").expect("the chart was applied");
    assert!(
        hook < config,
        "the hook runs before the chart's objects: {written:?}"
    );
    assert!(
        position("/jobs/shop-config-migrate", "delete").is_some(),
        "{written:?}"
    );
    cp.eventually("the hook Job is gone", Duration::from_secs(30), || {
        cp.object("job", Some(app), "shop-config-migrate").is_none()
    });
    let mark = audit_events(&cp).len();
    d.ok(&["app", "apply", app]);
    assert!(
        writes(&cp, app, mark)
            .iter()
            .any(|w| w.starts_with("patch") && w.contains("/jobs/shop-config-migrate")),
        "pre-upgrade runs on a re-apply"
    );
    d.ok(&["app", "remove", app]);
    let goodbye = cp
        .object("configmap", Some(app), "shop-config-goodbye")
        .expect("the pre-delete hook ran and stays");
    assert_eq!(goodbye["data"]["said"], "goodbye");
    cp.delete_namespace(app);
}

/// Every object labelled as the app's in `namespace` (`Kind/name`).
fn owned(cp: &ControlPlane, app: &str, namespace: &str) -> Vec<String> {
    cp.kubectl_ok(&[
        "get",
        "all,cm,secret,pvc,pdb",
        "-n",
        namespace,
        "-l",
        &format!("{APP_LABEL}={app}"),
        "-o",
        "name",
    ])
    .lines()
    .map(str::to_owned)
    .collect()
}

/// SIGKILL of the daemon in the middle of an apply to the real control
/// plane (paused by the test hook between the base group and `web`):
/// after the restart the app is `apply-failed`, `recover` finishes it, the
/// store and the release Secrets agree, and a remove leaves nothing.
#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the test-hooks feature; cargo xtask test enables it"
)]
fn a_daemon_killed_mid_apply_recovers_with_nothing_orphaned() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-crash";
    let mut d = shop(&cp, app, |_| {});
    d.kill();
    d.spawn(&[("CAPSTAN_TEST_PAUSE_AT", "apply:apply:web")]);
    let _ = d.cli(&["app", "apply", app, "--no-wait"]);
    let paused = d.state().join("paused-at");
    cp.eventually(
        "the daemon paused before web",
        Duration::from_secs(120),
        || paused.exists(),
    );
    d.kill();
    assert!(
        cp.object("statefulset", Some(app), "db").is_some(),
        "the base group was applied before the kill"
    );
    d.spawn(&[]);
    assert_eq!(d.state_of(app), "apply-failed");
    d.ok(&["app", "recover", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert_eq!(release_secrets(&cp, app), stored_releases(&d, app));
    for (kind, name) in [
        ("deployment", "web"),
        ("deployment", "api"),
        ("statefulset", "db"),
    ] {
        assert!(cp.object(kind, Some(app), name).is_some(), "{kind}/{name}");
    }
    d.ok(&["app", "remove", app]);
    assert_eq!(owned(&cp, app, app), Vec::<String>::new());
    assert!(release_secrets(&cp, app).is_empty());
    cp.delete_namespace(app);
}

/// A ConfigMap made by hand before the app: the apply refuses to take it
/// over until `--adopt`.
#[test]
fn a_foreign_object_is_a_conflict_until_adopted() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-adopt";
    cp.delete_namespace(app);
    let out = cp.kubectl_stdin(
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {app}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop-config\n  namespace: {app}\ndata:\n  made: by hand\n"
        ),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let d = cp.daemon(app);
    let bundle = d.shop_bundle("1.0.0", |a| own_shop(a, app));
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    let out = d.cli(&["app", "apply", app]);
    assert!(!out.status.success());
    let shown = d.show(app);
    let message = shown["message"].as_str().unwrap_or_default().to_owned();
    assert_eq!(shown["state"], "apply-failed", "{message}");
    assert!(message.contains("shop-config"), "{message}");
    let cm = cp
        .object("configmap", Some(app), "shop-config")
        .expect("kept");
    assert_eq!(cm["data"]["made"], "by hand", "left alone");
    d.ok(&["app", "apply", app, "--adopt"]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    let cm = cp
        .object("configmap", Some(app), "shop-config")
        .expect("adopted");
    assert_eq!(cm["metadata"]["labels"][APP_LABEL], app);
    d.ok(&["app", "remove", app]);
    cp.delete_namespace(app);
}

const WIDGETS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.capstan-test.example.com
spec:
  group: capstan-test.example.com
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
---
apiVersion: capstan-test.example.com/v1
kind: Gadget
metadata:
  name: {{ .Release.Name }}-gadget
  finalizers: [capstan-test.example.com/cleanup]
spec:
  size: 3
{{- if .Values.extras }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-kept
  annotations:
    helm.sh/resource-policy: keep
data: {kept: "yes"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-extra
data: {pruned: "yes"}
{{- end }}
"#;

/// A CRD and a resource of it in one chart: the CRD is established by the
/// real apiextensions server before the resource is applied. An update
/// whose render lacks two ConfigMaps prunes the one without
/// `helm.sh/resource-policy: keep`. On remove, a finalizer nobody serves
/// holds the resource, and the failure names it; once the finalizer is
/// gone, remove finishes, the CRD goes too and the kept ConfigMap stays.
#[test]
fn a_crd_and_its_resource_in_one_chart_then_a_finalizer_holds_the_remove() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-crd";
    let gadgets = |extras: bool| {
        move |a: &Path| {
            std::fs::write(a.join("charts/config/templates/gadgets.yaml"), WIDGETS).unwrap();
            let values = a.join("charts/config/values.yaml");
            let mut text = std::fs::read_to_string(&values).unwrap();
            text.push_str(&format!("extras: {extras}\n"));
            std::fs::write(&values, text).unwrap();
            crate::daemon::edit(
                &a.join("capstan.yaml"),
                "release: shop-config}",
                "release: shop-config, timeout: 5s}",
            );
        }
    };
    let d = shop(&cp, app, gadgets(true));
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert!(
        cp.object("gadget", Some(app), "shop-config-gadget")
            .is_some()
    );
    let v2 = d.shop_bundle("1.1.0", |a| {
        own_shop(a, app);
        gadgets(false)(a);
    });
    d.ok(&["app", "update", v2.to_str().unwrap_or_default()]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert!(
        cp.object("configmap", Some(app), "shop-config-extra")
            .is_none(),
        "dropped from the new version's render: pruned"
    );
    assert!(
        cp.object("configmap", Some(app), "shop-config-kept")
            .is_some(),
        "keep is never pruned"
    );
    assert_eq!(release_secrets(&cp, app), stored_releases(&d, app));

    let out = d.cli(&["app", "remove", app]);
    assert!(!out.status.success(), "the finalizer holds the gadget");
    let shown = d.show(app);
    let message = shown["message"].as_str().unwrap_or_default().to_owned();
    assert_eq!(shown["state"], "remove-failed", "{message}");
    assert!(
        message.contains("shop-config-gadget")
            && message.contains("capstan-test.example.com/cleanup"),
        "{message}"
    );
    assert!(
        cp.object("crd", None, "gadgets.capstan-test.example.com")
            .is_some(),
        "the CRD waits for its resources"
    );
    cp.kubectl_ok(&[
        "patch",
        "gadget",
        "shop-config-gadget",
        "-n",
        app,
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    d.ok(&["app", "remove", app]);
    assert_eq!(d.state_of(app), "uploaded", "{}", d.log());
    cp.eventually("the CRD is gone", Duration::from_secs(30), || {
        cp.object("crd", None, "gadgets.capstan-test.example.com")
            .is_none()
    });
    assert!(
        cp.object("configmap", Some(app), "shop-config-kept")
            .is_some(),
        "kept objects outlive the release"
    );
    cp.delete_namespace(app);
}

const SEED_JOB: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-seed
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: seed
          image: busybox:1.36
          command: ["echo", {{ .Values.currency | quote }}]
"#;

/// Changes the real validation refuses as immutable: a Job's pod template
/// (then `--recreate Job/NAME` deletes and creates it, and the Job
/// controller runs it again) and a StatefulSet's `volumeClaimTemplates`
/// (the db's volume size, through an update).
#[test]
fn immutable_fields_are_refused_by_the_real_validation_until_recreated() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-immutable";
    let d = shop(&cp, app, |a| {
        std::fs::write(a.join("charts/config/templates/seed.yaml"), SEED_JOB).unwrap();
    });
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());

    d.ok(&["override", "set", app, "config", "--set", "currency=USD"]);
    let out = d.cli(&["app", "apply", app]);
    assert!(!out.status.success());
    let message = d.show(app)["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("shop-config-seed") && message.contains("--recreate"),
        "{message}"
    );
    let old_uid = cp
        .object("job", Some(app), "shop-config-seed")
        .expect("the Job")["metadata"]["uid"]
        .clone();
    d.ok(&["app", "apply", app, "--recreate", "Job/shop-config-seed"]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    let job = cp
        .object("job", Some(app), "shop-config-seed")
        .expect("recreated");
    assert_ne!(job["metadata"]["uid"], old_uid, "a new Job");
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["command"][1],
        "USD"
    );
    cp.eventually("the new Job completes", Duration::from_secs(60), || {
        cp.object("job", Some(app), "shop-config-seed")
            .is_some_and(|j| j["status"]["succeeded"] == 1)
    });

    let v2 = d.shop_bundle("1.1.0", |a| {
        own_shop(a, app);
        std::fs::write(a.join("charts/config/templates/seed.yaml"), SEED_JOB).unwrap();
        crate::daemon::edit(&a.join("capstan.yaml"), "size: 1Gi", "size: 2Gi");
    });
    let out = d.cli(&["app", "update", v2.to_str().unwrap_or_default()]);
    assert!(!out.status.success(), "{}", d.log());
    let shown = d.show(app);
    let message = shown["message"].as_str().unwrap_or_default().to_owned();
    assert!(
        message.contains("StatefulSet") && message.contains("db"),
        "{message}"
    );
    assert_eq!(shown["active_version"], "1.0.0", "rolled back: {message}");
    d.ok(&["app", "remove", app]);
    cp.delete_namespace(app);
}

/// Cuts the db component's traits from the shop's `capstan.yaml`.
fn drop_db_traits(app: &Path) {
    let meta = app.join("capstan.yaml");
    let text = std::fs::read_to_string(&meta).unwrap();
    let cut = text
        .find("    traits:")
        .expect("the db component has traits");
    std::fs::write(&meta, &text[..cut]).unwrap();
}

/// `--rekind db` turns the database from a Deployment into a StatefulSet:
/// the Deployment is deleted with orphan propagation, so the real garbage
/// collector leaves its ReplicaSet's pods' claim alone, and the
/// StatefulSet comes up.
#[test]
fn rekind_orphans_and_the_garbage_collector_keeps_the_claims() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-rekind";
    let d = shop(&cp, app, drop_db_traits);
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert!(
        cp.object("deployment", Some(app), "db").is_some(),
        "no trait: a Deployment"
    );
    let v2 = d.shop_bundle("1.1.0", |a| own_shop(a, app));
    d.ok(&["app", "update", v2.to_str().unwrap_or_default()]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert!(
        cp.object("deployment", Some(app), "db").is_some(),
        "the decision is sticky"
    );
    let claims = |cp: &ControlPlane| -> Vec<String> {
        cp.list("pvc", app)
            .iter()
            .filter_map(|c| c["metadata"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    let before = claims(&cp);
    assert!(
        !before.is_empty(),
        "the volume trait gave the Deployment a claim"
    );

    let mark = audit_events(&cp).len();
    d.ok(&["app", "apply", app, "--rekind", "db"]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert!(cp.object("statefulset", Some(app), "db").is_some());
    cp.eventually("the Deployment is gone", Duration::from_secs(30), || {
        cp.object("deployment", Some(app), "db").is_none()
    });
    assert!(
        writes(&cp, app, mark)
            .iter()
            .any(|w| w.starts_with("delete") && w.contains("/deployments/db")),
        "the Deployment was deleted"
    );
    // The garbage collector has run on the orphaned ReplicaSet by now.
    std::thread::sleep(Duration::from_secs(2));
    let after = claims(&cp);
    for claim in &before {
        assert!(
            after.contains(claim),
            "{claim} survives the kind change: {after:?}"
        );
    }
    d.ok(&["app", "remove", app]);
    cp.delete_namespace(app);
}

/// A capstan local volume (a PV pinned to `worker-1` and its claim): the
/// real PV controller binds the claim, and the scheduler places the pod
/// that mounts it on the volume's node. `volume remove` deletes the claim
/// and the volume (it once left the claim, and the real pv-protection
/// finalizer held the volume until the remove's deadline).
#[test]
fn a_local_volume_is_bound_and_its_pod_lands_on_the_volumes_node() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-local";
    cp.delete_namespace(app);
    let d = cp.daemon(app);
    for (name, path, size) in [
        ("cp-zk-data", "/srv/zk", "5Gi"),
        ("cp-broker-data", "/srv/kafka", "20Gi"),
    ] {
        let _ = d.cli(&["volume", "remove", name]);
        d.ok(&[
            "volume", "create", name, "--node", "worker-1", "--path", path, "--size", size, "-n",
            app,
        ]);
    }
    let bundle = d.app_bundle("kafka-local", "1.0.0", |a| {
        let meta = a.join("capstan.yaml");
        let text = std::fs::read_to_string(&meta).unwrap();
        let text = text
            .replace("namespace: kafka,", &format!("namespace: {app},"))
            .replace("volume: zk-data", "volume: cp-zk-data")
            .replace("volume: broker-data", "volume: cp-broker-data");
        std::fs::write(&meta, text).unwrap();
    });
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    d.ok(&["app", "apply", "kafka-local"]);
    assert_eq!(d.state_of("kafka-local"), "applied", "{}", d.log());
    let claims = cp.list("pvc", app);
    assert!(!claims.is_empty());
    for claim in &claims {
        assert_eq!(claim["status"]["phase"], "Bound", "{claim:#}");
    }
    let pods = cp.list("pods", app);
    assert!(!pods.is_empty());
    for pod in &pods {
        assert!(ready(pod), "{pod:#}");
        assert_eq!(
            pod["spec"]["nodeName"], "worker-1",
            "on the volume's node: {pod:#}"
        );
    }
    d.ok(&["app", "remove", "kafka-local"]);
    // Removing a volume removes its claim, then its PersistentVolume,
    // which the pv-protection finalizer holds while the claim is there.
    for name in ["cp-zk-data", "cp-broker-data"] {
        d.ok(&["volume", "remove", name]);
        assert!(
            cp.object("pvc", Some(app), name).is_none(),
            "{name}'s claim"
        );
        assert!(cp.object("pv", None, name).is_none(), "{name}'s volume");
    }
    cp.delete_namespace(app);
}

/// RBAC for real: the daemon's identity is a ServiceAccount bound to
/// `deploy/clusterrole.yaml` in every test here. This one binds a copy of
/// that ClusterRole without the `delete` verb to another ServiceAccount:
/// the apply passes, the remove fails with the server's Forbidden naming
/// the verb and the object, so a verb missing from the ClusterRole fails a
/// test.
#[test]
fn a_verb_missing_from_the_cluster_role_fails_the_flow_that_needs_it() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-rbac";
    cp.delete_namespace(app);
    let role =
        std::fs::read_to_string(crate::support::workspace_root().join("deploy/clusterrole.yaml"))
            .expect("deploy/clusterrole.yaml");
    let (role, binding) = role
        .split_once("\n---\n")
        .expect("a ClusterRole then its binding");
    assert!(role.contains("\"delete\""), "{role}");
    let narrowed = format!(
        "{}\n---\n{}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: capstan-no-delete\n  namespace: capstan-system\n",
        role.replace("name: capstan\n", "name: capstan-no-delete\n")
            .replace(", \"delete\"]", "]"),
        binding.replace("name: capstan\n", "name: capstan-no-delete\n"),
    );
    assert!(!narrowed.contains("\"delete\""), "{narrowed}");
    let out = cp.kubectl_stdin(&["apply", "--server-side", "-f", "-"], &narrowed);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let token = cp.kubectl_ok(&[
        "create",
        "token",
        "capstan-no-delete",
        "-n",
        "capstan-system",
    ]);
    let kubeconfig = std::fs::read_to_string(cp.capstan_kubeconfig()).expect("capstan.kubeconfig");
    let (head, _) = kubeconfig
        .split_once("    token: ")
        .expect("a token kubeconfig");
    let (_, tail) = kubeconfig
        .split_once("    token: ")
        .and_then(|(_, rest)| rest.split_once('\n'))
        .expect("a token line");
    let narrowed_config = crate::support::fresh_dir("cp-rbac-kube").join("kubeconfig");
    std::fs::write(
        &narrowed_config,
        format!("{head}    token: {}\n{tail}", token.trim()),
    )
    .unwrap();

    let d = Daemon::start_with_target(
        app,
        vec!["--kubeconfig".into(), narrowed_config.display().to_string()],
    );
    let bundle = d.shop_bundle("1.0.0", |a| own_shop(a, app));
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    let out = d.cli(&["app", "remove", app]);
    assert!(!out.status.success(), "remove needs delete");
    let shown = d.show(app);
    let message = shown["message"].as_str().unwrap_or_default().to_owned();
    assert_eq!(shown["state"], "remove-failed", "{message}");
    assert!(
        message.contains("forbidden") && message.contains("delete"),
        "the server's reason, with the verb: {message}"
    );
    cp.delete_namespace(app);
}

/// A Service's `clusterIP` is immutable once the server assigned one:
/// asking for another is refused by the real validation, naming the
/// Service and `--recreate`; with `--recreate Service/NAME` it is deleted
/// and created with the new address. An address another Service holds
/// fails the recreate at once, naming that Service.
#[test]
fn a_services_cluster_ip_is_immutable_until_recreated() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-cluster-ip";
    let d = shop(&cp, app, |a| {
        crate::daemon::edit(
            &a.join("charts/web/templates/service.yaml"),
            "  type: {{ .Values.service.type }}\n",
            "  type: {{ .Values.service.type }}\n  {{- with .Values.service.clusterIP }}\n  clusterIP: {{ . }}\n  {{- end }}\n",
        );
    });
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    let assigned =
        cp.object("service", Some(app), "web").expect("the Service")["spec"]["clusterIP"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    assert!(assigned.starts_with("10.0.0."), "{assigned}");
    // An address from the range's static band (the lowest 16 of a /24,
    // KEP-3070): the allocator gives dynamic addresses from the band above
    // it first, so no other test's Service on this shared control plane
    // holds it (10.0.0.200 did once, and the recreate waited in vain).
    let wanted = if assigned == "10.0.0.12" {
        "10.0.0.13"
    } else {
        "10.0.0.12"
    };

    // Asks for `address` and applies with `flags`, which fails: the
    // failure's message.
    let refused = |address: &str, flags: &[&str]| {
        d.ok(&[
            "override",
            "set",
            app,
            "web",
            "--set",
            &format!("service.clusterIP={address}"),
        ]);
        let out = d.cli(&[&["app", "apply", app][..], flags].concat());
        assert!(!out.status.success(), "{}", d.log());
        d.show(app)["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let message = refused(wanted, &[]);
    assert!(
        message.contains("Service") && message.contains("web") && message.contains("--recreate"),
        "{message}"
    );
    let uid =
        cp.object("service", Some(app), "web").expect("still there")["metadata"]["uid"].clone();

    d.ok(&["app", "apply", app, "--recreate", "Service/web"]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    let service = cp.object("service", Some(app), "web").expect("recreated");
    assert_ne!(service["metadata"]["uid"], uid, "a new Service");
    assert_eq!(service["spec"]["clusterIP"], wanted);

    // An address another Service holds is not waited for until the
    // deadline: the refusal names the holder, read from its IPAddress.
    let taken = "10.0.0.14";
    cp.kubectl_ok(&[
        "-n",
        app,
        "create",
        "service",
        "clusterip",
        "blocker",
        "--tcp=80:80",
        &format!("--clusterip={taken}"),
    ]);
    let message = refused(taken, &["--recreate", "Service/web"]);
    assert!(
        message.contains("already allocated")
            && message.contains(&format!("by Service {app}/blocker")),
        "{message}"
    );
    d.ok(&["app", "remove", app]);
    cp.delete_namespace(app);
}

/// A chart that holds its own Namespace: the remove deletes what is in it
/// first and the Namespace last, and the namespace controller finishes it;
/// the remove does not fail on objects the namespace's deletion already
/// took.
#[test]
fn removing_an_app_whose_chart_holds_its_namespace() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-own-ns";
    let d = shop(&cp, app, |a| {
        std::fs::write(
            a.join("charts/config/templates/namespace.yaml"),
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ .Release.Namespace }}\n",
        )
        .unwrap();
    });
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    let namespace = cp.object("namespace", None, app).expect("the Namespace");
    assert_eq!(namespace["metadata"]["labels"][APP_LABEL], app);

    d.ok(&["app", "remove", app]);
    assert_eq!(d.state_of(app), "uploaded", "{}", d.log());
    cp.eventually("the namespace is gone", Duration::from_secs(60), || {
        cp.object("namespace", None, app).is_none()
    });
    assert!(release_secrets(&cp, app).is_empty());
}
