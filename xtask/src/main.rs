//! Project tasks that need more than one cargo command: `cargo xtask demo`,
//! `cargo xtask test`, `cargo xtask build`, `cargo xtask plugins`.
//!
//! Each task installs what it needs first (the `wasm32-wasip2` target) so
//! that a fresh machine with only the Rust toolchain can run it.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const WASM_TARGET: &str = "wasm32-wasip2";

/// The workspace members that do not build for the wasm target, from
/// `native-only-packages.txt` at the workspace root (the e2e tests read the
/// same file); every other member is a plugin (the examples and the test
/// fixtures) or the SDK.
fn native_only_packages() -> impl Iterator<Item = &'static str> {
    include_str!("../../native-only-packages.txt")
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|name| !name.is_empty())
}

/// The features every build of the tests and the demo uses, so that neither
/// rebuilds what the other built: the daemon's test hooks.
const TEST_FEATURES: &[&str] = &["--features", "capstan/test-hooks"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("plugins") => build_plugins(),
        Some("build") => build_plugins().and_then(|()| build_host()),
        Some("test") => build_plugins().and_then(|()| run_tests(&args[1..])),
        Some("demo") => build_plugins().and_then(|()| demo(&args[1..])),
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\n\
                 tasks:\n  demo [--cluster double | --kubeconfig FILE]\n                            \
                 build the example plugins and app, run the main job end to end\n  \
                 test [ARGS]               build the plugins, then run every test (`cargo test --workspace --features capstan/test-hooks ARGS`)\n  \
                 build                     build everything: the host and every plugin\n  \
                 plugins                   build the example and test plugins for {WASM_TARGET}"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo() -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.current_dir(workspace_root());
    command
}

fn run(mut command: Command, what: &str) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Installs the wasm target when rustup is there and the target is not.
fn ensure_wasm_target() -> Result<(), String> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    match installed {
        Ok(out)
            if String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim() == WASM_TARGET) =>
        {
            Ok(())
        }
        Ok(_) => {
            let mut add = Command::new("rustup");
            add.args(["target", "add", WASM_TARGET]);
            run(add, "rustup target add wasm32-wasip2")
        }
        // No rustup: the toolchain was installed another way; let cargo
        // report a missing target if it is missing.
        Err(_) => Ok(()),
    }
}

fn build_plugins() -> Result<(), String> {
    ensure_wasm_target()?;
    let mut build = cargo();
    build.args(["build", "--release", "--target", WASM_TARGET]);
    build.arg("--workspace");
    for package in native_only_packages() {
        build.args(["--exclude", package]);
    }
    run(build, "building the plugins")
}

fn build_host() -> Result<(), String> {
    let mut build = cargo();
    build.args(["build", "--workspace"]);
    run(build, "building the workspace")
}

fn run_tests(extra: &[String]) -> Result<(), String> {
    let mut test = cargo();
    test.args(["test", "--workspace"])
        .args(TEST_FEATURES)
        .args(extra);
    run(test, "cargo test")
}

fn demo(extra: &[String]) -> Result<(), String> {
    // Built exactly as `cargo xtask test` builds it (the same targets and
    // the same TEST_FEATURES, so the same feature set), so neither command
    // rebuilds what the other built; the binary lands in the same place,
    // target/debug/capstan.
    let mut build = cargo();
    build
        .args(["test", "--workspace", "--no-run"])
        .args(TEST_FEATURES);
    run(build, "building capstan")?;
    let root = workspace_root();
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let mut demo = Command::new("bash");
    demo.arg(root.join("example-plugins/demo.sh"))
        .args(extra)
        .env("CAPSTAN_TARGET_DIR", target_dir)
        .current_dir(&root);
    run(demo, "the demo")
}
