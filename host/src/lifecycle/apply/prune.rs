//! Prune and remove: charts a version no longer has (or every chart, for
//! `app remove`) removed through the target, in reverse order.

use crate::bundle::{self};
use crate::kube::Resource;
use crate::kube::{ApplyOptions, HookEvent, RemoveOptions};
use crate::lifecycle::Error;
use crate::lifecycle::apply::charts::StoreProgress;
use crate::lifecycle::apply::charts::chart_run;
use crate::lifecycle::apply::charts::charts_begin;
use crate::lifecycle::apply::commit::release_removed;
use crate::lifecycle::apply::hooks::run_hook;
use crate::lifecycle::apply::prepare::load;
use crate::lifecycle::apply::prepare::stored_system_layer;
use crate::lifecycle::apply::render::next_revision;
use crate::lifecycle::apply::render::plan_chart;
use crate::lifecycle::job::Job;
use crate::lifecycle::job::Prepared;
use crate::lifecycle::job::UserLayer;
use crate::lifecycle::job::{Apply, NO_FLAGS};
use crate::lifecycle::owned::remove_owned;
use crate::lifecycle::stored::StoredVersion;
use crate::model::Hook;
use std::collections::BTreeSet;

/// Removes every chart of `version` (and of a failed update's `target`)
/// from the target, chart groups in reverse order, between the
/// `pre-remove` and `post-remove` hooks. With `force`, failures are
/// collected as warnings and the removal goes on; with `keep_secrets`
/// the generated secrets stay ([`Job::remove_owned`]).
pub fn remove_version(
    job: &Job<'_>,
    version: &StoredVersion,
    target: Option<&StoredVersion>,
    force: bool,
    keep_secrets: bool,
) -> Result<(), Error> {
    let request = Apply {
        version,
        replacing: target,
        user: UserLayer::Stored,
        flags: &NO_FLAGS,
        around: None,
        phase: "remove",
    };
    charts_begin(job, [Some(version), target].into_iter().flatten(), true);
    job.step("remove", "load-plugins", "loading plugins")?;
    let mut prepared = load(job, &request)?;
    prepared.system = stored_system_layer(job, version)?;
    job.step("remove", "pre-remove", "pre-remove hook")?;
    forced(job, force, run_hook(job, &prepared, Hook::PreRemove))?;
    let mut charts: Vec<(&StoredVersion, &bundle::Chart)> = Vec::new();
    for v in [Some(version), target].into_iter().flatten() {
        for group in v.metadata.chart_groups.iter().rev() {
            for name in group.charts.iter().rev() {
                if let Some(chart) = v.metadata.chart(name)
                    && !charts.iter().any(|(_, c)| c.name == chart.name)
                {
                    charts.push((v, chart));
                }
            }
        }
    }
    for (v, chart) in charts {
        let board = chart_run(job, chart.name.as_str());
        job.step(
            "remove",
            &format!("remove:{}", chart.name),
            &format!("removing chart {}", chart.name),
        )?;
        let progress = StoreProgress {
            job,
            prefix: format!("removing chart {}", chart.name),
        };
        let release = v.release(&job.app, chart);
        let hooks = delete_hooks(job, &prepared, v, chart);
        let options = ApplyOptions {
            timeout: chart.timeout,
            ..ApplyOptions::default()
        };
        let kube_err = |source| Error::Kube {
            chart: chart.name.to_string(),
            source: Box::new(source),
        };
        let before = job
            .target()
            .run_hooks(&release, HookEvent::PreDelete, &hooks, &options, &progress)
            .map_err(kube_err);
        forced(job, force, before.map(drop))?;
        let removed = job
            .target()
            .remove_with(
                &release,
                &RemoveOptions {
                    timeout: chart.timeout,
                    ..RemoveOptions::default()
                },
                &progress,
            )
            .map_err(kube_err);
        release_removed(job, &release, removed.is_ok())?;
        forced(job, force, removed.map(drop))?;
        let after = job
            .target()
            .run_hooks(&release, HookEvent::PostDelete, &hooks, &options, &progress)
            .map_err(kube_err);
        forced(job, force, after.map(drop))?;
        board.done();
    }
    forced(job, force, remove_owned(job, &prepared, keep_secrets))?;
    job.step("remove", "post-remove", "post-remove hook")?;
    forced(job, force, run_hook(job, &prepared, Hook::PostRemove))
}

/// With `force`, an error becomes a warning.
pub(crate) fn forced(job: &Job<'_>, force: bool, result: Result<(), Error>) -> Result<(), Error> {
    match result {
        Err(e) if force && !matches!(e, Error::Aborted | Error::HandedOver) => {
            job.warn(format!("ignored with --force: {}", e.one_line()));
            Ok(())
        }
        other => other,
    }
}

/// Removes the releases of charts that were (or may have been) applied
/// but are not part of this apply: charts of the replaced version this
/// one lacks, and this version's disabled charts.
pub(crate) fn prune_charts(
    job: &Job<'_>,
    request: &Apply<'_>,
    applied: &BTreeSet<String>,
) -> Result<(), Error> {
    let mut candidates: Vec<(&StoredVersion, &bundle::Chart)> = Vec::new();
    for version in [Some(request.version), request.replacing]
        .into_iter()
        .flatten()
    {
        for chart in &version.metadata.charts {
            if !applied.contains(chart.name.as_str())
                && !candidates.iter().any(|(_, c)| c.name == chart.name)
            {
                candidates.push((version, chart));
            }
        }
    }
    for (version, chart) in candidates {
        let release = version.release(&job.app, chart);
        job.step(
            request.phase,
            &format!("prune:{}", chart.name),
            &format!("removing chart {} (not in this version)", chart.name),
        )?;
        let removed = job.target().remove(&release);
        release_removed(job, &release, removed.is_ok())?;
        removed.map_err(|source| Error::Kube {
            chart: chart.name.to_string(),
            source: Box::new(source),
        })?;
    }
    Ok(())
}

/// The Helm hook objects a remove runs (`pre-delete`, `post-delete`):
/// the chart rendered as it was applied. A chart of another version (a
/// failed update's target) or one that no longer renders runs none;
/// the latter is said as a warning.
pub(crate) fn delete_hooks(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    version: &StoredVersion,
    chart: &bundle::Chart,
) -> Vec<Resource> {
    if !chart.enabled || version.version != prepared.request.version.version {
        return Vec::new();
    }
    let release = version.release(&job.app, chart);
    let applied_revision = match next_revision(job, &release, &[]) {
        Ok(next) => next.saturating_sub(1).max(1),
        Err(_) => 1,
    };
    match plan_chart(job, prepared, chart, true, applied_revision) {
        Ok(plan) => plan.hooks,
        Err(e) => {
            job.warn(format!(
                "chart {}: delete hooks not run, the chart does not render: {}",
                chart.name,
                e.one_line()
            ));
            Vec::new()
        }
    }
}
