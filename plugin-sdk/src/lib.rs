//! Write capstan override plugins in a few lines.
//!
//! A capstan plugin is a WebAssembly component (`wasm32-wasip2`) that the
//! platform runs in a sandbox to compute Helm values, workload kinds and
//! lifecycle verdicts for its app. This crate gives plugin authors:
//!
//! - [`Plugin`], a trait with default methods for what a plugin does not serve;
//! - [`export_plugin!`], which exports an implementation as the
//!   `capstan:plugin/override-plugin` world;
//! - typed [`Facts`] about the platform;
//! - [`Values`], a builder for the JSON values `overrides` returns;
//! - [`log`] functions that reach the host's log;
//! - [`testing`], to unit-test plugin logic natively, without wasm;
//! - [`v2`], the same for contract 0.2.0 (typed fact sections, user
//!   overrides, secret values, generated secrets, hook actions), exported
//!   with [`export_plugin_v2!`].
//!
//! The API at the crate root is contract 0.1.0's and stays as it is:
//! plugins written for it build unchanged. A plugin crate uses one contract,
//! 0.1.0 through the root or 0.2.0 through [`v2`].
//!
//! # Example
//!
//! ```
//! use capstan_plugin_sdk::{App, Facts, Info, Plugin, PluginError, Values, export_plugin};
//!
//! struct Replicas;
//!
//! impl Plugin for Replicas {
//!     fn info() -> Info {
//!         Info::new("replicas", "0.1.0").serving_charts(["web"])
//!     }
//!
//!     fn overrides(_app: &App, facts: &Facts, chart: &str) -> Result<Values, PluginError> {
//!         match chart {
//!             "web" => Ok(Values::new().set("replicaCount", facts.controller_count.min(3))),
//!             other => Err(PluginError::Unsupported(format!("chart {other}"))),
//!         }
//!     }
//! }
//!
//! export_plugin!(Replicas);
//!
//! // Native unit test of the same logic:
//! let values = capstan_plugin_sdk::testing::overrides::<Replicas>(&Facts::standard(2, 4), "web").unwrap();
//! assert_eq!(values.get("replicaCount"), Some(&serde_json::json!(2)));
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2`; the `.wasm` in
//! `target/wasm32-wasip2/release/` is the component to ship in a bundle.

#![warn(missing_docs)]

extern crate self as capstan_plugin_sdk;

mod facts;
pub mod log;
mod plugin;
pub mod testing;
pub mod v2;
mod values;

pub use facts::{
    App, Component, Facts, LocalVolume, Node, NodeRole, StorageBackend, StorageKind, SystemMode,
    VolumeTrait,
};
pub use plugin::{Hook, HookOutcome, Info, Plugin, PluginError, WorkloadKind};
pub use values::Values;

/// The bindings generated from `wit/plugin.wit`. Plugin authors do not need
/// them; [`export_plugin!`] uses them. They live in a crate of their own so
/// that only 0.1 components carry 0.1's types (see that crate's docs).
#[doc(hidden)]
pub use capstan_plugin_sdk_wit_v0_1::bindings;

#[doc(hidden)]
pub mod __private {
    pub use crate::plugin::glue;
    pub use wit_bindgen;
}

/// Exports a [`Plugin`] implementation as the plugin's component world.
///
/// Use it once per plugin crate, at the crate root.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        #[doc(hidden)]
        struct __CapstanPluginExport;

        impl $crate::bindings::Guest for __CapstanPluginExport {
            fn info() -> $crate::bindings::capstan::plugin::types::PluginInfo {
                $crate::__private::glue::info::<$plugin>()
            }
            fn overrides(
                app: $crate::bindings::capstan::plugin::types::App,
                facts: $crate::bindings::capstan::plugin::types::Facts,
                chart: ::std::string::String,
            ) -> ::std::result::Result<
                ::std::string::String,
                $crate::bindings::capstan::plugin::types::PluginError,
            > {
                $crate::__private::glue::overrides::<$plugin>(app, facts, chart)
            }
            fn workload_kind(
                app: $crate::bindings::capstan::plugin::types::App,
                facts: $crate::bindings::capstan::plugin::types::Facts,
                component: $crate::bindings::capstan::plugin::types::Component,
            ) -> ::std::result::Result<
                $crate::bindings::capstan::plugin::types::WorkloadKind,
                $crate::bindings::capstan::plugin::types::PluginError,
            > {
                $crate::__private::glue::workload_kind::<$plugin>(app, facts, component)
            }
            fn lifecycle(
                hook: $crate::bindings::capstan::plugin::types::Hook,
                app: $crate::bindings::capstan::plugin::types::App,
                facts: $crate::bindings::capstan::plugin::types::Facts,
            ) -> ::std::result::Result<
                $crate::bindings::capstan::plugin::types::HookOutcome,
                $crate::bindings::capstan::plugin::types::PluginError,
            > {
                $crate::__private::glue::lifecycle::<$plugin>(hook, app, facts)
            }
        }

        $crate::bindings::__export_override_plugin!(__CapstanPluginExport with_types_in $crate::bindings);
    };
}
