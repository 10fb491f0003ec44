//! The daemon against the Kubernetes API-server test double `kube-double`
//! (it speaks the API server's wire protocol and simulates the
//! controllers), started in process, with `capstan serve --kubeconfig`.
//!
//! Only the faults a real server cannot be made to produce on demand run
//! here: 503 and 429 with Retry-After on chosen requests, and a PATCH held
//! in flight while the daemon is killed. Every other cluster flow runs on
//! the real control plane (`real_cluster`).

use std::path::Path;
use std::time::Duration;

use kube_double::{KubeDouble, Options};
use serde_json::Value;

use crate::daemon::Daemon;

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

/// 503s and a 429 with Retry-After on chosen PATCHes carry through the
/// retries. On the double: a real server cannot be made to answer so on
/// demand.
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
/// and a remove leaves nothing behind. On the double: it holds the
/// request in flight, which a real server cannot be made to do.
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
