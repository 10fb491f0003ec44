//! The lifecycle hooks around an apply or a remove: calling every
//! plugin that serves one, with its actions carried out
//! ([`crate::lifecycle::actions`]), and the chart hooks run at delete.

use crate::bundle::{self};
use crate::kube::Resource;
use crate::lifecycle::Error;
use crate::lifecycle::actions::take_actions;
use crate::lifecycle::apply::commit::next_revision;
use crate::lifecycle::apply::render::plan_chart;
use crate::lifecycle::job::Job;
use crate::lifecycle::job::Prepared;
use crate::lifecycle::job::is_post;
use crate::lifecycle::job::pair_of;
use crate::lifecycle::stored::StoredVersion;
use crate::model::{Hook, HookOutcome};

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

pub(crate) fn run_hook(job: &Job<'_>, prepared: &Prepared<'_>, hook: Hook) -> Result<(), Error> {
    let mut call = prepared.hook_call(job, hook)?;
    for p in prepared.plugins_with(hook) {
        // Keyed by the plugin and the pair (pre-apply and post-apply,
        // pre-update and post-update, ...): an update's pre-update,
        // pre-apply, post-apply and post-update each hand on their own.
        let key = format!("{}#{}", p.path, pair_of(hook));
        call.state = if is_post(hook) {
            prepared.states().remove(&key)
        } else {
            None
        };
        let answer = prepared.call_hook(job, p, &call)?;
        if let HookOutcome::Veto(reason) = &answer.verdict {
            return Err(Error::Vetoed {
                plugin: p.plugin.name().to_owned(),
                hook,
                reason: reason.clone(),
            });
        }
        take_actions(job, prepared, &p.path, hook, &answer)?;
        if let Some(state) = answer.state
            && !is_post(hook)
        {
            prepared.states().insert(key, state);
        }
    }
    Ok(())
}
