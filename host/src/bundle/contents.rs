//! The checks of a bundle's contents that need no facts about the
//! platform, run the same way by `bundle build` (on the app folder, before
//! it signs) and by upload (on the verified, unpacked bundle, before
//! anything is recorded): so what a build signs passes upload, and an apply
//! fails only for reasons that depend on the platform.
//!
//! What is checked: every chart the metadata declares loads as the renderer
//! loads it ([`crate::render::chart::load`]: `Chart.yaml`, `values.yaml`
//! and `values.schema.json` parse, every subchart folder and `.tgz` is
//! opened, within the chart size limits); every static override file
//! parses as values; every plugin passes the caller's validator (the
//! daemon and the CLI load it in the sandbox and read its `info()`).
//!
//! What is not: templates are not rendered (values from plugins and the
//! operator, and the platform's facts, are not known yet), and plugins are
//! not called beyond `info()`.

use std::path::Path;

use super::Error;
use super::build::PluginValidator;
use super::metadata::Metadata;
use crate::render::chart::{MAX_CHART_BYTES, MAX_FILE_BYTES};

/// Checks the contents of the app or bundle folder `root` against
/// `metadata`, in the metadata's order: charts, their static overrides,
/// then plugins through `validate_plugin`.
///
/// # Errors
///
/// [`Error::ChartRejected`] for a chart that does not load (the reason
/// names the file and, for a size, the limit), [`Error::OverridesRejected`]
/// for a static override file that does not parse,
/// [`Error::PluginRejected`] for a plugin the validator refuses, and
/// [`Error::ReadApp`] when a file cannot be read.
pub fn check_contents(
    root: &Path,
    metadata: &Metadata,
    validate_plugin: PluginValidator<'_>,
) -> Result<(), Error> {
    for chart in &metadata.charts {
        crate::render::chart::load(&root.join(&chart.path)).map_err(|e| Error::ChartRejected {
            chart: chart.name.to_string(),
            reason: chart_reason(&e),
        })?;
        for file in &chart.overrides {
            let path = root.join(file);
            let text =
                std::fs::read_to_string(&path).map_err(|source| Error::ReadApp { path, source })?;
            crate::values::parse_values(&text).map_err(|e| Error::OverridesRejected {
                path: file.clone(),
                reason: e.to_string(),
            })?;
        }
    }
    for plugin in &metadata.plugins {
        let path = root.join(&plugin.path);
        let bytes = std::fs::read(&path).map_err(|source| Error::ReadApp { path, source })?;
        validate_plugin(plugin, &bytes).map_err(|reason| Error::PluginRejected {
            path: plugin.path.clone(),
            reason,
        })?;
    }
    Ok(())
}

/// The renderer's error on one line, with the size limits when a size was
/// the problem (the renderer's message names only the file).
fn chart_reason(error: &crate::render::Error) -> String {
    let mut line = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        source = cause.source();
    }
    if matches!(error, crate::render::Error::ChartTooLarge { .. }) {
        line.push_str(&format!(
            " (a chart file may be at most {} MiB and a chart with its subcharts {} MiB, decompressed)",
            MAX_FILE_BYTES >> 20,
            MAX_CHART_BYTES >> 20
        ));
    }
    line
}
