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

/// The binary's allocator, so that the bench measures what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::time::{Duration, Instant};

use capstan::kube::cluster::RetryPolicy;
use capstan::kube::{
    ApplyOptions, ApplyTarget, ClusterOptions, ClusterTarget, Connect, NoProgress, Release,
    Resource, parse_manifests, plan_apply,
};
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

criterion_group!(benches, cluster);
criterion_main!(benches);
