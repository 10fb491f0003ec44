//! The daemon against a Kubernetes API server: the test double
//! `kube-double` (it speaks the API server's wire protocol and simulates
//! the controllers), started in process, with `capstan serve --kubeconfig`.
//! The same flows against a real cluster are the opt-in suite
//! `real_cluster` (`CAPSTAN_E2E_KUBECONFIG`).

use std::path::Path;
use std::time::Duration;

use kube_double::{KubeDouble, Options};
use serde_json::Value;

use crate::daemon::{Daemon, edit, text};

const APP_LABEL: &str = "app.capstan.dev/app";

/// A double and a daemon applying to it.
struct Cluster {
    double: KubeDouble,
    daemon: Daemon,
}

fn start(name: &str, options: Options) -> Cluster {
    let double = KubeDouble::start(options).unwrap();
    let dir = crate::support::fresh_dir(&format!("{name}-kube"));
    let kubeconfig = dir.join("kubeconfig");
    double.write_kubeconfig(&kubeconfig).unwrap();
    let daemon = Daemon::start_with_target(
        name,
        vec!["--kubeconfig".into(), kubeconfig.display().to_string()],
    );
    Cluster { double, daemon }
}

fn quick() -> Options {
    Options {
        ready_after: Duration::from_millis(50),
        ..Options::default()
    }
}

fn upload_shop(c: &Cluster, tweak: impl FnOnce(&Path)) {
    let bundle = c.daemon.shop_bundle("1.0.0", tweak);
    c.daemon
        .ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
}

/// Every object the double holds that carries the app's label.
fn owned_by(double: &KubeDouble, app: &str) -> Vec<String> {
    double
        .objects()
        .iter()
        .filter(|o| o["metadata"]["labels"][APP_LABEL] == app)
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or("?"),
                o["metadata"]["name"]
            )
        })
        .collect()
}

/// The inventory JSON a release Secret holds in `data.release`.
fn release_inventory(secret: &Value) -> Value {
    use base64::Engine as _;
    let data = secret["data"]["release"].as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .expect("base64 data");
    serde_json::from_slice(&bytes).expect("inventory JSON")
}

/// Asserts that the store's copy of every release of `app` (`app show -o
/// json`, `releases`) and the release Secrets in the cluster say the same:
/// the same releases, the same objects in the same order, the same
/// revision. Returns each release's chart and revision.
fn store_agrees_with_the_cluster(c: &Cluster, app: &str) -> Vec<(String, u64)> {
    let shown = c.daemon.show(app);
    for release in shown["releases"].as_array().into_iter().flatten() {
        assert_eq!(release["method"], "server-side-apply", "{release}");
    }
    let stored: Vec<(String, u64, Value)> = shown["releases"]
        .as_array()
        .expect("app show lists the releases")
        .iter()
        .map(|r| {
            (
                r["chart"].as_str().unwrap_or_default().to_owned(),
                r["revision"].as_u64().expect("a revision"),
                r["objects"].clone(),
            )
        })
        .collect();
    let mut in_cluster: Vec<(String, u64, Value)> = c
        .double
        .objects()
        .into_iter()
        .filter(|o| o["type"] == "capstan.dev/release.v1")
        .filter(|o| o["metadata"]["labels"][APP_LABEL] == app)
        .map(|secret| {
            let inventory = release_inventory(&secret);
            let objects: Vec<Value> = inventory["objects"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(|mut entry| {
                    let object = entry.as_object_mut().expect("an entry");
                    object.remove("method");
                    object.remove("state");
                    entry
                })
                .collect();
            (
                inventory["chart"].as_str().unwrap_or_default().to_owned(),
                inventory["revision"].as_u64().expect("a revision"),
                Value::Array(objects),
            )
        })
        .collect();
    in_cluster.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        stored, in_cluster,
        "the store and the release Secrets agree"
    );
    stored
        .into_iter()
        .map(|(chart, rev, _)| (chart, rev))
        .collect()
}

/// Writes (not dry runs) the double received.
fn writes(double: &KubeDouble) -> Vec<String> {
    double
        .requests()
        .into_iter()
        .filter(|r| matches!(r.method.as_str(), "PATCH" | "POST" | "PUT" | "DELETE"))
        .filter(|r| !r.query.contains("dryRun=All"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

#[test]
fn the_shop_app_applies_to_the_cluster_and_a_reapply_writes_nothing() {
    let c = start("cluster-shop", quick());
    upload_shop(&c, |_| {});
    c.daemon.ok(&["app", "apply", "shop"]);
    assert_eq!(c.daemon.state_of("shop"), "applied", "{}", c.daemon.log());

    let db = c
        .double
        .object("apps/v1", "StatefulSet", Some("shop"), "db")
        .expect("the database runs as a StatefulSet");
    assert_eq!(db["metadata"]["labels"][APP_LABEL], "shop");
    assert_eq!(db["metadata"]["labels"]["app.capstan.dev/chart"], "db");
    let web = c
        .double
        .object("apps/v1", "Deployment", Some("shop"), "web")
        .expect("web is applied");
    assert_eq!(web["spec"]["replicas"], 2, "the plugin's duplex sizing");
    let managers: Vec<&str> = web["metadata"]["managedFields"]
        .as_array()
        .map(|m| m.iter().filter_map(|e| e["manager"].as_str()).collect())
        .unwrap_or_default();
    assert!(managers.contains(&"capstan"), "{managers:?}");
    let secret = c
        .double
        .object("v1", "Secret", Some("shop"), "capstan.release.v1.shop.web")
        .expect("the release Secret records the inventory");
    assert_eq!(secret["type"], "capstan.dev/release.v1");
    let first = store_agrees_with_the_cluster(&c, "shop");
    assert!(!first.is_empty());
    assert!(first.iter().all(|(_, rev)| *rev == 1), "{first:?}");

    c.double.clear_requests();
    c.daemon.ok(&["app", "apply", "shop"]);
    assert_eq!(c.daemon.state_of("shop"), "applied");
    assert_eq!(writes(&c.double), Vec::<String>::new(), "nothing changed");
    assert_eq!(
        store_agrees_with_the_cluster(&c, "shop"),
        first,
        "an apply that writes nothing keeps the revisions"
    );

    c.daemon
        .ok(&["override", "set", "shop", "web", "--set", "replicaCount=3"]);
    c.double.clear_requests();
    c.daemon.ok(&["app", "apply", "shop"]);
    let web = c
        .double
        .object("apps/v1", "Deployment", Some("shop"), "web")
        .unwrap();
    assert_eq!(web["spec"]["replicas"], 3);
    let written = writes(&c.double);
    assert!(
        written.iter().any(|w| w.ends_with("/deployments/web")),
        "{written:?}"
    );
    assert!(
        !written.iter().any(|w| w.ends_with("/deployments/api")),
        "only what changed is written: {written:?}"
    );
    let revisions = store_agrees_with_the_cluster(&c, "shop");
    for (chart, revision) in &revisions {
        let expected = if chart == "web" { 2 } else { 1 };
        assert_eq!(*revision, expected, "{chart}: {revisions:?}");
    }

    c.daemon.ok(&["app", "remove", "shop"]);
    assert_eq!(c.daemon.state_of("shop"), "uploaded");
    assert_eq!(owned_by(&c.double, "shop"), Vec::<String>::new());
    assert_eq!(store_agrees_with_the_cluster(&c, "shop"), []);
    assert!(
        c.double
            .object("v1", "Secret", Some("shop"), "capstan.release.v1.shop.web")
            .is_none()
    );
}

#[test]
fn a_chart_that_never_becomes_ready_fails_naming_the_blocking_object() {
    let c = start(
        "cluster-not-ready",
        Options {
            simulate_controllers: false,
            ..quick()
        },
    );
    upload_shop(&c, |app| {
        edit(
            &app.join("capstan.yaml"),
            "release: db, overrides: [overrides/db.yaml]}",
            "release: db, overrides: [overrides/db.yaml], timeout: 2s}",
        );
    });
    let out = c.daemon.cli(&["app", "apply", "shop"]);
    assert!(!out.status.success());
    let shown = c.daemon.show("shop");
    assert_eq!(shown["state"], "apply-failed");
    let message = shown["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("StatefulSet") && message.contains("db"),
        "{message}"
    );
    assert!(
        c.double
            .object("apps/v1", "Deployment", Some("shop"), "web")
            .is_none(),
        "the services group waits for the base group"
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("db"), "{stderr}");
}

#[test]
fn a_foreign_object_is_a_conflict_until_adopted() {
    let c = start("cluster-adopt", quick());
    c.double.put_object(
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "shop-config", "namespace": "shop"},
            "data": {"made": "by hand"}
        }),
        "kubectl",
    );
    upload_shop(&c, |_| {});
    let out = c.daemon.cli(&["app", "apply", "shop"]);
    assert!(!out.status.success());
    let shown = c.daemon.show("shop");
    let message = shown["message"].as_str().unwrap_or_default().to_owned();
    assert_eq!(shown["state"], "apply-failed", "{message}");
    assert!(message.contains("shop-config"), "{message}");
    let cm = c
        .double
        .object("v1", "ConfigMap", Some("shop"), "shop-config")
        .unwrap();
    assert_eq!(cm["data"]["made"], "by hand", "left alone");

    c.daemon.ok(&["app", "apply", "shop", "--adopt"]);
    assert_eq!(c.daemon.state_of("shop"), "applied");
    let cm = c
        .double
        .object("v1", "ConfigMap", Some("shop"), "shop-config")
        .unwrap();
    assert_eq!(cm["metadata"]["labels"][APP_LABEL], "shop");
}

#[test]
fn retries_carry_an_apply_through_server_errors() {
    let c = start("cluster-retry", quick());
    upload_shop(&c, |_| {});
    c.double.inject_fault(kube_double::Fault {
        method: Some("PATCH".into()),
        path_contains: "/deployments/web".into(),
        times: 2,
        kind: kube_double::FaultKind::Status(503),
    });
    c.double.inject_fault(kube_double::Fault {
        method: Some("PATCH".into()),
        path_contains: "/deployments/api".into(),
        times: 1,
        kind: kube_double::FaultKind::TooManyRequests {
            retry_after_secs: 1,
        },
    });
    c.daemon.ok(&["app", "apply", "shop"]);
    assert_eq!(c.daemon.state_of("shop"), "applied", "{}", c.daemon.log());
    assert!(
        c.double
            .object("apps/v1", "Deployment", Some("shop"), "web")
            .is_some()
    );
}

/// A daemon killed in the middle of a cluster apply: after the restart the
/// app is `apply-failed`, `recover` finishes the apply, and a remove leaves
/// nothing behind, so nothing was lost or orphaned between the store and
/// the release Secrets.
#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the test-hooks feature; cargo xtask test enables it"
)]
fn a_daemon_killed_mid_apply_recovers_with_nothing_orphaned() {
    let mut c = start("cluster-crash", quick());
    upload_shop(&c, |_| {});
    c.daemon.kill();
    c.daemon
        .spawn(&[("CAPSTAN_TEST_PAUSE_AT", "apply:apply:web")]);
    let _ = c.daemon.cli(&["app", "apply", "shop", "--no-wait"]);
    let paused = c.daemon.state().join("paused-at");
    let started = std::time::Instant::now();
    while !paused.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{}",
            c.daemon.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    c.daemon.kill();
    assert!(
        c.double
            .object("apps/v1", "StatefulSet", Some("shop"), "db")
            .is_some(),
        "the base group was applied before the kill"
    );
    c.daemon.spawn(&[]);
    assert_eq!(c.daemon.state_of("shop"), "apply-failed");
    c.daemon.ok(&["app", "recover", "shop"]);
    assert_eq!(c.daemon.state_of("shop"), "applied", "{}", c.daemon.log());
    store_agrees_with_the_cluster(&c, "shop");
    for (kind, name) in [
        ("Deployment", "web"),
        ("Deployment", "api"),
        ("StatefulSet", "db"),
    ] {
        let api = if kind == "Deployment" || kind == "StatefulSet" {
            "apps/v1"
        } else {
            "v1"
        };
        assert!(
            c.double.object(api, kind, Some("shop"), name).is_some(),
            "{kind}/{name}"
        );
    }
    c.daemon.ok(&["app", "remove", "shop"]);
    assert_eq!(owned_by(&c.double, "shop"), Vec::<String>::new());
    let secrets: Vec<Value> = c
        .double
        .objects()
        .into_iter()
        .filter(|o| o["type"] == "capstan.dev/release.v1")
        .collect();
    assert!(secrets.is_empty(), "{secrets:?}");
}

/// The entries of a release Secret: `(kind/name, state)`.
fn inventory_entries(double: &KubeDouble, namespace: &str, secret: &str) -> Vec<(String, String)> {
    let Some(secret) = double.object("v1", "Secret", Some(namespace), secret) else {
        return Vec::new();
    };
    release_inventory(&secret)["objects"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|e| {
            (
                format!(
                    "{}/{}",
                    e["kind"].as_str().unwrap_or_default(),
                    e["name"].as_str().unwrap_or_default()
                ),
                e["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// A SIGKILL inside a stage: the api chart's Service and
/// PodDisruptionBudget are applied, its Deployment's request is in flight
/// (the double holds it). The release Secret already names the Deployment
/// as pending, so nothing the apply may have created is unknown; after a
/// restart, `recover` finishes the apply, the store and the Secrets agree,
/// and a remove leaves nothing behind.
#[test]
fn a_daemon_killed_inside_a_stage_has_the_object_in_flight_recorded_as_pending() {
    let mut c = start("cluster-crash-stage", quick());
    upload_shop(&c, |_| {});
    c.double.inject_fault(kube_double::Fault {
        method: Some("PATCH".into()),
        path_contains: "/deployments/api".into(),
        times: 1,
        kind: kube_double::FaultKind::Delay(Duration::from_secs(3)),
    });
    let _ = c.daemon.cli(&["app", "apply", "shop", "--no-wait"]);
    let started = std::time::Instant::now();
    while !c
        .double
        .requests()
        .iter()
        .any(|r| r.method == "PATCH" && r.path.ends_with("/deployments/api"))
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{}",
            c.daemon.log()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    c.daemon.kill();
    assert!(
        c.double
            .object("v1", "Service", Some("shop"), "api")
            .is_some(),
        "the stage's Service went before the Deployment"
    );
    assert!(
        c.double
            .object("apps/v1", "Deployment", Some("shop"), "api")
            .is_none(),
        "the Deployment's request is still in flight"
    );
    let entries = inventory_entries(&c.double, "shop", "capstan.release.v1.shop.api");
    assert!(
        entries.contains(&("Deployment/api".to_owned(), "pending".to_owned())),
        "the object in flight is recorded before it is sent: {entries:?}"
    );

    c.daemon.spawn(&[]);
    assert_eq!(c.daemon.state_of("shop"), "apply-failed");
    c.daemon.ok(&["app", "recover", "shop"]);
    assert_eq!(c.daemon.state_of("shop"), "applied", "{}", c.daemon.log());
    let entries = inventory_entries(&c.double, "shop", "capstan.release.v1.shop.api");
    assert!(
        entries.iter().all(|(_, state)| state == "applied"),
        "{entries:?}"
    );
    store_agrees_with_the_cluster(&c, "shop");
    c.daemon.ok(&["app", "remove", "shop"]);
    assert_eq!(owned_by(&c.double, "shop"), Vec::<String>::new());
    assert_eq!(store_agrees_with_the_cluster(&c, "shop"), []);
}

/// The opt-in suite against a real cluster (kind, k3d or any):
/// `CAPSTAN_E2E_KUBECONFIG=path cargo xtask test -- --ignored real_cluster`.
/// Installs the shop app (its Pods must become ready: the apply waits for
/// them), updates it, removes it, and checks nothing labelled for it is
/// left. Skipped with a message when the variable is unset.
#[test]
#[ignore = "needs a real cluster: set CAPSTAN_E2E_KUBECONFIG and run with --ignored"]
fn real_cluster_install_update_remove() {
    let Some(kubeconfig) = std::env::var_os("CAPSTAN_E2E_KUBECONFIG") else {
        eprintln!("real_cluster: CAPSTAN_E2E_KUBECONFIG is not set; skipped");
        return;
    };
    let kubeconfig = Path::new(&kubeconfig);
    let d = Daemon::start_with_target(
        "real-cluster",
        vec!["--kubeconfig".into(), kubeconfig.display().to_string()],
    );
    let v1 = d.shop_bundle("1.0.0", |_| {});
    d.ok(&["app", "upload", v1.to_str().unwrap_or_default()]);
    d.ok(&["app", "apply", "shop"]);
    assert_eq!(d.state_of("shop"), "applied", "{}", d.log());
    let v2 = d.shop_bundle("1.1.0", |_| {});
    d.ok(&["app", "update", v2.to_str().unwrap_or_default()]);
    assert_eq!(d.show("shop")["active_version"], "1.1.0");
    d.ok(&["app", "remove", "shop"]);
    assert_eq!(d.state_of("shop"), "uploaded");
    if let Ok(out) = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args([
            "get",
            "all",
            "-A",
            "-l",
            "app.capstan.dev/app=shop",
            "-o",
            "name",
        ])
        .output()
    {
        assert!(
            text(&out.stdout).trim().is_empty(),
            "left behind: {}",
            text(&out.stdout)
        );
    }
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

/// Helm hooks through the daemon: a `pre-install` Job runs before the
/// chart's objects, is waited for until Complete and deleted on success
/// (`hook-succeeded`); it runs again as `pre-upgrade` on a re-apply; a
/// `pre-delete` hook runs on remove. Hook objects are not in the inventory.
#[test]
fn helm_hooks_run_around_the_apply_and_the_remove() {
    let c = start("cluster-hooks", quick());
    upload_shop(&c, |app| {
        std::fs::write(app.join("charts/config/templates/hooks.yaml"), MIGRATE_HOOK).unwrap();
    });
    c.daemon.ok(&["app", "apply", "shop"]);
    assert_eq!(c.daemon.state_of("shop"), "applied", "{}", c.daemon.log());
    let requests = c.double.requests();
    let position = |suffix: &str| {
        requests.iter().position(|r| {
            r.method == "PATCH" && !r.query.contains("dryRun") && r.path.ends_with(suffix)
        })
    };
    let hook = position("/jobs/shop-config-migrate").expect("the pre-install hook ran");
    let config = position("/configmaps/shop-config").expect("the chart was applied");
    assert!(hook < config, "the hook runs before the chart's objects");
    assert!(
        requests
            .iter()
            .any(|r| r.method == "DELETE" && r.path.ends_with("/jobs/shop-config-migrate")),
        "deleted on success"
    );
    assert!(
        c.double
            .object("batch/v1", "Job", Some("shop"), "shop-config-migrate")
            .is_none()
    );
    c.double.clear_requests();
    c.daemon.ok(&["app", "apply", "shop"]);
    assert!(
        c.double
            .requests()
            .iter()
            .any(|r| r.method == "PATCH" && r.path.ends_with("/jobs/shop-config-migrate")),
        "pre-upgrade runs on a re-apply"
    );
    c.daemon.ok(&["app", "remove", "shop"]);
    let goodbye = c
        .double
        .object("v1", "ConfigMap", Some("shop"), "shop-config-goodbye")
        .expect("the pre-delete hook ran and, with no delete policy but the default, stays");
    assert_eq!(goodbye["data"]["said"], "goodbye");
}

const WIDGETS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
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
apiVersion: example.com/v1
kind: Widget
metadata:
  name: {{ .Release.Name }}-widget
  finalizers: [example.com/cleanup]
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

/// Position of the first write (not a dry run) `method` whose path ends
/// with `suffix`.
fn first_write(double: &KubeDouble, method: &str, suffix: &str) -> Option<usize> {
    double
        .requests()
        .iter()
        .position(|r| r.method == method && !r.query.contains("dryRun") && r.path.ends_with(suffix))
}

/// One chart holding a CRD and a custom resource of it: the CRD is applied
/// first and waited for until its kind resolves, then the resource. An
/// update whose render lacks some objects prunes them, except the one annotated
/// `keep`. Remove deletes the resource before its CRD and, while a
/// finalizer holds it, fails naming the object and the finalizer; once the
/// finalizer is gone a second remove finishes.
#[test]
fn a_crd_and_its_resource_in_one_chart_then_prune_with_keep_then_remove_past_a_finalizer() {
    let c = start("cluster-crd", quick());
    let widgets = |extras: bool| {
        move |app: &Path| {
            std::fs::write(app.join("charts/config/templates/widgets.yaml"), WIDGETS).unwrap();
            let values = app.join("charts/config/values.yaml");
            let mut text = std::fs::read_to_string(&values).unwrap();
            text.push_str(&format!("extras: {extras}\n"));
            std::fs::write(&values, text).unwrap();
            edit(
                &app.join("capstan.yaml"),
                "release: shop-config}",
                "release: shop-config, timeout: 3s}",
            );
        }
    };
    upload_shop(&c, widgets(true));
    c.daemon.ok(&["app", "apply", "shop"]);
    assert_eq!(c.daemon.state_of("shop"), "applied", "{}", c.daemon.log());
    let crd = first_write(
        &c.double,
        "PATCH",
        "/customresourcedefinitions/widgets.example.com",
    )
    .expect("the CRD was applied");
    let widget = first_write(&c.double, "PATCH", "/widgets/shop-config-widget")
        .expect("the custom resource was applied");
    assert!(crd < widget, "the CRD goes first");
    assert!(
        c.double
            .object(
                "example.com/v1",
                "Widget",
                Some("shop"),
                "shop-config-widget"
            )
            .is_some()
    );

    let v2 = c.daemon.shop_bundle("1.1.0", widgets(false));
    c.daemon
        .ok(&["app", "update", v2.to_str().unwrap_or_default()]);
    assert_eq!(c.daemon.state_of("shop"), "applied", "{}", c.daemon.log());
    assert!(
        c.double
            .object("v1", "ConfigMap", Some("shop"), "shop-config-extra")
            .is_none(),
        "dropped from the new version's render: pruned by the update"
    );
    assert!(
        c.double
            .object("v1", "ConfigMap", Some("shop"), "shop-config-kept")
            .is_some(),
        "helm.sh/resource-policy: keep is never pruned"
    );
    let releases = store_agrees_with_the_cluster(&c, "shop");
    assert!(releases.contains(&("config".to_owned(), 2)), "{releases:?}");
    let config = &c.daemon.show("shop")["releases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["chart"] == "config")
        .unwrap()["objects"]
        .clone();
    let names: Vec<&str> = config
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["name"].as_str())
        .collect();
    assert!(
        !names.contains(&"shop-config-kept"),
        "kept objects leave the inventory: {names:?}"
    );

    c.double.clear_requests();
    let out = c.daemon.cli(&["app", "remove", "shop"]);
    assert!(!out.status.success(), "the finalizer holds the widget");
    let shown = c.daemon.show("shop");
    let message = shown["message"].as_str().unwrap_or_default().to_owned();
    assert_eq!(shown["state"], "remove-failed", "{message}");
    assert!(
        message.contains("shop-config-widget") && message.contains("example.com/cleanup"),
        "{message}"
    );
    assert!(
        first_write(
            &c.double,
            "DELETE",
            "/customresourcedefinitions/widgets.example.com"
        )
        .is_none(),
        "the CRD waits for its resources"
    );
    store_agrees_with_the_cluster(&c, "shop");

    assert!(c.double.remove_finalizers(
        "example.com/v1",
        "Widget",
        Some("shop"),
        "shop-config-widget"
    ));
    c.double.clear_requests();
    c.daemon.ok(&["app", "remove", "shop"]);
    assert_eq!(c.daemon.state_of("shop"), "uploaded", "{}", c.daemon.log());
    assert!(
        c.double
            .object(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                "widgets.example.com"
            )
            .is_none(),
        "the CRD goes with the release on remove"
    );
    assert!(
        c.double
            .object("v1", "ConfigMap", Some("shop"), "shop-config-kept")
            .is_some(),
        "kept objects outlive the release"
    );
    assert_eq!(store_agrees_with_the_cluster(&c, "shop"), []);
}

/// A field another manager owns is a 409 naming the field and the
/// manager; the apply fails and nothing is forced.
#[test]
fn a_field_owned_by_another_manager_is_a_conflict_naming_both() {
    let c = start("cluster-conflict", quick());
    upload_shop(&c, |_| {});
    c.daemon.ok(&["app", "apply", "shop"]);
    let mut web = c
        .double
        .object("apps/v1", "Deployment", Some("shop"), "web")
        .unwrap();
    web["spec"]["replicas"] = serde_json::json!(7);
    c.double.put_object(web, "hpa-controller");
    c.daemon
        .ok(&["override", "set", "shop", "web", "--set", "replicaCount=4"]);
    let out = c.daemon.cli(&["app", "apply", "shop"]);
    assert!(!out.status.success());
    let shown = c.daemon.show("shop");
    let message = shown["message"].as_str().unwrap_or_default().to_owned();
    assert_eq!(shown["state"], "apply-failed", "{message}");
    assert!(
        message.contains("spec.replicas") && message.contains("hpa-controller"),
        "{message}"
    );
    let web = c
        .double
        .object("apps/v1", "Deployment", Some("shop"), "web")
        .unwrap();
    assert_eq!(web["spec"]["replicas"], 7, "not forced");
    store_agrees_with_the_cluster(&c, "shop");
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

/// Cuts the db component's traits from the shop's `capstan.yaml`.
fn drop_db_traits(app: &Path) {
    let meta = app.join("capstan.yaml");
    let text = std::fs::read_to_string(&meta).unwrap();
    let cut = text
        .find("    traits:")
        .expect("the db component has traits");
    std::fs::write(&meta, &text[..cut]).unwrap();
}

/// A change the server refuses as immutable (a Job's template) fails the
/// apply naming the object, the field and `--recreate`; with
/// `--recreate Job/NAME` the Job is deleted and created again. The
/// database's kind change (a Deployment, decided before its volume trait
/// came with an update, to a StatefulSet by `--rekind`) deletes the
/// Deployment with orphan propagation and keeps its claim.
#[test]
fn an_immutable_change_needs_recreate_and_a_kind_change_keeps_the_claims() {
    let c = start("cluster-immutable", quick());
    upload_shop(&c, |app| {
        std::fs::write(app.join("charts/config/templates/seed.yaml"), SEED_JOB).unwrap();
        drop_db_traits(app);
    });
    c.daemon.ok(&["app", "apply", "shop"]);
    assert_eq!(c.daemon.state_of("shop"), "applied", "{}", c.daemon.log());
    assert!(
        c.double
            .object("apps/v1", "Deployment", Some("shop"), "db")
            .is_some(),
        "no volume trait: a Deployment"
    );

    c.daemon
        .ok(&["override", "set", "shop", "config", "--set", "currency=USD"]);
    let out = c.daemon.cli(&["app", "apply", "shop"]);
    assert!(!out.status.success());
    let message = c.daemon.show("shop")["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("shop-config-seed") && message.contains("--recreate"),
        "{message}"
    );
    c.double.clear_requests();
    c.daemon
        .ok(&["app", "apply", "shop", "--recreate", "Job/shop-config-seed"]);
    assert_eq!(c.daemon.state_of("shop"), "applied", "{}", c.daemon.log());
    assert!(first_write(&c.double, "DELETE", "/jobs/shop-config-seed").is_some());
    let job = c
        .double
        .object("batch/v1", "Job", Some("shop"), "shop-config-seed")
        .unwrap();
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["command"][1],
        "USD"
    );

    let v2 = c.daemon.shop_bundle("1.1.0", |app| {
        std::fs::write(app.join("charts/config/templates/seed.yaml"), SEED_JOB).unwrap();
    });
    c.daemon
        .ok(&["app", "update", v2.to_str().unwrap_or_default()]);
    assert_eq!(c.daemon.state_of("shop"), "applied", "{}", c.daemon.log());
    assert!(
        c.double
            .object("apps/v1", "Deployment", Some("shop"), "db")
            .is_some(),
        "the decision is sticky across the update"
    );
    let claims = |double: &KubeDouble| -> Vec<String> {
        double
            .objects()
            .into_iter()
            .filter(|o| o["kind"] == "PersistentVolumeClaim")
            .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    let before = claims(&c.double);
    assert!(
        !before.is_empty(),
        "the volume trait gave the Deployment a claim"
    );

    c.double.clear_requests();
    c.daemon.ok(&["app", "apply", "shop", "--rekind", "db"]);
    assert_eq!(c.daemon.state_of("shop"), "applied", "{}", c.daemon.log());
    assert!(
        c.double
            .object("apps/v1", "Deployment", Some("shop"), "db")
            .is_none()
    );
    assert!(
        c.double
            .object("apps/v1", "StatefulSet", Some("shop"), "db")
            .is_some()
    );
    let delete = c
        .double
        .requests()
        .into_iter()
        .find(|r| r.method == "DELETE" && r.path.ends_with("/deployments/db"))
        .expect("the Deployment was deleted");
    assert!(delete.body.contains("Orphan"), "{}", delete.body);
    let after = claims(&c.double);
    for claim in &before {
        assert!(
            after.contains(claim),
            "{claim} survives the kind change: {after:?}"
        );
    }
    store_agrees_with_the_cluster(&c, "shop");
}
