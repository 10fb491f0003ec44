//! Admission of a bundle: the checks of its contents that need no facts
//! about the platform, run on every verified bundle (upload, update, diff
//! of a bundle) before anything is recorded, exactly as `bundle build` runs
//! them before it signs ([`crate::bundle::check_contents`]).
//!
//! Owns the plugin half of that check (the bundle module may not touch the
//! sandbox): a plugin is loaded in the daemon's sandbox, under its policy,
//! and its `info()` must agree with the bundle's routing. Loading compiles
//! the component into the sandbox's cache, so the apply that follows does
//! not compile it again.

use crate::bundle::{self, VerifiedBundle};
use crate::sandbox::Sandbox;

/// Checks one plugin as build and upload both do: it loads in `sandbox`
/// (a component exporting the capstan world that links under the policy,
/// whose `info()` answered) and its `info()` serves what `declared` routes
/// to it ([`bundle::check_plugin_routing`]).
///
/// # Errors
/// The reason, on one line.
pub fn validate_plugin(
    sandbox: &Sandbox,
    declared: &bundle::Plugin,
    wasm: &[u8],
) -> Result<(), String> {
    let plugin = sandbox
        .load(&declared.path, wasm)
        .map_err(|e| one_line(&e))?;
    let info = plugin.info();
    bundle::check_plugin_routing(declared, &info.charts, &info.hooks)
}

/// [`bundle::check_contents`] of a verified bundle, plugins loaded in
/// `sandbox`.
pub(super) fn check(sandbox: &Sandbox, bundle: &VerifiedBundle) -> Result<(), bundle::Error> {
    bundle::check_contents(bundle.root(), bundle.metadata(), &|declared, wasm| {
        validate_plugin(sandbox, declared, wasm)
    })
}

fn one_line(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.ends_with(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}
