//! The apply pipeline: an apply is prepare ([`prepare`]: the version's
//! plugins, facts, semantic-check and the system overrides) -> render
//! ([`render`]: every enabled chart planned against what is applied) ->
//! commit ([`commit`]: decisions and overrides stored) -> apply
//! ([`charts`]: per group, per chart, through the target) -> prune
//! ([`prune`]: charts the version dropped), with the lifecycle hooks
//! around each ([`hooks`]). Each step is a function over the operation's
//! [`Job`] and the [`Prepared`] inputs; this module runs them in order.

pub(crate) mod charts;
pub(crate) mod commit;
pub(crate) mod diff;
pub(crate) mod hooks;
pub(crate) mod prepare;
pub(crate) mod prune;
pub(crate) mod render;
pub(crate) mod secret_values;

use crate::lifecycle::actions::status_until_ready;
use crate::lifecycle::apply::charts::apply_chart;
use crate::lifecycle::apply::charts::apply_parallel;
use crate::lifecycle::apply::charts::charts_begin;
use crate::lifecycle::apply::commit::commit;
use crate::lifecycle::apply::prepare::prepare;
use crate::lifecycle::apply::prune::prune_charts;
use crate::lifecycle::apply::render::render_all;
use crate::lifecycle::job::Apply;
use crate::lifecycle::job::Job;
use crate::lifecycle::owned::settle_owned;
pub use diff::ChartDiff;
pub(crate) use diff::diff;
pub(crate) use hooks::run_hook;
pub(crate) use prepare::{load, semantic_veto};
pub(crate) use prune::remove_version;

use crate::bundle::GroupMode;
use crate::lifecycle::Error;
use crate::lifecycle::stored::StoredVersion;
use crate::model::Hook;
use std::collections::BTreeSet;

/// Applies one version: the whole pipeline.
pub fn apply_version(job: &Job<'_>, request: &Apply<'_>) -> Result<(), Error> {
    let phase = request.phase;
    charts_begin(job, [request.version], false);
    job.step(phase, "load-plugins", "loading plugins")?;
    let prepared = prepare(job, request)?;
    let groups = render_all(job, &prepared)?;
    job.step(phase, "pre-apply", "pre-apply hook")?;
    run_hook(job, &prepared, Hook::PreApply)?;
    job.step(phase, "commit", "storing decisions and system overrides")?;
    commit(job, &prepared, &groups)?;
    let mut applied = BTreeSet::new();
    for group in &groups {
        job.step(
            phase,
            &format!("group:{}", group.name),
            &format!("group {}: {} chart(s)", group.name, group.charts.len()),
        )?;
        match group.mode {
            GroupMode::Sequential => {
                for chart in &group.charts {
                    apply_chart(job, phase, &group.name, chart)?;
                }
            }
            GroupMode::Parallel => apply_parallel(job, phase, &group.name, &group.charts)?,
        }
        if prepared.plugins_with(Hook::Status).next().is_some() {
            for chart in &group.charts {
                job.step(
                    phase,
                    &format!("status:{}", chart.name),
                    &format!("group {}: chart {}: status hook", group.name, chart.name),
                )?;
                status_until_ready(
                    job,
                    &prepared,
                    &chart.name,
                    &chart.release.namespace,
                    chart.options.timeout,
                )?;
            }
        }
        applied.extend(group.charts.iter().map(|c| c.name.clone()));
    }
    prune_charts(job, request, &applied)?;
    job.step(phase, "post-apply", "post-apply hook")?;
    run_hook(job, &prepared, Hook::PostApply)?;
    if let Some((_, after)) = request.around {
        job.step(phase, after.as_str(), &format!("{after} hook"))?;
        run_hook(job, &prepared, after)?;
    }
    settle_owned(job, &prepared)?;
    Ok(())
}

/// The `post-abort` hook of `version`'s plugins, after the operation
/// was aborted: each is called (told `operation: abort`) and its
/// actions are taken under the policy, as any hook's are. The abort
/// flag must be lowered first, or the calls would be interrupted.
///
/// # Errors
/// A plugin's failure or a denied action; a veto (there is nothing
/// left to veto) is an error too, naming the plugin.
pub fn post_abort(job: &Job<'_>, version: &StoredVersion) -> Result<(), Error> {
    let request = Apply::plain(version, "abort");
    let prepared = load(job, &request)?;
    run_hook(job, &prepared, Hook::PostAbort)
}
