//! [`DocStore`]: the [`Store`] kept as one document per app (and one per
//! volume) in a key-value backend with optimistic concurrency — the
//! shape of a custom resource on an API server ([`super::cluster`]), and
//! of [`memory::MemoryBackend`] for tests.
//!
//! Why documents: Kubernetes gives one object one atomic write, guarded by
//! its `resourceVersion`, and no transaction across objects. Everything
//! one `Store` method touches belongs to one app, so one app's whole state
//! (versions, override layers, decisions, user snapshots, state, history,
//! release inventories) is one [`AppDoc`], and every method is one
//! read-modify-write of it. The rules (which transitions, what cascades
//! with a deleted version, the orders lists come in) are the SQLite
//! store's, checked against it by the differential tests.
//!
//! Fencing: the store writes each app at the version *it last wrote or
//! read for writing* (a cache per app), not at a version re-read just
//! before the write. A write after someone else's write is therefore
//! refused ([`Error::Conflict`]) instead of overwriting it: a daemon that
//! lost its Lease and woke up later cannot undo what the new leader did.
//! After one refusal the store is *fenced*: every later write is refused
//! ([`Error::Fenced`]) without being sent, so the daemon does not go on
//! after re-reading, and steps down ([`DocStore::is_fenced`]).
//! [`Store::reconcile_after_restart`] (run by a daemon when it starts to
//! lead) reads every app afresh into the cache and lifts the fence, so
//! from then on any write by another writer fences this one.
//!
//! Bounds: history is kept to [`MAX_HISTORY`] entries per app and the
//! document to the backend's size limit, oldest finished entries trimmed
//! first; a write that does not fit even then is refused
//! ([`Error::TooLarge`]) and nothing is written.

pub mod memory;
mod rules;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Store;
use super::error::Error;
use super::records::{
    AppRecord, AutomaticPause, DaemonKey, DecisionRecord, Finish, HistoryEntry, OperationId,
    OverrideRecord, Reconciled, ReleaseRecord, TargetChange, UnixMillis, UserSnapshot,
    VersionRecord, VolumeRecord,
};
use super::state::{AppState, Operation, Outcome, OverrideLayer};
use crate::model::AppName;
use rules::{
    check_allowed, now, reconcile, remove_where, require_transitional, sort_overrides, upsert,
};

/// The most history entries one app keeps; older finished entries are
/// dropped first (a running one never).
pub const MAX_HISTORY: usize = 100;

/// What the operator and the bundles gave: the app's versions, override
/// layers, workload decisions and user snapshots (a custom resource's
/// `spec`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppSpec {
    /// Stored versions, oldest upload first.
    #[serde(default)]
    pub versions: Vec<VersionRecord>,
    /// Every layer of every chart, by chart, layer, version.
    #[serde(default)]
    pub overrides: Vec<OverrideRecord>,
    /// Workload decisions, by component.
    #[serde(default)]
    pub decisions: Vec<DecisionRecord>,
    /// Saved user layers, one per version.
    #[serde(default)]
    pub user_snapshots: Vec<UserSnapshot>,
}

/// What the daemon observed and did: state, versions in effect, history,
/// release inventories (a custom resource's `status`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppStatus {
    /// Where the app is; an App written without its status (a create
    /// whose status write was lost) reads as `uploading`, which start-up
    /// reconciliation moves to `upload-failed`.
    #[serde(default = "uploading")]
    pub state: AppState,
    /// The version in effect.
    #[serde(default)]
    pub active_version: String,
    /// An update's target.
    #[serde(default)]
    pub target_version: Option<String>,
    /// The running operation's step.
    #[serde(default)]
    pub progress: Option<String>,
    /// Why the app is in its state.
    #[serde(default)]
    pub message: Option<String>,
    /// First upload.
    #[serde(default)]
    pub created_at: UnixMillis,
    /// Last change of the fields above.
    #[serde(default)]
    pub updated_at: UnixMillis,
    /// Operations, oldest first (at most [`MAX_HISTORY`]).
    #[serde(default)]
    pub history: Vec<HistoryEntry>,
    /// Release inventories, by chart.
    #[serde(default)]
    pub releases: Vec<ReleaseRecord>,
    /// An operator's pause of the app's automatic operations; absent
    /// when not paused (and in documents written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic_pause: Option<AutomaticPause>,
}

fn uploading() -> AppState {
    AppState::Uploading
}

impl Default for AppStatus {
    fn default() -> Self {
        AppStatus {
            state: AppState::Uploading,
            active_version: String::new(),
            target_version: None,
            progress: None,
            message: None,
            created_at: 0,
            updated_at: 0,
            history: Vec::new(),
            releases: Vec::new(),
            automatic_pause: None,
        }
    }
}

/// One app's whole state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppDoc {
    /// The app (the document's key).
    pub name: AppName,
    /// See [`AppSpec`].
    #[serde(default)]
    pub spec: AppSpec,
    /// See [`AppStatus`].
    #[serde(default)]
    pub status: AppStatus,
}

impl AppDoc {
    /// The app's record.
    pub fn record(&self) -> AppRecord {
        AppRecord {
            name: self.name.clone(),
            state: self.status.state,
            active_version: self.status.active_version.clone(),
            target_version: self.status.target_version.clone(),
            progress: self.status.progress.clone(),
            message: self.status.message.clone(),
            created_at: self.status.created_at,
            updated_at: self.status.updated_at,
            reapply_needed: None,
            automatic_pause: self.status.automatic_pause.clone(),
        }
    }

    /// Makes every record name this app (a document edited by hand could
    /// say otherwise; the key wins).
    pub fn normalize(&mut self) {
        let name = &self.name;
        self.spec
            .versions
            .iter_mut()
            .for_each(|v| v.app = name.clone());
        self.spec
            .overrides
            .iter_mut()
            .for_each(|o| o.app = name.clone());
        self.spec
            .decisions
            .iter_mut()
            .for_each(|d| d.app = name.clone());
        self.status
            .history
            .iter_mut()
            .for_each(|h| h.app = name.clone());
        self.status
            .releases
            .iter_mut()
            .for_each(|r| r.app = name.clone());
    }

    fn version(&self, version: &str) -> Result<&VersionRecord, Error> {
        self.spec
            .versions
            .iter()
            .find(|v| v.version == version)
            .ok_or_else(|| Error::UnknownVersion {
                app: self.name.clone(),
                version: version.to_owned(),
            })
    }

    fn require_layer_version(&self, layer: &OverrideLayer) -> Result<(), Error> {
        match layer.version() {
            Some(version) => self.version(version).map(drop),
            None => Ok(()),
        }
    }

    fn entry_mut(&mut self, id: OperationId) -> Result<&mut HistoryEntry, Error> {
        self.status
            .history
            .iter_mut()
            .find(|h| h.id == id)
            .ok_or(Error::UnknownOperation { id })
    }

    fn running_entry(&mut self, id: OperationId) -> Result<&mut HistoryEntry, Error> {
        let name = self.name.clone();
        let entry = self.entry_mut(id)?;
        if entry.outcome != Outcome::Running {
            return Err(Error::OperationFinished { id, app: name });
        }
        Ok(entry)
    }
}

/// A document as the backend holds it, with the version a guarded write
/// must name.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored<T> {
    /// The document.
    pub doc: T,
    /// The backend's version of it (a `resourceVersion`).
    pub version: String,
}

/// Where documents live. Every write is guarded: [`Backend::update`] and
/// [`Backend::delete`] fail with [`Error::Conflict`] when the document
/// changed since `before` was read.
pub trait Backend: Send + Sync {
    /// One app's document, if stored.
    ///
    /// # Errors
    /// The backend's errors; a document that does not parse.
    fn get(&self, app: &AppName) -> Result<Option<Stored<AppDoc>>, Error>;
    /// Every app's document, by name.
    ///
    /// # Errors
    /// As [`Backend::get`].
    fn list(&self) -> Result<Vec<Stored<AppDoc>>, Error>;
    /// Stores a new document; [`Error::AppExists`] when the name is taken.
    ///
    /// # Errors
    /// The backend's errors.
    fn create(&self, doc: &AppDoc) -> Result<Stored<AppDoc>, Error>;
    /// Replaces `before` with `after`, only if it is unchanged since.
    ///
    /// # Errors
    /// [`Error::Conflict`]; the backend's errors.
    fn update(&self, before: &Stored<AppDoc>, after: &AppDoc) -> Result<Stored<AppDoc>, Error>;
    /// Deletes `before`, only if it is unchanged since.
    ///
    /// # Errors
    /// [`Error::Conflict`]; the backend's errors.
    fn delete(&self, before: &Stored<AppDoc>) -> Result<(), Error>;
    /// The largest document (as JSON) the backend takes.
    fn max_bytes(&self) -> usize;

    /// One volume, if it exists.
    ///
    /// # Errors
    /// The backend's errors.
    fn volume(&self, name: &str) -> Result<Option<VolumeRecord>, Error>;
    /// Every volume, by name.
    ///
    /// # Errors
    /// The backend's errors.
    fn volumes(&self) -> Result<Vec<VolumeRecord>, Error>;
    /// Stores a new volume; [`Error::VolumeExists`] when the name is
    /// taken.
    ///
    /// # Errors
    /// The backend's errors.
    fn create_volume(&self, volume: &VolumeRecord) -> Result<(), Error>;
    /// Deletes a volume; whether it existed.
    ///
    /// # Errors
    /// The backend's errors.
    fn delete_volume(&self, name: &str) -> Result<bool, Error>;

    /// The daemon's key: `fresh` stored when there is none yet, else the
    /// stored one (see [`Store::daemon_key`]).
    ///
    /// # Errors
    /// The backend's errors; a stored key that is not 32 bytes.
    fn daemon_key(&self, fresh: &DaemonKey) -> Result<DaemonKey, Error>;
}

/// The [`Store`] on a [`Backend`] (see the module doc).
pub struct DocStore<B> {
    backend: B,
    /// The documents this store last wrote (or read to write), by app:
    /// the versions its writes are guarded by. Held while writing, so the
    /// daemon's own writes never race each other.
    written: Mutex<HashMap<AppName, Stored<AppDoc>>>,
    /// Which app each operation seen so far belongs to.
    operations: Mutex<HashMap<OperationId, AppName>>,
    /// The last operation id handed out.
    last_id: AtomicI64,
    /// Set by a refused write; lifted by reconciliation.
    fenced: AtomicBool,
    /// Whether this daemon may write at all (it leads); unset: always.
    gate: OnceLock<Gate>,
    /// Where this daemon keeps each version's bundle folder; unset: the
    /// path as written.
    bundle_dirs: OnceLock<BundleDirs>,
}

/// The local bundle folder of an app's version.
pub type BundleDirs = Box<dyn Fn(&AppName, &str) -> std::path::PathBuf + Send + Sync>;

/// Says whether writes may go ahead now.
pub type Gate = Box<dyn Fn() -> bool + Send + Sync>;

impl<B: Backend> DocStore<B> {
    /// A store on `backend`.
    pub fn new(backend: B) -> Self {
        DocStore {
            backend,
            written: Mutex::new(HashMap::new()),
            operations: Mutex::new(HashMap::new()),
            last_id: AtomicI64::new(0),
            fenced: AtomicBool::new(false),
            gate: OnceLock::new(),
            bundle_dirs: OnceLock::new(),
        }
    }

    /// Reads every version's bundle folder as `dirs` says, not as the
    /// daemon that stored it wrote it: replicas share the store, each
    /// keeps its own bundle folders. Set once; later calls are ignored.
    pub fn set_bundle_dirs(&self, dirs: BundleDirs) {
        let _ = self.bundle_dirs.set(dirs);
    }

    fn localize(&self, mut version: VersionRecord) -> VersionRecord {
        if let Some(dirs) = self.bundle_dirs.get() {
            version.bundle_dir = dirs(&version.app, &version.version);
        }
        version
    }

    /// Lets writes through only while `gate` says so (the daemon leads):
    /// a daemon that stopped leading writes nothing more, whatever path
    /// the write comes from. Set once; later calls are ignored.
    pub fn set_gate(&self, gate: Gate) {
        let _ = self.gate.set(gate);
    }

    /// Whether a write was refused because another writer came first:
    /// this daemon must stop writing (and leading) until it reconciles.
    pub fn is_fenced(&self) -> bool {
        self.fenced.load(Ordering::SeqCst)
    }

    /// [`Error::Fenced`] while fenced.
    fn check_fence(&self) -> Result<(), Error> {
        if self.is_fenced() {
            return Err(Error::Fenced);
        }
        match self.gate.get() {
            Some(gate) if !gate() => Err(Error::NotLeading),
            _ => Ok(()),
        }
    }

    /// Passes `result` on, fencing the store on a conflict.
    fn watch<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        if let Err(Error::Conflict { what, expected }) = &result {
            tracing::warn!(%what, %expected, "a write was refused: another writer came first; this daemon stops writing until it leads again");
            self.fenced.store(true, Ordering::SeqCst);
        }
        result
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    fn written(&self) -> MutexGuard<'_, HashMap<AppName, Stored<AppDoc>>> {
        self.written.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new operation id: unique across daemons that lead one after the
    /// other (milliseconds since the epoch times 1,000, then counting up),
    /// so ids stay ordered by start time and exact in a JSON number.
    fn next_id(&self) -> OperationId {
        let floor = now().saturating_mul(1000);
        let mut last = self.last_id.load(Ordering::SeqCst);
        loop {
            let next = floor.max(last.saturating_add(1));
            match self
                .last_id
                .compare_exchange(last, next, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return OperationId(next),
                Err(seen) => last = seen,
            }
        }
    }

    fn remember(&self, doc: &AppDoc) {
        let mut operations = self
            .operations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for entry in &doc.status.history {
            operations.insert(entry.id, doc.name.clone());
        }
    }

    fn read(&self, app: &AppName) -> Result<AppDoc, Error> {
        let stored = self
            .backend
            .get(app)?
            .ok_or_else(|| Error::UnknownApp { app: app.clone() })?;
        self.remember(&stored.doc);
        Ok(stored.doc)
    }

    /// The app `id` belongs to: from the operations seen, else by reading
    /// every app.
    fn app_of(&self, id: OperationId) -> Result<AppName, Error> {
        let known = self
            .operations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
            .cloned();
        if let Some(app) = known {
            return Ok(app);
        }
        for stored in self.backend.list()? {
            self.remember(&stored.doc);
            if stored.doc.status.history.iter().any(|h| h.id == id) {
                return Ok(stored.doc.name);
            }
        }
        Err(Error::UnknownOperation { id })
    }

    /// One read-modify-write of `app`'s document, guarded by the version
    /// this store last wrote; nothing is written when `change` fails or
    /// changes nothing.
    fn modify<T>(
        &self,
        app: &AppName,
        change: impl FnOnce(&mut AppDoc) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.check_fence()?;
        let mut written = self.written();
        let before = match written.get(app) {
            Some(stored) => stored.clone(),
            None => self
                .backend
                .get(app)?
                .ok_or_else(|| Error::UnknownApp { app: app.clone() })?,
        };
        let mut doc = before.doc.clone();
        let value = change(&mut doc)?;
        if doc == before.doc {
            written.insert(app.clone(), before);
            return Ok(value);
        }
        self.fit(&mut doc)?;
        match self.watch(self.backend.update(&before, &doc)) {
            Ok(stored) => {
                self.remember(&stored.doc);
                written.insert(app.clone(), stored);
                Ok(value)
            }
            Err(e) => {
                written.remove(app);
                Err(e)
            }
        }
    }

    /// Keeps the document within [`MAX_HISTORY`] entries and the
    /// backend's size, dropping the oldest finished history entries.
    ///
    /// # Errors
    /// [`Error::TooLarge`] when it does not fit without them.
    fn fit(&self, doc: &mut AppDoc) -> Result<(), Error> {
        let finished = |h: &HistoryEntry| h.outcome != Outcome::Running;
        while doc.status.history.len() > MAX_HISTORY {
            match doc.status.history.iter().position(finished) {
                Some(oldest) => drop(doc.status.history.remove(oldest)),
                None => break,
            }
        }
        let limit = self.backend.max_bytes();
        loop {
            let size = document_size(doc);
            if size <= limit {
                return Ok(());
            }
            match doc.status.history.iter().position(finished) {
                Some(oldest) => drop(doc.status.history.remove(oldest)),
                None => {
                    return Err(Error::TooLarge {
                        app: doc.name.clone(),
                        size,
                        limit,
                    });
                }
            }
        }
    }
}

/// The size of a document as JSON (spec and status).
pub fn document_size(doc: &AppDoc) -> usize {
    let spec = serde_json::to_vec(&doc.spec).map_or(0, |b| b.len());
    let status = serde_json::to_vec(&doc.status).map_or(0, |b| b.len());
    spec + status
}

fn utf8(path: &std::path::Path) -> Result<(), Error> {
    match path.to_str() {
        Some(_) => Ok(()),
        None => Err(Error::NonUtf8Path {
            path: path.to_owned(),
        }),
    }
}

fn open_history(
    doc: &mut AppDoc,
    id: OperationId,
    operation: Operation,
    from: Option<AppState>,
    via: AppState,
    at: UnixMillis,
) {
    doc.status.history.push(HistoryEntry {
        id,
        app: doc.name.clone(),
        operation,
        from_state: from,
        via_state: via,
        to_state: None,
        outcome: Outcome::Running,
        message: None,
        started_at: at,
        finished_at: None,
        request: None,
    });
}

impl<B: Backend> Store for DocStore<B> {
    fn begin_upload(&self, version: &VersionRecord) -> Result<OperationId, Error> {
        utf8(&version.bundle_dir)?;
        self.check_fence()?;
        let app = &version.app;
        let mut written = self.written();
        if self.backend.get(app)?.is_some() {
            return Err(Error::AppExists { app: app.clone() });
        }
        let at = now();
        let id = self.next_id();
        let mut doc = AppDoc {
            name: app.clone(),
            spec: AppSpec {
                versions: vec![VersionRecord {
                    uploaded_at: at,
                    ..version.clone()
                }],
                ..AppSpec::default()
            },
            status: AppStatus {
                state: AppState::Uploading,
                active_version: version.version.clone(),
                created_at: at,
                updated_at: at,
                ..AppStatus::default()
            },
        };
        open_history(
            &mut doc,
            id,
            Operation::Upload,
            None,
            AppState::Uploading,
            at,
        );
        self.fit(&mut doc)?;
        let stored = self.backend.create(&doc)?;
        self.remember(&stored.doc);
        written.insert(app.clone(), stored);
        Ok(id)
    }

    fn begin_operation(
        &self,
        app: &AppName,
        operation: Operation,
        allowed_from: &[AppState],
        to: AppState,
    ) -> Result<OperationId, Error> {
        require_transitional(app, operation, to)?;
        self.modify(app, |doc| {
            check_allowed(&doc.record(), operation, allowed_from)?;
            let at = now();
            let from = doc.status.state;
            doc.status.state = to;
            doc.status.progress = None;
            doc.status.message = None;
            doc.status.updated_at = at;
            let id = self.next_id();
            open_history(doc, id, operation, Some(from), to, at);
            Ok(id)
        })
    }

    fn set_progress(&self, id: OperationId, progress: Option<&str>) -> Result<(), Error> {
        let app = self.app_of(id)?;
        self.modify(&app, |doc| {
            doc.running_entry(id)?;
            doc.status.progress = progress.map(str::to_owned);
            doc.status.updated_at = now();
            Ok(())
        })
    }

    fn set_request(&self, id: OperationId, request: &str) -> Result<(), Error> {
        let app = self.app_of(id)?;
        self.modify(&app, |doc| {
            doc.running_entry(id)?.request = Some(request.to_owned());
            Ok(())
        })
    }

    fn advance_operation(
        &self,
        id: OperationId,
        to: AppState,
        message: Option<&str>,
    ) -> Result<(), Error> {
        let app = self.app_of(id)?;
        self.modify(&app, |doc| {
            let name = doc.name.clone();
            let entry = doc.running_entry(id)?;
            require_transitional(&name, entry.operation, to)?;
            if let Some(message) = message {
                entry.message = Some(message.to_owned());
            }
            doc.status.state = to;
            doc.status.message = message.map(str::to_owned);
            doc.status.updated_at = now();
            Ok(())
        })
    }

    fn finish_operation(&self, id: OperationId, finish: &Finish) -> Result<AppRecord, Error> {
        if finish.state.is_transitional() || finish.outcome == Outcome::Running {
            return Err(Error::NotFinal {
                id,
                state: finish.state,
                outcome: finish.outcome,
            });
        }
        let app = self.app_of(id)?;
        self.modify(&app, |doc| {
            doc.running_entry(id)?;
            let (active, target) = match finish.target {
                TargetChange::Keep => (
                    doc.status.active_version.clone(),
                    doc.status.target_version.clone(),
                ),
                TargetChange::Discard => (doc.status.active_version.clone(), None),
                TargetChange::Promote => match doc.status.target_version.clone() {
                    Some(target) => (target, None),
                    None => {
                        return Err(Error::NoTargetVersion {
                            app: doc.name.clone(),
                        });
                    }
                },
            };
            let at = now();
            let status = &mut doc.status;
            status.state = finish.state;
            status.message = finish.message.clone();
            status.progress = None;
            status.active_version = active;
            status.target_version = target;
            status.updated_at = at;
            let entry = doc.entry_mut(id)?;
            entry.to_state = Some(finish.state);
            entry.outcome = finish.outcome;
            if let Some(message) = &finish.message {
                entry.message = Some(message.clone());
            }
            entry.finished_at = Some(at);
            Ok(doc.record())
        })
    }

    fn reconcile_after_restart(&self) -> Result<Vec<Reconciled>, Error> {
        if let Some(gate) = self.gate.get()
            && !gate()
        {
            return Err(Error::NotLeading);
        }
        self.written().clear();
        self.fenced.store(false, Ordering::SeqCst);
        let at = now();
        let mut moved = Vec::new();
        for stored in self.backend.list()? {
            let mut doc = stored.doc.clone();
            let found = reconcile(&mut doc, at, self.next_id());
            if doc != stored.doc {
                self.fit(&mut doc)?;
                let mut written = self.written();
                let fresh = self.watch(self.backend.update(&stored, &doc))?;
                self.remember(&fresh.doc);
                written.insert(doc.name.clone(), fresh);
            } else {
                self.remember(&stored.doc);
                self.written().insert(stored.doc.name.clone(), stored);
            }
            moved.extend(found);
        }
        Ok(moved)
    }

    fn app(&self, app: &AppName) -> Result<AppRecord, Error> {
        Ok(self.read(app)?.record())
    }

    fn list_apps(&self) -> Result<Vec<AppRecord>, Error> {
        let mut apps: Vec<AppRecord> = self
            .backend
            .list()?
            .iter()
            .map(|stored| stored.doc.record())
            .collect();
        apps.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(apps)
    }

    fn delete_app(
        &self,
        app: &AppName,
        allowed_from: &[AppState],
    ) -> Result<Vec<VersionRecord>, Error> {
        self.check_fence()?;
        let mut written = self.written();
        let before = match written.get(app) {
            Some(stored) => stored.clone(),
            None => self
                .backend
                .get(app)?
                .ok_or_else(|| Error::UnknownApp { app: app.clone() })?,
        };
        check_allowed(&before.doc.record(), Operation::Delete, allowed_from)?;
        let result = self.watch(self.backend.delete(&before));
        written.remove(app);
        result?;
        let versions = before.doc.spec.versions;
        Ok(versions.into_iter().map(|v| self.localize(v)).collect())
    }

    fn add_version(&self, version: &VersionRecord) -> Result<VersionRecord, Error> {
        utf8(&version.bundle_dir)?;
        self.modify(&version.app, |doc| {
            if doc.version(&version.version).is_ok() {
                return Err(Error::VersionExists {
                    app: doc.name.clone(),
                    version: version.version.clone(),
                });
            }
            let stored = VersionRecord {
                uploaded_at: now(),
                ..version.clone()
            };
            doc.spec.versions.push(stored.clone());
            Ok(self.localize(stored))
        })
    }

    fn version(&self, app: &AppName, version: &str) -> Result<VersionRecord, Error> {
        Ok(self.localize(self.read(app)?.version(version)?.clone()))
    }

    fn list_versions(&self, app: &AppName) -> Result<Vec<VersionRecord>, Error> {
        let versions = self.read(app)?.spec.versions;
        Ok(versions.into_iter().map(|v| self.localize(v)).collect())
    }

    fn delete_version(&self, app: &AppName, version: &str) -> Result<VersionRecord, Error> {
        self.modify(app, |doc| {
            let stored = doc.version(version)?.clone();
            if doc.status.active_version == version
                || doc.status.target_version.as_deref() == Some(version)
            {
                return Err(Error::VersionInUse {
                    app: app.clone(),
                    version: version.to_owned(),
                });
            }
            doc.spec.versions.retain(|v| v.version != version);
            doc.spec
                .overrides
                .retain(|o| o.layer.version() != Some(version));
            doc.spec.user_snapshots.retain(|s| s.version != version);
            Ok(self.localize(stored))
        })
    }

    fn set_active_version(&self, app: &AppName, version: &str) -> Result<(), Error> {
        self.modify(app, |doc| {
            doc.version(version)?;
            doc.status.active_version = version.to_owned();
            doc.status.updated_at = now();
            Ok(())
        })
    }

    fn set_automatic_pause(
        &self,
        app: &AppName,
        pause: Option<&AutomaticPause>,
        message: &str,
    ) -> Result<AppRecord, Error> {
        self.modify(app, |doc| {
            let at = now();
            let state = doc.status.state;
            doc.status.automatic_pause = pause.cloned();
            doc.status.updated_at = at;
            let id = self.next_id();
            let operation = if pause.is_some() {
                Operation::Pause
            } else {
                Operation::Resume
            };
            open_history(doc, id, operation, Some(state), state, at);
            let entry = doc.entry_mut(id)?;
            entry.to_state = Some(state);
            entry.outcome = Outcome::Succeeded;
            entry.message = Some(message.to_owned());
            entry.finished_at = Some(at);
            Ok(doc.record())
        })
    }

    fn set_target_version(&self, app: &AppName, version: Option<&str>) -> Result<(), Error> {
        self.modify(app, |doc| {
            if let Some(version) = version {
                doc.version(version)?;
            }
            doc.status.target_version = version.map(str::to_owned);
            doc.status.updated_at = now();
            Ok(())
        })
    }

    fn set_override(
        &self,
        app: &AppName,
        chart: &str,
        layer: &OverrideLayer,
        values: &Value,
    ) -> Result<(), Error> {
        self.modify(app, |doc| {
            doc.require_layer_version(layer)?;
            let record = OverrideRecord {
                app: app.clone(),
                chart: chart.to_owned(),
                layer: layer.clone(),
                values: values.clone(),
                updated_at: now(),
            };
            let overrides = &mut doc.spec.overrides;
            match overrides
                .iter_mut()
                .find(|o| o.chart == chart && &o.layer == layer)
            {
                Some(found) => *found = record,
                None => overrides.push(record),
            }
            sort_overrides(overrides);
            Ok(())
        })
    }

    fn replace_layer(
        &self,
        app: &AppName,
        layer: &OverrideLayer,
        charts: &[(String, Value)],
    ) -> Result<(), Error> {
        self.modify(app, |doc| {
            doc.require_layer_version(layer)?;
            for (i, (chart, _)) in charts.iter().enumerate() {
                if charts[..i].iter().any(|(earlier, _)| earlier == chart) {
                    return Err(Error::Invalid {
                        context: format!("replacing {} overrides of app \"{app}\"", layer.kind()),
                        reason: format!("chart \"{chart}\" is given twice"),
                    });
                }
            }
            let at = now();
            let overrides = &mut doc.spec.overrides;
            overrides.retain(|o| &o.layer != layer);
            overrides.extend(charts.iter().map(|(chart, values)| OverrideRecord {
                app: app.clone(),
                chart: chart.clone(),
                layer: layer.clone(),
                values: values.clone(),
                updated_at: at,
            }));
            sort_overrides(overrides);
            Ok(())
        })
    }

    fn override_layer(
        &self,
        app: &AppName,
        chart: &str,
        layer: &OverrideLayer,
    ) -> Result<Option<OverrideRecord>, Error> {
        Ok(self
            .read(app)?
            .spec
            .overrides
            .into_iter()
            .find(|o| o.chart == chart && &o.layer == layer))
    }

    fn list_overrides(&self, app: &AppName) -> Result<Vec<OverrideRecord>, Error> {
        let mut overrides = self.read(app)?.spec.overrides;
        sort_overrides(&mut overrides);
        Ok(overrides)
    }

    fn delete_override(
        &self,
        app: &AppName,
        chart: &str,
        layer: &OverrideLayer,
    ) -> Result<bool, Error> {
        self.modify(app, |doc| {
            Ok(remove_where(&mut doc.spec.overrides, |o| {
                o.chart == chart && &o.layer == layer
            }))
        })
    }

    fn save_user_snapshot(&self, app: &AppName, version: &str) -> Result<(), Error> {
        self.modify(app, |doc| {
            doc.version(version)?;
            let mut charts: Vec<(String, Value)> = doc
                .spec
                .overrides
                .iter()
                .filter(|o| o.layer == OverrideLayer::User)
                .map(|o| (o.chart.clone(), o.values.clone()))
                .collect();
            charts.sort_by(|a, b| a.0.cmp(&b.0));
            let snapshot = UserSnapshot {
                version: version.to_owned(),
                charts,
                saved_at: now(),
            };
            let snapshots = &mut doc.spec.user_snapshots;
            snapshots.retain(|s| s.version != version);
            snapshots.push(snapshot);
            Ok(())
        })
    }

    fn user_snapshots(&self, app: &AppName) -> Result<Vec<UserSnapshot>, Error> {
        let mut snapshots = self.read(app)?.spec.user_snapshots;
        snapshots.sort_by(|a, b| {
            b.saved_at
                .cmp(&a.saved_at)
                .then_with(|| b.version.cmp(&a.version))
        });
        Ok(snapshots)
    }

    fn record_decision(&self, decision: &DecisionRecord) -> Result<DecisionRecord, Error> {
        self.modify(&decision.app, |doc| {
            let stored = DecisionRecord {
                decided_at: now(),
                ..decision.clone()
            };
            upsert(&mut doc.spec.decisions, stored.clone(), |d| {
                d.component.clone()
            });
            Ok(stored)
        })
    }

    fn decision(&self, app: &AppName, component: &str) -> Result<Option<DecisionRecord>, Error> {
        Ok(self
            .read(app)?
            .spec
            .decisions
            .into_iter()
            .find(|d| d.component == component))
    }

    fn list_decisions(&self, app: &AppName) -> Result<Vec<DecisionRecord>, Error> {
        let mut decisions = self.read(app)?.spec.decisions;
        decisions.sort_by(|a, b| a.component.cmp(&b.component));
        Ok(decisions)
    }

    fn delete_decision(&self, app: &AppName, component: &str) -> Result<bool, Error> {
        self.modify(app, |doc| {
            Ok(remove_where(&mut doc.spec.decisions, |d| {
                d.component == component
            }))
        })
    }

    fn record_release(&self, release: &ReleaseRecord) -> Result<ReleaseRecord, Error> {
        self.modify(&release.app, |doc| {
            let stored = ReleaseRecord {
                updated_at: now(),
                ..release.clone()
            };
            upsert(&mut doc.status.releases, stored.clone(), |r| {
                r.chart.clone()
            });
            Ok(stored)
        })
    }

    fn release(&self, app: &AppName, chart: &str) -> Result<Option<ReleaseRecord>, Error> {
        Ok(self
            .read(app)?
            .status
            .releases
            .into_iter()
            .find(|r| r.chart == chart))
    }

    fn list_releases(&self, app: &AppName) -> Result<Vec<ReleaseRecord>, Error> {
        let mut releases = self.read(app)?.status.releases;
        releases.sort_by(|a, b| a.chart.cmp(&b.chart));
        Ok(releases)
    }

    fn delete_release(&self, app: &AppName, chart: &str) -> Result<bool, Error> {
        self.modify(app, |doc| {
            Ok(remove_where(&mut doc.status.releases, |r| r.chart == chart))
        })
    }

    fn history(&self, app: &AppName) -> Result<Vec<HistoryEntry>, Error> {
        let mut history = self.read(app)?.status.history;
        history.sort_by_key(|h| h.id.0);
        Ok(history)
    }

    fn operation(&self, id: OperationId) -> Result<HistoryEntry, Error> {
        let app = self.app_of(id)?;
        let doc = match self.read(&app) {
            Err(Error::UnknownApp { .. }) => return Err(Error::UnknownOperation { id }),
            other => other?,
        };
        doc.status
            .history
            .into_iter()
            .find(|h| h.id == id)
            .ok_or(Error::UnknownOperation { id })
    }

    fn running_operation(&self, app: &AppName) -> Result<Option<HistoryEntry>, Error> {
        Ok(self
            .read(app)?
            .status
            .history
            .into_iter()
            .filter(|h| h.outcome == Outcome::Running)
            .max_by_key(|h| h.id.0))
    }

    fn create_volume(&self, volume: &VolumeRecord) -> Result<VolumeRecord, Error> {
        utf8(&volume.host_path)?;
        self.check_fence()?;
        if self.backend.volume(&volume.name)?.is_some() {
            return Err(Error::VolumeExists {
                name: volume.name.clone(),
            });
        }
        let stored = VolumeRecord {
            created_at: now(),
            ..volume.clone()
        };
        self.backend.create_volume(&stored)?;
        Ok(stored)
    }

    fn volume(&self, name: &str) -> Result<Option<VolumeRecord>, Error> {
        self.backend.volume(name)
    }

    fn list_volumes(&self) -> Result<Vec<VolumeRecord>, Error> {
        let mut volumes = self.backend.volumes()?;
        volumes.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(volumes)
    }

    fn fenced(&self) -> bool {
        self.is_fenced()
    }

    fn import_app(&self, doc: &AppDoc) -> Result<(), Error> {
        self.check_fence()?;
        let mut doc = doc.clone();
        doc.normalize();
        self.fit(&mut doc)?;
        let mut written = self.written();
        let stored = self.backend.create(&doc)?;
        self.remember(&stored.doc);
        written.insert(doc.name.clone(), stored);
        Ok(())
    }

    fn daemon_key_or(&self, fresh: &DaemonKey) -> Result<DaemonKey, Error> {
        self.check_fence()?;
        self.backend.daemon_key(fresh)
    }

    fn import_volume(&self, volume: &VolumeRecord) -> Result<(), Error> {
        utf8(&volume.host_path)?;
        self.check_fence()?;
        self.backend.create_volume(volume)
    }

    fn delete_volume(&self, name: &str) -> Result<Option<VolumeRecord>, Error> {
        self.check_fence()?;
        let Some(found) = self.backend.volume(name)? else {
            return Ok(None);
        };
        if self.backend.delete_volume(name)? {
            Ok(Some(found))
        } else {
            Ok(None)
        }
    }
}
