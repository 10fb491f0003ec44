//! The Kubernetes cluster target: applies releases to an API server with
//! kube-rs, as Flux's `ssa` package, kstatus and Helm 4 do, behind the
//! same [`ApplyTarget`] seam as the directory target.
//!
//! What it does, module by module:
//! - [`client`]: kubeconfig (and context) or in-cluster config; the
//!   requests (get, list, server-side apply, delete);
//! - [`discovery`]: kinds to plurals and scopes, cached per group-version;
//! - [`stages`]: CRDs and Namespaces, then classes and roles, then role
//!   bindings, then the
//!   rest in Helm's order, webhooks last;
//! - [`apply`]: server-side apply, written only when a dry run differs;
//!   ownership, also checked up front for a set of objects (`admit`);
//!   namespaces created when missing;
//! - [`readiness`] and [`wait`]: kstatus's rules, and waiting that names
//!   what blocks and why;
//! - [`inventory`]: one Secret per release saying what capstan applied;
//! - [`prune`] and [`delete`]: deleting only from the inventory, `keep`
//!   and the data kinds protected, removal in reverse order;
//! - [`hooks`]: Helm hooks (pre/post install, upgrade, delete), waited
//!   for and deleted per their policies, outside the inventory;
//! - [`recreate`]: opt-in delete-and-create for immutable changes, the
//!   Deployment/StatefulSet kind change, Released volumes made bindable;
//! - [`diff`]: what an apply would change, by server-side dry run;
//! - [`live`]: reads for a connected render (`lookup`, `.Capabilities`);
//! - [`watch`]: waiting for a change to what the facts read (Nodes,
//!   StorageClasses, a ConfigMap, CRDs), one watch each;
//! - [`events`]: Kubernetes Events on a release's inventory Secret;
//! - [`lease`]: leader election on a `coordination.k8s.io/v1` Lease;
//! - [`tenancy`]: each app's releases applied as a ServiceAccount the
//!   operator names (impersonation);
//! - [`retry`]: transient failures retried within a budget;
//! - [`error`]: one variant per failing step.
//!
//! Why a runtime of its own: [`ApplyTarget`] and [`ClusterView`] are
//! synchronous and called from plain threads (the lifecycle's workers);
//! the target owns a one-worker tokio runtime (shared with its clones,
//! such as its view) and blocks on it, so callers need no async.
//! Do not call it from inside an async task (blocking there would stall
//! that runtime); the daemon calls it from blocking threads.
//!
//! Must not touch: the store, plugins, values or rendering. It receives
//! rendered objects and release names and returns what it did.

pub mod apply;
pub mod cache;
pub mod client;
pub mod delete;
pub mod diff;
pub mod discovery;
pub mod drift;
pub mod error;
pub mod events;
mod fields;
pub mod hooks;
pub mod inventory;
pub mod lease;
pub mod live;
pub mod present;
pub mod prune;
pub mod readiness;
pub mod recreate;
pub mod retry;
pub mod stages;
pub mod tenancy;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cache;
#[cfg(test)]
mod tests_more;
#[cfg(test)]
mod tests_watch;
pub mod wait;
pub mod watch;

use std::sync::Arc;
use std::time::Duration;

pub use client::Connect;
pub use error::Error;
pub use retry::RetryPolicy;

use self::apply::{Record, Settings};
use self::client::Cluster;
use crate::kube::target::{ApplyOptions, NoProgress, ProgressSink, RemoveOptions};
use crate::kube::{
    Applied, ApplyPlan, ApplyTarget, ClusterView, HookEvent, LiveDiff, ObjectRef, Release,
    ReleaseEvent, Resource,
};
use crate::model::{LookupQuery, Served, WatchEnd, WatchFrom};

/// The Pod-template annotation whose new value restarts a workload, as
/// `kubectl rollout restart` sets it.
pub const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

/// Settings of a [`ClusterTarget`], fixed when it connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterOptions {
    /// Retry policy of every request. Default: [`RetryPolicy::default`].
    pub retry: RetryPolicy,
    /// Readiness and deletion timeout per chart when the call does not
    /// set one. Default 5 minutes.
    pub timeout: Duration,
    /// Time between polls while waiting. Default 1 s.
    pub poll_interval: Duration,
    /// How long a kind whose CRD the same release applies may take to
    /// appear in discovery after the CRD is Established. Default 30 s.
    pub discovery_wait: Duration,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            retry: RetryPolicy::default(),
            timeout: Duration::from_secs(300),
            poll_interval: Duration::from_secs(1),
            discovery_wait: Duration::from_secs(30),
        }
    }
}

/// Applies releases to a Kubernetes cluster (see the module doc).
///
/// Clones share the connection, the discovery cache and the runtime
/// (shut down when the last clone goes): [`ApplyTarget::view`] is one.
#[derive(Clone)]
pub struct ClusterTarget {
    runtime: Arc<Runtime>,
    cluster: Cluster,
    settings: Settings,
    drift: drift::Hub,
}

/// A target's one-worker runtime, shared by its clones.
struct Runtime(Option<tokio::runtime::Runtime>);

impl Drop for Runtime {
    /// Shuts the runtime down without blocking, so dropping the last
    /// clone of a target inside an async context does not panic.
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for ClusterTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterTarget")
            .field("url", &self.cluster.url())
            .field("settings", &self.settings)
            .finish()
    }
}

impl ClusterTarget {
    /// Connects to the cluster `how` names and checks that it answers
    /// (`GET /version`, within the retry budget).
    ///
    /// # Errors
    /// [`Error::Runtime`], [`Error::ReadKubeconfig`],
    /// [`Error::KubeconfigContext`], [`Error::InCluster`],
    /// [`Error::BuildClient`], or [`Error::Unreachable`].
    pub fn connect(how: &Connect, options: ClusterOptions) -> Result<Self, Error> {
        Self::connect_as(how, options, None)
    }

    /// [`ClusterTarget::connect`], every request made as `user` (the
    /// `Impersonate-User` header: `system:serviceaccount:NS:NAME`), so the
    /// API server holds it to that user's rights ([`tenancy`]).
    ///
    /// # Errors
    /// As [`ClusterTarget::connect`].
    pub fn connect_as(
        how: &Connect,
        options: ClusterOptions,
        user: Option<&str>,
    ) -> Result<Self, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("capstan-kube")
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        let cluster = runtime.block_on(async {
            let mut config = client::config(how).await?;
            config.auth_info.impersonate = user.map(str::to_string);
            let cluster = Cluster::new(config, options.retry)?;
            cluster.probe().await?;
            Ok::<_, Error>(cluster)
        })?;
        let drift = drift::Hub::new(cluster.clone(), runtime.handle().clone());
        Ok(ClusterTarget {
            runtime: Arc::new(Runtime(Some(runtime))),
            drift,
            cluster,
            settings: Settings {
                timeout: options.timeout,
                poll: options.poll_interval,
                discovery_wait: options.discovery_wait,
            },
        })
    }

    /// The API server's URL.
    pub fn url(&self) -> &str {
        self.cluster.url()
    }

    /// How many discovery documents were fetched so far.
    pub fn discovery_fetches(&self) -> usize {
        self.cluster.discovery.fetches()
    }

    /// Runs `work` on the target's runtime.
    fn run<T>(&self, work: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        match &self.runtime.0 {
            Some(runtime) => runtime.block_on(work),
            None => Err(Error::Runtime(std::io::Error::other("runtime shut down"))),
        }
    }

    fn block_on<T>(
        &self,
        release: &Release,
        work: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, crate::kube::Error> {
        self.run(work)
            .map_err(|source| crate::kube::Error::Cluster {
                release: release.to_string(),
                source: Box::new(source),
            })
    }
}

impl ClusterTarget {
    /// Starts leader election on the Lease of `config`, on this target's
    /// connection and runtime ([`lease`]).
    ///
    /// # Errors
    /// [`Error::Runtime`] when the runtime is shut down; timings that
    /// cannot work ([`lease::LeaseConfig::problem`]) as
    /// [`Error::BadLease`].
    pub fn elect(&self, config: lease::LeaseConfig) -> Result<lease::Election, Error> {
        if let Some(problem) = config.problem() {
            return Err(Error::BadLease(problem));
        }
        let runtime = self
            .runtime
            .0
            .as_ref()
            .ok_or_else(|| Error::Runtime(std::io::Error::other("runtime shut down")))?;
        let elector = lease::Elector::new(self.cluster.clone(), config);
        Ok(lease::Election::start(runtime.handle(), elector))
    }

    /// The kind `api_version`/`kind` as discovery has it.
    async fn resolve(&self, api_version: &str, kind: &str) -> Result<discovery::Kind, Error> {
        self.cluster
            .discovery
            .resolve(&self.cluster, api_version, kind)
            .await
    }

    /// [`ClusterTarget::block_on`] for reads that belong to no release.
    fn block_on_read<T>(
        &self,
        what: impl std::fmt::Display,
        work: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, crate::kube::Error> {
        self.run(work).map_err(|source| crate::kube::Error::Live {
            what: what.to_string(),
            source: Box::new(source),
        })
    }
}

impl ApplyTarget for ClusterTarget {
    /// Only `objects` applied and `prune` pruned: the inventory keeps
    /// every other entry as it is (it holds identities, not content, so
    /// applying them again would strip their fields).
    fn apply_some(
        &self,
        release: &Release,
        objects: &[Resource],
        prune: &[ObjectRef],
    ) -> Result<Applied, crate::kube::Error> {
        let plan = crate::kube::plan_partial(objects, prune)?;
        self.apply(release, &plan)
    }

    /// Reads each object and refuses one that another release, or
    /// another client, owns ([`apply::admit`]).
    fn admit(
        &self,
        release: &Release,
        objects: &[Resource],
        options: &ApplyOptions,
    ) -> Result<(), crate::kube::Error> {
        self.block_on(
            release,
            apply::admit(
                &self.cluster,
                release,
                objects,
                options,
                Some(&self.drift.cache()),
            ),
        )
    }

    /// A cluster runs workloads: a restart is not refused up front (the
    /// server may still refuse the patch).
    fn admit_restart(&self, object: &ObjectRef) -> Result<(), crate::kube::Error> {
        let _ = object;
        Ok(())
    }

    /// A merge patch of the Pod template's `restartedAt` annotation, as
    /// `kubectl rollout restart` (its time to the second, UTC).
    fn restart(&self, object: &ObjectRef) -> Result<(), crate::kube::Error> {
        let at = k8s_openapi::jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        let patch = serde_json::json!({"spec": {"template": {"metadata": {"annotations": {
            RESTARTED_AT: at,
        }}}}});
        self.run(async {
            let kind = self.resolve(&object.api_version, &object.kind).await?;
            self.cluster
                .merge_patch(&kind, object.namespace.as_deref(), object, &patch)
                .await?;
            Ok(())
        })
        .map_err(|source| crate::kube::Error::Restart {
            object: object.to_string(),
            source: Box::new(source),
        })
    }

    /// A `core/v1` Event on the release's inventory Secret
    /// ([`events::record`]).
    fn record_event(&self, event: &ReleaseEvent) -> Result<(), crate::kube::Error> {
        self.block_on(&event.release, events::record(&self.cluster, event))
    }

    /// [`ApplyTarget::apply_with`] with default options: no adoption,
    /// the default timeout, waiting for readiness.
    fn apply(&self, release: &Release, plan: &ApplyPlan) -> Result<Applied, crate::kube::Error> {
        self.apply_with(release, plan, &ApplyOptions::default(), &NoProgress)
    }

    /// [`ApplyTarget::remove_with`] with default options.
    fn remove(&self, release: &Release) -> Result<Vec<ObjectRef>, crate::kube::Error> {
        self.remove_with(release, &RemoveOptions::default(), &NoProgress)
    }

    /// Reads the release's inventory Secret: identity-only resources
    /// (apiVersion, kind, metadata.name and namespace), pending entries
    /// included, so [`crate::kube::plan_apply`] prunes what may exist.
    fn applied(&self, release: &Release) -> Result<Vec<Resource>, crate::kube::Error> {
        self.block_on(release, async {
            let record =
                Record::load_with(&self.cluster, release, Some(&self.drift.cache())).await?;
            Ok(record.inventory.resources())
        })
    }

    fn apply_method(&self) -> &'static str {
        "server-side-apply"
    }

    /// A clone of this target (its connection, discovery cache and
    /// runtime are shared), so the view reads as this target's identity:
    /// the daemon's own for the daemon's target.
    fn view(&self) -> Arc<dyn ClusterView> {
        Arc::new(self.clone())
    }

    /// The release Secret's revision; `None` when there is no Secret.
    fn revision(&self, release: &Release) -> Result<Option<u64>, crate::kube::Error> {
        self.block_on(release, async {
            let record =
                Record::load_with(&self.cluster, release, Some(&self.drift.cache())).await?;
            Ok(record.exists().then_some(record.inventory.revision))
        })
    }

    fn apply_with(
        &self,
        release: &Release,
        plan: &ApplyPlan,
        options: &ApplyOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Applied, crate::kube::Error> {
        self.block_on(
            release,
            apply::apply_release(
                &self.cluster,
                &self.settings,
                release,
                plan,
                options,
                progress,
                Some(&self.drift.cache()),
            ),
        )
    }

    fn remove_with(
        &self,
        release: &Release,
        options: &RemoveOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Vec<ObjectRef>, crate::kube::Error> {
        self.block_on(
            release,
            delete::remove_release(&self.cluster, &self.settings, release, options, progress),
        )
    }

    fn run_hooks(
        &self,
        release: &Release,
        event: HookEvent,
        hooks: &[Resource],
        options: &ApplyOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Vec<ObjectRef>, crate::kube::Error> {
        self.block_on(
            release,
            hooks::run_hooks(
                &self.cluster,
                &self.settings,
                release,
                event,
                hooks,
                options,
                progress,
            ),
        )
    }

    /// Dry-runs every desired object on the server (see [`diff`]).
    fn diff_live(
        &self,
        release: &Release,
        desired: &[Resource],
        options: &ApplyOptions,
    ) -> Result<Option<Vec<LiveDiff>>, crate::kube::Error> {
        let applied = self.block_on(release, diff::recorded(&self.cluster, release))?;
        let plan = crate::kube::plan_apply(&applied, desired)?;
        self.block_on(
            release,
            diff::diff_live(&self.cluster, release, &plan, &options.fields),
        )
        .map(Some)
    }
}

/// Reads over this target's connection, as its identity (the daemon's own
/// for the daemon's target; [`tenancy`] never hands out the view of an
/// impersonating one).
impl ClusterView for ClusterTarget {
    /// From discovery (cached per group-version, refetched for a kind it
    /// lacks, so a CRD applied a moment ago is found).
    fn kind_scope(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<bool>, crate::kube::Error> {
        let what = format!("the scope of {api_version}/{kind}");
        self.block_on_read(what, async {
            match self
                .cluster
                .discovery
                .resolve(&self.cluster, api_version, kind)
                .await
            {
                Ok(found) => Ok(Some(found.namespaced)),
                Err(Error::UnknownKind { .. }) => Ok(None),
                Err(other) => Err(other),
            }
        })
    }

    /// `GET` of the object, or the list in pages ([`live::read`]).
    fn read_live(&self, query: &LookupQuery) -> Result<serde_json::Value, crate::kube::Error> {
        self.block_on_read(query, async {
            let kind = self.resolve(&query.api_version, &query.kind).await?;
            live::read(&self.cluster, &kind, &query.namespace, &query.name).await
        })
    }

    /// `GET /version` and discovery ([`live::served`]), asked anew each
    /// time: a render sees the CRDs installed just before it.
    fn served(&self) -> Result<Option<Served>, crate::kube::Error> {
        self.block_on_read("discovery", live::served(&self.cluster))
            .map(Some)
    }

    /// A LIST of one item ([`watch::collection_version`]).
    fn collection_version(
        &self,
        query: &LookupQuery,
    ) -> Result<Option<String>, crate::kube::Error> {
        self.block_on_read(query, async {
            let kind = self.resolve(&query.api_version, &query.kind).await?;
            watch::collection_version(&self.cluster, &kind, &query.namespace).await
        })
    }

    /// Reads the release's inventory and resolves each object's kind,
    /// then hands them to the drift watcher ([`drift::Hub::follow`]).
    fn follow(
        &self,
        release: &Release,
        held: &[(ObjectRef, crate::kube::managed::FieldSet)],
        policy: &crate::model::FieldPolicy,
    ) -> Result<(), crate::kube::Error> {
        let objects = self.block_on(release, async {
            // The inventory the apply just left, else the Secret's.
            let inventory = match self.drift.cache().take_inventory(&release.to_string()) {
                Some(inventory) => inventory,
                None => apply::Record::load(&self.cluster, release).await?.inventory,
            };
            let mut objects = Vec::new();
            for entry in &inventory.objects {
                let id = entry.id();
                let Some(kind) = prune::resolve_recorded(&self.cluster, &id).await? else {
                    continue;
                };
                let id = ObjectRef {
                    namespace: kind.namespaced.then(|| {
                        id.namespace
                            .clone()
                            .unwrap_or_else(|| release.namespace.clone())
                    }),
                    ..id
                };
                let baseline = held
                    .iter()
                    .find(|(h, _)| h.key() == id.key())
                    .map(|(_, set)| set.clone());
                objects.push(drift::FollowedObject { id, kind, baseline });
            }
            Ok(objects)
        })?;
        self.drift.follow(release, objects, policy);
        Ok(())
    }

    fn unfollow(&self, release: &Release) {
        self.drift.unfollow(release);
    }

    fn watches_drift(&self) -> bool {
        true
    }

    fn drift(&self, release: &Release) -> Option<Vec<crate::model::ObjectDrift>> {
        Some(self.drift.drift(release))
    }

    fn wait_drift(&self, seen: u64, timeout: Duration) -> u64 {
        self.drift.wait(seen, timeout)
    }

    /// One watch per entry, all at once ([`watch::first_change`]).
    fn wait_for_change(
        &self,
        from: &[WatchFrom],
        timeout: Duration,
    ) -> Result<WatchEnd, crate::kube::Error> {
        let what = from
            .iter()
            .map(|f| f.query.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        self.block_on_read(format!("changes to {what}"), async {
            let mut watched = Vec::with_capacity(from.len());
            for from in from {
                let kind = self
                    .resolve(&from.query.api_version, &from.query.kind)
                    .await?;
                watched.push(watch::Watched { kind, from });
            }
            watch::first_change(&self.cluster, &watched, timeout).await
        })
    }
}
