//! Project tasks that need more than one cargo command: `cargo xtask demo`,
//! `cargo xtask test`, `cargo xtask build`, `cargo xtask plugins`,
//! `cargo xtask peers`, `cargo xtask fuzz`, `cargo xtask book`,
//! `cargo xtask docs-cli`, `cargo xtask openapi`, `cargo xtask api-fuzz`.
//!
//! Each task installs what it needs first (the `wasm32-wasip2` target, and
//! for `peers` the `wasm32-unknown-unknown` target Extism plugins build for,
//! for `book` the pinned mdbook) so that a fresh machine with only the Rust toolchain can run it.

mod api_fuzz;
mod book;
mod cluster;
mod fuzz;
mod python;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const WASM_TARGET: &str = "wasm32-wasip2";

/// The target the peers benchmark's Extism plugin builds for.
const EXTISM_TARGET: &str = "wasm32-unknown-unknown";

/// The peers benchmark's own workspace (docs/src/developing/performance.md).
const PEERS_MANIFEST: &str = "benches/peers/Cargo.toml";

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
        Some("plugins") => build_plugins().and_then(|()| python::plugin_tools()),
        Some("build") => build_plugins().and_then(|()| build_host()),
        Some("test") => build_plugins()
            .and_then(|()| python::plugin_tools())
            .and_then(|()| run_tests(&args[1..])),
        Some("demo") => build_plugins().and_then(|()| demo(&args[1..])),
        Some("peers") => build_plugins().and_then(|()| peers(&args[1..])),
        Some("fuzz") => fuzz::fuzz(&args[1..]),
        Some("cluster") => cluster::main(&args[1..]),
        Some("book") => book::book(&args[1..]),
        Some("docs-cli") => book::docs_cli(),
        Some("openapi") => openapi(),
        Some("api-fuzz") => api_fuzz::api_fuzz(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\n\
                 tasks:\n  demo [--cluster double | --cluster local | --kubeconfig FILE]\n                            \
                 build the example plugins and app, run the main job end to end\n  \
                 test [ARGS]               build the plugins and install the Python plugin tools, then run every test (`cargo test --workspace --features capstan/test-hooks ARGS`)\n  \
                 build                     build everything: the host and every plugin\n  \
                 plugins                   build the example and test plugins for {WASM_TARGET}, and install the\n                            \
                 Python plugin tools (plugin-sdk-python/tools.txt) into <target>/python-venv\n  \
                 peers [--dev]             benchmark the storage plugin's overrides call: capstan, a bare wasmtime\n                            \
                 floor, Extism (fresh and reused plugin) and Python, in one run (docs/src/developing/performance.md);\n                            \
                 --dev: capstan's side in the dev profile CI builds, not the bench profile\n  \
                 fuzz [SECONDS] [TARGET...]  build the fuzz targets (host/fuzz) with libFuzzer's coverage on stable,\n                            \
                 run each for SECONDS (default 60) from its seed corpus; fails on a crash, timeout or OOM\n  \
                 cluster build|up [--nodes N]|down|env|status|sync|bench\n                            \
                 a real control plane (kube-apiserver, etcd, controller-manager, scheduler, kwok) on\n                            \
                 127.0.0.1, built from the Go modules in test-support/control-plane\n                            \
                 (docs/src/developing/control-plane.md)\n  \
                 book                      build the book (docs/) with mdbook {MDBOOK}, warnings as errors, and check\n                            \
                 every internal link and anchor; installs that mdbook once (docs/src/developing/book.md)\n  \
                 docs-cli                  write docs/src/reference/cli.md from the clap definitions\n  \
                 openapi                   write docs/src/reference/openapi.json, the API document the daemon serves at /v1/openapi.json\n  \
                 api-fuzz [SECONDS] [--target dir|double]\n                            \
                 schemathesis (PyPI, pinned, stateful from the document's links) against a live daemon on the\n                            \
                 directory target and on kube-double, SECONDS (default 120) split between them: fails on a 5xx,\n                            \
                 an answer the OpenAPI document does not allow, a daemon that stops answering, or no upload -> apply",
                MDBOOK = book::MDBOOK_VERSION
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
    ensure_target(WASM_TARGET)
}

/// Installs `target` when rustup is there and the target is not.
fn ensure_target(target: &str) -> Result<(), String> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    match installed {
        Ok(out)
            if String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim() == target) =>
        {
            Ok(())
        }
        Ok(_) => {
            let mut add = Command::new("rustup");
            add.args(["target", "add", target]);
            run(add, &format!("rustup target add {target}"))
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
    // The cluster tests run on the real control plane (README, Testing
    // against a real control plane): up before the tests, down after,
    // unless one was up already.
    let control_plane = cluster::for_tests()?;
    let mut test = cargo();
    test.args(["test", "--workspace"])
        .args(TEST_FEATURES)
        .args(extra);
    let result = run(test, "cargo test");
    if let Some(started) = control_plane {
        started.stop();
    }
    result
}

/// Writes `docs/src/reference/openapi.json` from the daemon's own document: the test
/// that compares the two writes it instead when `CAPSTAN_WRITE_OPENAPI`
/// is set (built with the test features, so nothing is rebuilt for it).
fn openapi() -> Result<(), String> {
    let mut write = cargo();
    write
        .args(["test", "-p", "capstan", "--lib"])
        .args(TEST_FEATURES)
        .args([
            "api::openapi::tests::the_document_in_docs_is_the_one_the_server_serves",
            "--",
            "--exact",
        ])
        .env("CAPSTAN_WRITE_OPENAPI", "1");
    run(write, "writing docs/src/reference/openapi.json")
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
    let target_dir = target_dir();
    let mut args = extra.to_vec();
    // `--cluster local`: the real control plane (`cargo xtask cluster
    // up`), left running afterwards; the daemon applies as the `capstan`
    // ServiceAccount.
    let mut kubectl = None;
    if let [flag, value] = extra
        && flag == "--cluster"
        && value == "local"
    {
        cluster::main(&["up".to_owned()])?;
        let dir = cluster::cluster_dir();
        args = vec![
            "--kubeconfig".to_owned(),
            dir.join("capstan.kubeconfig").display().to_string(),
        ];
        kubectl = Some(dir);
    }
    let mut demo = Command::new("bash");
    demo.arg(root.join("example-plugins/demo.sh"))
        .args(&args)
        .env("CAPSTAN_TARGET_DIR", &target_dir)
        .current_dir(&root);
    if let Some(dir) = &kubectl {
        demo.env("CAPSTAN_DEMO_KUBECTL", dir.join("bin/kubectl"))
            .env("CAPSTAN_DEMO_ADMIN_KUBECONFIG", dir.join("kubeconfig"));
    }
    run(demo, "the demo")?;
    if kubectl.is_some() {
        eprintln!(
            "xtask: the control plane is still up (`cargo xtask cluster env`); `cargo xtask cluster down` stops it"
        );
    }
    Ok(())
}

/// The workspace's target folder, where criterion writes its estimates.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The peers benchmark's target folder: `CAPSTAN_PEERS_TARGET_DIR`, else
/// `benches/peers/target`. Never the workspace's: it holds another
/// wasmtime.
fn peers_target_dir() -> PathBuf {
    std::env::var_os("CAPSTAN_PEERS_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("benches/peers/target"))
}

/// One measurement of the peers table.
struct Measured {
    name: &'static str,
    what: &'static str,
    median_ns: Option<f64>,
}

/// `cargo xtask peers`: capstan's sandboxed `overrides` call and its bare
/// wasmtime floor (`host/benches/sandbox.rs`), the same logic as an Extism
/// plugin (`benches/peers`) and as a Python function
/// (`benches/peers/storage_overrides.py`), one after the other on this
/// machine, then the medians and ratios. Every bench checks its output
/// against the same fixture before timing.
fn peers(extra: &[String]) -> Result<(), String> {
    let root = workspace_root();
    let mut capstan = cargo();
    capstan.args(["bench", "-p", "capstan", "--bench", "sandbox"]);
    match extra {
        [] => {}
        // The build CI makes (`cargo build --workspace --benches` with the
        // test features), so nothing is rebuilt in the release profile.
        [flag] if flag == "--dev" => {
            capstan.args(["--profile", "dev"]).args(TEST_FEATURES);
        }
        _ => {
            return Err(format!(
                "peers: unknown arguments {extra:?}; usage: cargo xtask peers [--dev]"
            ));
        }
    }
    // `overrides/...` and `python/overrides` (the Python plugin, when the
    // e2e tests built it; see host/benches/sandbox.rs).
    capstan.args(["--", "overrides"]);
    run(capstan, "the sandbox bench")?;

    ensure_target(EXTISM_TARGET)?;
    let peers_target = peers_target_dir();
    let peers_cargo = || {
        let mut command = cargo();
        command.env("CARGO_TARGET_DIR", &peers_target);
        command
    };
    let mut plugin = peers_cargo();
    plugin.args([
        "build",
        "--release",
        "--target",
        EXTISM_TARGET,
        "--manifest-path",
    ]);
    plugin.args([PEERS_MANIFEST, "-p", "capstan-peers-extism-storage"]);
    run(plugin, "building the Extism plugin")?;
    let mut extism = peers_cargo();
    extism.args([
        "bench",
        "--manifest-path",
        PEERS_MANIFEST,
        "--",
        "overrides/",
    ]);
    run(extism, "the peers bench")?;

    let python = Command::new("python3")
        .arg(root.join("benches/peers/storage_overrides.py"))
        .output();
    let python_text = match python {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        Ok(out) => {
            return Err(format!(
                "the Python bench failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Err(e) => {
            eprintln!("xtask: python3 not run ({e}); its rows stay empty");
            String::new()
        }
    };
    print!("{python_text}");

    let criterion =
        |target: &Path, id: &str| criterion_median(&target.join("criterion/overrides").join(id));
    let rows = [
        Measured {
            name: "capstan",
            what: "capstan's sandboxed call: fresh instance, every limit on",
            median_ns: criterion(&target_dir(), "capstan"),
        },
        Measured {
            name: "bare-wasmtime",
            what: "floor: bare wasmtime, same pooling configuration, fresh store",
            median_ns: criterion(&target_dir(), "bare-wasmtime"),
        },
        Measured {
            name: "capstan-python",
            what: "capstan's sandboxed call of the Python twin (componentize-py): fresh instance, every limit on",
            median_ns: criterion_median(&target_dir().join("criterion/python/overrides")),
        },
        Measured {
            name: "extism-fresh",
            what: "Extism, fresh plugin per call (from the compiled module)",
            median_ns: criterion(&peers_target, "extism-fresh"),
        },
        Measured {
            name: "extism-reused",
            what: "Extism, one plugin reused",
            median_ns: criterion(&peers_target, "extism-reused"),
        },
        Measured {
            name: "extism-new",
            what: "Extism, Plugin::new per call (compiles each time)",
            median_ns: criterion(&peers_target, "extism-new"),
        },
        Measured {
            name: "python-call",
            what: "Python function in a running interpreter, no sandbox",
            median_ns: python_median(&python_text, "python-call"),
        },
        Measured {
            name: "python-json",
            what: "the same with JSON text in and out",
            median_ns: python_median(&python_text, "python-json"),
        },
    ];
    let capstan_ns = rows[0].median_ns;
    println!("\n| bench | median | capstan / it | what |\n|---|---:|---:|---|");
    for row in &rows {
        let median = row.median_ns.map_or("-".to_string(), format_ns);
        let ratio = match (capstan_ns, row.median_ns) {
            (Some(c), Some(m)) if m > 0.0 => format!("{:.2}", c / m),
            _ => "-".to_string(),
        };
        println!("| `{}` | {median} | {ratio} | {} |", row.name, row.what);
    }
    Ok(())
}

/// The median point estimate, in ns, that criterion wrote for one bench.
fn criterion_median(bench_dir: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(bench_dir.join("new/estimates.json")).ok()?;
    let estimates: serde_json::Value = serde_json::from_str(&text).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}

/// The `NAME median_ns=N` line the Python bench printed.
fn python_median(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter_map(|line| {
            line.strip_prefix(name)?
                .trim_start()
                .strip_prefix("median_ns=")
        })
        .find_map(|rest| rest.split_whitespace().next()?.parse().ok())
}

fn format_ns(ns: f64) -> String {
    if ns >= 1_000_000.0 {
        format!("{:.2} ms", ns / 1_000_000.0)
    } else if ns >= 1_000.0 {
        format!("{:.2} µs", ns / 1_000.0)
    } else {
        format!("{ns:.0} ns")
    }
}
