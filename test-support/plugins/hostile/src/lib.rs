//! A hostile plugin: each chart name selects one way to misbehave.
//!
//! It implements the generated `Guest` trait directly (not the SDK's
//! `Plugin` trait) so that it can return output the SDK would never produce,
//! such as invalid JSON. The host's test suite builds it from source and
//! asserts the typed error each behaviour must end in.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use capstan_plugin_sdk::bindings::Guest;
use capstan_plugin_sdk::bindings::capstan::plugin::host::log;
use capstan_plugin_sdk::bindings::capstan::plugin::types::{
    App, Component, Facts, Hook, HookOutcome, LogLevel, PluginError, PluginInfo, WorkloadKind,
};

/// Every behaviour, by the chart name that selects it.
const BEHAVIOURS: &[&str] = &[
    "loop",
    "sleep",
    "sleep-loop",
    "memory",
    "recursion",
    "huge-output",
    "log-spam",
    "stdout-spam",
    "panic",
    "trap",
    "invalid-json",
    "not-an-object",
    "read-file",
    "read-env",
    "clock-and-random",
    "volumes",
    "residue",
    "well-behaved",
];

struct Hostile;

impl Guest for Hostile {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "hostile".into(),
            version: "0.0.1".into(),
            charts: BEHAVIOURS.iter().map(|s| s.to_string()).collect(),
            hooks: vec![Hook::SemanticCheck],
            decides_workloads: true,
        }
    }

    fn overrides(app: App, facts: Facts, chart: String) -> Result<String, PluginError> {
        match chart.as_str() {
            "loop" => spin_forever(),
            // A WASI monotonic-clock pollable: the host makes it ready at
            // once, so this returns.
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_secs(3600));
                Ok("{\"slept\":true}".into())
            }
            // Sleeps that never add up: only the deadline ends it.
            "sleep-loop" => loop {
                std::thread::sleep(std::time::Duration::from_millis(10));
            },
            "memory" => balloon(),
            "recursion" => Ok(format!("{{\"depth\":{}}}", recurse(0, &mut [0u8; 64]))),
            "huge-output" => Ok(format!("{{\"blob\":\"{}\"}}", "x".repeat(4 << 20))),
            "log-spam" => {
                for i in 0u64.. {
                    log(LogLevel::Info, &format!("line {i} of a log flood"));
                }
                Ok("{}".into())
            }
            "stdout-spam" => {
                for i in 0u64.. {
                    println!("line {i} of a stdout flood");
                }
                Ok("{}".into())
            }
            "panic" => panic!("the hostile plugin panicked on purpose"),
            "trap" => trap(),
            "invalid-json" => Ok("{\"unterminated\": ".into()),
            "not-an-object" => Ok("[1, 2, 3]".into()),
            "read-file" => match std::fs::read_to_string("/etc/passwd") {
                Ok(text) => Ok(format!("{{\"stolen\":{}}}", text.len())),
                Err(e) => Err(PluginError::Failed(format!("read-file denied: {e}"))),
            },
            "read-env" => {
                let vars: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
                let args: Vec<String> = std::env::args().collect();
                if vars.is_empty() && args.is_empty() {
                    Err(PluginError::Failed(
                        "read-env denied: no variables, no args".into(),
                    ))
                } else {
                    Ok(format!(
                        "{{\"vars\":{},\"args\":{}}}",
                        vars.len(),
                        args.len()
                    ))
                }
            }
            "clock-and-random" => Ok(clock_and_random(&app, &facts)),
            // Tells what the facts reveal of local volumes: a plugin must
            // see only those its own app mounts.
            "volumes" => Ok(seen_volumes(&facts)),
            "residue" => Ok(residue(&app)),
            "well-behaved" => Ok(format!("{{\"app\":\"{}\",\"ok\":true}}", app.name)),
            other => Err(PluginError::Unsupported(format!("chart {other}"))),
        }
    }

    fn workload_kind(
        _app: App,
        _facts: Facts,
        component: Component,
    ) -> Result<WorkloadKind, PluginError> {
        match component.chart.as_str() {
            // The volume-facts app leaves the decision to the host.
            "volumes" => Err(PluginError::Unsupported("not deciding".into())),
            _ => spin_forever(),
        }
    }

    fn lifecycle(_hook: Hook, _app: App, _facts: Facts) -> Result<HookOutcome, PluginError> {
        Ok(HookOutcome::Veto(
            "the hostile plugin vetoes everything".into(),
        ))
    }
}

capstan_plugin_sdk::bindings::__export_override_plugin!(Hostile with_types_in capstan_plugin_sdk::bindings);

fn spin_forever() -> ! {
    let mut x: u64 = 0;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

fn balloon() -> Result<String, PluginError> {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk = vec![0u8; 1 << 20];
        chunk[0] = hoard.len() as u8;
        hoard.push(std::hint::black_box(chunk));
    }
}

#[allow(unconditional_recursion)]
fn recurse(depth: u64, pad: &mut [u8; 64]) -> u64 {
    pad[(depth % 64) as usize] = depth as u8;
    let mut next = *pad;
    std::hint::black_box(&mut next);
    recurse(depth + 1, &mut next) + u64::from(next[0])
}

#[cfg(target_family = "wasm")]
fn trap() -> ! {
    core::arch::wasm32::unreachable()
}

#[cfg(not(target_family = "wasm"))]
fn trap() -> ! {
    std::process::abort()
}

/// A counter in the data segment (part of the component's memory image).
static CALLS: AtomicU64 = AtomicU64::new(7);

/// A page-spread buffer in zero-initialised memory, past the image.
static MARKS: [AtomicU8; RESIDUE_BYTES] = [const { AtomicU8::new(0) }; RESIDUE_BYTES];

const RESIDUE_BYTES: usize = 256 << 10;

/// What an earlier call left in this instance's memory, then leaves some
/// of its own: the data-segment counter as it was (7 in a fresh image),
/// how many bytes of the zeroed buffer and of a fresh heap allocation
/// were not zero, and the app an earlier call wrote there, if any. A host
/// that reuses memory without resetting it shows a count above 7, nonzero
/// bytes or a name.
fn residue(app: &App) -> String {
    let calls = CALLS.fetch_add(1, Ordering::SeqCst);
    let dirty = MARKS
        .iter()
        .filter(|b| b.load(Ordering::SeqCst) != 0)
        .count();
    let mut left = Vec::new();
    for b in MARKS.iter().take(64) {
        match b.load(Ordering::SeqCst) {
            0 => break,
            c => left.push(c),
        }
    }
    for (i, b) in app.name.bytes().chain(std::iter::once(b'!')).enumerate() {
        MARKS[i].store(b, Ordering::SeqCst);
    }
    for i in (4096..RESIDUE_BYTES).step_by(4096) {
        MARKS[i].store(0xa5, Ordering::SeqCst);
    }
    let mut heap = vec![0u8; 512 << 10];
    let heap_dirty = heap.iter().filter(|b| **b != 0).count();
    heap.iter_mut().step_by(4096).for_each(|b| *b = 0x5a);
    std::hint::black_box(&heap);
    format!(
        "{{\"calls\":{calls},\"dirty\":{dirty},\"heap_dirty\":{heap_dirty},\"left\":\"{}\"}}",
        String::from_utf8_lossy(&left)
    )
}

/// `{"seen": ["name@node:hostPath", ...]}` of every local volume in the
/// facts.
fn seen_volumes(facts: &Facts) -> String {
    let seen: Vec<String> = facts
        .local_volumes
        .iter()
        .map(|v| format!("\"{}@{}:{}\"", v.name, v.node, v.host_path))
        .collect();
    format!("{{\"seen\":[{}]}}", seen.join(","))
}

/// What a plugin can learn of time and randomness: the host must make both
/// deterministic for the same inputs.
fn clock_and_random(app: &App, facts: &Facts) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let monotonic = std::time::Instant::now();
    let hash = RandomState::new().hash_one(&app.name);
    format!(
        "{{\"now\":{now},\"elapsed\":{},\"hash\":{hash},\"mode\":\"{:?}\"}}",
        monotonic.elapsed().as_nanos(),
        facts.system_mode
    )
}
