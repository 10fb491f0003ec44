//! Contract `capstan:plugin@0.2.0` (`wit/v0.2/plugin.wit`): the
//! [`Contract`] of components built against it, and the conversions
//! between the host's types and 0.2.0's WIT types: the facts projected to
//! the sections a plugin declared, chart and hook calls in, chart and hook
//! answers out.

use std::collections::BTreeSet;
use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{HasSelf, InstancePre, Linker};

use super::PluginError;
use super::bindings_v2::capstan::plugin::{host, types as wit};
use super::bindings_v2::{OverridePlugin, OverridePluginPre};
use super::call::HostState;
use super::contract::{
    Answer, Contract, Declared, PreparedFacts, RawAction, RawAnswer, RawHookAnswer, WitFacts,
    json_bytes,
};
use crate::model::{
    Action, Charset, ChartCall, ContractVersion, FactsSection, GeneratedKey, GeneratedSecret, Hook,
    HookCall, HookOperation, HookOutcome, Mirror, MirrorKind, Mode, ObjectRef, ReleaseStatus,
    SecretKeyRef, SecretShape, SecretSource, SecretValue, WorkloadKind,
};
use crate::model::{
    AddressFamily, AdministrativeState, AvailabilityState, CpuFunction, DistributedCloudRole,
    HostInventory, InterfaceClass, OperationalState, StorageHealth,
};
use crate::model::{App, ComponentFacts, Facts, NodeRole, StorageKind, SystemMode};

/// A component built against 0.2.0.
pub(crate) struct V0_2 {
    pre: OverridePluginPre<HostState>,
}

/// Adds the 0.2.0 `host` import to `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    OverridePlugin::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)
}

/// `pre` as a 0.2.0 plugin, if its exports are 0.2.0's world.
pub(crate) fn bind(pre: InstancePre<HostState>) -> wasmtime::Result<V0_2> {
    Ok(V0_2 {
        pre: OverridePluginPre::new(pre)?,
    })
}

impl wit::Host for HostState {}

impl host::Host for HostState {
    fn log(&mut self, level: wit::LogLevel, message: String) -> wasmtime::Result<()> {
        let level = match level {
            wit::LogLevel::Trace => tracing::Level::TRACE,
            wit::LogLevel::Debug => tracing::Level::DEBUG,
            wit::LogLevel::Info => tracing::Level::INFO,
            wit::LogLevel::Warn => tracing::Level::WARN,
            wit::LogLevel::Error => tracing::Level::ERROR,
        };
        self.log_line(level, &message)
    }
}

impl Contract for V0_2 {
    fn version(&self) -> ContractVersion {
        ContractVersion::V0_2
    }

    fn info(&self, store: &mut Store<HostState>) -> wasmtime::Result<Declared> {
        let plugin = self.pre.instantiate(&mut *store)?;
        let info = plugin.call_info(store)?;
        Ok(Declared {
            name: info.name,
            version: info.version,
            charts: info.charts,
            hooks: info.hooks.into_iter().map(hook_from_wit).collect(),
            decides_workloads: info.decides_workloads,
            facts: info.facts.into_iter().map(section_from_wit).collect(),
        })
    }

    /// All the facts in the seed's text; in the record, the sections the
    /// plugin declared.
    fn prepare(&self, facts: &Facts, sections: &[FactsSection]) -> PreparedFacts {
        PreparedFacts {
            json: json_bytes(facts).into(),
            wit: WitFacts::V0_2(Arc::new(facts_to_wit(facts, sections))),
        }
    }

    fn overrides(
        &self,
        store: &mut Store<HostState>,
        call: &ChartCall,
        facts: &WitFacts,
    ) -> Answer<RawAnswer> {
        let facts = facts.as_0_2()?;
        let wit_call = wit::ChartCall {
            app: wit::App {
                name: call.app.clone(),
                version: call.version.clone(),
            },
            chart: call.chart.clone(),
            namespace: call.namespace.clone(),
            user_overrides: call.user_overrides.to_string(),
        };
        let plugin = self.pre.instantiate(&mut *store)?;
        let answer = plugin.call_overrides(store, &wit_call, facts)?;
        Ok(answer
            .map(|a| RawAnswer {
                values: a.values,
                secret_values: a.secret_values.into_iter().map(secret_value).collect(),
                generate: a.generate.into_iter().map(generated).collect(),
                disabled: a.disabled,
            })
            .map_err(plugin_error))
    }

    fn workload_kind(
        &self,
        store: &mut Store<HostState>,
        app: &App,
        facts: &WitFacts,
        component: &ComponentFacts,
    ) -> Answer<Option<WorkloadKind>> {
        let facts = facts.as_0_2()?;
        let wit_app = wit::App {
            name: app.name.clone(),
            version: app.version.clone(),
        };
        let wit_component = wit::Component {
            name: component.name.clone(),
            chart: component.chart.clone(),
            workload: component.workload.clone(),
            volumes: component
                .volumes
                .iter()
                .map(|v| wit::VolumeTrait {
                    container: v.container,
                    storage_class_name: v.storage_class_name.clone(),
                    size: v.size.clone(),
                    path: v.path.clone(),
                })
                .collect(),
            local_volumes: component.local_volumes.clone(),
        };
        let plugin = self.pre.instantiate(&mut *store)?;
        let answer = plugin.call_workload_kind(store, &wit_app, facts, &wit_component)?;
        Ok(match answer {
            Ok(wit::WorkloadKind::Deployment) => Ok(Some(WorkloadKind::Deployment)),
            Ok(wit::WorkloadKind::StatefulSet) => Ok(Some(WorkloadKind::StatefulSet)),
            Err(wit::PluginError::Unsupported(_)) => Ok(None),
            Err(e) => Err(plugin_error(e)),
        })
    }

    fn lifecycle(
        &self,
        store: &mut Store<HostState>,
        call: &HookCall,
        facts: &WitFacts,
    ) -> Answer<RawHookAnswer> {
        let facts = facts.as_0_2()?;
        let wit_call = hook_call_to_wit(call);
        let plugin = self.pre.instantiate(&mut *store)?;
        let answer = plugin.call_lifecycle(store, &wit_call, facts)?;
        Ok(answer
            .map(|a| RawHookAnswer {
                verdict: match a.verdict {
                    wit::Verdict::Proceed => HookOutcome::Proceed,
                    wit::Verdict::Veto(reason) => HookOutcome::Veto(reason),
                },
                actions: a.actions.into_iter().map(action_from_wit).collect(),
                state: a.state,
                status: a.status.map(|s| match s {
                    wit::ReleaseStatus::Ready => ReleaseStatus::Ready,
                    wit::ReleaseStatus::RetryAfter(seconds) => ReleaseStatus::RetryAfter(seconds),
                    wit::ReleaseStatus::Failed(reason) => ReleaseStatus::Failed(reason),
                }),
            })
            .map_err(plugin_error))
    }
}

fn plugin_error(error: wit::PluginError) -> PluginError {
    match error {
        wit::PluginError::InvalidFacts(m) => PluginError::InvalidFacts(m),
        wit::PluginError::Unsupported(m) => PluginError::Unsupported(m),
        wit::PluginError::Failed(m) => PluginError::Failed(m),
    }
}

/// The facts as a plugin that declared `sections` sees them.
pub(crate) fn facts_to_wit(facts: &Facts, sections: &[FactsSection]) -> wit::Facts {
    let asked: BTreeSet<FactsSection> = sections.iter().copied().collect();
    let has = |section| asked.contains(&section);
    let inventory = has(FactsSection::Inventory);
    wit::Facts {
        system: has(FactsSection::System).then(|| system_to_wit(facts)),
        hosts: (has(FactsSection::Hosts) || inventory).then(|| {
            facts
                .nodes
                .iter()
                .map(|node| wit::HostInfo {
                    name: node.name.clone(),
                    personalities: node
                        .roles
                        .iter()
                        .map(|r| match r {
                            NodeRole::Controller => wit::Personality::Controller,
                            NodeRole::Worker => wit::Personality::Worker,
                            NodeRole::Storage => wit::Personality::Storage,
                        })
                        .collect(),
                    administrative: match node.administrative() {
                        AdministrativeState::Unlocked => wit::AdministrativeState::Unlocked,
                        AdministrativeState::Locked => wit::AdministrativeState::Locked,
                    },
                    operational: match node.operational() {
                        OperationalState::Enabled => wit::OperationalState::Enabled,
                        OperationalState::Disabled => wit::OperationalState::Disabled,
                    },
                    availability: availability_to_wit(node.availability()),
                    labels: node
                        .labels
                        .iter()
                        .map(|(key, value)| wit::Label {
                            key: key.clone(),
                            value: value.clone(),
                        })
                        .collect(),
                    inventory: if inventory {
                        Some(inventory_to_wit(
                            node.inventory.as_ref().unwrap_or(&HostInventory::default()),
                        ))
                    } else {
                        None
                    },
                })
                .collect()
        }),
        networks: has(FactsSection::Networks).then(|| {
            facts
                .networks
                .iter()
                .map(|n| wit::Network {
                    name: n.name.clone(),
                    family: match n.family() {
                        AddressFamily::Ipv4 => wit::AddressFamily::Ipv4,
                        AddressFamily::Ipv6 => wit::AddressFamily::Ipv6,
                    },
                    subnet: n.subnet.clone(),
                    gateway: n.gateway.clone(),
                    floating_address: n.floating_address.clone(),
                    host_addresses: n
                        .host_addresses
                        .iter()
                        .map(|(host, address)| wit::HostAddress {
                            host: host.clone(),
                            address: address.clone(),
                        })
                        .collect(),
                })
                .collect()
        }),
        storage: has(FactsSection::Storage).then(|| {
            facts
                .storage_backends
                .iter()
                .map(|b| wit::StorageBackend {
                    name: b.name.clone(),
                    kind: match b.kind {
                        StorageKind::Ceph => wit::StorageKind::Ceph,
                        StorageKind::CephRook => wit::StorageKind::CephRook,
                        StorageKind::Lvm => wit::StorageKind::Lvm,
                        StorageKind::Nfs => wit::StorageKind::Nfs,
                        StorageKind::External => wit::StorageKind::External,
                    },
                    cluster_id: b.cluster_id.clone(),
                    replication: b.replication,
                    min_replication: b.min_replication.unwrap_or(b.replication),
                    monitors: b
                        .monitors
                        .iter()
                        .map(|m| wit::Monitor {
                            name: m.name().to_string(),
                            address: m.address().to_string(),
                        })
                        .collect(),
                    pools: b.pools.clone(),
                    tiers: b
                        .tiers
                        .iter()
                        .map(|t| wit::StorageTier {
                            name: t.name.clone(),
                            rule: t.rule.clone(),
                        })
                        .collect(),
                    services: b.services.clone(),
                    is_default: b.is_default,
                    health: match b.health.unwrap_or_default() {
                        StorageHealth::Ok => wit::StorageHealth::Ok,
                        StorageHealth::Warn => wit::StorageHealth::Warn,
                        StorageHealth::Error => wit::StorageHealth::Error,
                        StorageHealth::Unknown => wit::StorageHealth::Unknown,
                    },
                })
                .collect()
        }),
        service_parameters: has(FactsSection::ServiceParameters).then(|| {
            facts
                .service_parameters
                .iter()
                .map(|p| wit::ServiceParameter {
                    service: p.service.clone(),
                    section: p.section.clone(),
                    name: p.name.clone(),
                    value: p.value.clone(),
                })
                .collect()
        }),
        cluster: has(FactsSection::Cluster).then(|| wit::ClusterFacts {
            kubernetes_version: facts.kubernetes_version.clone(),
            api_versions: facts.api_versions.clone(),
            storage_classes: facts
                .storage_classes
                .iter()
                .map(|c| wit::StorageClass {
                    name: c.name.clone(),
                    provisioner: c.provisioner.clone(),
                    is_default: c.is_default,
                })
                .collect(),
        }),
        local_volumes: facts
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
        extra: facts.extra.to_string(),
    }
}

fn system_to_wit(facts: &Facts) -> wit::SystemFacts {
    let info = facts.system.clone().unwrap_or_default();
    wit::SystemFacts {
        mode: match facts.system_mode {
            SystemMode::Simplex => wit::SystemMode::Simplex,
            SystemMode::Duplex => wit::SystemMode::Duplex,
            SystemMode::Standard => wit::SystemMode::Standard,
        },
        system_type: match facts.system_mode {
            SystemMode::Simplex | SystemMode::Duplex => wit::SystemType::AllInOne,
            SystemMode::Standard => wit::SystemType::Standard,
        },
        distributed_cloud_role: match info.distributed_cloud_role {
            DistributedCloudRole::None => wit::DistributedCloudRole::None,
            DistributedCloudRole::SystemController => wit::DistributedCloudRole::SystemController,
            DistributedCloudRole::Subcloud => wit::DistributedCloudRole::Subcloud,
        },
        name: info.name,
        region: info.region,
        software_version: info.software_version,
        bootstrap_in_progress: info.bootstrap_in_progress,
        upgrade_in_progress: info.upgrade_in_progress,
        restore_in_progress: info.restore_in_progress,
    }
}

fn availability_to_wit(state: AvailabilityState) -> wit::AvailabilityState {
    match state {
        AvailabilityState::Available => wit::AvailabilityState::Available,
        AvailabilityState::Degraded => wit::AvailabilityState::Degraded,
        AvailabilityState::Intest => wit::AvailabilityState::Intest,
        AvailabilityState::Online => wit::AvailabilityState::Online,
        AvailabilityState::Offline => wit::AvailabilityState::Offline,
        AvailabilityState::Failed => wit::AvailabilityState::Failed,
        AvailabilityState::PowerOff => wit::AvailabilityState::PowerOff,
    }
}

fn inventory_to_wit(inventory: &HostInventory) -> wit::HostInventory {
    wit::HostInventory {
        cpus: inventory
            .cpus
            .iter()
            .map(|c| wit::Cpu {
                id: c.id,
                numa_node: c.numa_node,
                core: c.core,
                thread: c.thread,
                function: match c.function {
                    CpuFunction::Platform => wit::CpuFunction::Platform,
                    CpuFunction::Application => wit::CpuFunction::Application,
                    CpuFunction::ApplicationIsolated => wit::CpuFunction::ApplicationIsolated,
                    CpuFunction::Vswitch => wit::CpuFunction::Vswitch,
                },
            })
            .collect(),
        memory: inventory
            .memory
            .iter()
            .map(|m| wit::MemoryNode {
                numa_node: m.numa_node,
                total_mib: m.total_mib,
                platform_reserved_mib: m.platform_reserved_mib,
                available_mib: m.available_mib,
                hugepages_2m: m.hugepages_2m,
                hugepages_1g: m.hugepages_1g,
            })
            .collect(),
        interfaces: inventory
            .interfaces
            .iter()
            .map(|i| wit::NetworkInterface {
                name: i.name.clone(),
                class: match i.class {
                    InterfaceClass::Platform => wit::InterfaceClass::Platform,
                    InterfaceClass::Data => wit::InterfaceClass::Data,
                    InterfaceClass::PciPassthrough => wit::InterfaceClass::PciPassthrough,
                    InterfaceClass::PciSriov => wit::InterfaceClass::PciSriov,
                    InterfaceClass::None => wit::InterfaceClass::None,
                },
                networks: i.networks.clone(),
                data_networks: i.data_networks.clone(),
                mtu: i.mtu,
                sriov_vfs: i.sriov_vfs,
            })
            .collect(),
        pci_devices: inventory
            .pci_devices
            .iter()
            .map(|d| wit::PciDevice {
                address: d.address.clone(),
                vendor_id: d.vendor_id.clone(),
                device_id: d.device_id.clone(),
                name: d.name.clone(),
                class_id: d.class_id.clone(),
                numa_node: d.numa_node,
            })
            .collect(),
    }
}

fn hook_call_to_wit(call: &HookCall) -> wit::HookCall {
    wit::HookCall {
        hook: hook_to_wit(call.hook),
        app: wit::App {
            name: call.app.clone(),
            version: call.version.clone(),
        },
        mode: match call.mode {
            Mode::Manual => wit::Mode::Manual,
            Mode::Auto => wit::Mode::Auto,
        },
        operation: match call.operation {
            HookOperation::Apply => wit::Operation::Apply,
            HookOperation::Remove => wit::Operation::Remove,
            HookOperation::Update => wit::Operation::Update,
            HookOperation::Recover => wit::Operation::Recover,
            HookOperation::Abort => wit::Operation::Abort,
            HookOperation::EvaluateReapply => wit::Operation::EvaluateReapply,
        },
        from_version: call.from_version.clone(),
        to_version: call.to_version.clone(),
        release: call.release.clone(),
        release_namespace: call.release_namespace.clone(),
        attempt: call.attempt,
        namespaces: call.namespaces.clone(),
        trigger: call.trigger.as_ref().map(|t| wit::Trigger {
            kind: t.kind.clone(),
            details: t.details.clone(),
        }),
        state: call.state.clone(),
        user_overrides: call
            .user_overrides
            .iter()
            .map(|(chart, values)| wit::ChartOverrides {
                chart: chart.clone(),
                values: values.to_string(),
            })
            .collect(),
        observed: call
            .observed
            .iter()
            .map(|o| wit::ObservedObject {
                object: object_to_wit(&o.object),
                exists: o.exists,
                ready: o.ready,
            })
            .collect(),
    }
}

fn object_to_wit(object: &ObjectRef) -> wit::ObjectRef {
    wit::ObjectRef {
        api_version: object.api_version.clone(),
        kind: object.kind.clone(),
        namespace: object.namespace.clone(),
        name: object.name.clone(),
    }
}

fn object_from_wit(object: wit::ObjectRef) -> ObjectRef {
    ObjectRef {
        api_version: object.api_version,
        kind: object.kind,
        namespace: object.namespace,
        name: object.name,
    }
}

fn action_from_wit(action: wit::Action) -> RawAction {
    match action {
        wit::Action::Mirror(m) => RawAction::Plain(Action::Mirror(Mirror {
            kind: match m.kind {
                wit::MirrorKind::Secret => MirrorKind::Secret,
                wit::MirrorKind::ConfigMap => MirrorKind::ConfigMap,
            },
            from_namespace: m.from_namespace,
            from_name: m.from_name,
            to_namespace: m.to_namespace,
            to_name: m.to_name,
        })),
        wit::Action::Ensure(object) => RawAction::Ensure(object),
        wit::Action::Delete(object) => RawAction::Plain(Action::Delete(object_from_wit(object))),
        wit::Action::Restart(w) => RawAction::Plain(Action::Restart(ObjectRef {
            api_version: "apps/v1".into(),
            kind: w.kind,
            namespace: Some(w.namespace),
            name: w.name,
        })),
        wit::Action::PatchOverrides(p) => RawAction::PatchOverrides {
            chart: p.chart,
            patch: p.patch,
        },
        wit::Action::RequestReapply(reason) => RawAction::Plain(Action::RequestReapply(reason)),
        wit::Action::Observe(object) => RawAction::Plain(Action::Observe(object_from_wit(object))),
    }
}

fn secret_value(value: wit::SecretValue) -> SecretValue {
    SecretValue {
        path: value.path,
        source: match value.source {
            wit::SecretSource::Existing(r) => SecretSource::Existing(SecretKeyRef {
                namespace: r.namespace,
                name: r.name,
                key: r.key,
            }),
            wit::SecretSource::Generated(g) => SecretSource::Generated(GeneratedKey {
                name: g.name,
                key: g.key,
            }),
        },
    }
}

fn generated(secret: wit::GeneratedSecret) -> GeneratedSecret {
    GeneratedSecret {
        name: secret.name,
        shape: match secret.shape {
            wit::SecretShape::Password(p) => SecretShape::Password {
                length: p.length,
                charset: match p.charset {
                    wit::Charset::Alphanumeric => Charset::Alphanumeric,
                    wit::Charset::Hex => Charset::Hex,
                    wit::Charset::Printable => Charset::Printable,
                },
            },
            wit::SecretShape::Ed25519Key => SecretShape::Ed25519Key,
            wit::SecretShape::Certificate(c) => SecretShape::Certificate {
                common_name: c.common_name,
                dns_names: c.dns_names,
                validity_days: c.validity_days,
            },
        },
    }
}

fn section_from_wit(section: wit::FactsSection) -> FactsSection {
    match section {
        wit::FactsSection::System => FactsSection::System,
        wit::FactsSection::Hosts => FactsSection::Hosts,
        wit::FactsSection::Inventory => FactsSection::Inventory,
        wit::FactsSection::Networks => FactsSection::Networks,
        wit::FactsSection::Storage => FactsSection::Storage,
        wit::FactsSection::ServiceParameters => FactsSection::ServiceParameters,
        wit::FactsSection::Cluster => FactsSection::Cluster,
    }
}

fn hook_to_wit(hook: Hook) -> wit::Hook {
    match hook {
        Hook::SemanticCheck => wit::Hook::SemanticCheck,
        Hook::PreApply => wit::Hook::PreApply,
        Hook::PostApply => wit::Hook::PostApply,
        Hook::PreRemove => wit::Hook::PreRemove,
        Hook::PostRemove => wit::Hook::PostRemove,
        Hook::PreUpdate => wit::Hook::PreUpdate,
        Hook::PostUpdate => wit::Hook::PostUpdate,
        Hook::Status => wit::Hook::Status,
        Hook::EvaluateReapply => wit::Hook::EvaluateReapply,
        Hook::PostAbort => wit::Hook::PostAbort,
        Hook::PreRecover => wit::Hook::PreRecover,
        Hook::PostRecover => wit::Hook::PostRecover,
    }
}

fn hook_from_wit(hook: wit::Hook) -> Hook {
    match hook {
        wit::Hook::SemanticCheck => Hook::SemanticCheck,
        wit::Hook::PreApply => Hook::PreApply,
        wit::Hook::PostApply => Hook::PostApply,
        wit::Hook::PreRemove => Hook::PreRemove,
        wit::Hook::PostRemove => Hook::PostRemove,
        wit::Hook::PreUpdate => Hook::PreUpdate,
        wit::Hook::PostUpdate => Hook::PostUpdate,
        wit::Hook::Status => Hook::Status,
        wit::Hook::EvaluateReapply => Hook::EvaluateReapply,
        wit::Hook::PostAbort => Hook::PostAbort,
        wit::Hook::PreRecover => Hook::PreRecover,
        wit::Hook::PostRecover => Hook::PostRecover,
    }
}
