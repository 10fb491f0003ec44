//! [`MemoryBackend`]: documents in a map, with the API server's guarded
//! writes (a version counter per write) — the fast double of
//! [`crate::store::cluster`] for tests of [`super::DocStore`]'s rules.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{AppDoc, Backend, Stored};
use crate::model::AppName;
use crate::store::Error;
use crate::store::records::{DaemonKey, VolumeRecord};

/// Documents in memory; see the module doc.
#[derive(Debug)]
pub struct MemoryBackend {
    inner: Mutex<Inner>,
    max_bytes: usize,
}

#[derive(Debug, Default)]
struct Inner {
    apps: BTreeMap<AppName, Stored<AppDoc>>,
    volumes: BTreeMap<String, VolumeRecord>,
    counter: u64,
    key: Option<DaemonKey>,
}

impl MemoryBackend {
    /// An empty backend taking documents up to `max_bytes`.
    pub fn new(max_bytes: usize) -> Self {
        MemoryBackend {
            inner: Mutex::new(Inner::default()),
            max_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `doc` as another writer would (a test's second daemon).
    pub fn overwrite(&self, doc: &AppDoc) {
        let mut inner = self.lock();
        inner.counter += 1;
        let version = inner.counter.to_string();
        inner.apps.insert(
            doc.name.clone(),
            Stored {
                doc: doc.clone(),
                version,
            },
        );
    }
}

impl Inner {
    fn next(&mut self) -> String {
        self.counter += 1;
        self.counter.to_string()
    }

    fn guard(&self, before: &Stored<AppDoc>) -> Result<(), Error> {
        match self.apps.get(&before.doc.name) {
            Some(live) if live.version == before.version => Ok(()),
            _ => Err(Error::Conflict {
                what: format!("app \"{}\"", before.doc.name),
                expected: before.version.clone(),
            }),
        }
    }
}

impl Backend for MemoryBackend {
    fn get(&self, app: &AppName) -> Result<Option<Stored<AppDoc>>, Error> {
        Ok(self.lock().apps.get(app).cloned())
    }

    fn list(&self) -> Result<Vec<Stored<AppDoc>>, Error> {
        Ok(self.lock().apps.values().cloned().collect())
    }

    fn create(&self, doc: &AppDoc) -> Result<Stored<AppDoc>, Error> {
        let mut inner = self.lock();
        if inner.apps.contains_key(&doc.name) {
            return Err(Error::AppExists {
                app: doc.name.clone(),
            });
        }
        let stored = Stored {
            doc: doc.clone(),
            version: inner.next(),
        };
        inner.apps.insert(doc.name.clone(), stored.clone());
        Ok(stored)
    }

    fn update(&self, before: &Stored<AppDoc>, after: &AppDoc) -> Result<Stored<AppDoc>, Error> {
        let mut inner = self.lock();
        inner.guard(before)?;
        let stored = Stored {
            doc: after.clone(),
            version: inner.next(),
        };
        inner.apps.insert(after.name.clone(), stored.clone());
        Ok(stored)
    }

    fn delete(&self, before: &Stored<AppDoc>) -> Result<(), Error> {
        let mut inner = self.lock();
        inner.guard(before)?;
        inner.apps.remove(&before.doc.name);
        Ok(())
    }

    fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    fn volume(&self, name: &str) -> Result<Option<VolumeRecord>, Error> {
        Ok(self.lock().volumes.get(name).cloned())
    }

    fn volumes(&self) -> Result<Vec<VolumeRecord>, Error> {
        Ok(self.lock().volumes.values().cloned().collect())
    }

    fn create_volume(&self, volume: &VolumeRecord) -> Result<(), Error> {
        let mut inner = self.lock();
        if inner.volumes.contains_key(&volume.name) {
            return Err(Error::VolumeExists {
                name: volume.name.clone(),
            });
        }
        inner.volumes.insert(volume.name.clone(), volume.clone());
        Ok(())
    }

    fn delete_volume(&self, name: &str) -> Result<bool, Error> {
        Ok(self.lock().volumes.remove(name).is_some())
    }

    fn daemon_key(&self, fresh: &DaemonKey) -> Result<DaemonKey, Error> {
        Ok(self.lock().key.get_or_insert_with(|| fresh.clone()).clone())
    }
}
