//! The facts and app identity the host passes to plugins, as the operator
//! writes them (YAML or JSON, camelCase like Kubernetes) and as they cross
//! into the component (the WIT types).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::bindings::capstan::plugin::types as wit;
use super::sections::{
    AdministrativeState, AvailabilityState, HostInventory, Monitor, Network, OperationalState,
    ServiceParameter, StorageClass, StorageHealth, StorageTier, SystemInfo,
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

/// The app a call is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct App {
    /// The app's name.
    pub name: String,
    /// The app's version.
    pub version: String,
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
