//! Issue 45's failure policy on the real control plane: an app's own
//! pause (`app pause`) holds the daemon's drift correction of a hand edit
//! while it lasts, `app resume` lets it run, and both are in the history
//! with who asked and why.

use std::time::Duration;

use crate::control_plane::control_plane;
use crate::real_cluster::shop;

/// `drift: correct` with the app paused: a `kubectl patch` is shown as
/// drift but not taken back; an operator's own apply still runs; after
/// `app resume`, the next edit is taken back on its own.
#[test]
fn a_paused_app_keeps_a_hand_edit_until_it_is_resumed() {
    let Some(cp) = control_plane() else { return };
    let app = "hr-pause-drift";
    let d = shop(&cp, app, |dir| {
        let path = dir.join("capstan.yaml");
        let mut metadata = std::fs::read_to_string(&path).expect("reading capstan.yaml");
        metadata.push_str("drift: correct\ndrift_correction_interval: 1s\n");
        std::fs::write(&path, metadata).expect("writing capstan.yaml");
    });
    d.ok(&["app", "apply", app]);
    let currency = |cp: &crate::control_plane::ControlPlane| {
        cp.object("configmap", Some(app), "shop-config")
            .expect("the shop's ConfigMap")["data"]["currency"]
            .clone()
    };
    let original = currency(&cp);
    d.ok(&["app", "pause", app, "--reason", "by hand for a while"]);
    let shown = d.show(app);
    let paused = shown["automatic_paused"].as_str().unwrap_or_default();
    assert!(
        paused.starts_with("paused by ") && paused.contains(": by hand for a while"),
        "{shown}"
    );
    let patch = |value: &str| {
        cp.kubectl_ok(&[
            "patch",
            "configmap",
            "shop-config",
            "-n",
            app,
            "--type=merge",
            "-p",
            &format!(r#"{{"data":{{"currency":"{value}"}}}}"#),
        ]);
    };
    patch("XXX");
    cp.eventually("the edit shown as drift", Duration::from_secs(60), || {
        d.show(app).get("drifted").is_some()
    });
    // Several correction intervals: nothing is taken back.
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(currency(&cp), "XXX", "a paused app is not corrected");
    let history = d.ok(&["app", "history", app, "-o", "json"]);
    assert!(!history.contains("drift correction: "), "{history}");
    // The operator's own apply runs while paused.
    d.ok(&["app", "apply", app]);
    assert_eq!(currency(&cp), original);

    d.ok(&["app", "resume", app]);
    assert!(d.show(app).get("automatic_paused").is_none());
    patch("YYY");
    cp.eventually(
        "the edit taken back after resume",
        Duration::from_secs(60),
        || currency(&cp) == original,
    );
    let history = d.ok(&["app", "history", app, "-o", "json"]);
    for expected in [
        "\"pause\"",
        "by hand for a while",
        "\"resume\"",
        "drift correction: ",
    ] {
        assert!(history.contains(expected), "{expected} missing: {history}");
    }
    cp.eventually("the app applied again", Duration::from_secs(60), || {
        d.show(app)["state"] == "applied"
    });
    d.ok(&["app", "remove", app]);
    cp.delete_namespace(app);
}
