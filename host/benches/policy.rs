//! The action policy's check of one answer (issue 43): 100 `ensure`s of
//! one app decided while the directory target holds another app's owned
//! release of 30 MiB and 100 other apps' releases. What the lifecycle
//! does before the first write of an answer: each object's kind asked of
//! the target, the policy's pure decision ([`policy::actions::check`]),
//! and the target's own refusals of all of them at once
//! ([`ApplyTarget::admit`]: ownership against every release, CRDs, what
//! could not be read back). Target: under 100 ms (median in
//! `docs/src/developing/performance.md`).
//!
//! `cargo bench -p capstan --profile dev --bench policy` where the
//! release profile is not built.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use capstan::kube::{
    ApplyOptions, ApplyTarget, ClusterView, DirTarget, Release, Resource, plan_apply,
};
use capstan::model::{Action, ActionPolicy, LookupPolicy};
use capstan::policy::{self, Resolved, Scope};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn release(app: &str, chart: &str, namespace: &str) -> Release {
    Release {
        app: app.into(),
        chart: chart.into(),
        namespace: namespace.into(),
        release_name: format!("{app}-{chart}"),
    }
}

fn config_map(namespace: &str, name: &str, bytes: usize) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"blob": "x".repeat(bytes)},
    })
}

fn write(target: &DirTarget, release: &Release, objects: Vec<serde_json::Value>) {
    let desired: Vec<Resource> = objects
        .into_iter()
        .map(|o| Resource::from_value(o, "bench").expect("a valid object"))
        .collect();
    let plan = plan_apply(&[], &desired).expect("a plan");
    target.apply(release, &plan).expect("written");
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let target = DirTarget::new(dir.path().join("applied"));
    // Another app's owned release: 300 ConfigMaps of 100 KiB, 30 MiB.
    write(
        &target,
        &release("big", "capstan-owned", "big-ns"),
        (0..300)
            .map(|i| config_map("big-ns", &format!("blob-{i}"), 100 << 10))
            .collect(),
    );
    // 100 other apps, five objects each.
    for app in 0..100 {
        let ns = format!("app-{app}");
        write(
            &target,
            &release(&ns, "web", &ns),
            (0..5)
                .map(|i| config_map(&ns, &format!("cm-{i}"), 200))
                .collect(),
        );
    }
    let actions: Vec<Action> = (0..100)
        .map(|i| Action::Ensure(config_map("mine", &format!("own-{i}"), 200)))
        .collect();
    let namespaces = vec!["mine".to_string()];
    let action_policy = ActionPolicy::default();
    let read = LookupPolicy::default();
    let scope = Scope {
        app: "mine",
        namespaces: &namespaces,
        policy: &action_policy,
        read: &read,
    };
    let owned = release("mine", "capstan-owned", "mine");
    let check = || {
        let mut objects = Vec::with_capacity(actions.len());
        for action in &actions {
            let Action::Ensure(object) = action else {
                continue;
            };
            let api_version = object["apiVersion"].as_str().unwrap_or_default();
            let kind = object["kind"].as_str().unwrap_or_default();
            let resolved = Resolved::Kind(target.kind_scope(api_version, kind).expect("a scope"));
            match policy::actions::check(action, &resolved, &scope).expect("admitted") {
                policy::Admitted::Ensure(object) => {
                    objects.push(Resource::from_value(object, "bench").expect("valid"));
                }
                policy::Admitted::Take => {}
            }
        }
        target
            .admit(&owned, &objects, &ApplyOptions::default())
            .expect("admitted by the target");
        objects.len()
    };
    assert_eq!(check(), 100);
    c.bench_function("policy_check_100_ensures_beside_30_mib", |b| b.iter(check));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
