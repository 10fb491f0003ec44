//! The versions an app keeps: uploading and verifying a bundle, storing
//! and restoring its folder (from the bundle home in cluster mode), and
//! dropping it.

use super::*;
use crate::bundle::{self, VerifiedBundle};
use crate::lifecycle::Error;

use crate::lifecycle::engine::start::failed;
use crate::lifecycle::state_dir::{create_private_dir, remove_dir};
use crate::lifecycle::stored::StoredVersion;
use crate::model::AppName;
use crate::store::{AppRecord, AppState, Finish, Operation, OverrideLayer, VersionRecord};
use std::io::Read;
use std::path::Path;

/// A reader that keeps what passes through it when asked to (the archive
/// of an upload a bundle home keeps).
pub(super) struct Capture<R> {
    pub(super) inner: R,
    pub(super) bytes: Option<Vec<u8>>,
}

impl<R: Read> Capture<R> {
    pub(super) fn new(inner: R, keep: bool) -> Self {
        Capture {
            inner,
            bytes: keep.then(Vec::new),
        }
    }

    pub(super) fn into_bytes(self) -> Vec<u8> {
        self.bytes.unwrap_or_default()
    }
}

impl<R: Read> Read for Capture<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(bytes) = &mut self.bytes {
            bytes.extend_from_slice(&buf[..n]);
        }
        Ok(n)
    }
}

impl Lifecycle {
    // ---- quick operations ----

    /// Verifies a bundle and stores it as a new app, state `uploaded`.
    ///
    /// # Errors
    /// [`Error::Bundle`] for a rejected bundle (nothing is stored);
    /// [`crate::store::Error::AppExists`] when the name is taken; an app whose
    /// files could not be stored ends in `upload-failed` with the reason.
    pub fn upload(&self, archive: impl Read) -> Result<AppRecord, Error> {
        self.upload_from(archive, None)
    }

    /// [`Lifecycle::upload`] of a bundle fetched from `source` (an
    /// `oci://HOST/REPO@sha256:…` reference pinned to the manifest digest),
    /// which the version records and the upload's history entry names.
    /// The source is provenance, not trust: the bundle is verified as any.
    ///
    /// # Errors
    /// As [`Lifecycle::upload`].
    pub fn upload_from(
        &self,
        archive: impl Read,
        source: Option<String>,
    ) -> Result<AppRecord, Error> {
        let mut capture = Capture::new(archive, self.inner.cluster.bundle_home.is_some());
        let (bundle, digest) = self.verify(&mut capture)?;
        let mut record = self.version_record(&bundle, &digest)?;
        record.source = self.keep_bundle(&record, capture, source)?;
        let app = record.app.clone();
        let op = self.store().begin_upload(&record)?;
        self.inner.work.checkpoints.reach("upload:begun");
        match self.store_bundle(bundle, &record) {
            Ok(()) => {
                let mut finish = Finish::succeeded(AppState::Uploaded);
                if let Some(source) = &record.source {
                    finish = finish.with_message(format!("from {source}"));
                }
                let app = self.store().finish_operation(op, &finish)?;
                self.inner.work.metrics.operation("upload", "succeeded");
                tracing::info!(app = %app.name, version = %app.active_version, "uploaded");
                Ok(app)
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&record.bundle_dir);
                tracing::warn!(app = %app, error = %e.one_line(), "upload failed");
                Err(self.end_early(
                    &app,
                    op,
                    Operation::Upload,
                    failed(AppState::UploadFailed, &e),
                    e,
                ))
            }
        }
    }

    /// Forgets a version that is neither active nor a target, and its
    /// files. Failures are logged: the next start sweeps again.
    pub(super) fn drop_version(&self, app: &AppName, version: &str) {
        match self.store().delete_version(app, version) {
            Ok(record) => {
                if let Err(e) = remove_dir(&record.bundle_dir) {
                    tracing::warn!(app = %app, version, error = %e.one_line(), "could not remove a version's files");
                }
            }
            Err(e) => tracing::warn!(app = %app, version, error = %e, "could not forget a version"),
        }
    }

    // ---- bundles ----

    /// Keeps a verified archive where other replicas find it (cluster
    /// mode); the source the version records.
    pub(super) fn keep_bundle(
        &self,
        record: &VersionRecord,
        capture: Capture<impl Read>,
        source: Option<String>,
    ) -> Result<Option<String>, Error> {
        let Some(home) = &self.inner.cluster.bundle_home else {
            return Ok(source);
        };
        home.keep(
            record.app.as_str(),
            &record.version,
            &capture.into_bytes(),
            source.as_deref(),
        )
        .map_err(|reason| Error::BundleHome {
            app: record.app.to_string(),
            version: record.version.clone(),
            reason,
        })
    }

    /// A stored version, its folder fetched first when this replica lacks
    /// it ([`StoredVersion::load`]).
    pub(crate) fn stored(&self, app: &AppName, version: &str) -> Result<StoredVersion, Error> {
        self.restore_bundle(app, version)?;
        StoredVersion::load(self.store(), app, version)
    }

    /// [`Lifecycle::stored`] reading the metadata only.
    pub(crate) fn stored_metadata(
        &self,
        app: &AppName,
        version: &str,
    ) -> Result<StoredVersion, Error> {
        self.restore_bundle(app, version)?;
        StoredVersion::load_metadata(self.store(), app, version)
    }

    /// Fetches and unpacks a version's archive this replica lacks, checked
    /// as an upload is and against the digest the store recorded.
    pub(super) fn restore_bundle(&self, app: &AppName, version: &str) -> Result<(), Error> {
        let Some(home) = &self.inner.cluster.bundle_home else {
            // One daemon: its folder is the only one. Replicas without a
            // registry share nothing but the store: say so, not "damaged".
            if self.inner.cluster.leadership.is_some()
                && !self.store().version(app, version)?.bundle_dir.exists()
            {
                return Err(Error::BundleHome {
                    app: app.to_string(),
                    version: version.to_owned(),
                    reason: "this replica does not hold the bundle (another uploaded it) and no \
                             --bundle-registry is set to fetch it from"
                        .to_owned(),
                });
            }
            return Ok(());
        };
        let _one = self
            .inner
            .cluster
            .restoring
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let record = self.store().version(app, version)?;
        if record.bundle_dir.exists() {
            return Ok(());
        }
        let failed = |reason: String| Error::BundleHome {
            app: app.to_string(),
            version: version.to_owned(),
            reason,
        };
        let bytes = home.fetch(&record).map_err(failed)?;
        let (bundle, digest) = self.verify(&bytes[..])?;
        if digest != record.bundle_digest {
            return Err(failed(format!(
                "the fetched archive has digest {digest}, the store recorded {}",
                record.bundle_digest
            )));
        }
        let parent = record.bundle_dir.parent().unwrap_or(Path::new("."));
        create_private_dir(parent)?;
        bundle
            .move_to(&record.bundle_dir)
            .map_err(|e| Error::Bundle(Box::new(e)))?;
        tracing::info!(app = %app, version, "bundle fetched into this replica's folder");
        Ok(())
    }

    pub(super) fn verify(&self, archive: impl Read) -> Result<(VerifiedBundle, String), Error> {
        let mut hashing = bundle::HashingReader::new(archive);
        let bundle = bundle::verify_and_unpack(
            &mut hashing,
            &self.inner.policies.trust,
            &self.inner.paths.staging(),
            &self.inner.policies.limits,
        )
        .map_err(|e| Error::Bundle(Box::new(e)))?;
        crate::lifecycle::admit::check(&self.inner.services.sandbox, &bundle)
            .map_err(|e| Error::Bundle(Box::new(e)))?;
        // Drain what the tar reader left (padding), so the digest covers
        // the whole archive.
        let _ = std::io::copy(&mut hashing, &mut std::io::sink());
        Ok((bundle, hashing.finish().to_hex()))
    }

    pub(super) fn version_record(
        &self,
        bundle: &VerifiedBundle,
        digest: &str,
    ) -> Result<VersionRecord, Error> {
        let metadata = bundle.metadata();
        let name = metadata.name.as_str();
        let app = AppName::new(name).map_err(|_| Error::AppName {
            name: name.to_owned(),
        })?;
        let version = metadata.version.to_string();
        let text = std::fs::read_to_string(bundle.root().join(bundle::METADATA_PATH)).map_err(
            |source| Error::Io {
                what: "reading the verified capstan.yaml".into(),
                source,
            },
        )?;
        let json: serde_json::Value =
            serde_yaml_ng::from_str(&text).unwrap_or(serde_json::Value::Null);
        Ok(VersionRecord {
            bundle_dir: self.inner.paths.bundle_dir(app.as_str(), &version),
            app,
            version,
            bundle_digest: digest.to_owned(),
            signer: bundle.signer().to_string(),
            metadata: json,
            uploaded_at: 0,
            source: None,
        })
    }

    /// Moves a verified bundle into place and stores its static overrides.
    pub(super) fn store_bundle(
        &self,
        bundle: VerifiedBundle,
        record: &VersionRecord,
    ) -> Result<(), Error> {
        let parent = record.bundle_dir.parent().unwrap_or(Path::new("."));
        create_private_dir(parent)?;
        let bundle = bundle
            .move_to(&record.bundle_dir)
            .map_err(|e| Error::Bundle(Box::new(e)))?;
        self.inner.work.checkpoints.reach("upload:moved");
        let layer = OverrideLayer::Static {
            version: record.version.clone(),
        };
        let charts = static_layer(&record.bundle_dir, bundle.metadata())?;
        self.store().replace_layer(&record.app, &layer, &charts)?;
        Ok(())
    }
}

/// Each chart's static overrides, merged from the files the bundle in
/// `dir` ships for it.
pub(super) fn static_layer(
    dir: &Path,
    metadata: &bundle::Metadata,
) -> Result<Vec<(String, serde_json::Value)>, Error> {
    let mut charts = Vec::new();
    for chart in &metadata.charts {
        if chart.overrides.is_empty() {
            continue;
        }
        let mut flags = crate::values::ValueFlags::default();
        for file in &chart.overrides {
            let text = std::fs::read_to_string(dir.join(file)).map_err(|source| Error::Io {
                what: format!("reading static overrides {file}"),
                source,
            })?;
            flags.files.push((file.clone(), text));
        }
        let merged =
            crate::values::merge_value_flags(&flags, &|_| Err(String::new())).map_err(|e| {
                Error::InvalidOverrides {
                    reason: match &e {
                        crate::values::Error::ValuesFile { name, source } => {
                            format!("static overrides {name}: {source}")
                        }
                        other => other.to_string(),
                    },
                }
            })?;
        let json = crate::lifecycle::stored::to_json(&crate::values::Value::Map(merged))?;
        charts.push((chart.name.to_string(), json));
    }
    Ok(charts)
}
