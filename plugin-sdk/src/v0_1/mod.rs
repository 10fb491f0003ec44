//! Plugins for contract 0.1.0 (`wit/v0.1/plugin.wit`): the [`Plugin`]
//! trait, typed [`Facts`], the [`Values`] builder, [`log`], native
//! [`testing`] helpers and [`export_plugin!`].
//!
//! The crate root re-exports everything here, as it did before the SDK had
//! a module per contract: plugins written against the root build
//! unchanged, and the root stays 0.1.0's (the legacy default). New code
//! names its contract: `capstan_plugin_sdk::v0_1` or
//! `capstan_plugin_sdk::v0_2`.

mod facts;
pub mod log;
pub(crate) mod plugin;
pub mod testing;
mod values;

pub use facts::{
    App, Component, Facts, LocalVolume, Node, NodeRole, StorageBackend, StorageKind, SystemMode,
    VolumeTrait,
};
pub use plugin::{Hook, HookOutcome, Info, Plugin, PluginError, WorkloadKind};
pub use values::Values;

#[doc(inline)]
pub use crate::export_plugin;
