//! The facts the platform hands plugins and the app identity a call is
//! about, as the operator writes them (YAML or JSON, camelCase like
//! Kubernetes) and as the cluster source fills them: shared by the
//! sandbox (which carries them into each contract's WIT types), the
//! lifecycle (which reads and re-evaluates them) and the CLI.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod sections;

pub use sections::{
    AddressFamily, AdministrativeState, AvailabilityState, Cpu, CpuFunction, DistributedCloudRole,
    HostInventory, InterfaceClass, MemoryNode, Monitor, Network, NetworkInterface,
    OperationalState, PciDevice, ServiceParameter, StorageClass, StorageHealth, StorageTier,
    SystemInfo,
};

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
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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
    #[serde(default = "schedulable_by_default")]
    pub schedulable: bool,
    /// Whether it is in service; from `schedulable` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub administrative: Option<AdministrativeState>,
    /// Whether it works; `enabled` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operational: Option<OperationalState>,
    /// How available it is; `available` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability: Option<AvailabilityState>,
    /// Its hardware inventory (contract 0.2's `inventory` section).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<HostInventory>,
}

impl Node {
    /// A schedulable node with these roles and no labels.
    pub fn new(name: &str, roles: Vec<NodeRole>) -> Node {
        Node {
            name: name.to_string(),
            roles,
            labels: BTreeMap::new(),
            schedulable: true,
            administrative: None,
            operational: None,
            availability: None,
            inventory: None,
        }
    }

    /// Its administrative state: as given, else `locked` when cordoned.
    pub fn administrative(&self) -> AdministrativeState {
        self.administrative.unwrap_or(if self.schedulable {
            AdministrativeState::Unlocked
        } else {
            AdministrativeState::Locked
        })
    }

    /// Its operational state: as given, else `enabled`.
    pub fn operational(&self) -> OperationalState {
        self.operational.unwrap_or(OperationalState::Enabled)
    }

    /// Its availability: as given, else `available`.
    pub fn availability(&self) -> AvailabilityState {
        self.availability.unwrap_or(AvailabilityState::Available)
    }
}

fn schedulable_by_default() -> bool {
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
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageBackend {
    /// Unique name.
    pub name: String,
    /// Its kind.
    pub kind: StorageKind,
    /// Copies kept of each object.
    #[serde(default = "single_replica")]
    pub replication: u32,
    /// Monitor or server addresses (`host:port`), or `{name, address}`.
    #[serde(default)]
    pub monitors: Vec<Monitor>,
    /// Pools or volume groups.
    #[serde(default)]
    pub pools: Vec<String>,
    /// Whether it backs the default storage class.
    #[serde(default)]
    pub is_default: bool,
    /// The cluster's id (a Ceph fsid).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster_id: String,
    /// The fewest copies it accepts writes with; `replication` when left
    /// out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replication: Option<u32>,
    /// Its tiers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<StorageTier>,
    /// The services it offers (`rbd`, `cephfs`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<String>,
    /// Its health; `unknown` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<StorageHealth>,
}

fn single_replica() -> u32 {
    1
}

/// A local persistent volume managed by capstan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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

/// Facts about the platform, handed to every plugin call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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
    /// Storage backends.
    #[serde(default)]
    pub storage_backends: Vec<StorageBackend>,
    /// Local volumes.
    #[serde(default)]
    pub local_volumes: Vec<LocalVolume>,
    /// Kubernetes version, `major.minor.patch`.
    pub kubernetes_version: String,
    /// Free-form facts.
    #[serde(default)]
    pub extra: serde_json::Value,
    /// The system beyond its mode (contract 0.2's `system` section).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemInfo>,
    /// Platform networks (`networks`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<Network>,
    /// Service parameters (`service-parameters`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_parameters: Vec<ServiceParameter>,
    /// The API versions the cluster serves, in Helm's form (`cluster`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_versions: Vec<String>,
    /// The cluster's StorageClasses (`cluster`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub storage_classes: Vec<StorageClass>,
}

impl Facts {
    /// Reads facts from YAML (JSON is YAML too). Unknown fields are errors
    /// that name the field and its line.
    ///
    /// # Errors
    ///
    /// The YAML parser's error, with line and column.
    pub fn from_yaml(text: &str) -> Result<Facts, serde_yaml_ng::Error> {
        serde_yaml_ng::from_str(text)
    }

    /// These facts with what contract 0.2 added taken out: what a 0.1.0
    /// plugin is handed, and what its calls' seeds are derived from, so
    /// that its calls are what they were before 0.2.0 existed.
    pub(crate) fn as_of_0_1(&self) -> Facts {
        Facts {
            system_mode: self.system_mode,
            controller_count: self.controller_count,
            worker_count: self.worker_count,
            nodes: self
                .nodes
                .iter()
                .map(|n| Node {
                    labels: n.labels.clone(),
                    schedulable: n.schedulable,
                    ..Node::new(&n.name, n.roles.clone())
                })
                .collect(),
            storage_backends: self
                .storage_backends
                .iter()
                .map(|b| StorageBackend {
                    name: b.name.clone(),
                    kind: b.kind,
                    replication: b.replication,
                    monitors: b
                        .monitors
                        .iter()
                        .map(|m| Monitor::Address(m.address().to_string()))
                        .collect(),
                    pools: b.pools.clone(),
                    is_default: b.is_default,
                    cluster_id: String::new(),
                    min_replication: None,
                    tiers: Vec::new(),
                    services: Vec::new(),
                    health: None,
                })
                .collect(),
            local_volumes: self.local_volumes.clone(),
            kubernetes_version: self.kubernetes_version.clone(),
            extra: self.extra.clone(),
            system: None,
            networks: Vec::new(),
            service_parameters: Vec::new(),
            api_versions: Vec::new(),
            storage_classes: Vec::new(),
        }
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

/// A volume a component asks for (the WIT `volume-trait`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeRequest {
    /// Index of the container that mounts it.
    pub container: u32,
    /// Storage class of the claim.
    pub storage_class_name: String,
    /// Size as a Kubernetes quantity.
    pub size: String,
    /// Mount path.
    pub path: String,
}

/// A component whose workload kind a plugin may decide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentFacts {
    /// The component's name.
    pub name: String,
    /// The chart that renders it.
    pub chart: String,
    /// `Kind/name` of the rendered workload.
    pub workload: String,
    /// Volumes it asks for.
    #[serde(default)]
    pub volumes: Vec<VolumeRequest>,
    /// Named local volumes it uses.
    #[serde(default)]
    pub local_volumes: Vec<String>,
}
