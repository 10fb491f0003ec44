//! [`SqliteStore`]: the [`Store`] on an embedded SQLite database.
//!
//! One connection behind a mutex: SQLite serialises writers anyway, every
//! method is short, and one connection keeps "each method is one
//! transaction" trivially true. Writes use `BEGIN IMMEDIATE`, so a writer
//! takes the lock before it reads and two writers never deadlock upgrading.

mod import;
#[cfg(feature = "test-hooks")]
mod pause;
mod rows;
mod steps;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde_json::Value;

use rows::{
    APP_COLUMNS, DECISION_COLUMNS, HISTORY_COLUMNS, OVERRIDE_COLUMNS, RELEASE_COLUMNS,
    VOLUME_COLUMNS, app_from_row, decision_from_row, history_from_row, override_from_row,
    release_from_row, volume_from_row,
};
use steps::{
    check_allowed, collect, find_app, find_volume, insert_override, insert_version, load_app,
    load_operation, load_running, load_version, load_versions, now, open_history, override_context,
    path_text, reconcile_app, require_app, require_layer_version, require_transitional,
};

use super::Store;
use super::error::{Context, Error};
use super::records::{
    AppRecord, AutomaticPause, DecisionRecord, Finish, HistoryEntry, OperationId, OverrideRecord,
    Reconciled, ReleaseRecord, TargetChange, UserSnapshot, VersionRecord, VolumeRecord,
};
use super::schema;
use super::state::{AppState, Operation, Outcome, OverrideLayer};
use crate::model::AppName;

/// The database file's name inside the state directory.
pub const DATABASE_FILE: &str = "state.db";

/// The [`Store`] on SQLite at `<state dir>/state.db`.
///
/// The database runs in WAL mode with `synchronous=FULL`: every commit is
/// fsynced before the method returns, so what the store reported written
/// survives a killed daemon and a power loss (`NORMAL` would risk the last
/// commits on power loss). Foreign keys are on and a writer waits up to
/// [`BUSY_TIMEOUT`](super::BUSY_TIMEOUT) for a lock. Opening migrates the
/// schema.
///
/// It does not stop a second daemon from opening the same file; SQLite keeps
/// the data consistent but the two would race on app states, so the daemon
/// should hold a lock on its state directory.
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Test hook: write transactions to pause inside (see [`pause`]).
    #[cfg(feature = "test-hooks")]
    pause_in_write: Vec<String>,
}

impl SqliteStore {
    /// Opens the store in `state_dir`, creating the directory and the
    /// database if needed, and migrates the schema to the current version.
    ///
    /// # Errors
    /// [`Error::CreateDir`], and as [`SqliteStore::open_file`].
    pub fn open(state_dir: &Path) -> Result<Self, Error> {
        std::fs::create_dir_all(state_dir).map_err(|source| Error::CreateDir {
            path: state_dir.to_owned(),
            source,
        })?;
        Self::open_file(&state_dir.join(DATABASE_FILE))
    }

    /// Opens (creating if needed) the database file at `path` and migrates
    /// it.
    ///
    /// # Errors
    /// [`Error::Open`], [`Error::Configure`], [`Error::ForeignDatabase`],
    /// [`Error::SchemaTooNew`] (the file is left untouched),
    /// [`Error::Migrate`] (rolled back).
    pub fn open_file(path: &Path) -> Result<Self, Error> {
        let conn = Connection::open(path).map_err(|source| Error::Open {
            path: path.to_owned(),
            source,
        })?;
        schema::enable_wal(&conn, path)?;
        Self::prepare(conn, path)
    }

    /// A store in memory, gone when dropped: for tests and benchmarks of
    /// the code above the store. Same schema and rules, no durability.
    ///
    /// # Errors
    /// As [`SqliteStore::open_file`] (in practice only out of memory).
    pub fn open_in_memory() -> Result<Self, Error> {
        let path = Path::new(":memory:");
        let conn = Connection::open_in_memory().map_err(|source| Error::Open {
            path: path.to_owned(),
            source,
        })?;
        Self::prepare(conn, path)
    }

    fn prepare(mut conn: Connection, path: &Path) -> Result<Self, Error> {
        schema::configure(&conn, path)?;
        let found = schema::migrate(&mut conn, path)?;
        if found < schema::known_version() {
            tracing::info!(
                path = %path.display(),
                from = found,
                to = schema::known_version(),
                "migrated store schema"
            );
        }
        Ok(SqliteStore {
            path: path.to_owned(),
            conn: Mutex::new(conn),
            #[cfg(feature = "test-hooks")]
            pause_in_write: pause::from_env(),
        })
    }

    /// The database file (`:memory:` for [`SqliteStore::open_in_memory`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection. A panic while it was held can only have happened
    /// inside a transaction, which SQLite rolled back when it was dropped,
    /// so a poisoned lock still guards a consistent database.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `body` in one write transaction, committed only if it succeeds.
    fn write<T>(
        &self,
        context: impl Fn() -> String,
        body: impl FnOnce(&Transaction<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.transaction(TransactionBehavior::Immediate, context, body)
    }

    /// Runs `body` in one read transaction (a consistent snapshot).
    fn read<T>(
        &self,
        context: impl Fn() -> String,
        body: impl FnOnce(&Transaction<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.transaction(TransactionBehavior::Deferred, context, body)
    }

    /// Reads the rows `sql` selects for `app` (its `?1`), after checking
    /// the app exists; `doing` names the step in errors.
    fn rows_of_app<T>(
        &self,
        app: &AppName,
        doing: &str,
        sql: &str,
        map: fn(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, Error> {
        let context = || format!("{doing} of app \"{app}\"");
        self.read(context, |tx| {
            require_app(tx, app)?;
            collect(tx, sql, [app], map, context)
        })
    }

    fn transaction<T>(
        &self,
        behavior: TransactionBehavior,
        context: impl Fn() -> String,
        body: impl FnOnce(&Transaction<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(behavior).context(&context)?;
        let value = body(&tx)?;
        #[cfg(feature = "test-hooks")]
        if matches!(behavior, TransactionBehavior::Immediate) && !self.pause_in_write.is_empty() {
            pause::inside_write(&self.path, &self.pause_in_write, &context());
        }
        tx.commit().context(&context)?;
        Ok(value)
    }

    /// Direct access for tests that damage or instrument the database.
    #[cfg(test)]
    pub(crate) fn connection(&self) -> MutexGuard<'_, Connection> {
        self.lock()
    }
}

impl Store for SqliteStore {
    fn begin_upload(&self, version: &VersionRecord) -> Result<OperationId, Error> {
        let app = &version.app;
        self.write(
            || format!("storing upload of app \"{app}\""),
            |tx| {
                if find_app(tx, app)?.is_some() {
                    return Err(Error::AppExists { app: app.clone() });
                }
                let at = now();
                tx.execute(
                    "INSERT INTO apps (name, state, active_version, created_at, updated_at) \
                     VALUES (?1, ?2, ?3, ?4, ?4)",
                    params![app, AppState::Uploading, version.version, at],
                )
                .context(|| format!("storing app \"{app}\""))?;
                insert_version(tx, version, at)?;
                open_history(tx, app, Operation::Upload, None, AppState::Uploading, at)
            },
        )
    }

    fn begin_operation(
        &self,
        app: &AppName,
        operation: Operation,
        allowed_from: &[AppState],
        to: AppState,
    ) -> Result<OperationId, Error> {
        require_transitional(app, operation, to)?;
        self.write(
            || format!("starting {operation} of app \"{app}\""),
            |tx| {
                let record = load_app(tx, app)?;
                check_allowed(&record, operation, allowed_from)?;
                let at = now();
                tx.execute(
                    "UPDATE apps SET state = ?2, progress = NULL, message = NULL, updated_at = ?3 \
                     WHERE name = ?1",
                    params![app, to, at],
                )
                .context(|| format!("moving app \"{app}\" to {to}"))?;
                open_history(tx, app, operation, Some(record.state), to, at)
            },
        )
    }

    fn set_progress(&self, id: OperationId, progress: Option<&str>) -> Result<(), Error> {
        self.write(
            || format!("recording progress of operation {id}"),
            |tx| {
                let entry = load_running(tx, id)?;
                tx.execute(
                    "UPDATE apps SET progress = ?2, updated_at = ?3 WHERE name = ?1",
                    params![entry.app, progress, now()],
                )
                .context(|| format!("recording progress of app \"{}\"", entry.app))?;
                Ok(())
            },
        )
    }

    fn set_request(&self, id: OperationId, request: &str) -> Result<(), Error> {
        self.write(
            || format!("recording the request of operation {id}"),
            |tx| {
                load_running(tx, id)?;
                tx.execute(
                    "UPDATE history SET request = ?2 WHERE id = ?1",
                    params![id, request],
                )
                .context(|| format!("recording the request of operation {id}"))?;
                Ok(())
            },
        )
    }

    fn advance_operation(
        &self,
        id: OperationId,
        to: AppState,
        message: Option<&str>,
    ) -> Result<(), Error> {
        self.write(
            || format!("advancing operation {id} to {to}"),
            |tx| {
                let entry = load_running(tx, id)?;
                let app = &entry.app;
                require_transitional(app, entry.operation, to)?;
                let context = || format!("moving app \"{app}\" to {to}");
                tx.execute(
                    "UPDATE apps SET state = ?2, message = ?3, updated_at = ?4 WHERE name = ?1",
                    params![app, to, message, now()],
                )
                .context(context)?;
                tx.execute(
                    "UPDATE history SET message = coalesce(?2, message) WHERE id = ?1",
                    params![id, message],
                )
                .context(context)?;
                Ok(())
            },
        )
    }

    fn finish_operation(&self, id: OperationId, finish: &Finish) -> Result<AppRecord, Error> {
        if finish.state.is_transitional() || finish.outcome == Outcome::Running {
            return Err(Error::NotFinal {
                id,
                state: finish.state,
                outcome: finish.outcome,
            });
        }
        self.write(
            || format!("finishing operation {id}"),
            |tx| {
                let entry = load_running(tx, id)?;
                let app = load_app(tx, &entry.app)?;
                let (active, target) = match finish.target {
                    TargetChange::Keep => (app.active_version, app.target_version),
                    TargetChange::Discard => (app.active_version, None),
                    TargetChange::Promote => match app.target_version {
                        Some(target) => (target, None),
                        None => return Err(Error::NoTargetVersion { app: app.name }),
                    },
                };
                let at = now();
                let context = || format!("finishing {} of app \"{}\"", entry.operation, app.name);
                tx.execute(
                    "UPDATE apps SET state = ?2, message = ?3, progress = NULL, \
                     active_version = ?4, target_version = ?5, updated_at = ?6 WHERE name = ?1",
                    params![app.name, finish.state, finish.message, active, target, at],
                )
                .context(context)?;
                tx.execute(
                    "UPDATE history SET to_state = ?2, outcome = ?3, \
                     message = coalesce(?4, message), finished_at = ?5 WHERE id = ?1",
                    params![id, finish.state, finish.outcome, finish.message, at],
                )
                .context(context)?;
                load_app(tx, &app.name)
            },
        )
    }

    fn reconcile_after_restart(&self) -> Result<Vec<Reconciled>, Error> {
        let context = || "reconciling apps after restart".to_owned();
        self.write(context, |tx| {
            let states = collect(
                tx,
                "SELECT name, state FROM apps ORDER BY name",
                [],
                |row| Ok((row.get::<_, AppName>(0)?, row.get::<_, AppState>(1)?)),
                context,
            )?;
            let at = now();
            let mut moved = Vec::new();
            for (app, state) in states {
                if state.is_transitional() {
                    moved.push(reconcile_app(tx, &app, state, at)?);
                }
            }
            // Running entries of settled apps can only come from a bug;
            // close them so no operation looks alive forever.
            tx.execute(
                "UPDATE history SET outcome = ?1, finished_at = ?2, \
                 to_state = (SELECT state FROM apps WHERE apps.name = history.app), \
                 message = coalesce(message, 'closed at daemon restart') WHERE outcome = ?3",
                params![Outcome::Interrupted, at, Outcome::Running],
            )
            .context(context)?;
            Ok(moved)
        })
    }

    fn app(&self, app: &AppName) -> Result<AppRecord, Error> {
        self.read(|| format!("reading app \"{app}\""), |tx| load_app(tx, app))
    }

    fn list_apps(&self) -> Result<Vec<AppRecord>, Error> {
        let context = || "listing apps".to_owned();
        self.read(context, |tx| {
            collect(
                tx,
                &format!("SELECT {APP_COLUMNS} FROM apps ORDER BY name"),
                [],
                app_from_row,
                context,
            )
        })
    }

    fn set_automatic_pause(
        &self,
        app: &AppName,
        pause: Option<&AutomaticPause>,
        message: &str,
    ) -> Result<AppRecord, Error> {
        let context = || format!("recording the pause of app \"{app}\"");
        let json = pause
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| Error::Database {
                context: context(),
                source: rusqlite::Error::ToSqlConversionFailure(Box::new(e)),
            })?;
        self.write(context, |tx| {
            let record = load_app(tx, app)?;
            let at = now();
            let operation = if pause.is_some() {
                Operation::Pause
            } else {
                Operation::Resume
            };
            tx.execute(
                "UPDATE apps SET automatic_pause = ?2, updated_at = ?3 WHERE name = ?1",
                params![app, json, at],
            )
            .context(context)?;
            tx.execute(
                "INSERT INTO history (app, operation, from_state, via_state, to_state, outcome, \
                 message, started_at, finished_at) VALUES (?1, ?2, ?3, ?3, ?3, ?4, ?5, ?6, ?6)",
                params![
                    app,
                    operation,
                    record.state,
                    Outcome::Succeeded,
                    message,
                    at
                ],
            )
            .context(context)?;
            load_app(tx, app)
        })
    }

    fn delete_app(
        &self,
        app: &AppName,
        allowed_from: &[AppState],
    ) -> Result<Vec<VersionRecord>, Error> {
        let context = || format!("deleting app \"{app}\"");
        self.write(context, |tx| {
            let record = load_app(tx, app)?;
            check_allowed(&record, Operation::Delete, allowed_from)?;
            let versions = load_versions(tx, app)?;
            tx.execute("DELETE FROM apps WHERE name = ?1", [app])
                .context(context)?;
            Ok(versions)
        })
    }

    fn add_version(&self, version: &VersionRecord) -> Result<VersionRecord, Error> {
        let app = &version.app;
        self.write(
            || format!("storing version \"{}\" of app \"{app}\"", version.version),
            |tx| {
                require_app(tx, app)?;
                insert_version(tx, version, now())
            },
        )
    }

    fn version(&self, app: &AppName, version: &str) -> Result<VersionRecord, Error> {
        self.read(
            || format!("reading version \"{version}\" of app \"{app}\""),
            |tx| {
                require_app(tx, app)?;
                load_version(tx, app, version)
            },
        )
    }

    fn list_versions(&self, app: &AppName) -> Result<Vec<VersionRecord>, Error> {
        let context = || format!("listing versions of app \"{app}\"");
        self.read(context, |tx| {
            require_app(tx, app)?;
            load_versions(tx, app)
        })
    }

    fn delete_version(&self, app: &AppName, version: &str) -> Result<VersionRecord, Error> {
        let context = || format!("deleting version \"{version}\" of app \"{app}\"");
        self.write(context, |tx| {
            let record = load_app(tx, app)?;
            let stored = load_version(tx, app, version)?;
            if record.active_version == version || record.target_version.as_deref() == Some(version)
            {
                return Err(Error::VersionInUse {
                    app: app.clone(),
                    version: version.to_owned(),
                });
            }
            tx.execute(
                "DELETE FROM versions WHERE app = ?1 AND version = ?2",
                params![app, version],
            )
            .context(context)?;
            Ok(stored)
        })
    }

    fn set_active_version(&self, app: &AppName, version: &str) -> Result<(), Error> {
        let context = || format!("setting active version of app \"{app}\" to \"{version}\"");
        self.write(context, |tx| {
            require_app(tx, app)?;
            load_version(tx, app, version)?;
            tx.execute(
                "UPDATE apps SET active_version = ?2, updated_at = ?3 WHERE name = ?1",
                params![app, version, now()],
            )
            .context(context)?;
            Ok(())
        })
    }

    fn set_target_version(&self, app: &AppName, version: Option<&str>) -> Result<(), Error> {
        let context = || format!("setting target version of app \"{app}\"");
        self.write(context, |tx| {
            require_app(tx, app)?;
            if let Some(version) = version {
                load_version(tx, app, version)?;
            }
            tx.execute(
                "UPDATE apps SET target_version = ?2, updated_at = ?3 WHERE name = ?1",
                params![app, version, now()],
            )
            .context(context)?;
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
        let context = || override_context("storing", app, chart, layer);
        self.write(context, |tx| {
            require_layer_version(tx, app, layer)?;
            let at = now();
            let updated = tx
                .execute(
                    "UPDATE overrides SET vals = ?5, updated_at = ?6 \
                     WHERE app = ?1 AND chart = ?2 AND layer = ?3 AND version IS ?4",
                    params![app, chart, layer.kind(), layer.version(), values, at],
                )
                .context(context)?;
            if updated == 0 {
                insert_override(tx, app, chart, layer, values, at)?;
            }
            Ok(())
        })
    }

    fn replace_layer(
        &self,
        app: &AppName,
        layer: &OverrideLayer,
        charts: &[(String, Value)],
    ) -> Result<(), Error> {
        let context = || override_context("replacing", app, "*", layer);
        self.write(context, |tx| {
            require_layer_version(tx, app, layer)?;
            tx.execute(
                "DELETE FROM overrides WHERE app = ?1 AND layer = ?2 AND version IS ?3",
                params![app, layer.kind(), layer.version()],
            )
            .context(context)?;
            let at = now();
            for (chart, values) in charts {
                insert_override(tx, app, chart, layer, values, at)?;
            }
            Ok(())
        })
    }

    fn override_layer(
        &self,
        app: &AppName,
        chart: &str,
        layer: &OverrideLayer,
    ) -> Result<Option<OverrideRecord>, Error> {
        let context = || override_context("reading", app, chart, layer);
        self.read(context, |tx| {
            require_app(tx, app)?;
            tx.query_row(
                &format!(
                    "SELECT {OVERRIDE_COLUMNS} FROM overrides \
                     WHERE app = ?1 AND chart = ?2 AND layer = ?3 AND version IS ?4"
                ),
                params![app, chart, layer.kind(), layer.version()],
                override_from_row,
            )
            .optional()
            .context(context)
        })
    }

    fn list_overrides(&self, app: &AppName) -> Result<Vec<OverrideRecord>, Error> {
        self.rows_of_app(
            app,
            "listing overrides",
            &format!(
                "SELECT {OVERRIDE_COLUMNS} FROM overrides WHERE app = ?1 \
                 ORDER BY chart, layer, version"
            ),
            override_from_row,
        )
    }

    fn delete_override(
        &self,
        app: &AppName,
        chart: &str,
        layer: &OverrideLayer,
    ) -> Result<bool, Error> {
        let context = || override_context("deleting", app, chart, layer);
        self.write(context, |tx| {
            require_app(tx, app)?;
            let deleted = tx
                .execute(
                    "DELETE FROM overrides WHERE app = ?1 AND chart = ?2 AND layer = ?3 \
                     AND version IS ?4",
                    params![app, chart, layer.kind(), layer.version()],
                )
                .context(context)?;
            Ok(deleted > 0)
        })
    }

    fn save_user_snapshot(&self, app: &AppName, version: &str) -> Result<(), Error> {
        let context =
            || format!("saving the user overrides of app \"{app}\" at version \"{version}\"");
        self.write(context, |tx| {
            require_app(tx, app)?;
            load_version(tx, app, version)?;
            let rows: Vec<(String, Value)> = collect(
                tx,
                "SELECT chart, vals FROM overrides WHERE app = ?1 AND layer = 'user' ORDER BY chart",
                [app],
                |row| Ok((row.get(0)?, row.get(1)?)),
                context,
            )?;
            let charts: serde_json::Map<String, Value> = rows.into_iter().collect();
            tx.execute(
                "INSERT INTO user_snapshots (app, version, charts, saved_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (app, version) DO UPDATE SET charts = ?3, saved_at = ?4",
                params![app, version, Value::Object(charts), now()],
            )
            .context(context)?;
            Ok(())
        })
    }

    fn user_snapshots(&self, app: &AppName) -> Result<Vec<UserSnapshot>, Error> {
        self.rows_of_app(
            app,
            "listing the saved user overrides",
            "SELECT version, charts, saved_at FROM user_snapshots WHERE app = ?1 \
             ORDER BY saved_at DESC, version DESC",
            |row| {
                let charts: Value = row.get(1)?;
                let charts = match charts {
                    Value::Object(map) => map.into_iter().collect(),
                    _ => Vec::new(),
                };
                Ok(UserSnapshot {
                    version: row.get(0)?,
                    charts,
                    saved_at: row.get(2)?,
                })
            },
        )
    }

    fn record_decision(&self, decision: &DecisionRecord) -> Result<DecisionRecord, Error> {
        let app = &decision.app;
        let context = || {
            format!(
                "recording workload decision of component \"{}\" of app \"{app}\"",
                decision.component
            )
        };
        self.write(context, |tx| {
            require_app(tx, app)?;
            let stored = DecisionRecord {
                decided_at: now(),
                ..decision.clone()
            };
            tx.execute(
                &format!(
                    "INSERT INTO decisions ({DECISION_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                     ON CONFLICT (app, component) DO UPDATE SET kind = excluded.kind, \
                     decided_by = excluded.decided_by, traits_digest = excluded.traits_digest, \
                     decided_at = excluded.decided_at"
                ),
                params![
                    stored.app,
                    stored.component,
                    stored.kind,
                    stored.decided_by,
                    stored.traits_digest,
                    stored.decided_at
                ],
            )
            .context(context)?;
            Ok(stored)
        })
    }

    fn decision(&self, app: &AppName, component: &str) -> Result<Option<DecisionRecord>, Error> {
        let context =
            || format!("reading workload decision of component \"{component}\" of app \"{app}\"");
        self.read(context, |tx| {
            require_app(tx, app)?;
            tx.query_row(
                &format!(
                    "SELECT {DECISION_COLUMNS} FROM decisions WHERE app = ?1 AND component = ?2"
                ),
                params![app, component],
                decision_from_row,
            )
            .optional()
            .context(context)
        })
    }

    fn list_decisions(&self, app: &AppName) -> Result<Vec<DecisionRecord>, Error> {
        self.rows_of_app(
            app,
            "listing workload decisions",
            &format!("SELECT {DECISION_COLUMNS} FROM decisions WHERE app = ?1 ORDER BY component"),
            decision_from_row,
        )
    }

    fn delete_decision(&self, app: &AppName, component: &str) -> Result<bool, Error> {
        let context =
            || format!("deleting workload decision of component \"{component}\" of app \"{app}\"");
        self.write(context, |tx| {
            require_app(tx, app)?;
            let deleted = tx
                .execute(
                    "DELETE FROM decisions WHERE app = ?1 AND component = ?2",
                    params![app, component],
                )
                .context(context)?;
            Ok(deleted > 0)
        })
    }

    fn record_release(&self, release: &ReleaseRecord) -> Result<ReleaseRecord, Error> {
        let app = &release.app;
        let context = || format!("recording release {app}/{}", release.chart);
        self.write(context, |tx| {
            require_app(tx, app)?;
            let stored = ReleaseRecord {
                updated_at: now(),
                ..release.clone()
            };
            let objects =
                serde_json::to_string(&stored.objects).map_err(|source| Error::Database {
                    context: context(),
                    source: rusqlite::Error::ToSqlConversionFailure(Box::new(source)),
                })?;
            let revision = i64::try_from(stored.revision).unwrap_or(i64::MAX);
            tx.execute(
                &format!(
                    "INSERT INTO releases ({RELEASE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
                     ON CONFLICT (app, chart) DO UPDATE SET namespace = excluded.namespace, \
                     release_name = excluded.release_name, method = excluded.method, \
                     revision = excluded.revision, \
                     objects = excluded.objects, updated_at = excluded.updated_at"
                ),
                params![
                    stored.app,
                    stored.chart,
                    stored.namespace,
                    stored.release_name,
                    stored.method,
                    revision,
                    objects,
                    stored.updated_at
                ],
            )
            .context(context)?;
            Ok(stored)
        })
    }

    fn release(&self, app: &AppName, chart: &str) -> Result<Option<ReleaseRecord>, Error> {
        let context = || format!("reading release {app}/{chart}");
        self.read(context, |tx| {
            require_app(tx, app)?;
            tx.query_row(
                &format!("SELECT {RELEASE_COLUMNS} FROM releases WHERE app = ?1 AND chart = ?2"),
                params![app, chart],
                release_from_row,
            )
            .optional()
            .context(context)
        })
    }

    fn list_releases(&self, app: &AppName) -> Result<Vec<ReleaseRecord>, Error> {
        self.rows_of_app(
            app,
            "listing releases",
            &format!("SELECT {RELEASE_COLUMNS} FROM releases WHERE app = ?1 ORDER BY chart"),
            release_from_row,
        )
    }

    fn delete_release(&self, app: &AppName, chart: &str) -> Result<bool, Error> {
        let context = || format!("forgetting release {app}/{chart}");
        self.write(context, |tx| {
            require_app(tx, app)?;
            let deleted = tx
                .execute(
                    "DELETE FROM releases WHERE app = ?1 AND chart = ?2",
                    params![app, chart],
                )
                .context(context)?;
            Ok(deleted > 0)
        })
    }

    fn history(&self, app: &AppName) -> Result<Vec<HistoryEntry>, Error> {
        self.rows_of_app(
            app,
            "reading history",
            &format!("SELECT {HISTORY_COLUMNS} FROM history WHERE app = ?1 ORDER BY id"),
            history_from_row,
        )
    }

    fn operation(&self, id: OperationId) -> Result<HistoryEntry, Error> {
        self.read(
            || format!("reading operation {id}"),
            |tx| load_operation(tx, id),
        )
    }

    fn running_operation(&self, app: &AppName) -> Result<Option<HistoryEntry>, Error> {
        let context = || format!("reading the running operation of app \"{app}\"");
        self.read(context, |tx| {
            require_app(tx, app)?;
            tx.query_row(
                &format!(
                    "SELECT {HISTORY_COLUMNS} FROM history WHERE app = ?1 AND outcome = ?2 \
                     ORDER BY id DESC LIMIT 1"
                ),
                params![app, Outcome::Running],
                history_from_row,
            )
            .optional()
            .context(context)
        })
    }

    fn create_volume(&self, volume: &VolumeRecord) -> Result<VolumeRecord, Error> {
        let name = &volume.name;
        let context = || format!("creating volume \"{name}\"");
        self.write(context, |tx| {
            if find_volume(tx, name)?.is_some() {
                return Err(Error::VolumeExists { name: name.clone() });
            }
            let stored = VolumeRecord {
                created_at: now(),
                ..volume.clone()
            };
            tx.execute(
                &format!(
                    "INSERT INTO volumes ({VOLUME_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                ),
                params![
                    stored.name,
                    stored.node,
                    path_text(&stored.host_path)?,
                    stored.size,
                    stored.storage_class,
                    stored.created_at,
                    stored.namespace
                ],
            )
            .context(context)?;
            Ok(stored)
        })
    }

    fn volume(&self, name: &str) -> Result<Option<VolumeRecord>, Error> {
        self.read(
            || format!("reading volume \"{name}\""),
            |tx| find_volume(tx, name),
        )
    }

    fn list_volumes(&self) -> Result<Vec<VolumeRecord>, Error> {
        let context = || "listing volumes".to_owned();
        self.read(context, |tx| {
            collect(
                tx,
                &format!("SELECT {VOLUME_COLUMNS} FROM volumes ORDER BY name"),
                [],
                volume_from_row,
                context,
            )
        })
    }

    fn import_app(&self, doc: &crate::store::AppDoc) -> Result<(), Error> {
        self.write(
            || format!("importing app \"{}\"", doc.name),
            |tx| import::app(tx, doc),
        )
    }

    fn daemon_key_or(
        &self,
        fresh: &crate::store::DaemonKey,
    ) -> Result<crate::store::DaemonKey, Error> {
        let context = || "reading the daemon key".to_string();
        let stored: Vec<u8> = self.write(context, |tx| {
            tx.execute(
                "INSERT OR IGNORE INTO daemon_keys (name, key) VALUES ('daemon', ?1)",
                params![fresh.0.as_slice()],
            )
            .context(context)?;
            tx.query_row(
                "SELECT key FROM daemon_keys WHERE name = 'daemon'",
                [],
                |row| row.get(0),
            )
            .context(context)
        })?;
        crate::store::DaemonKey::from_bytes(&stored).map_err(|reason| Error::Invalid {
            context: context(),
            reason,
        })
    }

    fn import_volume(&self, volume: &VolumeRecord) -> Result<(), Error> {
        self.write(
            || format!("importing volume \"{}\"", volume.name),
            |tx| import::volume(tx, volume),
        )
    }

    fn delete_volume(&self, name: &str) -> Result<Option<VolumeRecord>, Error> {
        let context = || format!("deleting volume \"{name}\"");
        self.write(context, |tx| {
            let found = find_volume(tx, name)?;
            if found.is_some() {
                tx.execute("DELETE FROM volumes WHERE name = ?1", [name])
                    .context(context)?;
            }
            Ok(found)
        })
    }
}
