//! A stored version of an app read back from its bundle folder, and the
//! conversion between the store's JSON and Helm values.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::bundle::{self, Metadata};
use crate::kube::Release;
use crate::model::AppName;
use crate::store::Store;
use crate::values;

use super::Error;

/// One stored version of an app, read back from its bundle folder.
#[derive(Debug, Clone)]
pub(crate) struct StoredVersion {
    pub version: String,
    pub dir: PathBuf,
    pub metadata: Metadata,
    /// The static layer by chart, for a bundle that is not stored (the
    /// one `app diff --bundle` plans); `None` reads it from the store.
    pub unstored_static: Option<std::collections::BTreeMap<String, serde_json::Value>>,
}

impl StoredVersion {
    /// Checks the version stored for `app` against its signed `MANIFEST`
    /// (every file hashed, nothing unlisted, the signer the one recorded
    /// at upload) and reads its `capstan.yaml`. Every operation that
    /// renders or applies from a stored version loads it this way.
    ///
    /// # Errors
    /// [`Error::Store`] for a missing version; [`Error::StoredBundle`]
    /// naming the file that is missing or changed.
    pub fn load(store: &dyn Store, app: &AppName, version: &str) -> Result<Self, Error> {
        let record = store.version(app, version)?;
        let checked = bundle::verify_stored(&record.bundle_dir, &record.signer).map_err(|e| {
            Error::StoredBundle {
                app: app.to_string(),
                version: version.to_owned(),
                source: Box::new(e),
            }
        })?;
        Ok(StoredVersion {
            version: version.to_owned(),
            dir: record.bundle_dir,
            metadata: checked.metadata,
            unstored_static: None,
        })
    }

    /// Reads `capstan.yaml` of a stored version without checking the
    /// other files: for what only shows the metadata (`app show`, the
    /// override commands), never for rendering or applying.
    ///
    /// # Errors
    /// As [`StoredVersion::load`].
    pub fn load_metadata(store: &dyn Store, app: &AppName, version: &str) -> Result<Self, Error> {
        let record = store.version(app, version)?;
        let unreadable = |source: Box<dyn std::error::Error + Send + Sync>| Error::StoredBundle {
            app: app.to_string(),
            version: version.to_owned(),
            source,
        };
        let text = std::fs::read_to_string(record.bundle_dir.join(bundle::METADATA_PATH))
            .map_err(|e| unreadable(Box::new(e)))?;
        let metadata = Metadata::parse(&text).map_err(|e| unreadable(Box::new(e)))?;
        Ok(StoredVersion {
            version: version.to_owned(),
            dir: record.bundle_dir,
            metadata,
            unstored_static: None,
        })
    }

    /// The charts that are enabled, by name.
    pub fn enabled_charts(&self) -> BTreeSet<String> {
        self.metadata
            .charts
            .iter()
            .filter(|c| c.enabled)
            .map(|c| c.name.to_string())
            .collect()
    }

    /// The release a chart is applied as.
    pub fn release(&self, app: &AppName, chart: &bundle::Chart) -> Release {
        Release {
            app: app.to_string(),
            chart: chart.name.to_string(),
            namespace: chart.namespace.to_string(),
            release_name: chart.release.to_string(),
        }
    }
}

/// Store JSON -> Helm values.
pub(crate) fn from_json(value: &serde_json::Value) -> Result<values::Value, Error> {
    from_json_text(&value.to_string())
}

/// JSON text (a plugin's overrides as it returned them) -> Helm values.
pub(crate) fn from_json_text(text: &str) -> Result<values::Value, Error> {
    values::parse_json(text).map_err(|e| Error::InvalidOverrides {
        reason: e.to_string(),
    })
}

/// Helm values -> store JSON.
pub(crate) fn to_json(value: &values::Value) -> Result<serde_json::Value, Error> {
    serde_json::from_str(&values::to_json(value)).map_err(|e| Error::InvalidOverrides {
        reason: e.to_string(),
    })
}
