//! The seam between the plan and the world: a target applies a plan for a
//! release, removes a release, and tells what it applied last; it can be
//! asked first whether it would accept a set of objects
//! ([`ApplyTarget::admit`]), so a caller refuses before writing.

use std::fmt;
use std::time::Duration;

use super::Error;
use super::hooks::HookEvent;
use super::live_diff::LiveDiff;
use super::manifest::Resource;
use super::plan::ApplyPlan;
use crate::model::{LookupQuery, ObjectRef, Served, WatchEnd, WatchFrom};

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

    /// How this target writes objects, as the store's inventory copy
    /// records it: `server-side-apply` on a cluster (field manager
    /// `capstan`), `file` for the directory target (the default).
    fn apply_method(&self) -> &'static str {
        "file"
    }

    /// The release's revision as the target records it (the release
    /// Secret's on a cluster): how many applies changed something. `None`
    /// (the default) when the target keeps no revision or has no record of
    /// the release; the lifecycle then counts with the store's copy.
    ///
    /// # Errors
    /// When the record cannot be read or parsed.
    fn revision(&self, release: &Release) -> Result<Option<u64>, Error> {
        let _ = release;
        Ok(None)
    }

    /// Whether `kind` of `api_version` lives in a namespace on this
    /// target: `Some(true)`, `Some(false)` for a cluster-scoped kind, or
    /// `None` when the target serves no such kind. The default knows the
    /// built-in kinds ([`super::scope::builtin_scope`]), serves no other
    /// kind of a built-in group, and takes a kind of any other group for
    /// a namespaced one.
    ///
    /// # Errors
    /// When the target cannot be asked (a cluster's discovery fails).
    fn kind_scope(&self, api_version: &str, kind: &str) -> Result<Option<bool>, Error> {
        let group = super::scope::group_of(api_version);
        Ok(match super::scope::builtin_scope(group, kind) {
            Some(namespaced) => Some(namespaced),
            None if super::scope::is_builtin_group(group) => None,
            None => Some(true),
        })
    }

    /// A read for a connected render's `lookup`, after the policy allowed
    /// it: the object as the target holds it (an empty object when it
    /// holds none), or for an empty name the list object with `items`.
    /// The default holds nothing.
    ///
    /// # Errors
    /// When the read fails.
    fn read_live(&self, query: &LookupQuery) -> Result<serde_json::Value, Error> {
        Ok(match query.name.is_empty() {
            true => serde_json::json!({
                "apiVersion": query.api_version,
                "kind": format!("{}List", query.kind),
                "metadata": {},
                "items": [],
            }),
            false => serde_json::json!({}),
        })
    }

    /// What the target serves, for a connected render's `.Capabilities`
    /// (the server's version and API versions); `None`, the default, for
    /// a target that is not an API server.
    ///
    /// # Errors
    /// When the server cannot be asked.
    fn served(&self) -> Result<Option<Served>, Error> {
        Ok(None)
    }

    /// Applies `objects` into `release` and prunes `prune` from it,
    /// leaving every other object the release holds as it is (a hook's
    /// `ensure` and `delete`). The default applies what the target holds
    /// again, whole, around them: right for a target whose
    /// [`ApplyTarget::applied`] returns whole objects (the directory
    /// target). A target that records only objects' identities (the
    /// cluster's inventory) must not re-apply them, and overrides this.
    ///
    /// # Errors
    /// As [`ApplyTarget::apply`].
    fn apply_some(
        &self,
        release: &Release,
        objects: &[Resource],
        prune: &[ObjectRef],
    ) -> Result<Applied, Error> {
        let held = self.applied(release)?;
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
        self.apply(release, &plan)
    }

    /// Checks, before anything is written, that `objects` (a plugin's
    /// answer, or any set the caller is about to apply for `release`)
    /// could be applied with `options`: what the target would refuse on
    /// [`ApplyTarget::apply_with`] is refused here, so the caller can
    /// refuse the whole answer without writing part of it. Writes
    /// nothing; passing is no promise the apply succeeds (the target
    /// may change in between). The default admits everything.
    ///
    /// The directory target refuses List kinds, invalid
    /// CustomResourceDefinitions, objects its reader could not read back
    /// and objects another release holds; a cluster target refuses a live
    /// object another release or another client owns (both unless
    /// [`ApplyOptions::adopt`] or [`ApplyOptions::take_over`] allows it).
    ///
    /// # Errors
    /// The first object refused, naming it and the rule.
    fn admit(
        &self,
        release: &Release,
        objects: &[Resource],
        options: &ApplyOptions,
    ) -> Result<(), Error> {
        let _ = (release, objects, options);
        Ok(())
    }

    /// Checks, before anything is written, that
    /// [`ApplyTarget::restart`] could restart `object` on this target.
    /// The default, for a target that runs nothing, refuses as
    /// [`ApplyTarget::restart`] does.
    ///
    /// # Errors
    /// [`Error::CannotRestart`] by default.
    fn admit_restart(&self, object: &ObjectRef) -> Result<(), Error> {
        Err(Error::CannotRestart {
            object: object.to_string(),
        })
    }

    /// Restarts the workload `object` (a Deployment, StatefulSet or
    /// DaemonSet) as `kubectl rollout restart` does: a new
    /// `kubectl.kubernetes.io/restartedAt` annotation on its Pod
    /// template, so its controller replaces the Pods in its own rolling
    /// way. The default, for a target that runs nothing, refuses.
    ///
    /// # Errors
    /// [`Error::CannotRestart`] by default; the cluster's refusal.
    fn restart(&self, object: &ObjectRef) -> Result<(), Error> {
        Err(Error::CannotRestart {
            object: object.to_string(),
        })
    }

    /// The version of `query`'s collection now, for a watch that must see
    /// every change after this moment (what discovery serves changes
    /// with CRDs and APIServices, read after this). `None`, the default,
    /// for a target that cannot watch.
    ///
    /// # Errors
    /// When the read fails.
    fn collection_version(&self, _query: &LookupQuery) -> Result<Option<String>, Error> {
        Ok(None)
    }

    /// Waits, at most `timeout`, until something read as of `from` has
    /// changed. [`WatchEnd::Unsupported`], the default, for a target that
    /// cannot watch: the caller polls instead.
    ///
    /// # Errors
    /// When a watch cannot be started or breaks off; the caller reads
    /// again after a pause.
    fn wait_for_change(&self, _from: &[WatchFrom], _timeout: Duration) -> Result<WatchEnd, Error> {
        Ok(WatchEnd::Unsupported)
    }

    /// Records `event` for the operator; nothing, the default, for a
    /// target that is not an API server. Best effort: the caller logs a
    /// failure and goes on, as client-go's event recorder does.
    ///
    /// # Errors
    /// When the server refuses or cannot be reached.
    fn record_event(&self, _event: &ReleaseEvent) -> Result<(), Error> {
        Ok(())
    }

    /// [`ApplyTarget::apply`] with the operator's options and a progress
    /// sink. A cluster target waits for readiness here (per
    /// [`ApplyOptions::timeout`]) and reports each stage, object and
    /// poll to `progress`; the default ignores both and calls
    /// [`ApplyTarget::apply`], which is right for targets with nothing to
    /// wait for (the directory target).
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
    ) -> Result<Applied, Error> {
        let _ = (options, progress);
        self.apply(release, plan)
    }

    /// [`ApplyTarget::remove`] with options and a progress sink. A
    /// cluster target waits until each deleted object is gone and names
    /// the finalizers that hold one; the default calls
    /// [`ApplyTarget::remove`].
    ///
    /// # Errors
    /// As [`ApplyTarget::remove`].
    fn remove_with(
        &self,
        release: &Release,
        options: &RemoveOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Vec<ObjectRef>, Error> {
        let _ = (options, progress);
        self.remove(release)
    }

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
    /// The default runs nothing and succeeds: right for targets that do
    /// not run workloads (the directory target).
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
    ) -> Result<Vec<ObjectRef>, Error> {
        let _ = (release, event, hooks, options, progress);
        Ok(Vec::new())
    }

    /// What applying `desired` for `release` would change, compared with
    /// the live objects rather than with [`ApplyTarget::applied`]: a
    /// cluster target dry-runs each apply on the server and compares the
    /// answer with the live object (status and server-set metadata left
    /// out, Secret values masked), and lists what the apply would prune.
    /// Unchanged objects are not listed.
    ///
    /// `None` (the default) means the target has no live state beyond its
    /// record; the caller then diffs `desired` against
    /// [`ApplyTarget::applied`] with [`super::diff`].
    ///
    /// # Errors
    /// A failing request or an unreadable record, naming the release.
    fn diff_live(
        &self,
        release: &Release,
        desired: &[Resource],
    ) -> Result<Option<Vec<LiveDiff>>, Error> {
        let _ = (release, desired);
        Ok(None)
    }
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
