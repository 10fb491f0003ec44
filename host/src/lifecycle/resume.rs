//! Owns handing operations from one leader to the next (cluster mode):
//! what an operation was asked, kept with its history entry
//! ([`Request`]); stopping running operations at their next checkpoint
//! when the daemon shuts down ([`Lifecycle::hand_over`]); and resuming,
//! on taking over, what the last leader left running
//! ([`Lifecycle::resume`]).
//!
//! Resuming is starting the interrupted operation again, as the operator
//! would, from the state reconciliation left: every step of an apply is
//! idempotent (a server-side apply of objects already applied changes
//! nothing, decisions and system overrides are planned again from the
//! same inputs), so nothing is applied twice. An apply is applied again
//! with the flags it was started with, a remove removed again; an
//! interrupted update, rollback or recover ends as a failed one does, by
//! `recover` (the version the app left is applied again, the target
//! forgotten). An upload is not resumed (its bytes were the client's). An
//! operation resumed [`MAX_RESUMES`] times stays failed, so a step that
//! kills every leader does not go round the replicas for ever.

use serde::{Deserialize, Serialize};

use super::engine::{ApplyFlags, Lifecycle, Started};
use super::{Error, rules};
use crate::store::{HistoryEntry, Operation, OperationId, Outcome, Reconciled};

/// How many times one interrupted operation is resumed before it is left
/// in its failed state for the operator.
pub const MAX_RESUMES: u32 = 3;

/// What an operation was asked beyond its name: the JSON kept in
/// [`HistoryEntry::request`] (absent when every field is its default).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Request {
    /// An apply's `--rekind`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rekind: Vec<String>,
    /// An apply's `--adopt`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub adopt: bool,
    /// An apply's `--recreate`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recreate: Vec<String>,
    /// A remove's `--force`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub force: bool,
    /// A remove's `--keep-secrets`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub keep_secrets: bool,
    /// How many interrupted operations this one resumes, one after the
    /// other (0 for one a person or the daemon started).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resumes: u32,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Request {
    /// The request an entry holds; a plain one when it holds none or one
    /// this build cannot read (written by a newer one), which is resumed
    /// as a plain operation of its kind.
    fn of(entry: &HistoryEntry) -> Request {
        entry
            .request
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default()
    }
}

impl Lifecycle {
    /// Keeps `request` with operation `op` when it says anything.
    pub(super) fn keep_request(&self, op: OperationId, request: &Request) -> Result<(), Error> {
        if *request == Request::default() {
            return Ok(());
        }
        // Strings, flags and a count: serializing cannot fail.
        let text = serde_json::to_string(request).unwrap_or_else(|_| "{}".to_owned());
        Ok(self.store().set_request(op, &text)?)
    }

    /// Stops work for a shutdown in cluster mode: running operations stop
    /// at their next checkpoint and stay running in the store, for the
    /// next leader to resume; queued ones stop at their first. Nothing
    /// for a daemon without an election (it lets operations finish).
    pub fn hand_over(&self) {
        if let Some(leadership) = &self.inner.cluster.leadership {
            leadership
                .handing_over
                .store(true, std::sync::atomic::Ordering::SeqCst);
            tracing::info!(target: "capstan::lease", "handing over: running operations stop at their next checkpoint");
        }
    }

    /// Starts again what the last leader left running, for every app that
    /// reconciliation moved (see the module's doc). A failure to start
    /// one is logged; the app stays in its failed state with the reason.
    pub(super) fn resume(&self, moved: &[Reconciled]) {
        for moved in moved {
            match self.resume_one(moved) {
                Ok(Some((entry, started))) => {
                    tracing::info!(target: "capstan::lease", app = %moved.app, interrupted = %entry.operation, id = entry.id.0,
                        resumed_as = started.operation.0, "resumed the operation the last leader left running");
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(target: "capstan::lease", app = %moved.app, error = %e.one_line(), "could not resume the interrupted operation; the app stays in its failed state");
                }
            }
        }
    }

    fn resume_one(&self, moved: &Reconciled) -> Result<Option<(HistoryEntry, Started)>, Error> {
        let history = self.store().history(&moved.app)?;
        // The newest entry is the interrupted operation itself; anything
        // else (a `reconcile` entry: no operation was open) is not resumed.
        let Some(entry) = history.last().filter(|h| h.outcome == Outcome::Interrupted) else {
            return Ok(None);
        };
        let request = Request::of(entry);
        if request.resumes >= MAX_RESUMES {
            tracing::warn!(target: "capstan::lease", app = %moved.app, operation = %entry.operation, resumes = request.resumes,
                "interrupted again after {MAX_RESUMES} resumptions; left {} for the operator", moved.to);
            return Ok(None);
        }
        let resumes = request.resumes + 1;
        let note = format!(
            "resumed {} {} left running by the last leader (resumption {resumes} of at most {MAX_RESUMES})",
            entry.operation, entry.id
        );
        let started = match entry.operation {
            Operation::Apply if rules::APPLY_FROM.contains(&moved.to) => self.start_apply(
                &moved.app,
                ApplyFlags {
                    rekind: request.rekind,
                    adopt: request.adopt,
                    recreate: request.recreate,
                    note: Some(note),
                },
                resumes,
            )?,
            Operation::Remove => {
                self.start_remove(&moved.app, Request { resumes, ..request }, Some(note))?
            }
            Operation::Update | Operation::Rollback | Operation::Recover | Operation::Apply => self
                .start_recover(
                    &moved.app,
                    Request {
                        resumes,
                        ..Request::default()
                    },
                    Some(note),
                )?,
            _ => return Ok(None),
        };
        Ok(Some((entry.clone(), started)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_request_is_not_written_and_an_unreadable_one_reads_as_plain() {
        assert_eq!(serde_json::to_string(&Request::default()).unwrap(), "{}");
        let asked = Request {
            rekind: vec!["web".into()],
            adopt: true,
            resumes: 2,
            ..Request::default()
        };
        let text = serde_json::to_string(&asked).unwrap();
        assert_eq!(text, r#"{"rekind":["web"],"adopt":true,"resumes":2}"#);
        let entry = |request: Option<&str>| HistoryEntry {
            id: OperationId(7),
            app: crate::model::AppName::new("shop").unwrap(),
            operation: Operation::Apply,
            from_state: None,
            via_state: crate::store::AppState::Applying,
            to_state: None,
            outcome: Outcome::Interrupted,
            message: None,
            started_at: 0,
            finished_at: None,
            request: request.map(str::to_owned),
        };
        assert_eq!(Request::of(&entry(Some(&text))), asked);
        assert_eq!(Request::of(&entry(None)), Request::default());
        assert_eq!(Request::of(&entry(Some("[1,2]"))), Request::default());
    }
}
