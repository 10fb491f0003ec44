//! The facts as they cross into a component: each [`Facts`] type's WIT
//! record (the types themselves are [`crate::model`]'s), and the memo of
//! a plugin's last facts.

use std::sync::{Mutex, PoisonError};

use serde::Serialize;

use super::bindings::capstan::plugin::types as wit;
use crate::model::{
    App, ComponentFacts, Facts, Node, NodeRole, StorageBackend, StorageKind, SystemMode,
};

/// The facts of a plugin's last call and what was built from them (what
/// its contract prepared: their JSON text and WIT record): an apply asks
/// every chart of an app with the same facts, and comparing facts costs a
/// fraction of building those again.
pub(crate) struct LastFacts<T>(Mutex<Option<(Facts, T)>>);

impl<T> Default for LastFacts<T> {
    fn default() -> Self {
        LastFacts(Mutex::new(None))
    }
}

impl<T: Clone> LastFacts<T> {
    /// What `build` made of `facts`, built again only when they differ
    /// from the last call's.
    pub(crate) fn get(&self, facts: &Facts, build: impl FnOnce(&Facts) -> T) -> T {
        let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, built)) = last.as_ref()
            && seen == facts
        {
            return built.clone();
        }
        let built = build(facts);
        *last = Some((facts.clone(), built.clone()));
        built
    }
}

impl Facts {
    pub(crate) fn to_wit(&self) -> wit::Facts {
        wit::Facts {
            system_mode: match self.system_mode {
                SystemMode::Simplex => wit::SystemMode::Simplex,
                SystemMode::Duplex => wit::SystemMode::Duplex,
                SystemMode::Standard => wit::SystemMode::Standard,
            },
            controller_count: self.controller_count,
            worker_count: self.worker_count,
            nodes: self.nodes.iter().map(node_to_wit).collect(),
            storage_backends: self.storage_backends.iter().map(backend_to_wit).collect(),
            local_volumes: self
                .local_volumes
                .iter()
                .map(|v| wit::LocalVolume {
                    name: v.name.clone(),
                    node: v.node.clone(),
                    host_path: v.host_path.clone(),
                    size: v.size.clone(),
                    storage_class: v.storage_class.clone(),
                })
                .collect(),
            kubernetes_version: self.kubernetes_version.clone(),
            extra: self.extra.to_string(),
        }
    }
}

fn node_to_wit(n: &Node) -> wit::Node {
    wit::Node {
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
    }
}

fn backend_to_wit(b: &StorageBackend) -> wit::StorageBackend {
    wit::StorageBackend {
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
    }
}

/// An app's name and version borrowed from a call, serialized exactly as
/// [`App`] is (a call's seed reads that JSON text), without copying them
/// into an [`App`] first.
#[derive(Serialize)]
pub(crate) struct AppRef<'a> {
    name: &'a str,
    version: &'a str,
}

impl<'a> AppRef<'a> {
    pub(crate) fn new(name: &'a str, version: &'a str) -> Self {
        AppRef { name, version }
    }
}

impl App {
    pub(crate) fn to_wit(&self) -> wit::App {
        wit::App {
            name: self.name.clone(),
            version: self.version.clone(),
        }
    }
}

impl ComponentFacts {
    pub(crate) fn to_wit(&self) -> wit::Component {
        wit::Component {
            name: self.name.clone(),
            chart: self.chart.clone(),
            workload: self.workload.clone(),
            volumes: self
                .volumes
                .iter()
                .map(|v| wit::VolumeTrait {
                    container: v.container,
                    storage_class_name: v.storage_class_name.clone(),
                    size: v.size.clone(),
                    path: v.path.clone(),
                })
                .collect(),
            local_volumes: self.local_volumes.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed reads this text: a borrowed app must print as an owned one.
    #[test]
    fn a_borrowed_app_serializes_as_an_app() {
        let app = App {
            name: "web \"shop\"".into(),
            version: "1.0.0-rc.1".into(),
        };
        assert_eq!(
            serde_json::to_string(&AppRef::new(&app.name, &app.version)).unwrap(),
            serde_json::to_string(&app).unwrap()
        );
    }

    #[test]
    fn reads_the_documented_yaml_shape() {
        let facts = Facts::from_yaml(
            "systemMode: duplex\ncontrollerCount: 2\nworkerCount: 2\nkubernetesVersion: 1.30.1\n\
             nodes:\n  - {name: c0, roles: [controller, worker], labels: {zone: a}}\n\
             storageBackends:\n  - {name: ceph, kind: ceph-rook, replication: 2}\n\
             extra: {site: x}\n",
        )
        .unwrap();
        assert_eq!(facts.system_mode, SystemMode::Duplex);
        assert!(facts.nodes[0].schedulable);
        assert_eq!(facts.storage_backends[0].kind, StorageKind::CephRook);
        let wit = facts.to_wit();
        assert_eq!(wit.nodes[0].labels[0].key, "zone");
        assert_eq!(wit.extra, r#"{"site":"x"}"#);
    }

    #[test]
    fn the_memo_builds_once_per_distinct_facts() {
        let one = Facts::from_yaml(
            "systemMode: simplex\ncontrollerCount: 1\nworkerCount: 1\nkubernetesVersion: 1.30.0\n",
        )
        .unwrap();
        let mut two = one.clone();
        two.nodes
            .push(Node::new("worker-0", vec![NodeRole::Worker]));
        let memo = LastFacts::default();
        let builds = std::cell::Cell::new(0);
        let build = |facts: &Facts| {
            builds.set(builds.get() + 1);
            facts.nodes.len()
        };
        assert_eq!(memo.get(&one, build), 0);
        assert_eq!(memo.get(&one.clone(), build), 0);
        assert_eq!(builds.get(), 1, "the same facts again are not built again");
        assert_eq!(memo.get(&two, build), 1);
        assert_eq!(memo.get(&one, build), 0);
        assert_eq!(
            builds.get(),
            3,
            "other facts are built, and replace the last"
        );
    }

    #[test]
    fn an_unknown_field_is_an_error_naming_it_and_its_line() {
        let err = Facts::from_yaml(
            "systemMode: simplex\ncontrollerCount: 1\nworkerCount: 1\nkubernetesVersion: 1.30.0\nworkers: 3\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("workers"), "{err}");
        assert!(err.contains("line 5"), "{err}");
    }
}
