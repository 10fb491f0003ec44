//! Issue 13 through the real binary: private state in every mode, the
//! token file's rules, damaged stored bundles as state errors, and
//! concurrent operations on one app.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::daemon::{Daemon, text};
use crate::support::{capstan, fresh_dir};

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// Every folder under `root` (itself included) is 0700 and every other
/// entry 0600; returns how many entries were checked.
fn assert_private(root: &Path) -> usize {
    assert_eq!(mode(root), 0o700, "{}", root.display());
    let mut seen = 1;
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            seen += assert_private(&path);
        } else {
            assert_eq!(mode(&path), 0o600, "{}", path.display());
            seen += 1;
        }
    }
    seen
}

#[test]
fn the_state_folder_and_everything_in_it_are_private_whatever_made_them() {
    let name = "harden_private_state";
    let state = fresh_dir(name).join("state");
    // The directory target inside the state folder: serve used to create
    // it (and so the state folder) with the umask's 0755.
    let target = format!("dir:{}", state.join("applied").display());
    let mut d = Daemon::start_with_target(name, vec!["--target".into(), target]);
    let v1 = d.shop_bundle("1.0.0", |_| {});
    d.ok(&["app", "upload", v1.to_str().unwrap()]);
    d.ok(&["app", "apply", "shop"]);
    d.ok(&["override", "set", "shop", "web", "--set", "a=1"]);
    assert_eq!(d.state_of("shop"), "applied");
    for file in [
        "state.db",
        "state.db-wal",
        "secret",
        "daemon.lock",
        "capstan.sock",
    ] {
        assert!(state.join(file).exists(), "{file}");
    }
    assert!(assert_private(&state) > 20);

    // A folder a careless operator (or an older daemon) left open is
    // closed at the next start.
    d.kill();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    for file in ["state.db", "state.db-wal", "secret"] {
        std::fs::set_permissions(state.join(file), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    d.spawn(&[]);
    assert_eq!(d.state_of("shop"), "applied");
    assert_private(&state);
}

/// Starts `capstan serve` on TCP with `token` in a file of `mode`;
/// returns its stderr once it exited (it must).
fn serve_with_token(dir: &Path, token: &str, file_mode: u32) -> String {
    let file = dir.join("token");
    std::fs::write(&file, token).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(file_mode)).unwrap();
    let out = capstan()
        .args(["serve", "--listen", "tcp:127.0.0.1:0", "--token-file"])
        .arg(&file)
        .arg("--state")
        .arg(dir.join("state"))
        .arg("--trust")
        .arg(dir.join("keys"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    text(&out.stderr)
}

#[test]
fn a_token_file_open_to_others_or_a_short_token_is_refused_at_start() {
    let dir = fresh_dir("harden_token_rules");
    std::fs::create_dir_all(dir.join("keys")).unwrap();
    let keygen = capstan()
        .args(["keygen", "--name", "t", "--out"])
        .arg(dir.join("keys"))
        .output()
        .unwrap();
    assert!(keygen.status.success());
    let long = "a-token-of-thirty-two-characters\n";
    for open in [0o644, 0o640, 0o604] {
        let err = serve_with_token(&dir, long, open);
        assert!(err.contains("open to group or others"), "{open:o}: {err}");
        assert!(err.contains("0600"), "{err}");
    }
    let err = serve_with_token(&dir, "fifteen-chars-x\n", 0o600);
    assert!(err.contains("shorter than 16 characters"), "{err}");
    let err = serve_with_token(&dir, "\n", 0o600);
    assert!(err.contains("shorter than 16 characters"), "{err}");
}

#[test]
fn a_damaged_stored_bundle_is_a_409_naming_the_file_and_the_state_and_the_target_is_untouched() {
    let d = Daemon::start("harden_damaged_bundle");
    let v1 = d.shop_bundle("1.0.0", |_| {});
    d.ok(&["app", "upload", v1.to_str().unwrap()]);
    d.ok(&["app", "apply", "shop"]);
    let web = d.applied().join("shop/web.yaml");
    let before = std::fs::read(&web).unwrap();
    let template = d
        .state()
        .join("bundles/shop/1.0.0/charts/web/templates/deployment.yaml");
    std::fs::write(&template, b"").unwrap();

    let out = d.cli(&["app", "apply", "shop"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("charts/web/templates/deployment.yaml"),
        "{err}"
    );
    assert!(err.contains("apply-failed"), "{err}");
    assert_eq!(d.state_of("shop"), "apply-failed");
    let (status, body) = d.http("POST", "/v1/apps/shop/apply", "application/json", b"{}");
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("deployment.yaml"), "{body}");
    let (status, body) = d.http("GET", "/v1/apps/shop/diff", "application/json", b"");
    assert_eq!(status, 409, "{body}");
    let history: serde_json::Value =
        serde_json::from_str(&d.ok(&["app", "history", "shop", "-o", "json"])).unwrap();
    let entries = history["operations"].as_array().unwrap();
    assert!(
        entries.iter().all(|h| h["outcome"] != "running"),
        "{history}"
    );
    assert_eq!(
        std::fs::read(&web).unwrap(),
        before,
        "the target is untouched"
    );
    // No request was answered with a server error (the access log's
    // `status=`; a bare "500" also matches a timestamp's microseconds).
    assert!(
        d.log().lines().all(|l| !l.contains("status=5")),
        "{}",
        d.log()
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the daemon's test hooks: run with --features capstan/test-hooks (cargo xtask test does)"
)]
fn two_applies_at_once_on_one_app_one_runs_the_other_gets_409() {
    let mut d = Daemon::start("harden_concurrent_apply");
    d.kill();
    d.spawn(&[("CAPSTAN_TEST_STEP_DELAY_MS", "50")]);
    let v1 = d.shop_bundle("1.0.0", |_| {});
    d.ok(&["app", "upload", v1.to_str().unwrap()]);
    let barrier = std::sync::Barrier::new(2);
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    d.http("POST", "/v1/apps/shop/apply", "application/json", b"{}")
                        .0
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let refused = statuses.iter().filter(|s| **s == 409).count();
    let accepted = statuses.iter().filter(|s| (200..300).contains(*s)).count();
    assert_eq!((accepted, refused), (1, 1), "{statuses:?}");
    let started = Instant::now();
    while d.state_of("shop") == "applying" {
        assert!(started.elapsed() < Duration::from_secs(120));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(d.state_of("shop"), "applied");
    let history: serde_json::Value =
        serde_json::from_str(&d.ok(&["app", "history", "shop", "-o", "json"])).unwrap();
    let applies = history["operations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["operation"] == "apply")
        .count();
    assert_eq!(applies, 1, "{history}");
}
