//! `capstan plugin new NAME [--lang rust|python]`: writes a plugin that
//! builds as it is, offline from a capstan checkout: nothing but this
//! binary, the language's toolchain and its package registry.
//!
//! - Rust: a crate (`Cargo.toml` with its own `[workspace]`, `src/lib.rs`
//!   with one override and one hook, native unit tests with the SDK's test
//!   helper), the SDK's source this binary carries in
//!   `capstan-plugin-sdk/` with the contract in `wit/` (or the SDK at
//!   `--sdk-path`), built with `cargo build --release --target
//!   wasm32-wasip2` or `capstan plugin build`.
//! - Python: a module with the plugin class, `app.py` (componentize-py's
//!   entry), pytest tests, a `tox.ini` that tests, builds and runs the
//!   component, and the SDK package in `sdk/`; built with `capstan plugin
//!   build`.
//!
//! Both get a facts fixture and a README with the next commands. Writes
//! only into the new folder, which must not exist.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::embedded;

/// The language of a new plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Lang {
    /// A Rust crate built for wasm32-wasip2 with cargo.
    Rust,
    /// A Python module built into a component with componentize-py.
    Python,
}

/// Writes the plugin `name` in `lang` into `dir`; `sdk_path` (Rust only)
/// makes the SDK a path dependency on a checkout's SDK instead of the copy
/// this binary carries. Returns the files written.
///
/// # Errors
/// An invalid name, an existing folder, `--sdk-path` with Python, a write
/// failure.
pub fn new_plugin(
    name: &str,
    dir: &Path,
    lang: Lang,
    sdk_path: Option<&Path>,
) -> anyhow::Result<Vec<PathBuf>> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    anyhow::ensure!(
        valid,
        "plugin name {name:?} is not lowercase letters, digits and '-' starting with a letter"
    );
    anyhow::ensure!(!dir.exists(), "{} already exists", dir.display());
    anyhow::ensure!(
        lang == Lang::Rust || sdk_path.is_none(),
        "--sdk-path is for Rust plugins; a Python plugin gets the SDK in sdk/"
    );
    let ident = name.replace('-', "_");
    let type_name: String = name
        .split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect();
    let files = match lang {
        Lang::Rust => rust_files(name, &ident, &type_name, sdk_path)?,
        Lang::Python => python_files(name, &ident, &type_name),
    };
    let mut written = Vec::new();
    for (file, content) in files {
        let path = dir.join(&file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, content).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

fn rust_files(
    name: &str,
    ident: &str,
    type_name: &str,
    sdk_path: Option<&Path>,
) -> anyhow::Result<Vec<(String, String)>> {
    let sdk = match sdk_path {
        Some(path) => {
            let path = std::fs::canonicalize(path)
                .with_context(|| format!("finding the SDK at {}", path.display()))?;
            format!("{{ path = {:?} }}", path.display().to_string())
        }
        None => "{ path = \"capstan-plugin-sdk\" }".to_owned(),
    };
    let mut files = vec![
        ("Cargo.toml".to_owned(), cargo_toml(name, &sdk)),
        ("src/lib.rs".to_owned(), lib_rs(name, type_name)),
        ("facts/simplex.yaml".to_owned(), FACTS.to_owned()),
        ("README.md".to_owned(), readme(name, ident)),
        (".gitignore".to_owned(), "/target\n".to_owned()),
    ];
    if sdk_path.is_none() {
        files.push((
            "capstan-plugin-sdk/Cargo.toml".to_owned(),
            embedded::rust_sdk_manifest(),
        ));
        for (path, text) in embedded::RUST_SDK {
            files.push((format!("capstan-plugin-sdk/{path}"), (*text).to_owned()));
        }
        // The SDK's bindings read `../wit/v0.1` from its own folder.
        files.push(("wit/v0.1/plugin.wit".to_owned(), embedded::WIT.to_owned()));
    }
    Ok(files)
}

fn cargo_toml(name: &str, sdk: &str) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
rust-version = "1.95"
publish = false

[lib]
# cdylib: the WebAssembly component; rlib: the native unit tests.
crate-type = ["cdylib", "rlib"]

[dependencies]
capstan-plugin-sdk = {sdk}
serde_json = "1"

[profile.release]
opt-level = "s"
lto = true
strip = true

# A workspace of its own, so the crate builds wherever it is put.
[workspace]
"#
    )
}

fn lib_rs(name: &str, type_name: &str) -> String {
    format!(
        r#"//! The {name} capstan plugin: values for the `web` chart from the
//! platform's facts, and a `semantic-check` that refuses a platform
//! without a schedulable worker.

use capstan_plugin_sdk::v0_1::{{
    App, Facts, Hook, HookOutcome, Info, Plugin, PluginError, Values, export_plugin,
}};

/// The charts this plugin computes overrides for.
pub const CHARTS: [&str; 1] = ["web"];

/// The plugin.
pub struct {type_name};

impl Plugin for {type_name} {{
    fn info() -> Info {{
        Info::new("{name}", env!("CARGO_PKG_VERSION"))
            .serving_charts(CHARTS)
            .serving_hooks([Hook::SemanticCheck])
    }}

    fn overrides(_app: &App, facts: &Facts, chart: &str) -> Result<Values, PluginError> {{
        if !CHARTS.contains(&chart) {{
            return Err(PluginError::Unsupported(format!("chart {{chart}}")));
        }}
        let replicas = if facts.is_simplex() {{ 1 }} else {{ 2 }};
        Ok(Values::new().set("replicaCount", replicas))
    }}

    fn lifecycle(hook: Hook, _app: &App, facts: &Facts) -> Result<HookOutcome, PluginError> {{
        if hook == Hook::SemanticCheck && facts.nodes.iter().all(|n| !n.schedulable) {{
            return Ok(HookOutcome::Veto("no schedulable node".into()));
        }}
        Ok(HookOutcome::Proceed)
    }}
}}

export_plugin!({type_name});

#[cfg(test)]
mod tests {{
    use super::*;
    use capstan_plugin_sdk::v0_1::testing;

    #[test]
    fn one_replica_on_simplex_two_elsewhere() {{
        let simplex = testing::overrides::<{type_name}>(&Facts::simplex(), "web").unwrap();
        assert_eq!(simplex.get("replicaCount"), Some(&serde_json::json!(1)));
        let standard = testing::overrides::<{type_name}>(&Facts::standard(2, 2), "web").unwrap();
        assert_eq!(standard.get("replicaCount"), Some(&serde_json::json!(2)));
    }}

    #[test]
    fn semantic_check_proceeds_on_a_schedulable_platform() {{
        let outcome = testing::lifecycle::<{type_name}>(Hook::SemanticCheck, &Facts::simplex());
        assert_eq!(outcome.unwrap(), HookOutcome::Proceed);
    }}
}}
"#
    )
}

const FACTS: &str = r#"# An all-in-one (simplex) system: what `capstan plugin run` hands the plugin.
systemMode: simplex
controllerCount: 1
workerCount: 1
kubernetesVersion: 1.30.2
nodes:
  - name: controller-0
    roles: [controller, worker, storage]
    labels: {kubernetes.io/hostname: controller-0}
storageBackends: []
extra: {}
"#;

fn readme(name: &str, ident: &str) -> String {
    format!(
        r#"# {name}

A capstan override plugin. `capstan-plugin-sdk/` and `wit/` are the SDK and
the contract the capstan that wrote this crate carries. The next three commands:

```sh
cargo test                                              # the native unit tests
cargo build --release --target wasm32-wasip2            # the component
capstan plugin run target/wasm32-wasip2/release/{ident}.wasm --facts facts/simplex.yaml
```

Then copy the `.wasm` into an app's `plugins/`, route the `web` chart and
the `semantic-check` hook to it in `capstan.yaml`, and `capstan bundle build`
(see capstan's docs/src/getting-started/first-plugin-rust.md).
"#
    )
}

fn python_files(name: &str, ident: &str, type_name: &str) -> Vec<(String, String)> {
    let mut files = vec![
        ("pyproject.toml".to_owned(), pyproject(name)),
        (format!("{ident}.py"), plugin_py(name, type_name)),
        ("app.py".to_owned(), app_py(ident, type_name)),
        (format!("tests/test_{ident}.py"), test_py(ident, type_name)),
        ("facts/simplex.json".to_owned(), FACTS_JSON.to_owned()),
        ("tox.ini".to_owned(), tox_ini(name)),
        ("README.md".to_owned(), python_readme(name)),
        (
            ".gitignore".to_owned(),
            "/dist\n/.tox\n/.venv\n__pycache__/\n".to_owned(),
        ),
    ];
    for (path, text) in embedded::PYTHON_SDK {
        files.push((format!("sdk/{path}"), (*text).to_owned()));
    }
    files
}

fn pyproject(name: &str) -> String {
    format!(
        r#"[project]
name = "{name}"
version = "0.1.0"
description = "A capstan override plugin"
requires-python = ">=3.11"

[tool.pytest.ini_options]
# The SDK capstan wrote into sdk/, and this folder, on the import path.
pythonpath = ["sdk", "."]
testpaths = ["tests"]
"#
    )
}

fn plugin_py(name: &str, type_name: &str) -> String {
    format!(
        r#""""The {name} capstan plugin: values for the `web` chart from the
platform's facts, and a `semantic-check` that refuses a platform without
a schedulable node."""

from capstan_plugin import Hook, HookOutcome, Plugin, Unsupported, Values

#: The charts this plugin computes overrides for.
CHARTS = ["web"]


class {type_name}(Plugin):
    name = "{name}"
    version = "0.1.0"
    charts = CHARTS
    hooks = [Hook.SEMANTIC_CHECK]

    def overrides(self, app, facts, chart):
        if chart not in CHARTS:
            raise Unsupported(f"chart {{chart}}")
        replicas = 1 if facts.is_simplex() else 2
        return Values().set("replicaCount", replicas)

    def lifecycle(self, hook, app, facts):
        if hook is Hook.SEMANTIC_CHECK and not any(n.schedulable for n in facts.nodes):
            return HookOutcome.veto("no schedulable node")
        return HookOutcome.proceed()
"#
    )
}

fn app_py(ident: &str, type_name: &str) -> String {
    format!(
        r#""""The component's entry module: componentize-py exports its `WitWorld`
(`capstan plugin build` builds from here; tests import `{ident}` instead)."""

from capstan_plugin.component import export
from {ident} import {type_name}

WitWorld = export({type_name})
"#
    )
}

fn test_py(ident: &str, type_name: &str) -> String {
    format!(
        r#"from pathlib import Path

from capstan_plugin import Facts, Hook
from capstan_plugin.testing import lifecycle, load_facts, overrides
from {ident} import {type_name}

FACTS = Path(__file__).resolve().parent.parent / "facts"


def test_one_replica_on_simplex_two_elsewhere():
    assert overrides({type_name}, Facts.simplex(), "web").get("replicaCount") == 1
    assert overrides({type_name}, Facts.standard(2, 2), "web").get("replicaCount") == 2


def test_semantic_check_proceeds_on_the_fixture():
    facts = load_facts(FACTS / "simplex.json")
    assert not lifecycle({type_name}, Hook.SEMANTIC_CHECK, facts).vetoed
"#
    )
}

fn tox_ini(name: &str) -> String {
    format!(
        r#"# `tox`: the native tests, then the component built and run on the
# fixture by capstan (which must be on PATH), in a virtualenv of its own.
[tox]
env_list = py3

[testenv]
skip_install = true
deps =
    pytest
    componentize-py=={componentize}
allowlist_externals = capstan
commands =
    pytest
    capstan plugin build .
    capstan plugin run dist/{name}.wasm --facts facts/simplex.json
    capstan plugin run dist/{name}.wasm --facts facts/simplex.json --hook semantic-check
"#,
        componentize = embedded::componentize_py_version()
    )
}

const FACTS_JSON: &str = r#"{
  "systemMode": "simplex",
  "controllerCount": 1,
  "workerCount": 1,
  "kubernetesVersion": "1.30.2",
  "nodes": [
    {
      "name": "controller-0",
      "roles": ["controller", "worker", "storage"],
      "labels": {"kubernetes.io/hostname": "controller-0"}
    }
  ],
  "storageBackends": [],
  "extra": {}
}
"#;

fn python_readme(name: &str) -> String {
    format!(
        r#"# {name}

A capstan override plugin in Python. The next commands:

```sh
python3 -m pytest                                   # the native tests (pip install pytest)
capstan plugin build                                # dist/{name}.wasm (pip install componentize-py=={componentize})
capstan plugin run dist/{name}.wasm --facts facts/simplex.json
tox                                                 # all three, in a virtualenv of its own
```

`sdk/` holds the capstan SDK this capstan carries (`capstan_plugin`); the
component is built from `app.py`. Then copy `dist/{name}.wasm` into an
app's `plugins/`, route the `web` chart and the `semantic-check` hook to
it in `capstan.yaml`, and `capstan bundle build` (see capstan's
docs/src/getting-started/first-plugin-python.md).
"#,
        componentize = embedded::componentize_py_version()
    )
}
