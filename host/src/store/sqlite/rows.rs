//! How the store's types become SQLite columns and rows become records.

use std::path::PathBuf;

use rusqlite::Row;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, Type, ValueRef};

use crate::model::{AppName, WorkloadKind};
use crate::store::records::{
    AppRecord, DecisionRecord, HistoryEntry, OperationId, OverrideRecord, ReleaseRecord,
    VersionRecord, VolumeRecord,
};
use crate::store::state::{AppState, Operation, Outcome, OverrideLayer};

// ---- column conversions ----

fn conversion_error(error: impl std::error::Error + Send + Sync + 'static) -> FromSqlError {
    FromSqlError::Other(Box::new(error))
}

macro_rules! text_column {
    ($type:ty) => {
        impl ToSql for $type {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.as_str()))
            }
        }

        impl FromSql for $type {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                value.as_str()?.parse().map_err(conversion_error)
            }
        }
    };
}

text_column!(AppState);
text_column!(Operation);
text_column!(Outcome);
text_column!(AppName);
text_column!(WorkloadKind);

impl ToSql for OperationId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        self.0.to_sql()
    }
}

impl FromSql for OperationId {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        value.as_i64().map(OperationId)
    }
}

// ---- rows ----

pub(super) const APP_COLUMNS: &str = "name, state, active_version, target_version, progress, message, created_at, updated_at, \
     automatic_pause";

pub(super) fn app_from_row(row: &Row<'_>) -> rusqlite::Result<AppRecord> {
    Ok(AppRecord {
        name: row.get(0)?,
        state: row.get(1)?,
        active_version: row.get(2)?,
        target_version: row.get(3)?,
        progress: row.get(4)?,
        message: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
        reapply_needed: None,
        automatic_pause: row
            .get::<_, Option<String>>(8)?
            .map(|text| serde_json::from_str(&text))
            .transpose()
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(8, Type::Text, Box::new(e)))?,
    })
}

pub(super) const VERSION_COLUMNS: &str =
    "app, version, bundle_dir, bundle_digest, signer, metadata, uploaded_at, source";

pub(super) fn version_from_row(row: &Row<'_>) -> rusqlite::Result<VersionRecord> {
    Ok(VersionRecord {
        app: row.get(0)?,
        version: row.get(1)?,
        bundle_dir: PathBuf::from(row.get::<_, String>(2)?),
        bundle_digest: row.get(3)?,
        signer: row.get(4)?,
        metadata: row.get(5)?,
        uploaded_at: row.get(6)?,
        source: row.get(7)?,
    })
}

pub(super) const OVERRIDE_COLUMNS: &str = "app, chart, layer, version, vals, updated_at";

pub(super) fn override_from_row(row: &Row<'_>) -> rusqlite::Result<OverrideRecord> {
    let kind: String = row.get(2)?;
    let layer = OverrideLayer::from_parts(&kind, row.get(3)?).map_err(|error| {
        rusqlite::Error::FromSqlConversionFailure(2, Type::Text, Box::new(error))
    })?;
    Ok(OverrideRecord {
        app: row.get(0)?,
        chart: row.get(1)?,
        layer,
        values: row.get(4)?,
        updated_at: row.get(5)?,
    })
}

pub(super) const DECISION_COLUMNS: &str =
    "app, component, kind, decided_by, traits_digest, decided_at";

pub(super) fn decision_from_row(row: &Row<'_>) -> rusqlite::Result<DecisionRecord> {
    Ok(DecisionRecord {
        app: row.get(0)?,
        component: row.get(1)?,
        kind: row.get(2)?,
        decided_by: row.get(3)?,
        traits_digest: row.get(4)?,
        decided_at: row.get(5)?,
    })
}

pub(super) const RELEASE_COLUMNS: &str =
    "app, chart, namespace, release_name, method, revision, objects, updated_at";

pub(super) fn release_from_row(row: &Row<'_>) -> rusqlite::Result<ReleaseRecord> {
    let objects: String = row.get(6)?;
    let objects = serde_json::from_str(&objects).map_err(|error| {
        rusqlite::Error::FromSqlConversionFailure(6, Type::Text, Box::new(error))
    })?;
    let revision: i64 = row.get(5)?;
    Ok(ReleaseRecord {
        app: row.get(0)?,
        chart: row.get(1)?,
        namespace: row.get(2)?,
        release_name: row.get(3)?,
        method: row.get(4)?,
        revision: u64::try_from(revision).map_err(|error| {
            rusqlite::Error::FromSqlConversionFailure(5, Type::Integer, Box::new(error))
        })?,
        objects,
        updated_at: row.get(7)?,
    })
}

pub(super) const HISTORY_COLUMNS: &str = "id, app, operation, from_state, via_state, to_state, \
     outcome, message, started_at, finished_at, request";

pub(super) fn history_from_row(row: &Row<'_>) -> rusqlite::Result<HistoryEntry> {
    Ok(HistoryEntry {
        id: row.get(0)?,
        app: row.get(1)?,
        operation: row.get(2)?,
        from_state: row.get(3)?,
        via_state: row.get(4)?,
        to_state: row.get(5)?,
        outcome: row.get(6)?,
        message: row.get(7)?,
        started_at: row.get(8)?,
        finished_at: row.get(9)?,
        request: row.get(10)?,
    })
}

pub(super) const VOLUME_COLUMNS: &str =
    "name, node, host_path, size, storage_class, created_at, namespace";

pub(super) fn volume_from_row(row: &Row<'_>) -> rusqlite::Result<VolumeRecord> {
    Ok(VolumeRecord {
        name: row.get(0)?,
        node: row.get(1)?,
        host_path: PathBuf::from(row.get::<_, String>(2)?),
        size: row.get(3)?,
        storage_class: row.get(4)?,
        created_at: row.get(5)?,
        namespace: row.get(6)?,
    })
}
