//! What the retries of failed automatic operations keep in memory
//! ([`Retries`], in the lifecycle's shared work): the automatic applies
//! running and each app's retry waiting. Plain data and its small
//! helpers; module `retry` decides and starts. A leaf: it names no
//! other file of the lifecycle, so the shared context can hold it.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::model::ApplyRequest;

/// The most bytes of an error a retry's note repeats.
pub(crate) const MAX_ERROR_IN_NOTE: usize = 300;

/// The automatic applies running and the retries waiting, per app.
#[derive(Debug, Default)]
pub(crate) struct Retries {
    /// Automatic applies the loops started, by app, until they end.
    pub(crate) running: Mutex<BTreeMap<String, Automatic>>,
    /// Apps whose automatic apply failed and that have a retry left or
    /// one running.
    pub(crate) pending: Mutex<BTreeMap<String, Pending>>,
    /// Whether the thread that starts due retries runs: started at the
    /// first retry scheduled, so a daemon that never retries has none.
    pub(crate) thread: std::sync::atomic::AtomicBool,
}

/// An automatic apply as it was started, so it can be started again.
#[derive(Debug, Clone)]
pub(crate) struct Automatic {
    pub(crate) flags: ApplyRequest,
    /// Why the first attempt was made (its note).
    pub(crate) origin: String,
}

/// One app's retries after a failed automatic apply.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub(crate) what: Automatic,
    /// Retries started so far.
    pub(crate) started: u32,
    /// When the next one is due; `None` while one runs.
    pub(crate) due: Option<Instant>,
    /// The last failure, bounded.
    pub(crate) error: String,
}

impl Retries {
    pub(crate) fn running(&self) -> MutexGuard<'_, BTreeMap<String, Automatic>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn pending(&self) -> MutexGuard<'_, BTreeMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `app`'s retry, for `app show`: `retry 2 due in 40s after
    /// <error>`, `retry 2 running`; `None` without one.
    pub(crate) fn describe(&self, app: &str) -> Option<String> {
        self.pending().get(app).map(|p| match p.due {
            Some(due) => format!(
                "retry {} due in {} after {}",
                p.started + 1,
                humanize(due.saturating_duration_since(Instant::now())),
                p.error
            ),
            None => format!("retry {} running", p.started),
        })
    }
}

/// `text` cut to [`MAX_ERROR_IN_NOTE`] bytes at a character boundary.
pub(crate) fn bounded(text: &str) -> String {
    if text.len() <= MAX_ERROR_IN_NOTE {
        return text.to_owned();
    }
    let mut cut = MAX_ERROR_IN_NOTE;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

/// `90s`, `2m`, `2m30s`.
pub(crate) fn humanize(delay: Duration) -> String {
    let secs = delay.as_secs().max(1);
    match (secs / 60, secs % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_bounded_and_delays_read_as_people_write_them() {
        let long = "é".repeat(400);
        let cut = bounded(&long);
        assert!(cut.len() <= MAX_ERROR_IN_NOTE + '…'.len_utf8());
        assert!(cut.ends_with('…'));
        assert_eq!(bounded("short"), "short");
        assert_eq!(humanize(Duration::from_millis(10)), "1s");
        assert_eq!(humanize(Duration::from_secs(33)), "33s");
        assert_eq!(humanize(Duration::from_secs(120)), "2m");
        assert_eq!(humanize(Duration::from_secs(150)), "2m30s");
    }
}
