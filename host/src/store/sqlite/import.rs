//! `capstan store import` into SQLite: one app's whole document written
//! in one transaction, ids and times as they were.

use rusqlite::{Transaction, params};

use super::steps::{find_app, find_volume, path_text};
use crate::store::document::AppDoc;
use crate::store::error::{Context, Error};
use crate::store::records::VolumeRecord;

/// Writes `doc` as new rows; [`Error::AppExists`] when the name is taken.
pub(super) fn app(tx: &Transaction<'_>, doc: &AppDoc) -> Result<(), Error> {
    let app = &doc.name;
    if find_app(tx, app)?.is_some() {
        return Err(Error::AppExists { app: app.clone() });
    }
    let context = || format!("importing app \"{app}\"");
    let status = &doc.status;
    tx.execute(
        "INSERT INTO apps (name, state, active_version, target_version, progress, message, \
         created_at, updated_at, automatic_pause) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            app,
            status.state,
            status.active_version,
            status.target_version,
            status.progress,
            status.message,
            status.created_at,
            status.updated_at,
            status
                .automatic_pause
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(|e| Error::Database {
                    context: format!("importing the pause of app \"{app}\": {e}"),
                    source: rusqlite::Error::ToSqlConversionFailure(Box::new(e)),
                })?
        ],
    )
    .context(context)?;
    for v in &doc.spec.versions {
        tx.execute(
            "INSERT INTO versions (app, version, bundle_dir, bundle_digest, signer, metadata, \
             uploaded_at, source) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                app,
                v.version,
                path_text(&v.bundle_dir)?,
                v.bundle_digest,
                v.signer,
                v.metadata,
                v.uploaded_at,
                v.source
            ],
        )
        .context(context)?;
    }
    for o in &doc.spec.overrides {
        tx.execute(
            "INSERT INTO overrides (app, chart, layer, version, vals, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                app,
                o.chart,
                o.layer.kind(),
                o.layer.version(),
                o.values,
                o.updated_at
            ],
        )
        .context(context)?;
    }
    for d in &doc.spec.decisions {
        tx.execute(
            "INSERT INTO decisions (app, component, kind, decided_by, traits_digest, decided_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                app,
                d.component,
                d.kind,
                d.decided_by,
                d.traits_digest,
                d.decided_at
            ],
        )
        .context(context)?;
    }
    for s in &doc.spec.user_snapshots {
        let charts: serde_json::Map<String, serde_json::Value> = s.charts.iter().cloned().collect();
        tx.execute(
            "INSERT INTO user_snapshots (app, version, charts, saved_at) VALUES (?1, ?2, ?3, ?4)",
            params![
                app,
                s.version,
                serde_json::Value::Object(charts),
                s.saved_at
            ],
        )
        .context(context)?;
    }
    for h in &status.history {
        tx.execute(
            "INSERT INTO history (id, app, operation, from_state, via_state, to_state, outcome, \
             message, started_at, finished_at, request) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                h.id,
                app,
                h.operation,
                h.from_state,
                h.via_state,
                h.to_state,
                h.outcome,
                h.message,
                h.started_at,
                h.finished_at,
                h.request
            ],
        )
        .context(|| format!("importing operation {} of app \"{app}\"", h.id))?;
    }
    for r in &status.releases {
        let objects = serde_json::to_string(&r.objects).map_err(|e| Error::Invalid {
            context: context(),
            reason: e.to_string(),
        })?;
        tx.execute(
            "INSERT INTO releases (app, chart, namespace, release_name, method, revision, \
             objects, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                app,
                r.chart,
                r.namespace,
                r.release_name,
                r.method,
                i64::try_from(r.revision).unwrap_or(i64::MAX),
                objects,
                r.updated_at
            ],
        )
        .context(context)?;
    }
    Ok(())
}

/// Writes `volume` as a new row; [`Error::VolumeExists`] when taken.
pub(super) fn volume(tx: &Transaction<'_>, volume: &VolumeRecord) -> Result<(), Error> {
    if find_volume(tx, &volume.name)?.is_some() {
        return Err(Error::VolumeExists {
            name: volume.name.clone(),
        });
    }
    tx.execute(
        "INSERT INTO volumes (name, node, host_path, size, storage_class, created_at, namespace) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            volume.name,
            volume.node,
            path_text(&volume.host_path)?,
            volume.size,
            volume.storage_class,
            volume.created_at,
            volume.namespace
        ],
    )
    .context(|| format!("importing volume \"{}\"", volume.name))?;
    Ok(())
}
