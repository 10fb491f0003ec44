//! Sandbox benchmarks.
//!
//! - `overrides/capstan`: one `overrides` call of the storage example plugin
//!   (chart `rbd-provisioner`, the simplex facts) through capstan's sandbox
//!   on a warm host: a fresh store and instance from the pre-instantiated
//!   component, with every limit and capture on, and the returned JSON
//!   checked to be one object (not built: the lifecycle parses the text
//!   once, into its own values). `overrides/capstan-values` adds that
//!   parse: the whole cost of a chart's answer to the lifecycle.
//! - `overrides/bare-wasmtime`: the floor: the same component and call in a
//!   bare wasmtime loop on an engine with the sandbox's pooling allocator
//!   configuration ([`capstan::sandbox::pooling_config`]), a fresh store per
//!   call, an empty WASI context, no limits, no capture, the JSON text
//!   returned as it is.
//! - `overrides/floor` and `overrides/floor-no-keep`: the true floor: the
//!   same call with no WASI (its imports defined as traps, which the call
//!   never reaches), a unit store, `InstancePre`, the sandbox's pooling
//!   allocator with copy-on-write images and its keep-resident settings
//!   (memory and tables reset in place, found by `PAGEMAP_SCAN`); the
//!   second without the keep-resident settings.
//! - `load/compile` against `load/cached`: compiling the component against
//!   loading it from capstan's compiled-component cache.
//! - `python/overrides`: the same call through capstan's sandbox on the
//!   Python twin of the storage plugin (`example-plugins/python/storage`,
//!   componentize-py: CPython initialised ahead of time into the
//!   component's memory image, so each call's fresh instance starts from a
//!   copy-on-write image of it), checked against the same fixture.
//! - `python/load-cached`: loading that component from the
//!   compiled-component cache (hashing its bytes, mapping the compiled
//!   file), and `python/load-pre`: the cached load plus linking
//!   (`instantiate_pre`) and the `info` call, what `Sandbox::load` does for a
//!   cached component, in a new sandbox each time (`python/sandbox-new`
//!   is that part alone).
//!
//! The Python rows read `<target>/python-plugins/storage.wasm`, which the
//! e2e tests build (`cargo test -p capstan --features capstan/test-hooks
//! --test e2e python_plugins`); without it they are skipped with a line.
//!
//! Before timing, both `overrides` outputs are checked equal to
//! `benches/peers/fixtures/rbd-provisioner.simplex.json`, which the peers
//! benchmark (Extism, Python) checks its outputs against too, and the facts
//! equal to that benchmark's `simplex.json`. Run with
//! `cargo bench -p capstan --bench sandbox` after `cargo xtask plugins`
//! (which builds the plugin components); `cargo xtask peers` runs the
//! `overrides` group and the peers in one go (docs/src/developing/performance.md).

/// The binary's allocator, so that the bench measures what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;

use capstan::sandbox::{CallContext, ComponentCache, Policy, Sandbox, pooling_config};

use capstan::model::{App, Facts, NodeRole, StorageKind, SystemMode};
use criterion::{Criterion, criterion_group, criterion_main};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

mod bare {
    wasmtime::component::bindgen!({
        path: "../wit/v0.1",
        world: "capstan:plugin/override-plugin",
    });
}

use bare::capstan::plugin::types as wit;

fn storage_wasm() -> Vec<u8> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let path = target.join("wasm32-wasip2/release/capstan_example_storage.wasm");
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "reading {}: {e}; build the plugins first with `cargo xtask plugins`",
            path.display()
        )
    })
}

/// The Python storage plugin's component, when the e2e tests built it.
fn python_storage_wasm() -> Option<Vec<u8>> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let path = target.join("python-plugins/storage.wasm");
    match std::fs::read(&path) {
        Ok(wasm) => Some(wasm),
        Err(e) => {
            eprintln!(
                "python rows skipped: reading {}: {e}; build it with `cargo test -p capstan --features capstan/test-hooks --test e2e python_plugins`",
                path.display()
            );
            None
        }
    }
}

fn facts() -> Facts {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../example-plugins/storage/facts/simplex.yaml");
    let text = std::fs::read_to_string(path).expect("reading the example facts");
    Facts::from_yaml(&text).expect("parsing the example facts")
}

/// A file of the peers benchmark's fixtures (`benches/peers/fixtures`).
fn peers_fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../benches/peers/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

struct BareState {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for BareState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wit::Host for BareState {}

impl bare::capstan::plugin::host::Host for BareState {
    fn log(&mut self, _level: wit::LogLevel, _message: String) {}
}

/// The facts as the bare loop's bindings type them (what the sandbox's
/// own conversion does).
fn bare_facts(facts: &Facts) -> wit::Facts {
    wit::Facts {
        system_mode: match facts.system_mode {
            SystemMode::Simplex => wit::SystemMode::Simplex,
            SystemMode::Duplex => wit::SystemMode::Duplex,
            SystemMode::Standard => wit::SystemMode::Standard,
        },
        controller_count: facts.controller_count,
        worker_count: facts.worker_count,
        nodes: facts
            .nodes
            .iter()
            .map(|n| wit::Node {
                name: n.name.clone(),
                roles: n
                    .roles
                    .iter()
                    .map(|r| match r {
                        NodeRole::Controller => wit::NodeRole::Controller,
                        NodeRole::Worker => wit::NodeRole::Worker,
                        NodeRole::Storage => wit::NodeRole::Storage,
                    })
                    .collect(),
                labels: n
                    .labels
                    .iter()
                    .map(|(key, value)| wit::Label {
                        key: key.clone(),
                        value: value.clone(),
                    })
                    .collect(),
                schedulable: n.schedulable,
            })
            .collect(),
        storage_backends: facts
            .storage_backends
            .iter()
            .map(|b| wit::StorageBackend {
                name: b.name.clone(),
                kind: match b.kind {
                    StorageKind::Ceph => wit::StorageKind::Ceph,
                    StorageKind::CephRook => wit::StorageKind::CephRook,
                    StorageKind::Lvm => wit::StorageKind::Lvm,
                    StorageKind::Nfs => wit::StorageKind::Nfs,
                    StorageKind::External => wit::StorageKind::External,
                },
                replication: b.replication,
                monitors: b.monitors.iter().map(|m| m.address().to_string()).collect(),
                pools: b.pools.clone(),
                is_default: b.is_default,
            })
            .collect(),
        local_volumes: vec![],
        kubernetes_version: facts.kubernetes_version.clone(),
        extra: facts.extra.to_string(),
    }
}

fn overrides(c: &mut Criterion) {
    let wasm = storage_wasm();
    let facts = facts();
    assert_eq!(
        Facts::from_yaml(&peers_fixture("simplex.json")).expect("the peers' facts"),
        facts,
        "the peers benchmark's facts differ from the example's"
    );
    assert!(facts.local_volumes.is_empty(), "the bare loop passes none");
    let expected: serde_json::Value =
        serde_json::from_str(&peers_fixture("rbd-provisioner.simplex.json"))
            .expect("the expected overrides");
    let mut group = c.benchmark_group("overrides");

    let policy = Policy::new();
    let sandbox = Sandbox::new(policy.clone()).expect("sandbox");
    let plugin = sandbox.load("storage", &wasm).expect("loading storage");
    let (ctx, app) = (
        CallContext::new([1; 32]),
        App {
            name: "bench".into(),
            version: "1.0.0".into(),
        },
    );
    let call = || {
        plugin
            .overrides(&ctx, &app, &facts, "rbd-provisioner")
            .expect("overrides")
    };
    assert_eq!(
        serde_json::Value::Object(call().to_map().expect("a JSON object")),
        expected,
        "capstan's output"
    );
    group.bench_function("capstan", |b| b.iter(call));
    // What the lifecycle does with each chart's answer: the call, then its
    // text parsed into the values it merges.
    group.bench_function("capstan-values", |b| {
        b.iter(|| capstan::values::parse_json(call().as_str()).expect("the values"))
    });

    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pooling_config(&policy)));
    let engine = Engine::new(&config).expect("the floor's engine");
    let component = Component::new(&engine, &wasm).expect("compiling");
    let mut linker = Linker::<BareState>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).expect("linking wasi");
    bare::OverridePlugin::add_to_linker::<BareState, HasSelf<BareState>>(&mut linker, |s| s)
        .expect("linking host");
    let pre = bare::OverridePluginPre::new(linker.instantiate_pre(&component).expect("pre"))
        .expect("exports");
    let wit_app = wit::App {
        name: "bench".into(),
        version: "1.0.0".into(),
    };
    let wit_facts = bare_facts(&facts);
    let bare_call = || {
        let mut store = Store::new(
            &engine,
            BareState {
                wasi: WasiCtx::builder().build(),
                table: ResourceTable::new(),
            },
        );
        let plugin = pre.instantiate(&mut store).expect("instantiate");
        plugin
            .call_overrides(&mut store, &wit_app, &wit_facts, "rbd-provisioner")
            .expect("call")
            .expect("plugin ok")
    };
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&bare_call()).expect("JSON"),
        expected,
        "the floor's output"
    );
    group.bench_function("bare-wasmtime", |b| b.iter(bare_call));

    // Toward the true floor: no WASI at all (every WASI import a trap, which
    // this call never reaches), a unit store, `InstancePre`, the pooling
    // allocator with copy-on-write images and the sandbox's keep-resident
    // settings (`floor`); `floor-no-keep` is the same without them (a
    // slot's memory and tables given back to the kernel after each call).
    for (id, keep) in [("floor", true), ("floor-no-keep", false)] {
        let mut pool = pooling_config(&policy);
        if !keep {
            pool.linear_memory_keep_resident(0)
                .table_keep_resident(0)
                .pagemap_scan(wasmtime::Enabled::No);
        }
        let mut config = Config::new();
        config
            .wasm_component_model(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config).expect("the floor's engine");
        let component = Component::new(&engine, &wasm).expect("compiling");
        let mut linker = Linker::<FloorState>::new(&engine);
        bare::OverridePlugin::add_to_linker::<FloorState, HasSelf<FloorState>>(&mut linker, |s| s)
            .expect("linking host");
        linker
            .define_unknown_imports_as_traps(&component)
            .expect("WASI as traps");
        let pre = bare::OverridePluginPre::new(linker.instantiate_pre(&component).expect("pre"))
            .expect("exports");
        let floor_call = || {
            let mut store = Store::new(&engine, FloorState);
            let plugin = pre.instantiate(&mut store).expect("instantiate");
            plugin
                .call_overrides(&mut store, &wit_app, &wit_facts, "rbd-provisioner")
                .expect("call")
                .expect("plugin ok")
        };
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&floor_call()).expect("JSON"),
            expected,
            "the floor's output"
        );
        group.bench_function(id, |b| b.iter(floor_call));
    }
    group.finish();
}

/// The store data of the floor rows: nothing but the `log` import.
struct FloorState;

impl wit::Host for FloorState {}

impl bare::capstan::plugin::host::Host for FloorState {
    fn log(&mut self, _level: wit::LogLevel, _message: String) {}
}

fn loading(c: &mut Criterion) {
    let wasm = storage_wasm();
    let sandbox = Sandbox::new(Policy::new()).expect("sandbox");
    let engine = sandbox.engine().clone();
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = ComponentCache::open(dir.path()).expect("cache");
    cache
        .load_or_compile(&engine, "storage", &wasm)
        .expect("warming the cache");

    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    group.bench_function("compile", |b| {
        b.iter(|| Component::new(&engine, &wasm).expect("compile"))
    });
    group.bench_function("cached", |b| {
        b.iter(|| {
            cache
                .load_or_compile(&engine, "storage", &wasm)
                .expect("cached load")
        })
    });
    group.finish();
}

fn python(c: &mut Criterion) {
    let Some(wasm) = python_storage_wasm() else {
        return;
    };
    let facts = facts();
    let expected: serde_json::Value =
        serde_json::from_str(&peers_fixture("rbd-provisioner.simplex.json"))
            .expect("the expected overrides");
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = ComponentCache::open(dir.path()).expect("cache");
    let sandbox = Sandbox::with_cache(Policy::new(), cache.clone()).expect("sandbox");
    let plugin = sandbox
        .load("storage", &wasm)
        .expect("loading the Python storage plugin");
    let (ctx, app) = (
        CallContext::new([1; 32]),
        App {
            name: "bench".into(),
            version: "1.0.0".into(),
        },
    );
    let call = || {
        plugin
            .overrides(&ctx, &app, &facts, "rbd-provisioner")
            .expect("overrides")
    };
    assert_eq!(
        serde_json::Value::Object(call().to_map().expect("a JSON object")),
        expected,
        "the Python plugin's output"
    );
    concurrent_memory(&plugin, &facts);
    let mut group = c.benchmark_group("python");
    group.sample_size(20);
    group.bench_function("overrides", |b| b.iter(call));
    let engine = sandbox.engine().clone();
    group.bench_function("load-cached", |b| {
        b.iter(|| {
            cache
                .load_or_compile(&engine, "storage", &wasm)
                .expect("cached load")
        })
    });
    // The parts of a cached load: hashing the component to find its entry,
    // reading the entry, checking the entry's CRC; the rest of
    // `load-cached` is wasmtime's deserialize (a copy into executable
    // memory, and its own checks).
    {
        use sha2::{Digest, Sha256};
        let entry = cache.entry_path(&engine, &wasm);
        group.bench_function("hash-component", |b| b.iter(|| Sha256::digest(&wasm)));
        group.bench_function("read-entry", |b| {
            b.iter(|| std::fs::read(&entry).expect("reading the entry"))
        });
        let bytes = std::fs::read(&entry).expect("reading the entry");
        group.bench_function("check-entry", |b| b.iter(|| crc32fast::hash(&bytes)));
    }
    // What `load-pre` pays besides the load: the engine and its ticker.
    group.bench_function("sandbox-new", |b| {
        b.iter(|| Sandbox::with_cache(Policy::new(), cache.clone()).expect("sandbox"))
    });
    group.bench_function("load-pre", |b| {
        b.iter(|| {
            // A sandbox of its own each time, so that its in-memory map of
            // components is empty and the load goes to the disk cache.
            let fresh = Sandbox::with_cache(Policy::new(), cache.clone()).expect("sandbox");
            fresh.load("storage", &wasm).expect("load")
        })
    });
    group.finish();
}

/// The resident memory one concurrent Python call costs: `CALLERS`
/// threads call the plugin in a loop for a second while a sampler reads
/// the process's RSS; printed, not a criterion row. Each call's instance
/// maps the pre-initialised memory image copy-on-write, so what it costs
/// is the pages it writes, not the image's size.
fn concurrent_memory(plugin: &capstan::sandbox::Plugin, facts: &Facts) {
    const CALLERS: usize = 8;
    fn rss_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
            .unwrap_or(0)
    }
    let app = App {
        name: "bench".into(),
        version: "1.0.0".into(),
    };
    let before = rss_kib();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let peak = std::thread::scope(|scope| {
        for _ in 0..CALLERS {
            scope.spawn(|| {
                let ctx = CallContext::new([1; 32]);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    plugin
                        .overrides(&ctx, &app, facts, "rbd-provisioner")
                        .expect("overrides");
                    calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
        let mut peak = before;
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_secs(1) {
            peak = peak.max(rss_kib());
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        peak
    });
    let grown = peak.saturating_sub(before);
    println!(
        "python/concurrent-memory: {CALLERS} concurrent calls ({} in 1 s) raised RSS by {:.1} MiB at peak, {:.2} MiB per concurrent call",
        calls.load(std::sync::atomic::Ordering::Relaxed),
        grown as f64 / 1024.0,
        grown as f64 / 1024.0 / CALLERS as f64
    );
}

criterion_group!(benches, overrides, loading, python);
criterion_main!(benches);
