//! Peers benchmark: the storage example plugin's `overrides` computation
//! for the `rbd-provisioner` chart on the simplex facts, as an Extism
//! plugin run by the `extism` crate.
//!
//! - `overrides/extism-fresh`: a fresh plugin per call from the compiled
//!   module (`Plugin::new_from_compiled`, Extism's way to get a clean
//!   instance), then the call; the counterpart of capstan's fresh instance
//!   per call.
//! - `overrides/extism-reused`: one plugin called again and again (its
//!   instance and memory survive from one call to the next).
//! - `overrides/extism-new`: `Plugin::new` per call, which compiles the
//!   module every time (what the README's first example does).
//!
//! Every call runs with a 2 s timeout and a 64 MiB memory cap (capstan's
//! default policy) and parses the returned JSON, as capstan's call does.
//! Before timing, the output is checked equal to
//! `fixtures/rbd-provisioner.simplex.json`, which capstan's own bench
//! (`host/benches/sandbox.rs`) checks its output against too.
//!
//! Run everything in one go with `cargo xtask peers` from the workspace
//! root; this bench alone with
//! `cargo bench --manifest-path benches/peers/Cargo.toml` after building
//! the plugin (`cargo build --release --target wasm32-unknown-unknown
//! --manifest-path benches/peers/Cargo.toml -p capstan-peers-extism-storage`).

use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use extism::{CompiledPlugin, Manifest, Plugin, PluginBuilder, Wasm};
use serde_json::{Value, json};

/// Wasm pages (64 KiB) in capstan's default 64 MiB memory cap.
const MEMORY_PAGES: u32 = 1024;

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn plugin_wasm() -> Vec<u8> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| here().join("target"));
    let path = target.join("wasm32-unknown-unknown/release/capstan_peers_extism_storage.wasm");
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "reading {}: {e}; build it with `cargo build --release --target wasm32-unknown-unknown \
             --manifest-path benches/peers/Cargo.toml -p capstan-peers-extism-storage`",
            path.display()
        )
    })
}

fn fixture(name: &str) -> Value {
    let path = here().join("fixtures").join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

fn call(plugin: &mut Plugin, input: &[u8]) -> Value {
    let out: &[u8] = plugin.call("overrides", input).expect("overrides call");
    serde_json::from_slice(out).expect("overrides are JSON")
}

fn overrides(c: &mut Criterion) {
    let wasm = plugin_wasm();
    let input = serde_json::to_vec(&json!({
        "app": {"name": "bench", "version": "1.0.0"},
        "facts": fixture("simplex.json"),
        "chart": "rbd-provisioner",
    }))
    .expect("input JSON");
    let expected = fixture("rbd-provisioner.simplex.json");
    let manifest = || {
        Manifest::new([Wasm::data(wasm.clone())])
            .with_memory_max(MEMORY_PAGES)
            .with_timeout(Duration::from_secs(2))
    };
    let builder = || {
        PluginBuilder::new(manifest())
            .with_wasi(false)
            .with_cache_disabled()
    };
    let compiled = CompiledPlugin::new(builder()).expect("compiling the Extism plugin");

    let mut reused = Plugin::new_from_compiled(&compiled).expect("plugin");
    assert_eq!(
        call(&mut reused, &input),
        expected,
        "Extism's output differs from capstan's"
    );
    let mut fresh = Plugin::new_from_compiled(&compiled).expect("plugin");
    assert_eq!(call(&mut fresh, &input), expected);

    let mut group = c.benchmark_group("overrides");
    group.bench_function("extism-fresh", |b| {
        b.iter(|| {
            let mut plugin = Plugin::new_from_compiled(&compiled).expect("plugin");
            call(&mut plugin, &input)
        })
    });
    group.bench_function("extism-reused", |b| b.iter(|| call(&mut reused, &input)));
    group.sample_size(10);
    group.bench_function("extism-new", |b| {
        b.iter(|| {
            let mut plugin = builder().build().expect("plugin");
            call(&mut plugin, &input)
        })
    });
    group.finish();
}

criterion_group!(benches, overrides);
criterion_main!(benches);
