//! Owns the lifecycle's side of running as one of several replicas
//! (cluster mode): whether this daemon may start work, and what it does
//! when it starts or stops leading.
//!
//! The election itself is [`crate::kube::cluster::lease`]'s; this module
//! only watches its answer ([`Leading`]). A daemon opened with one does
//! not reconcile at open: it follows (serves reads, refuses work) until it
//! leads, then reconciles the shared store — moving what the old leader
//! left in a transitional state to its failed state with the reason — and
//! only then starts work, first resuming what the old leader left running
//! ([`super::resume`]).
//! When it stops leading (a renewal missed for the renew deadline), it
//! stops starting work at once; an operation already running has its next
//! store write refused (the store's gate, and the new leader's writes
//! fence it), so it ends there.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::operations::Operations;

pub trait Leading: Send + Sync {
    /// Whether this daemon leads now.
    fn leads(&self) -> bool;
    /// Who leads, as last seen (this daemon's identity when it leads).
    fn leader(&self) -> Option<String>;
}

impl Leading for crate::kube::cluster::lease::Leadership {
    fn leads(&self) -> bool {
        self.is_leader()
    }

    fn leader(&self) -> Option<String> {
        self.holder()
    }
}

/// This daemon's part, for the API and the status page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The only daemon on its state (no election).
    Single,
    /// It leads, and has reconciled the state since it began to.
    Leader,
    /// Another leads (named when known), or this one has not finished
    /// taking over.
    Follower {
        /// The leader's identity, when known.
        leader: Option<String>,
    },
}

impl Role {
    /// Whether this daemon may start operations and write state.
    pub fn may_work(&self) -> bool {
        !matches!(self, Role::Follower { .. })
    }
}

/// The election's answer and whether this daemon has taken over.
const LOOK: Duration = Duration::from_millis(100);

/// Starts watching the election, when `ops` takes part in one.
pub(super) fn spawn<O: Operations>(ops: &O) {
    if ops.shared().cluster.leadership.is_none() {
        return;
    }
    let weak = Arc::downgrade(ops.shared());
    let started = std::thread::Builder::new()
        .name("capstan-leading".into())
        .spawn(move || watch::<O>(weak));
    if let Err(e) = started {
        tracing::error!(error = %e, "could not watch the election");
    }
}

fn watch<O: Operations>(weak: std::sync::Weak<super::context::Inner>) {
    loop {
        std::thread::sleep(LOOK);
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let lifecycle = O::of(inner);
        let Some(leadership) = &lifecycle.shared().cluster.leadership else {
            return;
        };
        let leads = leadership.election.leads();
        let working = leadership.working.load(Ordering::SeqCst);
        let fenced = lifecycle.shared().services.store.fenced();
        if leads && (!working || fenced) {
            // Taking over (or re-reading after another writer's write):
            // what the last leader left running is reconciled first.
            match lifecycle.reconcile() {
                Ok(moved) => {
                    leadership.working.store(true, Ordering::SeqCst);
                    tracing::info!(target: "capstan::lease", "leading: state reconciled, work starts");
                    super::resume::resume(&lifecycle, &moved);
                }
                Err(e) => {
                    tracing::warn!(target: "capstan::lease", error = %e.one_line(), "leading, but reconciling the state failed; trying again");
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        } else if !leads && working {
            leadership.working.store(false, Ordering::SeqCst);
            tracing::warn!(target: "capstan::lease", "no longer leading: no new work starts");
        }
    }
}
