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

/// The namespace of a test's App objects and Lease: its own, since the
/// daemons of one store reconcile every app in it.
fn state_ns(lease: &str) -> String {
    format!("{lease}-state")
}

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
                state_ns(lease),
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
    cp.delete_namespace(&state_ns(lease));
    cp.kubectl_ok(&["create", "namespace", &state_ns(lease)]);
    cp.delete_namespace(app);
}

fn app_row(cp: &ControlPlane, lease: &str, app: &str) -> String {
    let table = cp.kubectl_ok(&["get", "apps.capstan.dev", "-n", &state_ns(lease)]);
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
    let ns = state_ns("ha-shop");
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
    let row = app_row(&cp, "ha-shop", app);
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
        .object("apps.capstan.dev", Some(&ns), app)
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
        cp.kubectl_ok(&["get", "apps.capstan.dev", "-n", &ns])
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
        "ha-term-state",
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

/// `deploy/` applied exactly as shipped (`kubectl apply -k deploy/`): the
/// CRDs are Established, the Deployment's two replicas run on the
/// control plane's nodes with the probes on /healthz and /readyz, the
/// PodDisruptionBudget and Service select them, and the daemon's
/// arguments are ones `capstan serve` takes.
#[test]
fn deploy_applies_as_shipped() {
    let Some(cp) = control_plane() else { return };
    let root = crate::support::workspace_root();
    let deploy = root.join("deploy");
    cp.kubectl_ok(&["apply", "-k", deploy.to_str().unwrap()]);
    for crd in ["apps.capstan.dev", "volumes.capstan.dev"] {
        cp.kubectl_ok(&[
            "wait",
            "--for=condition=Established",
            "--timeout=30s",
            "crd",
            crd,
        ]);
    }
    let ns = "capstan-system";
    cp.eventually("two replicas available", Duration::from_secs(60), || {
        cp.object("deployment", Some(ns), "capstan")
            .is_some_and(|d| d["status"]["availableReplicas"] == 2)
    });
    let deployment = cp.object("deployment", Some(ns), "capstan").unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    let pdb = cp.object("pdb", Some(ns), "capstan").expect("the PDB");
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    cp.eventually("the PDB sees both", Duration::from_secs(30), || {
        cp.object("pdb", Some(ns), "capstan")
            .is_some_and(|p| p["status"]["currentHealthy"] == 2)
    });
    let service = cp
        .object("service", Some(ns), "capstan")
        .expect("the Service");
    assert_eq!(
        service["spec"]["selector"]["app.kubernetes.io/name"],
        "capstan"
    );
    // The arguments parse: `serve` stops at the in-cluster config this
    // test process lacks, not at a flag.
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let out = crate::support::capstan()
        .args(&args)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        !err.contains("unexpected argument") && !err.contains("invalid value"),
        "{err}"
    );
    assert!(err.contains("trust") || err.contains("cluster"), "{err}");
    for kind in ["deployment", "pdb", "service"] {
        let _ = cp.kubectl(&["delete", kind, "capstan", "-n", ns, "--wait=false"]);
    }
}

/// The leader is stopped (SIGSTOP) in the middle of an apply, past its
/// Lease: the other takes over, reconciles the interrupted apply, resumes
/// it, and changes the app. When the old leader wakes (SIGCONT), its next write
/// is refused — by its own stopped lease or by the API server's
/// resourceVersion check — it steps down, and the App holds only the new
/// leader's writes.
#[test]
fn a_stopped_leader_wakes_to_find_its_writes_refused() {
    let Some(cp) = control_plane() else { return };
    let app = "ha-stop";
    let ns = state_ns("ha-stop");
    fresh(&cp, app, "ha-stop");
    let Some(registry) = Registry::start(&fresh_dir("ha-stop-registry"), &[]) else {
        return;
    };
    let mut a = replica(&cp, "ha-stop-a", "stop-a", "ha-stop", Some(&registry));
    assert_eq!(leader_of(&[&a], Duration::from_secs(30)), 0);
    // Every step of a's operations takes a second, so it is caught in one.
    a.kill();
    a.spawn(&[("CAPSTAN_TEST_STEP_DELAY_MS", "1000")]);
    assert_eq!(leader_of(&[&a], Duration::from_secs(30)), 0);
    let mut b = replica(&cp, "ha-stop-b", "stop-b", "ha-stop", Some(&registry));
    share_key(&a, &mut b);
    let bundle = a.shop_bundle("1.0.0", |dir: &Path| own_shop(dir, app));
    a.ok(&["app", "upload", bundle.to_str().unwrap()]);
    a.ok(&["app", "apply", app, "--no-wait"]);
    cp.eventually("a is applying", Duration::from_secs(20), || {
        app_row(&cp, "ha-stop", app).contains("applying")
    });
    a.signal("STOP");
    let stopped = Instant::now();
    assert_eq!(leader_of(&[&b], Duration::from_secs(6 + 4 + 5)), 0);
    eprintln!("taken over {:?} after the stop", stopped.elapsed());
    // b reconciled a's apply as interrupted, resumed it, and changes the
    // app.
    cp.eventually("b resumed a's apply", Duration::from_secs(60), || {
        b.state_of(app) == "applied"
    });
    b.ok(&["override", "set", app, "web", "--set", "replicaCount=2"]);
    let before = cp.object("apps.capstan.dev", Some(&ns), app).unwrap();
    a.signal("CONT");
    // a's apply thread wakes and tries to write its next step.
    cp.eventually("a steps down", Duration::from_secs(15), || {
        readyz(&a).0 == 503
    });
    std::thread::sleep(Duration::from_secs(3));
    let after = cp.object("apps.capstan.dev", Some(&ns), app).unwrap();
    assert_eq!(
        before["metadata"]["resourceVersion"],
        after["metadata"]["resourceVersion"],
        "the old leader wrote nothing after waking: {}",
        a.log()
    );
    let log = a.log();
    assert!(
        log.contains("no longer leading")
            && (log.contains("does not lead")
                || log.contains("changed by another writer")
                || log.contains("stopped writing")),
        "{log}"
    );
    // b applies what a left; a is a follower and takes nothing.
    b.ok(&["app", "apply", app]);
    assert_eq!(b.state_of(app), "applied");
    let history: Vec<serde_json::Value> =
        cp.object("apps.capstan.dev", Some(&ns), app).unwrap()["status"]["history"]
            .as_array()
            .unwrap()
            .clone();
    let applies: Vec<&serde_json::Value> = history
        .iter()
        .filter(|h| h["operation"] == "apply")
        .collect();
    assert_eq!(
        applies.len(),
        3,
        "a's interrupted apply, b's resumption of it and b's own: {history:#?}"
    );
    assert_eq!(applies[0]["outcome"], "interrupted");
    assert_eq!(applies[1]["outcome"], "succeeded");
    assert!(
        applies[1]["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("resumed apply #{}", applies[0]["id"])),
        "{history:#?}"
    );
    assert_eq!(applies[2]["outcome"], "succeeded");
    let out = a.cli(&["app", "apply", app]);
    assert!(!out.status.success(), "the old leader follows now");
    a.kill();
    b.kill();
}

/// The leader SIGKILLed at ten points inside an apply, one after the
/// other: each time the other replica takes the Lease within its duration
/// plus the renew deadline, reconciles the interrupted apply (history
/// says why) and resumes it: the app ends `applied` with its overrides,
/// history and inventories intact; the store and the release Secrets
/// agree.
#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the test-hooks feature; cargo xtask test enables it"
)]
fn a_leader_killed_at_ten_points_of_an_apply_loses_nothing() {
    let Some(cp) = control_plane() else { return };
    let app = "ha-kill";
    let ns = state_ns("ha-kill");
    fresh(&cp, app, "ha-kill");
    let Some(registry) = Registry::start(&fresh_dir("ha-kill-registry"), &[]) else {
        return;
    };
    let a = replica(&cp, "ha-kill-a", "kill-a", "ha-kill", Some(&registry));
    assert_eq!(leader_of(&[&a], Duration::from_secs(30)), 0);
    let mut b = replica(&cp, "ha-kill-b", "kill-b", "ha-kill", Some(&registry));
    share_key(&a, &mut b);
    let mut replicas = [a, b];
    let bundle = replicas[0].shop_bundle("1.0.0", |dir: &Path| own_shop(dir, app));
    replicas[0].ok(&["app", "upload", bundle.to_str().unwrap()]);
    replicas[0].ok(&["app", "apply", app]);
    replicas[0].ok(&["override", "set", app, "web", "--set", "replicaCount=2"]);
    let points = [
        "apply:begun",
        "apply:semantic-check",
        "apply:load-plugins",
        "apply:pre-apply",
        "apply:commit",
        "apply:apply:config",
        "apply:applied:db",
        "apply:apply:web",
        "apply:applied:worker",
        "apply:post-apply",
    ];
    let mut lead = 0;
    for (round, point) in points.iter().enumerate() {
        // The follower comes back set to pause at `point`, and is handed
        // the Lease by a drained leader.
        let follow = 1 - lead;
        replicas[follow].kill();
        replicas[follow].spawn(&[("CAPSTAN_TEST_PAUSE_AT", point)]);
        replicas[lead].signal("TERM");
        replicas[lead]
            .wait_exit(Duration::from_secs(30))
            .expect("drained");
        assert_eq!(leader_of(&[&replicas[follow]], Duration::from_secs(15)), 0);
        replicas[lead].spawn(&[]);
        lead = follow;
        let paused = replicas[lead].state().join("paused-at");
        let _ = std::fs::remove_file(&paused);
        // Some points come before the request is answered: the client
        // is not waited for.
        let mut client = crate::support::capstan()
            .args(["app", "apply", app, "--no-wait"])
            .env("CAPSTAN_STATE", replicas[lead].state())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        cp.eventually(
            &format!("paused at {point}"),
            Duration::from_secs(60),
            || paused.exists(),
        );
        let killed = Instant::now();
        replicas[lead].kill();
        let _ = client.kill();
        let _ = client.wait();
        let survivor = 1 - lead;
        assert_eq!(
            leader_of(&[&replicas[survivor]], Duration::from_secs(6 + 4 + 5)),
            0,
            "round {round}"
        );
        eprintln!("{point}: taken over in {:?}", killed.elapsed());
        let d = &replicas[survivor];
        cp.eventually(
            &format!("{point}: the apply resumed"),
            Duration::from_secs(60),
            || d.state_of(app) == "applied",
        );
        // Overrides and history intact; the interrupted apply said why,
        // the resumption names it.
        let object = cp.object("apps.capstan.dev", Some(&ns), app).unwrap();
        assert!(
            object["spec"]["overrides"]
                .to_string()
                .contains("replicaCount")
        );
        let history = object["status"]["history"].as_array().unwrap();
        let interrupted: Vec<&serde_json::Value> = history
            .iter()
            .filter(|h| h["outcome"] == "interrupted")
            .collect();
        assert_eq!(interrupted.len(), round + 1, "{point}: {history:#?}");
        let last = &history[history.len() - 1];
        let cut = interrupted[round];
        assert!(
            cut["message"]
                .as_str()
                .unwrap_or_default()
                .contains("restarted during apply"),
            "{point}: {cut:#}"
        );
        assert_eq!(last["operation"], "apply", "{point}: {last:#}");
        assert_eq!(last["outcome"], "succeeded", "{point}: {last:#}");
        assert!(
            last["message"]
                .as_str()
                .unwrap_or_default()
                .contains(&format!("resumed apply #{}", cut["id"])),
            "{point}: {last:#}"
        );
        // The store's inventories and the release Secrets agree.
        assert_eq!(
            crate::real_cluster::release_secrets(&cp, app),
            crate::real_cluster::stored_releases(d, app),
            "{point}"
        );
        lead = survivor;
    }
    let web = cp.object("deployment", Some(app), "web").expect("web");
    assert_eq!(web["spec"]["replicas"], 2);
}

/// SIGTERM in the middle of an apply: the daemon stops taking requests,
/// the apply stops at its next checkpoint (left running in the store),
/// the Lease is released and the daemon exits well within
/// `--shutdown-grace`; the other replica takes over at once, resumes the
/// apply and ends it applied.
#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the test-hooks feature; cargo xtask test enables it"
)]
fn sigterm_mid_apply_stops_at_a_checkpoint_and_the_other_resumes() {
    let Some(cp) = control_plane() else { return };
    let app = "ha-drain";
    let ns = state_ns("ha-drain");
    fresh(&cp, app, "ha-drain");
    let Some(registry) = Registry::start(&fresh_dir("ha-drain-registry"), &[]) else {
        return;
    };
    let mut a = replica(&cp, "ha-drain-a", "drain-a", "ha-drain", Some(&registry));
    assert_eq!(leader_of(&[&a], Duration::from_secs(30)), 0);
    a.kill();
    // Each step of a's takes a second: a whole apply takes well over ten.
    a.spawn(&[("CAPSTAN_TEST_STEP_DELAY_MS", "1000")]);
    assert_eq!(leader_of(&[&a], Duration::from_secs(30)), 0);
    let mut b = replica(&cp, "ha-drain-b", "drain-b", "ha-drain", Some(&registry));
    share_key(&a, &mut b);
    let bundle = a.shop_bundle("1.0.0", |dir: &Path| own_shop(dir, app));
    a.ok(&["app", "upload", bundle.to_str().unwrap()]);
    a.ok(&["app", "apply", app, "--no-wait"]);
    cp.eventually("a is applying", Duration::from_secs(20), || {
        app_row(&cp, "ha-drain", app).contains("applying")
    });
    let termed = Instant::now();
    a.signal("TERM");
    let status = a.wait_exit(Duration::from_secs(40)).expect("a exits");
    let took = termed.elapsed();
    assert!(status.success(), "{status:?}: {}", a.log());
    eprintln!("a stopped at a checkpoint and exited {took:?} after SIGTERM");
    let log = a.log();
    assert!(
        log.contains("stopping at this checkpoint") && log.contains("left the election"),
        "{log}"
    );
    // b resumes what a left running.
    cp.eventually("b resumed the apply", Duration::from_secs(60), || {
        b.state_of(app) == "applied"
    });
    let object = cp.object("apps.capstan.dev", Some(&ns), app).unwrap();
    let history = object["status"]["history"].as_array().unwrap();
    let applies: Vec<&serde_json::Value> = history
        .iter()
        .filter(|h| h["operation"] == "apply")
        .collect();
    assert_eq!(applies.len(), 2, "{history:#?}");
    assert_eq!(applies[0]["outcome"], "interrupted", "{history:#?}");
    assert_eq!(applies[1]["outcome"], "succeeded", "{history:#?}");
    assert!(
        applies[1]["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("resumed apply #{}", applies[0]["id"])),
        "{history:#?}"
    );
    assert!(
        b.log()
            .contains("resumed the operation the last leader left running"),
        "{}",
        b.log()
    );
    assert_eq!(
        crate::real_cluster::release_secrets(&cp, app),
        crate::real_cluster::stored_releases(&b, app),
    );
}
