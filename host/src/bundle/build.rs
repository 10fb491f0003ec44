//! Building a bundle from an app folder: validate, hash, sign, and pack
//! deterministically (same folder and key, same bytes).

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::GzBuilder;
use sha2::{Digest as _, Sha256};

use super::manifest::{Digest, Manifest, ManifestEntry, is_reserved};
use super::metadata::{Metadata, Plugin};
use super::paths::check_entry_path;
use super::{Error, Limits, MANIFEST_PATH, MAX_METADATA_BYTES, METADATA_PATH, SIGNATURE_PATH};
use crate::trust::{Fingerprint, SigningKey};

/// Checks one plugin component: called with the plugin's `capstan.yaml`
/// entry and its bytes; returns a reason to reject it. The CLI passes a
/// check that the component exports the capstan world and that its
/// `info()` agrees with the entry ([`super::check_plugin_routing`]).
pub type PluginValidator<'a> = &'a dyn Fn(&Plugin, &[u8]) -> Result<(), String>;

/// File mode of every archived file.
const FILE_MODE: u32 = 0o644;

/// What [`build`] wrote.
#[derive(Debug, Clone)]
pub struct BuildReport {
    /// The archive written.
    pub out: PathBuf,
    /// The parsed metadata.
    pub metadata: Metadata,
    /// The manifest that was signed.
    pub manifest: Manifest,
    /// The signing key.
    pub signer: Fingerprint,
    /// Size of the archive in bytes.
    pub archive_bytes: u64,
}

/// Builds a signed bundle from `app_dir` into `out`.
///
/// Steps: parse `capstan.yaml`; list every file under `app_dir` (sorted, no
/// symlinks or special files, no `MANIFEST`/`MANIFEST.sig`); check that every
/// chart, override and plugin the metadata names exists; run
/// [`super::check_contents`] (charts load, overrides parse, each plugin
/// passes `validate_plugin`); hash every file into `MANIFEST`; sign it; write a
/// gzip-compressed tar with `MANIFEST`, `MANIFEST.sig`, then the files by
/// path, with mtime 0, uid/gid 0, no owner names, mode 0644 and no folder
/// entries, in a gzip stream without name or time. The archive goes to a
/// temporary file beside `out`, is read back through the checks upload
/// runs (default [`Limits`], trust aside), and is renamed over `out` at the
/// end; on any error nothing is left at `out`.
///
/// # Errors
///
/// [`Error::ReadApp`], [`Error::AppEntryNotRegular`], [`Error::ReservedPath`],
/// path errors for names that are not plain UTF-8 paths, metadata errors,
/// [`Error::MissingReference`], [`Error::ChartRejected`],
/// [`Error::OverridesRejected`], [`Error::PluginRejected`], [`Error::Sign`],
/// [`Error::AppChanged`] if a file changes while it is packed,
/// [`Error::WriteArchive`], and any unpack rejection of the written archive
/// (such as [`Error::CompressionRatio`] or [`Error::FileTooLarge`]).
pub fn build(
    app_dir: &Path,
    key: &SigningKey,
    out: &Path,
    validate_plugin: PluginValidator<'_>,
) -> Result<BuildReport, Error> {
    let metadata = read_metadata(app_dir)?;
    let mut files = Vec::new();
    list_files(app_dir, "", &mut files)?;
    let manifest = hash_files(app_dir, &files)?;
    metadata.check_files(&manifest)?;
    super::check_contents(app_dir, &metadata, validate_plugin)?;
    let manifest_text = manifest.render();
    let signature = key.sign(manifest_text.as_bytes()).map_err(Error::Sign)?;
    let archive_bytes = write_archive(app_dir, &manifest, &manifest_text, &signature, out)?;
    tracing::info!(
        app = %metadata.name,
        version = %metadata.version,
        signer = %key.fingerprint(),
        files = manifest.len(),
        bytes = archive_bytes,
        "bundle built"
    );
    Ok(BuildReport {
        out: out.to_path_buf(),
        metadata,
        manifest,
        signer: key.fingerprint().clone(),
        archive_bytes,
    })
}

fn read_metadata(app_dir: &Path) -> Result<Metadata, Error> {
    let path = app_dir.join(METADATA_PATH);
    let size = fs::metadata(&path)
        .map_err(|source| Error::ReadApp {
            path: path.clone(),
            source,
        })?
        .len();
    if size > MAX_METADATA_BYTES {
        return Err(Error::MetadataTooLarge { size });
    }
    let text = fs::read_to_string(&path).map_err(|source| Error::ReadApp { path, source })?;
    Metadata::parse(&text)
}

/// Collects every file under `dir` as bundle paths (`/`-separated).
fn list_files(app_dir: &Path, prefix: &str, files: &mut Vec<String>) -> Result<(), Error> {
    let dir = app_dir.join(prefix);
    let read_error = |source| Error::ReadApp {
        path: dir.clone(),
        source,
    };
    let mut entries = Vec::new();
    for entry in fs::read_dir(&dir).map_err(read_error)? {
        entries.push(entry.map_err(read_error)?);
    }
    for entry in entries {
        let name = entry.file_name();
        let name = check_entry_path(name.as_encoded_bytes())?;
        let relative = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let file_type = entry.file_type().map_err(|source| Error::ReadApp {
            path: entry.path(),
            source,
        })?;
        if file_type.is_dir() {
            list_files(app_dir, &relative, files)?;
        } else if file_type.is_file() {
            if is_reserved(&relative) {
                return Err(Error::ReservedPath { path: relative });
            }
            files.push(relative);
        } else {
            return Err(Error::AppEntryNotRegular { path: relative });
        }
    }
    Ok(())
}

fn hash_files(app_dir: &Path, files: &[String]) -> Result<Manifest, Error> {
    let mut entries = Vec::with_capacity(files.len());
    for relative in files {
        let path = app_dir.join(relative);
        let file = fs::File::open(&path).map_err(|source| Error::ReadApp {
            path: path.clone(),
            source,
        })?;
        let (digest, _) = hash_reader(file).map_err(|source| Error::ReadApp { path, source })?;
        entries.push(ManifestEntry {
            path: relative.clone(),
            digest,
        });
    }
    Manifest::from_entries(entries)
}

fn hash_reader(mut reader: impl Read) -> io::Result<(Digest, u64)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(0) => return Ok((Digest::from_hasher(hasher), total)),
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        hasher.update(&buffer[..n]);
        total += n as u64;
    }
}

fn write_archive(
    app_dir: &Path,
    manifest: &Manifest,
    manifest_text: &str,
    signature: &str,
    out: &Path,
) -> Result<u64, Error> {
    let temporary = temporary_path(out);
    let result = write_archive_to(app_dir, manifest, manifest_text, signature, &temporary)
        .and_then(|bytes| {
            check_as_upload_does(&temporary)?;
            fs::rename(&temporary, out).map_err(|source| Error::WriteArchive {
                path: out.to_path_buf(),
                source,
            })?;
            Ok(bytes)
        });
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    result
}

/// Reads the written archive back through the same streaming checks an
/// upload runs (paths, sizes, the compression ratio, digests, the
/// signature, the metadata), with the default [`Limits`]: a build never
/// signs a bundle the daemon's unpack would refuse, such as one that
/// decompresses to more than 100 times its size.
fn check_as_upload_does(archive: &Path) -> Result<(), Error> {
    let file = fs::File::open(archive).map_err(|source| Error::WriteArchive {
        path: archive.to_path_buf(),
        source,
    })?;
    super::inspect(io::BufReader::new(file), &Limits::default()).map(drop)
}

fn temporary_path(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    out.with_file_name(name)
}

fn write_archive_to(
    app_dir: &Path,
    manifest: &Manifest,
    manifest_text: &str,
    signature: &str,
    path: &Path,
) -> Result<u64, Error> {
    let write_error = |source| Error::WriteArchive {
        path: path.to_path_buf(),
        source,
    };
    let file = fs::File::create(path).map_err(write_error)?;
    let gzip = GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(io::BufWriter::new(file), Compression::default());
    let mut tar = tar::Builder::new(gzip);
    tar.mode(tar::HeaderMode::Deterministic);
    append(&mut tar, MANIFEST_PATH, manifest_text.as_bytes()).map_err(write_error)?;
    append(&mut tar, SIGNATURE_PATH, signature.as_bytes()).map_err(write_error)?;
    for entry in manifest.entries() {
        append_app_file(&mut tar, app_dir, &entry, path)?;
    }
    let gzip = tar.into_inner().map_err(write_error)?;
    let mut writer = gzip.finish().map_err(write_error)?;
    writer.flush().map_err(write_error)?;
    let file = writer
        .into_inner()
        .map_err(|err| write_error(err.into_error()))?;
    file.sync_all().map_err(write_error)?;
    Ok(file.metadata().map_err(write_error)?.len())
}

fn append_app_file<W: Write>(
    tar: &mut tar::Builder<W>,
    app_dir: &Path,
    entry: &ManifestEntry,
    out: &Path,
) -> Result<(), Error> {
    let source_path = app_dir.join(&entry.path);
    let read_error = |source| Error::ReadApp {
        path: source_path.clone(),
        source,
    };
    let file = fs::File::open(&source_path).map_err(read_error)?;
    let size = file.metadata().map_err(read_error)?.len();
    let mut hashing = HashingReader::new(file.take(size));
    let mut header = file_header(size);
    tar.append_data(&mut header, &entry.path, &mut hashing)
        .map_err(|source| Error::WriteArchive {
            path: out.to_path_buf(),
            source,
        })?;
    if hashing.bytes_read() != size || hashing.finish() != entry.digest {
        return Err(Error::AppChanged {
            path: entry.path.clone(),
        });
    }
    Ok(())
}

fn append<W: Write>(tar: &mut tar::Builder<W>, path: &str, data: &[u8]) -> io::Result<()> {
    let mut header = file_header(data.len() as u64);
    tar.append_data(&mut header, path, data)
}

fn file_header(size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(size);
    header.set_mode(FILE_MODE);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header
}

/// A reader that hashes and counts what passes through: to catch a file
/// changing between hashing and packing, or to take the digest of an
/// archive while it is verified.
pub struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R> HashingReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        HashingReader {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// How many bytes were read so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// The sha256 of everything read.
    pub fn finish(self) -> Digest {
        Digest::from_hasher(self.hasher)
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::Limits;
    use crate::trust::TrustStore;

    const METADATA: &str = "\
name: tiny
version: 0.1.0
charts:
  - name: tiny
    path: charts/tiny
    namespace: tiny
    release: tiny
chart_groups:
  - name: all
    mode: parallel
    charts: [tiny]
plugins:
  - path: plugins/p.wasm
    charts: [tiny]
";

    fn app() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("charts/tiny/templates")).unwrap();
        fs::create_dir_all(root.join("plugins")).unwrap();
        fs::write(root.join(METADATA_PATH), METADATA).unwrap();
        fs::write(root.join("charts/tiny/Chart.yaml"), "name: tiny\n").unwrap();
        fs::write(root.join("charts/tiny/templates/a.yaml"), "kind: A\n").unwrap();
        fs::write(root.join("plugins/p.wasm"), b"\0asm").unwrap();
        dir
    }

    fn accept(_: &crate::bundle::Plugin, _: &[u8]) -> Result<(), String> {
        Ok(())
    }

    fn build_into(app: &Path, key: &SigningKey) -> Result<(BuildReport, Vec<u8>), Error> {
        let out_dir = tempfile::tempdir().unwrap();
        let out = out_dir.path().join("out.tgz");
        let report = build(app, key, &out, &accept)?;
        let bytes = fs::read(&out).unwrap();
        let left: Vec<_> = fs::read_dir(out_dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "the temporary archive was not renamed");
        Ok((report, bytes))
    }

    #[test]
    fn builds_a_bundle_that_verifies() {
        let app = app();
        let key = SigningKey::generate("k").unwrap();
        let (report, bytes) = build_into(&app.path().join("."), &key).unwrap();
        assert_eq!(
            report.manifest.paths().collect::<Vec<_>>(),
            [
                "capstan.yaml",
                "charts/tiny/Chart.yaml",
                "charts/tiny/templates/a.yaml",
                "plugins/p.wasm"
            ]
        );
        assert_eq!(report.archive_bytes, bytes.len() as u64);
        let mut trust = TrustStore::empty();
        trust
            .add_openssh(&key.public_key_line().unwrap(), Path::new("k.pub"))
            .unwrap();
        let verified = crate::bundle::verify(&bytes[..], &trust, &Limits::default()).unwrap();
        assert_eq!(verified.manifest, report.manifest);
        assert_eq!(verified.metadata.plugins[0].path, "plugins/p.wasm");
    }

    #[test]
    fn same_input_same_bytes_even_after_touching_files() {
        let app = app();
        let key = SigningKey::generate("k").unwrap();
        let (_, first) = build_into(app.path(), &key).unwrap();
        let chart = app.path().join("charts/tiny/Chart.yaml");
        fs::write(&chart, "name: tiny\n").unwrap();
        let (_, second) = build_into(app.path(), &key).unwrap();
        assert_eq!(first, second);
        assert_eq!(&first[..4], &[0x1f, 0x8b, 8, 0]);
        assert_eq!(&first[4..8], &[0, 0, 0, 0], "gzip mtime must be zero");
    }

    #[test]
    fn the_validator_sees_each_plugin() {
        let app = app();
        let key = SigningKey::generate("k").unwrap();
        let seen = std::cell::RefCell::new(Vec::new());
        let record = |plugin: &Plugin, bytes: &[u8]| {
            seen.borrow_mut()
                .push((plugin.path.clone(), bytes.to_vec()));
            Err("no capstan world".to_string())
        };
        let out_dir = tempfile::tempdir().unwrap();
        let out = out_dir.path().join("x.tgz");
        let err = build(app.path(), &key, &out, &record).unwrap_err();
        assert!(
            matches!(err, Error::PluginRejected { reason, .. } if reason == "no capstan world")
        );
        assert_eq!(
            seen.borrow().as_slice(),
            [("plugins/p.wasm".to_string(), b"\0asm".to_vec())]
        );
        assert_eq!(fs::read_dir(out_dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn rejects_bad_app_folders() {
        let key = SigningKey::generate("k").unwrap();

        let missing_chart = app();
        fs::remove_file(missing_chart.path().join("charts/tiny/Chart.yaml")).unwrap();
        let err = build_into(missing_chart.path(), &key).unwrap_err();
        assert!(
            matches!(err, Error::MissingReference { what: "chart", .. }),
            "{err:?}"
        );

        let reserved = app();
        fs::write(reserved.path().join("MANIFEST"), "").unwrap();
        let err = build_into(reserved.path(), &key).unwrap_err();
        assert!(matches!(err, Error::ReservedPath { .. }), "{err:?}");

        #[cfg(unix)]
        {
            let linked = app();
            std::os::unix::fs::symlink("/etc/passwd", linked.path().join("charts/tiny/passwd"))
                .unwrap();
            let err = build_into(linked.path(), &key).unwrap_err();
            assert!(
                matches!(&err, Error::AppEntryNotRegular { path } if path == "charts/tiny/passwd"),
                "{err:?}"
            );
        }
    }
}
