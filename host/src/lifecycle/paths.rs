//! The layout of the daemon's state folder.
//!
//! ```text
//! STATE/state.db            the store
//! STATE/daemon.lock         held (flock) while a daemon runs
//! STATE/secret              32 random bytes, 0600: seeds plugin randomness
//! STATE/bundles/APP/VERSION verified, unpacked bundles
//! STATE/bundles/.staging/   bundles being verified; emptied at start
//! STATE/cache/              compiled plugin components
//! STATE/capstan.sock        the API socket (default listen address)
//! ```

use std::path::{Path, PathBuf};

/// Where everything lives under one state folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatePaths {
    root: PathBuf,
}

impl StatePaths {
    /// The layout under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        StatePaths { root: root.into() }
    }

    /// The state folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The lock file a running daemon holds.
    pub fn lock_file(&self) -> PathBuf {
        self.root.join("daemon.lock")
    }

    /// The daemon's secret.
    pub fn secret_file(&self) -> PathBuf {
        self.root.join("secret")
    }

    /// Where unpacked bundles are kept.
    pub fn bundles(&self) -> PathBuf {
        self.root.join("bundles")
    }

    /// Where bundles are verified before they are moved into place.
    pub fn staging(&self) -> PathBuf {
        self.bundles().join(".staging")
    }

    /// The folder of one version of one app.
    pub fn bundle_dir(&self, app: &str, version: &str) -> PathBuf {
        self.bundles().join(app).join(version)
    }

    /// The compiled-component cache.
    pub fn cache(&self) -> PathBuf {
        self.root.join("cache")
    }

    /// The default API socket.
    pub fn socket(&self) -> PathBuf {
        self.root.join("capstan.sock")
    }
}
