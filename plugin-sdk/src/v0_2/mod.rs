//! Plugins for contract 0.2.0 (`wit/v0.2/plugin.wit`): typed fact
//! sections, chart calls with user overrides, answers with secret values and
//! generated secrets, and hook answers that ask the host to act.
//!
//! This module owns the 0.2 side of the SDK: the bindings generated from
//! `wit/v0.2`, the [`Plugin`] trait, typed mirrors of every WIT type, the
//! builders plugins answer with, the glue between those and the bindings,
//! [`export_plugin!`] and native [`testing`] helpers. It shares [`Values`], [`App`], [`Component`], [`LocalVolume`],
//! [`WorkloadKind`] and [`PluginError`] with the 0.1 API, which it leaves
//! untouched: a crate uses one contract or the other, never both.
//!
//! # How a 0.2 plugin differs from a 0.1 plugin
//!
//! - It declares in [`Info::reading`] the fact [`Section`]s it reads; the
//!   host hands it only those, and the others are `None`. Each accessor
//!   such as [`Facts::require_system`] or [`Facts::ready_controllers`]
//!   fails with [`PluginError::InvalidFacts`] naming the section when it was
//!   not declared, so `?` turns a forgotten declaration into a clear error.
//! - [`Plugin::overrides`] gets a [`ChartCall`] (with the chart's user
//!   overrides) and answers an [`Answer`]: values, values filled in by the
//!   host from Secrets, secrets for the host to generate, or "disabled".
//! - [`Plugin::lifecycle`] gets a [`HookCall`] and answers a [`HookAnswer`]:
//!   a verdict, actions for the host (mirror, ensure, delete, restart, patch
//!   overrides, reapply, observe), state for the post hook and, for the
//!   `status` hook, the release's status.
//! - It logs through [`v0_2::log`](log), which reaches the 0.2 host import
//!   (the crate-level [`crate::log`] is wired to 0.1's).
//!
//! # Example
//!
//! ```
//! use capstan_plugin_sdk::v0_2::{
//!     Answer, ChartCall, Facts, Hook, HookAnswer, HookCall, Info, Plugin, PluginError,
//!     Section, Values, export_plugin, testing,
//! };
//!
//! struct Web;
//!
//! impl Plugin for Web {
//!     fn info() -> Info {
//!         Info::new("web", "0.2.0")
//!             .serving_charts(["web"])
//!             .with_hooks([Hook::PreApply])
//!             .reading([Section::System, Section::Hosts])
//!     }
//!
//!     fn overrides(_call: &ChartCall, facts: &Facts) -> Result<Answer, PluginError> {
//!         let replicas = facts.ready_controllers()?.min(2);
//!         let values = Values::new()
//!             .set("replicaCount", replicas)
//!             .set("leaderElection.enabled", !facts.is_simplex()?);
//!         Ok(Answer::new(values))
//!     }
//!
//!     fn lifecycle(call: &HookCall, facts: &Facts) -> Result<HookAnswer, PluginError> {
//!         if call.hook == Hook::PreApply && facts.require_system()?.upgrade_in_progress {
//!             return Ok(HookAnswer::veto("the platform is being upgraded"));
//!         }
//!         Ok(HookAnswer::proceed())
//!     }
//! }
//!
//! export_plugin!(Web);
//!
//! // Native unit tests of the same logic, with facts projected on the
//! // sections `info()` declares, as the host does:
//! let answer = testing::overrides::<Web>(&testing::chart_call("web"), &testing::duplex()).unwrap();
//! assert_eq!(answer.values.get("replicaCount"), Some(&serde_json::json!(2)));
//! let answer = testing::lifecycle::<Web>(&testing::hook_call(Hook::PreApply), &testing::simplex()).unwrap();
//! assert!(!answer.is_veto());
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2`; the `.wasm` in
//! `target/wasm32-wasip2/release/` is the component to ship in a bundle.

mod answer;
mod calls;
mod facts;
#[doc(hidden)]
pub mod glue;
mod hook_answer;
pub mod log;
mod plugin;
mod sections;
pub mod testing;

pub use crate::v0_1::Values;
pub use crate::v0_1::{App, Component, LocalVolume, VolumeTrait};
pub use crate::v0_1::{PluginError, WorkloadKind};
pub use answer::{
    Answer, Charset, GeneratedKey, GeneratedSecret, SecretKeyRef, SecretSource, SecretValue, Shape,
    key,
};
pub use calls::{ChartCall, Hook, HookCall, Mode, ObservedObject, Operation, Trigger};
pub use facts::Facts;
pub use hook_answer::{
    Action, HookAnswer, MAX_RETRY_AFTER_SECS, MAX_STATE_BYTES, Mirror, MirrorKind, ObjectRef,
    OverridePatch, ReleaseStatus, RestartKind, Verdict, WorkloadRef, merge_patch_deleting,
};
pub use plugin::{Info, Plugin, Section};
pub use sections::{
    AddressFamily, AdministrativeState, AvailabilityState, ClusterFacts, Cpu, CpuFunction,
    DistributedCloudRole, Host, HostAddress, HostInventory, InterfaceClass, MemoryNode, Monitor,
    Network, NetworkInterface, OperationalState, PciDevice, Personality, ServiceParameter,
    StorageBackend, StorageClass, StorageHealth, StorageKind, StorageTier, SystemFacts, SystemMode,
    SystemType, url_host,
};

/// The bindings generated from `wit/v0.2` (world
/// `capstan:plugin/override-plugin@0.2.0`). Plugin authors do not need them;
/// [`export_plugin!`] uses them. They live in a
/// crate of their own, apart from 0.1's: both worlds are named
/// `override-plugin`, so their generated export macros would clash in one
/// crate, and only 0.2 components may carry 0.2's types.
#[doc(hidden)]
pub use capstan_plugin_sdk_wit_v0_2::bindings;

/// Exports a [`v0_2::Plugin`](crate::v0_2::Plugin) implementation as the
/// plugin's component, world `capstan:plugin/override-plugin@0.2.0`.
///
/// Use it once per plugin crate, at the crate root, and never together with
/// 0.1's [`export_plugin!`](crate::v0_1::export_plugin): a component
/// implements one contract.
///
/// ```
/// use capstan_plugin_sdk::v0_2::{Info, Plugin};
/// struct Quiet;
/// impl Plugin for Quiet {
///     fn info() -> Info { Info::new("quiet", "1.0.0") }
/// }
/// capstan_plugin_sdk::v0_2::export_plugin!(Quiet);
/// ```
#[doc(inline)]
pub use crate::__export_plugin_v0_2 as export_plugin;

// `#[macro_export]` puts a macro at the crate root under its own name;
// plugins name this one `capstan_plugin_sdk::v0_2::export_plugin`.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_plugin_v0_2 {
    ($plugin:ty) => {
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        struct __CapstanPluginV0_2Export;

        impl $crate::v0_2::bindings::Guest for __CapstanPluginV0_2Export {
            fn info() -> $crate::v0_2::bindings::capstan::plugin::types::PluginInfo {
                $crate::v0_2::glue::info::<$plugin>()
            }
            fn overrides(
                call: $crate::v0_2::bindings::capstan::plugin::types::ChartCall,
                facts: $crate::v0_2::bindings::capstan::plugin::types::Facts,
            ) -> ::std::result::Result<
                $crate::v0_2::bindings::capstan::plugin::types::ChartAnswer,
                $crate::v0_2::bindings::capstan::plugin::types::PluginError,
            > {
                $crate::v0_2::glue::overrides::<$plugin>(call, facts)
            }
            fn workload_kind(
                app: $crate::v0_2::bindings::capstan::plugin::types::App,
                facts: $crate::v0_2::bindings::capstan::plugin::types::Facts,
                component: $crate::v0_2::bindings::capstan::plugin::types::Component,
            ) -> ::std::result::Result<
                $crate::v0_2::bindings::capstan::plugin::types::WorkloadKind,
                $crate::v0_2::bindings::capstan::plugin::types::PluginError,
            > {
                $crate::v0_2::glue::workload_kind::<$plugin>(app, facts, component)
            }
            fn lifecycle(
                call: $crate::v0_2::bindings::capstan::plugin::types::HookCall,
                facts: $crate::v0_2::bindings::capstan::plugin::types::Facts,
            ) -> ::std::result::Result<
                $crate::v0_2::bindings::capstan::plugin::types::HookAnswer,
                $crate::v0_2::bindings::capstan::plugin::types::PluginError,
            > {
                $crate::v0_2::glue::lifecycle::<$plugin>(call, facts)
            }
        }

        $crate::v0_2::bindings::__export_override_plugin!(
            __CapstanPluginV0_2Export with_types_in $crate::v0_2::bindings
        );
    };
}
