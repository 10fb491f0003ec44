//! [`Lifecycle`]: the daemon's operations on apps. Quick operations
//! (upload, delete, overrides) run on the caller's thread; long ones
//! (apply, remove, update, recover) are started on the caller's thread, so
//! that a busy app or an illegal transition is refused at once, and then
//! run on a thread of their own ([`Started`]).

use super::checkpoint::Checkpoints;
use super::context::{ClusterMode, Inner, Leadership, Policies, Services, Work};
use super::facts::default_facts;
use super::facts_source::{FactsSource, FactsView, StaticFacts};
use super::leading::Role;
use super::metrics::Metrics;
use super::operations::{Operations, Request, Started};
use super::overrides::{self, ChartOverrides, OverrideSet, OverrideSummary};
use super::state_dir::{
    StatePaths, create_private_dir, load_secret, lock_state, make_private, read_dir, remove_dir,
};
use super::stored::StoredVersion;
use super::volumes::{self, VolumeRequest, VolumeView};
use super::{Error, rules};
use crate::bundle::{self, Limits, VerifiedBundle};
use crate::kube::ApplyTarget;
use crate::lifecycle::ChartDiff;
use crate::lifecycle::apply::diff;
use crate::lifecycle::apply::{apply_version, post_abort, remove_version, semantic_veto};
use crate::lifecycle::job::{Apply, Job, NO_FLAGS, UserLayer};
use crate::lifecycle::owned::{owned_error, owned_release_of};
use crate::model::ApplyRequest;
use crate::model::{AppName, Hook, LookupPolicy};
use crate::sandbox::{ComponentCache, Facts, Policy, Sandbox};
use crate::store::{
    AppRecord, AppState, DecisionRecord, Finish, HistoryEntry, Operation, OperationId, Outcome,
    OverrideLayer, ReleaseRecord, SqliteStore, Store, TargetChange, UserSnapshot, VersionRecord,
};
use crate::trust::TrustStore;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
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

/// What a long operation's work returns: how it ends, and a version whose
/// files and rows go once it has ended (the replaced or failed version).
struct Ending {
    finish: Finish,
    drop_version: Option<String>,
}

impl Ending {
    fn new(finish: Finish) -> Self {
        Ending {
            finish,
            drop_version: None,
        }
    }
}

/// A failed change to undo ([`Job::undo_failed_change`]).
struct Undo<'a> {
    /// The change as messages name it (`update to 2.0.0`).
    change: String,
    /// The version the change failed to apply.
    failed: &'a StoredVersion,
    /// The version applied again.
    back_to: &'a StoredVersion,
    how: UndoHow,
    /// The checkpoint prefix of the undoing apply.
    phase: &'static str,
}

/// How an undo reads: an update rolls back to the old version (and the
/// failed new version is dropped); a rollback applies the version it left
/// again (which stays kept).
#[derive(Clone, Copy)]
enum UndoHow {
    RollBack,
    ApplyAgain,
}

impl UndoHow {
    fn doing(self, version: &str) -> String {
        match self {
            UndoHow::RollBack => format!("rolling back to {version}"),
            UndoHow::ApplyAgain => format!("applying {version} again"),
        }
    }

    fn done(self, version: &str) -> String {
        match self {
            UndoHow::RollBack => format!("rolled back to {version}"),
            UndoHow::ApplyAgain => format!("{version} applied again"),
        }
    }

    fn attempt(self, version: &str) -> String {
        match self {
            UndoHow::RollBack => format!("rollback to {version}"),
            UndoHow::ApplyAgain => format!("applying {version} again"),
        }
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
            },
            work: Work {
                reapply: Mutex::new(BTreeMap::new()),
                auto_reapplied: Mutex::new(HashMap::new()),
                metrics: Metrics::default(),
                checkpoints,
                running: Mutex::new(HashMap::new()),
                charts: Default::default(),
                slots: super::slots::Slots::new(options.max_operations),
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
        Ok(lifecycle)
    }

    pub(super) fn store(&self) -> &dyn Store {
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
    pub(super) fn reconcile(&self) -> Result<Vec<crate::store::Reconciled>, Error> {
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
    fn sweep_bundles(&self) -> Result<(), Error> {
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

    // ---- quick operations ----

    /// Verifies a bundle and stores it as a new app, state `uploaded`.
    ///
    /// # Errors
    /// [`Error::Bundle`] for a rejected bundle (nothing is stored);
    /// [`crate::store::Error::AppExists`] when the name is taken; an app whose
    /// files could not be stored ends in `upload-failed` with the reason.
    pub fn upload(&self, archive: impl Read) -> Result<AppRecord, Error> {
        self.upload_from(archive, None)
    }

    /// [`Lifecycle::upload`] of a bundle fetched from `source` (an
    /// `oci://HOST/REPO@sha256:…` reference pinned to the manifest digest),
    /// which the version records and the upload's history entry names.
    /// The source is provenance, not trust: the bundle is verified as any.
    ///
    /// # Errors
    /// As [`Lifecycle::upload`].
    pub fn upload_from(
        &self,
        archive: impl Read,
        source: Option<String>,
    ) -> Result<AppRecord, Error> {
        let mut capture = Capture::new(archive, self.inner.cluster.bundle_home.is_some());
        let (bundle, digest) = self.verify(&mut capture)?;
        let mut record = self.version_record(&bundle, &digest)?;
        record.source = self.keep_bundle(&record, capture, source)?;
        let app = record.app.clone();
        let op = self.store().begin_upload(&record)?;
        self.inner.work.checkpoints.reach("upload:begun");
        match self.store_bundle(bundle, &record) {
            Ok(()) => {
                let mut finish = Finish::succeeded(AppState::Uploaded);
                if let Some(source) = &record.source {
                    finish = finish.with_message(format!("from {source}"));
                }
                let app = self.store().finish_operation(op, &finish)?;
                self.inner.work.metrics.operation("upload", "succeeded");
                tracing::info!(app = %app.name, version = %app.active_version, "uploaded");
                Ok(app)
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&record.bundle_dir);
                tracing::warn!(app = %app, error = %e.one_line(), "upload failed");
                Err(self.end_early(
                    &app,
                    op,
                    Operation::Upload,
                    failed(AppState::UploadFailed, &e),
                    e,
                ))
            }
        }
    }

    /// Deletes an uploaded (never applied, or removed) app and its files.
    ///
    /// # Errors
    /// [`crate::store::Error::UnknownApp`]; a busy or illegal-transition error when
    /// it is not `uploaded` or `upload-failed`.
    pub fn delete(&self, app: &AppName) -> Result<(), Error> {
        // Secrets a `remove --keep-secrets` kept go with the app. Only an
        // app that may be deleted is looked at; a failure deletes nothing.
        let record = self.store().app(app)?;
        if rules::DELETE_FROM.contains(&record.state)
            && let Ok(version) = self.active_version(app)
        {
            let release = owned_release_of(app, &version.metadata);
            let removed = self
                .inner
                .services
                .target
                .remove(&release)
                .map_err(owned_error)?;
            if !removed.is_empty() {
                tracing::info!(target: "capstan::audit", app = %app, objects = removed.len(), "kept generated secrets removed with the app");
            }
        }
        let versions = self.store().delete_app(app, rules::DELETE_FROM)?;
        self.inner.work.checkpoints.reach("delete:rows-deleted");
        for version in versions {
            remove_dir(&version.bundle_dir)?;
        }
        let app_dir = self.inner.paths.bundles().join(app.as_str());
        if app_dir.exists() {
            remove_dir(&app_dir)?;
        }
        self.inner.work.charts.forget(app.as_str());
        self.inner.work.metrics.operation("delete", "succeeded");
        tracing::info!(app = %app, "deleted");
        Ok(())
    }

    /// Asks the running apply, update, remove or recover of `app` to stop
    /// at its next step, and interrupts the plugin call it is in at the
    /// sandbox's next epoch tick (the call ends as `aborted`); it then ends
    /// in the matching failed state, outcome `aborted`.
    ///
    /// # Errors
    /// [`Error::NothingToAbort`] when no such operation runs.
    pub fn abort(&self, app: &AppName) -> Result<AppRecord, Error> {
        let record = self.store().app(app)?;
        let running = self
            .inner
            .work
            .running
            .lock()
            .map_err(|_| poisoned())?
            .get(app.as_str())
            .map(|(_, flag)| flag.clone());
        match running {
            Some(flag) if rules::ABORTABLE.contains(&record.state) => {
                flag.store(true, Ordering::SeqCst);
                tracing::info!(app = %app, state = %record.state, "abort requested");
                Ok(record)
            }
            _ => Err(Error::NothingToAbort {
                app: app.to_string(),
            }),
        }
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
        Ok(AppDetails {
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
    pub(super) fn dry_job<'a>(&'a self, app: &AppName, abort: &'a Arc<AtomicBool>) -> Job<'a> {
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
    pub(super) fn semantic_veto(&self, app: &AppName) -> Result<Option<String>, Error> {
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

    // ---- overrides ----

    /// Which layers each chart of the active version has.
    ///
    /// # Errors
    /// [`crate::store::Error::UnknownApp`].
    pub fn override_list(&self, app: &AppName) -> Result<Vec<OverrideSummary>, Error> {
        let version = self.active_version(app)?;
        overrides::summary(self.store(), app, &version)
    }

    /// Every layer of a chart and the merged values.
    ///
    /// # Errors
    /// [`crate::store::Error::UnknownApp`], [`Error::UnknownChart`].
    pub fn override_show(&self, app: &AppName, chart: &str) -> Result<ChartOverrides, Error> {
        let version = self.active_version(app)?;
        overrides::show(self.store(), app, &version, chart)
    }

    /// Sets a chart's user overrides; they take effect at the next apply.
    ///
    /// # Errors
    /// [`Error::InvalidOverrides`] (nothing changed), [`Error::UnknownChart`],
    /// [`Error::Busy`] while an operation runs.
    pub fn override_set(
        &self,
        app: &AppName,
        chart: &str,
        request: &OverrideSet,
    ) -> Result<ChartOverrides, Error> {
        let version = self.unlocked_version(app)?;
        overrides::chart_of(app, &version, chart)?;
        let current = self
            .store()
            .override_layer(app, chart, &OverrideLayer::User)?;
        let values = overrides::user_values(request, current.as_ref().map(|r| &r.values))?;
        self.store()
            .set_override(app, chart, &OverrideLayer::User, &values)?;
        tracing::info!(app = %app, chart, "user overrides set");
        overrides::show(self.store(), app, &version, chart)
    }

    /// Deletes a chart's user overrides; returns whether there were any.
    ///
    /// # Errors
    /// As [`Lifecycle::override_set`].
    pub fn override_delete(&self, app: &AppName, chart: &str) -> Result<bool, Error> {
        let version = self.unlocked_version(app)?;
        overrides::chart_of(app, &version, chart)?;
        let existed = self
            .store()
            .delete_override(app, chart, &OverrideLayer::User)?;
        tracing::info!(app = %app, chart, existed, "user overrides deleted");
        Ok(existed)
    }

    /// A failed update's target version, if one is set (its charts are
    /// then removed or pruned with the active version's), checked like
    /// every version an operation works from.
    fn target_version(&self, record: &AppRecord) -> Result<Option<StoredVersion>, Error> {
        match record.target_version.as_deref() {
            Some(version) => self.stored(&record.name, version).map(Some),
            None => Ok(None),
        }
    }

    /// The active version's metadata, for the override commands and
    /// re-evaluation's events.
    pub(super) fn active_version(&self, app: &AppName) -> Result<StoredVersion, Error> {
        let record = self.store().app(app)?;
        self.stored_metadata(app, &record.active_version)
    }

    /// Finishes an operation that failed before its work started, leaving
    /// the app in `state` with the error as its message, and returns the
    /// error as [`Error::Ended`] (a state error, never an internal one).
    fn end_early(
        &self,
        app: &AppName,
        op: OperationId,
        operation: Operation,
        finish: Finish,
        error: Error,
    ) -> Error {
        let state = finish.state;
        if let Err(e) = self.store().finish_operation(op, &finish) {
            tracing::error!(app = %app, operation = %operation, error = %e,
                "could not record the end of the operation");
            return Error::Store(e);
        }
        self.inner
            .work
            .metrics
            .operation(operation.as_str(), "failed");
        tracing::warn!(app = %app, operation = %operation, state = %state,
            error = %error.one_line(), "operation failed before it started its work");
        Error::Ended {
            operation,
            app: app.to_string(),
            state,
            source: Box::new(error),
        }
    }

    /// The active version, checked against its `MANIFEST`.
    pub(super) fn active_version_checked(&self, app: &AppName) -> Result<StoredVersion, Error> {
        let record = self.store().app(app)?;
        self.stored(app, &record.active_version)
    }

    /// The active version and a failed update's target, both checked.
    fn versions_checked(
        &self,
        app: &AppName,
    ) -> Result<(StoredVersion, Option<StoredVersion>), Error> {
        let record = self.store().app(app)?;
        let version = self.stored(app, &record.active_version)?;
        Ok((version, self.target_version(&record)?))
    }

    fn unlocked_version(&self, app: &AppName) -> Result<StoredVersion, Error> {
        let record = self.store().app(app)?;
        if rules::overrides_locked(record.state) {
            return Err(Error::Busy {
                app: app.to_string(),
                state: record.state,
            });
        }
        self.stored_metadata(app, &record.active_version)
    }

    // ---- local volumes ----

    /// Creates a local volume: records it and applies its PersistentVolume
    /// and PersistentVolumeClaim through the target.
    ///
    /// # Errors
    /// [`Error::Volume`] for an invalid request, a volume-exists conflict,
    /// the target's error (the record is then forgotten again).
    pub fn volume_create(&self, request: &VolumeRequest) -> Result<VolumeView, Error> {
        let record = volumes::record_of(request)?;
        let stored = self.store().create_volume(&record)?;
        if let Err(e) = volumes::apply_objects(self.inner.services.target.as_ref(), &stored) {
            let _ = self.store().delete_volume(&stored.name);
            return Err(e);
        }
        tracing::info!(volume = %stored.name, node = %stored.node, "local volume created");
        self.volume_view(stored)
    }

    /// Every volume with its claim and users.
    ///
    /// # Errors
    /// The store's.
    pub fn volume_list(&self) -> Result<Vec<VolumeView>, Error> {
        let mut users = volumes::users_by_volume(self.store())?;
        Ok(self
            .store()
            .list_volumes()?
            .into_iter()
            .map(|v| {
                let used_by = users.remove(&v.name).unwrap_or_default();
                volume_view(v, used_by)
            })
            .collect())
    }

    /// Removes a volume's objects (its PersistentVolume and its claim) from
    /// the target and forgets it; refused while an app on the target mounts
    /// it, unless `force`. The data on the node stays (the volume's reclaim
    /// policy is `Retain`).
    ///
    /// # Errors
    /// [`Error::UnknownVolume`], [`Error::VolumeInUse`], the target's.
    pub fn volume_remove(&self, name: &str, force: bool) -> Result<VolumeView, Error> {
        let record = self
            .store()
            .volume(name)?
            .ok_or_else(|| Error::UnknownVolume {
                name: name.to_owned(),
            })?;
        let view = self.volume_view(record)?;
        if !view.used_by.is_empty() && !force {
            return Err(Error::VolumeInUse {
                name: name.to_owned(),
                users: view.used_by.join(", "),
            });
        }
        // The claim goes with its volume: a remove keeps claims by
        // default, and a PersistentVolume still bound to one is held by
        // the `kubernetes.io/pv-protection` finalizer until the claim is
        // gone (found on the real control plane: the remove waited out its
        // deadline). The data on the node stays: the reclaim policy is
        // `Retain`.
        let options = crate::kube::RemoveOptions {
            purge: crate::kube::Purge {
                volumes: true,
                all: false,
            },
            ..crate::kube::RemoveOptions::default()
        };
        self.inner
            .services
            .target
            .remove_with(
                &volumes::release_of(&view.volume),
                &options,
                &crate::kube::NoProgress,
            )
            .map_err(|source| Error::Kube {
                chart: format!("{}/{name}", volumes::VOLUMES_APP),
                source: Box::new(source),
            })?;
        self.store().delete_volume(name)?;
        tracing::info!(volume = name, force, "local volume removed");
        Ok(view)
    }

    fn volume_view(&self, volume: crate::store::VolumeRecord) -> Result<VolumeView, Error> {
        let used_by = volumes::users_by_volume(self.store())?
            .remove(&volume.name)
            .unwrap_or_default();
        Ok(volume_view(volume, used_by))
    }

    // ---- long operations ----

    /// Starts applying the active version; `rekind` names components whose
    /// workload kind is decided again.
    ///
    /// # Errors
    /// [`Error::UnknownComponent`]; the store's busy and illegal-transition
    /// errors.
    pub fn apply(&self, app: &AppName, rekind: Vec<String>) -> Result<Started, Error> {
        self.apply_with(
            app,
            ApplyRequest {
                rekind,
                ..ApplyRequest::default()
            },
        )
    }

    /// [`Lifecycle::apply`] with every flag an operator may give.
    ///
    /// # Errors
    /// As [`Lifecycle::apply`].
    pub fn apply_with(&self, app: &AppName, flags: ApplyRequest) -> Result<Started, Error> {
        self.start_apply(app, flags, None, 0)
    }

    /// [`Lifecycle::apply_with`]; `note` says why no person asked for it
    /// (its hooks are told the apply is automatic), `resumes` counts the
    /// resumptions of an interrupted apply.
    pub(super) fn start_apply(
        &self,
        app: &AppName,
        flags: ApplyRequest,
        note: Option<String>,
        resumes: u32,
    ) -> Result<Started, Error> {
        // A request naming a component the app does not have is refused
        // before anything starts (nothing recorded); the metadata read for
        // it is not trusted for anything else.
        if let Ok(version) = self.active_version(app) {
            check_rekind(app, &version, &flags.rekind)?;
        }
        let op = self.store().begin_operation(
            app,
            Operation::Apply,
            rules::APPLY_FROM,
            AppState::Applying,
        )?;
        self.inner.work.checkpoints.reach("apply:begun");
        let request = Request::of_apply(&flags, resumes);
        let checked = self
            .keep_request(op, &request)
            .and_then(|()| self.active_version_checked(app))
            .and_then(|version| check_rekind(app, &version, &flags.rekind).map(|()| version));
        let version = match checked {
            Ok(version) => version,
            Err(e) => {
                let finish = failed(AppState::ApplyFailed, &e);
                return Err(self.end_early(app, op, Operation::Apply, finish, e));
            }
        };
        Ok(self.spawn(app, op, Operation::Apply, move |job| {
            // A note says why no person asked for it: its hooks are told
            // the apply is automatic.
            if let Some(note) = note {
                job.automatic.store(true, Ordering::SeqCst);
                job.note(note);
            }
            let request = Apply {
                version: &version,
                replacing: None,
                user: UserLayer::Stored,
                flags: &flags,
                around: None,
                phase: "apply",
            };
            Ending::new(match apply_version(job, &request) {
                Ok(()) => with_note(Finish::succeeded(AppState::Applied), job.warnings_note()),
                Err(e) => failed(AppState::ApplyFailed, &e),
            })
        }))
    }

    /// Starts removing the app's charts from the target, in reverse order;
    /// it ends `uploaded`. With `force`, a failing chart or hook does not
    /// stop the removal of the others.
    ///
    /// # Errors
    /// The store's busy and illegal-transition errors.
    pub fn remove(&self, app: &AppName, force: bool) -> Result<Started, Error> {
        self.remove_with(app, force, false)
    }

    /// [`Lifecycle::remove`]; with `keep_secrets`, the Secrets the host
    /// generated for the app's plugins stay (the owned release is pruned
    /// down to them), so that applying the app again hands out the same
    /// values; [`Lifecycle::delete`] removes them.
    ///
    /// # Errors
    /// The store's busy and illegal-transition errors.
    pub fn remove_with(
        &self,
        app: &AppName,
        force: bool,
        keep_secrets: bool,
    ) -> Result<Started, Error> {
        let request = Request {
            force,
            keep_secrets,
            ..Request::default()
        };
        self.start_remove(app, request, None)
    }

    /// [`Lifecycle::remove_with`] as `request` says, with `note` (why no
    /// person asked for it) in its message.
    pub(super) fn start_remove(
        &self,
        app: &AppName,
        request: Request,
        note: Option<String>,
    ) -> Result<Started, Error> {
        let (force, keep_secrets) = (request.force, request.keep_secrets);
        let from = if force {
            rules::FORCE_REMOVE_FROM
        } else {
            rules::REMOVE_FROM
        };
        let op = self
            .store()
            .begin_operation(app, Operation::Remove, from, AppState::Removing)?;
        self.inner.work.checkpoints.reach("remove:begun");
        let checked = self
            .keep_request(op, &request)
            .and_then(|()| self.versions_checked(app));
        let (version, target) = match checked {
            Ok(versions) => versions,
            Err(e) => {
                let finish = failed(AppState::RemoveFailed, &e);
                return Err(self.end_early(app, op, Operation::Remove, finish, e));
            }
        };
        Ok(self.spawn(app, op, Operation::Remove, move |job| {
            if let Some(note) = note {
                job.note(note);
            }
            let result = remove_version(job, &version, target.as_ref(), force, keep_secrets);
            Ending {
                finish: match result {
                    Ok(()) => with_note(
                        Finish::succeeded(AppState::Uploaded).with_target(TargetChange::Discard),
                        job.warnings_note(),
                    ),
                    Err(e) => failed(AppState::RemoveFailed, &e),
                },
                drop_version: None,
            }
        }))
    }

    /// Verifies an update bundle and starts moving the applied app to it;
    /// on failure the old version is applied again. `reuse_user_overrides`
    /// overrides the bundle's `maintain_user_overrides`.
    ///
    /// # Errors
    /// [`Error::Bundle`], [`Error::Upgrade`], unknown app, busy, illegal
    /// transition; nothing is changed then.
    pub fn update(
        &self,
        archive: impl Read,
        reuse_user_overrides: Option<bool>,
    ) -> Result<Started, Error> {
        self.update_with(archive, reuse_user_overrides, false, None)
    }

    /// [`Lifecycle::update`]; with `force`, also to an older version (a
    /// downgrade) or one whose `upgrades.from_versions` does not list the
    /// active version. The active version itself is refused, forced or not
    /// (the store's version-exists error; nothing is touched). What was forced is returned in
    /// [`Started::warnings`], logged, and kept in the operation's message.
    /// `source` is where the bundle was fetched from (as
    /// [`Lifecycle::upload_from`]); the finished update's note names it.
    ///
    /// # Errors
    /// As [`Lifecycle::update`].
    pub fn update_with(
        &self,
        archive: impl Read,
        reuse_user_overrides: Option<bool>,
        force: bool,
        source: Option<String>,
    ) -> Result<Started, Error> {
        let mut capture = Capture::new(archive, self.inner.cluster.bundle_home.is_some());
        let (bundle, digest) = self.verify(&mut capture)?;
        let mut record = self.version_record(&bundle, &digest)?;
        let app = record.app.clone();
        let current = self.store().app(&app)?;
        let active =
            semver::Version::parse(&current.active_version).map_err(|e| Error::StoredBundle {
                app: app.to_string(),
                version: current.active_version.clone(),
                source: Box::new(e),
            })?;
        bundle::check_upgrade(&active, bundle.metadata(), force).map_err(|source| {
            Error::Upgrade {
                app: app.to_string(),
                from: current.active_version.clone(),
                to: record.version.clone(),
                source: Box::new(source),
            }
        })?;
        if record.version == current.active_version {
            // A forced reinstall of the active version cannot be staged
            // beside it (one stored record per version); refused before
            // anything is touched. The staging failure it used to meet
            // removed the active version's stored bundle (issue 29,
            // found by the API fuzzer); `app apply` applies it again.
            return Err(Error::Store(crate::store::Error::VersionExists {
                app,
                version: record.version,
            }));
        }
        let forced = if force {
            forced_notes(&active, bundle.metadata())
        } else {
            Vec::new()
        };
        let keep_user = reuse_user_overrides.unwrap_or(bundle.metadata().maintain_user_overrides);
        record.source = self.keep_bundle(&record, capture, source)?;
        let op = self.store().begin_operation(
            &app,
            Operation::Update,
            rules::UPDATE_FROM,
            AppState::Updating,
        )?;
        self.inner.work.checkpoints.reach("update:begun");
        for note in &forced {
            tracing::warn!(app = %app, "{note}");
        }
        let staged = self
            .stage_update(bundle, &record, &current.active_version)
            .and_then(|()| {
                let old = self.stored(&app, &current.active_version)?;
                let new = self.stored(&app, &record.version)?;
                Ok((old, new))
            });
        let (old, new) = match staged {
            Ok(versions) => versions,
            Err(e) => {
                let _ = self.store().set_target_version(&app, None);
                // Only what this update staged: never the active version.
                if record.version != current.active_version {
                    let _ = self.store().delete_version(&app, &record.version);
                    let _ = std::fs::remove_dir_all(&record.bundle_dir);
                }
                let finish = Finish::failed(
                    AppState::Applied,
                    format!("update to {} failed: {}", record.version, e.one_line()),
                )
                .with_target(TargetChange::Discard);
                return Err(self.end_early(&app, op, Operation::Update, finish, e));
            }
        };
        let notes = forced.clone();
        let mut started = self.spawn(&app, op, Operation::Update, move |job| {
            if let Ok(mut warnings) = job.warnings.lock() {
                warnings.extend(notes);
            }
            job.update(&old, &new, keep_user)
        });
        started.warnings = forced;
        Ok(started)
    }

    /// Starts going back to a kept earlier version of an applied app
    /// (`version`, or the one most recently left), with the user overrides
    /// it had when it was left. If that fails, the version it leaves is
    /// applied again with its own overrides.
    ///
    /// # Errors
    /// [`Error::Rollback`] when there is no kept version to go to (or the
    /// one named is not kept); unknown app, busy, illegal transition.
    pub fn rollback(&self, app: &AppName, version: Option<&str>) -> Result<Started, Error> {
        let record = self.store().app(app)?;
        let refuse = |reason: String| Error::Rollback {
            app: app.to_string(),
            reason,
        };
        if let Some(target) = &record.target_version {
            return Err(refuse(format!(
                "an update to {target} is pending; `capstan app recover {app}` first"
            )));
        }
        let kept = self.kept_versions(&record)?;
        let names = || {
            if kept.is_empty() {
                "none is kept".to_owned()
            } else {
                let list: Vec<&str> = kept.iter().map(|k| k.version.as_str()).collect();
                format!("kept: {}", list.join(", "))
            }
        };
        let snapshot = match version {
            Some(v) if v == record.active_version => {
                return Err(refuse(format!(
                    "{v} is the active version; `capstan app apply {app}` applies it again"
                )));
            }
            Some(v) => kept
                .iter()
                .find(|k| k.version == v)
                .cloned()
                .ok_or_else(|| refuse(format!("version {v} is not kept ({})", names())))?,
            None => kept
                .first()
                .cloned()
                .ok_or_else(|| refuse(format!("no earlier version is kept ({})", names())))?,
        };
        let current = self.stored(app, &record.active_version)?;
        let to = self.stored(app, &snapshot.version)?;
        let op = self.store().begin_operation(
            app,
            Operation::Rollback,
            rules::ROLLBACK_FROM,
            AppState::Updating,
        )?;
        self.inner.work.checkpoints.reach("rollback:begun");
        let staged = self
            .store()
            .save_user_snapshot(app, &record.active_version)
            .and_then(|()| self.store().set_target_version(app, Some(&to.version)));
        if let Err(e) = staged {
            let finish = Finish::failed(
                record.state,
                format!("rollback to {} failed: {e}", to.version),
            )
            .with_target(TargetChange::Discard);
            self.store().finish_operation(op, &finish)?;
            self.inner.work.metrics.operation("rollback", "failed");
            return Err(Error::Store(e));
        }
        let user = snapshot.charts;
        Ok(self.spawn(app, op, Operation::Rollback, move |job| {
            job.rollback(&current, &to, &user)
        }))
    }

    /// The versions `app rollback` can go to, most recently left first:
    /// neither active nor an update's target, left at least once (so their
    /// user overrides were saved), at most `keep_versions - 1` of them.
    fn kept_versions(&self, record: &AppRecord) -> Result<Vec<UserSnapshot>, Error> {
        let stored = self.store().list_versions(&record.name)?;
        let mut kept: Vec<UserSnapshot> = self
            .store()
            .user_snapshots(&record.name)?
            .into_iter()
            .filter(|s| {
                s.version != record.active_version
                    && record.target_version.as_deref() != Some(s.version.as_str())
                    && stored.iter().any(|v| v.version == s.version)
            })
            .collect();
        kept.truncate(self.inner.policies.keep_versions.saturating_sub(1));
        Ok(kept)
    }

    /// Forgets the versions an app left that are beyond what is kept
    /// (`keep_versions`). Only versions that were once active are touched;
    /// one being staged by an update is not (it has no saved overrides).
    fn trim_versions(&self, app: &AppName) {
        let Ok(record) = self.store().app(app) else {
            return;
        };
        let (Ok(kept), Ok(left)) = (
            self.kept_versions(&record),
            self.store().user_snapshots(app),
        ) else {
            return;
        };
        for snapshot in left {
            let in_use = snapshot.version == record.active_version
                || record.target_version.as_deref() == Some(snapshot.version.as_str())
                || kept.iter().any(|k| k.version == snapshot.version);
            if !in_use && self.store().version(app, &snapshot.version).is_ok() {
                tracing::info!(app = %app, version = %snapshot.version, keep = self.inner.policies.keep_versions,
                    "forgetting a version beyond the kept ones");
                self.drop_version(app, &snapshot.version);
            }
        }
    }

    /// Starts bringing an app whose apply, update or removal failed back to
    /// its active version, applied; a failed update's target version is
    /// removed from the target and forgotten.
    ///
    /// # Errors
    /// The store's busy and illegal-transition errors.
    pub fn recover(&self, app: &AppName) -> Result<Started, Error> {
        self.start_recover(app, Request::default(), None)
    }

    /// [`Lifecycle::recover`], with `note` (why no person asked for it)
    /// at the head of its message and `request` kept with it.
    pub(super) fn start_recover(
        &self,
        app: &AppName,
        request: Request,
        note: Option<String>,
    ) -> Result<Started, Error> {
        let before = self.store().app(app)?.state;
        let op = self.store().begin_operation(
            app,
            Operation::Recover,
            rules::RECOVER_FROM,
            AppState::Recovering,
        )?;
        self.inner.work.checkpoints.reach("recover:begun");
        let checked = self
            .keep_request(op, &request)
            .and_then(|()| self.versions_checked(app));
        let (version, target) = match checked {
            Ok(versions) => versions,
            Err(e) => {
                let finish = failed(AppState::failed_state_of(before), &e);
                return Err(self.end_early(app, op, Operation::Recover, finish, e));
            }
        };
        Ok(self.spawn(app, op, Operation::Recover, move |job| {
            let request = Apply {
                version: &version,
                replacing: target.as_ref(),
                user: UserLayer::Stored,
                flags: &NO_FLAGS,
                around: Some((Hook::PreRecover, Hook::PostRecover)),
                phase: "recover",
            };
            match apply_version(job, &request) {
                Ok(()) => Ending {
                    finish: Finish::succeeded(AppState::Applied)
                        .with_target(TargetChange::Discard)
                        .with_message(match &note {
                            Some(note) => {
                                format!("{note}; recovered: version {} applied", version.version)
                            }
                            None => format!("recovered: version {} applied", version.version),
                        }),
                    drop_version: target.map(|t| t.version),
                },
                Err(e) => Ending::new(failed(AppState::ApplyFailed, &e)),
            }
        }))
    }

    /// After an aborted operation: the `post-abort` hooks of the app's
    /// active version ([`Job::post_abort`]), within the operation (its
    /// actions are recorded with it; a second `app abort` interrupts
    /// them). A failure is added to the operation's message; the
    /// operation stays aborted.
    fn post_abort(&self, job: &Job<'_>, ending: &mut Ending) {
        let Ok(version) = self.active_version(&job.app) else {
            return;
        };
        if !version
            .metadata
            .plugins
            .iter()
            .any(|p| p.hooks.contains(&Hook::PostAbort))
        {
            return;
        }
        job.abort.store(false, Ordering::SeqCst);
        let result = self
            .active_version_checked(&job.app)
            .and_then(|version| post_abort(job, &version));
        let added = match result {
            Ok(()) => "post-abort hook called".to_string(),
            Err(e) => format!("post-abort hook failed: {}", e.one_line()),
        };
        tracing::info!(target: "capstan::audit", app = %job.app, "{added}");
        let message = match ending.finish.message.take() {
            Some(message) => format!("{message}; {added}"),
            None => added,
        };
        ending.finish.message = Some(message);
    }

    /// Runs `work` on its own thread as operation `op` of `app`, then
    /// finishes the operation with what it returned.
    fn spawn(
        &self,
        app: &AppName,
        op: OperationId,
        operation: Operation,
        work: impl FnOnce(&Job<'_>) -> Ending + Send + 'static,
    ) -> Started {
        let abort = Arc::new(AtomicBool::new(false));
        if let Ok(mut running) = self.inner.work.running.lock() {
            running.insert(app.to_string(), (op, abort.clone()));
        }
        let record = self.store().app(app).ok();
        let lifecycle = self.clone();
        let thread_app = app.clone();
        let handle = std::thread::Builder::new()
            .name(format!("{operation}-{app}"))
            .spawn(move || lifecycle.run(&thread_app, op, operation, &abort, work));
        let handle = match handle {
            Ok(handle) => Some(handle),
            Err(e) => {
                let finish = Finish::failed(
                    AppState::failed_state_of(
                        record.as_ref().map_or(AppState::Applying, |r| r.state),
                    ),
                    format!("could not start a thread: {e}"),
                );
                let _ = self.store().finish_operation(op, &finish);
                None
            }
        };
        Started {
            app: record.unwrap_or_else(|| placeholder(app)),
            operation: op,
            warnings: Vec::new(),
            handle,
        }
    }

    fn run(
        &self,
        app: &AppName,
        op: OperationId,
        operation: Operation,
        abort: &Arc<AtomicBool>,
        work: impl FnOnce(&Job<'_>) -> Ending,
    ) {
        let span = tracing::info_span!("operation", app = %app, operation = %operation, id = op.0);
        let _entered = span.enter();
        let started = std::time::Instant::now();
        let job = Job {
            inner: &self.inner,
            app: app.clone(),
            op,
            abort,
            warnings: Mutex::new(Vec::new()),
            requested_reapply: Mutex::new(None),
            redactor: Mutex::new(crate::secrets::Redactor::new()),
            automatic: AtomicBool::new(false),
        };
        // At most `max_operations` run at once; the rest wait here, in
        // order, with their progress saying so.
        let slot = self.inner.work.slots.acquire(op, abort, |counts| {
            tracing::info!(
                running = counts.running,
                queued = counts.queued,
                max = counts.max,
                "operation queued: the daemon runs at most --max-operations at once"
            );
            let _ = self.store().set_progress(
                op,
                Some(&format!(
                    "queued: {} operations running (at most {} at once), {} waiting with this one",
                    counts.running, counts.max, counts.queued
                )),
            );
        });
        let mut ending = work(&job);
        if ending.finish.outcome == Outcome::Interrupted {
            // Stopped at a checkpoint for the next leader: nothing is
            // written, so it finds the operation running, as after a
            // crash, and resumes it (`leading`).
            self.inner.work.charts.end(app.as_str(), op);
            drop(slot);
            if let Ok(mut running) = self.inner.work.running.lock()
                && running.get(app.as_str()).is_some_and(|(id, _)| *id == op)
            {
                running.remove(app.as_str());
            }
            self.inner
                .work
                .metrics
                .operation(operation.as_str(), Outcome::Interrupted.as_str());
            tracing::info!(target: "capstan::lease", "operation handed over to the next leader");
            return;
        }
        if ending.finish.outcome == Outcome::Aborted {
            self.post_abort(&job, &mut ending);
        }
        // No secret value an operation placed reaches its message.
        if let Some(message) = ending.finish.message.take() {
            ending.finish.message = Some(job.redact(&message));
        }
        // The operation rendered with the facts in effect: whatever the
        // last re-evaluation found is out of date; but a plugin may have
        // asked for another apply (`request-reapply`).
        let requested = job
            .requested_reapply
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match requested {
            Some(reason) => {
                self.inner
                    .work
                    .reapply_marks()
                    .insert(app.to_string(), reason);
                self.inner.work.metrics.reapply_needed();
            }
            None => {
                self.inner.work.reapply_marks().remove(app.as_str());
            }
        }
        // The charts' clock stops with the work.
        self.inner.work.charts.end(app.as_str(), op);
        self.inner
            .work
            .checkpoints
            .reach(&format!("{}:finishing", operation.as_str()));
        let outcome = ending.finish.outcome;
        // The work is done: its end must be recorded, or the app would stay
        // in its transitional state (busy) until the next start. A full
        // disk or a read-only state folder is waited out.
        let mut delay = std::time::Duration::from_millis(250);
        loop {
            match self.store().finish_operation(op, &ending.finish) {
                Ok(record) => {
                    tracing::info!(state = %record.state, outcome = %outcome,
                        message = record.message.as_deref().unwrap_or(""), "operation finished");
                    break;
                }
                Err(e) if e.is_out_of_storage() || e.is_busy_database() => {
                    tracing::warn!(error = %crate::lifecycle::Error::from(e).one_line(), retry_in = ?delay,
                        "could not record the end of the operation; retrying");
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(std::time::Duration::from_secs(5));
                }
                Err(e) => {
                    tracing::error!(error = %e, "could not record the end of the operation");
                    break;
                }
            }
        }
        // Its end is recorded: the next in line may start.
        drop(slot);
        self.inner
            .work
            .metrics
            .operation(operation.as_str(), outcome.as_str());
        self.inner
            .work
            .metrics
            .operation_took(operation.as_str(), started.elapsed());
        if let Ok(mut running) = self.inner.work.running.lock()
            && running.get(app.as_str()).is_some_and(|(id, _)| *id == op)
        {
            running.remove(app.as_str());
        }
        if let Some(version) = ending.drop_version {
            self.inner
                .work
                .checkpoints
                .reach(&format!("{}:dropping-version", operation.as_str()));
            let kept = self
                .store()
                .app(app)
                .ok()
                .and_then(|record| self.kept_versions(&record).ok())
                .is_some_and(|kept| kept.iter().any(|k| k.version == version));
            if !kept {
                self.drop_version(app, &version);
            }
        }
        if matches!(operation, Operation::Update | Operation::Rollback) {
            self.trim_versions(app);
        }
    }

    /// Forgets a version that is neither active nor a target, and its
    /// files. Failures are logged: the next start sweeps again.
    fn drop_version(&self, app: &AppName, version: &str) {
        match self.store().delete_version(app, version) {
            Ok(record) => {
                if let Err(e) = remove_dir(&record.bundle_dir) {
                    tracing::warn!(app = %app, version, error = %e.one_line(), "could not remove a version's files");
                }
            }
            Err(e) => tracing::warn!(app = %app, version, error = %e, "could not forget a version"),
        }
    }

    // ---- bundles ----

    /// Keeps a verified archive where other replicas find it (cluster
    /// mode); the source the version records.
    fn keep_bundle(
        &self,
        record: &VersionRecord,
        capture: Capture<impl Read>,
        source: Option<String>,
    ) -> Result<Option<String>, Error> {
        let Some(home) = &self.inner.cluster.bundle_home else {
            return Ok(source);
        };
        home.keep(
            record.app.as_str(),
            &record.version,
            &capture.into_bytes(),
            source.as_deref(),
        )
        .map_err(|reason| Error::BundleHome {
            app: record.app.to_string(),
            version: record.version.clone(),
            reason,
        })
    }

    /// A stored version, its folder fetched first when this replica lacks
    /// it ([`StoredVersion::load`]).
    pub(super) fn stored(&self, app: &AppName, version: &str) -> Result<StoredVersion, Error> {
        self.restore_bundle(app, version)?;
        StoredVersion::load(self.store(), app, version)
    }

    /// [`Lifecycle::stored`] reading the metadata only.
    pub(super) fn stored_metadata(
        &self,
        app: &AppName,
        version: &str,
    ) -> Result<StoredVersion, Error> {
        self.restore_bundle(app, version)?;
        StoredVersion::load_metadata(self.store(), app, version)
    }

    /// Fetches and unpacks a version's archive this replica lacks, checked
    /// as an upload is and against the digest the store recorded.
    fn restore_bundle(&self, app: &AppName, version: &str) -> Result<(), Error> {
        let Some(home) = &self.inner.cluster.bundle_home else {
            // One daemon: its folder is the only one. Replicas without a
            // registry share nothing but the store: say so, not "damaged".
            if self.inner.cluster.leadership.is_some()
                && !self.store().version(app, version)?.bundle_dir.exists()
            {
                return Err(Error::BundleHome {
                    app: app.to_string(),
                    version: version.to_owned(),
                    reason: "this replica does not hold the bundle (another uploaded it) and no \
                             --bundle-registry is set to fetch it from"
                        .to_owned(),
                });
            }
            return Ok(());
        };
        let _one = self
            .inner
            .cluster
            .restoring
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let record = self.store().version(app, version)?;
        if record.bundle_dir.exists() {
            return Ok(());
        }
        let failed = |reason: String| Error::BundleHome {
            app: app.to_string(),
            version: version.to_owned(),
            reason,
        };
        let bytes = home.fetch(&record).map_err(failed)?;
        let (bundle, digest) = self.verify(&bytes[..])?;
        if digest != record.bundle_digest {
            return Err(failed(format!(
                "the fetched archive has digest {digest}, the store recorded {}",
                record.bundle_digest
            )));
        }
        let parent = record.bundle_dir.parent().unwrap_or(Path::new("."));
        create_private_dir(parent)?;
        bundle
            .move_to(&record.bundle_dir)
            .map_err(|e| Error::Bundle(Box::new(e)))?;
        tracing::info!(app = %app, version, "bundle fetched into this replica's folder");
        Ok(())
    }

    fn verify(&self, archive: impl Read) -> Result<(VerifiedBundle, String), Error> {
        let mut hashing = bundle::HashingReader::new(archive);
        let bundle = bundle::verify_and_unpack(
            &mut hashing,
            &self.inner.policies.trust,
            &self.inner.paths.staging(),
            &self.inner.policies.limits,
        )
        .map_err(|e| Error::Bundle(Box::new(e)))?;
        super::admit::check(&self.inner.services.sandbox, &bundle)
            .map_err(|e| Error::Bundle(Box::new(e)))?;
        // Drain what the tar reader left (padding), so the digest covers
        // the whole archive.
        let _ = std::io::copy(&mut hashing, &mut std::io::sink());
        Ok((bundle, hashing.finish().to_hex()))
    }

    fn version_record(
        &self,
        bundle: &VerifiedBundle,
        digest: &str,
    ) -> Result<VersionRecord, Error> {
        let metadata = bundle.metadata();
        let name = metadata.name.as_str();
        let app = AppName::new(name).map_err(|_| Error::AppName {
            name: name.to_owned(),
        })?;
        let version = metadata.version.to_string();
        let text = std::fs::read_to_string(bundle.root().join(bundle::METADATA_PATH)).map_err(
            |source| Error::Io {
                what: "reading the verified capstan.yaml".into(),
                source,
            },
        )?;
        let json: serde_json::Value =
            serde_yaml_ng::from_str(&text).unwrap_or(serde_json::Value::Null);
        Ok(VersionRecord {
            bundle_dir: self.inner.paths.bundle_dir(app.as_str(), &version),
            app,
            version,
            bundle_digest: digest.to_owned(),
            signer: bundle.signer().to_string(),
            metadata: json,
            uploaded_at: 0,
            source: None,
        })
    }

    /// Moves a verified bundle into place and stores its static overrides.
    fn store_bundle(&self, bundle: VerifiedBundle, record: &VersionRecord) -> Result<(), Error> {
        let parent = record.bundle_dir.parent().unwrap_or(Path::new("."));
        create_private_dir(parent)?;
        let bundle = bundle
            .move_to(&record.bundle_dir)
            .map_err(|e| Error::Bundle(Box::new(e)))?;
        self.inner.work.checkpoints.reach("upload:moved");
        let layer = OverrideLayer::Static {
            version: record.version.clone(),
        };
        let charts = static_layer(&record.bundle_dir, bundle.metadata())?;
        self.store().replace_layer(&record.app, &layer, &charts)?;
        Ok(())
    }

    fn stage_update(
        &self,
        bundle: VerifiedBundle,
        record: &VersionRecord,
        active: &str,
    ) -> Result<(), Error> {
        if record.version != active && self.store().version(&record.app, &record.version).is_ok() {
            // A kept earlier version comes back as a new upload: the bundle
            // just verified replaces it (and its saved overrides).
            self.drop_version(&record.app, &record.version);
        }
        self.store().save_user_snapshot(&record.app, active)?;
        self.store().add_version(record)?;
        self.store_bundle(bundle, record)?;
        self.store()
            .set_target_version(&record.app, Some(&record.version))?;
        self.inner.work.checkpoints.reach("update:staged");
        Ok(())
    }
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
    /// with `because` ([`super::reevaluate`]); returns how many apps were
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

    fn start_apply(
        &self,
        app: &AppName,
        flags: ApplyRequest,
        note: Option<String>,
        resumes: u32,
    ) -> Result<Started, Error> {
        Lifecycle::start_apply(self, app, flags, note, resumes)
    }

    fn start_remove(
        &self,
        app: &AppName,
        request: Request,
        note: Option<String>,
    ) -> Result<Started, Error> {
        Lifecycle::start_remove(self, app, request, note)
    }

    fn start_recover(
        &self,
        app: &AppName,
        request: Request,
        note: Option<String>,
    ) -> Result<Started, Error> {
        Lifecycle::start_recover(self, app, request, note)
    }
}

impl Job<'_> {
    /// The work of an update: apply the new version; on failure roll back.
    fn update(&self, old: &StoredVersion, new: &StoredVersion, keep_user: bool) -> Ending {
        let request = Apply {
            version: new,
            replacing: Some(old),
            user: if keep_user {
                UserLayer::Stored
            } else {
                UserLayer::Dropped
            },
            flags: &NO_FLAGS,
            around: Some((Hook::PreUpdate, Hook::PostUpdate)),
            phase: "update",
        };
        let error = match apply_version(self, &request) {
            Ok(()) => return self.promote(old, new, keep_user),
            Err(e) => e,
        };
        self.undo_failed_change(
            &Undo {
                change: format!("update to {}", new.version),
                failed: new,
                back_to: old,
                how: UndoHow::RollBack,
                phase: "rollback",
            },
            &error,
        )
    }

    /// The work of a rollback: apply the kept version `to` with its saved
    /// user overrides; on failure apply `current` again.
    fn rollback(
        &self,
        current: &StoredVersion,
        to: &StoredVersion,
        user: &[(String, serde_json::Value)],
    ) -> Ending {
        let request = Apply {
            version: to,
            replacing: Some(current),
            user: UserLayer::Given(user),
            flags: &NO_FLAGS,
            around: Some((Hook::PreUpdate, Hook::PostUpdate)),
            phase: "rollback-to",
        };
        let error = match apply_version(self, &request) {
            Ok(()) => {
                if let Err(e) =
                    self.inner
                        .services
                        .store
                        .replace_layer(&self.app, &OverrideLayer::User, user)
                {
                    return Ending::new(failed(AppState::ApplyFailed, &Error::Store(e)));
                }
                let note = format!(
                    "rolled back from {} to {} with the user overrides {} had",
                    current.version, to.version, to.version
                );
                return Ending::new(with_note(
                    Finish::succeeded(AppState::Applied)
                        .with_target(TargetChange::Promote)
                        .with_message(note),
                    self.warnings_note(),
                ));
            }
            Err(e) => e,
        };
        self.undo_failed_change(
            &Undo {
                change: format!("rollback to {}", to.version),
                failed: to,
                back_to: current,
                how: UndoHow::ApplyAgain,
                phase: "rollback-undo",
            },
            &error,
        )
    }

    /// After a change (an update, a rollback) failed: an aborted change
    /// ends there (`recover` applies the version it left again); else the
    /// version it left is applied again with its stored user overrides.
    fn undo_failed_change(&self, undo: &Undo<'_>, error: &Error) -> Ending {
        let (change, back) = (&undo.change, &undo.back_to.version);
        if matches!(error, Error::HandedOver) {
            // The next leader finishes it as it finishes any interrupted
            // change: `recover` applies the version it left again.
            return Ending::new(failed(AppState::ApplyFailed, error));
        }
        if matches!(error, Error::Aborted) {
            let note = format!("{change} aborted; `recover` applies {back} again");
            return Ending::new(
                Finish::failed(AppState::ApplyFailed, note).with_outcome(Outcome::Aborted),
            );
        }
        let reason = error.one_line();
        tracing::warn!(error = %reason, "{change} failed; {}", undo.how.doing(back));
        let note = format!("{change} failed: {reason}; {}", undo.how.doing(back));
        if let Err(e) =
            self.inner
                .services
                .store
                .advance_operation(self.op, AppState::Recovering, Some(&note))
        {
            return Ending::new(failed(AppState::ApplyFailed, &Error::Store(e)));
        }
        let request = Apply {
            version: undo.back_to,
            replacing: Some(undo.failed),
            user: UserLayer::Stored,
            flags: &NO_FLAGS,
            around: None,
            phase: undo.phase,
        };
        match apply_version(self, &request) {
            Ok(()) => Ending {
                finish: Finish {
                    state: AppState::Applied,
                    outcome: Outcome::Failed,
                    message: Some(format!(
                        "{change} failed: {reason}; {}",
                        undo.how.done(back)
                    )),
                    target: TargetChange::Discard,
                },
                drop_version: match undo.how {
                    UndoHow::RollBack => Some(undo.failed.version.clone()),
                    UndoHow::ApplyAgain => None,
                },
            },
            Err(e) => Ending::new(Finish::failed(
                AppState::ApplyFailed,
                format!(
                    "{change} failed: {reason}; {} failed: {}",
                    undo.how.attempt(back),
                    e.one_line()
                ),
            )),
        }
    }

    fn promote(&self, old: &StoredVersion, new: &StoredVersion, keep_user: bool) -> Ending {
        if !keep_user
            && let Err(e) =
                self.inner
                    .services
                    .store
                    .replace_layer(&self.app, &OverrideLayer::User, &[])
        {
            return Ending::new(failed(AppState::ApplyFailed, &Error::Store(e)));
        }
        let mut note = format!("updated from {} to {}", old.version, new.version);
        if let Ok(record) = self.inner.services.store.version(&self.app, &new.version)
            && let Some(source) = record.source
        {
            note.push_str(&format!(" from {source}"));
        }
        Ending {
            finish: with_note(
                Finish::succeeded(AppState::Applied)
                    .with_target(TargetChange::Promote)
                    .with_message(note),
                self.warnings_note(),
            ),
            drop_version: Some(old.version.clone()),
        }
    }
}

/// Each chart's static overrides, merged from the files the bundle in
/// `dir` ships for it.
fn static_layer(
    dir: &Path,
    metadata: &bundle::Metadata,
) -> Result<Vec<(String, serde_json::Value)>, Error> {
    let mut charts = Vec::new();
    for chart in &metadata.charts {
        if chart.overrides.is_empty() {
            continue;
        }
        let mut flags = crate::values::ValueFlags::default();
        for file in &chart.overrides {
            let text = std::fs::read_to_string(dir.join(file)).map_err(|source| Error::Io {
                what: format!("reading static overrides {file}"),
                source,
            })?;
            flags.files.push((file.clone(), text));
        }
        let merged =
            crate::values::merge_value_flags(&flags, &|_| Err(String::new())).map_err(|e| {
                Error::InvalidOverrides {
                    reason: match &e {
                        crate::values::Error::ValuesFile { name, source } => {
                            format!("static overrides {name}: {source}")
                        }
                        other => other.to_string(),
                    },
                }
            })?;
        let json = super::stored::to_json(&crate::values::Value::Map(merged))?;
        charts.push((chart.name.to_string(), json));
    }
    Ok(charts)
}

/// What a forced update forces, one line each.
fn forced_notes(active: &semver::Version, candidate: &bundle::Metadata) -> Vec<String> {
    let mut notes = Vec::new();
    if candidate.version < *active {
        notes.push(format!(
            "forced: a downgrade from {active} to {}",
            candidate.version
        ));
    } else if candidate.version == *active {
        notes.push(format!("forced: a reinstall of {active}"));
    }
    let from = &candidate.upgrades.from_versions;
    if !from.is_empty() && !from.iter().any(|spec| spec.matches(active)) {
        notes.push(format!(
            "forced: {} does not list {active} in upgrades.from_versions",
            candidate.version
        ));
    }
    notes
}

fn failed(state: AppState, error: &Error) -> Finish {
    let finish = Finish::failed(state, error.one_line());
    match error {
        Error::Aborted => finish.with_outcome(Outcome::Aborted),
        // Not written: the next leader finds it running (see `run`).
        Error::HandedOver => finish.with_outcome(Outcome::Interrupted),
        _ => finish,
    }
}

fn volume_view(volume: crate::store::VolumeRecord, used_by: Vec<String>) -> VolumeView {
    VolumeView {
        claim: format!("{}/{}", volume.namespace, volume.name),
        volume,
        used_by,
    }
}

fn with_note(finish: Finish, note: Option<String>) -> Finish {
    match (note, &finish.message) {
        (Some(note), Some(message)) => {
            let joined = format!("{message}; {note}");
            finish.with_message(joined)
        }
        (Some(note), None) => finish.with_message(note),
        (None, _) => finish,
    }
}

/// Refuses `rekind` naming a component `version` does not have; asked
/// twice by an apply: before it starts (so nothing is recorded) and again
/// against the verified version it applies.
fn check_rekind(app: &AppName, version: &StoredVersion, rekind: &[String]) -> Result<(), Error> {
    match rekind.iter().find(|c| !has_component(version, c)) {
        Some(unknown) => Err(Error::UnknownComponent {
            app: app.to_string(),
            component: unknown.clone(),
        }),
        None => Ok(()),
    }
}

fn has_component(version: &StoredVersion, name: &str) -> bool {
    version
        .metadata
        .components
        .iter()
        .any(|m| m.name.as_str() == name)
}

fn chart_summaries(version: &StoredVersion) -> Vec<ChartSummary> {
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

fn placeholder(app: &AppName) -> AppRecord {
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
    }
}

fn poisoned() -> Error {
    Error::Poisoned {
        what: "the table of running operations",
    }
}

/// A reader that keeps what passes through it when asked to (the archive
/// of an upload a bundle home keeps).
struct Capture<R> {
    inner: R,
    bytes: Option<Vec<u8>>,
}

impl<R: Read> Capture<R> {
    fn new(inner: R, keep: bool) -> Self {
        Capture {
            inner,
            bytes: keep.then(Vec::new),
        }
    }

    fn into_bytes(self) -> Vec<u8> {
        self.bytes.unwrap_or_default()
    }
}

impl<R: Read> Read for Capture<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(bytes) = &mut self.bytes {
            bytes.extend_from_slice(&buf[..n]);
        }
        Ok(n)
    }
}
