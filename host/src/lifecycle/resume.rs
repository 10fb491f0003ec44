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

use super::operations::{Operations, Request, Start, Started};
use super::{Error, rules};
use crate::store::{HistoryEntry, Operation, Outcome, Reconciled};

pub const MAX_RESUMES: u32 = 3;

/// What `entry` asked, or nothing asked when it kept no request (or one
/// this daemon cannot read).
fn request_of(entry: &HistoryEntry) -> Request {
    entry
        .request
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

/// Starts again every operation in `moved` that the last leader left
/// running; each failure is logged and leaves its app failed.
pub(super) fn resume(ops: &impl Operations, moved: &[Reconciled]) {
    for moved in moved {
        match resume_one(ops, moved) {
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

fn resume_one(
    ops: &impl Operations,
    moved: &Reconciled,
) -> Result<Option<(HistoryEntry, Started)>, Error> {
    let history = ops.shared().services.store.history(&moved.app)?;
    // The newest entry is the interrupted operation itself; anything
    // else (a `reconcile` entry: no operation was open) is not resumed.
    let Some(entry) = history.last().filter(|h| h.outcome == Outcome::Interrupted) else {
        return Ok(None);
    };
    let request = request_of(entry);
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
        Operation::Apply if rules::APPLY_FROM.contains(&moved.to) => Start::Apply {
            flags: request.apply(),
            note: Some(note),
            resumes,
        },
        Operation::Remove => Start::Remove {
            request: Request { resumes, ..request },
            note: Some(note),
        },
        Operation::Update | Operation::Rollback | Operation::Recover | Operation::Apply => {
            Start::Recover {
                request: Request {
                    resumes,
                    ..Request::default()
                },
                note: Some(note),
            }
        }
        _ => return Ok(None),
    };
    let started = ops.start(&moved.app, started)?;
    Ok(Some((entry.clone(), started)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::OperationId;

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
        assert_eq!(request_of(&entry(Some(&text))), asked);
        assert_eq!(request_of(&entry(None)), Request::default());
        assert_eq!(request_of(&entry(Some("[1,2]"))), Request::default());
    }
}
