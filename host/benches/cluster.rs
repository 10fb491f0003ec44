//! Applying an app of 200 objects to a cluster (issue 11) against
//! `kube-double` on loopback: the first apply (every object created) and a
//! re-apply where nothing changed (every object dry-run, none written).
//!
//! The app: 100 ConfigMaps, 50 Services and 50 Deployments in one
//! namespace. Applies run with `no_wait` (the objects' readiness is the
//! double's simulated controllers, not the target's cost); one more
//! measurement waits for readiness with the double's controllers reporting
//! ready at their next tick. Before the criterion runs, one apply of each
//! kind is measured once and printed with objects per second and API
//! requests per object (counted from the double's request record).
//!
//! Build it with the dev profile where the release profile is not built
//! (`cargo bench -p capstan --profile dev --bench cluster`): the release
//! profile rebuilds wasmtime. Both the target and the double then run
//! unoptimised, so the numbers are an upper bound.
//!
//! Targets (issue 11): the first apply at most one write per object plus
//! discovery once per group-version; a no-change re-apply writes nothing;
//! 200 objects in under 1 s.
//!
//! `render_lookups` (issue 24) is on the real control plane instead: a
//! render with 50 `lookup`s through a cluster target against the same
//! render offline, and the lookups' share of the time. So is
//! `facts_watch` (issue 24): how soon a relabelled node reaches the
//! facts.

/// The binary's allocator, so that the bench measures what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstan::kube::cluster::RetryPolicy;
use capstan::kube::{
    ApplyOptions, ApplyTarget, ClusterOptions, ClusterTarget, ClusterView, Connect, NoProgress,
    Release, Resource, parse_manifests, plan_apply,
};
use capstan::lifecycle::{ClusterFacts, ClusterFactsOptions, FactsSource};
use capstan::render::chart::{Chart, ChartFile};
use capstan::render::{self, Capabilities, Lookup, LookupQuery, ReleaseInfo};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kube_double::{KubeDouble, Options};

const OBJECTS: usize = 200;

struct Bench {
    double: KubeDouble,
    target: ClusterTarget,
    desired: Vec<Resource>,
    _dir: tempfile::TempDir,
}

fn release() -> Release {
    Release {
        app: "bench".into(),
        chart: "web".into(),
        namespace: "bench".into(),
        release_name: "web".into(),
    }
}

fn manifests() -> String {
    let mut text = String::new();
    for i in 0..100 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata: {{k: v{i}}}\n"
        ));
    }
    for i in 0..50 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Service\nmetadata: {{name: s{i}}}\n\
             spec: {{selector: {{app: d{i}}}, ports: [{{port: 80}}]}}\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d{i}}}\n\
             spec: {{selector: {{matchLabels: {{app: d{i}}}}}, template: {{metadata: {{labels: {{app: d{i}}}}}, \
             spec: {{containers: [{{name: c, image: nginx}}]}}}}}}\n"
        ));
    }
    text
}

impl Bench {
    fn start() -> Bench {
        let double = KubeDouble::start(Options {
            ready_after: Duration::ZERO,
            ..Options::default()
        })
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        double.write_kubeconfig(&path).unwrap();
        let options = ClusterOptions {
            retry: RetryPolicy::default(),
            timeout: Duration::from_secs(60),
            poll_interval: Duration::from_millis(20),
            discovery_wait: Duration::from_secs(10),
        };
        let connect = Connect::Kubeconfig {
            path,
            context: None,
        };
        let target = ClusterTarget::connect(&connect, options).unwrap();
        let desired = parse_manifests(&manifests()).unwrap();
        assert_eq!(desired.len(), OBJECTS);
        Bench {
            double,
            target,
            desired,
            _dir: dir,
        }
    }

    fn apply(&self, options: &ApplyOptions) -> capstan::kube::Applied {
        let release = release();
        let plan = plan_apply(&self.target.applied(&release).unwrap(), &self.desired).unwrap();
        self.target
            .apply_with(&release, &plan, options, &NoProgress)
            .unwrap()
    }

    fn remove(&self) {
        self.target.remove(&release()).unwrap();
    }

    /// One apply, timed, with its request count.
    fn measure(&self, label: &str, options: &ApplyOptions) {
        self.double.clear_requests();
        let started = Instant::now();
        let applied = self.apply(options);
        let took = started.elapsed();
        let requests = self.double.requests();
        let writes = requests
            .iter()
            .filter(|r| r.method != "GET" && !r.query.contains("dryRun=All"))
            .count();
        println!(
            "{label}: {took:?}, {:.0} objects/s, {:.2} requests/object, {writes} writes, {} unchanged",
            OBJECTS as f64 / took.as_secs_f64(),
            requests.len() as f64 / OBJECTS as f64,
            applied.unchanged,
        );
    }
}

fn cluster(c: &mut Criterion) {
    let bench = Bench::start();
    let no_wait = ApplyOptions {
        no_wait: true,
        ..ApplyOptions::default()
    };
    let wait = ApplyOptions::default();
    bench.measure("first apply (no wait)", &no_wait);
    bench.measure("re-apply, nothing changed", &no_wait);
    bench.remove();
    bench.measure("first apply (waiting for readiness)", &wait);

    let mut group = c.benchmark_group("cluster");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(OBJECTS as u64));
    for (name, options) in [
        ("first_apply_200", &no_wait),
        ("first_apply_200_wait", &wait),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    bench.remove();
                    bench.double.clear_requests();
                    let started = Instant::now();
                    black_box(bench.apply(options));
                    total += started.elapsed();
                }
                total
            })
        });
    }
    bench.apply(&no_wait);
    group.bench_function("reapply_unchanged_200", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                bench.double.clear_requests();
                let started = Instant::now();
                black_box(bench.apply(&no_wait));
                total += started.elapsed();
            }
            total
        })
    });
    group.finish();
}

/// Lookups per render in `render_lookups`.
const LOOKUPS: usize = 50;

/// `lookup` through a cluster target, as a connected render reads (the
/// daemon's answerer adds a policy check and a per-render cache; every
/// object here is read once a render, so neither changes the count).
struct Live(Arc<ClusterTarget>);

impl Lookup for Live {
    fn lookup(&self, query: &LookupQuery) -> Result<serde_json::Value, String> {
        self.0.read_live(query).map_err(|e| e.to_string())
    }
}

/// A chart whose one template reads [`LOOKUPS`] ConfigMaps and writes a
/// ConfigMap from each.
fn lookup_chart() -> Chart {
    let template = format!(
        "{{{{- range $i := until {LOOKUPS} }}}}\n\
         {{{{- $cm := lookup \"v1\" \"ConfigMap\" \"lookup-bench\" (printf \"c%d\" $i) }}}}\n\
         ---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: copy-{{{{ $i }}}}\n\
         data:\n  k: {{{{ dig \"data\" \"k\" \"missing\" $cm | quote }}}}\n\
         {{{{- end }}}}\n"
    );
    let mut metadata = capstan::values::Map::new();
    metadata.insert("apiVersion".into(), "v2".into());
    metadata.insert("name".into(), "lookups".into());
    metadata.insert("version".into(), "1.0.0".into());
    Chart {
        metadata,
        dependencies: Vec::new(),
        values: capstan::values::Map::new(),
        schema: None,
        templates: vec![ChartFile {
            name: "templates/copies.yaml".into(),
            data: Arc::from(template.into_bytes()),
        }],
        files: Vec::new(),
        subcharts: Vec::new(),
    }
}

/// A render with [`LOOKUPS`] lookups against the real control plane
/// (`CAPSTAN_CONTROL_PLANE`, else `<target>/cluster`, brought up by
/// `cargo xtask cluster up`), against the same render offline (every
/// `lookup` an empty map): the lookups' share of the render time is
/// printed after the two. Skipped, saying so, when no control plane is
/// up.
/// The control plane of `cargo xtask cluster up`: its folder and
/// kubeconfig, or `None` (with a line saying `bench` is skipped).
fn control_plane(bench: &str) -> Option<(PathBuf, PathBuf)> {
    let dir = std::env::var_os("CAPSTAN_CONTROL_PLANE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
                .join("cluster")
        });
    let kubeconfig = dir.join("kubeconfig");
    if !kubeconfig.is_file() {
        eprintln!(
            "{bench}: no control plane at {} (`cargo xtask cluster up`): skipped",
            dir.display()
        );
        return None;
    }
    Some((dir, kubeconfig))
}

/// `kubectl ARGS` against the control plane with `stdin`; whether it
/// succeeded.
fn kubectl(dir: &Path, kubeconfig: &Path, args: &[&str], stdin: &str) -> bool {
    std::process::Command::new(dir.join("bin/kubectl"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            if let Some(mut stdin_pipe) = child.stdin.take() {
                stdin_pipe.write_all(stdin.as_bytes())?;
            }
            child.wait()
        })
        .is_ok_and(|s| s.success())
}

fn render_lookups(c: &mut Criterion) {
    let Some((dir, kubeconfig)) = control_plane("render_lookups") else {
        return;
    };
    let mut objects =
        String::from("apiVersion: v1\nkind: Namespace\nmetadata: {name: lookup-bench}\n");
    for i in 0..LOOKUPS {
        objects.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}, namespace: lookup-bench}}\ndata: {{k: v{i}}}\n"
        ));
    }
    if !kubectl(
        &dir,
        &kubeconfig,
        &["apply", "--server-side", "-f", "-"],
        &objects,
    ) {
        eprintln!("render_lookups: could not create the ConfigMaps: skipped");
        return;
    }
    let connect = Connect::Kubeconfig {
        path: kubeconfig,
        context: None,
    };
    let target = match ClusterTarget::connect(&connect, ClusterOptions::default()) {
        Ok(target) => Arc::new(target),
        Err(e) => {
            eprintln!("render_lookups: {e}: skipped");
            return;
        }
    };
    let chart = lookup_chart();
    let release = ReleaseInfo {
        name: "lookups".into(),
        namespace: "lookup-bench".into(),
        revision: 2,
        is_upgrade: true,
    };
    let caps = Capabilities::default();
    let values = capstan::values::Map::new();
    let live: Arc<dyn Lookup> = Arc::new(Live(target));
    let connected =
        || render::render_connected(black_box(&chart), &values, &release, &caps, &*live);
    match connected() {
        Ok(r) => {
            let text: String = r.manifests.iter().map(|m| m.content.clone()).collect();
            assert!(
                text.contains("k: \"v49\""),
                "the lookups read the live objects: {text}"
            );
        }
        Err(e) => panic!("render_lookups: {e}"),
    }
    let mut group = c.benchmark_group("render_lookups");
    group.bench_function("offline", |b| {
        b.iter(|| render::render(black_box(&chart), &values, &release, &caps));
    });
    group.bench_function("connected", |b| b.iter(connected));
    group.finish();
    let median = |f: &dyn Fn()| {
        let mut times: Vec<Duration> = (0..21)
            .map(|_| {
                let started = Instant::now();
                f();
                started.elapsed()
            })
            .collect();
        times.sort();
        times[times.len() / 2]
    };
    let offline = median(&|| {
        let _ = render::render(&chart, &values, &release, &caps);
    });
    let online = median(&|| {
        let _ = connected();
    });
    let share = 1.0 - offline.as_secs_f64() / online.as_secs_f64().max(f64::EPSILON);
    eprintln!(
        "render_lookups: {LOOKUPS} lookups: offline {offline:?}, connected {online:?} (medians of 21): \
         the lookups are {:.0}% of the connected render, {:?} each",
        share * 100.0,
        online.saturating_sub(offline) / LOOKUPS as u32
    );
}

/// The node `facts_watch` relabels: a kwok node of its own, cordoned so
/// that nothing is scheduled on it.
const FACTS_NODE: &str = "bench-facts";

/// `facts_watch` (issue 24), on the real control plane: from `kubectl
/// label node` returning to the daemon's facts holding the new label (a
/// new generation), through the watch and one read of everything the
/// facts come from. With the one-second poll it replaced, the same is
/// anywhere from a read to a second and a read.
fn facts_watch(c: &mut Criterion) {
    let Some((dir, kubeconfig)) = control_plane("facts_watch") else {
        return;
    };
    let node = format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {FACTS_NODE}\n  annotations: {{kwok.x-k8s.io/node: fake}}\n\
         spec: {{unschedulable: true}}\n"
    );
    if !kubectl(&dir, &kubeconfig, &["apply", "-f", "-"], &node) {
        eprintln!("facts_watch: could not create node {FACTS_NODE}: skipped");
        return;
    }
    let connect = Connect::Kubeconfig {
        path: kubeconfig.clone(),
        context: None,
    };
    let target: Arc<dyn ClusterView> =
        match ClusterTarget::connect(&connect, ClusterOptions::default()) {
            Ok(target) => Arc::new(target),
            Err(e) => {
                eprintln!("facts_watch: {e}: skipped");
                return;
            }
        };
    let facts = match ClusterFacts::start(target, ClusterFactsOptions::default()) {
        Ok(facts) => facts,
        Err(e) => {
            eprintln!("facts_watch: {e}: skipped");
            return;
        }
    };
    let mut zone = 0u64;
    // One relabel: the time from kubectl's return to the label in the
    // facts.
    let mut relabel = || -> Duration {
        zone += 1;
        let value = format!("z{zone}");
        let seen = facts.current().generation;
        let label = format!("capstan-bench/zone={value}");
        assert!(
            kubectl(
                &dir,
                &kubeconfig,
                &["label", "node", FACTS_NODE, &label, "--overwrite"],
                ""
            ),
            "facts_watch: kubectl label failed"
        );
        let started = Instant::now();
        let mut generation = seen;
        loop {
            generation = facts.wait_change(generation, Duration::from_secs(10));
            let view = facts.current();
            let has = view.facts.nodes.iter().any(|n| {
                n.name == FACTS_NODE
                    && n.labels.get("capstan-bench/zone").map(String::as_str)
                        == Some(value.as_str())
            });
            if has {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "facts_watch: the label did not reach the facts in 30 s"
            );
        }
    };
    let mut times: Vec<Duration> = (0..21).map(|_| relabel()).collect();
    times.sort();
    eprintln!(
        "facts_watch: label to facts: median {:?}, min {:?}, max {:?} (21 relabels)",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1]
    );
    let mut group = c.benchmark_group("facts_watch");
    group.sample_size(10);
    group.bench_function("label_to_facts", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| relabel()).sum())
    });
    group.finish();
    let _ = kubectl(
        &dir,
        &kubeconfig,
        &["delete", "node", FACTS_NODE, "--ignore-not-found"],
        "",
    );
}

criterion_group!(benches, cluster, render_lookups, facts_watch);
criterion_main!(benches);
