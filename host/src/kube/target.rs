//! The seam between the plan and the world: a target applies a plan for a
//! release, removes a release, and tells what it applied last.

use std::fmt;

use super::Error;
use super::manifest::Resource;
use super::plan::ApplyPlan;
use crate::model::ObjectRef;

/// One chart of one app, as applied: the unit a target records.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Release {
    /// The app's name.
    pub app: String,
    /// The chart's name within the app.
    pub chart: String,
    /// The namespace the chart is released into (objects that name none
    /// go there on a cluster).
    pub namespace: String,
    /// The Helm release name (`.Release.Name` when rendering).
    pub release_name: String,
}

impl fmt::Display for Release {
    /// `app/chart`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.app, self.chart)
    }
}

/// What a target did for one apply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Applied {
    /// The objects applied, in the order they were applied.
    pub applied: Vec<ObjectRef>,
    /// The objects pruned, in the order they were removed.
    pub pruned: Vec<ObjectRef>,
    /// How many applied objects were unchanged from the last apply.
    pub unchanged: usize,
}

/// Where releases are applied: a cluster, or a directory standing in for
/// one ([`super::DirTarget`]).
///
/// A target is a thin I/O step: it carries out what the pure plan
/// ([`super::plan_apply`], [`super::plan_remove`]) decided and keeps its
/// own record of what it applied per release, which is what
/// [`ApplyTarget::applied`] returns and the next plan is computed against.
///
/// What targets do not do: they never wait for objects to become ready,
/// never retry a failed step (the caller decides, with its own deadline),
/// never reorder or filter the plan, and never decide whether an app may
/// be applied. A call is synchronous and may block on I/O; the daemon runs
/// it on a blocking thread. The caller runs one operation per app at a
/// time; targets do not lock releases against each other.
pub trait ApplyTarget: Send + Sync {
    /// Applies `plan` for `release`: every object of
    /// [`ApplyPlan::to_apply`] in order, then removes every object of
    /// [`ApplyPlan::to_prune`] in order, then records `to_apply` as what is
    /// applied.
    ///
    /// The plan should have been made against [`ApplyTarget::applied`] of
    /// the same release; a target does not check that it was.
    ///
    /// # Errors
    /// The step that failed, naming the release. Objects applied before
    /// the failure stay applied; a cluster target records what it applied
    /// so a re-apply or a remove finds it.
    fn apply(&self, release: &Release, plan: &ApplyPlan) -> Result<Applied, Error>;

    /// Removes everything recorded for `release`, in removal order
    /// ([`super::plan_remove`]), and forgets the record. Removing a
    /// release that has no record does nothing and succeeds, so a failed
    /// remove can be repeated.
    ///
    /// Returns the objects removed, in order. Does not wait for them to be
    /// gone (finalizers may hold them on a cluster).
    ///
    /// # Errors
    /// The step that failed, naming the release; the record keeps what
    /// was not removed.
    fn remove(&self, release: &Release) -> Result<Vec<ObjectRef>, Error>;

    /// The objects recorded as applied for `release` in their applied
    /// order; empty when nothing is. This is the target's record of its
    /// last apply, not the live state of a cluster.
    ///
    /// # Errors
    /// When the record cannot be read or parsed.
    fn applied(&self, release: &Release) -> Result<Vec<Resource>, Error>;
}
