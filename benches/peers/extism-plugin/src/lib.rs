//! The storage example plugin's override computation
//! (`example-plugins/storage`) as an Extism plugin, for the peers benchmark.
//!
//! The same logic line for line: the Ceph backend (or Rook's) gives the
//! monitors, pool and replication; a simplex system (or one with fewer than
//! two controllers) runs one provisioner replica without leader election;
//! the RBD chart gets a storage class named after its pool. What differs is
//! only how values cross the boundary: Extism passes bytes, so the app,
//! facts and chart come in as one JSON document and the overrides go out as
//! JSON text (capstan passes typed facts through the component model).

use extism_pdk::{FnResult, Json, WithReturnCode, info, plugin_fn};
use serde::Deserialize;
use serde_json::{Map, Value, json};

const RBD_CHART: &str = "rbd-provisioner";
const CEPHFS_CHART: &str = "cephfs-provisioner";

/// One call's input: what capstan passes as the `overrides` arguments.
#[derive(Deserialize)]
struct Input {
    #[allow(dead_code)]
    app: App,
    facts: Facts,
    chart: String,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct App {
    name: String,
    version: String,
}

/// The typed facts, as capstan's SDK has them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Facts {
    system_mode: String,
    controller_count: u32,
    worker_count: u32,
    #[serde(default)]
    nodes: Vec<Node>,
    #[serde(default)]
    storage_backends: Vec<StorageBackend>,
    #[serde(default)]
    local_volumes: Vec<Value>,
    kubernetes_version: String,
    #[serde(default)]
    extra: Value,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Node {
    name: String,
    #[serde(default)]
    roles: Vec<String>,
    #[serde(default)]
    labels: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    schedulable: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StorageBackend {
    name: String,
    kind: String,
    #[serde(default = "single_replica")]
    replication: u32,
    #[serde(default)]
    monitors: Vec<String>,
    #[serde(default)]
    pools: Vec<String>,
    #[serde(default)]
    is_default: bool,
}

fn single_replica() -> u32 {
    1
}

fn fail(message: String) -> WithReturnCode<extism_pdk::Error> {
    WithReturnCode(extism_pdk::Error::msg(message), 1)
}

/// `overrides(app, facts, chart)`: the chart's system overrides as JSON.
#[plugin_fn]
pub fn overrides(Json(input): Json<Input>) -> FnResult<String> {
    let facts = &input.facts;
    let ceph = ceph_backend(facts).ok_or_else(|| fail("no ceph storage backend".into()))?;
    info!(
        "ceph backend {} with {} monitor(s), replication {}",
        ceph.name,
        ceph.monitors.len(),
        ceph.replication
    );
    let mut values = provisioner_values(facts, ceph);
    match input.chart.as_str() {
        RBD_CHART => merge(&mut values, rbd_values(ceph)?),
        CEPHFS_CHART => merge(&mut values, cephfs_values(ceph)),
        other => return Err(fail(format!("unsupported: chart {other}"))),
    }
    Ok(serde_json::to_string(&values)?)
}

fn ceph_backend(facts: &Facts) -> Option<&StorageBackend> {
    let of_kind = |kind: &str| facts.storage_backends.iter().find(|b| b.kind == kind);
    of_kind("ceph").or_else(|| of_kind("ceph-rook"))
}

fn provisioner_values(facts: &Facts, ceph: &StorageBackend) -> Map<String, Value> {
    let simplex = facts.system_mode == "simplex" || facts.controller_count < 2;
    let replicas = if simplex { 1 } else { 2 };
    let mut values = Map::new();
    set(&mut values, "provisioner.replicaCount", json!(replicas));
    set(
        &mut values,
        "provisioner.leaderElection.enabled",
        json!(!simplex),
    );
    set(
        &mut values,
        "provisioner.nodeSelector",
        json!({"node-role.kubernetes.io/control-plane": ""}),
    );
    set(
        &mut values,
        "provisioner.tolerations",
        json!([{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}]),
    );
    set(&mut values, "csiConfig.monitors", json!(ceph.monitors));
    set(&mut values, "csiConfig.clusterID", json!(ceph.name));
    values
}

fn rbd_values(ceph: &StorageBackend) -> Result<Value, WithReturnCode<extism_pdk::Error>> {
    let pool = ceph
        .pools
        .iter()
        .find(|p| p.contains("rbd"))
        .or(ceph.pools.first())
        .ok_or_else(|| fail(format!("backend {} has no pool", ceph.name)))?;
    let chunk_size = if ceph.replication < 2 { 8 } else { 64 };
    Ok(json!({
        "storageClass": {
            "name": "general",
            "isDefault": ceph.is_default,
            "pool": pool,
            "replication": ceph.replication,
            "chunkSize": chunk_size,
            "adminSecretName": "ceph-admin",
            "userSecretName": format!("ceph-pool-{pool}"),
        }
    }))
}

fn cephfs_values(ceph: &StorageBackend) -> Value {
    json!({
        "storageClass": {
            "name": "cephfs",
            "isDefault": false,
            "fsName": "kube-cephfs",
            "dataPool": "kube-cephfs-data",
            "metadataPool": "kube-cephfs-metadata",
            "replication": ceph.replication,
        }
    })
}

/// Sets a dotted path, making the maps on the way (the SDK's `Values::set`).
fn set(root: &mut Map<String, Value>, path: &str, value: Value) {
    let mut parts = path.split('.').peekable();
    let mut map = root;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            map.insert(part.to_string(), value);
            return;
        }
        let entry = map
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        match entry {
            Value::Object(inner) => map = inner,
            _ => return,
        }
    }
}

/// Deep-merges `value` into `root` (the SDK's `Values::merge("", value)`).
fn merge(root: &mut Map<String, Value>, value: Value) {
    if let Value::Object(src) = value {
        for (k, v) in src {
            merge_into(root.entry(k).or_insert(Value::Null), v);
        }
    }
}

fn merge_into(slot: &mut Value, value: Value) {
    match (slot, value) {
        (Value::Object(dst), Value::Object(src)) => {
            for (k, v) in src {
                merge_into(dst.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, value) => *slot = value,
    }
}
