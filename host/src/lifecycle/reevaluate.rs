//! Owns re-evaluation: when the facts change, every applied app is
//! planned again (plugin calls and a connected render, nothing written, as
//! `app diff`), and each whose result would change is marked
//! `reapply-needed` with the facts that changed; an app whose plan is
//! unchanged is cleared; a newly marked app gets a `ReapplyNeeded` Event
//! on each chart that would change (on a cluster). Changes are debounced ([`DEBOUNCE`]) and
//! evaluated one at a time on one thread; an app in the middle of an
//! operation is passed over (its operation renders with the new facts).
//!
//! Runs only for a source that changes (the cluster's facts); the thread
//! ends when the lifecycle is dropped.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::context::Inner;
use super::engine::Lifecycle;
use super::facts_source::FactsSource;
use crate::kube::ReleaseEvent;
use crate::model::AppName;
use crate::store::AppState;

/// How long the facts must rest before apps are evaluated again: a
/// relabelled node often changes twice in a second.
pub const DEBOUNCE: Duration = Duration::from_millis(500);

/// How often the thread checks that the lifecycle still exists.
const CHECK: Duration = Duration::from_secs(2);

/// Starts re-evaluation for `lifecycle`'s facts source.
pub(super) fn spawn(lifecycle: &Lifecycle) {
    let source = lifecycle.inner.facts.clone();
    if !source.changes() {
        return;
    }
    let weak = Arc::downgrade(&lifecycle.inner);
    let started = std::thread::Builder::new()
        .name("capstan-reevaluate".into())
        .spawn(move || run(weak, source));
    if let Err(e) = started {
        tracing::error!(error = %e, "could not start re-evaluation");
    }
}

fn run(weak: Weak<Inner>, source: Arc<dyn FactsSource>) {
    let mut seen = source.current().generation;
    loop {
        let generation = source.wait_change(seen, CHECK);
        let Some(inner) = weak.upgrade() else {
            return;
        };
        if generation == seen {
            continue;
        }
        std::thread::sleep(DEBOUNCE);
        let view = source.current();
        seen = view.generation;
        let lifecycle = Lifecycle { inner };
        lifecycle.reevaluate(&view.changes.join("; "));
    }
}

impl Lifecycle {
    /// Plans every applied app again and marks those whose plan changed
    /// with `because` (what changed in the facts). Returns how many apps
    /// were planned and how many marked.
    pub fn reevaluate(&self, because: &str) -> (usize, usize) {
        let began = Instant::now();
        let apps = match self.list() {
            Ok(apps) => apps,
            Err(e) => {
                tracing::warn!(target: "capstan::facts", error = %e.one_line(), "re-evaluation could not list the apps");
                return (0, 0);
            }
        };
        let (mut planned, mut marked) = (0, 0);
        for app in apps.iter().filter(|a| a.state == AppState::Applied) {
            planned += 1;
            match self.diff(&app.name) {
                Ok(diffs) => {
                    let changed: Vec<String> = diffs
                        .iter()
                        .filter(|d| d.added + d.changed + d.removed > 0)
                        .map(|d| d.chart.clone())
                        .collect();
                    let mut marks = self.reapply_marks();
                    if changed.is_empty() {
                        marks.remove(app.name.as_str());
                        continue;
                    }
                    let reason = format!(
                        "facts changed ({because}): charts {} would change",
                        changed.join(", ")
                    );
                    marked += 1;
                    let before = marks.insert(app.name.to_string(), reason.clone());
                    drop(marks);
                    if before.as_ref() == Some(&reason) {
                        continue;
                    }
                    tracing::info!(target: "capstan::facts", app = %app.name, reason = %reason, "reapply needed");
                    self.inner.metrics.reapply_needed();
                    self.record_events(&app.name, &changed, &reason);
                }
                Err(e) => {
                    tracing::warn!(target: "capstan::facts", app = %app.name, error = %e.one_line(), "re-evaluation could not plan the app");
                }
            }
        }
        tracing::info!(target: "capstan::facts", planned, marked, took_ms = began.elapsed().as_millis() as u64, "re-evaluated");
        (planned, marked)
    }

    /// A `ReapplyNeeded` Event for each chart of `app` that would change,
    /// on a target that records them (a cluster); a failure is logged.
    fn record_events(&self, app: &AppName, charts: &[String], reason: &str) {
        let version = match self.active_version(app) {
            Ok(version) => version,
            Err(e) => {
                tracing::warn!(target: "capstan::facts", app = %app, error = %e.one_line(), "no ReapplyNeeded event: the app's version could not be read");
                return;
            }
        };
        let changed = version
            .metadata
            .charts
            .iter()
            .filter(|c| charts.iter().any(|name| c.name.as_str() == name));
        for chart in changed {
            let event = ReleaseEvent {
                release: version.release(app, chart),
                reason: "ReapplyNeeded".into(),
                message: format!("{reason}; `capstan app diff {app}` shows the change"),
                warning: false,
            };
            if let Err(e) = self.inner.target.record_event(&event) {
                tracing::warn!(target: "capstan::facts", app = %app, chart = %chart.name, error = %e, "could not record the ReapplyNeeded event");
            }
        }
    }
}
