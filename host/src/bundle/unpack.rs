//! Verify and unpack: the only way to turn archive bytes into a
//! [`VerifiedBundle`].
//!
//! Order of checks, in one streaming pass: `MANIFEST` and `MANIFEST.sig` must
//! be the first two entries; the signature is verified and the signer looked
//! up in the trust store before any other entry is read or anything is
//! written; then each entry's path and type are checked, each file is hashed
//! while it is written into a fresh staging folder and compared with its
//! `MANIFEST` line; at the end every listed file must have been seen and
//! `capstan.yaml` must parse and name only files that exist. The staging
//! folder is removed on any failure.
//!
//! The pass runs on two threads: this one decompresses and checks the tar
//! stream, the file worker ([`super::files`]) hashes and writes the files it
//! is sent, in order. Both are done before any function here returns.

use std::collections::HashSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::archive::{Entry, EntryKind, TarReader};
use super::files::{FileStart, FileWorker, Job, PIECE_BYTES};
use super::manifest::{Digest, Manifest, is_reserved};
use super::metadata::Metadata;
use super::stream::Stream;
use super::{
    Error, Limits, MANIFEST_PATH, MAX_MANIFEST_BYTES, MAX_METADATA_BYTES, MAX_SIGNATURE_BYTES,
    METADATA_PATH, SIGNATURE_PATH,
};
use crate::trust::{self, Fingerprint, TrustStore};

/// A bundle whose signature was made by a trusted key and whose every file
/// matched the signed `MANIFEST`, unpacked into a folder.
///
/// Only [`verify_and_unpack`] makes one; there is no other constructor:
///
/// ```compile_fail
/// use capstan::bundle::VerifiedBundle;
/// let forged = VerifiedBundle { root: std::path::PathBuf::from("/tmp/x") };
/// ```
///
/// Dropping it removes its folder unless it was kept with
/// [`VerifiedBundle::keep`] or moved with [`VerifiedBundle::move_to`].
#[derive(Debug)]
pub struct VerifiedBundle {
    folder: StagingFolder,
    metadata: Metadata,
    signer: Fingerprint,
    manifest: Manifest,
}

impl VerifiedBundle {
    /// The folder holding the bundle's files (including `MANIFEST` and `MANIFEST.sig`).
    pub fn root(&self) -> &Path {
        &self.folder.path
    }

    /// The parsed `capstan.yaml`.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The fingerprint of the trusted key that signed the bundle.
    pub fn signer(&self) -> &Fingerprint {
        &self.signer
    }

    /// The verified manifest: every file with its digest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Whether the folder survives this value being dropped.
    pub fn is_kept(&self) -> bool {
        self.folder.kept
    }

    /// Keeps the folder where it is when this value is dropped.
    #[must_use]
    pub fn keep(mut self) -> Self {
        self.folder.kept = true;
        self
    }

    /// Moves the folder to `dest` (which must not exist, on the same file
    /// system) and keeps it there: every file and folder is fsynced first,
    /// and `dest`'s parent after the rename, so a recorded bundle survives
    /// a power loss.
    ///
    /// # Errors
    ///
    /// [`Error::StoredSync`] if a sync fails, [`Error::Commit`] if the
    /// rename fails; the staging folder is then removed with the dropped
    /// bundle.
    pub fn move_to(mut self, dest: &Path) -> Result<Self, Error> {
        super::sync_tree(&self.folder.path)?;
        fs::rename(&self.folder.path, dest).map_err(|source| Error::Commit {
            dest: dest.to_path_buf(),
            source,
        })?;
        if let Some(parent) = dest.parent() {
            super::sync_dir(parent).map_err(|source| Error::StoredSync {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        self.folder.path = dest.to_path_buf();
        self.folder.kept = true;
        Ok(self)
    }
}

/// What [`inspect`] found in a bundle, without trusting or unpacking it.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// The parsed `capstan.yaml`.
    pub metadata: Metadata,
    /// The key that signed the bundle (the signature is valid; whether the
    /// key is trusted was not checked).
    pub signer: Fingerprint,
    /// Every file with its digest (each matched the archive's content).
    pub manifest: Manifest,
}

/// Verifies a bundle archive and unpacks it into a new folder inside
/// `staging_parent`.
///
/// Streams: memory use is bounded by the limits and does not grow with the
/// bundle. Hashing and writing run on a second thread, which has finished
/// when this returns. The new folder is removed on every error, so after an
/// `Err` `staging_parent` holds nothing new. Does not bound time.
///
/// Nothing is fsynced here; [`VerifiedBundle::move_to`] syncs the folder
/// before it moves it into place, and [`super::verify_stored`] checks a kept
/// folder again before it is used.
///
/// # Errors
///
/// Any rejection listed on [`Error`] for archives: signature, trust, path,
/// entry type, size, ratio, digest, manifest format, metadata. Also
/// [`Error::StagingCreate`] and [`Error::StagingWrite`] for local I/O.
pub fn verify_and_unpack(
    archive: impl Read,
    trust: &TrustStore,
    staging_parent: &Path,
    limits: &Limits,
) -> Result<VerifiedBundle, Error> {
    let _span = tracing::info_span!("bundle_unpack", staging = %staging_parent.display()).entered();
    let folder = StagingFolder::create(staging_parent)?;
    let walked = walk(archive, Some(trust), Some(&folder.path), limits).inspect_err(|err| {
        tracing::warn!(error = %err, "bundle rejected");
    })?;
    tracing::info!(
        app = %walked.metadata.name,
        version = %walked.metadata.version,
        signer = %walked.signer,
        files = walked.manifest.len(),
        "bundle verified and unpacked"
    );
    Ok(VerifiedBundle {
        folder,
        metadata: walked.metadata,
        signer: walked.signer,
        manifest: walked.manifest,
    })
}

/// Checks a bundle exactly like [`verify_and_unpack`], trust included, but
/// writes nothing: for `capstan bundle verify`. The result is an
/// [`Inspection`], not a [`VerifiedBundle`], since no files are kept.
///
/// # Errors
///
/// As [`verify_and_unpack`], except the staging errors.
pub fn verify(
    archive: impl Read,
    trust: &TrustStore,
    limits: &Limits,
) -> Result<Inspection, Error> {
    walk(archive, Some(trust), None, limits)
}

/// Checks a bundle like [`verify_and_unpack`] but writes nothing and accepts
/// any signing key: for showing what a bundle holds and who signed it.
///
/// # Errors
///
/// As [`verify_and_unpack`], except [`Error::UntrustedKey`] and the staging errors.
pub fn inspect(archive: impl Read, limits: &Limits) -> Result<Inspection, Error> {
    walk(archive, None, None, limits)
}

/// The single pass over the archive. `trust: None` accepts any signer;
/// `root: None` hashes without writing.
fn walk(
    archive: impl Read,
    trust: Option<&TrustStore>,
    root: Option<&Path>,
    limits: &Limits,
) -> Result<Inspection, Error> {
    std::thread::scope(|scope| {
        let mut files = FileWorker::spawn(scope, root)?;
        let read = read_archive(archive, trust, &mut files, limits);
        // The worker's error is about an earlier entry than any the reader met.
        files.finish().and(read)
    })
}

/// The reader's side of [`walk`]: every check but the digests, which the
/// worker makes.
fn read_archive(
    archive: impl Read,
    trust: Option<&TrustStore>,
    files: &mut FileWorker<'_>,
    limits: &Limits,
) -> Result<Inspection, Error> {
    let mut tar = TarReader::new(Stream::new(archive, limits), limits);
    let manifest_bytes = read_head_file(&mut tar, MANIFEST_PATH, MAX_MANIFEST_BYTES)?;
    let signature_bytes = read_head_file(&mut tar, SIGNATURE_PATH, MAX_SIGNATURE_BYTES)?;
    let signer = check_signature(&manifest_bytes, &signature_bytes, trust)?;
    let manifest = Manifest::parse(&manifest_bytes)?;
    files.push(whole_file(MANIFEST_PATH, manifest_bytes))?;
    files.push(whole_file(SIGNATURE_PATH, signature_bytes))?;
    let metadata_bytes = unpack_files(&mut tar, &manifest, files, limits)?;
    let metadata_text =
        std::str::from_utf8(&metadata_bytes).map_err(|_| Error::MetadataSyntax {
            line: 0,
            message: "it is not UTF-8".to_string(),
        })?;
    let metadata = Metadata::parse(metadata_text)?;
    metadata.check_files(&manifest)?;
    Ok(Inspection {
        metadata,
        signer,
        manifest,
    })
}

/// Reads one of the two leading files (`MANIFEST`, `MANIFEST.sig`) into memory.
fn read_head_file<R: Read>(
    tar: &mut TarReader<R>,
    path: &str,
    max_bytes: u64,
) -> Result<Vec<u8>, Error> {
    let missing = || {
        if path == MANIFEST_PATH {
            Error::MissingManifest
        } else {
            Error::MissingSignature
        }
    };
    let entry = tar.next_entry()?.ok_or_else(missing)?;
    if entry.path != path || entry.kind != EntryKind::File {
        return Err(missing());
    }
    if entry.size > max_bytes {
        return Err(if path == MANIFEST_PATH {
            Error::ManifestTooLarge { size: entry.size }
        } else {
            Error::SignatureTooLarge { size: entry.size }
        });
    }
    tar.read_data()
}

/// A file written as it is, unhashed: `MANIFEST` and `MANIFEST.sig`, which
/// the signature covers.
fn whole_file(path: &str, data: Vec<u8>) -> Job {
    Job::Piece {
        start: Some(FileStart {
            path: path.to_string(),
            expected: None,
        }),
        data,
        last: true,
    }
}

fn check_signature(
    manifest: &[u8],
    signature: &[u8],
    trust: Option<&TrustStore>,
) -> Result<Fingerprint, Error> {
    let verified = trust::verify_signature(signature, manifest).map_err(Error::BadSignature)?;
    let signer = verified.signer().clone();
    if let Some(store) = trust
        && store.get(&signer).is_none()
    {
        return Err(Error::UntrustedKey {
            fingerprint: signer,
        });
    }
    Ok(signer)
}

/// Streams every entry after the signature to the worker, checking it
/// against `manifest`. Returns the bytes of `capstan.yaml`.
fn unpack_files<R: Read>(
    tar: &mut TarReader<R>,
    manifest: &Manifest,
    files: &mut FileWorker<'_>,
    limits: &Limits,
) -> Result<Vec<u8>, Error> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut total: u64 = 0;
    let mut metadata = None;
    while let Some(entry) = tar.next_entry()? {
        if is_reserved(&entry.path) || !seen.insert(entry.path.clone()) {
            return Err(Error::DuplicateEntry { path: entry.path });
        }
        if entry.kind == EntryKind::Directory {
            files.push(Job::Folder(entry.path))?;
            continue;
        }
        let expected = *manifest
            .digest(&entry.path)
            .ok_or_else(|| Error::NotInManifest {
                path: entry.path.clone(),
            })?;
        check_size(&entry, &mut total, limits)?;
        let captured = send_file(tar, entry, expected, files)?;
        if captured.is_some() {
            metadata = captured;
        }
    }
    if let Some(path) = manifest.paths().find(|path| !seen.contains(*path)) {
        return Err(Error::MissingFile {
            path: path.to_string(),
        });
    }
    metadata.ok_or(Error::MissingMetadata)
}

fn check_size(entry: &Entry, total: &mut u64, limits: &Limits) -> Result<(), Error> {
    if entry.size > limits.max_file_bytes {
        return Err(Error::FileTooLarge {
            path: entry.path.clone(),
            size: entry.size,
            limit: limits.max_file_bytes,
        });
    }
    *total = total.saturating_add(entry.size);
    if *total > limits.max_total_bytes {
        return Err(Error::TotalTooLarge {
            limit: limits.max_total_bytes,
        });
    }
    if entry.path == METADATA_PATH && entry.size > MAX_METADATA_BYTES {
        return Err(Error::MetadataTooLarge { size: entry.size });
    }
    Ok(())
}

/// Sends one file's bytes to the worker, piece by piece; returns them when
/// it is `capstan.yaml`.
fn send_file<R: Read>(
    tar: &mut TarReader<R>,
    entry: Entry,
    expected: Digest,
    files: &mut FileWorker<'_>,
) -> Result<Option<Vec<u8>>, Error> {
    let mut captured = (entry.path == METADATA_PATH).then(Vec::new);
    let mut start = Some(FileStart {
        path: entry.path,
        expected: Some(expected),
    });
    loop {
        let buffer = if tar.data_left() >= PIECE_BYTES as u64 {
            files.spare_buffer()
        } else {
            Vec::new()
        };
        let data = tar.read_piece(buffer, PIECE_BYTES)?;
        if let Some(bytes) = captured.as_mut() {
            bytes.extend_from_slice(&data);
        }
        let last = tar.data_left() == 0;
        files.push(Job::Piece {
            start: start.take(),
            data,
            last,
        })?;
        if last {
            return Ok(captured);
        }
    }
}

/// A fresh folder that deletes itself on drop unless kept.
#[derive(Debug)]
struct StagingFolder {
    path: PathBuf,
    kept: bool,
}

static STAGING_COUNTER: AtomicU64 = AtomicU64::new(0);

impl StagingFolder {
    /// Creates `.capstan-staging-<pid>-<nanos>-<n>` in `parent` with mode
    /// 0700, never reusing an existing folder.
    fn create(parent: &Path) -> Result<Self, Error> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos());
        loop {
            let n = STAGING_COUNTER.fetch_add(1, Ordering::Relaxed);
            let name = format!(".capstan-staging-{}-{nanos}-{n}", std::process::id());
            let path = parent.join(name);
            match create_private_dir(&path) {
                Ok(()) => return Ok(Self { path, kept: false }),
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(source) => {
                    return Err(Error::StagingCreate {
                        parent: parent.to_path_buf(),
                        source,
                    });
                }
            }
        }
    }
}

fn create_private_dir(path: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(path)
}

impl Drop for StagingFolder {
    fn drop(&mut self) {
        if !self.kept
            && let Err(err) = fs::remove_dir_all(&self.path)
        {
            tracing::warn!(folder = %self.path.display(), error = %err, "cannot remove staging folder");
        }
    }
}
