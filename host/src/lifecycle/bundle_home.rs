//! Owns where verified bundles live beyond this daemon's state folder.
//! By default nowhere: the state folder is the only copy, as fits one
//! daemon. In cluster mode the replicas share their state but not their
//! folders, so [`RegistryHome`] keeps every uploaded archive in an OCI
//! registry (`serve --bundle-registry oci://HOST/REPO`) and the version
//! records the pinned reference; a replica that lacks a version's folder
//! pulls the archive by digest and verifies it again — signature, trust,
//! and the archive digest the store recorded — before unpacking it into
//! its own folder (a cache). No bundle bytes go to the API server.

use super::lookup::one_line;
use crate::oci;
use crate::store::VersionRecord;

/// Where archives are kept for other replicas.
pub trait BundleHome: Send + Sync {
    /// Keeps a verified upload's `archive` of `app` `version`; `source` is
    /// where it came from when it was fetched from a registry already.
    /// Returns the pinned reference the version records.
    ///
    /// # Errors
    /// One line saying what failed (the upload then fails; nothing is
    /// stored).
    fn keep(
        &self,
        app: &str,
        version: &str,
        archive: &[u8],
        source: Option<&str>,
    ) -> Result<Option<String>, String>;

    /// The archive of a stored version, for a replica lacking it.
    ///
    /// # Errors
    /// One line saying what failed.
    fn fetch(&self, version: &VersionRecord) -> Result<Vec<u8>, String>;
}

/// Archives in an OCI registry, one repository per app under the base
/// (`HOST/REPO/APP:VERSION`, `+` of a version spelled `_` as Helm does).
pub struct RegistryHome {
    base: String,
    options: oci::Options,
}

impl RegistryHome {
    /// A home under `base` (`oci://HOST[:PORT]/REPO`, no tag).
    ///
    /// # Errors
    /// A base that makes no valid reference.
    pub fn new(base: &str, options: oci::Options) -> Result<RegistryHome, String> {
        let base = base.trim_end_matches('/').to_string();
        if base.contains('@') {
            return Err(format!(
                "{base}: a bundle registry is oci://HOST/REPO, without a tag or digest"
            ));
        }
        let probe = format!("{base}/app:1.0.0");
        probe
            .parse::<oci::Reference>()
            .map_err(|e| format!("--bundle-registry {base}: {e}"))?;
        Ok(RegistryHome { base, options })
    }

    fn reference(&self, app: &str, version: &str) -> Result<oci::Reference, String> {
        let tag = version.replace('+', "_");
        format!("{}/{app}:{tag}", self.base)
            .parse()
            .map_err(|e: oci::Error| e.to_string())
    }
}

impl BundleHome for RegistryHome {
    fn keep(
        &self,
        app: &str,
        version: &str,
        archive: &[u8],
        source: Option<&str>,
    ) -> Result<Option<String>, String> {
        if let Some(source) = source {
            // Fetched from a registry already, pinned to its digest.
            return Ok(Some(source.to_string()));
        }
        let reference = self.reference(app, version)?;
        let pushed = oci::push(archive, &reference, &self.options)
            .map_err(|e| format!("pushing the bundle to {reference}: {}", one_line(&e)))?;
        tracing::info!(app, version, reference = %pushed.pinned, "bundle kept in the registry");
        Ok(Some(pushed.pinned.to_string()))
    }

    fn fetch(&self, version: &VersionRecord) -> Result<Vec<u8>, String> {
        let Some(source) = &version.source else {
            return Err(format!(
                "version {} of {} was uploaded without a bundle registry, and its folder is not \
                 on this replica",
                version.version, version.app
            ));
        };
        let reference: oci::Reference = source.parse().map_err(|e: oci::Error| e.to_string())?;
        let pulled = oci::pull(&reference, &self.options)
            .map_err(|e| format!("pulling {reference}: {}", one_line(&e)))?;
        Ok(pulled.bytes)
    }
}
