//! App bundles: the format, building and signing one, and the hardened,
//! streaming verify-and-unpack that turns an untrusted tarball into a
//! [`VerifiedBundle`].
//!
//! A bundle is a gzip-compressed tar whose first two entries are `MANIFEST`
//! (the sha256 of every other file) and `MANIFEST.sig` (an OpenSSH SSHSIG over
//! it, see [`crate::trust`]), followed by `capstan.yaml`, `charts/`,
//! `plugins/` and `overrides/`. The full format is in `docs/src/apps/bundle-format.md`.
//!
//! This module exists so that nothing else ever reads a bundle byte that was
//! not proven: the signature is checked before any file is written, every file
//! is hashed while it streams into a fresh staging folder, and any failure
//! removes that folder. Only [`verify_and_unpack`] makes a [`VerifiedBundle`],
//! and the rest of the daemon takes that type, never a path.
//!
//! [`check_contents`] holds the checks that need no platform facts (charts
//! load, static overrides parse, plugins pass a validator), shared by build
//! and upload, so that what a build signs passes upload.
//!
//! It must not touch the store, the sandbox or the cluster: plugin validation
//! is a function the caller passes in.

mod archive;
mod build;
mod contents;
mod files;
mod manifest;
mod metadata;
mod paths;
mod stored;
mod stream;
mod unpack;
mod upgrade;

use std::path::PathBuf;

pub use build::{BuildReport, HashingReader, PluginValidator, build};
pub use contents::check_contents;
pub use manifest::{Digest, Manifest, ManifestEntry};
pub use metadata::{
    Chart, ChartGroup, GroupMode, KubeVersion, KubernetesRange, Metadata, Plugin, Upgrades,
    VersionSpec, check_plugin_routing,
};
pub use stored::{StoredCheck, sync_dir, sync_tree, verify_stored};
pub use unpack::{Inspection, VerifiedBundle, inspect, verify, verify_and_unpack};
pub use upgrade::check_upgrade;

use crate::trust::Fingerprint;

/// The path of the manifest inside a bundle.
pub const MANIFEST_PATH: &str = "MANIFEST";
/// The path of the manifest's signature inside a bundle.
pub const SIGNATURE_PATH: &str = "MANIFEST.sig";
/// The path of the app metadata inside a bundle.
pub const METADATA_PATH: &str = "capstan.yaml";

/// Default for [`Limits::max_entries`]: tar entries (files and folders).
pub const DEFAULT_MAX_ENTRIES: u64 = 10_000;
/// Default for [`Limits::max_file_bytes`]: 64 MiB, well above a chart archive
/// or a plugin component.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Default for [`Limits::max_total_bytes`]: 512 MiB of file contents.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 512 * 1024 * 1024;
/// Default for [`Limits::max_compression_ratio`]: decompressed bytes may be
/// at most 100 times the compressed bytes read so far. Charts and wasm
/// compress 3 to 10 times; a gzip bomb compresses about 1000 times.
pub const DEFAULT_MAX_COMPRESSION_RATIO: u64 = 100;

/// The largest bundle (compressed) the daemon takes by default: the API's
/// upload and update bound (`api::Limits::max_bundle_bytes` sets another)
/// and the largest bundle blob pulled from a registry (`oci`).
pub const MAX_BUNDLE_BYTES: usize = 256 * 1024 * 1024;

/// The longest accepted path of a bundle entry, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// The largest accepted `MANIFEST`, read into memory before it is checked.
pub const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;
/// The largest accepted `MANIFEST.sig` (an ed25519 SSHSIG is about 300 bytes).
pub const MAX_SIGNATURE_BYTES: u64 = 16 * 1024;
/// The largest accepted `capstan.yaml`, kept in memory to be parsed.
pub const MAX_METADATA_BYTES: u64 = 1024 * 1024;

/// Bounds on what an unpack may consume. Every limit is checked while the
/// archive streams, before the bytes it guards are written.
///
/// The limits do not bound time: a slow reader makes a slow unpack; wrap the
/// reader if a deadline is needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Most tar entries (files and folders, not counting long-name and pax
    /// headers). Default [`DEFAULT_MAX_ENTRIES`].
    pub max_entries: u64,
    /// Largest single file. Default [`DEFAULT_MAX_FILE_BYTES`].
    pub max_file_bytes: u64,
    /// Largest sum of all file sizes. Default [`DEFAULT_MAX_TOTAL_BYTES`].
    pub max_total_bytes: u64,
    /// Largest ratio of decompressed to compressed bytes, checked
    /// continuously once the first MiB has been decompressed. Default
    /// [`DEFAULT_MAX_COMPRESSION_RATIO`].
    pub max_compression_ratio: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_entries: DEFAULT_MAX_ENTRIES,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            max_compression_ratio: DEFAULT_MAX_COMPRESSION_RATIO,
        }
    }
}

/// Everything that can go wrong building, verifying, unpacking or upgrading
/// with a bundle. Each rejection of a hostile bundle has its own variant.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the archive's source failed (not a problem of its content).
    #[error("cannot read the bundle archive")]
    Read(#[source] std::io::Error),
    /// The gzip layer is corrupt (bad header, bad deflate data, bad checksum).
    #[error("bundle archive is not a valid gzip stream")]
    Decompress(#[source] std::io::Error),
    /// The archive ends before its end-of-archive marker or its gzip trailer.
    #[error("bundle archive is truncated")]
    Truncated,
    /// The tar structure is broken (bad header checksum, bad number field,
    /// malformed pax record, data after the end marker).
    #[error("bundle archive is corrupt: {reason}")]
    Corrupt {
        /// What is wrong.
        reason: String,
    },
    /// The first entry is not the file `MANIFEST`.
    #[error("bundle does not start with {MANIFEST_PATH}")]
    MissingManifest,
    /// The second entry is not the file `MANIFEST.sig`.
    #[error("bundle has no {SIGNATURE_PATH} right after {MANIFEST_PATH}")]
    MissingSignature,
    /// `MANIFEST` is larger than [`MAX_MANIFEST_BYTES`].
    #[error("{MANIFEST_PATH} is {size} bytes, above the {MAX_MANIFEST_BYTES}-byte limit")]
    ManifestTooLarge {
        /// Its size.
        size: u64,
    },
    /// `MANIFEST.sig` is larger than [`MAX_SIGNATURE_BYTES`].
    #[error("{SIGNATURE_PATH} is {size} bytes, above the {MAX_SIGNATURE_BYTES}-byte limit")]
    SignatureTooLarge {
        /// Its size.
        size: u64,
    },
    /// `MANIFEST.sig` is not a valid signature of `MANIFEST`.
    #[error("{SIGNATURE_PATH} is not a valid signature of {MANIFEST_PATH}")]
    BadSignature(#[source] crate::trust::Error),
    /// The signature is valid but made by a key the trust store does not hold.
    #[error("bundle is signed by {fingerprint}, which is not a trusted key")]
    UntrustedKey {
        /// The signing key.
        fingerprint: Fingerprint,
    },
    /// `MANIFEST` is not in its exact format.
    #[error("{MANIFEST_PATH} line {line}: {reason}")]
    ManifestFormat {
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A file's sha256 differs from the one in `MANIFEST`.
    #[error("bundle file {path:?} does not match its {MANIFEST_PATH} digest")]
    DigestMismatch {
        /// The file.
        path: String,
    },
    /// A file listed in `MANIFEST` is not in the archive.
    #[error("bundle file {path:?} is listed in {MANIFEST_PATH} but missing from the archive")]
    MissingFile {
        /// The file.
        path: String,
    },
    /// The archive holds a file that `MANIFEST` does not list.
    #[error("bundle file {path:?} is not listed in {MANIFEST_PATH}")]
    NotInManifest {
        /// The file.
        path: String,
    },
    /// The same path appears twice in the archive.
    #[error("bundle entry {path:?} appears more than once")]
    DuplicateEntry {
        /// The path.
        path: String,
    },
    /// An entry path starts with `/`.
    #[error("bundle entry {path:?} is an absolute path")]
    AbsolutePath {
        /// The path.
        path: String,
    },
    /// An entry path has a `..` component.
    #[error("bundle entry {path:?} points outside the bundle")]
    ParentComponent {
        /// The path.
        path: String,
    },
    /// An entry path is empty, too long, or has an empty or `.` component, a
    /// backslash or a control character.
    #[error("bundle entry {path:?} is not a plain relative path: {reason}")]
    InvalidPath {
        /// The path.
        path: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// An entry path is not valid UTF-8 (shown lossily).
    #[error("bundle entry {path:?} is not a valid UTF-8 path")]
    NonUtf8Path {
        /// The path, with invalid bytes replaced.
        path: String,
    },
    /// An entry is a symbolic link.
    #[error("bundle entry {path:?} is a symbolic link")]
    Symlink {
        /// The path.
        path: String,
    },
    /// An entry is a hard link.
    #[error("bundle entry {path:?} is a hard link")]
    Hardlink {
        /// The path.
        path: String,
    },
    /// An entry is a character or block device or a FIFO.
    #[error("bundle entry {path:?} is a {kind}")]
    SpecialFile {
        /// The path.
        path: String,
        /// `character device`, `block device` or `fifo`.
        kind: &'static str,
    },
    /// An entry has a tar type capstan does not accept (sparse, volume label...).
    #[error("bundle entry {path:?} has unsupported tar type {type_flag:?}")]
    UnsupportedEntry {
        /// The path.
        path: String,
        /// The tar type flag.
        type_flag: char,
    },
    /// More entries than [`Limits::max_entries`].
    #[error("bundle has more than {limit} entries")]
    TooManyEntries {
        /// The limit.
        limit: u64,
    },
    /// A file above [`Limits::max_file_bytes`].
    #[error("bundle file {path:?} is {size} bytes, above the {limit}-byte limit")]
    FileTooLarge {
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// File contents above [`Limits::max_total_bytes`].
    #[error("bundle contents exceed the {limit}-byte limit")]
    TotalTooLarge {
        /// The limit.
        limit: u64,
    },
    /// Decompressed bytes above [`Limits::max_compression_ratio`] times the
    /// compressed bytes read: a gzip bomb.
    #[error("bundle decompresses more than {limit} times its compressed size")]
    CompressionRatio {
        /// The limit.
        limit: u64,
    },
    /// The bundle has no `capstan.yaml`.
    #[error("bundle has no {METADATA_PATH}")]
    MissingMetadata,
    /// `capstan.yaml` is larger than [`MAX_METADATA_BYTES`].
    #[error("{METADATA_PATH} is {size} bytes, above the {MAX_METADATA_BYTES}-byte limit")]
    MetadataTooLarge {
        /// Its size.
        size: u64,
    },
    /// `capstan.yaml` is not valid YAML for the metadata schema (an unknown
    /// field, a wrong type, an invalid name or version).
    #[error("{METADATA_PATH} line {line}: {message}")]
    MetadataSyntax {
        /// The 1-based line (0 when unknown).
        line: usize,
        /// What is wrong, naming the field.
        message: String,
    },
    /// `capstan.yaml` parses but is inconsistent (a group names an undeclared
    /// chart, a path outside its folder, a duplicate name).
    #[error("{METADATA_PATH} {field}: {reason}")]
    MetadataInvalid {
        /// The field, as a path such as `chart_groups[0].charts`.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// `capstan.yaml` refers to a chart, plugin or override that is not in the bundle.
    #[error("{METADATA_PATH} refers to {what} {path:?}, which is not in the bundle")]
    MissingReference {
        /// `chart`, `plugin` or `override`.
        what: &'static str,
        /// The path it refers to.
        path: String,
    },
    /// The staging folder could not be created in its parent.
    #[error("cannot create a staging folder in {}", parent.display())]
    StagingCreate {
        /// The parent folder.
        parent: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Writing a file or folder into the staging folder failed.
    #[error("cannot write {path:?} into the staging folder")]
    StagingWrite {
        /// The bundle path being written.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The thread that hashes and writes files could not be started.
    #[error("cannot run the bundle file worker thread")]
    FileWorker(#[source] std::io::Error),
    /// The file worker stopped before the archive was read to its end (it
    /// panicked, or went away without reporting an error).
    #[error("the bundle file worker stopped early")]
    FileWorkerStopped,
    /// Moving a verified bundle to its destination failed.
    #[error("cannot move the verified bundle to {}", dest.display())]
    Commit {
        /// The destination.
        dest: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A stored bundle's signature is valid but not by the key recorded
    /// when it was uploaded.
    #[error("stored {SIGNATURE_PATH} is by {found}, not by {recorded} who signed the upload")]
    StoredSigner {
        /// The key that signed what is stored now.
        found: String,
        /// The key recorded at upload.
        recorded: String,
    },
    /// Reading a file of a stored bundle failed.
    #[error("cannot read stored bundle file {path:?}")]
    StoredRead {
        /// The file, relative to the bundle folder.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Syncing an unpacked bundle to disk failed.
    #[error("cannot sync {} to disk", path.display())]
    StoredSync {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Reading the app folder failed at build time.
    #[error("cannot read {} from the app folder", path.display())]
    ReadApp {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The app folder holds something other than files and folders.
    #[error("app folder entry {path:?} is not a regular file or folder")]
    AppEntryNotRegular {
        /// The entry, relative to the app folder.
        path: String,
    },
    /// The app folder holds `MANIFEST` or `MANIFEST.sig`, which the build writes.
    #[error("app folder holds {path:?}, which the build writes itself")]
    ReservedPath {
        /// The reserved path.
        path: String,
    },
    /// A file in the app folder changed while the bundle was built.
    #[error("app file {path:?} changed while the bundle was built")]
    AppChanged {
        /// The file.
        path: String,
    },
    /// The plugin validator rejected a plugin.
    #[error("plugin {path:?} is not a valid capstan plugin: {reason}")]
    PluginRejected {
        /// The plugin file.
        path: String,
        /// The validator's reason.
        reason: String,
    },
    /// A chart the metadata declares does not load: a broken `Chart.yaml`
    /// or `values.yaml`, a subchart archive that does not open, or a file
    /// or chart past the chart size limits.
    #[error("chart {chart} cannot be loaded: {reason}")]
    ChartRejected {
        /// The chart's name in `capstan.yaml`.
        chart: String,
        /// Why, naming the file.
        reason: String,
    },
    /// A static override file does not parse as values.
    #[error("static overrides {path:?} are not valid values: {reason}")]
    OverridesRejected {
        /// The file.
        path: String,
        /// Why, with the line.
        reason: String,
    },
    /// Signing the manifest failed.
    #[error("cannot sign {MANIFEST_PATH}")]
    Sign(#[source] crate::trust::Error),
    /// Writing the output archive failed.
    #[error("cannot write bundle archive {}", path.display())]
    WriteArchive {
        /// The output file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An update's version is not newer than the applied one (and not forced).
    #[error("bundle version {candidate} is not newer than the applied version {current}")]
    NotNewer {
        /// The applied version.
        current: semver::Version,
        /// The bundle's version.
        candidate: semver::Version,
    },
    /// The applied version is not in the bundle's `upgrades.from_versions`.
    #[error("bundle version {candidate} cannot upgrade from version {current}")]
    NotUpgradableFrom {
        /// The applied version.
        current: semver::Version,
        /// The bundle's version.
        candidate: semver::Version,
    },
}
