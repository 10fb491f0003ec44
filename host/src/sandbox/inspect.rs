//! What a plugin component is, without running an app: the world and WIT
//! version it was built against (read from the names of the interfaces it
//! imports), its imports and exports (wasmtime's component type), the
//! tools that built it (the `producers` custom sections, read with
//! wasmparser), its size and sha256, and the info it declares.
//!
//! Must not grant anything: `info` runs in the same sandbox, under the same
//! policy, as every other call.

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::runtime::{PluginInfo, Sandbox};
use super::{Error, WIT_PACKAGE};

/// The world every capstan plugin exports.
pub const WORLD: &str = "override-plugin";

/// The functions the world exports.
const WORLD_EXPORTS: [&str; 4] = ["info", "overrides", "workload-kind", "lifecycle"];

/// Most producer entries kept (a component lists a handful).
const MAX_PRODUCERS: usize = 64;

/// What `capstan plugin inspect` shows about a component.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inspection {
    /// The info the plugin declares (`None` when it does not load).
    #[serde(flatten)]
    pub info: Option<PluginInfo>,
    /// Size of the file in bytes.
    pub size: u64,
    /// Hex sha256 of the file.
    pub sha256: String,
    /// The world it was built against, `capstan:plugin/override-plugin@V`;
    /// `None` when it imports no `capstan:plugin` interface or lacks the
    /// world's exports.
    pub world: Option<String>,
    /// The WIT package version it was built against (`V` above).
    pub wit_version: Option<String>,
    /// The WIT package this capstan speaks, `capstan:plugin@V`.
    pub host_package: &'static str,
    /// What it imports: interface names (`wasi:io/streams@0.2.6`) or
    /// function names, in the component's order.
    pub imports: Vec<String>,
    /// What it exports, in the component's order.
    pub exports: Vec<String>,
    /// The tools that built it: `producers` sections of the component and
    /// of the modules inside it, each entry once.
    pub producers: Vec<Producer>,
    /// Why it does not load in the sandbox (a missing import, a missing
    /// export, a faulting `info`), when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One entry of a `producers` custom section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Producer {
    /// `language`, `processed-by` or `sdk`.
    pub field: String,
    /// The tool or language (`rustc`, `wit-component`).
    pub name: String,
    /// Its version as the tool wrote it.
    pub version: String,
}

impl Sandbox {
    /// Inspects the component `wasm` (named `name` in errors): compiles it,
    /// reads its type and producers, and loads it to ask for its info.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidComponent`] when the bytes are not a component (a
    /// core module, or no WebAssembly at all), or wasmtime cannot compile
    /// them. A component that compiles but does not load is no error: the
    /// inspection's `error` says why.
    pub fn inspect(&self, name: &str, wasm: &[u8]) -> Result<Inspection, Error> {
        let invalid = |reason: &str| Error::InvalidComponent {
            plugin: name.to_owned(),
            reason: reason.to_owned(),
        };
        if !wasmparser::Parser::is_component(wasm) {
            return Err(invalid(if wasmparser::Parser::is_core_wasm(wasm) {
                "a core WebAssembly module, not a component (build with --target wasm32-wasip2)"
            } else {
                "not a WebAssembly component (no component header)"
            }));
        }
        let producers = producers(wasm).map_err(|e| invalid(&format!("unreadable: {e}")))?;
        let component = self.component(name, wasm)?;
        let ty = component.component_type();
        let engine = self.engine();
        let imports: Vec<String> = ty.imports(engine).map(|(n, _)| n.to_owned()).collect();
        let exports: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_owned()).collect();
        let wit_version = imports
            .iter()
            .find_map(|i| capstan_version(i))
            .map(str::to_owned);
        let has_world = WORLD_EXPORTS.iter().all(|e| exports.iter().any(|x| x == e));
        let world = match (&wit_version, has_world) {
            (Some(v), true) => Some(format!("capstan:plugin/{WORLD}@{v}")),
            _ => None,
        };
        let (info, error) = match self.load(name, wasm) {
            Ok(plugin) => (Some(plugin.info().clone()), None),
            Err(e) => (None, Some(e.to_string())),
        };
        Ok(Inspection {
            info,
            size: wasm.len() as u64,
            sha256: hex::encode(Sha256::digest(wasm)),
            world,
            wit_version,
            host_package: WIT_PACKAGE,
            imports,
            exports,
            producers,
            error,
        })
    }
}

/// `0.1.0` from `capstan:plugin/host@0.1.0`, as written (a version the
/// host may not speak); `None` for an import of another package.
pub(super) fn capstan_version(import: &str) -> Option<&str> {
    let rest = import.strip_prefix("capstan:plugin/")?;
    let (_, version) = rest.split_once('@')?;
    Some(version)
}

/// Every `producers` entry in the component and the modules nested in it,
/// each once, in the order found.
fn producers(wasm: &[u8]) -> Result<Vec<Producer>, wasmparser::BinaryReaderError> {
    let mut found = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        let wasmparser::Payload::CustomSection(section) = payload? else {
            continue;
        };
        let wasmparser::KnownCustom::Producers(reader) = section.as_known() else {
            continue;
        };
        for field in reader {
            let field = field?;
            for value in field.values {
                let value = value?;
                let entry = Producer {
                    field: field.name.to_owned(),
                    name: value.name.to_owned(),
                    version: value.version.to_owned(),
                };
                if !found.contains(&entry) && found.len() < MAX_PRODUCERS {
                    found.push(entry);
                }
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wit_version_is_read_from_a_capstan_import() {
        assert_eq!(capstan_version("capstan:plugin/host@0.1.0"), Some("0.1.0"));
        assert_eq!(capstan_version("capstan:plugin/host"), None);
        assert_eq!(capstan_version("wasi:io/streams@0.2.6"), None);
    }

    #[test]
    fn the_host_package_is_the_one_in_wit() {
        let wit = include_str!("../../../wit/v0.1/plugin.wit");
        assert!(
            wit.contains(&format!("package {WIT_PACKAGE};")),
            "wit/v0.1/plugin.wit declares another package than {WIT_PACKAGE}"
        );
    }

    #[test]
    fn non_components_are_refused_with_one_line() {
        let sandbox = Sandbox::new(crate::sandbox::Policy::new()).unwrap();
        let text = sandbox
            .inspect("notes.txt", b"hello, not wasm")
            .unwrap_err();
        assert_eq!(
            text.to_string(),
            "plugin notes.txt: invalid-component: not a WebAssembly component (no component header)"
        );
        // The smallest core module: magic and version 1.
        let module = sandbox
            .inspect("core.wasm", b"\0asm\x01\0\0\0")
            .unwrap_err();
        assert!(
            module
                .to_string()
                .contains("a core WebAssembly module, not a component"),
            "{module}"
        );
    }
}
