//! `cargo xtask fuzz [SECONDS] [TARGET...]`: builds the libFuzzer targets of
//! `host/fuzz` on the stable toolchain and runs each for a short while.
//!
//! No cargo-fuzz and no nightly: the instrumentation cargo-fuzz asks rustc
//! for (SanitizerCoverage's inline 8-bit counters, PC table, compare tracing
//! and stack depth, `--cfg fuzzing`, debug assertions) is made of stable
//! `-C` flags, and `libfuzzer-sys` builds and links libFuzzer itself. What
//! stays out is AddressSanitizer (`-Zsanitizer`, nightly only): the code
//! under test is safe Rust, and the crashes looked for are panics, hangs
//! and runaway memory, which libFuzzer catches on its own.
//!
//! The build goes to `<target dir>/fuzz`, apart from the workspace's own
//! artifacts (other flags, so nothing could be shared), with `--target` set
//! so that build scripts and proc macros are not instrumented. Each run
//! starts from the committed seeds `host/fuzz/corpus/NAME` (read only) plus
//! a working corpus in `<target dir>/fuzz/corpus/NAME` that keeps what the
//! runs found, uses `host/fuzz/dict/NAME.dict` when there is one, and writes
//! a failing input to `<target dir>/fuzz/artifacts/NAME/`. Any crash,
//! timeout or out-of-memory ends the task with an error naming the input
//! and the command that replays it; the whole libFuzzer log of a run is in
//! `<target dir>/fuzz/logs/NAME.log`. Targets run as many at a time as there
//! are cores, each on one.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{cargo, run, target_dir, workspace_root};

/// The fuzz project, a workspace of its own (docs/src/developing/fuzzing.md).
const FUZZ_DIR: &str = "host/fuzz";

/// Seconds each target runs when no count is given.
const DEFAULT_SECONDS: u64 = 60;

/// One input may take this long before libFuzzer calls it a timeout. The
/// template target stops an execution at its 200 ms render deadline, so
/// only a real hang gets near it.
const INPUT_TIMEOUT_SECONDS: u64 = 10;

/// The peak RSS, in MB, past which libFuzzer reports an out-of-memory (also
/// its limit on one allocation).
const RSS_LIMIT_MB: u64 = 2048;

/// The lines of a failed run's log the task prints.
const LOG_TAIL_LINES: usize = 100;

/// The coverage flags cargo-fuzz passes to rustc (its `project.rs`), minus
/// `-Zsanitizer` and `-Clink-dead-code` (only useful for coverage reports).
const INSTRUMENT_FLAGS: &[&str] = &[
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=4",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-trace-compares",
    "-Cllvm-args=-sanitizer-coverage-stack-depth",
    "--cfg",
    "fuzzing",
    "-Cdebug-assertions",
];

/// Runs the task: `args` is `[SECONDS] [TARGET...]`; `0` seconds replays
/// the corpora once (`-runs=0`) without fuzzing.
pub(crate) fn fuzz(args: &[String]) -> Result<(), String> {
    let (seconds, wanted) = match args.split_first() {
        Some((first, rest)) if first.bytes().all(|b| b.is_ascii_digit()) => (
            first
                .parse::<u64>()
                .map_err(|e| format!("fuzz: bad SECONDS {first:?}: {e}"))?,
            rest,
        ),
        _ => (DEFAULT_SECONDS, args),
    };
    let root = workspace_root();
    let all = targets(&root.join(FUZZ_DIR))?;
    let chosen: Vec<String> = if wanted.is_empty() {
        all
    } else {
        for name in wanted {
            if !all.contains(name) {
                return Err(format!(
                    "fuzz: no target {name:?}; the targets are {}",
                    all.join(", ")
                ));
            }
        }
        wanted.to_vec()
    };

    let out = target_dir().join("fuzz");
    let triple = host_triple()?;
    build(&root, &out, &triple)?;
    let bin_dir = out.join(&triple).join("debug");

    // One core a run: two targets at a time on a two-core machine halve
    // the wall time of the step without shortening any run.
    let jobs = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .clamp(1, chosen.len().max(1));
    let mut failed = Vec::new();
    let mut running: std::collections::VecDeque<Running> = std::collections::VecDeque::new();
    for name in &chosen {
        if running.len() == jobs
            && let Some(oldest) = running.pop_front()
            && let Err(message) = oldest.finish()
        {
            failed.push(message);
        }
        running.push_back(start_target(
            &root,
            &out,
            &bin_dir.join(name),
            name,
            seconds,
        )?);
    }
    for run in running {
        if let Err(message) = run.finish() {
            failed.push(message);
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("\n"))
    }
}

/// The target names: the files of `host/fuzz/fuzz_targets`, one binary each.
fn targets(fuzz_dir: &Path) -> Result<Vec<String>, String> {
    let dir = fuzz_dir.join("fuzz_targets");
    let entries =
        std::fs::read_dir(&dir).map_err(|e| format!("fuzz: cannot list {}: {e}", dir.display()))?;
    let mut names = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| format!("fuzz: cannot list {}: {e}", dir.display()))?
            .path();
        if path.extension().is_some_and(|ext| ext == "rs")
            && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
        {
            names.push(stem.to_string());
        }
    }
    names.sort();
    Ok(names)
}

/// The host's target triple, from `rustc -vV`.
fn host_triple() -> Result<String, String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .arg("-vV")
        .output()
        .map_err(|e| format!("fuzz: cannot run {rustc} -vV: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(|triple| triple.trim().to_string())
        .ok_or_else(|| format!("fuzz: {rustc} -vV printed no host triple"))
}

/// Builds every fuzz binary, instrumented, into `out`.
fn build(root: &Path, out: &Path, triple: &str) -> Result<(), String> {
    let mut flags = INSTRUMENT_FLAGS.join(" ");
    if let Ok(extra) = std::env::var("RUSTFLAGS")
        && !extra.trim().is_empty()
    {
        flags.push(' ');
        flags.push_str(&extra);
    }
    let mut build = cargo();
    build
        .args(["build", "--bins", "--manifest-path"])
        .arg(root.join(FUZZ_DIR).join("Cargo.toml"))
        // With an explicit target, RUSTFLAGS reach only the target's
        // crates: build scripts and proc macros stay uninstrumented.
        .args(["--target", triple])
        .env("CARGO_TARGET_DIR", out)
        .env("RUSTFLAGS", flags)
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    let started = std::time::Instant::now();
    run(build, "building the fuzz targets")?;
    eprintln!(
        "xtask: fuzz targets built in {}s",
        started.elapsed().as_secs()
    );
    Ok(())
}

/// One target's libFuzzer process, running.
struct Running {
    name: String,
    binary: PathBuf,
    child: std::process::Child,
    log_path: PathBuf,
    artifacts: PathBuf,
    started: std::time::Instant,
}

/// Starts one target for `seconds` (0: the corpora once).
fn start_target(
    root: &Path,
    out: &Path,
    binary: &Path,
    name: &str,
    seconds: u64,
) -> Result<Running, String> {
    let seeds = root.join(FUZZ_DIR).join("corpus").join(name);
    let corpus = out.join("corpus").join(name);
    let artifacts = out.join("artifacts").join(name);
    // A fresh artifacts folder, so what is in it after the run is this
    // run's finding.
    if artifacts.exists() {
        std::fs::remove_dir_all(&artifacts)
            .map_err(|e| format!("fuzz: cannot empty {}: {e}", artifacts.display()))?;
    }
    for dir in [&corpus, &artifacts] {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("fuzz: cannot create {}: {e}", dir.display()))?;
    }
    let mut command = Command::new(binary);
    if seconds == 0 {
        command.arg("-runs=0");
    } else {
        command.arg(format!("-max_total_time={seconds}"));
    }
    command
        .arg(format!("-timeout={INPUT_TIMEOUT_SECONDS}"))
        .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg("-print_final_stats=1");
    let dict = root
        .join(FUZZ_DIR)
        .join("dict")
        .join(format!("{name}.dict"));
    if dict.exists() {
        command.arg(format!("-dict={}", dict.display()));
    }
    // New inputs go to the first folder: the working corpus, never the
    // committed seeds.
    command.arg(&corpus);
    if seeds.exists() {
        command.arg(&seeds);
    }
    command.current_dir(root);
    // libFuzzer prints a line for every input that adds coverage: the whole
    // log goes to a file, the task prints its summary or, on a failure,
    // its end (the panic message, the input's path).
    let log_path = out.join("logs").join(format!("{name}.log"));
    let log = log_file(&log_path)?;
    let log_err = log
        .try_clone()
        .map_err(|e| format!("fuzz: cannot open {}: {e}", log_path.display()))?;
    command.stdout(log).stderr(log_err);
    let child = command
        .spawn()
        .map_err(|e| format!("fuzz: cannot start {}: {e}", binary.display()))?;
    eprintln!("xtask: fuzz target {name} started");
    Ok(Running {
        name: name.to_string(),
        binary: binary.to_path_buf(),
        child,
        log_path,
        artifacts,
        started: std::time::Instant::now(),
    })
}

impl Running {
    /// Waits for the run to end; what it found is the error.
    fn finish(mut self) -> Result<(), String> {
        let name = &self.name;
        let status = self
            .child
            .wait()
            .map_err(|e| format!("fuzz: waiting for {name}: {e}"))?;
        let text = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        eprintln!(
            "xtask: fuzz target {name}: {} in {}s",
            if status.success() { "ok" } else { "FAILED" },
            self.started.elapsed().as_secs()
        );
        if status.success() {
            for line in text
                .lines()
                .filter(|line| line.starts_with("Done ") || line.starts_with("stat::"))
            {
                eprintln!("  {line}");
            }
            return Ok(());
        }
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
        eprintln!(
            "xtask: the end of {} (the whole log):",
            self.log_path.display()
        );
        for line in tail {
            eprintln!("  {line}");
        }
        let found = findings(&self.artifacts);
        if found.is_empty() {
            return Err(format!(
                "fuzz target {name} failed ({status}) and wrote no input to {}",
                self.artifacts.display()
            ));
        }
        let replay: Vec<String> = found
            .iter()
            .map(|input| format!("  {} {}", self.binary.display(), input.display()))
            .collect();
        Err(format!(
            "fuzz target {name} failed ({status}); replay with:\n{}",
            replay.join("\n")
        ))
    }
}

/// The inputs libFuzzer wrote for a failure (`crash-`, `timeout-`, `oom-`,
/// `leak-`; not the informative `slow-unit-`).
fn findings(artifacts: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(artifacts) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with("slow-unit-"))
        })
        .collect();
    found.sort();
    found
}

/// Creates (or truncates) a run's log file and its folder.
fn log_file(path: &Path) -> Result<std::fs::File, String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("fuzz: cannot create {}: {e}", dir.display()))?;
    }
    std::fs::File::create(path).map_err(|e| format!("fuzz: cannot create {}: {e}", path.display()))
}
