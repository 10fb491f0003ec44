//! A test hook (cargo feature `test-hooks` only): stop the daemon inside a
//! store write, so a crash test can kill it there, not only between steps.
//!
//! `CAPSTAN_TEST_PAUSE_AT` (the lifecycle's checkpoint list) may name
//! `store:PREFIX` entries. A write transaction whose context (the text its
//! errors start with, such as `starting apply of app "shop"` or `finishing
//! operation 7`) starts with `PREFIX`, once all its statements ran and
//! before it commits, writes the entry into `paused-at` beside the
//! database and sleeps until it is killed. The store's lock is held the
//! whole time, as it would be at a crash in the middle of the commit.

use std::path::Path;
use std::time::Duration;

/// The entries of the checkpoint list that name store writes.
pub(super) fn from_env() -> Vec<String> {
    std::env::var("CAPSTAN_TEST_PAUSE_AT")
        .unwrap_or_default()
        .split(',')
        .filter_map(|entry| entry.trim().strip_prefix("store:"))
        .filter(|prefix| !prefix.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Pauses for ever if `context` starts with one of `prefixes`.
pub(super) fn inside_write(database: &Path, prefixes: &[String], context: &str) {
    let Some(prefix) = prefixes.iter().find(|p| context.starts_with(p.as_str())) else {
        return;
    };
    let point = format!("store:{prefix}");
    if let Some(dir) = database.parent() {
        let _ = std::fs::write(dir.join("paused-at"), &point);
    }
    tracing::warn!(point = %point, context = %context, "paused inside a store write; waiting to be killed");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
