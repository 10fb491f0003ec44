//! The daemon end to end through its API on a unix socket, in process,
//! with the directory target and the five-chart example app (`shop`, with
//! the ha-replicas plugin):
//!
//! - criterion: one re-apply of the app, from the request to the finished
//!   operation (target: median under 100 ms);
//! - printed once before criterion runs: 50 apps applied concurrently
//!   (total time), and the process's peak resident memory with 100 apps
//!   uploaded and 50 applied (target: under 150 MiB);
//! - criterion: a re-evaluation of the 100 apps, all applied (what the
//!   daemon runs when the facts change: every app planned again, plugin
//!   calls and renders, nothing written; target: under 2 s), with the
//!   plugin calls one takes printed once.
//!
//! Needs the plugin built: `cargo xtask plugins` first.

/// The binary's allocator, so that the bench measures what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::api::{self, Address, Client, StartedBody};
use capstan::bundle;
use capstan::kube::DirTarget;
use capstan::lifecycle::{Lifecycle, Options};
use capstan::model::Facts;
use capstan::store::{HistoryEntry, Outcome};
use capstan::trust::{SigningKey, TrustStore};
use criterion::Criterion;
use hyper::Method;

const CONCURRENT_APPS: usize = 50;
const UPLOADED_APPS: usize = 100;

struct Bench {
    _dir: tempfile::TempDir,
    root: PathBuf,
    key: SigningKey,
    client: Client,
    lifecycle: Lifecycle,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn plugin() -> Option<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    let path = target.join("wasm32-wasip2/release/capstan_example_ha_replicas.wasm");
    path.exists().then_some(path)
}

fn copy_dir(from: &Path, to: &Path) {
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

impl Bench {
    fn start(wasm: &Path) -> Bench {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let key = SigningKey::generate("bench").unwrap();
        let mut trust = TrustStore::empty();
        trust
            .add_openssh(&key.public_key_line().unwrap(), Path::new("bench.pub"))
            .unwrap();
        let facts_text = std::fs::read_to_string(
            workspace().join("example-plugins/ha-replicas/facts/duplex.yaml"),
        )
        .unwrap();
        let mut options = Options::new(
            root.join("state"),
            trust,
            Arc::new(DirTarget::new(root.join("applied"))),
        );
        options.facts = Some(Facts::from_yaml(&facts_text).unwrap());
        let lifecycle = Lifecycle::open(options).unwrap();
        let kept = lifecycle.clone();
        let socket = root.join("state/capstan.sock");
        let address = Address::Unix(socket.clone());
        let serve_address = address.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime
                .block_on(api::serve(
                    lifecycle,
                    &serve_address,
                    None,
                    std::future::pending(),
                ))
                .unwrap();
        });
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let bench = Bench {
            _dir: dir,
            root,
            key,
            client: Client::new(address, None).unwrap(),
            lifecycle: kept,
        };
        let _ = wasm;
        bench
    }

    /// The shop app renamed to `name`, built and signed.
    fn bundle(&self, name: &str, wasm: &Path) -> Vec<u8> {
        let app = self.root.join(format!("src-{name}"));
        copy_dir(&workspace().join("example-plugins/apps/shop"), &app);
        std::fs::copy(wasm, app.join("plugins/ha-replicas.wasm")).unwrap();
        let meta = app.join("capstan.yaml");
        let text = std::fs::read_to_string(&meta).unwrap();
        std::fs::write(
            &meta,
            text.replacen("name: shop", &format!("name: {name}"), 1),
        )
        .unwrap();
        let out = self.root.join(format!("{name}.tgz"));
        bundle::build(&app, &self.key, &out, &|_, _| Ok(())).unwrap();
        std::fs::read(out).unwrap()
    }

    fn upload(&self, bytes: Vec<u8>) {
        let _: serde_json::Value = self
            .client
            .call(Method::POST, "/v1/apps", Some(("application/gzip", bytes)))
            .unwrap();
    }

    fn start_apply(&self, name: &str) -> StartedBody {
        self.client
            .call(Method::POST, &format!("/v1/apps/{name}/apply"), None)
            .unwrap()
    }

    fn wait(&self, name: &str, started: &StartedBody) {
        let path = format!("/v1/apps/{name}/operations/{}", started.operation.0);
        loop {
            let entry: HistoryEntry = self.client.call(Method::GET, &path, None).unwrap();
            if entry.outcome != Outcome::Running {
                assert_eq!(entry.outcome, Outcome::Succeeded, "{:?}", entry.message);
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

fn concurrency(wasm: &Path) -> Bench {
    let bench = Bench::start(wasm);
    let names: Vec<String> = (0..UPLOADED_APPS).map(|i| format!("shop-{i}")).collect();
    for name in &names {
        let bytes = bench.bundle(name, wasm);
        bench.upload(bytes);
    }
    let after_upload = peak_rss_mib();
    let started_at = Instant::now();
    let started: Vec<StartedBody> = names[..CONCURRENT_APPS]
        .iter()
        .map(|n| bench.start_apply(n))
        .collect();
    for (name, s) in names.iter().zip(&started) {
        bench.wait(name, s);
    }
    let took = started_at.elapsed();
    eprintln!(
        "daemon: {CONCURRENT_APPS} apps of 5 charts applied concurrently in {:.2} s \
         ({:.1} ms per app); peak RSS {after_upload:.1} MiB with {UPLOADED_APPS} apps uploaded, \
         {:.1} MiB after the concurrent applies (bench process, daemon in process)",
        took.as_secs_f64(),
        took.as_secs_f64() * 1000.0 / CONCURRENT_APPS as f64,
        peak_rss_mib()
    );
    bench
}

fn main() {
    let Some(wasm) = plugin() else {
        eprintln!("daemon bench: build the plugins first (`cargo xtask plugins`)");
        return;
    };
    let bench = concurrency(&wasm);
    let mut criterion = Criterion::default().configure_from_args();
    criterion.bench_function("daemon/apply_5_charts_through_api", |b| {
        b.iter(|| {
            let started = bench.start_apply("shop-0");
            bench.wait("shop-0", &started);
        })
    });
    let rest: Vec<(String, StartedBody)> = (CONCURRENT_APPS..UPLOADED_APPS)
        .map(|i| {
            let name = format!("shop-{i}");
            let started = bench.start_apply(&name);
            (name, started)
        })
        .collect();
    for (name, started) in &rest {
        bench.wait(name, started);
    }
    let calls = || plugin_calls(&bench.lifecycle.metrics().render());
    let before = calls();
    let began = Instant::now();
    let (planned, marked) = bench.lifecycle.reevaluate("bench");
    eprintln!(
        "daemon: re-evaluation of {planned} applied apps of 5 charts in {:.2} s, {} plugin calls, {marked} marked",
        began.elapsed().as_secs_f64(),
        calls() - before
    );
    let mut criterion = criterion.sample_size(10);
    criterion.bench_function("daemon/reevaluate_100_apps_of_5_charts", |b| {
        b.iter(|| bench.lifecycle.reevaluate("bench"))
    });
    criterion.final_summary();
}

/// The plugin calls the metrics count, every function together.
fn plugin_calls(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("capstan_plugin_call_duration_seconds_count"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}
