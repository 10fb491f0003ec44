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
//! - [`v0_2`], the same for contract 0.2.0 (typed fact sections, user
//!   overrides, secret values, generated secrets, hook actions), exported
//!   with [`v0_2::export_plugin!`].
//!
//! One module per contract version, named after it: [`v0_1`] for
//! `wit/v0.1/plugin.wit`, [`v0_2`] for `wit/v0.2/plugin.wit`. The crate
//! root re-exports [`v0_1`], the legacy default: plugins written before the
//! modules existed build unchanged. A plugin crate uses one contract.
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
// `capstan plugin new` copies this file and `v0_1/` (not `v0_2/`) under a
// manifest that declares no features; there `feature = "v0_2"` is a name
// the manifest does not know, and the crate is the 0.1.0 SDK.
#![allow(unexpected_cfgs)]

extern crate self as capstan_plugin_sdk;

pub mod v0_1;
#[cfg(feature = "v0_2")]
pub mod v0_2;

pub use v0_1::{
    App, Component, Facts, Hook, HookOutcome, Info, LocalVolume, Node, NodeRole, Plugin,
    PluginError, StorageBackend, StorageKind, SystemMode, Values, VolumeTrait, WorkloadKind, log,
    testing,
};

/// The bindings generated from `wit/v0.1/plugin.wit`. Plugin authors do not need
/// them; [`export_plugin!`] uses them.
///
/// With feature `v0_2` they come from a crate of their own,
/// `capstan-plugin-sdk-wit-v0-1`: wit-bindgen describes the world's imports
/// in a custom section that the linker keeps with whatever code shares its
/// object, so bindings generated here would give every 0.2 component 0.1's
/// types as imports (and the 0.2 bindings every 0.1 component 0.2's). Apart,
/// each reaches only the components of its own contract. Without the
/// feature (a copy written by `capstan plugin new`, 0.1 only) they are
/// generated here, as they always were.
#[cfg(feature = "v0_2")]
#[doc(hidden)]
pub use capstan_plugin_sdk_wit_v0_1::bindings;

/// The bindings generated from `wit/v0.1/plugin.wit`. Plugin authors do not need
/// them; [`export_plugin!`] uses them.
#[cfg(not(feature = "v0_2"))]
#[doc(hidden)]
#[allow(missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/v0.1",
        world: "capstan:plugin/override-plugin",
        pub_export_macro: true,
        export_macro_name: "__export_override_plugin",
        default_bindings_module: "capstan_plugin_sdk::bindings",
        runtime_path: "capstan_plugin_sdk::__private::wit_bindgen::rt",
    });
}

#[doc(hidden)]
pub mod __private {
    pub use crate::v0_1::plugin::glue;
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
