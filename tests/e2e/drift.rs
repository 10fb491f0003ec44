//! Day two on the real control plane: people and controllers touch an
//! app's objects (`kubectl patch`, `scale`, `label`, `delete`, another
//! manager's server-side apply, an autoscaler's writes through the
//! `scale` subresource) and capstan sees, shows and takes back what it
//! declared, or leaves alone what its field policy gives away.

use std::path::Path;

use crate::control_plane::{ControlPlane, control_plane};
use crate::daemon::text;
use crate::real_cluster::shop;

/// Appends `text` to the app's `capstan.yaml`.
fn append_metadata(app: &Path, text: &str) {
    let path = app.join("capstan.yaml");
    let mut metadata = std::fs::read_to_string(&path).expect("reading capstan.yaml");
    metadata.push_str(text);
    std::fs::write(&path, metadata).expect("writing capstan.yaml");
}

fn replicas(cp: &ControlPlane, app: &str, name: &str) -> i64 {
    let web = cp
        .object("deployment", Some(app), name)
        .expect("deployment");
    web["spec"]["replicas"].as_i64().expect("replicas")
}

/// kubectl patch, scale, label and delete of an app's objects: `app
/// diff` works and names every field with the manager that changed it;
/// the default policy (`conflicts: force`) takes them all back; the
/// deleted object is created again; afterwards nothing differs.
#[test]
fn hand_edits_are_shown_by_diff_and_taken_back_by_default() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-drift-edits";
    let d = shop(&cp, app, |_| {});
    d.ok(&["app", "apply", app]);
    let declared = replicas(&cp, app, "web");
    // Fewer than declared: the Pods' anti-affinity allows no more.
    let scaled = (declared - 1).to_string();
    assert!(declared > 1, "the shop's web tier runs {declared} replicas");
    for args in [
        vec![
            "patch",
            "configmap",
            "shop-config",
            "--type=merge",
            "-p",
            r#"{"data":{"currency":"XXX"}}"#,
        ],
        vec!["scale", "deployment", "web", "--replicas", &scaled],
        vec![
            "label",
            "--overwrite",
            "configmap",
            "shop-config",
            "app.kubernetes.io/name=by-hand",
        ],
        vec!["delete", "service", "api"],
    ] {
        let mut args = args;
        args.extend(["-n", app]);
        cp.kubectl_ok(&args);
    }

    let diff = d.ok(&["app", "diff", app]);
    for expected in [
        "# drifted: .data.currency changed by \"kubectl-patch\" (Update at ",
        "# drifted: .spec.replicas changed by \"kubectl\" (Update through scale",
        "# drifted: .metadata.labels.app.kubernetes.io/name changed by \"kubectl-label\" (Update",
        "--- Service",
    ] {
        assert!(diff.contains(expected), "{expected:?} missing in:\n{diff}");
    }
    let json = d.ok(&["app", "diff", app, "-o", "json"]);
    let charts: serde_json::Value = serde_json::from_str(&json).expect("diff JSON");
    let drifted: Vec<&str> = charts
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["drift"].as_array().into_iter().flatten())
        .flat_map(|o| o["fields"].as_array().into_iter().flatten())
        .filter_map(|f| f["manager"].as_str())
        .collect();
    assert!(
        drifted.contains(&"kubectl-patch") && drifted.contains(&"kubectl"),
        "{json}"
    );

    d.ok(&["app", "apply", app]);
    let config = cp
        .object("configmap", Some(app), "shop-config")
        .expect("cm");
    assert_ne!(config["data"]["currency"], "XXX");
    assert_eq!(
        config["metadata"]["labels"]["app.kubernetes.io/name"],
        "config"
    );
    assert_eq!(replicas(&cp, app, "web"), declared);
    assert!(cp.object("service", Some(app), "api").is_some());
    assert_eq!(d.show(app)["state"], "applied");
    let out = d.cli(&["app", "diff", app, "--detailed-exitcode"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    d.ok(&["app", "remove", app]);
    cp.delete_namespace(app);
}

/// Another manager's server-side apply of a field capstan owns, under
/// `conflicts: fail`: the real server's 409 names the field and the
/// manager and nothing is written; `app diff` shows it;
/// `--force-conflicts` takes it for one apply.
#[test]
fn conflicts_fail_names_the_manager_and_force_conflicts_takes_the_field() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-conflict";
    let d = shop(&cp, app, |dir| append_metadata(dir, "conflicts: fail\n"));
    d.ok(&["app", "apply", app]);
    let out = cp.kubectl_stdin(
        &["apply", "--server-side", "--field-manager=ops-team", "--force-conflicts", "-f", "-"],
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {app}\nspec:\n  replicas: 5\n"
        ),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    d.ok(&["override", "set", app, "web", "--set", "replicaCount=4"]);
    let out = d.cli(&["app", "apply", app]);
    assert!(!out.status.success());
    let shown = d.show(app);
    let message = shown["message"].as_str().unwrap_or_default().to_owned();
    assert_eq!(shown["state"], "apply-failed", "{message}");
    assert!(
        message.contains("spec.replicas")
            && message.contains("ops-team")
            && message.contains("--force-conflicts"),
        "{message}"
    );
    assert_eq!(replicas(&cp, app, "web"), 5, "not forced");
    let diff = d.ok(&["app", "diff", app]);
    assert!(
        diff.contains("# drifted: .spec.replicas changed by \"ops-team\" (Apply at "),
        "{diff}"
    );
    d.ok(&["app", "apply", app, "--force-conflicts"]);
    assert_eq!(replicas(&cp, app, "web"), 4);
    assert_eq!(d.show(app)["state"], "applied");
    d.ok(&["app", "remove", app]);
    cp.delete_namespace(app);
}

/// A chart that carries an HPA for its own Deployment leaves the
/// Deployment's `spec.replicas` to the autoscaler without being told: the
/// autoscaler's write (through the `scale` subresource, under its
/// controller's manager name, as a test client since the control plane
/// has no metrics) is never a conflict, never undone, never drift, even
/// under `conflicts: fail`. An explicit `ignore` rule does the same for a
/// ConfigMap key another tool writes.
#[test]
fn an_autoscaler_and_ignored_fields_are_never_fought() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-drift-hpa";
    let d = shop(&cp, app, |dir| {
        append_metadata(
            dir,
            "conflicts: fail\nignore:\n  - kind: ConfigMap\n    name: shop-*\n    paths: [/data/locale]\n",
        );
        std::fs::write(
            dir.join("charts/web/templates/hpa.yaml"),
            "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\n\
             spec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n\
             \x20 minReplicas: 1\n  maxReplicas: 9\n\
             \x20 metrics:\n  - type: Resource\n    resource:\n      name: cpu\n\
             \x20     target: {type: Utilization, averageUtilization: 80}\n",
        )
        .expect("writing the HPA");
    });
    d.ok(&["app", "apply", app]);
    // Fewer than declared: the Pods' anti-affinity allows no more.
    let declared = replicas(&cp, app, "web");
    assert!(declared > 1, "the shop's web tier runs {declared} replicas");
    let scaled = declared - 1;
    let patch = format!(r#"{{"spec":{{"replicas":{scaled}}}}}"#);
    cp.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "-n",
        app,
        "--subresource=scale",
        "--type=merge",
        "-p",
        &patch,
        "--field-manager=horizontal-pod-autoscaler",
    ]);
    cp.kubectl_ok(&[
        "patch",
        "configmap",
        "shop-config",
        "-n",
        app,
        "--type=merge",
        "-p",
        r#"{"data":{"locale":"by-tool"}}"#,
        "--field-manager=locale-tool",
    ]);
    let diff = d.ok(&["app", "diff", app]);
    assert!(!diff.contains("drifted"), "{diff}");
    // A change of the chart's own still applies beside them.
    d.ok(&["override", "set", app, "web", "--set", "env.MODE=fast"]);
    d.ok(&["app", "apply", app]);
    assert_eq!(
        replicas(&cp, app, "web"),
        scaled,
        "the autoscaler's value stays"
    );
    let config = cp
        .object("configmap", Some(app), "shop-config")
        .expect("cm");
    assert_eq!(config["data"]["locale"], "by-tool");
    let web = cp.object("deployment", Some(app), "web").expect("web");
    let managers: Vec<&str> = web["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["fieldsV1"]["f:spec"].get("f:replicas").is_some())
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(managers, ["horizontal-pod-autoscaler"], "{web}");
    let env = web["spec"]["template"]["spec"]["containers"][0]["env"].to_string();
    assert!(env.contains("fast"), "{env}");
    d.ok(&["app", "remove", app]);
    cp.delete_namespace(app);
}

/// Waits until `app show` has the `drifted` condition satisfying
/// `check`, at most 30 s; how long it took.
fn drifted_within(
    d: &crate::daemon::Daemon,
    app: &str,
    check: impl Fn(&serde_json::Value) -> bool,
) -> std::time::Duration {
    let started = std::time::Instant::now();
    loop {
        let shown = d.show(app);
        if check(&shown["drifted"]) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "no drift seen in 30 s: {shown}\n{}",
            d.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn names(drifted: &serde_json::Value, manager: &str) -> bool {
    drifted["message"]
        .as_str()
        .is_some_and(|m| m.contains(&format!("changed by \"{manager}\"")))
}

/// The daemon's watches see a hand edit within seconds, without `app
/// diff`: the `drifted` condition in `app show` names the object, field
/// and manager; a `Drifted` Event lands on the chart's release; a deleted
/// object is drift too; an apply clears it; and after a daemon restart
/// the release is watched again. One watch per kind and namespace.
#[test]
fn the_watches_see_an_edit_within_seconds_and_across_a_restart() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-drift-watch";
    let mut d = shop(&cp, app, |_| {});
    d.ok(&["app", "apply", app]);
    assert!(d.show(app).get("drifted").is_none());
    cp.kubectl_ok(&[
        "patch",
        "configmap",
        "shop-config",
        "-n",
        app,
        "--type=merge",
        "-p",
        r#"{"data":{"currency":"XXX"}}"#,
    ]);
    let took = drifted_within(&d, app, |c| names(c, "kubectl-patch"));
    eprintln!("drift seen {} ms after the edit", took.as_millis());
    let shown = d.show(app);
    let objects = shown["drifted"]["objects"].to_string();
    assert!(
        objects.contains("ConfigMap") && objects.contains(".data.currency"),
        "{objects}"
    );
    cp.eventually(
        "a Drifted Event",
        std::time::Duration::from_secs(10),
        || {
            cp.kubectl_ok(&[
                "get",
                "events",
                "-n",
                app,
                "--field-selector",
                "reason=Drifted",
            ])
            .contains("Drifted")
        },
    );
    cp.kubectl_ok(&["delete", "service", "api", "-n", app]);
    drifted_within(&d, app, |c| {
        c["objects"]
            .as_array()
            .is_some_and(|o| o.iter().any(|o| o["deleted"] == true))
    });
    d.ok(&["app", "apply", app]);
    drifted_within(&d, app, serde_json::Value::is_null);

    d.kill();
    d.spawn(&[]);
    // Give the new daemon a moment to follow what it finds applied.
    std::thread::sleep(std::time::Duration::from_secs(3));
    cp.kubectl_ok(&["scale", "deployment", "web", "-n", app, "--replicas", "1"]);
    drifted_within(&d, app, |c| names(c, "kubectl"));
    d.ok(&["app", "remove", app]);
    cp.delete_namespace(app);
}

/// `drift: correct`: a hand edit is taken back on its own, as an apply
/// in the history noted as a drift correction.
#[test]
fn drift_correct_takes_an_edit_back_on_its_own() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-drift-correct";
    let d = shop(&cp, app, |dir| {
        append_metadata(dir, "drift: correct\ndrift_correction_interval: 1s\n");
    });
    d.ok(&["app", "apply", app]);
    let original = cp
        .object("configmap", Some(app), "shop-config")
        .expect("cm")["data"]["currency"]
        .clone();
    cp.kubectl_ok(&[
        "patch",
        "configmap",
        "shop-config",
        "-n",
        app,
        "--type=merge",
        "-p",
        r#"{"data":{"currency":"XXX"}}"#,
    ]);
    cp.eventually(
        "the edit taken back",
        std::time::Duration::from_secs(60),
        || {
            cp.object("configmap", Some(app), "shop-config")
                .is_some_and(|c| c["data"]["currency"] == original)
        },
    );
    // The correction's note is written when it finishes.
    cp.eventually(
        "the correction in the history",
        std::time::Duration::from_secs(60),
        || {
            d.ok(&["app", "history", app, "-o", "json"])
                .contains("drift correction: ConfigMap")
        },
    );
    cp.eventually(
        "the app applied again",
        std::time::Duration::from_secs(60),
        || d.show(app)["state"] == "applied" && d.show(app).get("drifted").is_none(),
    );
    d.ok(&["app", "remove", app]);
    cp.delete_namespace(app);
}
