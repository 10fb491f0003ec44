//! `capstan store export` and `import`: every app and volume of one store
//! as one JSON document ([`Dump`]) and back into another — SQLite into
//! the cluster store when a daemon moves into the cluster, and back.
//! The export reads through the [`Store`] trait only, so any store
//! exports; the import writes each app whole ([`Store::import_app`]),
//! ids and times as they were. Bundle folders are not moved: a replica
//! with `--bundle-registry` pulls what it lacks, a single daemon needs
//! its `bundles/` folder copied beside the database.

use serde::{Deserialize, Serialize};

use super::document::{AppDoc, AppSpec, AppStatus};
use super::{Error, Store, VolumeRecord};

/// The dump's format name; an import refuses any other.
pub const FORMAT: &str = "capstan-store/v1";

/// Every app and volume of a store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dump {
    /// [`FORMAT`].
    pub format: String,
    /// Each app's whole state, by name.
    pub apps: Vec<AppDoc>,
    /// The local volumes, by name.
    pub volumes: Vec<VolumeRecord>,
    /// The daemon's key (base64), which binds generated secrets to their
    /// apps; absent in dumps written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_key: Option<String>,
}

/// Reads every app and volume of `store`.
///
/// # Errors
/// The store's errors.
pub fn export(store: &dyn Store) -> Result<Dump, Error> {
    let mut apps = Vec::new();
    for record in store.list_apps()? {
        let name = &record.name;
        apps.push(AppDoc {
            name: name.clone(),
            spec: AppSpec {
                versions: store.list_versions(name)?,
                overrides: store.list_overrides(name)?,
                decisions: store.list_decisions(name)?,
                user_snapshots: store.user_snapshots(name)?,
            },
            status: AppStatus {
                state: record.state,
                active_version: record.active_version.clone(),
                target_version: record.target_version.clone(),
                progress: record.progress.clone(),
                message: record.message.clone(),
                created_at: record.created_at,
                updated_at: record.updated_at,
                history: store.history(name)?,
                releases: store.list_releases(name)?,
                automatic_pause: record.automatic_pause.clone(),
            },
        });
    }
    use base64::Engine as _;
    let key = store.daemon_key()?;
    Ok(Dump {
        format: FORMAT.to_string(),
        apps,
        volumes: store.list_volumes()?,
        daemon_key: Some(base64::engine::general_purpose::STANDARD.encode(key.0)),
    })
}

/// What an import did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Imported {
    /// Apps written.
    pub apps: usize,
    /// Volumes written.
    pub volumes: usize,
}

/// Writes every app and volume of `dump` into `store`, after checking
/// none of them is there already (so an import writes all or, refused
/// up front, nothing).
///
/// # Errors
/// [`Error::Invalid`] for another format; [`Error::AppExists`] or
/// [`Error::VolumeExists`] naming the first that is taken; the store's
/// errors (an import stopped by one leaves the apps before it written).
pub fn import(store: &dyn Store, dump: &Dump) -> Result<Imported, Error> {
    if dump.format != FORMAT {
        return Err(Error::Invalid {
            context: "importing a store dump".into(),
            reason: format!("its format is {:?}, not {FORMAT:?}", dump.format),
        });
    }
    for doc in &dump.apps {
        match store.app(&doc.name) {
            Ok(_) => {
                return Err(Error::AppExists {
                    app: doc.name.clone(),
                });
            }
            Err(Error::UnknownApp { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    for volume in &dump.volumes {
        if store.volume(&volume.name)?.is_some() {
            return Err(Error::VolumeExists {
                name: volume.name.clone(),
            });
        }
    }
    if let Some(text) = &dump.daemon_key {
        use base64::Engine as _;
        let invalid = |reason: String| Error::Invalid {
            context: "importing a store dump's daemon key".into(),
            reason,
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| invalid(e.to_string()))?;
        let key = super::DaemonKey::from_bytes(&bytes).map_err(invalid)?;
        if store.daemon_key_or(&key)? != key {
            return Err(invalid(
                "the store already holds another daemon key: the generated secrets of one \
                 side would no longer verify; import into a new store"
                    .into(),
            ));
        }
    }
    let mut done = Imported::default();
    for doc in &dump.apps {
        store.import_app(doc)?;
        done.apps += 1;
    }
    for volume in &dump.volumes {
        store.import_volume(volume)?;
        done.volumes += 1;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SqliteStore;
    use crate::store::conformance::script;
    use crate::store::document::DocStore;
    use crate::store::document::memory::MemoryBackend;

    #[test]
    fn a_store_moves_into_documents_and_back_keeping_everything() {
        let sqlite = SqliteStore::open_in_memory().unwrap();
        let _ = script(&sqlite, "x-");
        let volume = VolumeRecord {
            name: "kept".into(),
            node: "n1".into(),
            host_path: "/data".into(),
            size: "1Gi".into(),
            storage_class: "local".into(),
            created_at: 0,
            namespace: "apps".into(),
        };
        sqlite.create_volume(&volume).unwrap();
        let first = export(&sqlite).unwrap();
        assert!(!first.apps.is_empty());
        assert!(first.apps.iter().any(|a| a.status.history.len() >= 2));
        let docs = DocStore::new(MemoryBackend::new(1 << 20));
        let done = import(&docs, &first).unwrap();
        assert_eq!(done.apps, first.apps.len());
        assert_eq!(done.volumes, 1);
        let second = export(&docs).unwrap();
        assert_eq!(
            second, first,
            "every app, version, layer, decision and entry, the daemon key"
        );
        assert_eq!(docs.daemon_key().unwrap(), sqlite.daemon_key().unwrap());
        let back = SqliteStore::open_in_memory().unwrap();
        import(&back, &second).unwrap();
        assert_eq!(export(&back).unwrap(), first);
        // An operation id keeps finding its entry after the move.
        let entry = &first.apps[0].status.history[0];
        assert_eq!(&docs.operation(entry.id).unwrap(), entry);
        assert_eq!(&back.operation(entry.id).unwrap(), entry);
    }

    #[test]
    fn an_import_over_an_existing_app_writes_nothing() {
        let source = SqliteStore::open_in_memory().unwrap();
        let _ = script(&source, "y-");
        let dump = export(&source).unwrap();
        let target = SqliteStore::open_in_memory().unwrap();
        let _ = script(&target, "y-");
        let before = export(&target).unwrap();
        let err = import(&target, &dump).unwrap_err();
        assert!(matches!(err, Error::AppExists { .. }), "{err}");
        assert_eq!(export(&target).unwrap(), before);
        // A store with a key of its own takes no other.
        let keyed = SqliteStore::open_in_memory().unwrap();
        let own = keyed.daemon_key().unwrap();
        let err = import(&keyed, &dump).unwrap_err();
        assert!(err.to_string().contains("another daemon key"), "{err}");
        assert_eq!(keyed.daemon_key().unwrap(), own);
        assert!(keyed.list_apps().unwrap().is_empty());
        let mut other = dump.clone();
        other.format = "something/v9".into();
        let err = import(&SqliteStore::open_in_memory().unwrap(), &other).unwrap_err();
        assert!(err.to_string().contains("capstan-store/v1"), "{err}");
    }
}
