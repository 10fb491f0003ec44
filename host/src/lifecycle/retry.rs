//! Owns the retries of failed automatic operations (issue 45): when an
//! apply the daemon started on its own (an automatic re-apply of
//! [`super::reevaluate`], a drift correction of [`super::drift`]) fails,
//! it is started again after its app's backoff
//! ([`crate::model::RetryPolicy`], from `retries` and `retry_interval` in
//! `capstan.yaml`), at most `retries` times; then the app is left in its
//! failed state. Every step is in the history: the failed operation's
//! message says when the next retry comes or that none is left, and each
//! retry's note says `retry N of M after <error>`.
//!
//! Never a storm: one pending retry per app (a map keyed by app, polled by
//! one thread), never one per failure. A success resets the count, and so
//! does any operation an operator asks for (its end clears the app's
//! pending retry). A paused app ([`super::pause`]) keeps its pending retry
//! but it is not started until the app is resumed.
//!
//! Kept in memory only: a daemon restart, or a new leader, forgets
//! pending retries and counts (a daemon that stops leading forgets its
//! own), so it never retries more than `retries` times after one failure
//! and never retries forever across restarts; an app left failed by a
//! restart stays so until the next automatic trigger (which starts a
//! fresh count) or an operator. A first attempt that fails before its
//! work starts (its bundle unreadable, the app busy) is not retried: only
//! an apply that ran and failed is; a retry that cannot start is tried
//! again after the next delay, within the same count.
//!
//! Must not start anything an operator asked for, and never bypasses the
//! pause: every retry goes through [`Operations::start`].

use std::sync::{Arc, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::context::Inner;
use super::operations::{Operations, Start};
use super::retries::{Automatic, Pending, bounded, humanize};
use crate::model::{AppName, ApplyRequest, RetryPolicy};
use crate::store::{Finish, Outcome};

/// How often the thread looks for a retry that is due.
const CHECK: Duration = Duration::from_millis(250);

/// How a retry's note begins.
pub(crate) const RETRY_NOTE: &str = "retry ";

/// Before an automatic apply of `app` starts (`flags`, `note`): remember
/// it, so that its end decides on a retry. Only the first registration of
/// an attempt counts (a retry registers itself with its origin first).
pub(crate) fn starting(inner: &Inner, app: &AppName, flags: &ApplyRequest, note: &str) {
    inner
        .work
        .retries
        .running()
        .entry(app.to_string())
        .or_insert_with(|| Automatic {
            flags: flags.clone(),
            origin: note.to_owned(),
        });
}

/// An automatic apply of `app` could not start: forget it.
pub(crate) fn not_started(inner: &Inner, app: &AppName) {
    inner.work.retries.running().remove(app.as_str());
}

/// When an operation of `app` ends, before its end is recorded: an
/// automatic apply that failed gets a retry scheduled (and its message
/// says when) or, with none left, a message saying so; one that
/// succeeded, and any operation a person asked for (`automatic` false),
/// clears the app's retries. `policy` is read only when needed.
pub(crate) fn ending<O: Operations>(
    ops: &O,
    app: &AppName,
    automatic: bool,
    finish: &mut Finish,
    policy: impl FnOnce() -> Option<RetryPolicy>,
) {
    let inner = ops.shared();
    let retries = &inner.work.retries;
    let started = if automatic {
        retries.running().remove(app.as_str())
    } else {
        None
    };
    let Some(what) = started else {
        if !automatic && retries.pending().remove(app.as_str()).is_some() {
            tracing::info!(target: "capstan::audit", app = %app,
                "an operator's operation ended: the app's automatic retries start over");
        }
        return;
    };
    if finish.outcome != Outcome::Failed {
        // Succeeded, aborted by an operator, or handed over: no retry.
        if retries.pending().remove(app.as_str()).is_some() && finish.outcome == Outcome::Succeeded
        {
            tracing::info!(target: "capstan::audit", app = %app, "automatic retry succeeded");
        }
        return;
    }
    let Some(policy) = policy() else {
        retries.pending().remove(app.as_str());
        return;
    };
    let error = bounded(finish.message.as_deref().unwrap_or("failed"));
    let mut pending = retries.pending();
    let done = pending.get(app.as_str()).map_or(0, |p| p.started);
    let added = if done < policy.retries {
        let next = done + 1;
        let delay = policy.delay_with_jitter(next, jitter());
        pending.insert(
            app.to_string(),
            Pending {
                what,
                started: done,
                due: Some(Instant::now() + delay),
                error,
            },
        );
        tracing::warn!(target: "capstan::audit", app = %app, retry = next, of = policy.retries,
            in_secs = delay.as_secs(), "automatic operation failed; retry scheduled");
        if !retries
            .thread
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            spawn(ops);
        }
        format!("retry {next} of {} in {}", policy.retries, humanize(delay))
    } else {
        pending.remove(app.as_str());
        inner.work.metrics.automatic_retries_exhausted();
        tracing::warn!(target: "capstan::audit", app = %app, retries = policy.retries,
            "automatic operation failed; retries exhausted");
        if policy.retries == 0 {
            "no automatic retry (retries: 0); the app stays failed until an operator acts".into()
        } else {
            format!(
                "automatic retries exhausted ({0} of {0}); the app stays failed until an operator acts",
                policy.retries
            )
        }
    };
    let message = match finish.message.take() {
        Some(message) => format!("{message}; {added}"),
        None => added,
    };
    finish.message = Some(message);
}

/// Starts the thread that starts due retries; it ends when the lifecycle
/// is dropped.
fn spawn<O: Operations>(ops: &O) {
    let weak = Arc::downgrade(ops.shared());
    let started = std::thread::Builder::new()
        .name("capstan-retry".into())
        .spawn(move || run::<O>(weak));
    if let Err(e) = started {
        tracing::error!(error = %e, "could not start the retry thread");
    }
}

fn run<O: Operations>(weak: Weak<Inner>) {
    loop {
        std::thread::sleep(CHECK);
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let ops = O::of(inner);
        if ops.may_work() {
            start_due(&ops);
        } else {
            // A follower starts nothing, and forgets what it would have:
            // the leader decides (module doc: kept in memory only).
            ops.shared().work.retries.pending().clear();
            ops.shared().work.retries.running().clear();
        }
    }
}

/// Starts every retry that is due, unless its app is paused (it waits for
/// `app resume`) or busy (it waits for the operation to end).
pub(super) fn start_due(ops: &impl Operations) {
    let shared = ops.shared();
    let now = Instant::now();
    let due: Vec<(String, Pending)> = shared
        .work
        .retries
        .pending()
        .iter()
        .filter(|(_, p)| p.due.is_some_and(|due| due <= now))
        .map(|(app, p)| (app.clone(), p.clone()))
        .collect();
    for (app, pending) in due {
        let Ok(name) = AppName::new(&app) else {
            shared.work.retries.pending().remove(&app);
            continue;
        };
        if super::pause::automatic_paused(shared, &name).is_some()
            || shared
                .work
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains_key(&app)
        {
            continue;
        }
        let Ok(version) = ops.active_version(&name) else {
            shared.work.retries.pending().remove(&app);
            continue;
        };
        let total = version.metadata.retry_policy().retries;
        let attempt = pending.started + 1;
        if attempt > total {
            shared.work.retries.pending().remove(&app);
            continue;
        }
        let note = format!(
            "{RETRY_NOTE}{attempt} of {total} after {}; {}",
            pending.error, pending.what.origin
        );
        if let Some(entry) = shared.work.retries.pending().get_mut(&app) {
            entry.started = attempt;
            entry.due = None;
        }
        starting(shared, &name, &pending.what.flags, &pending.what.origin);
        let started = ops.start(
            &name,
            Start::Apply {
                flags: pending.what.flags.clone(),
                note: Some(note),
                resumes: 0,
            },
        );
        match started {
            Ok(started) => {
                shared.work.metrics.automatic_retry();
                tracing::info!(target: "capstan::audit", app = %app, retry = attempt, of = total,
                    operation = started.operation.0, "automatic retry started");
            }
            Err(e) => {
                not_started(shared, &name);
                let mut all = shared.work.retries.pending();
                if matches!(e, super::Error::AutomaticPaused { .. }) {
                    // Paused between the check and the start: wait again.
                    if let Some(entry) = all.get_mut(&app) {
                        entry.started = pending.started;
                        entry.due = Some(Instant::now());
                    }
                    continue;
                }
                tracing::warn!(target: "capstan::audit", app = %app, error = %e.one_line(),
                    "automatic retry could not start");
                let policy = version.metadata.retry_policy();
                match all.get_mut(&app) {
                    Some(entry) if attempt < total => {
                        entry.error = bounded(&e.one_line());
                        entry.due = Some(Instant::now() + policy.delay(attempt + 1));
                    }
                    _ => {
                        all.remove(&app);
                    }
                }
            }
        }
    }
}

/// A number from 0.0 to 1.0, at random.
fn jitter() -> f64 {
    f64::from(rand_core::RngCore::next_u32(&mut rand_core::OsRng)) / f64::from(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_is_between_zero_and_one() {
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..=1.0).contains(&j), "{j}");
        }
    }
}
