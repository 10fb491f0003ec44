//! The read-only view of a cluster ([`ClusterView`]): live objects, the
//! kinds served and their scopes, collection versions and waiting for a
//! change, and the drift of applied releases' objects as the watches see
//! it. It is what facts, a connected render's `lookup` and `.Capabilities`,
//! plugin actions' reads and drift detection read, apart from the
//! release writes of [`super::ApplyTarget`].
//!
//! Why apart: a read belongs to no release, so it needs none of the
//! release side's machinery (tenancy's impersonation, inventories,
//! readiness), and a reader handed an `Arc<dyn ClusterView>` cannot write.
//! A target hands out its view with [`super::ApplyTarget::view`], so the
//! reads and the writes of one daemon always see the same cluster (or
//! folder).
//!
//! Whose identity a read uses: the daemon's own. The cluster target reads
//! over its own connection; the tenancy target
//! ([`super::cluster::tenancy::TenantTarget`]) hands out the view of its
//! base connection, never an impersonated one; the directory target reads
//! its folder.
//!
//! Must not touch: anything that writes. No method of this trait creates,
//! patches or deletes an object, or records anything.

use std::time::Duration;

use super::Error;
use crate::model::{LookupQuery, Served, WatchEnd, WatchFrom};

/// Reads of what a target holds now, for callers that never write (see
/// the module doc). A call is synchronous and may block on I/O, as
/// [`super::ApplyTarget`]'s do; the daemon runs it on a blocking thread.
///
/// [`ClusterView::kind_scope`] and [`ClusterView::read_live`] have no
/// default: every view answers them from what it holds, so no view can
/// answer "nothing there" by omission. The other methods default to what
/// a target that is no API server answers (serves nothing of its own,
/// cannot watch); their callers handle those answers.
pub trait ClusterView: Send + Sync {
    /// Whether `kind` of `api_version` lives in a namespace on this
    /// target: `Some(true)`, `Some(false)` for a cluster-scoped kind, or
    /// `None` when the target serves no such kind.
    ///
    /// # Errors
    /// When the target cannot be asked (a cluster's discovery fails).
    fn kind_scope(&self, api_version: &str, kind: &str) -> Result<Option<bool>, Error>;

    /// A read for a connected render's `lookup`, after the policy allowed
    /// it: the object as the target holds it (an empty object when it
    /// holds none), or for an empty name the list object with `items`.
    ///
    /// # Errors
    /// When the read fails.
    fn read_live(&self, query: &LookupQuery) -> Result<serde_json::Value, Error>;

    /// What the target serves, for a connected render's `.Capabilities`
    /// (the server's version and API versions); `None`, the default, for
    /// a target that is not an API server.
    ///
    /// # Errors
    /// When the server cannot be asked.
    fn served(&self) -> Result<Option<Served>, Error> {
        Ok(None)
    }

    /// The version of `query`'s collection now, for a watch that must see
    /// every change after this moment (what discovery serves changes
    /// with CRDs and APIServices, read after this). `None`, the default,
    /// for a target that cannot watch.
    ///
    /// # Errors
    /// When the read fails.
    fn collection_version(&self, query: &LookupQuery) -> Result<Option<String>, Error> {
        let _ = query;
        Ok(None)
    }

    /// Waits, at most `timeout`, until something read as of `from` has
    /// changed. [`WatchEnd::Unsupported`], the default, for a target that
    /// cannot watch: the caller polls instead.
    ///
    /// # Errors
    /// When a watch cannot be started or breaks off; the caller reads
    /// again after a pause.
    fn wait_for_change(&self, from: &[WatchFrom], timeout: Duration) -> Result<WatchEnd, Error> {
        let _ = (from, timeout);
        Ok(WatchEnd::Unsupported)
    }

    /// Whether this target watches for drift ([`ClusterView::follow`]);
    /// `false`, the default, for a target that cannot watch, so the
    /// daemon runs no drift loop for it.
    fn watches_drift(&self) -> bool {
        false
    }

    /// Follows `release`'s live objects for drift (its inventory as the
    /// target holds it): `held` is the fields capstan held on each after
    /// the apply ([`super::Applied::held`]; an object left out is read
    /// once), `policy` the fields given away. Replaces what was followed
    /// of the release. Does nothing, the default, on a target that
    /// cannot watch.
    ///
    /// # Errors
    /// When the release's record cannot be read.
    fn follow(
        &self,
        release: &super::Release,
        held: &[(crate::model::ObjectRef, super::managed::FieldSet)],
        policy: &crate::model::FieldPolicy,
    ) -> Result<(), Error> {
        let _ = (release, held, policy);
        Ok(())
    }

    /// Stops following `release` (removed). The default does nothing.
    fn unfollow(&self, release: &super::Release) {
        let _ = release;
    }

    /// The drift the watches saw on `release`'s objects since capstan
    /// applied them; `None`, the default, for a target that cannot
    /// watch.
    fn drift(&self, release: &super::Release) -> Option<Vec<crate::model::ObjectDrift>> {
        let _ = release;
        None
    }

    /// Waits, at most `timeout`, until some followed object's drift
    /// changed since generation `seen`; the generation now. The default
    /// sleeps for `timeout` and answers `seen`.
    fn wait_drift(&self, seen: u64, timeout: Duration) -> u64 {
        std::thread::sleep(timeout);
        seen
    }
}
