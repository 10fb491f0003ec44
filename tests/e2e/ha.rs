//! Two daemons in cluster mode (issue 26) on the real control plane, each
//! with its own state folder and the `capstan` ServiceAccount's
//! kubeconfig, sharing their state in App objects and electing a leader on
//! a Lease: one leads and takes changes, the other serves reads and
//! answers changes with 503 `not-leader` naming the leader; `/healthz`
//! and `/readyz` answer without a token; a killed leader's Lease is
//! taken by the other, which reconciles what it left and takes changes;
//! a SIGTERM drains and releases the Lease at once.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::control_plane::{ControlPlane, control_plane, own_shop};
use crate::daemon::{Daemon, text};
use crate::registry::Registry;
use crate::support::fresh_dir;

const NAMESPACE: &str = "capstan-ha-test";

/// A replica on the Lease `lease` (one per test: the tests run at once),
/// keeping bundles in `registry` when given.
fn replica(
    cp: &ControlPlane,
    name: &str,
    identity: &str,
    lease: &str,
    registry: Option<&Registry>,
) -> Daemon {
    let mut args: Vec<String> = Vec::new();
    if let Some(registry) = registry {
        args.extend([
            "--bundle-registry".into(),
            registry.reference("bundles"),
            "--plain-http".into(),
        ]);
    }
    Daemon::start_with_target(
        name,
        args.into_iter()
            .chain([
                "--kubeconfig".into(),
                cp.capstan_kubeconfig().display().to_string(),
                "--store".into(),
                "cluster".into(),
                "--store-namespace".into(),
                NAMESPACE.into(),
                "--identity".into(),
                identity.into(),
                "--lease".into(),
                lease.into(),
                "--lease-duration".into(),
                "6".into(),
                "--renew-deadline".into(),
                "4".into(),
                "--retry-period".into(),
                "1".into(),
                "--shutdown-grace".into(),
                "20".into(),
            ])
            .collect(),
    )
}

/// `b` trusts `a`'s signing key too (restarted to read it).
fn share_key(a: &Daemon, b: &mut Daemon) {
    for entry in std::fs::read_dir(a.dir.join("keys")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "pub") {
            std::fs::copy(&path, b.dir.join("keys").join("a-signer.pub")).unwrap();
        }
    }
    b.kill();
    b.spawn(&[]);
}

fn readyz(d: &Daemon) -> (u16, String) {
    d.http("GET", "/readyz", "application/json", b"")
}

/// Waits for one of `replicas` to answer `/readyz` 200; its index.
fn leader_of(replicas: &[&Daemon], within: Duration) -> usize {
    let started = Instant::now();
    loop {
        let ready: Vec<usize> = (0..replicas.len())
            .filter(|i| readyz(replicas[*i]).0 == 200)
            .collect();
        assert!(ready.len() <= 1, "two leaders at once: {ready:?}");
        if let Some(i) = ready.first() {
            return *i;
        }
        assert!(
            started.elapsed() < within,
            "no leader within {within:?}: {}",
            replicas
                .iter()
                .map(|d| d.log())
                .collect::<Vec<_>>()
                .join("\n---\n")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn fresh(cp: &ControlPlane, app: &str, lease: &str) {
    let _ = cp.kubectl(&["create", "namespace", NAMESPACE]);
    let _ = cp.kubectl(&[
        "delete",
        "lease",
        lease,
        "-n",
        NAMESPACE,
        "--ignore-not-found",
    ]);
    let _ = cp.kubectl(&[
        "delete",
        "apps.capstan.dev",
        app,
        "-n",
        NAMESPACE,
        "--ignore-not-found",
    ]);
    cp.delete_namespace(app);
}

fn app_row(cp: &ControlPlane, app: &str) -> String {
    let table = cp.kubectl_ok(&["get", "apps.capstan.dev", "-n", NAMESPACE]);
    table
        .lines()
        .find(|l| l.starts_with(&format!("{app} ")))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn one_leads_the_other_follows_and_takes_over_when_the_leader_dies() {
    let Some(cp) = control_plane() else { return };
    let app = "ha-shop";
    fresh(&cp, app, "ha-shop");
    let Some(registry) = Registry::start(&fresh_dir("ha-registry"), &[]) else {
        return;
    };
    let a = replica(&cp, "ha-a", "ha-a", "ha-shop", Some(&registry));
    let mut b = replica(&cp, "ha-b", "ha-b", "ha-shop", Some(&registry));
    share_key(&a, &mut b);
    let mut replicas = [a, b];
    let lead = leader_of(&[&replicas[0], &replicas[1]], Duration::from_secs(30));
    let follow = 1 - lead;
    let leader_id = ["ha-a", "ha-b"][lead];

    // Probes answer without a token on the unix socket; the follower is
    // alive but not ready, naming the leader.
    for d in &replicas {
        assert_eq!(d.http("GET", "/healthz", "application/json", b"").0, 200);
    }
    let (status, body) = readyz(&replicas[follow]);
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("not-leader") && body.contains(leader_id),
        "{body}"
    );

    // A change through the follower is refused, naming the leader.
    let bundle = replicas[0].shop_bundle("1.0.0", |dir: &Path| own_shop(dir, app));
    let out = replicas[follow].cli(&["app", "upload", bundle.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains(leader_id) && err.contains("does not lead"),
        "{err}"
    );

    // Through the leader it works, and both read the state; kubectl shows it.
    replicas[lead].ok(&["app", "upload", bundle.to_str().unwrap()]);
    replicas[lead].ok(&["app", "apply", app]);
    assert_eq!(replicas[lead].state_of(app), "applied");
    let listed = replicas[follow].ok(&["app", "list"]);
    assert!(
        listed.contains(app) && listed.contains("applied"),
        "{listed}"
    );
    let row = app_row(&cp, app);
    assert!(row.contains("1.0.0") && row.contains("applied"), "{row}");
    let out = replicas[follow].cli(&["override", "set", app, "web", "--set", "x=1"]);
    assert!(!out.status.success(), "a follower takes no override");

    // The leader dies: the other takes the Lease within its duration
    // plus the renew deadline, reconciles, and takes changes.
    let killed = Instant::now();
    replicas[lead].kill();
    let now_leads = leader_of(&[&replicas[follow]], Duration::from_secs(6 + 4 + 5));
    assert_eq!(now_leads, 0);
    let failover = killed.elapsed();
    eprintln!("failover: {failover:?}");
    let survivor = &replicas[follow];
    survivor.ok(&["override", "set", app, "web", "--set", "replicaCount=3"]);
    let object = cp
        .object("apps.capstan.dev", Some(NAMESPACE), app)
        .expect("the App");
    let overrides = object["spec"]["overrides"].to_string();
    assert!(overrides.contains("replicaCount"), "{object:#}");
    assert_eq!(object["status"]["state"], "applied", "nothing was running");
    let history = survivor.ok(&["app", "history", app]);
    assert!(
        history.contains("upload") && history.contains("apply"),
        "{history}"
    );
    // The survivor never saw the upload: it pulls the bundle from the
    // registry (by the digest the App records), verifies it, and applies
    // the override.
    let source = object["spec"]["versions"][0]["source"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        source.starts_with(&registry.reference("bundles/ha-shop@sha256:")),
        "{source}"
    );
    survivor.ok(&["app", "apply", app]);
    assert_eq!(survivor.state_of(app), "applied", "{}", survivor.log());
    assert!(
        survivor
            .state()
            .join("bundles/ha-shop/1.0.0/capstan.yaml")
            .exists(),
        "the survivor's folder holds the pulled bundle"
    );
    let web = cp.object("deployment", Some(app), "web").expect("web");
    assert_eq!(
        web["spec"]["replicas"], 3,
        "the override set on the new leader"
    );
    assert!(
        cp.kubectl_ok(&["get", "apps.capstan.dev", "-n", NAMESPACE])
            .contains(app)
    );
}

#[test]
fn sigterm_drains_and_releases_the_lease_at_once() {
    let Some(cp) = control_plane() else { return };
    fresh(&cp, "ha-term", "ha-term");
    let a = replica(&cp, "ha-term-a", "term-a", "ha-term", None);
    let first = leader_of(&[&a], Duration::from_secs(30));
    assert_eq!(first, 0);
    let mut b = replica(&cp, "ha-term-b", "term-b", "ha-term", None);
    assert_eq!(readyz(&b).0, 503);
    let mut a = a;
    let stopped = Instant::now();
    a.signal("TERM");
    let status = a.wait_exit(Duration::from_secs(25)).expect("a exits");
    assert!(status.success(), "{status:?}: {}", a.log());
    let holder = cp.kubectl_ok(&[
        "get",
        "lease",
        "ha-term",
        "-n",
        NAMESPACE,
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ]);
    assert!(
        holder.trim().is_empty() || holder.trim() == "term-b",
        "released: {holder:?}"
    );
    // The released Lease is taken well before it would have expired.
    leader_of(&[&b], Duration::from_secs(5));
    assert!(
        stopped.elapsed() < Duration::from_secs(6),
        "{:?}",
        stopped.elapsed()
    );
    assert!(a.log().contains("left the election"), "{}", a.log());
    b.kill();
}
