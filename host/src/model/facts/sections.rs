//! The parts of the facts that contract 0.2 added, as the operator writes
//! them (YAML or JSON, camelCase) and as the cluster source fills them: the
//! system, each host's states and inventory, networks, storage health and
//! layout, service parameters, and the cluster's StorageClasses and API
//! versions. Every field is optional in the file, so facts written for
//! 0.1.0 read unchanged; what is left out is derived from the 0.1.0 fields
//! (a host's states from `schedulable`, the system type from the mode) or
//! empty. The sandbox (its contract 0.2 module) projects them into each plugin's declared
//! sections.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The platform's place in a distributed cloud.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DistributedCloudRole {
    /// Not part of one.
    #[default]
    None,
    /// The central cloud.
    SystemController,
    /// A subcloud.
    Subcloud,
}

/// The platform as a whole, beyond its mode.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SystemInfo {
    /// The system's name.
    #[serde(default)]
    pub name: String,
    /// Its region.
    #[serde(default)]
    pub region: String,
    /// The platform software's version.
    #[serde(default)]
    pub software_version: String,
    /// Its place in a distributed cloud.
    #[serde(default)]
    pub distributed_cloud_role: DistributedCloudRole,
    /// The platform is still being installed.
    #[serde(default)]
    pub bootstrap_in_progress: bool,
    /// The platform or Kubernetes is being upgraded.
    #[serde(default)]
    pub upgrade_in_progress: bool,
    /// The platform is being restored.
    #[serde(default)]
    pub restore_in_progress: bool,
}

/// Whether the operator has put a host in service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdministrativeState {
    /// In service.
    Unlocked,
    /// Out of service.
    Locked,
}

/// Whether a host works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OperationalState {
    /// Working.
    Enabled,
    /// Not working.
    Disabled,
}

/// How available a host is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AvailabilityState {
    /// Working, free of faults.
    Available,
    /// Working with a fault.
    Degraded,
    /// Being tested.
    Intest,
    /// Reachable, not in service.
    Online,
    /// Not reachable.
    Offline,
    /// Failed.
    Failed,
    /// Powered off.
    PowerOff,
}

/// What a CPU is set aside for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuFunction {
    /// The platform.
    Platform,
    /// Applications.
    Application,
    /// Isolated application threads.
    ApplicationIsolated,
    /// A virtual switch.
    Vswitch,
}

/// One logical CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cpu {
    /// Its number.
    pub id: u32,
    /// Its NUMA node.
    #[serde(default)]
    pub numa_node: u32,
    /// Its core.
    #[serde(default)]
    pub core: u32,
    /// Its thread within the core.
    #[serde(default)]
    pub thread: u32,
    /// What it is for.
    pub function: CpuFunction,
}

/// One NUMA node's memory, in MiB.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryNode {
    /// The NUMA node.
    #[serde(default)]
    pub numa_node: u32,
    /// All of it.
    pub total_mib: u64,
    /// Reserved for the platform.
    #[serde(default)]
    pub platform_reserved_mib: u64,
    /// Available to applications.
    #[serde(default)]
    pub available_mib: u64,
    /// 2 MiB huge pages.
    #[serde(default, rename = "hugepages2M")]
    pub hugepages_2m: u32,
    /// 1 GiB huge pages.
    #[serde(default, rename = "hugepages1G")]
    pub hugepages_1g: u32,
}

/// What an interface carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterfaceClass {
    /// Platform networks.
    Platform,
    /// Data networks.
    Data,
    /// Passed through whole.
    PciPassthrough,
    /// SR-IOV.
    PciSriov,
    /// Nothing.
    #[default]
    None,
}

/// A network interface of a host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkInterface {
    /// Its name.
    pub name: String,
    /// What it carries.
    #[serde(default)]
    pub class: InterfaceClass,
    /// Platform networks.
    #[serde(default)]
    pub networks: Vec<String>,
    /// Data networks.
    #[serde(default)]
    pub data_networks: Vec<String>,
    /// Its MTU.
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// SR-IOV virtual functions.
    #[serde(default)]
    pub sriov_vfs: u32,
}

fn default_mtu() -> u32 {
    1500
}

/// A PCI device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PciDevice {
    /// Its address.
    pub address: String,
    /// Vendor id.
    #[serde(default)]
    pub vendor_id: String,
    /// Device id.
    #[serde(default)]
    pub device_id: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Class id.
    #[serde(default)]
    pub class_id: String,
    /// NUMA node.
    #[serde(default)]
    pub numa_node: u32,
}

/// A host's hardware inventory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostInventory {
    /// CPUs.
    #[serde(default)]
    pub cpus: Vec<Cpu>,
    /// Memory per NUMA node.
    #[serde(default)]
    pub memory: Vec<MemoryNode>,
    /// Interfaces.
    #[serde(default)]
    pub interfaces: Vec<NetworkInterface>,
    /// PCI devices.
    #[serde(default)]
    pub pci_devices: Vec<PciDevice>,
}

/// An address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AddressFamily {
    /// IPv4.
    Ipv4,
    /// IPv6.
    Ipv6,
}

/// A platform network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Network {
    /// Its name (`oam`, `mgmt`, ...).
    pub name: String,
    /// Its family; from the subnet when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<AddressFamily>,
    /// Its subnet, CIDR.
    pub subnet: String,
    /// Its gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// The floating address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floating_address: Option<String>,
    /// Each host's address, by host name.
    #[serde(default)]
    pub host_addresses: BTreeMap<String, String>,
}

impl Network {
    /// The family, as given or read off the subnet (a `:` means IPv6).
    pub fn family(&self) -> AddressFamily {
        self.family.unwrap_or(if self.subnet.contains(':') {
            AddressFamily::Ipv6
        } else {
            AddressFamily::Ipv4
        })
    }
}

/// A service parameter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceParameter {
    /// The service.
    pub service: String,
    /// The section.
    pub section: String,
    /// The name.
    pub name: String,
    /// The value.
    pub value: String,
}

/// A StorageClass the cluster serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageClass {
    /// Its name.
    pub name: String,
    /// Its provisioner.
    #[serde(default)]
    pub provisioner: String,
    /// Whether it is the default.
    #[serde(default)]
    pub is_default: bool,
}

/// The health a storage backend reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StorageHealth {
    /// Healthy.
    Ok,
    /// Warnings.
    Warn,
    /// Not working.
    Error,
    /// Not known.
    #[default]
    Unknown,
}

/// A storage monitor: an address, or a name and an address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Monitor {
    /// `host:port` (named after itself).
    Address(String),
    /// A named monitor.
    Named {
        /// Its name.
        name: String,
        /// `host:port`.
        address: String,
    },
}

impl Monitor {
    /// Its name (the address, for one given as an address only).
    pub fn name(&self) -> &str {
        match self {
            Monitor::Address(address) => address,
            Monitor::Named { name, .. } => name,
        }
    }

    /// Its address.
    pub fn address(&self) -> &str {
        match self {
            Monitor::Address(address) | Monitor::Named { address, .. } => address,
        }
    }
}

/// A storage tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageTier {
    /// Its name.
    pub name: String,
    /// Its placement rule.
    #[serde(default)]
    pub rule: String,
}
