//! Owns day two's drift loop: what the target's watches see of applied
//! apps' objects ([`crate::kube::ClusterView::drift`]) becomes each app's
//! `drifted` condition (in `app show`), a `Drifted` Event on each chart
//! whose objects drifted, the `capstan_app_drifted_objects` metric and,
//! for an app whose `capstan.yaml` says `drift: correct`, an apply that
//! takes the fields back, at most once per `drift_correction_interval`,
//! in the history as a drift correction.
//!
//! Following: each chart apply hands the target the fields capstan holds
//! afterwards ([`super::drifted::follow`]); a removed release is let go. When this
//! daemon starts leading (or starts, alone), every applied app's
//! releases are followed from what the cluster holds then, so drift is
//! watched across a restart and a failover (an edit made while no daemon
//! led is shown by `app diff`, and taken back by the next apply).
//!
//! Runs on one thread, only while this daemon may work; it ends when the
//! lifecycle is dropped.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::drifted::summary;
use super::operations::{Operations, Start};
use crate::model::{AppName, ApplyRequest, DriftMode, ObjectDrift};
use crate::store::AppState;

/// How long one wait for a drift change lasts before the loop checks
/// that the lifecycle still exists and still leads.
const CHECK: Duration = Duration::from_secs(2);

/// How a drift correction's history note begins.
pub(crate) const CORRECTION_NOTE: &str = "drift correction: ";

/// Starts the drift loop for `ops`' target.
pub(super) fn spawn<O: Operations>(ops: &O) {
    if !ops.shared().services.view.watches_drift() {
        return;
    }
    let weak = Arc::downgrade(ops.shared());
    let started = std::thread::Builder::new()
        .name("capstan-drift".into())
        .spawn(move || run::<O>(weak));
    if let Err(e) = started {
        tracing::error!(error = %e, "could not start the drift watch");
    }
}

fn run<O: Operations>(weak: Weak<super::context::Inner>) {
    let mut seen = 0;
    let mut following = false;
    loop {
        let view = {
            let Some(inner) = weak.upgrade() else {
                return;
            };
            let ops = O::of(inner);
            if !ops.may_work() {
                following = false;
                drop(ops);
                std::thread::sleep(CHECK);
                continue;
            }
            if !following {
                follow_applied(&ops);
                following = true;
            }
            ops.shared().services.view.clone()
        };
        let now = view.wait_drift(seen, CHECK);
        drop(view);
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let ops = O::of(inner);
        if now != seen {
            seen = now;
            update(&ops);
        }
        correct_due(&ops);
    }
}

/// Follows every applied app's releases from what the target holds now.
fn follow_applied(ops: &impl Operations) {
    let Ok(apps) = ops.list() else {
        return;
    };
    for record in apps.iter().filter(|r| r.state == AppState::Applied) {
        let Ok(version) = ops.active_version(&record.name) else {
            continue;
        };
        let policy = version.metadata.field_policy();
        if policy.drift == DriftMode::Off {
            continue;
        }
        for chart in version.metadata.charts.iter().filter(|c| c.enabled) {
            let release = version.release(&record.name, chart);
            if let Err(e) = ops.shared().services.view.follow(&release, &[], &policy) {
                tracing::warn!(app = %record.name, release = %release, error = %e, "could not watch the release for drift");
            }
        }
    }
}

/// Reads every applied app's drift from the target; records what
/// changed (condition, metric, Events).
fn update(ops: &impl Operations) {
    let Ok(apps) = ops.list() else {
        return;
    };
    let shared = ops.shared();
    for record in &apps {
        let app = record.name.as_str();
        let mut objects = Vec::new();
        let mut charts = Vec::new();
        if record.state == AppState::Applied
            && let Ok(version) = ops.active_version(&record.name)
            && version.metadata.field_policy().drift != DriftMode::Off
        {
            for chart in version.metadata.charts.iter().filter(|c| c.enabled) {
                let release = version.release(&record.name, chart);
                let drift = shared.services.view.drift(&release).unwrap_or_default();
                if !drift.is_empty() {
                    charts.push(chart.name.to_string());
                }
                objects.extend(drift);
            }
            let newly = {
                let mut all = shared
                    .work
                    .drift
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let entry = all.entry(app.to_string()).or_default();
                let newly = entry.objects.is_empty() && !objects.is_empty();
                let changed = entry.objects != objects;
                if objects.is_empty() {
                    entry.since = 0;
                } else if newly {
                    entry.since = now_millis();
                }
                entry.objects.clone_from(&objects);
                changed.then_some(newly)
            };
            if let Some(newly) = newly {
                shared.work.metrics.drifted(app, objects.len());
                report(ops, &record.name, &version, &charts, &objects, newly);
            }
        } else {
            let had = shared
                .work
                .drift
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(app);
            if had.is_some() {
                shared.work.metrics.drifted(app, 0);
            }
        }
    }
}

/// Logs a change of `app`'s drift and, when it became drifted, records
/// a `Drifted` Event on each drifted chart.
fn report(
    ops: &impl Operations,
    app: &AppName,
    version: &super::stored::StoredVersion,
    charts: &[String],
    objects: &[ObjectDrift],
    newly: bool,
) {
    if objects.is_empty() {
        tracing::info!(target: "capstan::audit", app = %app, "drift gone: the app's objects are as applied");
        return;
    }
    let message = summary(objects);
    tracing::warn!(target: "capstan::audit", app = %app, objects = objects.len(), drift = %message, "app drifted");
    if newly {
        ops.shared().work.metrics.drift_detected();
        super::reevaluate::record_events(
            ops,
            app,
            version,
            Some(charts),
            "Drifted",
            &message,
            true,
        );
    }
}

/// Starts a correction of each drifted app whose policy says `correct`,
/// unless it is busy or its last correction is within its interval.
fn correct_due(ops: &impl Operations) {
    let shared = ops.shared();
    let drifted: Vec<(String, Option<Instant>, String)> = shared
        .work
        .drift
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .filter(|(_, d)| !d.objects.is_empty())
        .map(|(app, d)| (app.clone(), d.corrected, summary(&d.objects)))
        .collect();
    for (app, corrected, message) in drifted {
        let Ok(name) = AppName::new(&app) else {
            continue;
        };
        let Ok(version) = ops.active_version(&name) else {
            continue;
        };
        if version.metadata.field_policy().drift != DriftMode::Correct
            || corrected
                .is_some_and(|at| at.elapsed() < version.metadata.drift_correction_interval())
            || shared
                .work
                .running
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains_key(&app)
        {
            continue;
        }
        if let Some(entry) = shared
            .work
            .drift
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_mut(&app)
        {
            entry.corrected = Some(Instant::now());
        }
        let note = format!("{CORRECTION_NOTE}{message}");
        let started = ops.start(
            &name,
            Start::Apply {
                flags: ApplyRequest {
                    force_conflicts: true,
                    ..ApplyRequest::default()
                },
                note: Some(note),
                resumes: 0,
            },
        );
        match started {
            Ok(started) => {
                shared.work.metrics.drift_corrected();
                tracing::info!(target: "capstan::audit", app = %app, operation = started.operation.0, "drift correction started");
            }
            Err(e) => {
                tracing::warn!(target: "capstan::audit", app = %app, error = %e.one_line(), "drift correction could not start");
            }
        }
    }
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
