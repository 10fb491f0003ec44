//! Contract `capstan:plugin@0.1.0` (`wit/v0.1/plugin.wit`): the [`Contract`]
//! of components built against it. Their calls are exactly what they were
//! before 0.2.0 existed: the same facts (the 0.1.0 fields only), the same
//! inputs, hence the same seeds and answers. What 0.1.0 cannot say is
//! empty in their answers (no secret values, no actions), and the hooks
//! 0.2.0 added are never theirs.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{HasSelf, InstancePre, Linker};

use super::PluginError;
use super::bindings::capstan::plugin::types as wit;
use super::bindings::{OverridePlugin, OverridePluginPre};
use super::call::HostState;
use super::contract::{
    Answer, Contract, Declared, PreparedFacts, RawAnswer, RawHookAnswer, WitFacts, json_bytes,
};
use crate::model::{App, ComponentFacts, Facts};
use crate::model::{
    ChartCall, ContractVersion, FactsSection, Hook, HookCall, HookOutcome, WorkloadKind,
};

/// A component built against 0.1.0.
pub(crate) struct V0_1 {
    pre: OverridePluginPre<HostState>,
}

/// Adds the 0.1.0 `host` import to `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    OverridePlugin::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)
}

/// `pre` as a 0.1.0 plugin, if its exports are 0.1.0's world.
pub(crate) fn bind(pre: InstancePre<HostState>) -> wasmtime::Result<V0_1> {
    Ok(V0_1 {
        pre: OverridePluginPre::new(pre)?,
    })
}

impl Contract for V0_1 {
    fn version(&self) -> ContractVersion {
        ContractVersion::V0_1
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
            facts: Vec::new(),
        })
    }

    /// Only what 0.1.0 has (see [`Facts::as_of_0_1`]), in the seed's text
    /// as in the record.
    fn prepare(&self, facts: &Facts, _sections: &[FactsSection]) -> PreparedFacts {
        PreparedFacts {
            json: json_bytes(&facts.as_of_0_1()).into(),
            wit: WitFacts::V0_1(Arc::new(facts.to_wit())),
        }
    }

    fn overrides(
        &self,
        store: &mut Store<HostState>,
        call: &ChartCall,
        facts: &WitFacts,
    ) -> Answer<RawAnswer> {
        let facts = facts.as_0_1()?;
        let app = wit::App {
            name: call.app.clone(),
            version: call.version.clone(),
        };
        let plugin = self.pre.instantiate(&mut *store)?;
        let answer = plugin.call_overrides(store, &app, facts, &call.chart)?;
        Ok(answer
            .map(|values| RawAnswer {
                values,
                secret_values: Vec::new(),
                generate: Vec::new(),
                disabled: false,
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
        let facts = facts.as_0_1()?;
        let plugin = self.pre.instantiate(&mut *store)?;
        let answer = plugin.call_workload_kind(store, &app.to_wit(), facts, &component.to_wit())?;
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
        let facts = facts.as_0_1()?;
        let Some(hook) = hook_to_wit(call.hook) else {
            return Ok(Err(PluginError::Unsupported(format!(
                "hook {} is not in contract 0.1.0",
                call.hook
            ))));
        };
        let app = wit::App {
            name: call.app.clone(),
            version: call.version.clone(),
        };
        let plugin = self.pre.instantiate(&mut *store)?;
        let answer = plugin.call_lifecycle(store, hook, &app, facts)?;
        Ok(answer
            .map(|outcome| RawHookAnswer {
                verdict: match outcome {
                    wit::HookOutcome::Proceed => HookOutcome::Proceed,
                    wit::HookOutcome::Veto(reason) => HookOutcome::Veto(reason),
                },
                actions: Vec::new(),
                state: None,
                status: None,
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

fn hook_to_wit(hook: Hook) -> Option<wit::Hook> {
    Some(match hook {
        Hook::SemanticCheck => wit::Hook::SemanticCheck,
        Hook::PreApply => wit::Hook::PreApply,
        Hook::PostApply => wit::Hook::PostApply,
        Hook::PreRemove => wit::Hook::PreRemove,
        Hook::PostRemove => wit::Hook::PostRemove,
        Hook::PreUpdate => wit::Hook::PreUpdate,
        Hook::PostUpdate => wit::Hook::PostUpdate,
        Hook::Status
        | Hook::EvaluateReapply
        | Hook::PostAbort
        | Hook::PreRecover
        | Hook::PostRecover => return None,
    })
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
    }
}
