//! The 0.2 [`Facts`]: the sections a plugin declared, its app's local
//! volumes and the operator's `extra`, with the questions plugins ask across
//! a section (how many controllers are ready, which network, which service
//! parameter, which storage backends).
//!
//! A section the plugin did not declare is `None`. Every accessor that needs
//! one returns [`PluginError::InvalidFacts`] naming it, so a plugin that
//! forgot a declaration fails with a message that says which.

use serde::{Deserialize, Serialize};

use crate::v0_1::LocalVolume;
use crate::v0_1::PluginError;
use crate::v0_2::plugin::Section;
use crate::v0_2::sections::{
    ClusterFacts, Host, Network, Personality, ServiceParameter, StorageBackend, StorageKind,
    SystemFacts, SystemMode,
};

/// What the host tells a 0.2 plugin about the platform.
///
/// ```
/// use capstan_plugin_sdk::v0_2::{Facts, PluginError, testing};
/// let facts = Facts::default();
/// assert_eq!(
///     facts.require_system(),
///     Err(PluginError::InvalidFacts("facts section system was not declared in info()".into()))
/// );
/// assert_eq!(testing::duplex().ready_controllers(), Ok(2));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Facts {
    /// The platform as a whole ([`Section::System`]).
    #[serde(default)]
    pub system: Option<SystemFacts>,
    /// Every host ([`Section::Hosts`]).
    #[serde(default)]
    pub hosts: Option<Vec<Host>>,
    /// The platform networks ([`Section::Networks`]).
    #[serde(default)]
    pub networks: Option<Vec<Network>>,
    /// The storage backends ([`Section::Storage`]).
    #[serde(default)]
    pub storage: Option<Vec<StorageBackend>>,
    /// The platform's service parameters ([`Section::ServiceParameters`]).
    #[serde(default)]
    pub service_parameters: Option<Vec<ServiceParameter>>,
    /// The cluster ([`Section::Cluster`]).
    #[serde(default)]
    pub cluster: Option<ClusterFacts>,
    /// The local volumes this app's components mount; never another app's.
    /// Always handed, whatever the plugin declared.
    #[serde(default)]
    pub local_volumes: Vec<LocalVolume>,
    /// Anything else the operator chose to share, as a JSON value (`Null`
    /// when nothing). Always handed.
    #[serde(default)]
    pub extra: serde_json::Value,
}

fn undeclared(section: Section) -> PluginError {
    PluginError::InvalidFacts(format!(
        "facts section {section} was not declared in info()"
    ))
}

impl Facts {
    // ------------------------------------------------------------ sections

    /// Section [`Section::System`].
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when the plugin did not declare it.
    pub fn require_system(&self) -> Result<&SystemFacts, PluginError> {
        self.system
            .as_ref()
            .ok_or_else(|| undeclared(Section::System))
    }

    /// Section [`Section::Hosts`].
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when the plugin did not declare it.
    pub fn require_hosts(&self) -> Result<&[Host], PluginError> {
        self.hosts
            .as_deref()
            .ok_or_else(|| undeclared(Section::Hosts))
    }

    /// Section [`Section::Networks`].
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when the plugin did not declare it.
    pub fn require_networks(&self) -> Result<&[Network], PluginError> {
        self.networks
            .as_deref()
            .ok_or_else(|| undeclared(Section::Networks))
    }

    /// Section [`Section::Storage`].
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when the plugin did not declare it.
    pub fn require_storage(&self) -> Result<&[StorageBackend], PluginError> {
        self.storage
            .as_deref()
            .ok_or_else(|| undeclared(Section::Storage))
    }

    /// Section [`Section::ServiceParameters`].
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when the plugin did not declare it.
    pub fn require_service_parameters(&self) -> Result<&[ServiceParameter], PluginError> {
        self.service_parameters
            .as_deref()
            .ok_or_else(|| undeclared(Section::ServiceParameters))
    }

    /// Section [`Section::Cluster`].
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when the plugin did not declare it.
    pub fn require_cluster(&self) -> Result<&ClusterFacts, PluginError> {
        self.cluster
            .as_ref()
            .ok_or_else(|| undeclared(Section::Cluster))
    }

    /// True when section `section` is present. [`Section::Inventory`] is
    /// present when there are hosts and each carries its inventory.
    pub fn has(&self, section: Section) -> bool {
        match section {
            Section::System => self.system.is_some(),
            Section::Hosts => self.hosts.is_some(),
            Section::Inventory => self
                .hosts
                .as_ref()
                .is_some_and(|hosts| hosts.iter().all(|h| h.inventory.is_some())),
            Section::Networks => self.networks.is_some(),
            Section::Storage => self.storage.is_some(),
            Section::ServiceParameters => self.service_parameters.is_some(),
            Section::Cluster => self.cluster.is_some(),
        }
    }

    // -------------------------------------------------------------- system

    /// The control-plane layout.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::System`] was not
    /// declared.
    pub fn mode(&self) -> Result<SystemMode, PluginError> {
        Ok(self.require_system()?.mode)
    }

    /// True on a one-controller (simplex) system.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::System`] was not
    /// declared.
    pub fn is_simplex(&self) -> Result<bool, PluginError> {
        Ok(self.mode()? == SystemMode::Simplex)
    }

    // --------------------------------------------------------------- hosts

    /// The hosts with `personality`, in the order given.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::Hosts`] was not
    /// declared.
    pub fn hosts_with(&self, personality: Personality) -> Result<Vec<&Host>, PluginError> {
        Ok(self
            .require_hosts()?
            .iter()
            .filter(|h| h.is(personality))
            .collect())
    }

    /// The controllers, ready or not.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::Hosts`] was not
    /// declared.
    pub fn controllers(&self) -> Result<Vec<&Host>, PluginError> {
        self.hosts_with(Personality::Controller)
    }

    /// How many replicas a platform app runs: the controllers that are
    /// unlocked, enabled and available ([`Host::is_ready`]), and at least 1
    /// (as StarlingX's `_num_replicas_for_platform_app`), so a chart always
    /// gets a replica even while every controller is out of service.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::Hosts`] was not
    /// declared.
    pub fn ready_controllers(&self) -> Result<u32, PluginError> {
        let ready = self
            .controllers()?
            .into_iter()
            .filter(|h| h.is_ready())
            .count();
        Ok(u32::try_from(ready).unwrap_or(u32::MAX).max(1))
    }

    /// The host named `name`.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::Hosts`] was not
    /// declared or no host has that name.
    pub fn host(&self, name: &str) -> Result<&Host, PluginError> {
        self.require_hosts()?
            .iter()
            .find(|h| h.name == name)
            .ok_or_else(|| PluginError::InvalidFacts(format!("no host {name} in the facts")))
    }

    /// How many hosts carry label `key=value` (StarlingX's
    /// `_count_hosts_by_label`).
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::Hosts`] was not
    /// declared.
    pub fn count_hosts_with_label(&self, key: &str, value: &str) -> Result<usize, PluginError> {
        Ok(self
            .require_hosts()?
            .iter()
            .filter(|h| h.label(key) == Some(value))
            .count())
    }

    // ------------------------------------------------------------ networks

    /// The platform network named `name` (`oam`, `mgmt`, `cluster-host`).
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::Networks`] was not
    /// declared or the platform has no such network.
    pub fn network(&self, name: &str) -> Result<&Network, PluginError> {
        self.require_networks()?
            .iter()
            .find(|n| n.name == name)
            .ok_or_else(|| PluginError::InvalidFacts(format!("no network {name} in the facts")))
    }

    // -------------------------------------------------- service parameters

    /// The value of service parameter `service`/`section`/`name`, or `None`
    /// when the platform does not set it (callers then use their default).
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::ServiceParameters`] was
    /// not declared.
    pub fn service_parameter(
        &self,
        service: &str,
        section: &str,
        name: &str,
    ) -> Result<Option<&str>, PluginError> {
        Ok(self
            .require_service_parameters()?
            .iter()
            .find(|p| p.service == service && p.section == section && p.name == name)
            .map(|p| p.value.as_str()))
    }

    /// A comma-separated service parameter as a list, each item trimmed and
    /// empty items dropped; `None` when the platform does not set it.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::ServiceParameters`] was
    /// not declared.
    pub fn service_parameter_list(
        &self,
        service: &str,
        section: &str,
        name: &str,
    ) -> Result<Option<Vec<String>>, PluginError> {
        Ok(self.service_parameter(service, section, name)?.map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        }))
    }

    // ------------------------------------------------------------- storage

    /// The storage backends of `kind`, in the order given.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::Storage`] was not
    /// declared.
    pub fn storage_backends_of(
        &self,
        kind: StorageKind,
    ) -> Result<Vec<&StorageBackend>, PluginError> {
        Ok(self
            .require_storage()?
            .iter()
            .filter(|b| b.kind == kind)
            .collect())
    }

    /// The Ceph backends, on the hosts or run by Rook, in the order given.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::Storage`] was not
    /// declared.
    pub fn ceph_backends(&self) -> Result<Vec<&StorageBackend>, PluginError> {
        Ok(self
            .require_storage()?
            .iter()
            .filter(|b| b.kind.is_ceph())
            .collect())
    }

    /// The backend that backs the default storage class, if any.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::Storage`] was not
    /// declared.
    pub fn default_storage_backend(&self) -> Result<Option<&StorageBackend>, PluginError> {
        Ok(self.require_storage()?.iter().find(|b| b.is_default))
    }

    // ------------------------------------------------------------- cluster

    /// The Kubernetes version, `major.minor.patch`.
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::Cluster`] was not
    /// declared.
    pub fn kubernetes_version(&self) -> Result<&str, PluginError> {
        Ok(&self.require_cluster()?.kubernetes_version)
    }

    /// True when the cluster serves `api_version`; see
    /// [`ClusterFacts::serves`].
    ///
    /// # Errors
    /// [`PluginError::InvalidFacts`] when [`Section::Cluster`] was not
    /// declared.
    pub fn serves_api(&self, api_version: &str) -> Result<bool, PluginError> {
        Ok(self.require_cluster()?.serves(api_version))
    }

    // ---------------------------------------------------------- local, extra

    /// The local volume named `name`, if this app's components mount one.
    pub fn local_volume(&self, name: &str) -> Option<&LocalVolume> {
        self.local_volumes.iter().find(|v| v.name == name)
    }

    /// The value at `key` of the operator's `extra`, when it is an object
    /// holding that key.
    pub fn extra_value(&self, key: &str) -> Option<&serde_json::Value> {
        self.extra.as_object()?.get(key)
    }

    // ------------------------------------------------------------ builders

    /// The same facts with `host` added to [`Facts::hosts`] (replacing a
    /// host of the same name), declaring the section (builder style, for
    /// tests).
    pub fn with_host(mut self, host: Host) -> Self {
        let hosts = self.hosts.get_or_insert_with(Vec::new);
        hosts.retain(|h| h.name != host.name);
        hosts.push(host);
        self
    }

    /// The same facts with `network` added (replacing a network of the same
    /// name), declaring the section (builder style, for tests).
    pub fn with_network(mut self, network: Network) -> Self {
        let networks = self.networks.get_or_insert_with(Vec::new);
        networks.retain(|n| n.name != network.name);
        networks.push(network);
        self
    }

    /// The same facts with `backend` added (replacing a backend of the same
    /// name), declaring the section (builder style, for tests).
    pub fn with_storage(mut self, backend: StorageBackend) -> Self {
        let storage = self.storage.get_or_insert_with(Vec::new);
        storage.retain(|b| b.name != backend.name);
        storage.push(backend);
        self
    }

    /// The same facts with a service parameter set (replacing its value),
    /// declaring the section (builder style, for tests).
    pub fn with_service_parameter(
        mut self,
        service: &str,
        section: &str,
        name: &str,
        value: &str,
    ) -> Self {
        let params = self.service_parameters.get_or_insert_with(Vec::new);
        params.retain(|p| !(p.service == service && p.section == section && p.name == name));
        params.push(ServiceParameter {
            service: service.into(),
            section: section.into(),
            name: name.into(),
            value: value.into(),
        });
        self
    }

    /// The same facts with `system` (builder style, for tests).
    pub fn with_system(mut self, system: SystemFacts) -> Self {
        self.system = Some(system);
        self
    }

    /// The same facts with `cluster` (builder style, for tests).
    pub fn with_cluster(mut self, cluster: ClusterFacts) -> Self {
        self.cluster = Some(cluster);
        self
    }

    /// The same facts with `extra` (builder style, for tests).
    pub fn with_extra(mut self, extra: serde_json::Value) -> Self {
        self.extra = extra;
        self
    }

    /// The same facts without `section`, as a plugin that did not declare it
    /// sees them. Leaving out [`Section::Inventory`] keeps the hosts and
    /// drops their inventory; leaving out [`Section::Hosts`] drops both.
    pub fn without(mut self, section: Section) -> Self {
        match section {
            Section::System => self.system = None,
            Section::Hosts => self.hosts = None,
            Section::Inventory => {
                for host in self.hosts.iter_mut().flatten() {
                    host.inventory = None;
                }
            }
            Section::Networks => self.networks = None,
            Section::Storage => self.storage = None,
            Section::ServiceParameters => self.service_parameters = None,
            Section::Cluster => self.cluster = None,
        }
        self
    }

    /// The facts a plugin that declared `sections` is handed: every other
    /// section left out, as the host does (see [`Facts::without`]).
    pub fn projected(mut self, sections: &[Section]) -> Self {
        let declared = |s: Section| {
            sections.contains(&s) || (s == Section::Hosts && sections.contains(&Section::Inventory))
        };
        for section in Section::ALL {
            if !declared(section) {
                self = self.without(section);
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v0_2::sections::{AdministrativeState, AvailabilityState, OperationalState};
    use crate::v0_2::testing;

    #[test]
    fn undeclared_sections_name_themselves() {
        let facts = Facts::default();
        let msg = |e: PluginError| e.to_string();
        assert_eq!(
            msg(facts.require_hosts().unwrap_err()),
            "invalid facts: facts section hosts was not declared in info()"
        );
        assert_eq!(
            msg(facts
                .service_parameter("platform", "config", "x")
                .unwrap_err()),
            "invalid facts: facts section service-parameters was not declared in info()"
        );
        assert_eq!(
            msg(facts.network("oam").unwrap_err()),
            "invalid facts: facts section networks was not declared in info()"
        );
        assert_eq!(
            msg(facts.ceph_backends().unwrap_err()),
            "invalid facts: facts section storage was not declared in info()"
        );
        assert_eq!(
            msg(facts.kubernetes_version().unwrap_err()),
            "invalid facts: facts section cluster was not declared in info()"
        );
        assert!(facts.is_simplex().is_err());
        assert!(facts.ready_controllers().is_err());
    }

    #[test]
    fn ready_controllers_counts_unlocked_enabled_available_and_is_at_least_one() {
        let facts = testing::standard(3, 2);
        assert_eq!(facts.ready_controllers(), Ok(3));

        let degraded = facts.clone().with_host(
            Host::new("controller-1", [Personality::Controller]).in_state(
                AdministrativeState::Unlocked,
                OperationalState::Enabled,
                AvailabilityState::Degraded,
            ),
        );
        assert_eq!(degraded.ready_controllers(), Ok(2));

        let mut none_ready = testing::simplex();
        for host in none_ready.hosts.iter_mut().flatten() {
            host.administrative = AdministrativeState::Locked;
        }
        assert_eq!(none_ready.ready_controllers(), Ok(1));
    }

    #[test]
    fn service_parameter_lists_split_on_commas() {
        let facts = Facts::default().with_service_parameter(
            "platform",
            "config",
            "tls-ciphers",
            " A, B,,C ",
        );
        assert_eq!(
            facts.service_parameter_list("platform", "config", "tls-ciphers"),
            Ok(Some(vec!["A".into(), "B".into(), "C".into()]))
        );
        assert_eq!(
            facts.service_parameter("platform", "config", "absent"),
            Ok(None)
        );
    }

    #[test]
    fn missing_network_is_named() {
        let facts = testing::simplex();
        assert_eq!(
            facts.network("storage").unwrap_err().to_string(),
            "invalid facts: no network storage in the facts"
        );
        assert_eq!(facts.network("oam").map(|n| n.name.as_str()), Ok("oam"));
    }

    #[test]
    fn projection_keeps_declared_sections_only() {
        let facts = testing::simplex().projected(&[Section::System]);
        assert!(facts.system.is_some());
        assert!(facts.hosts.is_none() && facts.networks.is_none() && facts.storage.is_none());
        assert!(facts.service_parameters.is_none() && facts.cluster.is_none());

        let with_inventory = testing::simplex().with_host(
            Host::new("controller-0", [Personality::Controller]).with_inventory(Default::default()),
        );
        let hosts_only = with_inventory.clone().projected(&[Section::Hosts]);
        assert!(
            hosts_only
                .hosts
                .as_ref()
                .is_some_and(|h| h[0].inventory.is_none())
        );
        let inventory = with_inventory.projected(&[Section::Inventory]);
        assert!(inventory.has(Section::Inventory));
        assert!(inventory.has(Section::Hosts));
    }

    #[test]
    fn facts_read_from_json_fixtures() {
        let facts: Facts = serde_json::from_value(serde_json::json!({
            "system": {"mode": "duplex", "system-type": "all-in-one",
                       "distributed-cloud-role": "subcloud", "name": "lab"},
            "networks": [{"name": "oam", "family": "ipv6", "subnet": "fd00::/64",
                          "floating-address": "fd00::2"}],
        }))
        .unwrap();
        assert_eq!(facts.mode(), Ok(SystemMode::Duplex));
        assert_eq!(
            facts.network("oam").and_then(Network::floating_url_host),
            Ok("[fd00::2]".to_string())
        );
        assert!(facts.hosts.is_none());
    }
}
