//! `capstan plugin new NAME`: writes a plugin crate that builds with
//! `cargo build --release --target wasm32-wasip2` as it is: `Cargo.toml`
//! (the SDK by path or version, its own `[workspace]` so it builds inside
//! another tree), `src/lib.rs` with one override and one hook, a facts
//! fixture, a native unit test with the SDK's test helper, and a README
//! with the next commands. Writes only into the new folder, which must not
//! exist.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// The SDK version a scaffold depends on when no path is given.
const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Writes the crate `name` into `dir`; `sdk_path` makes the SDK a path
/// dependency. Returns the files written.
///
/// # Errors
/// An invalid name, an existing folder, a write failure.
pub fn new_plugin(name: &str, dir: &Path, sdk_path: Option<&Path>) -> anyhow::Result<Vec<PathBuf>> {
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
    let sdk = match sdk_path {
        Some(path) => {
            let path = std::fs::canonicalize(path)
                .with_context(|| format!("finding the SDK at {}", path.display()))?;
            format!("{{ path = {:?} }}", path.display().to_string())
        }
        None => format!("\"{SDK_VERSION}\""),
    };
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
    let files = [
        ("Cargo.toml", cargo_toml(name, &sdk)),
        ("src/lib.rs", lib_rs(name, &type_name)),
        ("facts/simplex.yaml", FACTS.to_owned()),
        ("README.md", readme(name, &ident)),
        (".gitignore", "/target\n".to_owned()),
    ];
    let mut written = Vec::new();
    for (file, content) in files {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, content).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
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

use capstan_plugin_sdk::{{
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
    use capstan_plugin_sdk::testing;

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

A capstan override plugin. The next three commands:

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
