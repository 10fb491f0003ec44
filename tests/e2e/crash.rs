//! SIGKILL at named points of every operation (upload, apply, recover,
//! remove, update, rollback, delete) and inside store writes (issue 13).
//!
//! After each kill the daemon is started again and the test asserts the
//! exact outcome: the app's state, its last history entry (`interrupted`
//! for the operation that was killed, or no new entry when the kill landed
//! inside the write that would have started it), its active version, the
//! bundle folders against the store, and the whole target folder, byte for
//! byte, against what a clean, uncrashed run of the same operations wrote.
//! Then the operation that repairs the app must work and leave the target
//! exactly as a clean run does.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::daemon::{APPLY_POINTS, Daemon, drop_worker};
use crate::support::capstan;

/// Every file under `dir` (none when it is missing), by relative path.
type Tree = BTreeMap<String, Vec<u8>>;

fn tree(dir: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = Tree::new();
    walk(dir, dir, &mut out);
    out
}

fn names(tree: &Tree) -> Vec<&str> {
    tree.keys().map(String::as_str).collect()
}

/// Starts the daemon paused at `point`, runs `capstan ARGS`, waits for the
/// pause, SIGKILLs both, and starts the daemon again without pauses.
fn crash_at(d: &mut Daemon, point: &str, args: &[&str]) {
    d.kill();
    d.spawn(&[("CAPSTAN_TEST_PAUSE_AT", point)]);
    let mut client = capstan()
        .args(args)
        .env("CAPSTAN_STATE", d.state())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let marker = d.state().join("paused-at");
    let started = Instant::now();
    while std::fs::read_to_string(&marker).ok().as_deref() != Some(point) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never reached {point}: {}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    d.kill();
    let _ = client.kill();
    let _ = client.wait();
    d.spawn(&[]);
}

/// What the app must look like after a restart.
struct After<'a> {
    state: &'a str,
    /// The operation and outcome of the newest history entry.
    last: (&'a str, &'a str),
    active: &'a str,
    /// The whole target folder, or `None` where a kill in the middle of
    /// writing charts leaves some written (the repair is checked instead).
    target: Option<&'a Tree>,
}

fn history(d: &Daemon) -> Vec<serde_json::Value> {
    let shown: serde_json::Value =
        serde_json::from_str(&d.ok(&["app", "history", "shop", "-o", "json"])).unwrap();
    let mut entries = shown["operations"].as_array().unwrap().clone();
    entries.sort_by_key(|e| e["id"].as_u64().unwrap());
    entries
}

/// The bundle folders of shop, sorted.
fn bundle_folders(d: &Daemon) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(d.state().join("bundles/shop"))
        .map(|dir| {
            dir.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

fn check(d: &Daemon, point: &str, after: &After<'_>) {
    let shown = d.show("shop");
    assert_eq!(shown["state"], after.state, "state after a kill at {point}");
    assert_eq!(
        shown["active_version"], after.active,
        "active version after a kill at {point}"
    );
    let entries = history(d);
    let last = entries.last().unwrap();
    assert_eq!(
        (last["operation"].as_str(), last["outcome"].as_str()),
        (Some(after.last.0), Some(after.last.1)),
        "last history entry after a kill at {point}: {last}"
    );
    assert!(
        entries.iter().all(|e| e["outcome"] != "running"),
        "a running entry after a kill at {point}"
    );
    let mut stored: Vec<String> = shown["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap().to_owned())
        .collect();
    stored.sort();
    let on_disk = bundle_folders(d);
    if after.state == "upload-failed" {
        // The folder may not have been moved into place yet.
        assert!(
            on_disk.iter().all(|v| stored.contains(v)),
            "bundle folders {on_disk:?} vs versions {stored:?} after {point}"
        );
    } else {
        assert_eq!(on_disk, stored, "bundle folders after a kill at {point}");
    }
    if let Some(target) = after.target {
        assert_target(d, target, &format!("after a kill at {point}"));
    }
    // The state folder holds nothing left over: no staging, no marker.
    let staging = d.state().join("bundles/.staging");
    let left: Vec<_> = std::fs::read_dir(&staging)
        .map(|dir| dir.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "staging holds {left:?} after {point}");
}

fn assert_target(d: &Daemon, want: &Tree, when: &str) {
    let got = tree(&d.applied());
    assert_eq!(
        names(&got),
        names(want),
        "target files {when}:\n{}",
        d.log()
    );
    for (name, bytes) in want {
        assert!(
            got.get(name) == Some(bytes),
            "target file {name} differs {when}:\n{}",
            String::from_utf8_lossy(&got[name])
        );
    }
}

fn absent(d: &Daemon, point: &str, target: &Tree) {
    let (status, body) = d.http("GET", "/v1/apps/shop", "application/json", b"");
    assert_eq!(status, 404, "shop after a kill at {point}: {body}");
    assert!(
        !d.state().join("bundles/shop").exists(),
        "bundle files of a deleted app after {point}: {:?}",
        bundle_folders(d)
    );
    assert_target(d, target, &format!("after a kill at {point}"));
}

const UPDATE_POINTS: &[&str] = &[
    "update:begun",
    "update:staged",
    "update:load-plugins",
    "update:system-overrides",
    "update:pre-update",
    "update:applied:web",
    "update:prune:worker",
    "update:post-update",
    "update:finishing",
    "update:dropping-version",
];
/// Update points before anything is written to the target.
const UPDATE_UNTOUCHED: usize = 5;

const ROLLBACK_POINTS: &[&str] = &[
    "rollback:begun",
    "rollback-to:load-plugins",
    "rollback-to:pre-update",
    "rollback-to:group:base",
    "rollback-to:applied:worker",
    "rollback-to:post-update",
    "rollback:finishing",
];
const ROLLBACK_UNTOUCHED: usize = 3;

const RECOVER_POINTS: &[&str] = &[
    "recover:begun",
    "recover:load-plugins",
    "recover:render:web",
    "recover:applied:db",
    "recover:post-apply",
    "recover:finishing",
];

const REMOVE_POINTS: &[&str] = &[
    "remove:begun",
    "remove:load-plugins",
    "remove:pre-remove",
    "remove:remove:worker",
    "remove:remove:config",
    "remove:post-remove",
    "remove:finishing",
];
/// Remove points before the first chart is removed, and from the one
/// after the last.
const REMOVE_UNTOUCHED: usize = 4;
const REMOVE_DONE: usize = 5;

#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the daemon's test hooks: run with --features capstan/test-hooks (cargo xtask test does)"
)]
fn a_kill_at_any_step_of_any_operation_leaves_the_exact_state_and_a_clean_target() {
    let mut d = Daemon::start("crash_every_operation");
    let v1 = d.shop_bundle("1.0.0", |_| {});
    let v11 = d.shop_bundle("1.1.0", drop_worker);
    let v1 = v1.to_str().unwrap().to_owned();
    let v11 = v11.to_str().unwrap().to_owned();
    let upload_and_apply = |d: &Daemon| {
        d.ok(&["app", "upload", &v1]);
        d.ok(&["override", "set", "shop", "web", "--set", "replicaCount=3"]);
        d.ok(&["app", "apply", "shop"]);
    };

    // What clean runs write: 1.0.0 applied, 1.1.0 applied, nothing.
    upload_and_apply(&d);
    let clean_v1 = tree(&d.applied());
    assert!(
        String::from_utf8_lossy(&clean_v1["shop/web.yaml"]).contains("replicas: 3"),
        "{:?}",
        names(&clean_v1)
    );
    d.ok(&["app", "update", &v11]);
    let clean_v11 = tree(&d.applied());
    assert_ne!(clean_v11, clean_v1);
    d.ok(&["app", "rollback", "shop"]);
    assert_target(&d, &clean_v1, "after a clean rollback");
    d.ok(&["app", "remove", "shop"]);
    let removed = tree(&d.applied());
    assert!(
        removed.keys().all(|k| !k.starts_with("shop/")),
        "{:?}",
        names(&removed)
    );
    d.ok(&["app", "delete", "shop"]);

    // Upload: killed after it was recorded, after the files moved, and
    // inside the write that records it.
    for point in ["upload:begun", "upload:moved"] {
        crash_at(&mut d, point, &["app", "upload", &v1]);
        check(
            &d,
            point,
            &After {
                state: "upload-failed",
                last: ("upload", "interrupted"),
                active: "1.0.0",
                target: Some(&removed),
            },
        );
        d.ok(&["app", "delete", "shop"]);
        absent(&d, point, &removed);
    }
    crash_at(&mut d, "store:storing upload", &["app", "upload", &v1]);
    absent(&d, "store:storing upload", &removed);

    upload_and_apply(&d);
    assert_target(&d, &clean_v1, "after upload and apply");

    // Apply (again, on the applied app): between steps, then inside the
    // write that finishes it and the one that starts it.
    for point in APPLY_POINTS
        .iter()
        .copied()
        .chain(["store:finishing operation"])
    {
        crash_at(&mut d, point, &["app", "apply", "shop", "--no-wait"]);
        let after = After {
            state: "apply-failed",
            last: ("apply", "interrupted"),
            active: "1.0.0",
            target: Some(&clean_v1),
        };
        check(&d, point, &after);
        d.ok(&["app", "recover", "shop"]);
        assert_target(&d, &clean_v1, &format!("after recovering from {point}"));
    }
    let before = history(&d).len();
    crash_at(
        &mut d,
        "store:starting apply",
        &["app", "apply", "shop", "--no-wait"],
    );
    check(
        &d,
        "store:starting apply",
        &After {
            state: "applied",
            last: ("recover", "succeeded"),
            active: "1.0.0",
            target: Some(&clean_v1),
        },
    );
    assert_eq!(history(&d).len(), before, "the killed start left an entry");

    // Recover, killed at each step: it stays apply-failed until one ends.
    crash_at(
        &mut d,
        "apply:load-plugins",
        &["app", "apply", "shop", "--no-wait"],
    );
    for point in RECOVER_POINTS {
        crash_at(&mut d, point, &["app", "recover", "shop", "--no-wait"]);
        let after = After {
            state: "apply-failed",
            last: ("recover", "interrupted"),
            active: "1.0.0",
            target: Some(&clean_v1),
        };
        check(&d, point, &after);
    }
    d.ok(&["app", "recover", "shop"]);
    assert_target(&d, &clean_v1, "after recovering from the recover kills");

    // Remove, killed at each step; removing again finishes the job.
    for (i, point) in REMOVE_POINTS.iter().enumerate() {
        crash_at(&mut d, point, &["app", "remove", "shop", "--no-wait"]);
        let target = if i < REMOVE_UNTOUCHED {
            Some(&clean_v1)
        } else if i >= REMOVE_DONE {
            Some(&removed)
        } else {
            None
        };
        let after = After {
            state: "remove-failed",
            last: ("remove", "interrupted"),
            active: "1.0.0",
            target,
        };
        check(&d, point, &after);
        d.ok(&["app", "remove", "shop"]);
        assert_eq!(d.state_of("shop"), "uploaded");
        assert_target(&d, &removed, &format!("after removing again from {point}"));
        d.ok(&["app", "apply", "shop"]);
        assert_target(&d, &clean_v1, &format!("after applying again from {point}"));
    }

    // Update 1.0.0 -> 1.1.0, killed at each step; recover goes back to
    // 1.0.0, except once the update was recorded.
    for (i, point) in UPDATE_POINTS.iter().enumerate() {
        crash_at(&mut d, point, &["app", "update", &v11, "--no-wait"]);
        if *point == "update:dropping-version" {
            check(
                &d,
                point,
                &After {
                    state: "applied",
                    last: ("update", "succeeded"),
                    active: "1.1.0",
                    target: Some(&clean_v11),
                },
            );
            d.ok(&["app", "rollback", "shop"]);
        } else {
            let after = After {
                state: "apply-failed",
                last: ("update", "interrupted"),
                active: "1.0.0",
                target: (i < UPDATE_UNTOUCHED).then_some(&clean_v1),
            };
            check(&d, point, &after);
            d.ok(&["app", "recover", "shop"]);
        }
        assert_eq!(d.state_of("shop"), "applied", "after {point}");
        assert_eq!(d.show("shop")["active_version"], "1.0.0", "after {point}");
        assert_target(&d, &clean_v1, &format!("after repairing {point}"));
    }

    // Rollback 1.1.0 -> 1.0.0, killed at each step; recover applies 1.1.0.
    d.ok(&["app", "update", &v11]);
    assert_target(&d, &clean_v11, "after a clean update");
    for (i, point) in ROLLBACK_POINTS.iter().enumerate() {
        crash_at(&mut d, point, &["app", "rollback", "shop", "--no-wait"]);
        let after = After {
            state: "apply-failed",
            last: ("rollback", "interrupted"),
            active: "1.1.0",
            target: (i < ROLLBACK_UNTOUCHED).then_some(&clean_v11),
        };
        check(&d, point, &after);
        d.ok(&["app", "recover", "shop"]);
        assert_eq!(d.show("shop")["active_version"], "1.1.0", "after {point}");
        assert_target(&d, &clean_v11, &format!("after recovering from {point}"));
    }
    d.ok(&["app", "rollback", "shop"]);
    assert_target(&d, &clean_v1, "after a clean rollback");

    // Delete, killed after the rows went and before the files did: the
    // next start removes the files.
    d.ok(&["app", "remove", "shop"]);
    crash_at(&mut d, "delete:rows-deleted", &["app", "delete", "shop"]);
    absent(&d, "delete:rows-deleted", &removed);
    upload_and_apply(&d);
    assert_target(&d, &clean_v1, "after a fresh upload and apply");
}
