//! Stored bundles: making an unpacked bundle durable before it is recorded
//! ([`sync_tree`]), and checking it again against its signed `MANIFEST`
//! every time it is loaded ([`verify_stored`]).
//!
//! Why: a bundle folder lives for as long as its version is stored. A power
//! loss before its pages reach the disk, a full disk, or a careless hand in
//! the state folder can leave a file empty or changed; without a check the
//! daemon would render from it and prune what it no longer produces.
//!
//! Owns only reading and syncing files under one bundle folder; it does not
//! know about the store or the lifecycle.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::Read;
use std::path::Path;

use sha2::{Digest as _, Sha256};

use super::manifest::{Digest, Manifest};
use super::metadata::Metadata;
use super::{
    Error, MANIFEST_PATH, MAX_MANIFEST_BYTES, MAX_METADATA_BYTES, MAX_SIGNATURE_BYTES,
    METADATA_PATH, SIGNATURE_PATH,
};
use crate::trust;

/// What a stored bundle was found to hold when it was checked again.
#[derive(Debug, Clone)]
pub struct StoredCheck {
    /// The parsed `capstan.yaml`.
    pub metadata: Metadata,
    /// The signed manifest.
    pub manifest: Manifest,
}

/// Checks a bundle folder the daemon stored against its own signed
/// `MANIFEST`: the signature is valid and made by `signer` (the key
/// recorded at upload), every listed file is a regular file whose sha256
/// matches, nothing unlisted is there, and `capstan.yaml` parses and names
/// only listed files.
///
/// Hashes every file on every call (no cache: a cache keyed by size and
/// mtime would miss a same-size rewrite with a restored mtime).
///
/// # Errors
/// [`Error::DigestMismatch`] naming the first changed file,
/// [`Error::MissingFile`], [`Error::NotInManifest`], [`Error::Symlink`] or
/// [`Error::SpecialFile`] for what is not a plain file, [`Error::BadSignature`],
/// [`Error::StoredSigner`], [`Error::StoredRead`] for I/O, and the metadata
/// errors.
pub fn verify_stored(dir: &Path, signer: &str) -> Result<StoredCheck, Error> {
    let manifest_bytes = read_bounded(dir, MANIFEST_PATH, MAX_MANIFEST_BYTES)?;
    let signature_bytes = read_bounded(dir, SIGNATURE_PATH, MAX_SIGNATURE_BYTES)?;
    let verified =
        trust::verify_signature(&signature_bytes, &manifest_bytes).map_err(Error::BadSignature)?;
    if verified.signer().to_string() != signer {
        return Err(Error::StoredSigner {
            found: verified.signer().to_string(),
            recorded: signer.to_owned(),
        });
    }
    let manifest = Manifest::parse(&manifest_bytes)?;
    for entry in manifest.entries() {
        let actual = hash_file(dir, &entry.path)?;
        if actual != entry.digest {
            return Err(Error::DigestMismatch { path: entry.path });
        }
    }
    check_nothing_unlisted(dir, "", &manifest)?;
    let metadata_bytes = read_bounded(dir, METADATA_PATH, MAX_METADATA_BYTES)?;
    let text = std::str::from_utf8(&metadata_bytes).map_err(|_| Error::MetadataSyntax {
        line: 0,
        message: "it is not UTF-8".to_string(),
    })?;
    let metadata = Metadata::parse(text)?;
    metadata.check_files(&manifest)?;
    Ok(StoredCheck { metadata, manifest })
}

/// Fsyncs every file and folder under `root`, then `root` itself, so that
/// what is renamed into place afterwards survives a power loss.
///
/// # Errors
/// [`Error::StoredSync`] naming the path that could not be synced.
pub fn sync_tree(root: &Path) -> Result<(), Error> {
    let fail = |path: &Path, source| Error::StoredSync {
        path: path.to_path_buf(),
        source,
    };
    for entry in fs::read_dir(root).map_err(|e| fail(root, e))? {
        let entry = entry.map_err(|e| fail(root, e))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| fail(&path, e))?;
        if kind.is_dir() {
            sync_tree(&path)?;
        } else if kind.is_file() {
            File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(|e| fail(&path, e))?;
        }
    }
    sync_dir(root).map_err(|e| fail(root, e))
}

/// Fsyncs one folder (its entries: a rename or a create in it).
///
/// # Errors
/// The I/O error.
pub fn sync_dir(path: &Path) -> std::io::Result<()> {
    File::open(path)?.sync_all()
}

fn stored_read(path: &str, source: std::io::Error) -> Error {
    Error::StoredRead {
        path: path.to_owned(),
        source,
    }
}

/// Opens a listed file, refusing links and special files.
fn open_plain(dir: &Path, rel: &str) -> Result<File, Error> {
    let full = dir.join(rel);
    let meta = match fs::symlink_metadata(&full) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::MissingFile {
                path: rel.to_owned(),
            });
        }
        Err(e) => return Err(stored_read(rel, e)),
    };
    if meta.file_type().is_symlink() {
        return Err(Error::Symlink {
            path: rel.to_owned(),
        });
    }
    if !meta.is_file() {
        return Err(Error::SpecialFile {
            path: rel.to_owned(),
            kind: "special file",
        });
    }
    File::open(&full).map_err(|e| stored_read(rel, e))
}

fn read_bounded(dir: &Path, rel: &str, max: u64) -> Result<Vec<u8>, Error> {
    let file = open_plain(dir, rel)?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| stored_read(rel, e))?;
    if bytes.len() as u64 > max {
        return Err(Error::FileTooLarge {
            path: rel.to_owned(),
            size: bytes.len() as u64,
            limit: max,
        });
    }
    Ok(bytes)
}

fn hash_file(dir: &Path, rel: &str) -> Result<Digest, Error> {
    let mut file = open_plain(dir, rel)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buffer).map_err(|e| stored_read(rel, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(Digest::from_hasher(hasher))
}

/// Every file under `dir/prefix` is listed (or is `MANIFEST`/`MANIFEST.sig`).
fn check_nothing_unlisted(dir: &Path, prefix: &str, manifest: &Manifest) -> Result<(), Error> {
    let listed: HashSet<&str> = manifest.paths().collect();
    let mut folders = vec![prefix.to_owned()];
    while let Some(folder) = folders.pop() {
        let here = if folder.is_empty() {
            dir.to_path_buf()
        } else {
            dir.join(&folder)
        };
        for entry in fs::read_dir(&here).map_err(|e| stored_read(&folder, e))? {
            let entry = entry.map_err(|e| stored_read(&folder, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if folder.is_empty() {
                name
            } else {
                format!("{folder}/{name}")
            };
            let kind = entry.file_type().map_err(|e| stored_read(&rel, e))?;
            if kind.is_dir() {
                folders.push(rel);
            } else if rel != MANIFEST_PATH
                && rel != SIGNATURE_PATH
                && !listed.contains(rel.as_str())
            {
                return Err(Error::NotInManifest { path: rel });
            }
        }
    }
    Ok(())
}
