//! The seam between the sandbox and the contract versions it speaks:
//! [`Contract`], implemented once per WIT package version
//! ([`super::v0_1`] for `capstan:plugin@0.1.0`, [`super::v0_2`] for
//! `capstan:plugin@0.2.0`). A loaded plugin holds the one its component
//! was built against; the runtime asks it in the host's terms
//! ([`crate::model::ChartCall`], [`crate::model::HookCall`]) and gets raw
//! answers back, which it checks (sizes, JSON shapes) the same way for
//! every version. The facts cross in a form the contract prepares once
//! per distinct facts ([`PreparedFacts`]), which the runtime keeps.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{Component, InstancePre, Linker};

use super::bindings::capstan::plugin::types as wit_0_1;
use super::bindings_v2::capstan::plugin::types as wit_0_2;
use super::call::HostState;
use super::{PluginError, v0_1, v0_2};
use crate::model::{
    Action, ChartCall, ContractVersion, FactsSection, GeneratedSecret, Hook, HookCall, HookOutcome,
    ReleaseStatus, SecretValue, WorkloadKind,
};
use crate::model::{App, ComponentFacts, Facts};

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

/// The facts as one contract's calls take them, made by
/// [`Contract::prepare`]: their JSON text as a call's seed reads it, and
/// the WIT record the component is given. Both are shared, so a plugin
/// keeps the last ones it made and an apply's calls (every chart of an
/// app, with the same facts) build neither again.
#[derive(Clone)]
pub(crate) struct PreparedFacts {
    /// The seed's input.
    pub json: Arc<[u8]>,
    /// The component's argument.
    pub wit: WitFacts,
}

/// The WIT record of the facts, of the contract version that made it.
#[derive(Clone)]
pub(crate) enum WitFacts {
    /// `capstan:plugin@0.1.0`'s `facts`.
    V0_1(Arc<wit_0_1::Facts>),
    /// `capstan:plugin@0.2.0`'s `facts`, projected to the plugin's sections.
    V0_2(Arc<wit_0_2::Facts>),
}

impl WitFacts {
    /// The 0.1.0 record, for a 0.1.0 contract's calls.
    ///
    /// # Errors
    /// Facts another contract prepared (a bug of the host's, kept an
    /// error rather than a panic).
    pub(crate) fn as_0_1(&self) -> wasmtime::Result<&wit_0_1::Facts> {
        match self {
            WitFacts::V0_1(facts) => Ok(facts),
            WitFacts::V0_2(_) => Err(self.foreign(ContractVersion::V0_1)),
        }
    }

    /// The 0.2.0 record, for a 0.2.0 contract's calls.
    ///
    /// # Errors
    /// As [`WitFacts::as_0_1`].
    pub(crate) fn as_0_2(&self) -> wasmtime::Result<&wit_0_2::Facts> {
        match self {
            WitFacts::V0_2(facts) => Ok(facts),
            WitFacts::V0_1(_) => Err(self.foreign(ContractVersion::V0_2)),
        }
    }

    fn foreign(&self, contract: ContractVersion) -> wasmtime::Error {
        let made = match self {
            WitFacts::V0_1(_) => ContractVersion::V0_1,
            WitFacts::V0_2(_) => ContractVersion::V0_2,
        };
        wasmtime::Error::msg(format!(
            "facts prepared for contract {made} given to a {contract} plugin"
        ))
    }
}

/// `value`'s JSON text, as a call's seed reads it.
pub(crate) fn json_bytes(value: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// What a call returns: the plugin's answer or its own error, inside the
/// trap (or interrupt) that may have ended the call.
pub(crate) type Answer<T> = wasmtime::Result<Result<T, PluginError>>;

/// One contract version's calls, on a component built against it. Each
/// call instantiates the component afresh in `store`.
pub(crate) trait Contract: Send + Sync {
    /// The WIT package version.
    fn version(&self) -> ContractVersion;

    /// `info`.
    fn info(&self, store: &mut Store<HostState>) -> wasmtime::Result<Declared>;

    /// `facts` as this version's calls take them. `sections` are those the
    /// plugin declared; a version without sections ignores them.
    fn prepare(&self, facts: &Facts, sections: &[FactsSection]) -> PreparedFacts;

    /// `overrides` for one chart, with facts this contract prepared.
    fn overrides(
        &self,
        store: &mut Store<HostState>,
        call: &ChartCall,
        facts: &WitFacts,
    ) -> Answer<RawAnswer>;

    /// `workload-kind`; `Ok(None)` when the plugin does not decide it.
    fn workload_kind(
        &self,
        store: &mut Store<HostState>,
        app: &App,
        facts: &WitFacts,
        component: &ComponentFacts,
    ) -> Answer<Option<WorkloadKind>>;

    /// `lifecycle`.
    fn lifecycle(
        &self,
        store: &mut Store<HostState>,
        call: &HookCall,
        facts: &WitFacts,
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
        .any(|(name, _)| {
            super::inspect::capstan_version(name).and_then(ContractVersion::parse)
                == Some(ContractVersion::V0_2)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_of_another_version_are_an_error_naming_both() {
        let facts = Facts::from_yaml(
            "systemMode: simplex\ncontrollerCount: 1\nworkerCount: 1\nkubernetesVersion: 1.30.0\n",
        )
        .unwrap();
        let newer = WitFacts::V0_2(Arc::new(v0_2::facts_to_wit(&facts, &[])));
        let older = WitFacts::V0_1(Arc::new(facts.to_wit()));
        assert_eq!(
            newer.as_0_1().err().map(|e| e.to_string()).as_deref(),
            Some("facts prepared for contract 0.2.0 given to a 0.1.0 plugin")
        );
        assert_eq!(
            older.as_0_2().err().map(|e| e.to_string()).as_deref(),
            Some("facts prepared for contract 0.1.0 given to a 0.2.0 plugin")
        );
        assert!(older.as_0_1().is_ok() && newer.as_0_2().is_ok());
    }
}
