//! Sandbox benchmarks.
//!
//! - `overrides/capstan`: one `overrides` call of the storage example plugin
//!   through capstan's sandbox on a warm host: a fresh store and instance
//!   from the pre-instantiated component, with every limit and capture on.
//! - `overrides/bare-wasmtime`: the same component and call in a bare
//!   wasmtime loop: default engine, full WASI linked, no limits, no capture.
//! - `load/compile` against `load/cached`: compiling the component against
//!   loading it from capstan's compiled-component cache.
//!
//! Run with `cargo bench -p capstan --bench sandbox` after
//! `cargo xtask plugins` (which builds the plugin components).

use std::path::PathBuf;

use capstan::sandbox::{App, CallContext, ComponentCache, Facts, Policy, Sandbox};
use criterion::{Criterion, criterion_group, criterion_main};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

mod bare {
    wasmtime::component::bindgen!({
        path: "../wit",
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

fn facts() -> Facts {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../example-plugins/storage/facts/simplex.yaml");
    let text = std::fs::read_to_string(path).expect("reading the example facts");
    Facts::from_yaml(&text).expect("parsing the example facts")
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

fn wit_facts() -> wit::Facts {
    wit::Facts {
        system_mode: wit::SystemMode::Simplex,
        controller_count: 1,
        worker_count: 1,
        nodes: vec![wit::Node {
            name: "controller-0".into(),
            roles: vec![wit::NodeRole::Controller, wit::NodeRole::Worker],
            labels: vec![wit::Label {
                key: "kubernetes.io/hostname".into(),
                value: "controller-0".into(),
            }],
            schedulable: true,
        }],
        storage_backends: vec![wit::StorageBackend {
            name: "ceph-store".into(),
            kind: wit::StorageKind::Ceph,
            replication: 1,
            monitors: vec!["192.168.204.2:6789".into()],
            pools: vec!["kube-rbd".into()],
            is_default: true,
        }],
        local_volumes: vec![],
        kubernetes_version: "1.30.2".into(),
        extra: r#"{"region":"lab-1"}"#.into(),
    }
}

fn overrides(c: &mut Criterion) {
    let wasm = storage_wasm();
    let mut group = c.benchmark_group("overrides");

    let sandbox = Sandbox::new(Policy::new()).expect("sandbox");
    let plugin = sandbox.load("storage", &wasm).expect("loading storage");
    let (ctx, app, facts) = (
        CallContext::new([1; 32]),
        App {
            name: "bench".into(),
            version: "1.0.0".into(),
        },
        facts(),
    );
    group.bench_function("capstan", |b| {
        b.iter(|| {
            plugin
                .overrides(&ctx, &app, &facts, "rbd-provisioner")
                .expect("overrides")
        })
    });

    let engine = Engine::default();
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
    let wit_facts = wit_facts();
    group.bench_function("bare-wasmtime", |b| {
        b.iter(|| {
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
        })
    });
    group.finish();
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

criterion_group!(benches, overrides, loading);
criterion_main!(benches);
