//! Durable state of the daemon: apps, their versions and states, per-chart
//! override layers, workload decisions, operation history and local
//! volumes, in one SQLite database at `<state dir>/state.db`.
//!
//! Why: the daemon must survive a crash at any point without losing an
//! override or leaving an app stuck. Every [`Store`] method is one
//! transaction, so each state change and its history entry are written
//! together or not at all; [`Store::begin_operation`] is where an illegal
//! transition or a second concurrent operation is refused, and
//! [`Store::reconcile_after_restart`] moves apps interrupted by a crash to
//! their failed state. The rules of *which* transitions an operation allows
//! belong to `lifecycle`, which passes them in.
//!
//! The store records what it is told; it never reads bundles, runs plugins,
//! merges values (values are opaque JSON here) or talks to the cluster, and
//! it does not delete bundle directories (it returns them to the caller).

pub mod cluster;
#[cfg(any(test, feature = "test-hooks"))]
pub mod conformance;
pub mod document;
mod error;
mod records;
mod rules;
mod schema;
mod sqlite;
mod state;
pub mod transfer;

use std::path::Path;

use serde_json::Value;

use crate::model::AppName;
pub use document::{AppDoc, AppSpec, AppStatus};
pub use error::Error;
pub use records::{
    AppRecord, AutomaticPause, DaemonKey, DecisionRecord, Finish, HistoryEntry, OperationId,
    OverrideRecord, Reconciled, ReleaseRecord, TargetChange, UnixMillis, UserSnapshot,
    VersionRecord, VolumeRecord,
};
pub use schema::{APPLICATION_ID, BUSY_TIMEOUT, known_version as schema_version};
pub use sqlite::{DATABASE_FILE, SqliteStore};
pub use state::{AppState, Operation, Outcome, OverrideLayer, UnknownWord};

/// The daemon's durable state. Object safe and `Send + Sync`, so the API
/// holds an `Arc<dyn Store>` and tests can swap in a double.
///
/// Every method runs in one transaction: it either writes everything it
/// describes or nothing. No method retries; a database held by another
/// process past [`BUSY_TIMEOUT`] gives an [`Error::Database`] for which
/// [`Error::is_busy_database`] is true.
pub trait Store: Send + Sync {
    // ---- apps and operations ----

    /// Stores a new app with its first version, in state `uploading`, and
    /// starts its upload operation. Finish it with
    /// [`finish_operation`](Store::finish_operation) (`uploaded` or
    /// `upload-failed`). `uploaded_at` is stamped by the store.
    ///
    /// # Errors
    /// [`Error::AppExists`] if the name is taken, [`Error::NonUtf8Path`] for
    /// a bundle directory that is not UTF-8.
    fn begin_upload(&self, version: &VersionRecord) -> Result<OperationId, Error>;

    /// Starts `operation` on `app`: checks its state is one of
    /// `allowed_from`, moves it to the transitional state `to`, clears its
    /// progress and message, and opens a history entry.
    ///
    /// # Errors
    /// [`Error::UnknownApp`]; [`Error::NotTransitional`] if `to` is not a
    /// transitional state; [`Error::Busy`] if the app is in a transitional
    /// state not in `allowed_from` (another operation runs);
    /// [`Error::IllegalTransition`] if it is in any other state not allowed.
    fn begin_operation(
        &self,
        app: &AppName,
        operation: Operation,
        allowed_from: &[AppState],
        to: AppState,
    ) -> Result<OperationId, Error>;

    /// Records the running operation's current step (shown as the app's
    /// progress); `None` clears it.
    ///
    /// # Errors
    /// [`Error::UnknownOperation`], [`Error::OperationFinished`].
    fn set_progress(&self, id: OperationId, progress: Option<&str>) -> Result<(), Error>;

    /// Keeps what the running operation was asked to do beyond its name
    /// (the lifecycle's JSON) with its history entry, for a new leader to
    /// resume it from ([`HistoryEntry::request`]).
    ///
    /// # Errors
    /// [`Error::UnknownOperation`], [`Error::OperationFinished`].
    fn set_request(&self, id: OperationId, request: &str) -> Result<(), Error>;

    /// Moves the app of a running operation to another transitional state,
    /// e.g. `updating` -> `recovering` when an update starts its rollback,
    /// with an optional message kept on the app and the history entry.
    ///
    /// # Errors
    /// [`Error::UnknownOperation`], [`Error::OperationFinished`],
    /// [`Error::NotTransitional`].
    fn advance_operation(
        &self,
        id: OperationId,
        to: AppState,
        message: Option<&str>,
    ) -> Result<(), Error>;

    /// Ends a running operation: sets the app's state, message and versions
    /// as `finish` says, clears its progress, and closes the history entry.
    /// Returns the app as written.
    ///
    /// # Errors
    /// [`Error::NotFinal`] if the state is transitional or the outcome is
    /// `running`; [`Error::UnknownOperation`]; [`Error::OperationFinished`]
    /// (also when reconciliation already closed it);
    /// [`Error::NoTargetVersion`] for a promote with no target.
    fn finish_operation(&self, id: OperationId, finish: &Finish) -> Result<AppRecord, Error>;

    /// Run once at daemon start, before serving: every app in a
    /// transitional state is moved to its failed state
    /// ([`AppState::failed_state_of`]) with a message saying what was
    /// interrupted, and every running history entry is closed as
    /// [`Outcome::Interrupted`]. Versions and overrides are not touched
    /// (a target version stays for `recover`). Returns the apps moved.
    ///
    /// # Errors
    /// [`Error::Database`]; nothing is changed then.
    fn reconcile_after_restart(&self) -> Result<Vec<Reconciled>, Error>;

    /// One app.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn app(&self, app: &AppName) -> Result<AppRecord, Error>;

    /// All apps, by name.
    ///
    /// # Errors
    /// [`Error::Database`].
    fn list_apps(&self) -> Result<Vec<AppRecord>, Error>;

    /// Deletes the app and every row of it (versions, overrides of all
    /// layers, decisions, history) if its state is in `allowed_from`.
    /// Returns its versions so the caller can remove their bundle
    /// directories (the store does not touch files).
    ///
    /// # Errors
    /// [`Error::UnknownApp`]; [`Error::Busy`] or [`Error::IllegalTransition`]
    /// (with [`Operation::Delete`]) when the state is not allowed.
    fn delete_app(
        &self,
        app: &AppName,
        allowed_from: &[AppState],
    ) -> Result<Vec<VersionRecord>, Error>;

    /// Pauses (`Some`) or resumes (`None`) the daemon's automatic
    /// operations for `app` (`app pause`, `app resume`) and records it in
    /// the history as a finished `pause` or `resume` entry whose message
    /// is `message`; the app's state and message are untouched (a running
    /// operation goes on). Returns the app as written.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn set_automatic_pause(
        &self,
        app: &AppName,
        pause: Option<&AutomaticPause>,
        message: &str,
    ) -> Result<AppRecord, Error>;

    // ---- versions ----

    /// Stores another version of an existing app (e.g. the bundle of an
    /// update); `uploaded_at` is stamped by the store and the stored record
    /// returned.
    ///
    /// # Errors
    /// [`Error::UnknownApp`], [`Error::VersionExists`],
    /// [`Error::NonUtf8Path`].
    fn add_version(&self, version: &VersionRecord) -> Result<VersionRecord, Error>;

    /// One version of an app.
    ///
    /// # Errors
    /// [`Error::UnknownApp`], [`Error::UnknownVersion`].
    fn version(&self, app: &AppName, version: &str) -> Result<VersionRecord, Error>;

    /// All versions of an app, oldest upload first.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn list_versions(&self, app: &AppName) -> Result<Vec<VersionRecord>, Error>;

    /// Deletes a version that is neither active nor the target, with its
    /// static and system overrides. Returns it (for its bundle directory).
    ///
    /// # Errors
    /// [`Error::UnknownApp`], [`Error::UnknownVersion`],
    /// [`Error::VersionInUse`].
    fn delete_version(&self, app: &AppName, version: &str) -> Result<VersionRecord, Error>;

    /// Makes a stored version the active one.
    ///
    /// # Errors
    /// [`Error::UnknownApp`], [`Error::UnknownVersion`].
    fn set_active_version(&self, app: &AppName, version: &str) -> Result<(), Error>;

    /// Sets (or with `None` clears) the version an update moves to.
    ///
    /// # Errors
    /// [`Error::UnknownApp`], [`Error::UnknownVersion`].
    fn set_target_version(&self, app: &AppName, version: Option<&str>) -> Result<(), Error>;

    // ---- overrides ----

    /// Sets one layer of one chart, replacing what was there.
    ///
    /// # Errors
    /// [`Error::UnknownApp`]; [`Error::UnknownVersion`] for a static or
    /// system layer of a version not stored.
    fn set_override(
        &self,
        app: &AppName,
        chart: &str,
        layer: &OverrideLayer,
        values: &Value,
    ) -> Result<(), Error>;

    /// Replaces every chart of one layer at once (e.g. all system overrides
    /// a version's plugins computed): charts not in `charts` lose that
    /// layer, so an empty list clears it (e.g. the user layer of an update
    /// that does not keep user overrides). A chart given twice fails the
    /// whole call.
    ///
    /// # Errors
    /// As [`set_override`](Store::set_override); [`Error::Database`] for a
    /// repeated chart.
    fn replace_layer(
        &self,
        app: &AppName,
        layer: &OverrideLayer,
        charts: &[(String, Value)],
    ) -> Result<(), Error>;

    /// One layer of one chart, if set.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn override_layer(
        &self,
        app: &AppName,
        chart: &str,
        layer: &OverrideLayer,
    ) -> Result<Option<OverrideRecord>, Error>;

    /// Every stored layer of every chart of the app (all versions), by
    /// chart, then layer, then version.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn list_overrides(&self, app: &AppName) -> Result<Vec<OverrideRecord>, Error>;

    /// Deletes one layer of one chart; returns whether it existed.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn delete_override(
        &self,
        app: &AppName,
        chart: &str,
        layer: &OverrideLayer,
    ) -> Result<bool, Error>;

    /// Saves the app's current user layer (every chart) as the snapshot of
    /// `version`, replacing an earlier one; stamped with the time.
    ///
    /// # Errors
    /// [`Error::UnknownApp`], [`Error::UnknownVersion`].
    fn save_user_snapshot(&self, app: &AppName, version: &str) -> Result<(), Error>;

    /// Every saved user snapshot of the app, most recently saved first.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn user_snapshots(&self, app: &AppName) -> Result<Vec<UserSnapshot>, Error>;

    // ---- workload decisions ----

    /// Records (or replaces) the decision for a component. `decided_at` is
    /// stamped by the store; the stored record is returned.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn record_decision(&self, decision: &DecisionRecord) -> Result<DecisionRecord, Error>;

    /// The decision for a component, if made.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn decision(&self, app: &AppName, component: &str) -> Result<Option<DecisionRecord>, Error>;

    /// All decisions of the app, by component.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn list_decisions(&self, app: &AppName) -> Result<Vec<DecisionRecord>, Error>;

    /// Forgets a decision (for an explicit re-decision); returns whether it
    /// existed.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn delete_decision(&self, app: &AppName, component: &str) -> Result<bool, Error>;

    // ---- release inventories ----

    /// Records (or replaces) the inventory copy of one release.
    /// `updated_at` is stamped by the store; the stored record is returned.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn record_release(&self, release: &ReleaseRecord) -> Result<ReleaseRecord, Error>;

    /// The inventory copy of one release, if recorded.
    ///
    /// # Errors
    /// [`Error::UnknownApp`]; [`Error::Database`] for a row whose objects
    /// do not parse.
    fn release(&self, app: &AppName, chart: &str) -> Result<Option<ReleaseRecord>, Error>;

    /// Every recorded release of the app, by chart.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn list_releases(&self, app: &AppName) -> Result<Vec<ReleaseRecord>, Error>;

    /// Forgets one release (it was removed); returns whether it was
    /// recorded.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn delete_release(&self, app: &AppName, chart: &str) -> Result<bool, Error>;

    // ---- history ----

    /// The app's operations, oldest first.
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn history(&self, app: &AppName) -> Result<Vec<HistoryEntry>, Error>;

    /// One operation.
    ///
    /// # Errors
    /// [`Error::UnknownOperation`].
    fn operation(&self, id: OperationId) -> Result<HistoryEntry, Error>;

    /// The app's running operation, if any (for abort and progress
    /// displays).
    ///
    /// # Errors
    /// [`Error::UnknownApp`].
    fn running_operation(&self, app: &AppName) -> Result<Option<HistoryEntry>, Error>;

    // ---- local volumes ----

    /// Records a new volume; `created_at` is stamped by the store and the
    /// stored record returned.
    ///
    /// # Errors
    /// [`Error::VolumeExists`], [`Error::NonUtf8Path`].
    fn create_volume(&self, volume: &VolumeRecord) -> Result<VolumeRecord, Error>;

    /// One volume, if it exists.
    ///
    /// # Errors
    /// [`Error::Database`].
    fn volume(&self, name: &str) -> Result<Option<VolumeRecord>, Error>;

    /// All volumes, by name.
    ///
    /// # Errors
    /// [`Error::Database`].
    fn list_volumes(&self) -> Result<Vec<VolumeRecord>, Error>;

    /// Deletes a volume record; returns it if it existed.
    ///
    /// # Errors
    /// [`Error::Database`].
    fn delete_volume(&self, name: &str) -> Result<Option<VolumeRecord>, Error>;

    /// Stores an app exactly as `doc` holds it — versions, every layer,
    /// decisions, snapshots, state, history with its ids and times,
    /// release inventories — for `capstan store import`.
    ///
    /// # Errors
    /// [`Error::AppExists`] when the name is taken (nothing is written);
    /// the backend's errors.
    fn import_app(&self, doc: &AppDoc) -> Result<(), Error>;

    /// Stores a volume exactly as given (its creation time kept).
    ///
    /// # Errors
    /// [`Error::VolumeExists`]; the backend's errors.
    fn import_volume(&self, volume: &VolumeRecord) -> Result<(), Error>;

    /// The daemon's key: 32 random bytes made at the first call and the
    /// same at every later one, for every daemon sharing this store (a
    /// cluster store's replicas). The lifecycle binds what it generates
    /// to the app it generated it for with it (a generated secret's MAC),
    /// so nothing a plugin writes can pass for it.
    ///
    /// # Errors
    /// The backend's errors; a stored key that is not 32 bytes.
    fn daemon_key(&self) -> Result<DaemonKey, Error> {
        self.daemon_key_or(&DaemonKey::random())
    }

    /// The daemon's key: `fresh` stored when the store holds none yet,
    /// else the one it holds (`capstan store import` carries a key over
    /// with it).
    ///
    /// # Errors
    /// As [`Store::daemon_key`].
    fn daemon_key_or(&self, fresh: &DaemonKey) -> Result<DaemonKey, Error>;

    /// Whether a write was refused because another writer came first, so
    /// this store writes nothing more until it reconciles (a store shared
    /// by replicas; never for SQLite).
    fn fenced(&self) -> bool {
        false
    }
}

/// Opens (creating if needed) the store in `state_dir`; shorthand for
/// [`SqliteStore::open`].
///
/// # Errors
/// As [`SqliteStore::open`].
pub fn open(state_dir: &Path) -> Result<SqliteStore, Error> {
    SqliteStore::open(state_dir)
}

#[cfg(test)]
mod tests;
