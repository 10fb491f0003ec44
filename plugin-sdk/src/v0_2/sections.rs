//! The records inside the 0.2 fact sections: the system, hosts and their
//! inventory, networks, storage backends with their health, service
//! parameters and the cluster.
//!
//! Each type mirrors its WIT record or enum (labels become a map), with the
//! small questions plugins ask of one record (is this host ready, which
//! address goes in a URL). Questions across a whole section live on
//! [`Facts`](crate::v0_2::Facts). Field names serialize as in the WIT
//! (kebab-case), so facts can be kept as JSON fixtures.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::v0_1::PluginError;

/// How the platform's control plane is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SystemMode {
    /// One controller that is also a worker (an all-in-one node).
    Simplex,
    /// Two controllers that are also workers.
    Duplex,
    /// Two or more dedicated controllers and separate workers.
    Standard,
}

/// Whether controllers also run workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SystemType {
    /// Controllers are workers too (simplex and duplex).
    AllInOne,
    /// Dedicated controllers and separate workers.
    Standard,
}

/// The platform's place in a distributed cloud.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DistributedCloudRole {
    /// Not part of a distributed cloud.
    None,
    /// The central cloud that manages subclouds.
    SystemController,
    /// A subcloud managed by a system controller.
    Subcloud,
}

/// The platform as a whole: section [`Section::System`](crate::v0_2::Section::System).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SystemFacts {
    /// The control-plane layout.
    pub mode: SystemMode,
    /// Whether controllers also run workloads.
    pub system_type: SystemType,
    /// The place in a distributed cloud.
    pub distributed_cloud_role: DistributedCloudRole,
    /// The system's name.
    pub name: String,
    /// The region the system belongs to (empty when none).
    #[serde(default)]
    pub region: String,
    /// The platform software's version.
    #[serde(default)]
    pub software_version: String,
    /// True while the platform is still being installed.
    #[serde(default)]
    pub bootstrap_in_progress: bool,
    /// True while the platform or Kubernetes is being upgraded.
    #[serde(default)]
    pub upgrade_in_progress: bool,
    /// True while the platform is being restored from a backup.
    #[serde(default)]
    pub restore_in_progress: bool,
}

impl SystemFacts {
    /// A system in `mode`, of the type that mode implies, outside any
    /// distributed cloud, with nothing in progress (for tests).
    pub fn new(mode: SystemMode) -> Self {
        SystemFacts {
            mode,
            system_type: match mode {
                SystemMode::Simplex | SystemMode::Duplex => SystemType::AllInOne,
                SystemMode::Standard => SystemType::Standard,
            },
            distributed_cloud_role: DistributedCloudRole::None,
            name: "test-system".into(),
            region: String::new(),
            software_version: "1.0".into(),
            bootstrap_in_progress: false,
            upgrade_in_progress: false,
            restore_in_progress: false,
        }
    }

    /// True while the platform is being installed, upgraded or restored:
    /// the moments StarlingX plugins refuse automatic applies in.
    pub fn is_changing(&self) -> bool {
        self.bootstrap_in_progress || self.upgrade_in_progress || self.restore_in_progress
    }
}

/// What a host is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Personality {
    /// Runs the Kubernetes control plane (and, on all-in-one systems,
    /// workloads too).
    Controller,
    /// Runs application workloads.
    Worker,
    /// Hosts storage daemons (for example Ceph OSDs).
    Storage,
}

/// Whether the operator has put a host in service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdministrativeState {
    /// In service: workloads may be scheduled on it.
    Unlocked,
    /// Out of service (a cordoned node).
    Locked,
}

/// Whether a host is working.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OperationalState {
    /// Working (a Ready node).
    Enabled,
    /// Not working.
    Disabled,
}

/// How available a host is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AvailabilityState {
    /// Working and free of faults.
    Available,
    /// Working with a fault (memory, disk or PID pressure).
    Degraded,
    /// Being tested or brought into service.
    Intest,
    /// Reachable but not in service.
    Online,
    /// Not reachable.
    Offline,
    /// Failed.
    Failed,
    /// Powered off.
    PowerOff,
}

/// What a CPU core is set aside for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuFunction {
    /// The platform's own services.
    Platform,
    /// Application workloads.
    Application,
    /// Isolated for latency-sensitive application threads.
    ApplicationIsolated,
    /// A virtual switch's data plane.
    Vswitch,
}

/// One logical CPU of a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Cpu {
    /// The logical CPU number.
    pub id: u32,
    /// The NUMA node (socket) it is on.
    pub numa_node: u32,
    /// The physical core it is a thread of.
    pub core: u32,
    /// The thread within the core.
    pub thread: u32,
    /// What it is set aside for.
    pub function: CpuFunction,
}

/// The memory of one NUMA node of a host, in MiB.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MemoryNode {
    /// The NUMA node.
    pub numa_node: u32,
    /// All memory.
    pub total_mib: u64,
    /// Memory reserved for the platform.
    pub platform_reserved_mib: u64,
    /// Memory applications may use.
    pub available_mib: u64,
    /// 2 MiB huge pages configured.
    #[serde(default)]
    pub hugepages_2m: u32,
    /// 1 GiB huge pages configured.
    #[serde(default)]
    pub hugepages_1g: u32,
}

/// What an interface carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterfaceClass {
    /// Platform networks (management, OAM, cluster host).
    Platform,
    /// Application data networks.
    Data,
    /// A device passed through to workloads whole.
    PciPassthrough,
    /// A device shared with workloads as SR-IOV virtual functions.
    PciSriov,
    /// Nothing.
    None,
}

/// A network interface of a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct NetworkInterface {
    /// The interface's name on the host.
    pub name: String,
    /// What it carries.
    pub class: InterfaceClass,
    /// The platform networks it carries (`mgmt`, `oam`, ...).
    #[serde(default)]
    pub networks: Vec<String>,
    /// The data networks it carries.
    #[serde(default)]
    pub data_networks: Vec<String>,
    /// Its MTU.
    pub mtu: u32,
    /// SR-IOV virtual functions configured (0 when none).
    #[serde(default)]
    pub sriov_vfs: u32,
}

/// A PCI device of a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PciDevice {
    /// The PCI address, `0000:00:00.0`.
    pub address: String,
    /// The vendor id, four hex digits.
    pub vendor_id: String,
    /// The device id, four hex digits.
    pub device_id: String,
    /// The device's name.
    pub name: String,
    /// The PCI class id, six hex digits.
    pub class_id: String,
    /// The NUMA node it is attached to.
    pub numa_node: u32,
}

/// A host's hardware inventory (section
/// [`Section::Inventory`](crate::v0_2::Section::Inventory)).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct HostInventory {
    /// Its logical CPUs.
    #[serde(default)]
    pub cpus: Vec<Cpu>,
    /// Its memory, per NUMA node.
    #[serde(default)]
    pub memory: Vec<MemoryNode>,
    /// Its network interfaces.
    #[serde(default)]
    pub interfaces: Vec<NetworkInterface>,
    /// Its PCI devices.
    #[serde(default)]
    pub pci_devices: Vec<PciDevice>,
}

impl HostInventory {
    /// The logical CPUs set aside for `function`.
    pub fn cpus_for(&self, function: CpuFunction) -> impl Iterator<Item = &Cpu> {
        self.cpus.iter().filter(move |c| c.function == function)
    }

    /// The interfaces that carry the data network `name`.
    pub fn interfaces_on_data_network<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = &'a NetworkInterface> {
        self.interfaces
            .iter()
            .filter(move |i| i.data_networks.iter().any(|n| n == name))
    }
}

/// One host (node) of the platform: an entry of section
/// [`Section::Hosts`](crate::v0_2::Section::Hosts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Host {
    /// The host name, as Kubernetes knows the node.
    pub name: String,
    /// What the host is for; an all-in-one host is a controller and a
    /// worker.
    pub personalities: Vec<Personality>,
    /// Whether the operator has put it in service.
    pub administrative: AdministrativeState,
    /// Whether it works.
    pub operational: OperationalState,
    /// How available it is.
    pub availability: AvailabilityState,
    /// The node's labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Its inventory: `Some` only when the plugin declared
    /// [`Section::Inventory`](crate::v0_2::Section::Inventory).
    #[serde(default)]
    pub inventory: Option<HostInventory>,
}

impl Host {
    /// An unlocked, enabled and available host with these personalities and
    /// the label `kubernetes.io/hostname` (for tests).
    pub fn new(name: &str, personalities: impl IntoIterator<Item = Personality>) -> Self {
        Host {
            name: name.into(),
            personalities: personalities.into_iter().collect(),
            administrative: AdministrativeState::Unlocked,
            operational: OperationalState::Enabled,
            availability: AvailabilityState::Available,
            labels: BTreeMap::from([("kubernetes.io/hostname".to_string(), name.to_string())]),
            inventory: None,
        }
    }

    /// The same host in these states (builder style, for tests).
    pub fn in_state(
        mut self,
        administrative: AdministrativeState,
        operational: OperationalState,
        availability: AvailabilityState,
    ) -> Self {
        self.administrative = administrative;
        self.operational = operational;
        self.availability = availability;
        self
    }

    /// The same host with one more label (builder style, for tests).
    pub fn with_label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// The same host with an inventory (builder style, for tests).
    pub fn with_inventory(mut self, inventory: HostInventory) -> Self {
        self.inventory = Some(inventory);
        self
    }

    /// True when the host has `personality`.
    pub fn is(&self, personality: Personality) -> bool {
        self.personalities.contains(&personality)
    }

    /// True when the host is unlocked, enabled and available: in service
    /// and free of faults (StarlingX counts such controllers for platform
    /// app replicas).
    pub fn is_ready(&self) -> bool {
        self.administrative == AdministrativeState::Unlocked
            && self.operational == OperationalState::Enabled
            && self.availability == AvailabilityState::Available
    }

    /// The value of label `key`, if the host has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }

    /// The host's inventory.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when it is absent, that is when the
    /// plugin did not declare [`Section::Inventory`](crate::v0_2::Section::Inventory).
    pub fn require_inventory(&self) -> Result<&HostInventory, PluginError> {
        self.inventory.as_ref().ok_or_else(|| {
            PluginError::InvalidFacts(format!(
                "facts section inventory was not declared in info() (host {})",
                self.name
            ))
        })
    }
}

/// The address family of a network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AddressFamily {
    /// IPv4.
    Ipv4,
    /// IPv6 (write addresses in URLs within brackets).
    Ipv6,
}

/// An address a host has on a network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct HostAddress {
    /// The host.
    pub host: String,
    /// The address, without a prefix length.
    pub address: String,
}

/// A platform network: an entry of section
/// [`Section::Networks`](crate::v0_2::Section::Networks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Network {
    /// Its name, such as `oam`, `mgmt` or `cluster-host`.
    pub name: String,
    /// Its address family.
    pub family: AddressFamily,
    /// Its subnet, in CIDR form.
    pub subnet: String,
    /// Its gateway, when it has one.
    #[serde(default)]
    pub gateway: Option<String>,
    /// The floating address that follows the active controller.
    #[serde(default)]
    pub floating_address: Option<String>,
    /// Each host's own address on it.
    #[serde(default)]
    pub host_addresses: Vec<HostAddress>,
}

impl Network {
    /// A network with a subnet and a floating address, no gateway and no
    /// host addresses (for tests).
    pub fn new(name: &str, family: AddressFamily, subnet: &str, floating_address: &str) -> Self {
        Network {
            name: name.into(),
            family,
            subnet: subnet.into(),
            gateway: None,
            floating_address: Some(floating_address.into()),
            host_addresses: Vec::new(),
        }
    }

    /// The floating address.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when the network has none.
    pub fn require_floating_address(&self) -> Result<&str, PluginError> {
        self.floating_address.as_deref().ok_or_else(|| {
            PluginError::InvalidFacts(format!("network {} has no floating address", self.name))
        })
    }

    /// The floating address as a URL's host: within brackets on IPv6
    /// (`[fd00::2]`), as it is on IPv4.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when the network has no floating
    /// address.
    pub fn floating_url_host(&self) -> Result<String, PluginError> {
        Ok(url_host(self.require_floating_address()?))
    }

    /// The address host `host` has on this network, if any.
    pub fn address_of(&self, host: &str) -> Option<&str> {
        self.host_addresses
            .iter()
            .find(|a| a.host == host)
            .map(|a| a.address.as_str())
    }
}

/// `address` as a URL's host: an IPv6 address (one with a `:`) within
/// brackets, anything else as it is.
///
/// ```
/// use capstan_plugin_sdk::v0_2::url_host;
/// assert_eq!(url_host("fd00::2"), "[fd00::2]");
/// assert_eq!(url_host("10.0.0.2"), "10.0.0.2");
/// assert_eq!(url_host("[fd00::2]"), "[fd00::2]");
/// ```
pub fn url_host(address: &str) -> String {
    if address.contains(':') && !address.starts_with('[') {
        format!("[{address}]")
    } else {
        address.to_string()
    }
}

/// The kind of a storage backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StorageKind {
    /// Ceph on the hosts, with RBD block and CephFS file storage.
    Ceph,
    /// Ceph run by Rook inside Kubernetes.
    CephRook,
    /// LVM volume groups on the hosts.
    Lvm,
    /// An NFS server.
    Nfs,
    /// Storage provided outside the platform.
    External,
}

impl StorageKind {
    /// True for [`StorageKind::Ceph`] and [`StorageKind::CephRook`].
    pub fn is_ceph(self) -> bool {
        matches!(self, StorageKind::Ceph | StorageKind::CephRook)
    }
}

/// The health a storage backend reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StorageHealth {
    /// Healthy.
    Ok,
    /// Working, with warnings.
    Warn,
    /// Not working.
    Error,
    /// Not known (the backend did not say).
    Unknown,
}

impl fmt::Display for StorageHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StorageHealth::Ok => "ok",
            StorageHealth::Warn => "warn",
            StorageHealth::Error => "error",
            StorageHealth::Unknown => "unknown",
        })
    }
}

/// A storage monitor (or server), by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Monitor {
    /// Its name, such as `ceph-mon-0`.
    pub name: String,
    /// Its address, `host:port`.
    pub address: String,
}

/// A storage tier (for Ceph, a CRUSH hierarchy with its rule).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct StorageTier {
    /// The tier's name.
    pub name: String,
    /// The placement rule its pools use.
    pub rule: String,
}

/// A storage backend the platform offers to apps: an entry of section
/// [`Section::Storage`](crate::v0_2::Section::Storage).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct StorageBackend {
    /// The backend's name, unique on the platform.
    pub name: String,
    /// What kind of backend this is.
    pub kind: StorageKind,
    /// The cluster's id (a Ceph fsid), empty when none.
    #[serde(default)]
    pub cluster_id: String,
    /// How many copies the backend keeps of each object.
    pub replication: u32,
    /// The fewest copies it accepts writes with.
    pub min_replication: u32,
    /// Its monitors or servers.
    #[serde(default)]
    pub monitors: Vec<Monitor>,
    /// Pools or volume groups it offers, by name.
    #[serde(default)]
    pub pools: Vec<String>,
    /// Its tiers.
    #[serde(default)]
    pub tiers: Vec<StorageTier>,
    /// The services it offers (`rbd`, `cephfs`, `rgw`, ...).
    #[serde(default)]
    pub services: Vec<String>,
    /// Whether it backs the default storage class.
    #[serde(default)]
    pub is_default: bool,
    /// Its health, as last read.
    pub health: StorageHealth,
}

impl StorageBackend {
    /// A healthy backend of `kind` keeping `replication` copies, with no
    /// monitors, pools, tiers or services yet (for tests).
    pub fn new(name: &str, kind: StorageKind, replication: u32) -> Self {
        StorageBackend {
            name: name.into(),
            kind,
            cluster_id: String::new(),
            replication,
            min_replication: replication.saturating_sub(1).max(1),
            monitors: Vec::new(),
            pools: Vec::new(),
            tiers: Vec::new(),
            services: Vec::new(),
            is_default: false,
            health: StorageHealth::Ok,
        }
    }

    /// True when the backend offers `service` (`rbd`, `cephfs`, ...).
    pub fn offers(&self, service: &str) -> bool {
        self.services.iter().any(|s| s == service)
    }

    /// The monitors' addresses, `host:port`, in the order given.
    pub fn monitor_addresses(&self) -> Vec<&str> {
        self.monitors.iter().map(|m| m.address.as_str()).collect()
    }

    /// The tier named `name`, if any.
    pub fn tier(&self, name: &str) -> Option<&StorageTier> {
        self.tiers.iter().find(|t| t.name == name)
    }
}

/// A platform service parameter: an entry of section
/// [`Section::ServiceParameters`](crate::v0_2::Section::ServiceParameters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ServiceParameter {
    /// The service, such as `platform` or `kubernetes`.
    pub service: String,
    /// The section within it, such as `config`.
    pub section: String,
    /// The parameter's name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// A StorageClass the cluster serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct StorageClass {
    /// Its name.
    pub name: String,
    /// Its provisioner.
    pub provisioner: String,
    /// Whether it is the cluster's default.
    #[serde(default)]
    pub is_default: bool,
}

/// The Kubernetes cluster itself: section
/// [`Section::Cluster`](crate::v0_2::Section::Cluster).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ClusterFacts {
    /// The Kubernetes version, `major.minor.patch`.
    pub kubernetes_version: String,
    /// The API versions it serves, as Helm's `.Capabilities.APIVersions`
    /// lists them (`apps/v1`, `apps/v1/Deployment`, ...).
    #[serde(default)]
    pub api_versions: Vec<String>,
    /// Its StorageClasses.
    #[serde(default)]
    pub storage_classes: Vec<StorageClass>,
}

impl ClusterFacts {
    /// True when the cluster serves `api_version` (`group/version`, or
    /// `group/version/Kind`), as Helm's `.Capabilities.APIVersions.Has`.
    pub fn serves(&self, api_version: &str) -> bool {
        self.api_versions.iter().any(|v| v == api_version)
    }

    /// The default StorageClass, if the cluster has one.
    pub fn default_storage_class(&self) -> Option<&StorageClass> {
        self.storage_classes.iter().find(|c| c.is_default)
    }
}
