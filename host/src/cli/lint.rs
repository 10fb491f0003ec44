//! `capstan bundle lint APP_DIR` (and the check `bundle build` runs first):
//! renders every enabled chart of an app folder with its static overrides
//! and what the bundled plugins compute on example facts, so a broken
//! template fails at build, not at the first update on a platform.
//!
//! A plugin that answers an error on the example facts is a warning (the
//! facts may not be its platform's); a chart that does not render is an
//! error. Reads only the app folder; runs plugins in the default sandbox.

use std::path::Path;

use anyhow::Context as _;

use crate::bundle::{self, Metadata};
use crate::model::{App, Facts};
use crate::render::{self, Capabilities, ReleaseInfo};
use crate::sandbox::{CallContext, Policy};
use crate::values;

/// What a lint found: one line per chart that failed, and warnings.
#[derive(Debug, Default)]
pub struct LintReport {
    /// Charts rendered.
    pub charts: usize,
    /// `chart NAME: error`, one per chart that did not render.
    pub errors: Vec<String>,
    /// Plugin answers that could not be used.
    pub warnings: Vec<String>,
}

/// Lints the app folder `dir` on `facts` (default: one all-in-one node).
///
/// # Errors
/// An unreadable or invalid `capstan.yaml`, an unreadable plugin or a
/// sandbox that cannot start; render failures are in the report.
pub fn lint(dir: &Path, facts: Option<&Facts>) -> anyhow::Result<LintReport> {
    let meta_path = dir.join(bundle::METADATA_PATH);
    let text = std::fs::read_to_string(&meta_path)
        .with_context(|| format!("reading {}", meta_path.display()))?;
    let metadata = Metadata::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", meta_path.display(), super::one_line(&e)))?;
    let facts = facts
        .cloned()
        .unwrap_or_else(crate::lifecycle::default_facts);
    let sandbox = super::plugin::cli_sandbox(Policy::new())?;
    let app = App {
        name: metadata.name.to_string(),
        version: metadata.version.to_string(),
    };
    let ctx = CallContext::new([0; 32]);
    let mut plugins = Vec::new();
    for declared in &metadata.plugins {
        let path = dir.join(&declared.path);
        let wasm = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let plugin = sandbox
            .load(&declared.path, &wasm)
            .map_err(|e| anyhow::anyhow!("plugin {}: {}", declared.path, super::one_line(&e)))?;
        plugins.push((declared, plugin));
    }
    let caps = Capabilities::new(None, &[])?;
    let mut report = LintReport::default();
    for chart in metadata.charts.iter().filter(|c| c.enabled) {
        let name = chart.name.to_string();
        let mut flags = values::ValueFlags::default();
        for file in &chart.overrides {
            let text = std::fs::read_to_string(dir.join(file))
                .with_context(|| format!("reading static overrides {file}"))?;
            flags.files.push((file.clone(), text));
        }
        for (declared, plugin) in &plugins {
            if !declared.charts.iter().any(|c| c == &chart.name) {
                continue;
            }
            match plugin.overrides(&ctx, &app, &facts, &name) {
                Ok(values) => flags.files.push((
                    format!("system overrides of {}", declared.path),
                    values.to_string(),
                )),
                Err(e) => report.warnings.push(format!(
                    "chart {name}: plugin {} gave no overrides on these facts: {}",
                    declared.path,
                    super::one_line(&e)
                )),
            }
        }
        let rendered = values::merge_value_flags(&flags, &|_| Err(String::new()))
            .map_err(|e| super::one_line(&e))
            .and_then(|user| {
                let loaded =
                    render::chart::load(&dir.join(&chart.path)).map_err(|e| super::one_line(&e))?;
                let release = ReleaseInfo {
                    name: chart.release.to_string(),
                    namespace: chart.namespace.to_string(),
                    revision: 1,
                    is_upgrade: false,
                };
                render::render(&loaded, &user, &release, &caps)
                    .map(drop)
                    .map_err(|e| super::one_line(&e))
            });
        report.charts += 1;
        if let Err(e) = rendered {
            report.errors.push(format!("chart {name}: {e}"));
        }
    }
    Ok(report)
}

/// Prints the report's warnings and fails with its errors.
///
/// # Errors
/// One line per chart that did not render.
pub fn check(dir: &Path, facts: Option<&Facts>) -> anyhow::Result<usize> {
    let report = lint(dir, facts)?;
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
    anyhow::ensure!(
        report.errors.is_empty(),
        "lint of {} failed: {}",
        dir.display(),
        report.errors.join("; ")
    );
    Ok(report.charts)
}
