//! The [`Plugin`] trait and the glue between it and the generated bindings.

use crate::v0_1::facts::{App, Component, Facts};
use crate::v0_1::values::Values;

/// A point in an app's life where the platform asks its plugins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// May the app be applied on this platform at all?
    SemanticCheck,
    /// Just before the charts are applied.
    PreApply,
    /// After every chart group was applied.
    PostApply,
    /// Just before the app's resources are removed.
    PreRemove,
    /// After the app's resources were removed.
    PostRemove,
    /// Before an update starts.
    PreUpdate,
    /// After an update finished.
    PostUpdate,
}

/// A plugin's verdict on a hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    /// Go on with the operation.
    Proceed,
    /// Stop the operation, with a reason for the operator.
    Veto(String),
}

/// The kind of workload a component runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadKind {
    /// A Deployment.
    Deployment,
    /// A StatefulSet.
    StatefulSet,
}

/// A failure the plugin reports itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginError {
    /// The facts lack something needed, or contradict each other.
    InvalidFacts(String),
    /// The call asked for a chart, component or hook this plugin does not serve.
    Unsupported(String),
    /// Any other failure.
    Failed(String),
}

impl std::fmt::Display for PluginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PluginError::InvalidFacts(m) => write!(f, "invalid facts: {m}"),
            PluginError::Unsupported(m) => write!(f, "unsupported: {m}"),
            PluginError::Failed(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for PluginError {}

/// What a plugin declares about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    /// The plugin's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// Charts it computes overrides for.
    pub charts: Vec<String>,
    /// Hooks it implements.
    pub hooks: Vec<Hook>,
    /// Whether it decides workload kinds.
    pub decides_workloads: bool,
}

impl Info {
    /// A plugin that serves no chart and no hook yet.
    pub fn new(name: &str, version: &str) -> Self {
        Info {
            name: name.into(),
            version: version.into(),
            charts: Vec::new(),
            hooks: Vec::new(),
            decides_workloads: false,
        }
    }

    /// Declares the charts this plugin computes overrides for.
    pub fn serving_charts<I, S>(mut self, charts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.charts.extend(charts.into_iter().map(Into::into));
        self
    }

    /// Declares the hooks this plugin implements.
    pub fn serving_hooks(mut self, hooks: impl IntoIterator<Item = Hook>) -> Self {
        self.hooks.extend(hooks);
        self
    }

    /// Declares that this plugin decides workload kinds.
    pub fn deciding_workloads(mut self) -> Self {
        self.decides_workloads = true;
        self
    }
}

/// An override plugin. Implement it on a unit struct and export it with
/// [`crate::export_plugin!`].
///
/// Every method is called with a fresh instance: keep no state between
/// calls. Only [`Plugin::info`] and [`Plugin::overrides`] are required.
pub trait Plugin {
    /// Describes the plugin.
    fn info() -> Info;

    /// Computes the system overrides for `chart`.
    ///
    /// # Errors
    /// A [`PluginError`] when the facts do not allow values for `chart`; the
    /// host reports it with the plugin's name and applies nothing.
    fn overrides(app: &App, facts: &Facts, chart: &str) -> Result<Values, PluginError>;

    /// Decides the workload kind of `component`. By default a plugin does
    /// not decide, and the host applies its default rule.
    ///
    /// # Errors
    /// [`PluginError::Unsupported`] when the plugin does not decide (the
    /// default); any other [`PluginError`] fails the operation.
    fn workload_kind(
        app: &App,
        facts: &Facts,
        component: &Component,
    ) -> Result<WorkloadKind, PluginError> {
        let _ = (app, facts);
        Err(PluginError::Unsupported(format!(
            "workload kind of component {}",
            component.name
        )))
    }

    /// Runs a lifecycle hook. By default every hook proceeds.
    ///
    /// # Errors
    /// A [`PluginError`] fails the operation; to stop it with a reason,
    /// return [`HookOutcome::Veto`] instead.
    fn lifecycle(hook: Hook, app: &App, facts: &Facts) -> Result<HookOutcome, PluginError> {
        let _ = (hook, app, facts);
        Ok(HookOutcome::Proceed)
    }
}

/// Conversions between the generated WIT types and this crate's types,
/// used by [`crate::export_plugin!`].
#[doc(hidden)]
pub mod glue {
    use super::*;
    use crate::bindings::capstan::plugin::types as wit;
    use crate::v0_1::facts::{
        LocalVolume, Node, NodeRole, StorageBackend, StorageKind, SystemMode,
    };

    pub fn info<P: Plugin>() -> wit::PluginInfo {
        let info = P::info();
        wit::PluginInfo {
            name: info.name,
            version: info.version,
            charts: info.charts,
            hooks: info.hooks.into_iter().map(hook_to_wit).collect(),
            decides_workloads: info.decides_workloads,
        }
    }

    pub fn overrides<P: Plugin>(
        app: wit::App,
        facts: wit::Facts,
        chart: String,
    ) -> Result<String, wit::PluginError> {
        let facts = facts_from_wit(facts)?;
        P::overrides(&app_from_wit(app), &facts, &chart)
            .map(|v| v.to_json())
            .map_err(error_to_wit)
    }

    pub fn workload_kind<P: Plugin>(
        app: wit::App,
        facts: wit::Facts,
        component: wit::Component,
    ) -> Result<wit::WorkloadKind, wit::PluginError> {
        let facts = facts_from_wit(facts)?;
        let component = component_from_wit(component);
        match P::workload_kind(&app_from_wit(app), &facts, &component) {
            Ok(WorkloadKind::Deployment) => Ok(wit::WorkloadKind::Deployment),
            Ok(WorkloadKind::StatefulSet) => Ok(wit::WorkloadKind::StatefulSet),
            Err(e) => Err(error_to_wit(e)),
        }
    }

    pub fn lifecycle<P: Plugin>(
        hook: wit::Hook,
        app: wit::App,
        facts: wit::Facts,
    ) -> Result<wit::HookOutcome, wit::PluginError> {
        let facts = facts_from_wit(facts)?;
        match P::lifecycle(hook_from_wit(hook), &app_from_wit(app), &facts) {
            Ok(HookOutcome::Proceed) => Ok(wit::HookOutcome::Proceed),
            Ok(HookOutcome::Veto(reason)) => Ok(wit::HookOutcome::Veto(reason)),
            Err(e) => Err(error_to_wit(e)),
        }
    }

    fn app_from_wit(app: wit::App) -> App {
        App {
            name: app.name,
            version: app.version,
        }
    }

    fn facts_from_wit(f: wit::Facts) -> Result<Facts, wit::PluginError> {
        let extra = if f.extra.trim().is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_str(&f.extra).map_err(|e| {
                wit::PluginError::InvalidFacts(format!("extra facts are not JSON: {e}"))
            })?
        };
        Ok(Facts {
            system_mode: match f.system_mode {
                wit::SystemMode::Simplex => SystemMode::Simplex,
                wit::SystemMode::Duplex => SystemMode::Duplex,
                wit::SystemMode::Standard => SystemMode::Standard,
            },
            controller_count: f.controller_count,
            worker_count: f.worker_count,
            nodes: f.nodes.into_iter().map(node_from_wit).collect(),
            storage_backends: f
                .storage_backends
                .into_iter()
                .map(backend_from_wit)
                .collect(),
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
            kubernetes_version: f.kubernetes_version,
            extra,
        })
    }

    fn node_from_wit(n: wit::Node) -> Node {
        Node {
            name: n.name,
            roles: n
                .roles
                .into_iter()
                .map(|r| match r {
                    wit::NodeRole::Controller => NodeRole::Controller,
                    wit::NodeRole::Worker => NodeRole::Worker,
                    wit::NodeRole::Storage => NodeRole::Storage,
                })
                .collect(),
            labels: n.labels.into_iter().map(|l| (l.key, l.value)).collect(),
            schedulable: n.schedulable,
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
            replication: b.replication,
            monitors: b.monitors,
            pools: b.pools,
            is_default: b.is_default,
        }
    }

    fn component_from_wit(c: wit::Component) -> Component {
        Component {
            name: c.name,
            chart: c.chart,
            workload: c.workload,
            volumes: c
                .volumes
                .into_iter()
                .map(|v| crate::v0_1::facts::VolumeTrait {
                    container: v.container,
                    storage_class_name: v.storage_class_name,
                    size: v.size,
                    path: v.path,
                })
                .collect(),
            local_volumes: c.local_volumes,
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
        }
    }

    fn error_to_wit(e: PluginError) -> wit::PluginError {
        match e {
            PluginError::InvalidFacts(m) => wit::PluginError::InvalidFacts(m),
            PluginError::Unsupported(m) => wit::PluginError::Unsupported(m),
            PluginError::Failed(m) => wit::PluginError::Failed(m),
        }
    }
}
