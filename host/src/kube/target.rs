//! The seam between the plan and the world: a target applies a plan for a
//! release, removes a release, and tells what it applied last; it can be
//! asked first whether it would accept a set of objects
//! ([`ApplyTarget::admit`]), so a caller refuses before writing. What a
//! cluster holds now, read by callers that never write, is the target's
//! [`ClusterView`] ([`super::view`]).

use std::fmt;
use std::sync::Arc;

use super::Error;
use super::hooks::HookEvent;
use super::live_diff::LiveDiff;
use super::manifest::Resource;
use super::plan::ApplyPlan;
use super::view::ClusterView;
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

/// Something the operator should know about a release, recorded where the
/// cluster's users look ([`ApplyTarget::record_event`]): on a cluster, a
/// Kubernetes Event on the release's inventory Secret, which
/// `kubectl get events -n NAMESPACE` lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseEvent {
    /// The release it is about.
    pub release: Release,
    /// A CamelCase word a program can match (`ReapplyNeeded`).
    pub reason: String,
    /// What happened, for a person.
    pub message: String,
    /// `Warning` rather than `Normal`.
    pub warning: bool,
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
    /// The fields capstan holds on each applied object after the apply,
    /// from the server's answer (a cluster target only): the baseline
    /// the drift watcher compares later versions with
    /// ([`super::ClusterView::follow`]).
    pub held: Vec<(ObjectRef, super::managed::FieldSet)>,
}

/// Where releases are applied: a cluster, or a directory standing in for
/// one ([`super::DirTarget`]). This is the release side: writes (apply,
/// prune, remove, hooks, restarts, events), the record each release
/// keeps ([`ApplyTarget::applied`], [`ApplyTarget::revision`]) and the
/// checks made before a write ([`ApplyTarget::admit`],
/// [`ApplyTarget::diff_live`]). Reads that belong to no release (live
/// objects, served kinds, watches) are the [`ClusterView`] a target hands
/// out with [`ApplyTarget::view`].
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
///
/// No method has a default body, on purpose: every implementation writes
/// each one, so a wrapper that must route writes (tenancy's
/// [`super::cluster::tenancy::TenantTarget`], which impersonates each
/// app's ServiceAccount) cannot silently inherit a default that goes
/// around it; adding a method fails to compile until every target says
/// what it does. Targets that share a behaviour call a free function for
/// it ([`apply_some_whole`]).
///
/// ```compile_fail,E0046
/// // A target that leaves any method out does not compile.
/// struct Forgetful;
/// impl capstan::kube::ApplyTarget for Forgetful {}
/// ```
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

    /// How this target writes objects, as the store's inventory copy
    /// records it: `server-side-apply` on a cluster (field manager
    /// `capstan`), `file` for the directory target.
    fn apply_method(&self) -> &'static str;

    /// The release's revision as the target records it (the release
    /// Secret's on a cluster): how many applies changed something. `None`
    /// when the target keeps no revision (the directory target) or has no
    /// record of the release; the lifecycle then counts with the store's
    /// copy.
    ///
    /// # Errors
    /// When the record cannot be read or parsed.
    fn revision(&self, release: &Release) -> Result<Option<u64>, Error>;

    /// The read-only view of what this target holds now (live objects,
    /// served kinds, watches), for callers that never write: facts,
    /// `lookup`, drift. It sees the same cluster (or folder) as the
    /// target's writes, and reads as the daemon itself, never as an
    /// app's account (see [`super::view`]). The lifecycle takes it once,
    /// when it opens.
    fn view(&self) -> Arc<dyn ClusterView>;

    /// Applies `objects` into `release` and prunes `prune` from it,
    /// leaving every other object the release holds as it is (a hook's
    /// `ensure` and `delete`). A target whose [`ApplyTarget::applied`]
    /// returns whole objects (the directory target) applies what it holds
    /// again, whole, around them ([`apply_some_whole`]); a target that
    /// records only objects' identities (the cluster's inventory) must not
    /// re-apply them.
    ///
    /// # Errors
    /// As [`ApplyTarget::apply`].
    fn apply_some(
        &self,
        release: &Release,
        objects: &[Resource],
        prune: &[ObjectRef],
    ) -> Result<Applied, Error>;

    /// Checks, before anything is written, that `objects` (a plugin's
    /// answer, or any set the caller is about to apply for `release`)
    /// could be applied with `options`: what the target would refuse on
    /// [`ApplyTarget::apply_with`] is refused here, so the caller can
    /// refuse the whole answer without writing part of it. Writes
    /// nothing; passing is no promise the apply succeeds (the target
    /// may change in between).
    ///
    /// The directory target refuses List kinds, invalid
    /// CustomResourceDefinitions, objects its reader could not read back
    /// and objects another release holds; a cluster target refuses a live
    /// object another release or another client owns (both unless
    /// [`ApplyOptions::adopt`] or [`ApplyOptions::take_over`] allows it).
    /// It belongs to the release side although it only reads: it answers
    /// for the apply that follows, so it reads as that apply will write
    /// (as the app's ServiceAccount under tenancy).
    ///
    /// # Errors
    /// The first object refused, naming it and the rule.
    fn admit(
        &self,
        release: &Release,
        objects: &[Resource],
        options: &ApplyOptions,
    ) -> Result<(), Error>;

    /// Checks, before anything is written, that
    /// [`ApplyTarget::restart`] could restart `object` on this target. A
    /// target that runs nothing (the directory target) refuses as
    /// [`ApplyTarget::restart`] does.
    ///
    /// # Errors
    /// [`Error::CannotRestart`] from a target that runs nothing.
    fn admit_restart(&self, object: &ObjectRef) -> Result<(), Error>;

    /// Restarts the workload `object` (a Deployment, StatefulSet or
    /// DaemonSet) as `kubectl rollout restart` does: a new
    /// `kubectl.kubernetes.io/restartedAt` annotation on its Pod
    /// template, so its controller replaces the Pods in its own rolling
    /// way. A target that runs nothing refuses.
    ///
    /// # Errors
    /// [`Error::CannotRestart`] from a target that runs nothing; the
    /// cluster's refusal.
    fn restart(&self, object: &ObjectRef) -> Result<(), Error>;

    /// Records `event` for the operator; nothing for a target that is not
    /// an API server. Best effort: the caller logs a failure and goes on,
    /// as client-go's event recorder does.
    ///
    /// # Errors
    /// When the server refuses or cannot be reached.
    fn record_event(&self, event: &ReleaseEvent) -> Result<(), Error>;

    /// [`ApplyTarget::apply`] with the operator's options and a progress
    /// sink. A cluster target waits for readiness here (per
    /// [`ApplyOptions::timeout`]) and reports each stage, object and
    /// poll to `progress`; a target with nothing to wait for (the
    /// directory target) ignores the sink.
    ///
    /// # Errors
    /// As [`ApplyTarget::apply`]; a cluster target also fails on an
    /// ownership conflict (unless [`ApplyOptions::adopt`]) and on a
    /// readiness failure or timeout, naming every blocking object. The
    /// record then says which objects were applied. The directory target
    /// fails on what [`ApplyTarget::admit`] refuses, before it writes.
    fn apply_with(
        &self,
        release: &Release,
        plan: &ApplyPlan,
        options: &ApplyOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Applied, Error>;

    /// [`ApplyTarget::remove`] with options and a progress sink. A
    /// cluster target waits until each deleted object is gone and names
    /// the finalizers that hold one; the directory target calls
    /// [`ApplyTarget::remove`].
    ///
    /// # Errors
    /// As [`ApplyTarget::remove`].
    fn remove_with(
        &self,
        release: &Release,
        options: &RemoveOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Vec<ObjectRef>, Error>;

    /// Runs the Helm hooks of `event` among `hooks` (the chart's rendered
    /// hook objects, each annotated `helm.sh/hook`) for `release`, in
    /// Helm's order ([`super::hooks::hooks_for`]: weight, kind, name),
    /// one at a time: the `before-hook-creation` deletion (the default
    /// policy), the create, the wait (Jobs until Complete, Pods until
    /// Succeeded, other kinds only applied), then the `hook-succeeded` or
    /// `hook-failed` deletion. `test` hooks never run. Returns the hooks
    /// run, in order.
    ///
    /// Hook objects are not recorded as applied: [`ApplyTarget::applied`]
    /// never lists them, so they are neither pruned nor removed with the
    /// release (as in Helm).
    ///
    /// A target that does not run workloads (the directory target) runs
    /// nothing and succeeds.
    ///
    /// # Errors
    /// A failed hook fails the call, naming the hook object, the event
    /// and the cause (the Job's `Failed` condition, the Pod's reason);
    /// hooks after it do not run. Also when the wait runs past
    /// [`ApplyOptions::timeout`].
    fn run_hooks(
        &self,
        release: &Release,
        event: HookEvent,
        hooks: &[Resource],
        options: &ApplyOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Vec<ObjectRef>, Error>;

    /// What applying `desired` for `release` would change, compared with
    /// the live objects rather than with [`ApplyTarget::applied`]: a
    /// cluster target dry-runs each apply on the server and compares the
    /// answer with the live object (status and server-set metadata left
    /// out, Secret values masked), and lists what the apply would prune.
    /// Unchanged objects are not listed.
    ///
    /// `None` means the target has no live state beyond its record (the
    /// directory target); the caller then diffs `desired` against
    /// [`ApplyTarget::applied`] with [`super::diff`].
    ///
    /// Why this is on the release side and not the [`ClusterView`],
    /// though it writes nothing: it is a server-side dry-run *apply*
    /// (the API server authorizes it as the patch it would be, runs
    /// admission on it and answers with ownership as that identity would
    /// meet it) of one release against that release's inventory, so it
    /// must run as the release's writes do (as the app's ServiceAccount
    /// under tenancy) to show what the apply would really do.
    ///
    /// # Errors
    /// A failing request or an unreadable record, naming the release.
    fn diff_live(
        &self,
        release: &Release,
        desired: &[Resource],
        options: &ApplyOptions,
    ) -> Result<Option<Vec<LiveDiff>>, Error>;
}

/// [`ApplyTarget::apply_some`] for a target whose
/// [`ApplyTarget::applied`] returns whole objects (the directory
/// target): applies what `target` holds for `release` again, whole,
/// with `objects` in place of the held copies and without `prune`.
///
/// # Errors
/// As [`ApplyTarget::applied`], [`super::plan_apply`] and
/// [`ApplyTarget::apply`].
pub fn apply_some_whole(
    target: &dyn ApplyTarget,
    release: &Release,
    objects: &[Resource],
    prune: &[ObjectRef],
) -> Result<Applied, Error> {
    let held = target.applied(release)?;
    let replaced = |r: &Resource| {
        let key = r.id().key();
        objects.iter().any(|o| o.id().key() == key) || prune.iter().any(|p| p.key() == key)
    };
    let desired: Vec<Resource> = held
        .iter()
        .filter(|r| !replaced(r))
        .cloned()
        .chain(objects.iter().cloned())
        .collect();
    let plan = super::plan_apply(&held, &desired)?;
    target.apply(release, &plan)
}

/// How one apply may treat what it finds on the target. The lifecycle
/// fills it from the operator's flags and `capstan.yaml`; the default is
/// the safe choice everywhere. The directory target reads only
/// [`ApplyOptions::adopt`] and [`ApplyOptions::take_over`], for its
/// ownership check.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApplyOptions {
    /// Take over live objects this release does not own yet (`--adopt`):
    /// no ownership conflict, and their fields are applied with force.
    /// Off by default: an object of another app, or not created by
    /// capstan, is an error naming it and its owner.
    pub adopt: bool,
    /// How long the chart may take to become ready; `None` is the
    /// target's default (5 minutes on a cluster). `capstan.yaml` may set
    /// one per chart.
    pub timeout: Option<std::time::Duration>,
    /// Do not wait for readiness (stages still go in order; CRDs are
    /// still waited for until their kinds resolve).
    pub no_wait: bool,
    /// Wait for a LoadBalancer Service's address, not only its cluster
    /// IP (kstatus's and Helm 4's rule): `wait_for_load_balancer` in
    /// `capstan.yaml`, for the charts whose readiness means reachable
    /// from outside. Off by default, so a cluster without a
    /// load-balancer controller still applies such charts.
    pub wait_for_load_balancer: bool,
    /// What pruning may delete besides ordinary objects.
    pub purge: Purge,
    /// Objects the operator lets the target delete and create again when
    /// the server refuses a change as immutable (`--recreate Kind/name`),
    /// each as `Kind/name`: the kind as Kubernetes spells it (matched
    /// without regard to case, so `statefulset/db` works as with kubectl)
    /// and the object's name, in the release's namespaces. Empty by
    /// default: an immutable change is an error naming the object, the
    /// field and this option. A StatefulSet is deleted with orphan
    /// propagation, so its Pods and claims survive the recreate.
    pub recreate: Vec<String>,
    /// Releases of the same app (`APP/CHART`, as [`Release`] displays)
    /// whose objects this apply may take over without `adopt`: those of
    /// the charts an update drops or renames, which are removed after it
    /// (their removal leaves what another release took). Empty by default.
    pub take_over: Vec<String>,
    /// The revision this apply was rendered as (`.Release.Revision`): a
    /// cluster target records it in the release Secret when the apply
    /// writes or deletes something. `None` counts one up from the
    /// Secret's.
    pub revision: Option<u64>,
    /// Field ownership: whether a field another manager holds is taken
    /// back (`force`, the default) or fails the apply, and the fields
    /// neither applied nor compared (the app's `ignore` rules and those
    /// its charts' own autoscalers imply).
    pub fields: crate::model::FieldPolicy,
}

/// Objects that pruning and removal leave in place unless told otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Purge {
    /// Delete PersistentVolumeClaims too (`--purge-volumes`).
    pub volumes: bool,
    /// Delete everything: claims, CustomResourceDefinitions, Namespaces
    /// and objects annotated `helm.sh/resource-policy: keep` (`--purge`).
    pub all: bool,
}

/// How one remove may treat what it finds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoveOptions {
    /// How long deletions may take to finish; `None` is the target's
    /// default (5 minutes on a cluster).
    pub timeout: Option<std::time::Duration>,
    /// What removal may delete besides ordinary objects. By default a
    /// remove deletes everything the release applied except claims and
    /// objects annotated `helm.sh/resource-policy: keep`.
    pub purge: Purge,
}

/// What an apply did to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// It did not exist; it was created.
    Created,
    /// It existed and differed; it was written.
    Configured,
    /// A dry run showed no difference; nothing was written.
    Unchanged,
}

/// One step of an apply or remove, as it happens.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyEvent<'a> {
    /// A stage starts (`definitions (CRDs, namespaces)`, `resources`...).
    Stage {
        /// The stage's name.
        stage: &'a str,
        /// How many objects it holds.
        objects: usize,
    },
    /// One object was applied (or found unchanged).
    Applied {
        /// The object.
        object: &'a ObjectRef,
        /// What happened.
        change: Change,
    },
    /// Objects still not ready, each with its state and reason; sent at
    /// every poll while waiting.
    Waiting {
        /// The objects and why they are pending.
        pending: &'a [(ObjectRef, String)],
    },
    /// An object was deleted (prune or remove) and is confirmed gone.
    Deleted {
        /// The object.
        object: &'a ObjectRef,
    },
    /// An object was left in place and dropped from the record.
    Kept {
        /// The object.
        object: &'a ObjectRef,
        /// Why (`helm.sh/resource-policy: keep`, `a PersistentVolumeClaim`).
        reason: &'a str,
    },
}

/// Where a target reports progress. Called from the thread that called
/// the target; must not block.
pub trait ProgressSink: Send + Sync {
    /// One event.
    fn event(&self, event: &ApplyEvent<'_>);
}

/// A sink that drops every event.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl ProgressSink for NoProgress {
    fn event(&self, _event: &ApplyEvent<'_>) {}
}
