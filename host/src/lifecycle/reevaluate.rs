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

use super::facts_source::FactsSource;
use super::operations::{Operations, Start};
use super::stored::StoredVersion;
use crate::kube::ReleaseEvent;
use crate::model::ApplyRequest;
use crate::model::{AppName, Trigger};
use crate::store::{AppState, Operation};

/// How long the facts must rest before apps are evaluated again: a
/// relabelled node often changes twice in a second.
pub const DEBOUNCE: Duration = Duration::from_millis(500);

/// How often the thread checks that the lifecycle still exists.
const CHECK: Duration = Duration::from_secs(2);

/// Starts re-evaluation for `ops`' facts source.
pub(super) fn spawn<O: Operations>(ops: &O) {
    let source = ops.shared().services.facts.clone();
    if !source.changes() {
        return;
    }
    let weak = Arc::downgrade(ops.shared());
    let started = std::thread::Builder::new()
        .name("capstan-reevaluate".into())
        .spawn(move || run::<O>(weak, source));
    if let Err(e) = started {
        tracing::error!(error = %e, "could not start re-evaluation");
    }
}

fn run<O: Operations>(weak: Weak<super::context::Inner>, source: Arc<dyn FactsSource>) {
    let mut seen = source.current().generation;
    loop {
        let generation = source.wait_change(seen, CHECK);
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let lifecycle = O::of(inner);
        if !lifecycle.may_work() {
            // A follower evaluates nothing; a change seen meanwhile is
            // evaluated once this daemon leads.
            drop(lifecycle);
            std::thread::sleep(CHECK);
            continue;
        }
        if generation == seen {
            auto_reapply_due(&lifecycle);
            continue;
        }
        std::thread::sleep(DEBOUNCE);
        let view = source.current();
        // Every change since the last evaluation, not only the last one:
        // a node added and relabelled within the debounce is both.
        let triggers = source.triggers_since(seen);
        seen = view.generation;
        reevaluate_with(&lifecycle, &view.changes.join("; "), &triggers);
    }
}

/// Plans every applied app again and marks those whose plan changed
/// with `because` (what changed in the facts); an app whose plan did
/// not change but whose `reapply_triggers` match one of `triggers`
/// has its `evaluate-reapply` hook asked, and is marked if a plugin
/// asks for a re-apply. A marked app with `auto_reapply` is then
/// applied again (after its semantic check). Returns how many apps
/// were planned and how many marked.
pub(super) fn reevaluate_with(
    ops: &impl Operations,
    because: &str,
    triggers: &[Trigger],
) -> (usize, usize) {
    let began = Instant::now();
    let apps = match ops.list() {
        Ok(apps) => apps,
        Err(e) => {
            tracing::warn!(target: "capstan::facts", error = %e.one_line(), "re-evaluation could not list the apps");
            return (0, 0);
        }
    };
    let (mut planned, mut marked) = (0, 0);
    for app in apps.iter().filter(|a| a.state == AppState::Applied) {
        planned += 1;
        let diffs = match ops.diff(&app.name) {
            Ok(diffs) => diffs,
            Err(e) => {
                tracing::warn!(target: "capstan::facts", app = %app.name, error = %e.one_line(), "re-evaluation could not plan the app");
                continue;
            }
        };
        let changed: Vec<String> = diffs
            .iter()
            .filter(|d| d.added + d.changed + d.removed > 0)
            .map(|d| d.chart.clone())
            .collect();
        // Read only for an app to mark or to ask, once for the
        // triggers, the Events and the automatic re-apply.
        let version = || match ops.active_version(&app.name) {
            Ok(version) => Some(version),
            Err(e) => {
                tracing::warn!(target: "capstan::facts", app = %app.name, error = %e.one_line(), "re-evaluation could not read the app's version");
                None
            }
        };
        if !changed.is_empty() {
            let Some(version) = version() else {
                continue;
            };
            let reason = format!(
                "{FACTS_MARK}{because}): charts {} would change",
                changed.join(", ")
            );
            marked += 1;
            mark_reapply(ops, &app.name, &version, &reason, Some(&changed));
            continue;
        }
        // Nothing would change: a mark re-evaluation made is out of
        // date (one a plugin asked for stays until an apply).
        {
            let mut marks = ops.shared().work.reapply_marks();
            if marks
                .get(app.name.as_str())
                .is_some_and(|m| m.starts_with(FACTS_MARK))
            {
                marks.remove(app.name.as_str());
            }
        }
        if triggers.is_empty() {
            continue;
        }
        let Some(version) = version() else {
            continue;
        };
        if version.metadata.reapply_triggers.is_empty() {
            continue;
        }
        match ops.evaluate_triggers(&app.name, &version, triggers) {
            Ok(Some(reason)) => {
                marked += 1;
                mark_reapply(ops, &app.name, &version, &reason, None);
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(target: "capstan::facts", app = %app.name, error = %e.one_line(), "evaluate-reapply failed");
            }
        }
    }
    tracing::info!(target: "capstan::facts", planned, marked, took_ms = began.elapsed().as_millis() as u64, "re-evaluated");
    (planned, marked)
}

/// Marks `app` `reapply-needed` for `reason`; when the mark is new,
/// counts it, logs it and writes a `ReapplyNeeded` Event on `charts`
/// (every chart for `None`); then an automatic re-apply if the app
/// has `auto_reapply`.
pub(super) fn mark_reapply(
    ops: &impl Operations,
    app: &AppName,
    version: &StoredVersion,
    reason: &str,
    charts: Option<&[String]>,
) {
    let before = ops
        .shared()
        .work
        .reapply_marks()
        .insert(app.to_string(), reason.to_string());
    if before.is_none_or(|b| base_reason(&b) != reason) {
        tracing::info!(target: "capstan::facts", app = %app, reason = %reason, "reapply needed");
        ops.shared().work.metrics.reapply_needed();
        let message = format!("{reason}; `capstan app diff {app}` shows the change");
        record_events(ops, app, version, charts, "ReapplyNeeded", &message, false);
    }
    auto_reapply(ops, app, version, reason);
}

/// [`auto_reapply`] for every marked app that asked for it
/// (those with an attempt before; others are not read at all), once
/// its interval has passed: an app held by a veto, or marked while
/// its interval ran, is tried again without a change of facts.
pub(super) fn auto_reapply_due(ops: &impl Operations) {
    let marks: Vec<(String, String)> = {
        let attempts = ops
            .shared()
            .work
            .auto_reapplied
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ops.shared()
            .work
            .reapply_marks()
            .iter()
            .filter(|(app, _)| attempts.contains_key(app.as_str()))
            .map(|(app, reason)| (app.clone(), base_reason(reason).to_string()))
            .collect()
    };
    for (app, reason) in marks {
        let Ok(name) = AppName::new(&app) else {
            continue;
        };
        if !ops
            .shared()
            .services
            .store
            .app(&name)
            .is_ok_and(|r| r.state == AppState::Applied)
        {
            continue;
        }
        if let Ok(version) = ops.active_version(&name) {
            auto_reapply(ops, &name, &version, &reason);
        }
    }
}

/// When the last automatic re-apply of `app` started, from its
/// history, so that the interval holds across a daemon restart.
pub(super) fn last_auto_reapply(ops: &impl Operations, app: &AppName) -> Option<Instant> {
    let history = ops.shared().services.store.history(app).ok()?;
    let started = history
        .iter()
        .filter(|entry| {
            entry.operation == Operation::Apply
                && entry
                    .message
                    .as_deref()
                    .is_some_and(|m| m.contains(AUTO_NOTE))
        })
        .map(|entry| entry.started_at)
        .max()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_millis();
    let ago = u64::try_from(now.saturating_sub(u128::try_from(started.max(0)).ok()?)).ok()?;
    Instant::now().checked_sub(Duration::from_millis(ago))
}

/// Applies `app`, marked for `reason`, again on its own if its
/// `capstan.yaml` sets `auto_reapply` and its last attempt is at
/// least `auto_reapply_interval` ago. Its `semantic-check` hook is
/// asked first, without its actions: a veto holds the re-apply and is
/// added to the mark (and an Event); otherwise an apply starts whose
/// history note says why. Failures are logged; nothing else waits.
pub(super) fn auto_reapply(
    ops: &impl Operations,
    app: &AppName,
    version: &StoredVersion,
    reason: &str,
) {
    if !version.metadata.auto_reapply {
        return;
    }
    // Paused: not even the semantic check runs; the mark stays.
    if super::pause::automatic_paused(ops.shared(), app).is_some() {
        tracing::debug!(target: "capstan::audit", app = %app, "automatic re-apply paused");
        return;
    }
    let known = ops
        .shared()
        .work
        .auto_reapplied
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(app.as_str())
        .copied();
    // The first attempt since the daemon started: the history says
    // when the last one was.
    let last = known.or_else(|| last_auto_reapply(ops, app));
    {
        let mut attempts = ops
            .shared()
            .work
            .auto_reapplied
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(last) = last
            && last.elapsed() < version.metadata.auto_reapply_interval()
        {
            attempts.entry(app.to_string()).or_insert(last);
            return;
        }
        attempts.insert(app.to_string(), Instant::now());
    }
    match ops.semantic_veto(app) {
        Ok(None) => {}
        Ok(Some(veto)) => {
            let held = format!("{reason}{HELD}{veto}");
            let before = ops
                .shared()
                .work
                .reapply_marks()
                .insert(app.to_string(), held.clone());
            if before.as_deref() != Some(held.as_str()) {
                tracing::warn!(target: "capstan::audit", app = %app, veto = %veto, "automatic re-apply held by a veto");
                record_events(ops, app, version, None, "AutoReapplyHeld", &held, true);
            }
            return;
        }
        Err(e) => {
            tracing::warn!(target: "capstan::audit", app = %app, error = %e.one_line(), "automatic re-apply could not run the semantic check");
            return;
        }
    }
    let note = format!("{AUTO_NOTE}{reason}");
    match ops.start(
        app,
        Start::Apply {
            flags: ApplyRequest::default(),
            note: Some(note.clone()),
            resumes: 0,
        },
    ) {
        Ok(started) => {
            tracing::info!(target: "capstan::audit", app = %app, operation = started.operation.0, reason = %reason, "automatic re-apply started");
            record_events(ops, app, version, None, "AutoReapply", &note, false);
        }
        Err(e) => {
            tracing::warn!(target: "capstan::audit", app = %app, error = %e.one_line(), "automatic re-apply could not start");
        }
    }
}

/// An Event (`reason`, `message`) on each of `charts` of `app`'s
/// `version`, every chart for `None`, on a target that records them
/// (a cluster); a failure is logged.
pub(super) fn record_events(
    ops: &impl Operations,
    app: &AppName,
    version: &StoredVersion,
    charts: Option<&[String]>,
    reason: &str,
    message: &str,
    warning: bool,
) {
    let chosen =
        version.metadata.charts.iter().filter(|c| {
            charts.is_none_or(|charts| charts.iter().any(|name| c.name.as_str() == name))
        });
    for chart in chosen {
        let event = ReleaseEvent {
            release: version.release(app, chart),
            reason: reason.into(),
            message: message.into(),
            warning,
        };
        if let Err(e) = ops.shared().services.target.record_event(&event) {
            tracing::warn!(target: "capstan::facts", app = %app, chart = %chart.name, error = %e, "could not record the {reason} event");
        }
    }
}

/// How a mark re-evaluation made from a change of plan begins.
const FACTS_MARK: &str = "facts changed (";

/// How an automatic re-apply's history note begins.
const AUTO_NOTE: &str = "automatic re-apply: ";

/// What a held automatic re-apply adds to the mark, before the veto.
const HELD: &str = "; automatic re-apply held: ";

/// A mark's reason without what a held automatic re-apply added.
fn base_reason(mark: &str) -> &str {
    mark.split_once(HELD).map_or(mark, |(base, _)| base)
}
