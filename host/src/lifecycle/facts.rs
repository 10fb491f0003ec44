//! The facts handed to plugins: what the operator told the daemon about
//! the platform (`serve --facts FILE`), plus, from the store, the local
//! volumes the app's own components mount. A plugin never sees another
//! app's volumes (their names, nodes or host paths), nor volumes its app
//! does not ask for in a `localVolumes` trait.

use std::collections::BTreeSet;

use crate::bundle::Metadata;
use crate::model::{Facts, LocalVolume, Node, NodeRole, SystemMode};
use crate::store::{Store, VolumeRecord};

use super::Error;

/// Facts for a daemon told nothing: one all-in-one node named after the
/// host, Kubernetes at the renderer's default version.
pub fn default_facts() -> Facts {
    let version = crate::render::DEFAULT_KUBE_VERSION.trim_start_matches('v');
    Facts {
        system_mode: SystemMode::Simplex,
        controller_count: 1,
        worker_count: 1,
        nodes: vec![Node {
            labels: [("kubernetes.io/hostname".to_string(), "node-0".to_string())]
                .into_iter()
                .collect(),
            ..Node::new("node-0", vec![NodeRole::Controller, NodeRole::Worker])
        }],
        storage_backends: Vec::new(),
        local_volumes: Vec::new(),
        kubernetes_version: version.to_owned(),
        extra: serde_json::Value::Null,
        system: None,
        networks: Vec::new(),
        service_parameters: Vec::new(),
        api_versions: Vec::new(),
        storage_classes: Vec::new(),
    }
}

/// `base` with, in place of any local volumes it listed, the store's local
/// volumes that a component of `metadata` mounts.
///
/// # Errors
/// The store's error.
pub fn current_facts(base: &Facts, store: &dyn Store, metadata: &Metadata) -> Result<Facts, Error> {
    let mounted = mounted_volumes(metadata);
    let mut facts = base.clone();
    facts.local_volumes = store
        .list_volumes()?
        .iter()
        .filter(|record| mounted.contains(record.name.as_str()))
        .map(to_fact)
        .collect();
    Ok(facts)
}

/// The names of the local volumes the components of `metadata` mount.
fn mounted_volumes(metadata: &Metadata) -> BTreeSet<&str> {
    metadata
        .components
        .iter()
        .flat_map(|c| &c.traits.local_volumes)
        .map(|mount| mount.volume.as_str())
        .collect()
}

fn to_fact(record: &VolumeRecord) -> LocalVolume {
    LocalVolume {
        name: record.name.clone(),
        node: record.node.clone(),
        host_path: record.host_path.to_string_lossy().into_owned(),
        size: record.size.clone(),
        storage_class: record.storage_class.clone(),
    }
}
