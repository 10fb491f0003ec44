//! The bound on operations running at once, across all apps.
//!
//! Each app runs at most one operation (the store's transitional states
//! refuse a second), but nothing else limited how many apps run one: an
//! operation holds its version's charts, their rendered objects (up to
//! the render limit's 64 MiB per chart) and the plugins' answers until
//! its apply ends, so a controller that applies fifty apps at once took
//! fifty times that. [`Slots`] admits at most `max` operations; the
//! others wait in the order they were started, each on its own thread,
//! with the app in its transitional state and its progress saying it is
//! queued. The request that started one has already had its `202`: a
//! platform controller polls the operation as it always does, and no
//! client has to retry a refusal.
//!
//! A queued operation that is aborted leaves the queue at once (its work
//! then stops at its first step). A slot is held for the whole
//! operation, readiness waits included, because the rendered objects are
//! held until they are applied.
//!
//! Must not touch the store or the target: it only counts.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::store::OperationId;

/// Default of `capstan serve --max-operations`: operations running at
/// once across all apps. Four keep two cores busy rendering while others
/// wait for readiness, and bound the rendered objects held in memory to
/// four operations' worth.
pub const DEFAULT_MAX_OPERATIONS: usize = 4;

/// How often a queued operation looks at its abort flag.
const ABORT_POLL: Duration = Duration::from_millis(100);

/// Operations running and waiting; see the module doc.
#[derive(Debug)]
pub(crate) struct Slots {
    max: usize,
    queue: Mutex<Queue>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct Queue {
    running: usize,
    waiting: VecDeque<OperationId>,
}

/// A held slot; dropping it frees the slot for the next in line.
#[derive(Debug)]
pub(crate) struct Slot<'a> {
    slots: &'a Slots,
}

/// How many operations run, wait, and may run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotCounts {
    /// Operations holding a slot.
    pub running: usize,
    /// Operations waiting for one.
    pub queued: usize,
    /// Slots (`--max-operations`).
    pub max: usize,
}

impl Slots {
    /// `max` slots (at least one).
    pub fn new(max: usize) -> Self {
        Slots {
            max: max.max(1),
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a slot for `op`, waiting behind the operations that asked
    /// first. `queued` is called once, with how many run and wait ahead,
    /// when `op` must wait. Returns the slot, or `None` as soon as `abort`
    /// is set while waiting (the operation then holds no slot).
    ///
    /// Adds no timeout: an operation waits as long as those ahead run.
    pub fn acquire(
        &self,
        op: OperationId,
        abort: &AtomicBool,
        queued: impl FnOnce(SlotCounts),
    ) -> Option<Slot<'_>> {
        let mut queue = self.lock();
        if queue.running < self.max && queue.waiting.is_empty() {
            queue.running += 1;
            return Some(Slot { slots: self });
        }
        queue.waiting.push_back(op);
        let counts = SlotCounts {
            running: queue.running,
            queued: queue.waiting.len(),
            max: self.max,
        };
        drop(queue);
        queued(counts);
        let mut queue = self.lock();
        loop {
            if abort.load(Ordering::SeqCst) {
                queue.waiting.retain(|waiting| *waiting != op);
                drop(queue);
                self.changed.notify_all();
                return None;
            }
            if queue.running < self.max && queue.waiting.front() == Some(&op) {
                queue.waiting.pop_front();
                queue.running += 1;
                drop(queue);
                // The next in line may fit too.
                self.changed.notify_all();
                return Some(Slot { slots: self });
            }
            queue = self
                .changed
                .wait_timeout(queue, ABORT_POLL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The counts now.
    pub fn counts(&self) -> SlotCounts {
        let queue = self.lock();
        SlotCounts {
            running: queue.running,
            queued: queue.waiting.len(),
            max: self.max,
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut queue = self.slots.lock();
        queue.running = queue.running.saturating_sub(1);
        drop(queue);
        self.slots.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn at_most_max_run_and_the_rest_start_in_order() {
        let slots = Arc::new(Slots::new(2));
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let order = Arc::new(Mutex::new(Vec::new()));
        let never = Arc::new(AtomicBool::new(false));
        // Two hold their slots until released, so the rest must queue.
        let first = slots.acquire(OperationId(1), &never, |_| panic!("had to wait"));
        let second = slots.acquire(OperationId(2), &never, |_| panic!("had to wait"));
        let mut threads = Vec::new();
        for id in 3..8 {
            let (mine, running, peak, order, never) = (
                slots.clone(),
                running.clone(),
                peak.clone(),
                order.clone(),
                never.clone(),
            );
            threads.push(std::thread::spawn(move || {
                let mut told = None;
                let slot = mine.acquire(OperationId(id), &never, |c| told = Some(c));
                assert!(slot.is_some());
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                order.lock().unwrap().push(id);
                std::thread::sleep(Duration::from_millis(20));
                running.fetch_sub(1, Ordering::SeqCst);
                told
            }));
            // Queued one after another, in id order.
            while slots.counts().queued < usize::try_from(id - 2).unwrap() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        assert_eq!(
            slots.counts(),
            SlotCounts {
                running: 2,
                queued: 5,
                max: 2
            }
        );
        // One slot comes free, so the queue goes through it one at a time:
        // the order the waiters record is the order they were granted it
        // (with two free at once, two holders race to record theirs).
        drop(first);
        for thread in threads {
            let told = thread.join().unwrap().expect("queued");
            assert_eq!(told.max, 2);
        }
        assert_eq!(peak.load(Ordering::SeqCst), 1);
        assert_eq!(*order.lock().unwrap(), vec![3, 4, 5, 6, 7]);
        assert_eq!(slots.counts().running, 1);
        drop(second);
        assert_eq!(slots.counts().running, 0);
    }

    #[test]
    fn an_aborted_operation_leaves_the_queue() {
        let slots = Arc::new(Slots::new(1));
        let never = AtomicBool::new(false);
        let held = slots.acquire(OperationId(1), &never, |_| {});
        let abort = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (slots, abort) = (slots.clone(), abort.clone());
            std::thread::spawn(move || slots.acquire(OperationId(2), &abort, |_| {}).is_none())
        };
        while slots.counts().queued == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        abort.store(true, Ordering::SeqCst);
        assert!(waiter.join().unwrap());
        assert_eq!(slots.counts().queued, 0);
        drop(held);
        assert!(
            slots
                .acquire(OperationId(3), &never, |_| panic!("had to wait"))
                .is_some()
        );
    }
}
