//! Issue 45's failure policy through the real binary: `app pause` and
//! `app resume` as an operator types them (what `app show` and `app
//! history` say, a refused reason), and on the real control plane an
//! app's pause holding the daemon's drift correction of a hand edit while
//! it lasts.

use std::time::Duration;

use crate::control_plane::control_plane;
use crate::daemon::{Daemon, text};
use crate::real_cluster::shop;

/// `app pause --reason`, `app show`, `app history`, `app resume`; a
/// reason past its bound exits 1 with one line and changes nothing.
#[test]
fn pause_and_resume_from_the_cli_are_shown_and_kept_in_the_history() {
    let d = Daemon::start("failure_policy_cli");
    let v1 = d.shop_bundle("1.0.0", |_| {});
    d.ok(&["app", "upload", v1.to_str().unwrap_or_default()]);
    d.ok(&["app", "pause", "shop", "--reason", "storage work"]);
    let shown = d.ok(&["app", "show", "shop"]);
    let automatic = shown
        .lines()
        .find(|l| l.starts_with("automatic:"))
        .unwrap_or_default();
    assert!(
        automatic.contains("paused: paused by uid=") && automatic.contains(": storage work"),
        "{shown}"
    );
    let long = "x".repeat(300);
    let out = d.cli(&["app", "pause", "shop", "--reason", &long]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("pause reason refused: longer than 256 characters"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    d.ok(&["app", "resume", "shop"]);
    let shown = d.ok(&["app", "show", "shop"]);
    assert!(shown.contains("automatic:      on"), "{shown}");
    let history = d.ok(&["app", "history", "shop", "-o", "json"]);
    for expected in ["\"pause\"", "storage work", "\"resume\"", "resumed by uid="] {
        assert!(history.contains(expected), "{expected} missing: {history}");
    }
}

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
