//! The conversions between the bindings generated from `wit/v0.2` and this
//! module's typed mirrors, and the four entry points
//! [`export_plugin!`](crate::v0_2::export_plugin) calls. Nothing else in the
//! SDK touches the generated types.
//!
//! Inputs from the host are never trusted to be well formed: JSON text that
//! does not parse becomes a [`PluginError::InvalidFacts`] naming what it was,
//! never a panic. Answers are checked on the way out (an `ensure` object
//! without identity, a patch that is not an object, state past its limit)
//! and fail the call with [`PluginError::Failed`] naming the action.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::v0_1::{App, Component, LocalVolume, VolumeTrait};
use crate::v0_1::{PluginError, WorkloadKind};
use crate::v0_2::answer::{Answer, Charset, SecretSource, Shape};
use crate::v0_2::bindings::capstan::plugin::types as wit;
use crate::v0_2::calls::{ChartCall, Hook, HookCall, Mode, ObservedObject, Operation, Trigger};
use crate::v0_2::facts::Facts;
use crate::v0_2::hook_answer::{
    Action, HookAnswer, MAX_RETRY_AFTER_SECS, MAX_STATE_BYTES, MirrorKind, ObjectRef,
    ReleaseStatus, Verdict,
};
use crate::v0_2::plugin::{Info, Plugin, Section};
use crate::v0_2::sections::*;

// ------------------------------------------------------------ entry points

/// `info`: the plugin's [`Info`] in WIT form.
pub fn info<P: Plugin>() -> wit::PluginInfo {
    info_to_wit(P::info())
}

/// `overrides`: converts the call and facts, runs [`Plugin::overrides`],
/// checks and converts its answer.
///
/// # Errors
/// The plugin's own error; [`PluginError::InvalidFacts`] when the host's
/// JSON does not parse; [`PluginError::Failed`] when the answer is malformed.
pub fn overrides<P: Plugin>(
    call: wit::ChartCall,
    facts: wit::Facts,
) -> Result<wit::ChartAnswer, wit::PluginError> {
    let run = || {
        let call = chart_call_from_wit(call)?;
        let facts = facts_from_wit(facts)?;
        answer_to_wit(P::overrides(&call, &facts)?)
    };
    run().map_err(error_to_wit)
}

/// `workload-kind`: converts the inputs and runs [`Plugin::workload_kind`].
///
/// # Errors
/// The plugin's own error; [`PluginError::InvalidFacts`] when the host's
/// JSON does not parse.
pub fn workload_kind<P: Plugin>(
    app: wit::App,
    facts: wit::Facts,
    component: wit::Component,
) -> Result<wit::WorkloadKind, wit::PluginError> {
    let run = || {
        let facts = facts_from_wit(facts)?;
        let kind = P::workload_kind(&app_from_wit(app), &facts, &component_from_wit(component))?;
        Ok(match kind {
            WorkloadKind::Deployment => wit::WorkloadKind::Deployment,
            WorkloadKind::StatefulSet => wit::WorkloadKind::StatefulSet,
        })
    };
    run().map_err(error_to_wit)
}

/// `lifecycle`: converts the call and facts, runs [`Plugin::lifecycle`],
/// checks and converts its answer.
///
/// # Errors
/// The plugin's own error; [`PluginError::InvalidFacts`] when the host's
/// JSON does not parse; [`PluginError::Failed`] when the answer is malformed.
pub fn lifecycle<P: Plugin>(
    call: wit::HookCall,
    facts: wit::Facts,
) -> Result<wit::HookAnswer, wit::PluginError> {
    let run = || {
        let call = hook_call_from_wit(call)?;
        let facts = facts_from_wit(facts)?;
        hook_answer_to_wit(P::lifecycle(&call, &facts)?)
    };
    run().map_err(error_to_wit)
}

// ------------------------------------------------------------------- info

pub(crate) fn info_to_wit(info: Info) -> wit::PluginInfo {
    wit::PluginInfo {
        name: info.name,
        version: info.version,
        charts: info.charts,
        hooks: info.hooks.into_iter().map(hook_to_wit).collect(),
        decides_workloads: info.decides_workloads,
        facts: info.sections.into_iter().map(section_to_wit).collect(),
    }
}

fn section_to_wit(s: Section) -> wit::FactsSection {
    match s {
        Section::System => wit::FactsSection::System,
        Section::Hosts => wit::FactsSection::Hosts,
        Section::Inventory => wit::FactsSection::Inventory,
        Section::Networks => wit::FactsSection::Networks,
        Section::Storage => wit::FactsSection::Storage,
        Section::ServiceParameters => wit::FactsSection::ServiceParameters,
        Section::Cluster => wit::FactsSection::Cluster,
    }
}

fn hook_to_wit(h: Hook) -> wit::Hook {
    match h {
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

fn hook_from_wit(h: wit::Hook) -> Hook {
    match h {
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

// ------------------------------------------------------------------ calls

fn app_from_wit(app: wit::App) -> App {
    App {
        name: app.name,
        version: app.version,
    }
}

/// Parses a JSON object of user overrides; empty text is `{}`.
fn overrides_from_json(text: &str, chart: &str) -> Result<Value, PluginError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(text).map_err(|e| {
        PluginError::InvalidFacts(format!("user overrides of chart {chart} are not JSON: {e}"))
    })
}

pub(crate) fn chart_call_from_wit(c: wit::ChartCall) -> Result<ChartCall, PluginError> {
    let user_overrides = overrides_from_json(&c.user_overrides, &c.chart)?;
    Ok(ChartCall {
        app: app_from_wit(c.app),
        chart: c.chart,
        namespace: c.namespace,
        user_overrides,
    })
}

pub(crate) fn hook_call_from_wit(c: wit::HookCall) -> Result<HookCall, PluginError> {
    let mut user_overrides = BTreeMap::new();
    for o in c.user_overrides {
        let values = overrides_from_json(&o.values, &o.chart)?;
        user_overrides.insert(o.chart, values);
    }
    Ok(HookCall {
        hook: hook_from_wit(c.hook),
        app: app_from_wit(c.app),
        mode: match c.mode {
            wit::Mode::Manual => Mode::Manual,
            wit::Mode::Auto => Mode::Auto,
        },
        operation: match c.operation {
            wit::Operation::Apply => Operation::Apply,
            wit::Operation::Remove => Operation::Remove,
            wit::Operation::Update => Operation::Update,
            wit::Operation::Recover => Operation::Recover,
            wit::Operation::Abort => Operation::Abort,
            wit::Operation::EvaluateReapply => Operation::EvaluateReapply,
        },
        from_version: c.from_version,
        to_version: c.to_version,
        release: c.release,
        release_namespace: c.release_namespace,
        attempt: c.attempt,
        namespaces: c.namespaces,
        trigger: c.trigger.map(|t| Trigger {
            kind: t.kind,
            details: t.details,
        }),
        state: c.state,
        user_overrides,
        observed: c
            .observed
            .into_iter()
            .map(|o| ObservedObject {
                object: object_ref_from_wit(o.object),
                exists: o.exists,
                ready: o.ready,
            })
            .collect(),
    })
}

fn component_from_wit(c: wit::Component) -> Component {
    Component {
        name: c.name,
        chart: c.chart,
        workload: c.workload,
        volumes: c
            .volumes
            .into_iter()
            .map(|v| VolumeTrait {
                container: v.container,
                storage_class_name: v.storage_class_name,
                size: v.size,
                path: v.path,
            })
            .collect(),
        local_volumes: c.local_volumes,
    }
}

// ------------------------------------------------------------------ facts

pub(crate) fn facts_from_wit(f: wit::Facts) -> Result<Facts, PluginError> {
    let extra = if f.extra.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&f.extra)
            .map_err(|e| PluginError::InvalidFacts(format!("extra facts are not JSON: {e}")))?
    };
    Ok(Facts {
        system: f.system.map(system_from_wit),
        hosts: f
            .hosts
            .map(|hosts| hosts.into_iter().map(host_from_wit).collect()),
        networks: f
            .networks
            .map(|nets| nets.into_iter().map(network_from_wit).collect()),
        storage: f
            .storage
            .map(|backends| backends.into_iter().map(backend_from_wit).collect()),
        service_parameters: f.service_parameters.map(|params| {
            params
                .into_iter()
                .map(|p| ServiceParameter {
                    service: p.service,
                    section: p.section,
                    name: p.name,
                    value: p.value,
                })
                .collect()
        }),
        cluster: f.cluster.map(cluster_from_wit),
        local_volumes: f
            .local_volumes
            .into_iter()
            .map(|v| LocalVolume {
                name: v.name,
                node: v.node,
                host_path: v.host_path,
                size: v.size,
                storage_class: v.storage_class,
            })
            .collect(),
        extra,
    })
}

fn system_from_wit(s: wit::SystemFacts) -> SystemFacts {
    SystemFacts {
        mode: match s.mode {
            wit::SystemMode::Simplex => SystemMode::Simplex,
            wit::SystemMode::Duplex => SystemMode::Duplex,
            wit::SystemMode::Standard => SystemMode::Standard,
        },
        system_type: match s.system_type {
            wit::SystemType::AllInOne => SystemType::AllInOne,
            wit::SystemType::Standard => SystemType::Standard,
        },
        distributed_cloud_role: match s.distributed_cloud_role {
            wit::DistributedCloudRole::None => DistributedCloudRole::None,
            wit::DistributedCloudRole::SystemController => DistributedCloudRole::SystemController,
            wit::DistributedCloudRole::Subcloud => DistributedCloudRole::Subcloud,
        },
        name: s.name,
        region: s.region,
        software_version: s.software_version,
        bootstrap_in_progress: s.bootstrap_in_progress,
        upgrade_in_progress: s.upgrade_in_progress,
        restore_in_progress: s.restore_in_progress,
    }
}

fn host_from_wit(h: wit::HostInfo) -> Host {
    Host {
        name: h.name,
        personalities: h
            .personalities
            .into_iter()
            .map(|p| match p {
                wit::Personality::Controller => Personality::Controller,
                wit::Personality::Worker => Personality::Worker,
                wit::Personality::Storage => Personality::Storage,
            })
            .collect(),
        administrative: match h.administrative {
            wit::AdministrativeState::Unlocked => AdministrativeState::Unlocked,
            wit::AdministrativeState::Locked => AdministrativeState::Locked,
        },
        operational: match h.operational {
            wit::OperationalState::Enabled => OperationalState::Enabled,
            wit::OperationalState::Disabled => OperationalState::Disabled,
        },
        availability: match h.availability {
            wit::AvailabilityState::Available => AvailabilityState::Available,
            wit::AvailabilityState::Degraded => AvailabilityState::Degraded,
            wit::AvailabilityState::Intest => AvailabilityState::Intest,
            wit::AvailabilityState::Online => AvailabilityState::Online,
            wit::AvailabilityState::Offline => AvailabilityState::Offline,
            wit::AvailabilityState::Failed => AvailabilityState::Failed,
            wit::AvailabilityState::PowerOff => AvailabilityState::PowerOff,
        },
        labels: h.labels.into_iter().map(|l| (l.key, l.value)).collect(),
        inventory: h.inventory.map(inventory_from_wit),
    }
}

fn inventory_from_wit(i: wit::HostInventory) -> HostInventory {
    HostInventory {
        cpus: i
            .cpus
            .into_iter()
            .map(|c| Cpu {
                id: c.id,
                numa_node: c.numa_node,
                core: c.core,
                thread: c.thread,
                function: match c.function {
                    wit::CpuFunction::Platform => CpuFunction::Platform,
                    wit::CpuFunction::Application => CpuFunction::Application,
                    wit::CpuFunction::ApplicationIsolated => CpuFunction::ApplicationIsolated,
                    wit::CpuFunction::Vswitch => CpuFunction::Vswitch,
                },
            })
            .collect(),
        memory: i
            .memory
            .into_iter()
            .map(|m| MemoryNode {
                numa_node: m.numa_node,
                total_mib: m.total_mib,
                platform_reserved_mib: m.platform_reserved_mib,
                available_mib: m.available_mib,
                hugepages_2m: m.hugepages_2m,
                hugepages_1g: m.hugepages_1g,
            })
            .collect(),
        interfaces: i
            .interfaces
            .into_iter()
            .map(|n| NetworkInterface {
                name: n.name,
                class: match n.class {
                    wit::InterfaceClass::Platform => InterfaceClass::Platform,
                    wit::InterfaceClass::Data => InterfaceClass::Data,
                    wit::InterfaceClass::PciPassthrough => InterfaceClass::PciPassthrough,
                    wit::InterfaceClass::PciSriov => InterfaceClass::PciSriov,
                    wit::InterfaceClass::None => InterfaceClass::None,
                },
                networks: n.networks,
                data_networks: n.data_networks,
                mtu: n.mtu,
                sriov_vfs: n.sriov_vfs,
            })
            .collect(),
        pci_devices: i
            .pci_devices
            .into_iter()
            .map(|d| PciDevice {
                address: d.address,
                vendor_id: d.vendor_id,
                device_id: d.device_id,
                name: d.name,
                class_id: d.class_id,
                numa_node: d.numa_node,
            })
            .collect(),
    }
}

fn network_from_wit(n: wit::Network) -> Network {
    Network {
        name: n.name,
        family: match n.family {
            wit::AddressFamily::Ipv4 => AddressFamily::Ipv4,
            wit::AddressFamily::Ipv6 => AddressFamily::Ipv6,
        },
        subnet: n.subnet,
        gateway: n.gateway,
        floating_address: n.floating_address,
        host_addresses: n
            .host_addresses
            .into_iter()
            .map(|a| HostAddress {
                host: a.host,
                address: a.address,
            })
            .collect(),
    }
}

fn backend_from_wit(b: wit::StorageBackend) -> StorageBackend {
    StorageBackend {
        name: b.name,
        kind: match b.kind {
            wit::StorageKind::Ceph => StorageKind::Ceph,
            wit::StorageKind::CephRook => StorageKind::CephRook,
            wit::StorageKind::Lvm => StorageKind::Lvm,
            wit::StorageKind::Nfs => StorageKind::Nfs,
            wit::StorageKind::External => StorageKind::External,
        },
        cluster_id: b.cluster_id,
        replication: b.replication,
        min_replication: b.min_replication,
        monitors: b
            .monitors
            .into_iter()
            .map(|m| Monitor {
                name: m.name,
                address: m.address,
            })
            .collect(),
        pools: b.pools,
        tiers: b
            .tiers
            .into_iter()
            .map(|t| StorageTier {
                name: t.name,
                rule: t.rule,
            })
            .collect(),
        services: b.services,
        is_default: b.is_default,
        health: match b.health {
            wit::StorageHealth::Ok => StorageHealth::Ok,
            wit::StorageHealth::Warn => StorageHealth::Warn,
            wit::StorageHealth::Error => StorageHealth::Error,
            wit::StorageHealth::Unknown => StorageHealth::Unknown,
        },
    }
}

fn cluster_from_wit(c: wit::ClusterFacts) -> ClusterFacts {
    ClusterFacts {
        kubernetes_version: c.kubernetes_version,
        api_versions: c.api_versions,
        storage_classes: c
            .storage_classes
            .into_iter()
            .map(|s| StorageClass {
                name: s.name,
                provisioner: s.provisioner,
                is_default: s.is_default,
            })
            .collect(),
    }
}

// ---------------------------------------------------------------- answers

/// Converts an [`Answer`] for the host.
///
/// # Errors
/// None today; kept fallible like [`hook_answer_to_wit`] so checks can be
/// added without changing callers.
pub(crate) fn answer_to_wit(a: Answer) -> Result<wit::ChartAnswer, PluginError> {
    Ok(wit::ChartAnswer {
        values: a.values.to_json(),
        secret_values: a
            .secret_values
            .into_iter()
            .map(|s| wit::SecretValue {
                path: s.path,
                source: match s.source {
                    SecretSource::Existing(r) => wit::SecretSource::Existing(wit::SecretKeyRef {
                        namespace: r.namespace,
                        name: r.name,
                        key: r.key,
                    }),
                    SecretSource::Generated(g) => wit::SecretSource::Generated(wit::GeneratedKey {
                        name: g.name,
                        key: g.key,
                    }),
                },
            })
            .collect(),
        generate: a
            .generate
            .into_iter()
            .map(|g| wit::GeneratedSecret {
                name: g.name,
                shape: match g.shape {
                    Shape::Password { length, charset } => {
                        wit::SecretShape::Password(wit::PasswordShape {
                            length,
                            charset: match charset {
                                Charset::Alphanumeric => wit::Charset::Alphanumeric,
                                Charset::Hex => wit::Charset::Hex,
                                Charset::Printable => wit::Charset::Printable,
                            },
                        })
                    }
                    Shape::Ed25519Key => wit::SecretShape::Ed25519Key,
                    Shape::Certificate {
                        common_name,
                        dns_names,
                        validity_days,
                    } => wit::SecretShape::Certificate(wit::CertificateShape {
                        common_name,
                        dns_names,
                        validity_days,
                    }),
                },
            })
            .collect(),
        disabled: a.disabled,
    })
}

/// Checks and converts a [`HookAnswer`] for the host.
///
/// # Errors
/// [`PluginError::Failed`] naming the action when an `ensure` object lacks
/// `apiVersion`, `kind` or `metadata.name`, when an override patch is not a
/// JSON object, or when the state is past [`MAX_STATE_BYTES`].
pub(crate) fn hook_answer_to_wit(a: HookAnswer) -> Result<wit::HookAnswer, PluginError> {
    if let Some(state) = &a.state
        && state.len() > MAX_STATE_BYTES
    {
        return Err(PluginError::Failed(format!(
            "hook state is {} bytes, past the {MAX_STATE_BYTES}-byte limit",
            state.len()
        )));
    }
    let actions = a
        .actions
        .into_iter()
        .enumerate()
        .map(|(i, action)| action_to_wit(i + 1, action))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(wit::HookAnswer {
        verdict: match a.verdict {
            Verdict::Proceed => wit::Verdict::Proceed,
            Verdict::Veto(reason) => wit::Verdict::Veto(reason),
        },
        actions,
        state: a.state,
        status: a.status.map(|s| match s {
            ReleaseStatus::Ready => wit::ReleaseStatus::Ready,
            ReleaseStatus::RetryAfter(secs) => {
                wit::ReleaseStatus::RetryAfter(secs.clamp(1, MAX_RETRY_AFTER_SECS))
            }
            ReleaseStatus::Failed(reason) => wit::ReleaseStatus::Failed(reason),
        }),
    })
}

fn action_to_wit(n: usize, action: Action) -> Result<wit::Action, PluginError> {
    Ok(match action {
        Action::Mirror(m) => wit::Action::Mirror(wit::Mirror {
            kind: match m.kind {
                MirrorKind::Secret => wit::MirrorKind::Secret,
                MirrorKind::ConfigMap => wit::MirrorKind::ConfigMap,
            },
            from_namespace: m.from_namespace,
            from_name: m.from_name,
            to_namespace: m.to_namespace,
            to_name: m.to_name,
        }),
        Action::Ensure(object) => {
            check_identity(&object)
                .map_err(|what| PluginError::Failed(format!("ensure (action {n}): {what}")))?;
            wit::Action::Ensure(object.to_string())
        }
        Action::Delete(object) => wit::Action::Delete(object_ref_to_wit(object)),
        Action::Restart(w) => wit::Action::Restart(wit::WorkloadRef {
            kind: w.kind.as_str().to_string(),
            namespace: w.namespace,
            name: w.name,
        }),
        Action::PatchOverrides(p) => {
            if !p.patch.is_object() {
                return Err(PluginError::Failed(format!(
                    "patch-overrides of chart {} (action {n}): the patch is not a JSON object",
                    p.chart
                )));
            }
            wit::Action::PatchOverrides(wit::OverridePatch {
                chart: p.chart,
                patch: p.patch.to_string(),
            })
        }
        Action::RequestReapply(reason) => wit::Action::RequestReapply(reason),
        Action::Observe(object) => wit::Action::Observe(object_ref_to_wit(object)),
    })
}

/// An object to ensure must say what it is: a JSON object with non-empty
/// `apiVersion`, `kind` and `metadata.name`.
fn check_identity(object: &Value) -> Result<(), &'static str> {
    let Some(map) = object.as_object() else {
        return Err("the object is not a JSON object");
    };
    let non_empty = |v: Option<&Value>| v.and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    if !non_empty(map.get("apiVersion")) {
        return Err("the object has no apiVersion");
    }
    if !non_empty(map.get("kind")) {
        return Err("the object has no kind");
    }
    if !non_empty(map.get("metadata").and_then(|m| m.get("name"))) {
        return Err("the object has no metadata.name");
    }
    Ok(())
}

fn object_ref_to_wit(o: ObjectRef) -> wit::ObjectRef {
    wit::ObjectRef {
        api_version: o.api_version,
        kind: o.kind,
        namespace: o.namespace,
        name: o.name,
    }
}

fn object_ref_from_wit(o: wit::ObjectRef) -> ObjectRef {
    ObjectRef {
        api_version: o.api_version,
        kind: o.kind,
        namespace: o.namespace,
        name: o.name,
    }
}

fn error_to_wit(e: PluginError) -> wit::PluginError {
    match e {
        PluginError::InvalidFacts(m) => wit::PluginError::InvalidFacts(m),
        PluginError::Unsupported(m) => wit::PluginError::Unsupported(m),
        PluginError::Failed(m) => wit::PluginError::Failed(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v0_1::Values;
    use crate::v0_2::answer::{SecretKeyRef, key};
    use crate::v0_2::hook_answer::RestartKind;
    use serde_json::json;

    fn wit_app() -> wit::App {
        wit::App {
            name: "app".into(),
            version: "1.0.0".into(),
        }
    }

    fn wit_facts(extra: &str) -> wit::Facts {
        wit::Facts {
            system: None,
            hosts: Some(vec![wit::HostInfo {
                name: "controller-0".into(),
                personalities: vec![wit::Personality::Controller, wit::Personality::Worker],
                administrative: wit::AdministrativeState::Unlocked,
                operational: wit::OperationalState::Enabled,
                availability: wit::AvailabilityState::Available,
                labels: vec![wit::Label {
                    key: "kubernetes.io/hostname".into(),
                    value: "controller-0".into(),
                }],
                inventory: None,
            }]),
            networks: None,
            storage: None,
            service_parameters: None,
            cluster: None,
            local_volumes: Vec::new(),
            extra: extra.into(),
        }
    }

    fn wit_chart_call(user_overrides: &str) -> wit::ChartCall {
        wit::ChartCall {
            app: wit_app(),
            chart: "web".into(),
            namespace: "web-ns".into(),
            user_overrides: user_overrides.into(),
        }
    }

    fn wit_hook_call(overrides: &str) -> wit::HookCall {
        wit::HookCall {
            hook: wit::Hook::Status,
            app: wit_app(),
            mode: wit::Mode::Auto,
            operation: wit::Operation::Apply,
            from_version: None,
            to_version: None,
            release: Some("web".into()),
            release_namespace: Some("web".into()),
            attempt: 2,
            namespaces: vec!["web".into()],
            trigger: None,
            state: Some(b"n=1".to_vec()),
            user_overrides: vec![wit::ChartOverrides {
                chart: "web".into(),
                values: overrides.into(),
            }],
            observed: vec![wit::ObservedObject {
                object: wit::ObjectRef {
                    api_version: "v1".into(),
                    kind: "Secret".into(),
                    namespace: Some("web-ns".into()),
                    name: "tls".into(),
                },
                exists: true,
                ready: false,
            }],
        }
    }

    struct Echo;
    impl Plugin for Echo {
        fn info() -> Info {
            Info::new("echo", "1.0.0").reading([Section::Hosts])
        }
        fn overrides(call: &ChartCall, facts: &Facts) -> Result<Answer, PluginError> {
            Ok(Answer::new(
                Values::new()
                    .set("user", call.user_overrides.clone())
                    .set("replicas", facts.ready_controllers()?),
            )
            .secret_from("db.password", SecretKeyRef::new("db", "creds", "pw"))
            .generate("admin", Shape::password(16, Charset::Printable))
            .secret_generated("admin.password", "admin", key::PASSWORD))
        }
        fn lifecycle(call: &HookCall, _facts: &Facts) -> Result<HookAnswer, PluginError> {
            let tls = ObjectRef::namespaced("v1", "Secret", "web-ns", "tls");
            assert_eq!(call.observed(&tls).map(|o| o.exists), Some(true));
            Ok(HookAnswer::retry_after(2)
                .restart(RestartKind::StatefulSet, "web-ns", "web")
                .patch_overrides("web", json!({"a": null}))
                .with_state(call.state.clone().unwrap_or_default()))
        }
    }

    #[test]
    fn info_declares_sections_and_hooks() {
        let info = info_to_wit(
            Info::new("p", "1")
                .with_hooks([Hook::Status, Hook::Status])
                .reading([Section::Inventory]),
        );
        assert_eq!(info.hooks.len(), 1);
        assert!(matches!(
            info.facts.as_slice(),
            [wit::FactsSection::Hosts, wit::FactsSection::Inventory]
        ));
    }

    #[test]
    fn an_answer_crosses_the_boundary_whole() {
        let answer = overrides::<Echo>(wit_chart_call(r#"{"x": 1}"#), wit_facts("")).unwrap();
        let values: Value = serde_json::from_str(&answer.values).unwrap();
        assert_eq!(values, json!({"user": {"x": 1}, "replicas": 1}));
        assert_eq!(answer.secret_values.len(), 2);
        assert!(matches!(
            &answer.secret_values[1].source,
            wit::SecretSource::Generated(g) if g.name == "admin" && g.key == "password"
        ));
        assert!(matches!(
            &answer.generate[0].shape,
            wit::SecretShape::Password(p) if p.length == 16
        ));
    }

    #[test]
    fn empty_user_overrides_are_an_empty_object() {
        let call = chart_call_from_wit(wit_chart_call("  ")).unwrap();
        assert_eq!(call.user_overrides, json!({}));
    }

    #[test]
    fn bad_json_from_the_host_is_an_error_not_a_panic() {
        let err = overrides::<Echo>(wit_chart_call("{not json"), wit_facts("")).unwrap_err();
        assert!(
            matches!(&err, wit::PluginError::InvalidFacts(m) if m.starts_with("user overrides of chart web are not JSON")),
            "{err:?}"
        );
        let err = overrides::<Echo>(wit_chart_call("{}"), wit_facts("[1,")).unwrap_err();
        assert!(
            matches!(&err, wit::PluginError::InvalidFacts(m) if m.starts_with("extra facts are not JSON")),
            "{err:?}"
        );
        let err = lifecycle::<Echo>(wit_hook_call("nope"), wit_facts("")).unwrap_err();
        assert!(matches!(err, wit::PluginError::InvalidFacts(_)), "{err:?}");
    }

    #[test]
    fn a_hook_call_and_answer_cross_the_boundary_whole() {
        let answer = lifecycle::<Echo>(wit_hook_call(r#"{"a": 1}"#), wit_facts("{}")).unwrap();
        assert!(matches!(answer.verdict, wit::Verdict::Proceed));
        assert!(matches!(
            answer.status,
            Some(wit::ReleaseStatus::RetryAfter(2))
        ));
        assert_eq!(answer.state.as_deref(), Some(&b"n=1"[..]));
        assert!(matches!(
            &answer.actions[0],
            wit::Action::Restart(w) if w.kind == "StatefulSet" && w.name == "web"
        ));
        assert!(matches!(
            &answer.actions[1],
            wit::Action::PatchOverrides(p) if p.patch == r#"{"a":null}"#
        ));
    }

    #[test]
    fn malformed_actions_are_refused_by_name() {
        let check = |action: Action| {
            let mut answer = HookAnswer::proceed();
            answer.actions.push(action);
            hook_answer_to_wit(answer).unwrap_err().to_string()
        };
        assert_eq!(
            check(Action::Ensure(json!([1]))),
            "ensure (action 1): the object is not a JSON object"
        );
        assert_eq!(
            check(Action::Ensure(
                json!({"apiVersion": "v1", "kind": "ConfigMap"})
            )),
            "ensure (action 1): the object has no metadata.name"
        );
        assert_eq!(
            check(Action::PatchOverrides(crate::v0_2::OverridePatch {
                chart: "web".into(),
                patch: Value::Null
            })),
            "patch-overrides of chart web (action 1): the patch is not a JSON object"
        );
        let mut answer = HookAnswer::proceed();
        answer.status = Some(ReleaseStatus::RetryAfter(0));
        assert!(matches!(
            hook_answer_to_wit(answer).map(|a| a.status),
            Ok(Some(wit::ReleaseStatus::RetryAfter(1)))
        ));
    }
}
