//! [`Lifecycle`]: the daemon's operations on apps. Quick operations
//! (upload, delete, overrides) run on the caller's thread; long ones
//! (apply, remove, update, recover) are started on the caller's thread, so
//! that a busy app or an illegal transition is refused at once, and then
//! run on a thread of their own ([`Started`]).

mod change;
mod settings;
mod start;
mod versions;

use super::checkpoint::Checkpoints;
use super::context::{ClusterMode, Inner, Leadership, Policies, Services, Work};
use super::facts::default_facts;
use super::facts_source::{FactsSource, FactsView, StaticFacts};
use super::leading::Role;
use super::metrics::Metrics;
use super::operations::{Operations, Request, Start, Started};
use super::state_dir::{
    StatePaths, create_private_dir, load_secret, lock_state, make_private, read_dir, remove_dir,
};
use super::stored::StoredVersion;
use super::{Error, rules};
use crate::bundle::Limits;
use crate::kube::ApplyTarget;
use crate::lifecycle::ChartDiff;
use crate::lifecycle::apply::diff;
use crate::lifecycle::apply::semantic_veto;
use crate::lifecycle::engine::versions::static_layer;
use crate::lifecycle::job::Job;
use crate::model::Facts;
use crate::model::{AppName, LookupPolicy};
use crate::sandbox::{ComponentCache, Policy, Sandbox};
use crate::store::{
    AppRecord, AppState, DecisionRecord, HistoryEntry, OperationId, ReleaseRecord, SqliteStore,
    Store,
};
use crate::trust::TrustStore;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// How to open the lifecycle.
pub struct Options {
    /// The state folder.
    pub state: PathBuf,
    /// Keys whose bundles are accepted.
    pub trust: TrustStore,
    /// Where charts are applied.
    pub target: Arc<dyn ApplyTarget>,
    /// Facts about the platform; one all-in-one node when `None`.
    pub facts: Option<Facts>,
    /// Where facts come from, in place of [`Options::facts`]: the
    /// cluster ([`super::ClusterFacts`]), which re-evaluation watches.
    pub facts_source: Option<Arc<dyn FactsSource>>,
    /// Limits of every plugin call.
    pub policy: Policy,
    /// What a chart's `lookup` may read when rendering for the target.
    pub lookup_policy: LookupPolicy,
    /// What plugins' hook actions may do, per app (contract 0.2).
    pub action_policies: crate::model::ActionPolicies,
    /// Limits of every bundle.
    pub limits: Limits,
    /// Read test pause points from the environment.
    pub checkpoints_from_env: bool,
    /// How many versions of each app are kept, the active one included
    /// ([`DEFAULT_KEEP_VERSIONS`]; at least 1): the others are what
    /// `app rollback` can go back to.
    pub keep_versions: usize,
    /// Operations that may run at once across all apps
    /// ([`super::DEFAULT_MAX_OPERATIONS`]; at least 1); the others wait
    /// their turn, queued in the order they were started.
    pub max_operations: usize,
    /// Start no operation on its own (`serve --pause-automatic`): no
    /// automatic re-apply, no resumption of what a leader left running;
    /// what an operator asks for runs as always.
    pub pause_automatic: bool,
    /// The store, in place of SQLite in the state folder (cluster mode:
    /// [`crate::store::cluster::ClusterStore`]).
    pub store: Option<Arc<dyn Store>>,
    /// The election this daemon takes part in: it then reconciles and
    /// works only while it leads ([`super::Role`]).
    pub leading: Option<Arc<dyn super::Leading>>,
    /// Where uploaded archives are kept for other replicas
    /// ([`super::RegistryHome`]); `None`: the state folder only.
    pub bundle_home: Option<Arc<dyn super::BundleHome>>,
}

/// The default of [`Options::keep_versions`]: the active version and the
/// two before it.
pub const DEFAULT_KEEP_VERSIONS: usize = 3;

impl Options {
    /// Defaults for everything but the state folder, keys and target.
    pub fn new(state: PathBuf, trust: TrustStore, target: Arc<dyn ApplyTarget>) -> Self {
        Options {
            state,
            trust,
            target,
            facts: None,
            facts_source: None,
            policy: Policy::new(),
            lookup_policy: LookupPolicy::default(),
            action_policies: crate::model::ActionPolicies::default(),
            limits: Limits::default(),
            checkpoints_from_env: false,
            keep_versions: DEFAULT_KEEP_VERSIONS,
            max_operations: super::DEFAULT_MAX_OPERATIONS,
            pause_automatic: false,
            store: None,
            leading: None,
            bundle_home: None,
        }
    }
}

/// The daemon's operations; cheap to clone, shared by every request.
#[derive(Clone)]
pub struct Lifecycle {
    pub(super) inner: Arc<Inner>,
}

/// An app and everything `app show` prints about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AppDetails {
    /// The app.
    #[serde(flatten)]
    pub app: AppRecord,
    /// Its stored versions, oldest first.
    pub versions: Vec<VersionSummary>,
    /// The charts of the active version, in apply order.
    pub charts: Vec<ChartSummary>,
    /// Its sticky workload decisions.
    pub decisions: Vec<DecisionRecord>,
    /// The store's copy of each applied release's inventory (objects and
    /// revision), by chart; what the cluster's release Secrets hold too.
    #[serde(default)]
    pub releases: Vec<ReleaseRecord>,
    /// Where each chart of the app's running (or, until the next one
    /// starts, latest) operation stands; absent when the daemon has run
    /// none for it since it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_progress: Option<super::progress::OperationCharts>,
    /// The app's `drifted` condition: set while another manager holds a
    /// field capstan applied, or an object it applied is gone, as the
    /// daemon's watches see it (a cluster target, `drift` not `off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drifted: Option<Drifted>,
    /// Why the daemon starts no operation on its own for the app
    /// (`serve --pause-automatic`); absent when it may.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic_paused: Option<String>,
    /// A failed automatic operation's retry waiting or running (`retry 2
    /// of 3 due in 40s`); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic_retry: Option<String>,
}

/// The `drifted` condition of an app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Drifted {
    /// Since when (unix millis).
    pub since: i64,
    /// One line naming the objects and fields (at most 1,024 bytes).
    pub message: String,
    /// Each drifted object, with who changed which field, how and when.
    pub objects: Vec<crate::model::ObjectDrift>,
}

/// One stored version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VersionSummary {
    /// The version.
    pub version: String,
    /// Hex sha256 of the bundle it came from.
    pub bundle_digest: String,
    /// The key that signed it.
    pub signer: String,
    /// When it was uploaded (unix millis).
    pub uploaded_at: i64,
    /// Where it was fetched from, pinned to the manifest digest
    /// (`oci://HOST/REPO@sha256:…`); absent for a file upload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Whether it is the active version.
    #[serde(default)]
    pub active: bool,
    /// Whether `app rollback` can go back to it (a kept earlier version).
    #[serde(default)]
    pub rollback: bool,
    /// When it was last left for another version (unix millis); its user
    /// overrides of that moment are what a rollback re-applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_at: Option<i64>,
}

/// One chart of the active version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ChartSummary {
    /// The chart.
    pub name: String,
    /// Its chart group.
    pub group: String,
    /// Its namespace.
    pub namespace: String,
    /// Its release name.
    pub release: String,
    /// Whether it is applied with the app.
    pub enabled: bool,
}

impl Lifecycle {
    /// Keeps what operation `op` was asked, for a new leader to resume
    /// it; nothing for a plain request.
    pub(super) fn keep_request(&self, op: OperationId, request: &Request) -> Result<(), Error> {
        if *request == Request::default() {
            return Ok(());
        }
        // Strings, flags and a count: serializing cannot fail.
        let text = serde_json::to_string(request).unwrap_or_else(|_| "{}".to_owned());
        Ok(self.store().set_request(op, &text)?)
    }

    /// Plans every applied app again and marks those whose plan changed
    /// with `because` (the re-evaluation the facts source drives); returns how many apps were
    /// planned and how many marked.
    pub fn reevaluate(&self, because: &str) -> (usize, usize) {
        super::reevaluate::reevaluate_with(self, because, &[])
    }

    /// Stops starting work and has running operations stop at their next
    /// checkpoint (cluster mode, at shutdown).
    pub fn hand_over(&self) {
        if let Some(leadership) = &self.inner.cluster.leadership {
            leadership.handing_over.store(true, Ordering::SeqCst);
            tracing::info!(target: "capstan::lease", "handing over: running operations stop at their next checkpoint");
        }
    }

    /// Starts again what the last leader left running (see
    /// [`super::resume`]); the tests' way in.
    #[cfg(test)]
    pub(super) fn resume(&self, moved: &[crate::store::Reconciled]) {
        super::resume::resume(self, moved);
    }

    /// This daemon's part: single, leading, or following.
    pub fn role(&self) -> Role {
        match &self.inner.cluster.leadership {
            None => Role::Single,
            Some(l) if l.working.load(Ordering::SeqCst) && l.election.leads() => Role::Leader,
            Some(l) => Role::Follower {
                leader: l.election.leader().filter(|_| !l.election.leads()),
            },
        }
    }

    /// Whether this daemon may start work now.
    pub fn may_work(&self) -> bool {
        self.role().may_work()
    }
}

impl Operations for Lifecycle {
    fn shared(&self) -> &Arc<Inner> {
        &self.inner
    }

    fn of(inner: Arc<Inner>) -> Self {
        Lifecycle { inner }
    }

    fn may_work(&self) -> bool {
        Lifecycle::may_work(self)
    }

    fn reconcile(&self) -> Result<Vec<crate::store::Reconciled>, Error> {
        Lifecycle::reconcile(self)
    }

    fn list(&self) -> Result<Vec<AppRecord>, Error> {
        Lifecycle::list(self)
    }

    fn diff(&self, app: &AppName) -> Result<Vec<ChartDiff>, Error> {
        Lifecycle::diff(self, app)
    }

    fn active_version(&self, app: &AppName) -> Result<StoredVersion, Error> {
        Lifecycle::active_version(self, app)
    }

    fn semantic_veto(&self, app: &AppName) -> Result<Option<String>, Error> {
        Lifecycle::semantic_veto(self, app)
    }

    fn evaluate_triggers(
        &self,
        app: &AppName,
        version: &StoredVersion,
        triggers: &[crate::model::Trigger],
    ) -> Result<Option<String>, Error> {
        Lifecycle::evaluate_triggers(self, app, version, triggers)
    }

    fn start(&self, app: &AppName, start: Start) -> Result<Started, Error> {
        // Every start of the loops is automatic (module `pause`).
        if let Some(reason) = super::pause::automatic_paused(&self.inner, app) {
            return Err(Error::AutomaticPaused {
                app: app.to_string(),
                reason,
            });
        }
        match start {
            Start::Apply {
                flags,
                note,
                resumes,
            } => {
                // A failure of an automatic re-apply or a drift correction
                // (not of a resumption) is retried (module `retry`).
                let retried = match (&note, resumes) {
                    (Some(note), 0) => {
                        super::retry::starting(&self.inner, app, &flags, note);
                        true
                    }
                    _ => false,
                };
                let started = self.start_apply(app, flags, note, resumes);
                if retried && started.is_err() {
                    super::retry::not_started(&self.inner, app);
                }
                started
            }
            Start::Remove { request, note } => self.start_remove(app, request, note),
            Start::Recover { request, note } => self.start_recover(app, request, note),
        }
    }
}

/// Refuses `rekind` naming a component `version` does not have; asked
/// twice by an apply: before it starts (so nothing is recorded) and again
/// against the verified version it applies.
pub(super) fn check_rekind(
    app: &AppName,
    version: &StoredVersion,
    rekind: &[String],
) -> Result<(), Error> {
    match rekind.iter().find(|c| !has_component(version, c)) {
        Some(unknown) => Err(Error::UnknownComponent {
            app: app.to_string(),
            component: unknown.clone(),
        }),
        None => Ok(()),
    }
}

pub(super) fn has_component(version: &StoredVersion, name: &str) -> bool {
    version
        .metadata
        .components
        .iter()
        .any(|m| m.name.as_str() == name)
}

pub(super) fn chart_summaries(version: &StoredVersion) -> Vec<ChartSummary> {
    let mut out = Vec::new();
    for group in &version.metadata.chart_groups {
        for name in &group.charts {
            if let Some(chart) = version.metadata.chart(name) {
                out.push(ChartSummary {
                    name: chart.name.to_string(),
                    group: group.name.clone(),
                    namespace: chart.namespace.to_string(),
                    release: chart.release.to_string(),
                    enabled: chart.enabled,
                });
            }
        }
    }
    out
}

pub(super) fn placeholder(app: &AppName) -> AppRecord {
    AppRecord {
        name: app.clone(),
        state: AppState::Applying,
        active_version: String::new(),
        target_version: None,
        progress: None,
        message: None,
        created_at: 0,
        updated_at: 0,
        reapply_needed: None,
        automatic_pause: None,
    }
}

pub(super) fn poisoned() -> Error {
    Error::Poisoned {
        what: "the table of running operations",
    }
}

impl Lifecycle {
    /// Opens the state folder: takes its lock, opens the store, moves apps
    /// a crash left in a transitional state to their failed state, and
    /// removes files no stored version owns.
    ///
    /// # Errors
    /// [`Error::StateLocked`] when another daemon runs on the folder; the
    /// store's and the file system's errors.
    pub fn open(options: Options) -> Result<Lifecycle, Error> {
        let paths = StatePaths::new(&options.state);
        create_private_dir(paths.root())?;
        let lock = lock_state(&paths)?;
        let store: Arc<dyn Store> = match options.store {
            Some(store) => store,
            None => {
                make_private(&paths, crate::store::DATABASE_FILE)?;
                Arc::new(SqliteStore::open(paths.root())?)
            }
        };
        let secret = load_secret(&paths.secret_file())?;
        let cache = ComponentCache::open(paths.cache()).map_err(|source| Error::PluginCache {
            path: paths.cache().display().to_string(),
            source: Box::new(source),
        })?;
        let sandbox = Sandbox::with_cache(options.policy, cache)
            .map_err(|source| Error::Engine(Box::new(source)))?;
        let checkpoints = if options.checkpoints_from_env {
            Checkpoints::from_env(paths.root().join("paused-at"))
        } else {
            Checkpoints::none()
        };
        let inner = Inner {
            services: Services {
                store,
                view: options.target.view(),
                target: options.target,
                sandbox,
                facts: match (options.facts_source, options.facts) {
                    (Some(source), _) => source,
                    (None, Some(facts)) => Arc::new(StaticFacts::new(facts, "file")),
                    (None, None) => Arc::new(StaticFacts::new(default_facts(), "default")),
                },
            },
            policies: Policies {
                lookup: options.lookup_policy,
                actions: options.action_policies,
                limits: options.limits,
                trust: options.trust,
                keep_versions: options.keep_versions.max(1),
                pause_automatic: options.pause_automatic,
            },
            work: Work {
                reapply: Mutex::new(BTreeMap::new()),
                auto_reapplied: Mutex::new(HashMap::new()),
                metrics: Metrics::default(),
                checkpoints,
                running: Mutex::new(HashMap::new()),
                charts: Default::default(),
                slots: super::slots::Slots::new(options.max_operations),
                drift: Mutex::new(BTreeMap::new()),
                retries: Default::default(),
            },
            cluster: ClusterMode {
                leadership: options.leading.map(|election| Leadership {
                    election,
                    working: std::sync::atomic::AtomicBool::new(false),
                    handing_over: std::sync::atomic::AtomicBool::new(false),
                }),
                bundle_home: options.bundle_home,
                restoring: Mutex::new(()),
            },
            paths,
            secret,
            daemon_key: std::sync::OnceLock::new(),
            _lock: lock,
        };
        let lifecycle = Lifecycle {
            inner: Arc::new(inner),
        };
        if lifecycle.inner.cluster.leadership.is_none() {
            lifecycle.reconcile()?;
        }
        super::leading::spawn(&lifecycle);
        super::reevaluate::spawn(&lifecycle);
        super::drift::spawn(&lifecycle);
        Ok(lifecycle)
    }

    pub(crate) fn store(&self) -> &dyn Store {
        self.inner.services.store.as_ref()
    }

    /// The daemon's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.work.metrics
    }

    /// Operations running and queued now, and the bound
    /// ([`Options::max_operations`]).
    pub fn operation_slots(&self) -> super::SlotCounts {
        self.inner.work.slots.counts()
    }

    /// The state folder layout.
    pub fn paths(&self) -> &StatePaths {
        &self.inner.paths
    }

    /// Startup reconciliation: interrupted operations end in their failed
    /// state with a reason; leftovers of interrupted uploads, deletes and
    /// updates are removed.
    pub(crate) fn reconcile(&self) -> Result<Vec<crate::store::Reconciled>, Error> {
        let moved = self.store().reconcile_after_restart()?;
        for moved in &moved {
            tracing::warn!(app = %moved.app, from = %moved.from, to = %moved.to,
                "operation interrupted by a restart; app moved to its failed state");
            self.inner
                .work
                .metrics
                .operation("reconcile", "interrupted");
        }
        let staging = self.inner.paths.staging();
        if staging.exists() {
            remove_dir(&staging)?;
        }
        create_private_dir(&staging)?;
        self.sweep_bundles()?;
        Ok(moved)
    }

    /// Removes bundle folders of versions the store does not hold, and
    /// versions that are neither active nor an update's target (left by
    /// a crash right after an update or rollback finished).
    pub(super) fn sweep_bundles(&self) -> Result<(), Error> {
        let apps = self.store().list_apps()?;
        for app in &apps {
            let kept = self.kept_versions(app)?;
            for version in self.store().list_versions(&app.name)? {
                let in_use = version.version == app.active_version
                    || app.target_version.as_deref() == Some(version.version.as_str())
                    || kept.iter().any(|k| k.version == version.version);
                if !in_use {
                    tracing::info!(app = %app.name, version = %version.version, "removing a version left by an interrupted update");
                    self.drop_version(&app.name, &version.version);
                }
            }
        }
        let bundles = self.inner.paths.bundles();
        for entry in read_dir(&bundles)? {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == ".staging" {
                continue;
            }
            let Some(app) = apps.iter().find(|a| a.name.as_str() == name) else {
                tracing::info!(folder = %entry.path().display(), "removing the files of a deleted app");
                remove_dir(&entry.path())?;
                continue;
            };
            let versions = self.store().list_versions(&app.name)?;
            for dir in read_dir(&entry.path())? {
                if !versions.iter().any(|v| v.bundle_dir == dir.path()) {
                    remove_dir(&dir.path())?;
                }
            }
        }
        Ok(())
    }

    /// All apps, by name.
    ///
    /// # Errors
    /// The store's.
    pub fn list(&self) -> Result<Vec<AppRecord>, Error> {
        let mut apps = self.store().list_apps()?;
        let marks = self.inner.work.reapply_marks();
        for app in &mut apps {
            app.reapply_needed = marks.get(app.name.as_str()).cloned();
        }
        Ok(apps)
    }

    /// The facts in effect, where each came from, and what changed last.
    pub fn facts(&self) -> FactsView {
        self.inner.services.facts.current()
    }

    /// One app with its versions, charts and decisions.
    ///
    /// # Errors
    /// [`crate::store::Error::UnknownApp`].
    pub fn show(&self, app: &AppName) -> Result<AppDetails, Error> {
        let mut record = self.store().app(app)?;
        record.reapply_needed = self.inner.work.reapply_marks().get(app.as_str()).cloned();
        let kept = self.kept_versions(&record)?;
        let left = self.store().user_snapshots(app)?;
        let versions = self
            .store()
            .list_versions(app)?
            .into_iter()
            .map(|v| VersionSummary {
                active: v.version == record.active_version,
                rollback: kept.iter().any(|k| k.version == v.version),
                left_at: left
                    .iter()
                    .find(|k| k.version == v.version)
                    .map(|k| k.saved_at),
                version: v.version,
                bundle_digest: v.bundle_digest,
                signer: v.signer,
                uploaded_at: v.uploaded_at,
                source: v.source,
            })
            .collect();
        let charts = match self.stored_metadata(app, &record.active_version) {
            Ok(version) => chart_summaries(&version),
            Err(_) => Vec::new(),
        };
        let decisions = self.store().list_decisions(app)?;
        let releases = self.store().list_releases(app)?;
        let drifted = self
            .inner
            .work
            .drift
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(app.as_str())
            .filter(|d| !d.objects.is_empty())
            .map(|d| Drifted {
                since: d.since,
                message: super::drifted::summary(&d.objects),
                objects: d.objects.clone(),
            });
        Ok(AppDetails {
            drifted,
            automatic_paused: super::pause::automatic_paused(&self.inner, app),
            automatic_retry: self.inner.work.retries.describe(app.as_str()),
            chart_progress: self.inner.work.charts.get(app.as_str()),
            app: record,
            versions,
            charts,
            decisions,
            releases,
        })
    }

    /// The app's operations, oldest first.
    ///
    /// # Errors
    /// [`crate::store::Error::UnknownApp`].
    pub fn history(&self, app: &AppName) -> Result<Vec<HistoryEntry>, Error> {
        Ok(self.store().history(app)?)
    }

    /// A job outside any operation (operation 0, never recorded), for
    /// what plans without writing: `diff`, and the semantic check before
    /// an automatic re-apply.
    pub(crate) fn dry_job<'a>(&'a self, app: &AppName, abort: &'a Arc<AtomicBool>) -> Job<'a> {
        Job {
            inner: &self.inner,
            app: app.clone(),
            op: OperationId(0),
            abort,
            warnings: Mutex::new(Vec::new()),
            requested_reapply: Mutex::new(None),
            redactor: Mutex::new(crate::secrets::Redactor::new()),
            automatic: AtomicBool::new(false),
        }
    }

    /// What an apply of the active version would change, chart by chart.
    /// Runs the plugins but stores nothing.
    ///
    /// # Errors
    /// As an apply's steps would fail.
    pub fn diff(&self, app: &AppName) -> Result<Vec<ChartDiff>, Error> {
        let version = self.active_version_checked(app)?;
        let abort = Arc::new(AtomicBool::new(false));
        let job = self.dry_job(app, &abort);
        diff(&job, &version, None)
    }

    /// Whether the app's `semantic-check` hook would veto an apply of its
    /// active version now ([`Job::semantic_veto`]); nothing is recorded.
    ///
    /// # Errors
    /// The store's, the plugins' and the target's errors.
    pub(crate) fn semantic_veto(&self, app: &AppName) -> Result<Option<String>, Error> {
        let version = self.active_version_checked(app)?;
        let abort = Arc::new(AtomicBool::new(false));
        let job = self.dry_job(app, &abort);
        // Only an automatic re-apply asks this.
        job.automatic.store(true, Ordering::SeqCst);
        semantic_veto(&job, &version)
    }

    /// What an update to the bundle `archive` would change, chart by chart
    /// (the charts it drops show as removed), with the stored user
    /// overrides. The bundle is verified, planned from a staging folder and
    /// removed again; nothing is stored.
    ///
    /// # Errors
    /// [`Error::Bundle`], [`Error::WrongApp`], and as an apply's steps
    /// would fail.
    pub fn diff_bundle(&self, app: &AppName, archive: impl Read) -> Result<Vec<ChartDiff>, Error> {
        let record = self.store().app(app)?;
        let (bundle, _digest) = self.verify(archive)?;
        let named = bundle.metadata().name.as_str();
        if named != app.as_str() {
            return Err(Error::WrongApp {
                app: app.to_string(),
                bundle: named.to_owned(),
            });
        }
        let active = self.stored(app, &record.active_version)?;
        let statics = static_layer(bundle.root(), bundle.metadata())?;
        let version = StoredVersion {
            version: bundle.metadata().version.to_string(),
            dir: bundle.root().to_path_buf(),
            metadata: bundle.metadata().clone(),
            unstored_static: Some(statics.into_iter().collect()),
        };
        let abort = Arc::new(AtomicBool::new(false));
        let job = self.dry_job(app, &abort);
        let diffs = diff(&job, &version, Some(&active));
        drop(bundle);
        diffs
    }

    /// A failed update's target version, if one is set (its charts are
    /// then removed or pruned with the active version's), checked like
    /// every version an operation works from.
    pub(super) fn target_version(
        &self,
        record: &AppRecord,
    ) -> Result<Option<StoredVersion>, Error> {
        match record.target_version.as_deref() {
            Some(version) => self.stored(&record.name, version).map(Some),
            None => Ok(None),
        }
    }

    /// The active version's metadata, for the override commands and
    /// re-evaluation's events.
    pub(crate) fn active_version(&self, app: &AppName) -> Result<StoredVersion, Error> {
        let record = self.store().app(app)?;
        self.stored_metadata(app, &record.active_version)
    }

    /// The active version, checked against its `MANIFEST`.
    pub(crate) fn active_version_checked(&self, app: &AppName) -> Result<StoredVersion, Error> {
        let record = self.store().app(app)?;
        self.stored(app, &record.active_version)
    }

    /// The active version and a failed update's target, both checked.
    pub(super) fn versions_checked(
        &self,
        app: &AppName,
    ) -> Result<(StoredVersion, Option<StoredVersion>), Error> {
        let record = self.store().app(app)?;
        let version = self.stored(app, &record.active_version)?;
        Ok((version, self.target_version(&record)?))
    }

    pub(super) fn unlocked_version(&self, app: &AppName) -> Result<StoredVersion, Error> {
        let record = self.store().app(app)?;
        if rules::overrides_locked(record.state) {
            return Err(Error::Busy {
                app: app.to_string(),
                state: record.state,
            });
        }
        self.stored_metadata(app, &record.active_version)
    }
}
