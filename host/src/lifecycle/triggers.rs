//! Owns `evaluate-reapply` (StarlingX's re-apply triggers): which
//! platform changes an app declared in `capstan.yaml`
//! (`reapply_triggers`) a change matches, the hook call that asks the
//! app's plugins about it, and platform events (`capstan platform event
//! NAME [KEY=VALUE]...`), which nothing in the cluster says.
//!
//! A plugin answers with a `request-reapply` action to have the app
//! marked `reapply-needed` (and, with `auto_reapply`, applied again); it
//! may ask for nothing else here (rule `reapply-only`), and a veto means
//! nothing. Nothing is written but the mark: the calls are planning, as
//! re-evaluation's are.

use super::Error;
use super::engine::Lifecycle;
use super::stored::StoredVersion;
use crate::lifecycle::apply::prepare::load;
use crate::lifecycle::job::{Apply, Job};
use crate::model::{AppName, Hook, Mode, Trigger, TriggerKind};
use crate::store::AppState;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The most details one platform event may carry.
pub const MAX_EVENT_DETAILS: usize = 32;

/// The longest value of one platform event's detail, in bytes.
pub const MAX_EVENT_VALUE: usize = 1024;

/// A platform event, as `POST /v1/platform/events` takes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlatformEventRequest {
    /// The event's name (`storage-backend-changed`): 1 to 63 letters,
    /// digits, `-`, `.`, `_` or `/`.
    pub name: String,
    /// Its details, handed to the hooks after `name` (at most 32; keys as
    /// names, values at most 1 KiB on one line).
    #[serde(default)]
    pub details: BTreeMap<String, String>,
}

/// What a platform event did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PlatformEventOutcome {
    /// The event, as the hooks were handed it.
    pub event: String,
    /// The applied apps that declared a trigger for it and were asked.
    pub evaluated: Vec<String>,
    /// Those whose plugin asked for a re-apply: now `reapply-needed`.
    pub marked: Vec<String>,
    /// Apps whose hook failed, each with the error on one line.
    pub failed: Vec<String>,
}

/// Checks a platform event's name and details.
///
/// # Errors
/// [`Error::BadPlatformEvent`] naming what is wrong.
pub fn check_event(name: &str, details: &[(String, String)]) -> Result<(), Error> {
    let bad = |reason: String| {
        Err(Error::BadPlatformEvent {
            name: name.chars().take(64).collect(),
            reason,
        })
    };
    let word = |text: &str| {
        !text.is_empty()
            && text.len() <= 63
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._/".contains(&b))
    };
    if !word(name) {
        return bad("a name is 1 to 63 letters, digits, '-', '.', '_' or '/'".into());
    }
    if details.len() > MAX_EVENT_DETAILS {
        return bad(format!("more than {MAX_EVENT_DETAILS} details"));
    }
    for (key, value) in details {
        if !word(key) || key == "name" {
            return bad(format!(
                "detail key {:?} is not 1 to 63 letters, digits, '-', '.', '_' or '/' (and not `name`)",
                key.chars().take(64).collect::<String>()
            ));
        }
        if value.len() > MAX_EVENT_VALUE || value.chars().any(char::is_control) {
            return bad(format!(
                "detail {key}: a value is at most {MAX_EVENT_VALUE} bytes, on one line"
            ));
        }
    }
    Ok(())
}

impl Job<'_> {
    /// Asks the `evaluate-reapply` hooks of `version`'s plugins about
    /// `trigger` (told `operation: evaluate-reapply`, `mode: auto`): the
    /// mark's reason from the first that asks for a re-apply.
    ///
    /// # Errors
    /// A plugin's failure, or an action other than `request-reapply`
    /// (rule `reapply-only`).
    pub(super) fn evaluate_reapply(
        &self,
        version: &StoredVersion,
        trigger: &Trigger,
    ) -> Result<Option<String>, Error> {
        let request = Apply::plain(version, "evaluate-reapply");
        let prepared = load(self, &request)?;
        let mut call = prepared.hook_call(self, Hook::EvaluateReapply)?;
        call.mode = Mode::Auto;
        call.trigger = Some(trigger.clone());
        for plugin in prepared.plugins_with(Hook::EvaluateReapply) {
            let answer = prepared.call_hook(self, plugin, &call)?;
            let asked = crate::policy::actions::reapply_asked(&answer.actions).map_err(
                |(index, refusal)| Error::ActionDenied {
                    plugin: plugin.path().to_string(),
                    hook: Hook::EvaluateReapply,
                    action: answer
                        .actions
                        .get(index)
                        .map_or("?", |a| a.name())
                        .to_string(),
                    rule: refusal.rule,
                    reason: refusal.reason,
                },
            )?;
            if let Some(reason) = asked {
                return Ok(Some(format!(
                    "plugin {} asked on {trigger}: {reason}",
                    plugin.path()
                )));
            }
        }
        Ok(None)
    }
}

impl Lifecycle {
    /// The `evaluate-reapply` hooks of `app`'s active `version` (its
    /// bundle checked first) for each of `triggers` one of its
    /// `reapply_triggers` matches, in order,
    /// until one asks for a re-apply: that mark's reason. `Ok(None)` when
    /// none matched or none asked.
    ///
    /// # Errors
    /// As [`Job::evaluate_reapply`].
    pub(super) fn evaluate_triggers(
        &self,
        app: &AppName,
        version: &StoredVersion,
        triggers: &[Trigger],
    ) -> Result<Option<String>, Error> {
        let declared = &version.metadata.reapply_triggers;
        let matching: Vec<&Trigger> = triggers
            .iter()
            .filter(|t| declared.iter().any(|spec| spec.matches(t)))
            .collect();
        if matching.is_empty() {
            return Ok(None);
        }
        // The plugins run from the bundle as stored, checked first.
        let checked = self.active_version_checked(app)?;
        let abort = Arc::new(AtomicBool::new(false));
        let job = self.dry_job(app, &abort);
        job.automatic.store(true, Ordering::SeqCst);
        for trigger in matching {
            if let Some(reason) = job.evaluate_reapply(&checked, trigger)? {
                return Ok(Some(reason));
            }
        }
        Ok(None)
    }

    /// A platform event (`capstan platform event NAME [KEY=VALUE]...`):
    /// every applied app that declared a `platform-event` trigger for
    /// `name` has its `evaluate-reapply` hook asked, handed the trigger
    /// `platform-event` with the details `name=NAME` and the event's own;
    /// those that ask are marked `reapply-needed` (and applied again with
    /// `auto_reapply`). An app in the middle of an operation is passed
    /// over, as re-evaluation passes it over.
    ///
    /// # Errors
    /// [`Error::BadPlatformEvent`]; the store's.
    pub fn platform_event(
        &self,
        name: &str,
        details: &[(String, String)],
    ) -> Result<PlatformEventOutcome, Error> {
        check_event(name, details)?;
        let mut pairs: Vec<(&str, &str)> = vec![("name", name)];
        pairs.extend(details.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let trigger = Trigger::new(TriggerKind::PlatformEvent, &pairs);
        let mut outcome = PlatformEventOutcome {
            event: trigger.to_string(),
            evaluated: Vec::new(),
            marked: Vec::new(),
            failed: Vec::new(),
        };
        tracing::info!(target: "capstan::audit", event = %trigger, "platform event");
        for app in self.list()? {
            if app.state != AppState::Applied {
                continue;
            }
            let Ok(version) = self.active_version(&app.name) else {
                continue;
            };
            if !version
                .metadata
                .reapply_triggers
                .iter()
                .any(|spec| spec.matches(&trigger))
            {
                continue;
            }
            outcome.evaluated.push(app.name.to_string());
            match self.evaluate_triggers(&app.name, &version, std::slice::from_ref(&trigger)) {
                Ok(Some(reason)) => {
                    super::reevaluate::mark_reapply(self, &app.name, &version, &reason, None);
                    outcome.marked.push(app.name.to_string());
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(target: "capstan::facts", app = %app.name, error = %e.one_line(), "evaluate-reapply failed");
                    outcome
                        .failed
                        .push(format!("{}: {}", app.name, e.one_line()));
                }
            }
        }
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_events_are_checked() {
        let ok = [("backend".to_string(), "ceph".to_string())];
        assert!(check_event("storage-backend-changed", &ok).is_ok());
        let said = |name: &str, details: &[(String, String)]| {
            check_event(name, details)
                .map_err(|e| e.to_string())
                .err()
                .unwrap_or_default()
        };
        assert!(said("", &ok).contains("1 to 63"));
        assert!(said("a b", &ok).contains("1 to 63"));
        assert!(said(&"x".repeat(64), &ok).contains("1 to 63"));
        let named = [("name".to_string(), "x".to_string())];
        assert!(said("ev", &named).contains("not `name`"));
        let long = [("k".to_string(), "v".repeat(MAX_EVENT_VALUE + 1))];
        assert!(said("ev", &long).contains("at most 1024 bytes"));
        let lines = [("k".to_string(), "a\nb".to_string())];
        assert!(said("ev", &lines).contains("one line"));
        let many: Vec<(String, String)> = (0..=MAX_EVENT_DETAILS)
            .map(|i| (format!("k{i}"), "v".to_string()))
            .collect();
        assert!(said("ev", &many).contains("more than 32 details"));
    }
}
