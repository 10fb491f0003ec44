//! The seam between the sandbox and the contract versions it speaks:
//! [`Contract`], implemented once per WIT package version
//! ([`super::v0_1`] for `capstan:plugin@0.1.0`, [`super::v0_2`] for
//! `capstan:plugin@0.2.0`). A loaded plugin holds the one its component
//! was built against; the runtime asks it in the host's terms
//! ([`crate::model::ChartCall`], [`crate::model::HookCall`]) and gets raw
//! answers back, which it checks (sizes, JSON shapes) the same way for
//! every version.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{Component, InstancePre, Linker};

use super::call::HostState;
use super::facts::{App, ComponentFacts, Facts};
use super::{PluginError, v0_1, v0_2};
use crate::model::{
    Action, ChartCall, FactsSection, GeneratedSecret, Hook, HookCall, HookOutcome, ReleaseStatus,
    SecretValue, WorkloadKind,
};

/// What `info` declared, before the runtime checks it.
pub(crate) struct Declared {
    pub name: String,
    pub version: String,
    pub charts: Vec<String>,
    pub hooks: Vec<Hook>,
    pub decides_workloads: bool,
    pub facts: Vec<FactsSection>,
}

/// A chart answer with its JSON still text.
pub(crate) struct RawAnswer {
    pub values: String,
    pub secret_values: Vec<SecretValue>,
    pub generate: Vec<GeneratedSecret>,
    pub disabled: bool,
}

/// An action with its JSON still text.
pub(crate) enum RawAction {
    /// One that carries no JSON.
    Plain(Action),
    /// `ensure` with its object.
    Ensure(String),
    /// `patch-overrides` with its patch.
    PatchOverrides { chart: String, patch: String },
}

/// A hook answer with its JSON still text.
pub(crate) struct RawHookAnswer {
    pub verdict: HookOutcome,
    pub actions: Vec<RawAction>,
    pub state: Option<Vec<u8>>,
    pub status: Option<ReleaseStatus>,
}

/// What a call returns: the plugin's answer or its own error, inside the
/// trap (or interrupt) that may have ended the call.
pub(crate) type Answer<T> = wasmtime::Result<Result<T, PluginError>>;

/// One contract version's calls, on a component built against it. Each
/// call instantiates the component afresh in `store`.
pub(crate) trait Contract: Send + Sync {
    /// The WIT package version, `0.1.0` or `0.2.0`.
    fn version(&self) -> &'static str;

    /// `info`.
    fn info(&self, store: &mut Store<HostState>) -> wasmtime::Result<Declared>;

    /// `overrides` for one chart. `sections` are those the plugin
    /// declared; a version without sections ignores them.
    fn overrides(
        &self,
        store: &mut Store<HostState>,
        call: &ChartCall,
        facts: &Facts,
        sections: &[FactsSection],
    ) -> Answer<RawAnswer>;

    /// `workload-kind`; `Ok(None)` when the plugin does not decide it.
    fn workload_kind(
        &self,
        store: &mut Store<HostState>,
        app: &App,
        facts: &Facts,
        sections: &[FactsSection],
        component: &ComponentFacts,
    ) -> Answer<Option<WorkloadKind>>;

    /// `lifecycle`.
    fn lifecycle(
        &self,
        store: &mut Store<HostState>,
        call: &HookCall,
        facts: &Facts,
        sections: &[FactsSection],
    ) -> Answer<RawHookAnswer>;
}

/// Adds the host's imports of every contract version to `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    v0_1::add_to_linker(linker)?;
    v0_2::add_to_linker(linker)
}

/// The contract `component` was built against: the one whose world its
/// exports type-check as. When none does, the error is the one of the
/// version it imports (0.1.0 when it imports neither).
pub(crate) fn bind(
    component: &Component,
    pre: InstancePre<HostState>,
) -> Result<Arc<dyn Contract>, wasmtime::Error> {
    let newer = match v0_2::bind(pre.clone()) {
        Ok(contract) => return Ok(Arc::new(contract)),
        Err(error) => error,
    };
    let older = match v0_1::bind(pre) {
        Ok(contract) => return Ok(Arc::new(contract)),
        Err(error) => error,
    };
    if imports_0_2(component) {
        Err(newer)
    } else {
        Err(older)
    }
}

/// Whether `component` imports an interface of `capstan:plugin@0.2.0`.
fn imports_0_2(component: &Component) -> bool {
    component
        .component_type()
        .imports(component.engine())
        .any(|(name, _)| name.starts_with("capstan:plugin/") && name.ends_with("@0.2.0"))
}
