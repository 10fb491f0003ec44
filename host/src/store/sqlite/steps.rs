//! Steps several [`Store`](crate::store::Store) methods share. Each runs on
//! the caller's open transaction and never commits.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;

use super::rows::{
    APP_COLUMNS, HISTORY_COLUMNS, OVERRIDE_COLUMNS, VERSION_COLUMNS, VOLUME_COLUMNS, app_from_row,
    history_from_row, version_from_row, volume_from_row,
};
use crate::model::AppName;
use crate::store::error::{Context, Error};
use crate::store::records::{
    AppRecord, HistoryEntry, OperationId, Reconciled, UnixMillis, VersionRecord, VolumeRecord,
};
use crate::store::rules::interrupted_message;
pub(super) use crate::store::rules::{check_allowed, now, require_transitional};
use crate::store::state::{AppState, Operation, Outcome, OverrideLayer};

pub(super) fn path_text(path: &Path) -> Result<&str, Error> {
    path.to_str().ok_or_else(|| Error::NonUtf8Path {
        path: path.to_owned(),
    })
}

// ---- steps shared by several methods (all run inside a transaction) ----

pub(super) fn find_app(conn: &Connection, app: &AppName) -> Result<Option<AppRecord>, Error> {
    conn.query_row(
        &format!("SELECT {APP_COLUMNS} FROM apps WHERE name = ?1"),
        [app],
        app_from_row,
    )
    .optional()
    .context(|| format!("reading app \"{app}\""))
}

pub(super) fn load_app(conn: &Connection, app: &AppName) -> Result<AppRecord, Error> {
    find_app(conn, app)?.ok_or_else(|| Error::UnknownApp { app: app.clone() })
}

pub(super) fn require_app(conn: &Connection, app: &AppName) -> Result<(), Error> {
    let exists: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM apps WHERE name = ?1)",
            [app],
            |row| row.get(0),
        )
        .context(|| format!("reading app \"{app}\""))?;
    if exists {
        Ok(())
    } else {
        Err(Error::UnknownApp { app: app.clone() })
    }
}

pub(super) fn find_version(
    conn: &Connection,
    app: &AppName,
    version: &str,
) -> Result<Option<VersionRecord>, Error> {
    conn.query_row(
        &format!("SELECT {VERSION_COLUMNS} FROM versions WHERE app = ?1 AND version = ?2"),
        params![app, version],
        version_from_row,
    )
    .optional()
    .context(|| format!("reading version \"{version}\" of app \"{app}\""))
}

pub(super) fn load_version(
    conn: &Connection,
    app: &AppName,
    version: &str,
) -> Result<VersionRecord, Error> {
    find_version(conn, app, version)?.ok_or_else(|| Error::UnknownVersion {
        app: app.clone(),
        version: version.to_owned(),
    })
}

pub(super) fn insert_version(
    conn: &Connection,
    version: &VersionRecord,
    at: UnixMillis,
) -> Result<VersionRecord, Error> {
    let app = &version.app;
    if find_version(conn, app, &version.version)?.is_some() {
        return Err(Error::VersionExists {
            app: app.clone(),
            version: version.version.clone(),
        });
    }
    let stored = VersionRecord {
        uploaded_at: at,
        ..version.clone()
    };
    conn.execute(
        &format!(
            "INSERT INTO versions ({VERSION_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        ),
        params![
            stored.app,
            stored.version,
            path_text(&stored.bundle_dir)?,
            stored.bundle_digest,
            stored.signer,
            stored.metadata,
            stored.uploaded_at,
            stored.source
        ],
    )
    .context(|| format!("storing version \"{}\" of app \"{app}\"", version.version))?;
    Ok(stored)
}

/// The app's versions, oldest upload first.
pub(super) fn load_versions(conn: &Connection, app: &AppName) -> Result<Vec<VersionRecord>, Error> {
    collect(
        conn,
        &format!(
            "SELECT {VERSION_COLUMNS} FROM versions WHERE app = ?1 ORDER BY uploaded_at, rowid"
        ),
        [app],
        version_from_row,
        || format!("listing versions of app \"{app}\""),
    )
}

pub(super) fn open_history(
    conn: &Connection,
    app: &AppName,
    operation: Operation,
    from: Option<AppState>,
    via: AppState,
    at: UnixMillis,
) -> Result<OperationId, Error> {
    conn.execute(
        "INSERT INTO history (app, operation, from_state, via_state, outcome, started_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![app, operation, from, via, Outcome::Running, at],
    )
    .context(|| format!("recording {operation} of app \"{app}\""))?;
    Ok(OperationId(conn.last_insert_rowid()))
}

pub(super) fn load_operation(conn: &Connection, id: OperationId) -> Result<HistoryEntry, Error> {
    conn.query_row(
        &format!("SELECT {HISTORY_COLUMNS} FROM history WHERE id = ?1"),
        [id],
        history_from_row,
    )
    .optional()
    .context(|| format!("reading operation {id}"))?
    .ok_or(Error::UnknownOperation { id })
}

pub(super) fn load_running(conn: &Connection, id: OperationId) -> Result<HistoryEntry, Error> {
    let entry = load_operation(conn, id)?;
    if entry.outcome != Outcome::Running {
        return Err(Error::OperationFinished { id, app: entry.app });
    }
    Ok(entry)
}

pub(super) fn require_layer_version(
    conn: &Connection,
    app: &AppName,
    layer: &OverrideLayer,
) -> Result<(), Error> {
    match layer.version() {
        Some(version) => load_version(conn, app, version).map(drop),
        None => require_app(conn, app),
    }
}

pub(super) fn insert_override(
    conn: &Connection,
    app: &AppName,
    chart: &str,
    layer: &OverrideLayer,
    values: &Value,
    at: UnixMillis,
) -> Result<(), Error> {
    conn.execute(
        &format!("INSERT INTO overrides ({OVERRIDE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"),
        params![app, chart, layer.kind(), layer.version(), values, at],
    )
    .context(|| override_context("storing", app, chart, layer))?;
    Ok(())
}

pub(super) fn override_context(
    verb: &str,
    app: &AppName,
    chart: &str,
    layer: &OverrideLayer,
) -> String {
    match layer.version() {
        Some(version) => format!(
            "{verb} {} overrides of chart \"{chart}\" of app \"{app}\" version \"{version}\"",
            layer.kind()
        ),
        None => format!(
            "{verb} {} overrides of chart \"{chart}\" of app \"{app}\"",
            layer.kind()
        ),
    }
}

pub(super) fn collect<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    map: fn(&Row<'_>) -> rusqlite::Result<T>,
    context: impl Fn() -> String,
) -> Result<Vec<T>, Error> {
    let mut statement = conn.prepare_cached(sql).context(&context)?;
    let rows = statement.query_map(params, map).context(&context)?;
    rows.collect::<Result<Vec<_>, _>>().context(&context)
}

/// Moves one app found in a transitional state to its failed state and
/// closes its running operations as interrupted.
pub(super) fn reconcile_app(
    conn: &Connection,
    app: &AppName,
    from: AppState,
    at: UnixMillis,
) -> Result<Reconciled, Error> {
    let context = || format!("reconciling app \"{app}\"");
    let to = from.failed_state_of();
    let running: Option<Operation> = conn
        .query_row(
            "SELECT operation FROM history WHERE app = ?1 AND outcome = ?2 \
             ORDER BY id DESC LIMIT 1",
            params![app, Outcome::Running],
            |row| row.get(0),
        )
        .optional()
        .context(context)?;
    let message = interrupted_message(running, from, to);
    conn.execute(
        "UPDATE apps SET state = ?2, message = ?3, progress = NULL, updated_at = ?4 \
         WHERE name = ?1",
        params![app, to, message, at],
    )
    .context(context)?;
    if running.is_some() {
        conn.execute(
            "UPDATE history SET outcome = ?2, to_state = ?3, message = ?4, finished_at = ?5 \
             WHERE app = ?1 AND outcome = ?6",
            params![app, Outcome::Interrupted, to, message, at, Outcome::Running],
        )
        .context(context)?;
    } else {
        conn.execute(
            "INSERT INTO history (app, operation, from_state, via_state, to_state, outcome, \
             message, started_at, finished_at) VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7, ?7)",
            params![
                app,
                Operation::Reconcile,
                from,
                to,
                Outcome::Succeeded,
                message,
                at
            ],
        )
        .context(context)?;
    }
    tracing::warn!(app = %app, from = %from, to = %to, "moved interrupted app to its failed state");
    Ok(Reconciled {
        app: app.clone(),
        from,
        to,
    })
}

pub(super) fn find_volume(conn: &Connection, name: &str) -> Result<Option<VolumeRecord>, Error> {
    conn.query_row(
        &format!("SELECT {VOLUME_COLUMNS} FROM volumes WHERE name = ?1"),
        [name],
        volume_from_row,
    )
    .optional()
    .context(|| format!("reading volume \"{name}\""))
}
