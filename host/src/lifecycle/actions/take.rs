//! Taking an answer's actions, in order, once [`super::decide`] allowed
//! them all: ensure (into the owned release), patch overrides, restart,
//! request a re-apply.

use crate::lifecycle::actions::decide::check_answer;
use crate::lifecycle::actions::decide::denied;
use crate::lifecycle::owned::delete_owned;
use crate::lifecycle::owned::ensure;
use crate::lifecycle::owned::owned_error;

use crate::lifecycle::Error;
use crate::lifecycle::job::{Job, Prepared};
use crate::model::{Action, Hook, HookAnswer};
pub use crate::policy::actions::MAX_PATCHED_OVERRIDES_BYTES;
use crate::store::OverrideLayer;

/// RFC 7386: a JSON merge patch applied to `target`.
pub fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    let serde_json::Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = serde_json::Value::Object(serde_json::Map::new());
    }
    if let serde_json::Value::Object(map) = target {
        for (key, value) in patch {
            if value.is_null() {
                map.remove(key);
            } else {
                merge_patch(
                    map.entry(key.clone()).or_insert(serde_json::Value::Null),
                    value,
                );
            }
        }
    }
}

/// Decides every action of `answer` ([`policy::actions::check`] over
/// what the target says of each object, then the owned bounds and
/// the target's own refusals), then takes them in order: a refused
/// answer leaves nothing written.
pub(crate) fn take_actions(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    plugin: &str,
    hook: Hook,
    answer: &HookAnswer,
) -> Result<(), Error> {
    let checked = check_answer(job, prepared, plugin, hook, answer)?;
    let mut ensured = checked.into_iter();
    for action in &answer.actions {
        match action {
            Action::Ensure(_) | Action::Mirror(_) => {
                if let Some(object) = ensured.next() {
                    ensure(job, prepared, object)?;
                }
            }
            Action::Delete(object) => delete_owned(job, prepared, object)?,
            Action::PatchOverrides { chart, patch } => {
                patch_overrides(job, plugin, hook, chart, patch)?;
            }
            Action::RequestReapply(reason) => {
                tracing::info!(target: "capstan::audit", app = %job.app, plugin, %hook, reason, "a plugin asked for another apply");
                *job.requested_reapply() = Some(format!("plugin {plugin} asked: {reason}"));
            }
            Action::Observe(object) => {
                let mut observed = prepared.observed();
                if !observed.contains(object) {
                    observed.push(object.clone());
                }
            }
            Action::Restart(object) => {
                job.target().restart(object).map_err(owned_error)?;
                job.note(format!("restarted {object} at a plugin's request"));
            }
        }
    }
    Ok(())
}

/// Merges `patch` (RFC 7386) into the stored user overrides of `chart`.
pub(crate) fn patch_overrides(
    job: &Job<'_>,
    plugin: &str,
    hook: Hook,
    chart: &str,
    patch: &serde_json::Value,
) -> Result<(), Error> {
    let current = job
        .store()
        .override_layer(&job.app, chart, &OverrideLayer::User)?
        .map(|record| record.values)
        .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new()));
    let mut patched = current;
    merge_patch(&mut patched, patch);
    let empty = patched.as_object().is_none_or(serde_json::Map::is_empty);
    if empty {
        job.store()
            .delete_override(&job.app, chart, &OverrideLayer::User)?;
    } else {
        if patched.to_string().len() > MAX_PATCHED_OVERRIDES_BYTES {
            return Err(denied(
                plugin,
                hook,
                &Action::PatchOverrides {
                    chart: chart.to_string(),
                    patch: patch.clone(),
                },
                "override-size",
                format!(
                    "the patched overrides are over {} KiB",
                    MAX_PATCHED_OVERRIDES_BYTES >> 10
                ),
            ));
        }
        job.store()
            .set_override(&job.app, chart, &OverrideLayer::User, &patched)?;
    }
    job.note(format!(
        "plugin {plugin} patched the user overrides of chart {chart} in its {hook} hook"
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        // The RFC's own example.
        let mut target = json!({"a": "b", "c": {"d": "e", "f": "g"}});
        merge_patch(&mut target, &json!({"a": "z", "c": {"f": null}}));
        assert_eq!(target, json!({"a": "z", "c": {"d": "e"}}));
        let mut target = json!({"a": [1, 2]});
        merge_patch(&mut target, &json!({"a": [3]}));
        assert_eq!(target, json!({"a": [3]}));
        let mut target = json!({"a": "b"});
        merge_patch(&mut target, &json!({"a": {"b": "c"}}));
        assert_eq!(target, json!({"a": {"b": "c"}}));
    }
}
