//! Rules both stores apply the same way: the clock they stamp with, which
//! states an operation may start from, and the words of a reconciliation.

use std::time::{SystemTime, UNIX_EPOCH};

use super::error::Error;
use super::records::{AppRecord, UnixMillis};
use super::state::{AppState, Operation};
use crate::model::AppName;

/// Now, in milliseconds since the epoch.
pub(crate) fn now() -> UnixMillis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Refuses `operation` unless `state` is allowed: [`Error::Busy`] while
/// another operation runs, [`Error::IllegalTransition`] otherwise.
pub(crate) fn check_allowed(
    app: &AppRecord,
    operation: Operation,
    allowed_from: &[AppState],
) -> Result<(), Error> {
    if allowed_from.contains(&app.state) {
        return Ok(());
    }
    let refusal = if app.state.is_transitional() {
        Error::Busy {
            app: app.name.clone(),
            state: app.state,
            operation,
        }
    } else {
        Error::IllegalTransition {
            app: app.name.clone(),
            state: app.state,
            operation,
        }
    };
    Err(refusal)
}

/// [`Error::NotTransitional`] unless `to` is a transitional state.
pub(crate) fn require_transitional(
    app: &AppName,
    operation: Operation,
    to: AppState,
) -> Result<(), Error> {
    if to.is_transitional() {
        Ok(())
    } else {
        Err(Error::NotTransitional {
            app: app.clone(),
            operation,
            state: to,
        })
    }
}

/// What reconciliation says of an app found in `from` (during `running`,
/// if an operation was open) and moved to `to`.
pub(crate) fn interrupted_message(
    running: Option<Operation>,
    from: AppState,
    to: AppState,
) -> String {
    match running {
        Some(operation) => {
            format!("the daemon restarted during {operation} (app was {from}); moved to {to}")
        }
        None => format!("the daemon restarted while the app was {from}; moved to {to}"),
    }
}

/// What reconciliation writes on a running entry of an app that is not in
/// a transitional state (only a bug can leave one).
pub(crate) const CLOSED_AT_RESTART: &str = "closed at daemon restart";
