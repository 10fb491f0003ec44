//! The SQLite store's cascades and orders, said for a document.

use super::AppDoc;
use crate::store::records::{HistoryEntry, OperationId, OverrideRecord, Reconciled, UnixMillis};
use crate::store::rules::{CLOSED_AT_RESTART, interrupted_message};
pub(super) use crate::store::rules::{check_allowed, now, require_transitional};
use crate::store::state::{Operation, Outcome};

/// Overrides by chart, then layer, then version (a user layer's absent
/// version first), as the SQLite store lists them.
pub(super) fn sort_overrides(overrides: &mut [OverrideRecord]) {
    overrides.sort_by(|a, b| {
        (a.chart.as_str(), a.layer.kind(), a.layer.version()).cmp(&(
            b.chart.as_str(),
            b.layer.kind(),
            b.layer.version(),
        ))
    });
}

/// Start-up reconciliation of one app: a transitional state moves to its
/// failed state with the reason, its running operation closed as
/// interrupted (or a `reconcile` entry added when none was open); a
/// running entry of a settled app is closed. Returns the move, if any.
/// `id` names that entry.
pub(super) fn reconcile(doc: &mut AppDoc, at: UnixMillis, id: OperationId) -> Option<Reconciled> {
    let from = doc.status.state;
    let mut moved = None;
    if from.is_transitional() {
        let to = from.failed_state_of();
        let running = doc
            .status
            .history
            .iter()
            .filter(|h| h.outcome == Outcome::Running)
            .max_by_key(|h| h.id.0)
            .map(|h| h.operation);
        let message = interrupted_message(running, from, to);
        doc.status.state = to;
        doc.status.message = Some(message.clone());
        doc.status.progress = None;
        doc.status.updated_at = at;
        if running.is_some() {
            for entry in doc.status.history.iter_mut() {
                if entry.outcome == Outcome::Running {
                    entry.outcome = Outcome::Interrupted;
                    entry.to_state = Some(to);
                    entry.message = Some(message.clone());
                    entry.finished_at = Some(at);
                }
            }
        } else {
            doc.status.history.push(HistoryEntry {
                id,
                app: doc.name.clone(),
                operation: Operation::Reconcile,
                from_state: Some(from),
                via_state: from,
                to_state: Some(to),
                outcome: Outcome::Succeeded,
                message: Some(message),
                started_at: at,
                finished_at: Some(at),
                request: None,
            });
        }
        tracing::warn!(app = %doc.name, from = %from, to = %to, "moved interrupted app to its failed state");
        moved = Some(Reconciled {
            app: doc.name.clone(),
            from,
            to,
        });
    }
    let state = doc.status.state;
    for entry in doc.status.history.iter_mut() {
        if entry.outcome == Outcome::Running {
            entry.outcome = Outcome::Interrupted;
            entry.finished_at = Some(at);
            entry.to_state = Some(state);
            if entry.message.is_none() {
                entry.message = Some(CLOSED_AT_RESTART.to_owned());
            }
        }
    }
    moved
}

/// Puts `item` in `list` in place of the one with its key (or adds it),
/// the list kept in key order, as a table keyed by it lists.
pub(super) fn upsert<T, K: Ord>(list: &mut Vec<T>, item: T, key: impl Fn(&T) -> K) {
    let wanted = key(&item);
    list.retain(|existing| key(existing) != wanted);
    list.push(item);
    list.sort_by_key(|a| key(a));
}

/// Removes what `gone` picks from `list`; whether anything was removed.
pub(super) fn remove_where<T>(list: &mut Vec<T>, gone: impl Fn(&T) -> bool) -> bool {
    let before = list.len();
    list.retain(|item| !gone(item));
    list.len() < before
}
