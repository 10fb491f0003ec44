//! Unit-test plugin logic natively, without building wasm or running a host.
//!
//! The functions here call a [`Plugin`] implementation directly, the way the
//! host would through the component, and keep the plugin's log lines in
//! memory (per thread) for the test to inspect with [`take_logs`].
//!
//! ```
//! use capstan_plugin_sdk::{App, Facts, Info, Plugin, PluginError, Values, testing};
//! struct Noisy;
//! impl Plugin for Noisy {
//!     fn info() -> Info { Info::new("noisy", "1.0.0").serving_charts(["c"]) }
//!     fn overrides(_: &App, _: &Facts, _: &str) -> Result<Values, PluginError> {
//!         capstan_plugin_sdk::log::info("computing");
//!         Ok(Values::new())
//!     }
//! }
//! testing::overrides::<Noisy>(&Facts::simplex(), "c").unwrap();
//! assert_eq!(testing::take_logs(), vec![(capstan_plugin_sdk::log::Level::Info, "computing".to_string())]);
//! ```

use std::cell::RefCell;

use crate::v0_1::facts::{App, Component, Facts};
use crate::v0_1::log::Level;
use crate::v0_1::plugin::{Hook, HookOutcome, Plugin, PluginError, WorkloadKind};
use crate::v0_1::values::Values;

thread_local! {
    static LOGS: RefCell<Vec<(Level, String)>> = const { RefCell::new(Vec::new()) };
}

/// The app used by the helpers below: `test-app` version `1.0.0`.
pub fn test_app() -> App {
    App::new("test-app", "1.0.0")
}

/// Calls `P::overrides` for `chart` with [`test_app`].
///
/// # Errors
/// The plugin's own error, as [`Plugin::overrides`] returns it.
pub fn overrides<P: Plugin>(facts: &Facts, chart: &str) -> Result<Values, PluginError> {
    P::overrides(&test_app(), facts, chart)
}

/// Calls `P::workload_kind` for `component` with [`test_app`].
///
/// # Errors
/// The plugin's own error, as [`Plugin::workload_kind`] returns it.
pub fn workload_kind<P: Plugin>(
    facts: &Facts,
    component: &Component,
) -> Result<WorkloadKind, PluginError> {
    P::workload_kind(&test_app(), facts, component)
}

/// Calls `P::lifecycle` for `hook` with [`test_app`].
///
/// # Errors
/// The plugin's own error, as [`Plugin::lifecycle`] returns it.
pub fn lifecycle<P: Plugin>(hook: Hook, facts: &Facts) -> Result<HookOutcome, PluginError> {
    P::lifecycle(hook, &test_app(), facts)
}

/// Takes the log lines this thread's plugin calls wrote so far.
pub fn take_logs() -> Vec<(Level, String)> {
    LOGS.with(|logs| std::mem::take(&mut *logs.borrow_mut()))
}

#[cfg_attr(target_family = "wasm", allow(dead_code))]
pub(crate) fn record_log(level: Level, message: &str) {
    LOGS.with(|logs| logs.borrow_mut().push((level, message.to_string())));
}
