//! The lifecycle hooks around an apply or a remove: calling every
//! plugin that serves one, with its actions carried out
//! ([`crate::lifecycle::actions`]).

use crate::lifecycle::Error;
use crate::lifecycle::actions::take_actions;
use crate::lifecycle::job::Job;
use crate::lifecycle::job::Prepared;
use crate::lifecycle::job::is_post;
use crate::lifecycle::job::pair_of;
use crate::model::{Hook, HookOutcome};

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
