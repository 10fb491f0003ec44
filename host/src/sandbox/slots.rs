//! Admission to the instance pool: which calls may hold a component
//! instance at once.
//!
//! The engine's pooling allocator has room for [`Policy::get_pool_size`]
//! component instances; a call past it would fail to instantiate with
//! wasmtime's own error. Every call therefore takes a [`Slot`] first: at most
//! `capacity` slots are held at once, and at most `per_app` of them by one
//! app (the owner the caller names), so one app's sleeping or spinning
//! plugins cannot starve the others. A call waits for a slot only until its
//! own deadline (the deadline covers waiting and running), or until it is
//! aborted; a slot is given back when its call's store is gone.
//!
//! Owns the counting only; it never touches wasmtime.
//!
//! [`Policy::get_pool_size`]: super::Policy::get_pool_size

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How often a waiting call looks at its abort flag.
const ABORT_POLL: Duration = Duration::from_millis(5);

/// The slots of one sandbox.
#[derive(Debug)]
pub(crate) struct Slots {
    capacity: usize,
    per_app: usize,
    state: Mutex<Held>,
    freed: Condvar,
}

/// What is held now.
#[derive(Debug, Default)]
struct Held {
    total: usize,
    /// Slots held by each app. An app's entry stays at zero when it gives
    /// its last slot back (its next call then needs no new entry); entries
    /// at zero are dropped once there are more than twice `capacity`
    /// entries, so the map stays bounded by the pool, not by the apps seen.
    by_app: HashMap<String, usize>,
    /// Calls waiting for a slot: a freed slot wakes them only when there
    /// are some (waking costs a system call even when nobody waits).
    waiting: usize,
}

/// Why no slot was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// None came free for this app before the deadline.
    Exhausted,
    /// The call's abort flag was raised while it waited.
    Aborted,
}

/// A held slot; dropping it gives it back and wakes the waiters.
#[derive(Debug)]
pub(crate) struct Slot<'a> {
    slots: &'a Slots,
    app: &'a str,
}

impl Slots {
    /// `capacity` slots in all (at least 1), at most `per_app` (at least 1,
    /// at most `capacity`) for one app.
    pub(crate) fn new(capacity: usize, per_app: usize) -> Slots {
        let capacity = capacity.max(1);
        Slots {
            capacity,
            per_app: per_app.clamp(1, capacity),
            state: Mutex::new(Held::default()),
            freed: Condvar::new(),
        }
    }

    /// How many slots are held now, in all.
    pub(crate) fn in_use(&self) -> usize {
        self.lock().total
    }

    /// Takes a slot for `app`, waiting until `until` at the latest while the
    /// pool is full or `app` holds its share.
    pub(crate) fn acquire<'a>(
        &'a self,
        app: &'a str,
        until: Instant,
        abort: Option<&AtomicBool>,
    ) -> Result<Slot<'a>, Refused> {
        let aborted = || abort.is_some_and(|flag| flag.load(Ordering::SeqCst));
        let mut held = self.lock();
        loop {
            if aborted() {
                return Err(Refused::Aborted);
            }
            let mine = held.by_app.get(app).copied().unwrap_or(0);
            if held.total < self.capacity && mine < self.per_app {
                held.total += 1;
                match held.by_app.get_mut(app) {
                    Some(count) => *count += 1,
                    None => {
                        if held.by_app.len() >= 2 * self.capacity {
                            held.by_app.retain(|_, count| *count > 0);
                        }
                        held.by_app.insert(app.to_owned(), 1);
                    }
                }
                return Ok(Slot { slots: self, app });
            }
            let now = Instant::now();
            if now >= until {
                return Err(Refused::Exhausted);
            }
            let mut wait = until - now;
            if abort.is_some() {
                wait = wait.min(ABORT_POLL);
            }
            held.waiting += 1;
            held = self
                .freed
                .wait_timeout(held, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            held.waiting = held.waiting.saturating_sub(1);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut held = self.slots.lock();
        held.total = held.total.saturating_sub(1);
        if let Some(count) = held.by_app.get_mut(self.app) {
            *count = count.saturating_sub(1);
        }
        let waiting = held.waiting > 0;
        drop(held);
        // Waiters may be of other apps than the one that freed a slot.
        if waiting {
            self.slots.freed.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn soon() -> Instant {
        Instant::now() + Duration::from_millis(30)
    }

    #[test]
    fn at_most_capacity_slots_are_held_and_a_freed_one_is_given_again() {
        let slots = Slots::new(2, 2);
        let a = slots.acquire("a", soon(), None).unwrap();
        let b = slots.acquire("b", soon(), None).unwrap();
        assert_eq!(slots.in_use(), 2);
        assert_eq!(
            slots.acquire("c", soon(), None).unwrap_err(),
            Refused::Exhausted
        );
        drop(a);
        assert_eq!(slots.in_use(), 1);
        let c = slots.acquire("c", soon(), None).unwrap();
        drop((b, c));
        assert_eq!(slots.in_use(), 0);
        assert!(
            slots.lock().by_app.values().all(|count| *count == 0),
            "no app keeps a slot"
        );
    }

    #[test]
    fn the_counts_stay_bounded_by_the_pool_not_by_the_apps_seen() {
        let slots = Slots::new(2, 1);
        let held = slots.acquire("kept", soon(), None).unwrap();
        let names: Vec<String> = (0..100).map(|i| format!("app-{i}")).collect();
        for name in &names {
            drop(slots.acquire(name, soon(), None).unwrap());
            assert!(slots.lock().by_app.len() <= 5, "{:?}", slots.lock().by_app);
        }
        assert_eq!(
            slots.lock().by_app.get("kept"),
            Some(&1),
            "a holder's count is kept"
        );
        drop(held);
        assert_eq!(slots.lock().waiting, 0);
    }

    #[test]
    fn one_app_holds_at_most_its_share_while_others_still_get_slots() {
        let slots = Slots::new(4, 2);
        let _a1 = slots.acquire("a", soon(), None).unwrap();
        let _a2 = slots.acquire("a", soon(), None).unwrap();
        assert_eq!(
            slots.acquire("a", soon(), None).unwrap_err(),
            Refused::Exhausted,
            "a third slot for one app is past its share"
        );
        let _b1 = slots.acquire("b", soon(), None).unwrap();
        let _b2 = slots.acquire("b", soon(), None).unwrap();
        assert_eq!(slots.in_use(), 4);
    }

    #[test]
    fn a_waiter_gets_the_slot_freed_before_its_deadline_and_not_before() {
        let slots = Slots::new(1, 1);
        let held = slots.acquire("a", soon(), None).unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let started = Instant::now();
                let slot = slots.acquire("b", started + Duration::from_secs(60), None);
                (slot.map(drop), started.elapsed())
            });
            std::thread::sleep(Duration::from_millis(50));
            drop(held);
            let (got, waited) = waiter.join().unwrap();
            assert_eq!(got, Ok(()));
            assert!(waited >= Duration::from_millis(40), "{waited:?}");
            assert!(waited < Duration::from_secs(60), "{waited:?}");
        });
    }

    #[test]
    fn a_waiter_gives_up_at_its_deadline_not_earlier() {
        let slots = Slots::new(1, 1);
        let _held = slots.acquire("a", soon(), None).unwrap();
        let started = Instant::now();
        let deadline = Duration::from_millis(60);
        let refused = slots.acquire("b", started + deadline, None).unwrap_err();
        assert_eq!(refused, Refused::Exhausted);
        assert!(started.elapsed() >= deadline, "{:?}", started.elapsed());
    }

    #[test]
    fn an_abort_ends_the_wait() {
        let slots = Slots::new(1, 1);
        let held = slots.acquire("a", soon(), None).unwrap();
        let flag = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                slots
                    .acquire("b", Instant::now() + Duration::from_secs(60), Some(&flag))
                    .map(drop)
            });
            std::thread::sleep(Duration::from_millis(20));
            flag.store(true, Ordering::SeqCst);
            assert_eq!(waiter.join().unwrap(), Err(Refused::Aborted));
        });
        drop(held);
        assert_eq!(
            slots.acquire("a", soon(), Some(&flag)).unwrap_err(),
            Refused::Aborted,
            "an aborted call takes no slot even when one is free"
        );
    }

    #[test]
    fn sizes_are_at_least_one_and_the_share_at_most_the_pool() {
        let slots = Slots::new(0, 0);
        assert_eq!((slots.capacity, slots.per_app), (1, 1));
        let slots = Slots::new(2, 8);
        assert_eq!(slots.per_app, 2);
    }
}
