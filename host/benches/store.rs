//! The cluster store against SQLite (issue 26), on the real control plane
//! of `cargo xtask cluster up` (skipped, saying so, without one):
//!
//! - `store_ops`: one upload (begin and finish), one override set, one
//!   operation begun and finished, on each store; criterion's medians
//!   give operations per second;
//! - `cluster_start`: what a daemon starting to lead does with 1,000 apps
//!   in the cluster store — connect (CRDs checked), reconcile every app
//!   (one LIST, no write when nothing was interrupted), list them;
//! - `failover` (`CAPSTAN_BENCH_FAILOVER=1`, about 3 minutes): two
//!   `capstan serve --store cluster` processes with client-go's Lease
//!   timings; the leader is killed (SIGKILL) ten times, each time timed
//!   until the other has taken the Lease, reconciled, answers `/readyz`
//!   and has accepted a change (`platform event`); the median is printed.
//!
//! Build with the dev profile where the release profile is not built
//! (`cargo bench -p capstan --profile dev --bench store`).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capstan::kube::Connect;
use capstan::model::AppName;
use capstan::store::cluster::ClusterStore;
use capstan::store::{
    AppDoc, AppSpec, AppState, AppStatus, Finish, Operation, OverrideLayer, SqliteStore, Store,
    VersionRecord,
};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

const NAMESPACE: &str = "capstan-store-bench";
const START_APPS: usize = 1000;

fn control_plane(bench: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("CAPSTAN_CONTROL_PLANE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
                .join("cluster")
        });
    if !dir.join("capstan.kubeconfig").is_file() {
        eprintln!(
            "{bench}: no control plane at {} (`cargo xtask cluster up`): skipped",
            dir.display()
        );
        return None;
    }
    Some(dir)
}

fn kubectl(dir: &Path, args: &[&str]) {
    let _ = Command::new(dir.join("bin/kubectl"))
        .arg("--kubeconfig")
        .arg(dir.join("kubeconfig"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn fresh_namespace(dir: &Path, namespace: &str) {
    kubectl(
        dir,
        &[
            "delete",
            "namespace",
            namespace,
            "--wait=true",
            "--ignore-not-found",
        ],
    );
    kubectl(dir, &["create", "namespace", namespace]);
}

fn cluster_store(dir: &Path, namespace: &str) -> ClusterStore {
    ClusterStore::connect(
        &Connect::Kubeconfig {
            path: dir.join("capstan.kubeconfig"),
            context: None,
        },
        namespace,
    )
    .expect("the cluster store")
}

fn version(app: &AppName) -> VersionRecord {
    VersionRecord {
        app: app.clone(),
        version: "1.0.0".into(),
        bundle_dir: "/state/bundles/x/1.0.0".into(),
        bundle_digest: "0".repeat(64),
        signer: "release".into(),
        metadata: json!({"name": app.as_str(), "version": "1.0.0", "charts": [{"name": "web"}]}),
        uploaded_at: 0,
        source: None,
    }
}

fn ops(store: &dyn Store, label: &str, c: &mut Criterion) {
    let mut group = c.benchmark_group("store_ops");
    group.sample_size(20);
    let mut n = 0usize;
    group.bench_function(format!("{label}/upload"), |b| {
        b.iter(|| {
            n += 1;
            let app = AppName::new(format!("u{n}-{}", std::process::id())).unwrap();
            let id = store.begin_upload(&version(&app)).unwrap();
            store
                .finish_operation(id, &Finish::succeeded(AppState::Uploaded))
                .unwrap();
        });
    });
    let app = AppName::new(format!("ops-{}", std::process::id())).unwrap();
    let id = store.begin_upload(&version(&app)).unwrap();
    store
        .finish_operation(id, &Finish::succeeded(AppState::Uploaded))
        .unwrap();
    let mut i = 0u64;
    group.bench_function(format!("{label}/override-set"), |b| {
        b.iter(|| {
            i += 1;
            store
                .set_override(
                    &app,
                    "web",
                    &OverrideLayer::User,
                    &json!({"replicaCount": i}),
                )
                .unwrap();
        });
    });
    group.bench_function(format!("{label}/begin-and-finish"), |b| {
        b.iter(|| {
            let id = store
                .begin_operation(
                    &app,
                    Operation::Apply,
                    &[AppState::Uploaded, AppState::Applied],
                    AppState::Applying,
                )
                .unwrap();
            store
                .finish_operation(id, &Finish::succeeded(AppState::Applied))
                .unwrap();
        });
    });
    group.finish();
}

fn store_ops(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path()).unwrap();
    ops(&sqlite, "sqlite", c);
    let Some(cp) = control_plane("store_ops") else {
        return;
    };
    fresh_namespace(&cp, NAMESPACE);
    let cluster = cluster_store(&cp, NAMESPACE);
    ops(&cluster, "cluster", c);
}

fn cluster_start(c: &mut Criterion) {
    let Some(cp) = control_plane("cluster_start") else {
        return;
    };
    let namespace = "capstan-start-bench";
    fresh_namespace(&cp, namespace);
    let store = cluster_store(&cp, namespace);
    let filled = Instant::now();
    for i in 0..START_APPS {
        let name = AppName::new(format!("app-{i:04}")).unwrap();
        let doc = AppDoc {
            name: name.clone(),
            spec: AppSpec {
                versions: vec![version(&name)],
                ..AppSpec::default()
            },
            status: AppStatus {
                state: AppState::Applied,
                active_version: "1.0.0".into(),
                ..AppStatus::default()
            },
        };
        store.import_app(&doc).unwrap();
    }
    eprintln!(
        "cluster_start: {START_APPS} Apps written in {:?}",
        filled.elapsed()
    );
    let mut group = c.benchmark_group("cluster_start");
    group.sample_size(10);
    group.bench_function(format!("{START_APPS}-apps"), |b| {
        b.iter(|| {
            let store = cluster_store(&cp, namespace);
            let moved = store.reconcile_after_restart().unwrap();
            assert!(moved.is_empty());
            assert_eq!(store.list_apps().unwrap().len(), START_APPS);
        });
    });
    group.finish();
    kubectl(&cp, &["delete", "namespace", namespace, "--wait=false"]);
}

/// One `capstan serve --store cluster` replica.
struct Replica {
    dir: PathBuf,
    child: Option<Child>,
    args: Vec<String>,
}

impl Replica {
    fn start(dir: PathBuf, args: Vec<String>) -> Replica {
        let mut replica = Replica {
            dir,
            child: None,
            args,
        };
        replica.spawn();
        replica
    }

    fn spawn(&mut self) {
        let socket = self.dir.join("state/capstan.sock");
        let _ = std::fs::remove_file(&socket);
        let child = Command::new(env!("CARGO_BIN_EXE_capstan"))
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("capstan serve");
        self.child = Some(child);
        let started = Instant::now();
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            assert!(started.elapsed() < Duration::from_secs(60), "no socket");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn ready(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut stream) =
            std::os::unix::net::UnixStream::connect(self.dir.join("state/capstan.sock"))
        else {
            return false;
        };
        let _ = stream.write_all(b"GET /readyz HTTP/1.1\r\nHost: c\r\nConnection: close\r\n\r\n");
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer.starts_with("HTTP/1.1 200")
    }

    fn change(&self) -> bool {
        Command::new(env!("CARGO_BIN_EXE_capstan"))
            .args(["platform", "event", "failover-bench"])
            .env("CAPSTAN_STATE", self.dir.join("state"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

fn failover(_: &mut Criterion) {
    if std::env::var_os("CAPSTAN_BENCH_FAILOVER").is_none() {
        eprintln!("failover: set CAPSTAN_BENCH_FAILOVER=1 to run it (about 3 minutes)");
        return;
    }
    let Some(cp) = control_plane("failover") else {
        return;
    };
    let namespace = "capstan-failover-bench";
    fresh_namespace(&cp, namespace);
    let root = tempfile::tempdir().unwrap();
    let keys = root.path().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let replica = |name: &str| {
        let dir = root.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let args: Vec<String> = [
            "serve",
            "--state",
            dir.join("state").to_str().unwrap(),
            "--trust",
            keys.to_str().unwrap(),
            "--kubeconfig",
            cp.join("capstan.kubeconfig").to_str().unwrap(),
            "--store",
            "cluster",
            "--store-namespace",
            namespace,
            "--identity",
            name,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        Replica::start(dir, args)
    };
    let mut replicas = [replica("one"), replica("two")];
    let mut times = Vec::new();
    let leader = |replicas: &[Replica; 2]| loop {
        if let Some(i) = (0..2).find(|i| replicas[*i].ready()) {
            return i;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    for round in 0..10 {
        let lead = leader(&replicas);
        let other = 1 - lead;
        replicas[lead].kill();
        let killed = Instant::now();
        while !replicas[other].ready() {
            std::thread::sleep(Duration::from_millis(20));
        }
        while !replicas[other].change() {
            std::thread::sleep(Duration::from_millis(20));
        }
        let took = killed.elapsed();
        eprintln!("failover {round}: {took:?}");
        times.push(took);
        replicas[lead].spawn();
    }
    times.sort();
    eprintln!(
        "failover: median {:?} (min {:?}, max {:?}) over {} kills, lease 15 s / renew 10 s / retry 2 s",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1],
        times.len()
    );
    kubectl(&cp, &["delete", "namespace", namespace, "--wait=false"]);
}

criterion_group!(benches, store_ops, cluster_start, failover);
criterion_main!(benches);
