//! `capstan plugin build [DIR]`: builds the plugin in DIR into a component
//! and checks it as `plugin inspect` does.
//!
//! The kind is read from the folder: a `Cargo.toml` is a Rust crate, built
//! with `cargo build --release --target wasm32-wasip2` (the component is
//! the crate's `cdylib` artifact, as cargo reports it); an `app.py` is a
//! Python plugin, built with componentize-py (found on `PATH`) from the
//! contract and, unless the folder has its own `sdk/capstan_plugin`, the
//! Python SDK this binary carries. Then the component is loaded in the
//! default sandbox and asked for its info. Writes only the component (and
//! cargo's `target/`); never installs anything.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context as _;

use super::embedded;
use crate::sandbox::{Inspection, Policy, WORLD};

/// What `build` made.
pub(crate) struct Built {
    /// The component file.
    pub(crate) path: PathBuf,
    /// `rust` or `python`.
    pub(crate) lang: &'static str,
    /// What the sandbox saw in it.
    pub(crate) inspection: Inspection,
}

/// Builds the plugin in `dir`; the component goes to `out` when given
/// (else cargo's `target/wasm32-wasip2/release/`, or `dist/NAME.wasm` for
/// Python).
///
/// # Errors
/// A folder that is neither kind, a missing tool, a failed build, or a
/// component that does not load (named with the reason).
pub(crate) fn build(dir: &Path, out: Option<&Path>) -> anyhow::Result<Built> {
    let (path, lang) = if dir.join("Cargo.toml").is_file() {
        (build_rust(dir, out)?, "rust")
    } else if dir.join("app.py").is_file() {
        (build_python(dir, out)?, "python")
    } else {
        anyhow::bail!(
            "{} holds neither a Cargo.toml (a Rust plugin) nor an app.py (a Python plugin)",
            dir.display()
        );
    };
    let wasm = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let sandbox = super::plugin::cli_sandbox(Policy::new())?;
    let name = path
        .file_stem()
        .map_or_else(|| "plugin".to_owned(), |s| s.to_string_lossy().into_owned());
    let inspection = sandbox
        .inspect(&name, &wasm)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), super::one_line(&e)))?;
    if let Some(error) = &inspection.error {
        anyhow::bail!("{} was built but does not load: {error}", path.display());
    }
    Ok(Built {
        path,
        lang,
        inspection,
    })
}

fn build_rust(dir: &Path, out: Option<&Path>) -> anyhow::Result<PathBuf> {
    let manifest = dir.join("Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .args([
            "--message-format",
            "json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(&manifest)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| not_found(e, "cargo", "install Rust with rustup"))?;
    anyhow::ensure!(
        output.status.success(),
        "cargo build of {} failed ({})",
        manifest.display(),
        output.status
    );
    let manifest = std::fs::canonicalize(&manifest)
        .with_context(|| format!("finding {}", manifest.display()))?;
    let built =
        cdylib_wasm(&String::from_utf8_lossy(&output.stdout), &manifest).with_context(|| {
            format!(
                "cargo built no .wasm for {}: is the crate a cdylib?",
                manifest.display()
            )
        })?;
    match out {
        Some(out) => {
            std::fs::copy(&built, out)
                .with_context(|| format!("copying {} to {}", built.display(), out.display()))?;
            Ok(out.to_path_buf())
        }
        None => Ok(built),
    }
}

/// The `.wasm` of the `cdylib` cargo built for the package of `manifest`,
/// from cargo's JSON messages.
fn cdylib_wasm(messages: &str, manifest: &Path) -> Option<PathBuf> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .filter(|m| m["manifest_path"].as_str().map(Path::new) == Some(manifest))
        .filter(|m| {
            m["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "cdylib"))
        })
        .flat_map(|m| {
            m["filenames"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
        })
        .filter_map(|f| f.as_str().map(PathBuf::from))
        .rfind(|f| f.extension().is_some_and(|e| e == "wasm"))
}

fn build_python(dir: &Path, out: Option<&Path>) -> anyhow::Result<PathBuf> {
    let name = python_name(dir);
    let out = match out {
        Some(out) => out.to_path_buf(),
        None => {
            let dist = dir.join("dist");
            std::fs::create_dir_all(&dist)
                .with_context(|| format!("creating {}", dist.display()))?;
            dist.join(format!("{name}.wasm"))
        }
    };
    // The contract and (unless the plugin has its own) the SDK, from this
    // binary, in a folder that lives as long as the build.
    let scratch = tempfile::tempdir().context("creating a scratch folder for the build")?;
    let wit = scratch.path().join("wit");
    std::fs::create_dir_all(&wit).with_context(|| format!("creating {}", wit.display()))?;
    std::fs::write(wit.join("plugin.wit"), embedded::WIT)
        .with_context(|| format!("writing {}", wit.display()))?;
    let own_sdk = dir.join("sdk");
    let sdk = if own_sdk.join("capstan_plugin").is_dir() {
        own_sdk
    } else {
        let sdk = scratch.path().join("sdk");
        for (path, text) in embedded::PYTHON_SDK {
            let file = sdk.join(path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
        }
        sdk
    };
    let out_abs =
        std::path::absolute(&out).with_context(|| format!("resolving {}", out.display()))?;
    let status = Command::new("componentize-py")
        .arg("--wit-path")
        .arg(&wit)
        .args(["--world", WORLD, "--quiet", "componentize", "app"])
        .arg("--python-path")
        .arg(".")
        .arg("--python-path")
        .arg(std::path::absolute(&sdk).with_context(|| format!("resolving {}", sdk.display()))?)
        .arg("--output")
        .arg(&out_abs)
        .current_dir(dir)
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| {
            not_found(
                e,
                "componentize-py",
                &format!(
                    "pip install componentize-py=={}",
                    embedded::componentize_py_version()
                ),
            )
        })?;
    anyhow::ensure!(
        status.success(),
        "componentize-py failed on {} ({status})",
        dir.join("app.py").display()
    );
    Ok(out)
}

/// The plugin's name: `[project] name` in `pyproject.toml` (read line by
/// line, a plain `name = "..."`), else the folder's name.
fn python_name(dir: &Path) -> String {
    let from_pyproject = std::fs::read_to_string(dir.join("pyproject.toml"))
        .ok()
        .and_then(|text| project_name(&text));
    from_pyproject.unwrap_or_else(|| {
        std::path::absolute(dir)
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "plugin".to_owned())
    })
}

fn project_name(pyproject: &str) -> Option<String> {
    let mut in_project = false;
    for line in pyproject.lines().map(str::trim) {
        if line.starts_with('[') {
            in_project = line == "[project]";
            continue;
        }
        if !in_project {
            continue;
        }
        if let Some((key, value)) = line.split_once('=')
            && key.trim() == "name"
        {
            let name = value.trim().trim_matches(|c| c == '"' || c == '\'');
            let safe = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
            return safe.then(|| name.to_owned());
        }
    }
    None
}

fn not_found(error: std::io::Error, tool: &str, hint: &str) -> anyhow::Error {
    if error.kind() == std::io::ErrorKind::NotFound {
        anyhow::anyhow!("{tool} is not on PATH ({hint})")
    } else {
        anyhow::anyhow!("starting {tool}: {error}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_name_is_read_from_the_project_table_only() {
        let text = "[tool.x]\nname = \"no\"\n[project]\nversion = \"1\"\nname = \"my-plugin\"\n";
        assert_eq!(project_name(text).as_deref(), Some("my-plugin"));
        assert_eq!(project_name("[project]\nname = \"../../etc\"\n"), None);
        assert_eq!(project_name("name = \"x\"\n"), None);
    }

    #[test]
    fn the_cdylib_of_the_root_package_is_the_component() {
        let manifest = Path::new("/p/Cargo.toml");
        let messages = [
            r#"{"reason":"compiler-artifact","manifest_path":"/p/sdk/Cargo.toml","target":{"kind":["lib"]},"filenames":["/t/libsdk.rlib"]}"#,
            r#"{"reason":"compiler-artifact","manifest_path":"/p/Cargo.toml","target":{"kind":["cdylib","rlib"]},"filenames":["/t/my_plugin.wasm","/t/libmy_plugin.rlib"]}"#,
            r#"{"reason":"build-finished","success":true}"#,
        ]
        .join("\n");
        assert_eq!(
            cdylib_wasm(&messages, manifest),
            Some(PathBuf::from("/t/my_plugin.wasm"))
        );
        assert_eq!(cdylib_wasm(&messages, Path::new("/q/Cargo.toml")), None);
    }
}
