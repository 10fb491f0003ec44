//! The plugin SDKs this binary carries, for its own contract version: the
//! Rust SDK's source (`plugin-sdk/`) and the Python SDK's package
//! (`plugin-sdk-python/capstan_plugin/`), with `wit/v0.1/plugin.wit`.
//!
//! Why: a scaffold must build with nothing but the capstan binary, the
//! toolchain and the package registries. The SDK is on no registry, and a
//! checkout is what a new author does not have; so `plugin new` writes
//! the SDK beside the plugin, and `plugin build` hands componentize-py the
//! Python SDK and the WIT from here. Only file contents live here; writing
//! them is the caller's.

/// The WIT contract, `wit/v0.1/plugin.wit`.
pub(crate) const WIT: &str = include_str!("../../../wit/v0.1/plugin.wit");

/// The Rust SDK's source files for contract 0.1 (`src/lib.rs` and
/// `src/v0_1/`, not `src/v0_2/`), paths relative to its crate root. Its
/// `Cargo.toml` is written by [`rust_sdk_manifest`], since the one in the
/// checkout inherits from the workspace.
pub(crate) const RUST_SDK: &[(&str, &str)] = &[
    ("src/lib.rs", include_str!("../../../plugin-sdk/src/lib.rs")),
    (
        "src/v0_1/mod.rs",
        include_str!("../../../plugin-sdk/src/v0_1/mod.rs"),
    ),
    (
        "src/v0_1/facts.rs",
        include_str!("../../../plugin-sdk/src/v0_1/facts.rs"),
    ),
    (
        "src/v0_1/log.rs",
        include_str!("../../../plugin-sdk/src/v0_1/log.rs"),
    ),
    (
        "src/v0_1/plugin.rs",
        include_str!("../../../plugin-sdk/src/v0_1/plugin.rs"),
    ),
    (
        "src/v0_1/testing.rs",
        include_str!("../../../plugin-sdk/src/v0_1/testing.rs"),
    ),
    (
        "src/v0_1/values.rs",
        include_str!("../../../plugin-sdk/src/v0_1/values.rs"),
    ),
];

/// The Python SDK's package files, paths relative to the folder that
/// holds the package.
pub(crate) const PYTHON_SDK: &[(&str, &str)] = &[
    (
        "capstan_plugin/__init__.py",
        include_str!("../../../plugin-sdk-python/capstan_plugin/__init__.py"),
    ),
    (
        "capstan_plugin/component.py",
        include_str!("../../../plugin-sdk-python/capstan_plugin/component.py"),
    ),
    (
        "capstan_plugin/facts.py",
        include_str!("../../../plugin-sdk-python/capstan_plugin/facts.py"),
    ),
    (
        "capstan_plugin/log.py",
        include_str!("../../../plugin-sdk-python/capstan_plugin/log.py"),
    ),
    (
        "capstan_plugin/plugin.py",
        include_str!("../../../plugin-sdk-python/capstan_plugin/plugin.py"),
    ),
    (
        "capstan_plugin/testing.py",
        include_str!("../../../plugin-sdk-python/capstan_plugin/testing.py"),
    ),
];

/// The Python tools capstan is tested with, pip requirement lines
/// (`plugin-sdk-python/tools.txt`, which `cargo xtask test` installs).
const PYTHON_TOOLS: &str = include_str!("../../../plugin-sdk-python/tools.txt");

/// The componentize-py release `plugin build` was tested with (pinned in
/// the scaffold's `tox.ini` and in `cargo xtask`'s virtualenv), from
/// [`PYTHON_TOOLS`].
pub(crate) fn componentize_py_version() -> &'static str {
    PYTHON_TOOLS
        .lines()
        .find_map(|line| line.trim().strip_prefix("componentize-py=="))
        .unwrap_or("")
}

/// A stand-alone `Cargo.toml` for the Rust SDK, at this binary's version:
/// the workspace's dependency versions written out, no workspace lints.
pub(crate) fn rust_sdk_manifest() -> String {
    format!(
        r#"[package]
name = "capstan-plugin-sdk"
description = "Write capstan override plugins (written by capstan {version}, contract {wit})"
version = "{version}"
edition = "2024"
rust-version = "1.95"
license = "Apache-2.0"
publish = false

[dependencies]
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"
wit-bindgen = {{ version = "0.60", default-features = false, features = ["macros", "realloc", "std"] }}
"#,
        version = env!("CARGO_PKG_VERSION"),
        wit = crate::sandbox::WIT_PACKAGE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn files_in(dir: &Path, extension: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == extension))
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn embedded(list: &[(&str, &str)]) -> Vec<String> {
        let mut names: Vec<String> = list
            .iter()
            .map(|(path, _)| path.rsplit('/').next().unwrap_or(path).to_owned())
            .collect();
        names.sort();
        names
    }

    /// A file added to an SDK must be carried too, or scaffolds break.
    #[test]
    fn every_sdk_file_is_carried() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut rust = files_in(&root.join("plugin-sdk/src"), "rs");
        rust.extend(files_in(&root.join("plugin-sdk/src/v0_1"), "rs"));
        rust.sort();
        assert_eq!(embedded(RUST_SDK), rust);
        assert_eq!(
            embedded(PYTHON_SDK),
            files_in(&root.join("plugin-sdk-python/capstan_plugin"), "py")
        );
    }

    #[test]
    fn componentize_py_is_pinned() {
        let version = componentize_py_version();
        assert!(
            !version.is_empty() && version.split('.').all(|p| p.parse::<u32>().is_ok()),
            "{version:?}"
        );
    }

    /// The stand-alone manifest asks for what the workspace gives the SDK.
    #[test]
    fn the_sdk_manifest_matches_the_workspace_dependencies() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        let manifest = rust_sdk_manifest();
        for dependency in ["wit-bindgen", "serde", "serde_json"] {
            let line = |text: &str| {
                text.lines()
                    .find(|l| l.starts_with(&format!("{dependency} = ")))
                    .map(str::to_owned)
            };
            assert_eq!(line(&manifest), line(&workspace), "{dependency}");
        }
    }
}
