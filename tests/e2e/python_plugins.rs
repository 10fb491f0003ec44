//! Plugins in Python (issue 28): the SDK's and the examples' own pytest
//! suites, the shared vectors through `capstan plugin run` of the Rust and
//! the Python component alike, and a hostile Python plugin against the
//! sandbox's grants and caps.
//!
//! The components are built with the pinned componentize-py that `cargo
//! xtask test` installs (see `support::python_tools`); compiled components
//! are cached across runs, since compiling CPython takes tens of seconds
//! in a debug build.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use capstan::sandbox::{
    CallContext, ComponentCache, Fault, Plugin, PluginError, Policy, Sandbox, Stream,
};

use capstan::model::{App, Facts};

use crate::support::{
    capstan, plugin_wasm, python_component_cache, python_plugin_wasm, python_tools, workspace_root,
};

const DEADLINE: Duration = Duration::from_secs(1);
/// As in `sandbox.rs`: how late past the deadline a fault may end a call
/// on a loaded 2-core machine.
const MARGIN: Duration = Duration::from_secs(2);

fn vectors() -> PathBuf {
    workspace_root().join("tests/fixtures/vectors")
}

#[test]
fn pytest_passes_for_the_sdk_and_the_examples() {
    let Some(tools) = python_tools("pytest_passes_for_the_sdk_and_the_examples") else {
        return;
    };
    for folder in ["plugin-sdk-python", "example-plugins/python"] {
        let output = std::process::Command::new(tools.join("python"))
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .current_dir(workspace_root().join(folder))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "pytest in {folder}:\n{text}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(text.contains(" passed"), "{text}");
    }
}

/// `capstan plugin run -o json` of `wasm` on the vector facts `facts`.
fn run_json(wasm: &Path, facts: &str) -> String {
    let output = capstan()
        .args(["plugin", "run"])
        .arg(wasm)
        .arg("--facts")
        .arg(vectors().join("facts").join(format!("{facts}.json")))
        .args(["-o", "json", "--cache"])
        .arg(python_component_cache())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn both_components_match_the_shared_vectors_under_plugin_run() {
    let Some(tools) = python_tools("both_components_match_the_shared_vectors_under_plugin_run")
    else {
        return;
    };
    let mut checked = 0;
    for (plugin, package) in [
        ("storage", "capstan-example-storage"),
        ("ha-replicas", "capstan-example-ha-replicas"),
    ] {
        let rust = plugin_wasm(package);
        let python = python_plugin_wasm(&tools, &format!("example-plugins/python/{plugin}"));
        let mut expected: Vec<(String, String, PathBuf)> =
            std::fs::read_dir(vectors().join(plugin))
                .unwrap()
                .map(|e| e.unwrap().path())
                .map(|path| {
                    let file = path.file_name().unwrap().to_string_lossy().into_owned();
                    let (facts, chart) = file.trim_end_matches(".json").split_once('.').unwrap();
                    (facts.to_owned(), chart.to_owned(), path)
                })
                .collect();
        expected.sort();
        let mut facts_names: Vec<String> = expected.iter().map(|(f, _, _)| f.clone()).collect();
        facts_names.dedup();
        for facts in facts_names {
            let from_rust = run_json(&rust, &facts);
            let from_python = run_json(&python, &facts);
            // The whole answer, info included, byte for byte.
            assert_eq!(from_rust, from_python, "{plugin} on {facts}");
            let answer: serde_json::Value = serde_json::from_str(&from_python).unwrap();
            for (_, chart, path) in expected.iter().filter(|(f, _, _)| *f == facts) {
                let values = &answer["overrides"][chart.as_str()];
                let text = serde_json::to_string_pretty(values).unwrap() + "\n";
                assert_eq!(
                    text,
                    std::fs::read_to_string(path).unwrap(),
                    "{}",
                    path.display()
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 8, "only {checked} vectors");
}

struct Fixture {
    hostile: Plugin,
    storage: Plugin,
}

/// The hostile and the storage Python plugins in one sandbox (`None`
/// when the tools are missing and this is not CI).
fn fixture(test: &str) -> Option<&'static Fixture> {
    static FIXTURE: OnceLock<Option<Fixture>> = OnceLock::new();
    FIXTURE
        .get_or_init(|| {
            let tools = python_tools(test)?;
            let policy = Policy::new().deadline(DEADLINE);
            let cache = ComponentCache::open(python_component_cache()).unwrap();
            let sandbox = Sandbox::with_cache(policy, cache).unwrap();
            let load = |dir: &str| {
                let wasm = std::fs::read(python_plugin_wasm(&tools, dir)).unwrap();
                sandbox.load(dir, &wasm).unwrap()
            };
            Some(Fixture {
                hostile: load("test-support/plugins/python/hostile"),
                storage: load("example-plugins/python/storage"),
            })
        })
        .as_ref()
}

fn app() -> App {
    App {
        name: "demo".into(),
        version: "1.0.0".into(),
    }
}

fn simplex() -> Facts {
    let text = std::fs::read_to_string(vectors().join("facts/simplex.json")).unwrap();
    Facts::from_yaml(&text).unwrap()
}

/// Runs the hostile plugin's `chart` behaviour: its result, after checking
/// the time it took and that the same sandbox still runs a good plugin.
fn hostile(f: &Fixture, chart: &str) -> Result<serde_json::Map<String, serde_json::Value>, Fault> {
    let started = Instant::now();
    let result = f
        .hostile
        .overrides(&CallContext::new([7; 32]), &app(), &simplex(), chart);
    let elapsed = started.elapsed();
    assert!(
        elapsed < DEADLINE + MARGIN,
        "{chart} took {elapsed:?}, past the deadline and margin"
    );
    let good = f
        .storage
        .overrides(
            &CallContext::new([7; 32]),
            &app(),
            &simplex(),
            "rbd-provisioner",
        )
        .unwrap()
        .to_map()
        .unwrap();
    assert_eq!(good["provisioner"]["replicaCount"], 1);
    result
        .map(|values| values.to_map().unwrap())
        .map_err(|e| e.fault().cloned().unwrap_or_else(|| panic!("{e}")))
}

fn denial(f: &Fixture, chart: &str) -> String {
    match hostile(f, chart) {
        Err(Fault::PluginError(PluginError::Failed(message))) => message,
        other => panic!("{chart}: expected the plugin to report a denial, got {other:?}"),
    }
}

#[test]
fn a_python_plugin_finds_no_file_socket_name_or_environment() {
    let Some(f) = fixture("a_python_plugin_finds_no_file_socket_name_or_environment") else {
        return;
    };
    for chart in ["read-file", "write-file", "open-socket", "resolve"] {
        let message = denial(f, chart);
        assert!(
            message.starts_with(&format!("{chart} denied: ")),
            "{message}"
        );
    }
    assert!(
        denial(f, "open-socket").contains("Permission denied"),
        "no socket is created at all"
    );
    let answer = hostile(f, "read-env").unwrap();
    assert_eq!(answer["environ"], serde_json::json!({}));
    assert_eq!(answer["argv"], serde_json::json!([]));
}

#[test]
fn a_python_exception_is_a_failed_plugin_error_naming_it() {
    let Some(f) = fixture("a_python_exception_is_a_failed_plugin_error_naming_it") else {
        return;
    };
    assert_eq!(denial(f, "raise"), "ValueError: boom");
}

#[test]
fn a_python_plugin_is_bound_by_the_deadline() {
    let Some(f) = fixture("a_python_plugin_is_bound_by_the_deadline") else {
        return;
    };
    assert_eq!(
        hostile(f, "loop"),
        Err(Fault::Timeout { deadline: DEADLINE })
    );
}

#[test]
fn a_python_plugin_is_bound_by_the_memory_cap_even_when_it_catches_memory_error() {
    let Some(f) =
        fixture("a_python_plugin_is_bound_by_the_memory_cap_even_when_it_catches_memory_error")
    else {
        return;
    };
    assert_eq!(
        hostile(f, "balloon"),
        Err(Fault::MemoryLimit {
            limit: capstan::sandbox::DEFAULT_MEMORY_BYTES
        })
    );
}

#[test]
fn a_python_plugin_is_bound_by_the_output_stdout_and_log_caps() {
    let Some(f) = fixture("a_python_plugin_is_bound_by_the_output_stdout_and_log_caps") else {
        return;
    };
    for (chart, stream, limit) in [
        (
            "huge-output",
            Stream::Output,
            capstan::sandbox::DEFAULT_OUTPUT_BYTES,
        ),
        (
            "print-flood",
            Stream::Stdout,
            capstan::sandbox::DEFAULT_LOG_BYTES,
        ),
        (
            "log-flood",
            Stream::Log,
            capstan::sandbox::DEFAULT_LOG_BYTES,
        ),
    ] {
        assert_eq!(
            hostile(f, chart),
            Err(Fault::OutputTooLarge { stream, limit }),
            "{chart}"
        );
    }
}

/// docs/src/getting-started/first-plugin-python.md, every `sh` block run
/// as written, in one shell, in an empty folder with no checkout beside
/// it: scaffold, the tools from PyPI into a virtualenv, pytest, `plugin
/// build`, `plugin run`, tox, an app around the plugin, a signed bundle,
/// the daemon applying it to the directory target. The test adds nothing
/// between the blocks; the compiled-component cache is the tests' shared
/// one (`support::capstan`), so a rerun does not recompile CPython.
#[test]
fn the_python_walkthrough_runs_as_written() {
    use std::os::unix::process::CommandExt;
    let root = crate::support::fresh_dir("python_walkthrough");
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let blocks = crate::operator::walkthrough_blocks("getting-started/first-plugin-python.md");
    assert!(blocks.len() >= 6, "{blocks:?}");
    assert!(
        blocks[0].contains("capstan plugin new my-plugin --lang python"),
        "{}",
        blocks[0]
    );
    let mut script = String::from("set -eu\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n");
    for (i, block) in blocks.iter().enumerate() {
        script.push_str(&format!("echo '### block {i}'\n{block}"));
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_capstan")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let log = root.join("walkthrough.log");
    let mut child = bash_script(&script)
        .current_dir(&work)
        .env("PATH", path)
        .env(
            "XDG_CACHE_HOME",
            crate::support::target_dir().join("e2e-xdg-cache"),
        )
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CAPSTAN_STATE")
        .env_remove("CAPSTAN_SERVER")
        .env_remove("VIRTUAL_ENV")
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(root.join("walkthrough.err")).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        // Generous: cold pip downloads and two componentize-py builds.
        if started.elapsed() > Duration::from_secs(1200) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
    let stdout = std::fs::read_to_string(&log).unwrap();
    let stderr = std::fs::read_to_string(root.join("walkthrough.err")).unwrap();
    let status = status.unwrap_or_else(|| panic!("timed out\n{stdout}\n{stderr}"));
    assert!(status.success(), "{stdout}\n{stderr}");

    // Step 3: both native tests passed, and the component was built and
    // loaded.
    assert!(stdout.contains("2 passed"), "{stdout}");
    assert!(
        stdout.contains(
            "plugin:   my-plugin 0.1.0 (python)\nworld:    capstan:plugin/override-plugin@0.1.0"
        ),
        "{stdout}"
    );
    // Step 4: the override and the hook.
    assert!(
        stdout.contains("# overrides for chart web\nreplicaCount: 1"),
        "{stdout}"
    );
    assert!(stdout.contains("outcome: proceed"), "{stdout}");
    // Step 5: tox ran its environment to the end.
    assert!(stdout.contains("congratulations"), "{stdout}");
    // Step 6: the daemon applied the plugin's value over the chart's 3.
    let web = std::fs::read_to_string(work.join("applied/my-app/web.yaml")).unwrap();
    assert!(web.contains("kind: Deployment"), "{web}");
    assert!(web.contains("replicas: 1"), "{web}");
    assert!(!web.contains("replicas: 3"), "{web}");
}

/// `bash -c SCRIPT`.
fn bash_script(script: &str) -> std::process::Command {
    let mut command = std::process::Command::new("bash");
    command.arg("-c").arg(script);
    command
}
