//! Typed facts about the platform, as a plugin sees them.
//!
//! These mirror the WIT `facts` record with plain Rust types (maps instead of
//! label lists, `serde_json::Value` instead of JSON text) plus helpers for the
//! questions plugins ask most: is this a simplex system, how many
//! controllers, which storage backend is there.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How the platform's control plane is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SystemMode {
    /// One controller that is also a worker.
    Simplex,
    /// Two controllers that are also workers.
    Duplex,
    /// Dedicated controllers and separate workers.
    Standard,
}

/// A role a node plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeRole {
    /// Runs the control plane.
    Controller,
    /// Runs application workloads.
    Worker,
    /// Hosts storage daemons.
    Storage,
}

/// One node of the cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// The node's name.
    pub name: String,
    /// The roles it plays.
    #[serde(default)]
    pub roles: Vec<NodeRole>,
    /// Its labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// False when cordoned.
    #[serde(default = "yes")]
    pub schedulable: bool,
}

fn yes() -> bool {
    true
}

/// The kind of a storage backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StorageKind {
    /// Ceph on the hosts.
    Ceph,
    /// Ceph run by Rook.
    CephRook,
    /// LVM volume groups.
    Lvm,
    /// An NFS server.
    Nfs,
    /// Storage outside the platform.
    External,
}

/// A storage backend the platform offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageBackend {
    /// Unique name, such as `ceph-store`.
    pub name: String,
    /// What kind of backend it is.
    pub kind: StorageKind,
    /// Copies kept of each object.
    #[serde(default = "one")]
    pub replication: u32,
    /// Monitor or server addresses, `host:port`.
    #[serde(default)]
    pub monitors: Vec<String>,
    /// Pools or volume groups offered.
    #[serde(default)]
    pub pools: Vec<String>,
    /// Whether it backs the default storage class.
    #[serde(default)]
    pub is_default: bool,
}

fn one() -> u32 {
    1
}

/// A local persistent volume managed by capstan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalVolume {
    /// The volume's name.
    pub name: String,
    /// The node it lives on.
    pub node: String,
    /// The path on the node.
    pub host_path: String,
    /// Size as a Kubernetes quantity.
    pub size: String,
    /// The storage class its claim binds through.
    pub storage_class: String,
}

/// What the host tells a plugin about the platform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Facts {
    /// The control-plane layout.
    pub system_mode: SystemMode,
    /// Number of controllers.
    pub controller_count: u32,
    /// Number of workers.
    pub worker_count: u32,
    /// Every node.
    #[serde(default)]
    pub nodes: Vec<Node>,
    /// Configured storage backends.
    #[serde(default)]
    pub storage_backends: Vec<StorageBackend>,
    /// The local volumes this app's components mount, and their nodes
    /// (never another app's).
    #[serde(default)]
    pub local_volumes: Vec<LocalVolume>,
    /// Kubernetes version, `major.minor.patch`.
    pub kubernetes_version: String,
    /// Free-form facts from the operator.
    #[serde(default)]
    pub extra: serde_json::Value,
}

impl Facts {
    /// A one-node simplex system with no storage backends, for tests.
    pub fn simplex() -> Self {
        Facts {
            system_mode: SystemMode::Simplex,
            controller_count: 1,
            worker_count: 1,
            nodes: vec![Node {
                name: "controller-0".into(),
                roles: vec![NodeRole::Controller, NodeRole::Worker],
                labels: BTreeMap::from([(
                    "kubernetes.io/hostname".to_string(),
                    "controller-0".to_string(),
                )]),
                schedulable: true,
            }],
            storage_backends: Vec::new(),
            local_volumes: Vec::new(),
            kubernetes_version: "1.30.0".into(),
            extra: serde_json::Value::Object(Default::default()),
        }
    }

    /// A standard system with `controllers` controllers and `workers` workers.
    pub fn standard(controllers: u32, workers: u32) -> Self {
        let mut nodes = Vec::new();
        for i in 0..controllers {
            nodes.push(test_node(format!("controller-{i}"), NodeRole::Controller));
        }
        for i in 0..workers {
            nodes.push(test_node(format!("worker-{i}"), NodeRole::Worker));
        }
        Facts {
            system_mode: SystemMode::Standard,
            controller_count: controllers,
            worker_count: workers,
            nodes,
            ..Facts::simplex()
        }
    }

    /// Adds a storage backend (builder style, for tests).
    pub fn with_backend(mut self, backend: StorageBackend) -> Self {
        self.storage_backends.push(backend);
        self
    }

    /// True on a one-controller system.
    pub fn is_simplex(&self) -> bool {
        self.system_mode == SystemMode::Simplex
    }

    /// The first backend of the given kind.
    pub fn backend(&self, kind: StorageKind) -> Option<&StorageBackend> {
        self.storage_backends.iter().find(|b| b.kind == kind)
    }

    /// The nodes that play `role`.
    pub fn nodes_with_role(&self, role: NodeRole) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(move |n| n.roles.contains(&role))
    }
}

fn test_node(name: String, role: NodeRole) -> Node {
    Node {
        labels: BTreeMap::from([("kubernetes.io/hostname".to_string(), name.clone())]),
        name,
        roles: vec![role],
        schedulable: true,
    }
}

/// The app a call is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct App {
    /// The app's name.
    pub name: String,
    /// The app's version.
    pub version: String,
}

impl App {
    /// An app with this name and version.
    pub fn new(name: &str, version: &str) -> Self {
        App {
            name: name.into(),
            version: version.into(),
        }
    }
}

/// A volume a component asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeTrait {
    /// Index of the container that mounts it.
    pub container: u32,
    /// Storage class of the claim.
    pub storage_class_name: String,
    /// Size as a Kubernetes quantity.
    pub size: String,
    /// Mount path.
    pub path: String,
}

/// A workload that can run as a Deployment or a StatefulSet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    /// The component's name.
    pub name: String,
    /// The chart that renders it.
    pub chart: String,
    /// `Kind/name` of the rendered workload.
    pub workload: String,
    /// Volumes it asks for.
    #[serde(default)]
    pub volumes: Vec<VolumeTrait>,
    /// Named local volumes it uses.
    #[serde(default)]
    pub local_volumes: Vec<String>,
}
