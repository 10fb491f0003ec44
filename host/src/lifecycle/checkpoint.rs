//! Named points inside operations where a test can stop the daemon.
//!
//! With `CAPSTAN_TEST_PAUSE_AT=apply:chart-applied:web` (a comma-separated
//! list of point names) the daemon, on reaching a listed point, writes the
//! file `STATE/paused-at` holding the point's name and sleeps until it is
//! killed. Crash tests wait for that file and send SIGKILL, so the crash
//! lands exactly at the named step. Without the variable every point costs
//! one empty-slice check.
//!
//! An entry `store:PREFIX` pauses inside a store write instead: the write
//! transaction whose context starts with `PREFIX` (`store:finishing
//! operation`, `store:starting apply`), after its statements and before
//! its commit (see `store::sqlite`'s pause hook), announced the same way.
//!
//! `CAPSTAN_TEST_STEP_DELAY_MS=N` makes every point wait N milliseconds, so
//! a test can abort an operation while it runs.
//!
//! Both exist only in a build with the cargo feature `test-hooks` (which
//! `cargo xtask test` enables); without it [`Checkpoints::from_env`] reads
//! no environment and a production daemon ignores both variables.

use std::path::PathBuf;
use std::time::Duration;

/// The environment variable listing the points to pause at.
pub const PAUSE_ENV: &str = "CAPSTAN_TEST_PAUSE_AT";
/// The environment variable giving a delay at every point.
pub const DELAY_ENV: &str = "CAPSTAN_TEST_STEP_DELAY_MS";

/// What a unit test runs at every point (to break something there).
#[cfg(test)]
pub type Hook = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// The points this daemon pauses at, read once at start.
#[derive(Clone, Default)]
pub struct Checkpoints {
    pause_at: Vec<String>,
    delay: Option<Duration>,
    marker: Option<PathBuf>,
    #[cfg(test)]
    hook: Option<Hook>,
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoints")
            .field("pause_at", &self.pause_at)
            .field("delay", &self.delay)
            .field("marker", &self.marker)
            .finish_non_exhaustive()
    }
}

impl Checkpoints {
    /// No pauses.
    pub fn none() -> Self {
        Checkpoints::default()
    }

    /// No pauses: this build has no test hooks (the `test-hooks` feature).
    #[cfg(not(feature = "test-hooks"))]
    pub fn from_env(_marker: PathBuf) -> Self {
        Checkpoints::none()
    }

    /// The pauses named by [`PAUSE_ENV`], announced in `marker`.
    #[cfg(feature = "test-hooks")]
    pub fn from_env(marker: PathBuf) -> Self {
        let pause_at: Vec<String> = std::env::var(PAUSE_ENV)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect();
        let delay = std::env::var(DELAY_ENV)
            .ok()
            .and_then(|ms| ms.trim().parse().ok())
            .map(Duration::from_millis);
        if !pause_at.is_empty() || delay.is_some() {
            tracing::warn!(points = ?pause_at, ?delay, "test checkpoints are set");
        }
        Checkpoints {
            pause_at,
            delay,
            marker: Some(marker),
            #[cfg(test)]
            hook: None,
        }
    }

    /// Runs `hook` with the name of every point reached (unit tests only).
    #[cfg(test)]
    pub fn with_hook(hook: Hook) -> Self {
        Checkpoints {
            hook: Some(hook),
            ..Checkpoints::default()
        }
    }

    /// Marks reaching `point`; pauses for ever if it is listed.
    pub fn reach(&self, point: &str) {
        #[cfg(test)]
        if let Some(hook) = &self.hook {
            hook(point);
        }
        if let Some(delay) = self.delay {
            std::thread::sleep(delay);
        }
        if self.pause_at.is_empty() {
            return;
        }
        tracing::debug!(point, "checkpoint");
        if !self.pause_at.iter().any(|p| p == point) {
            return;
        }
        if let Some(marker) = &self.marker {
            let _ = std::fs::write(marker, point);
        }
        tracing::warn!(point, "paused at a test checkpoint; waiting to be killed");
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}
