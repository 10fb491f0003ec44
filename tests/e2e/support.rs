//! Helpers shared by the end-to-end tests: building the plugin fixtures,
//! finding the binary, fresh folders.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace members that do not build for the wasm target, from the
/// list `cargo xtask plugins` reads too; every other member (the example and
/// test plugins, the SDK) is built in one cargo invocation.
fn native_only_packages() -> impl Iterator<Item = &'static str> {
    include_str!("../../native-only-packages.txt")
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|name| !name.is_empty())
}

/// The workspace's root folder.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .expect("the host crate lives inside the workspace")
}

/// The cargo target folder these tests were built in.
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        let dir = PathBuf::from(dir);
        return if dir.is_absolute() {
            dir
        } else {
            workspace_root().join(dir)
        };
    }
    // <target>/debug/capstan
    Path::new(env!("CARGO_BIN_EXE_capstan"))
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The path of a plugin component built from `package` (for example
/// `capstan-test-hostile`), building every plugin fixture on first use.
pub fn plugin_wasm(package: &str) -> PathBuf {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(e) = BUILT.get_or_init(build_plugins) {
        panic!("building the plugin fixtures failed: {e}");
    }
    let file = format!("{}.wasm", package.replace('-', "_"));
    target_dir()
        .join("wasm32-wasip2")
        .join("release")
        .join(file)
}

/// The bytes of a plugin component; see [`plugin_wasm`].
pub fn plugin_bytes(package: &str) -> Vec<u8> {
    let path = plugin_wasm(package);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn build_plugins() -> Result<(), String> {
    // Installing the target is quick when it is already there; without
    // rustup, cargo reports a missing target itself.
    let _ = Command::new("rustup")
        .args(["target", "add", "wasm32-wasip2"])
        .output();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace_root())
        .env("CARGO_TARGET_DIR", target_dir())
        .args(["build", "--release", "--target", "wasm32-wasip2"]);
    command.arg("--workspace");
    for package in native_only_packages() {
        command.args(["--exclude", package]);
    }
    let output = command.output().map_err(|e| e.to_string())?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// A fresh, empty folder for the test `name`.
///
/// A long name is cut to its first 24 characters and a hash of the whole,
/// so a daemon's `STATE/capstan.sock` under it stays within a unix socket
/// path's 108 bytes wherever the checkout lies (CI's is deeper than ours).
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = target_dir().join("e2e").join(short_name(name));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating a test folder");
    dir
}

/// `name` if it is at most 32 bytes, else its first 24 characters, `-`
/// and 8 hex digits of an FNV-1a hash of the whole name.
fn short_name(name: &str) -> String {
    if name.len() <= 32 {
        return name.to_string();
    }
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let head: String = name.chars().take(24).collect();
    format!("{head}-{:08x}", hash as u32)
}

/// The `capstan` binary under test, with the user's compiled-component
/// cache (`plugin run`, `inspect`, `build`, `bundle build`) in one folder
/// of the target folder shared by every test and run.
pub fn capstan() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_capstan"));
    command.env("XDG_CACHE_HOME", target_dir().join("e2e-xdg-cache"));
    command
}

/// The example facts file `name` of the example plugin `plugin`.
pub fn example_facts(plugin: &str, name: &str) -> PathBuf {
    workspace_root()
        .join("example-plugins")
        .join(plugin)
        .join("facts")
        .join(name)
}

/// Copies the folder `from` to `to`, recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The Helm 4 binary the differential tests use as their oracle:
/// `CAPSTAN_HELM` when set, else `<target dir>/cluster/bin/helm` (what
/// `cargo xtask cluster build` links there). When neither exists the test
/// says why and is skipped (`None`), except under `CI=true`, where it
/// fails: CI never skips the oracle silently.
pub fn helm_binary(test: &str) -> Option<PathBuf> {
    let (path, source) = match std::env::var_os("CAPSTAN_HELM") {
        Some(p) => (PathBuf::from(p), "CAPSTAN_HELM"),
        None => (
            target_dir().join("cluster").join("bin").join("helm"),
            "cargo xtask cluster build",
        ),
    };
    if path.is_file() {
        return Some(path);
    }
    let why = format!(
        "{test}: no Helm binary at {} (from {source}); build it with `cargo xtask cluster build` or set CAPSTAN_HELM",
        path.display()
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// The `bin/` of the virtualenv holding the Python plugin tools
/// (componentize-py and pytest, pinned in `plugin-sdk-python/tools.txt`),
/// which `cargo xtask test` installs into `<target dir>/python-venv`.
/// When it is missing the test says why and is skipped (`None`), except
/// under `CI=true`, where it fails.
pub fn python_tools(test: &str) -> Option<PathBuf> {
    let bin = target_dir().join("python-venv").join("bin");
    if bin.join("componentize-py").is_file() && bin.join("pytest").is_file() {
        return Some(bin);
    }
    let why = format!(
        "{test}: no componentize-py and pytest in {}; `cargo xtask test` (or `cargo xtask plugins`) installs them",
        bin.display()
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// The component of the Python plugin in the workspace folder `dir`
/// (with `app.py`), built with componentize-py against the checkout's
/// SDK and WIT into `<target dir>/python-plugins/`, and rebuilt only when
/// a source, the SDK, the WIT or the tools' pins changed (a build takes
/// tens of seconds). `tools` is [`python_tools`]' answer.
pub fn python_plugin_wasm(tools: &Path, dir: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let root = workspace_root();
    let source = root.join(dir);
    let sdk = root.join("plugin-sdk-python");
    let mut inputs: Vec<PathBuf> = vec![root.join("wit/v0.1/plugin.wit"), sdk.join("tools.txt")];
    for folder in [source.clone(), sdk.join("capstan_plugin")] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "py"))
            .collect();
        files.sort();
        inputs.extend(files);
    }
    let mut hasher = Sha256::new();
    for input in &inputs {
        hasher.update(
            input
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .as_bytes(),
        );
        hasher.update(std::fs::read(input).unwrap());
    }
    let digest = hex::encode(hasher.finalize());
    let name = Path::new(dir)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out_dir = target_dir().join("python-plugins");
    std::fs::create_dir_all(&out_dir).unwrap();
    let wasm = out_dir.join(format!("{name}.wasm"));
    let stamp = out_dir.join(format!("{name}.inputs"));
    if wasm.is_file() && std::fs::read_to_string(&stamp).is_ok_and(|s| s == digest) {
        return wasm;
    }
    let output = Command::new(tools.join("componentize-py"))
        .arg("--wit-path")
        .arg(root.join("wit/v0.1"))
        .args([
            "--world",
            "override-plugin",
            "--quiet",
            "componentize",
            "app",
        ])
        .arg("--python-path")
        .arg(&source)
        .arg("--python-path")
        .arg(&sdk)
        .arg("--output")
        .arg(&wasm)
        .current_dir(&source)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "componentize-py on {dir}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::write(&stamp, digest).unwrap();
    wasm
}

/// A compiled-component cache kept across runs, for tests that load
/// Python components: compiling one takes tens of seconds in a debug
/// build; the cache is keyed by the component's hash and the engine's
/// settings, so a stale entry is never used.
pub fn python_component_cache() -> PathBuf {
    target_dir().join("e2e-python-component-cache")
}
