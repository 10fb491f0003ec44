//! Owns whether the daemon may start an operation on its own for an app:
//! an automatic re-apply ([`super::reevaluate`]), a drift correction
//! ([`super::drift`]), a retry of a failed one ([`super::retry`]) or the
//! resumption of an operation a leader left running ([`super::resume`]).
//! Every such start goes through
//! [`super::operations::Operations::start`], which asks
//! [`automatic_paused`] first; an operation a person asks for is never
//! paused. Two switches, as StarlingX's audit of an app can be skipped
//! while an operator works by hand: the daemon's (`serve
//! --pause-automatic`, for every app) and each app's (`app pause APP`,
//! kept in the store with who, when and why, and in the app's history;
//! `app resume APP` lifts it).
//!
//! Must not stop what is already running: `app abort` does that.

use super::Error;
use super::context::Inner;
use crate::model::AppName;
use crate::store::{AppRecord, AutomaticPause};

/// The most characters of a reason `app pause` and `app resume` keep.
pub const MAX_PAUSE_REASON_CHARS: usize = 256;

/// The most characters of who paused (the API's name of the caller).
const MAX_BY_CHARS: usize = 128;

/// Why the daemon starts nothing on its own for `app`, or `None` when it
/// may: the app's own pause first, then the daemon's.
pub(crate) fn automatic_paused(inner: &Inner, app: &AppName) -> Option<String> {
    if let Ok(record) = inner.services.store.app(app)
        && let Some(pause) = record.automatic_pause
    {
        return Some(format!("{pause} (`capstan app resume {app}` lifts it)"));
    }
    inner.policies.pause_automatic.then(|| {
        "automatic operations are paused on this daemon (serve --pause-automatic)".to_owned()
    })
}

/// Checks a reason an operator gave: at most [`MAX_PAUSE_REASON_CHARS`]
/// characters, none a control character; blank is none.
///
/// # Errors
/// [`Error::BadPauseReason`].
pub(crate) fn check_reason(reason: Option<&str>) -> Result<Option<String>, Error> {
    let Some(reason) = reason.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    if reason.chars().count() > MAX_PAUSE_REASON_CHARS {
        return Err(Error::BadPauseReason {
            problem: format!("longer than {MAX_PAUSE_REASON_CHARS} characters"),
        });
    }
    if reason.chars().any(char::is_control) {
        return Err(Error::BadPauseReason {
            problem: "it holds a control character (a newline, a tab)".into(),
        });
    }
    Ok(Some(reason.to_owned()))
}

/// Pauses (`pause`) or resumes `app`'s automatic operations for `by`
/// (who asked) with an optional `reason`, kept in the store and its
/// history. Pausing a paused app, or resuming one not paused, records
/// it again (the history says who asked last).
///
/// # Errors
/// [`Error::BadPauseReason`]; the store's (an unknown app).
pub(crate) fn set(
    inner: &Inner,
    app: &AppName,
    pause: bool,
    by: &str,
    reason: Option<&str>,
) -> Result<AppRecord, Error> {
    let reason = check_reason(reason)?;
    let by: String = by
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_BY_CHARS)
        .collect();
    let by = if by.is_empty() {
        "unknown".to_owned()
    } else {
        by
    };
    let record = if pause {
        let pause = AutomaticPause {
            by,
            at: now_millis(),
            reason,
        };
        let message = format!("automatic operations {pause}");
        inner
            .services
            .store
            .set_automatic_pause(app, Some(&pause), &message)?
    } else {
        let mut message = format!("automatic operations resumed by {by}");
        if let Some(reason) = &reason {
            message.push_str(&format!(": {reason}"));
        }
        inner
            .services
            .store
            .set_automatic_pause(app, None, &message)?
    };
    tracing::info!(target: "capstan::audit", app = %app, paused = pause, by = %record
        .automatic_pause
        .as_ref()
        .map_or("", |p| p.by.as_str()), "automatic operations {}", if pause { "paused" } else { "resumed" });
    Ok(record)
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_bounded_and_one_line() {
        assert_eq!(check_reason(None).unwrap(), None);
        assert_eq!(check_reason(Some("  ")).unwrap(), None);
        assert_eq!(
            check_reason(Some(" maintenance ")).unwrap().as_deref(),
            Some("maintenance")
        );
        let long = "é".repeat(MAX_PAUSE_REASON_CHARS + 1);
        assert!(check_reason(Some(&long)).is_err());
        let fits = "é".repeat(MAX_PAUSE_REASON_CHARS);
        assert!(check_reason(Some(&fits)).is_ok());
        assert!(check_reason(Some("two\nlines")).is_err());
    }
}
