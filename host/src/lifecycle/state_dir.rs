//! The daemon's state folder: its layout, and every file operation on
//! the folder itself (private folders and files, the lock, the secret).
//! The folder is 0700 and everything in it 0600 (folders 0700), whatever
//! made it: [`make_private`] runs at every open.
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

use std::fs::File;
use std::path::{Path, PathBuf};

use super::Error;

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

/// Creates `path` and its missing parents, mode 0700.
pub(super) fn create_private_dir(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|source| Error::Io {
            what: format!("creating {}", path.display()),
            source,
        })
}

/// Makes the state folder private whatever made it: the folder and every
/// folder in it 0700, every file (the database and its `-wal`/`-shm`, the
/// secret, the lock, bundles, cache, a directory target inside it) 0600,
/// and creates the database file 0600 if it is missing, so SQLite (which
/// gives its `-wal` and `-shm` files the database's mode) never makes a
/// readable one. Links are left alone (never followed).
pub(super) fn make_private(paths: &StatePaths, database: &str) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let db = paths.root().join(database);
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&db)
        .map_err(|source| Error::Io {
            what: format!("creating {}", db.display()),
            source,
        })?;
    let mut folders = vec![paths.root().to_path_buf()];
    while let Some(folder) = folders.pop() {
        set_mode(&folder, 0o700)?;
        for entry in read_dir(&folder)? {
            let path = entry.path();
            let kind = entry.file_type().map_err(|source| Error::Io {
                what: format!("reading {}", path.display()),
                source,
            })?;
            if kind.is_dir() {
                folders.push(path);
            } else if !kind.is_symlink() {
                set_mode(&path, 0o600)?;
            }
        }
    }
    Ok(())
}

/// Sets `path`'s permission bits to `mode` unless they already are.
fn set_mode(path: &Path, mode: u32) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let io = |source| Error::Io {
        what: format!("making {} private", path.display()),
        source,
    };
    let meta = std::fs::symlink_metadata(path).map_err(io)?;
    if meta.permissions().mode() & 0o7777 != mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io)?;
    }
    Ok(())
}

/// Removes a folder and what it holds; a missing folder is fine.
pub(super) fn remove_dir(path: &Path) -> Result<(), Error> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Io {
            what: format!("removing {}", path.display()),
            source,
        }),
    }
}

/// The entries of a folder; a missing folder has none.
pub(super) fn read_dir(path: &Path) -> Result<Vec<std::fs::DirEntry>, Error> {
    let io = |source| Error::Io {
        what: format!("listing {}", path.display()),
        source,
    };
    match std::fs::read_dir(path) {
        Ok(entries) => entries.collect::<Result<Vec<_>, _>>().map_err(io),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io(e)),
    }
}

/// Takes the state folder's lock, or says another daemon holds it.
pub(super) fn lock_state(paths: &StatePaths) -> Result<File, Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = paths.lock_file();
    let file = File::options()
        .mode(0o600)
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| Error::Io {
            what: format!("opening {}", path.display()),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::StateLocked {
            path: paths.root().display().to_string(),
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(Error::Io {
            what: format!("locking {}", path.display()),
            source,
        }),
    }
}

/// The daemon's 32-byte secret, made on first start (mode 0600).
pub(super) fn load_secret(path: &Path) -> Result<[u8; 32], Error> {
    let io = |what: &str, source| Error::Io {
        what: format!("{what} {}", path.display()),
        source,
    };
    match std::fs::read(path) {
        Ok(bytes) if bytes.len() == 32 => {
            let mut secret = [0; 32];
            secret.copy_from_slice(&bytes);
            return Ok(secret);
        }
        Ok(_) => {
            tracing::warn!(path = %path.display(), "daemon secret has the wrong length; making a new one")
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("reading", e)),
    }
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|source| Error::Randomness {
        path: path.display().to_string(),
        source,
    })?;
    write_private(path, &secret).map_err(|e| io("writing", e))?;
    Ok(secret)
}

/// Writes `bytes` to `path` (mode 0600) through a temporary file.
pub(super) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut file = File::options()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Takes the lock a daemon holds on the state folder `state` (for tools
/// that write its store while no daemon runs: `capstan store import`).
///
/// # Errors
/// [`Error::StateLocked`] while a daemon runs on it; the file system's
/// errors.
pub fn lock_folder(state: &std::path::Path) -> Result<File, Error> {
    lock_state(&StatePaths::new(state))
}
