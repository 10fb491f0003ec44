//! Log lines from a 0.2 plugin, reaching the host's log under the plugin's
//! name.
//!
//! Inside the sandbox these call the 0.2 world's `log` import; the host
//! keeps a per-call budget and ends a call that logs past it. In native unit
//! tests the lines are kept in memory, per thread, for
//! [`testing::take_logs`](crate::v0_2::testing::take_logs) to return.
//!
//! Use these, not the crate-level [`crate::log`], in a 0.2 plugin: those
//! reach the 0.1 import, which a 0.2 component does not link.

pub use crate::v0_1::log::Level;

// Every function that reaches the import is `#[inline]`: it is then
// compiled only into the plugins that call it, so a 0.1 plugin links
// nothing of the 0.2 bindings.

/// Writes a log line at `level`.
#[inline]
pub fn log(level: Level, message: &str) {
    write(level, message);
}

/// Writes a trace line.
#[inline]
pub fn trace(message: &str) {
    log(Level::Trace, message);
}

/// Writes a debug line.
#[inline]
pub fn debug(message: &str) {
    log(Level::Debug, message);
}

/// Writes an info line.
#[inline]
pub fn info(message: &str) {
    log(Level::Info, message);
}

/// Writes a warning.
#[inline]
pub fn warn(message: &str) {
    log(Level::Warn, message);
}

/// Writes an error line.
#[inline]
pub fn error(message: &str) {
    log(Level::Error, message);
}

#[cfg(target_family = "wasm")]
#[inline]
fn write(level: Level, message: &str) {
    use crate::v0_2::bindings::capstan::plugin::types::LogLevel;
    let level = match level {
        Level::Trace => LogLevel::Trace,
        Level::Debug => LogLevel::Debug,
        Level::Info => LogLevel::Info,
        Level::Warn => LogLevel::Warn,
        Level::Error => LogLevel::Error,
    };
    crate::v0_2::bindings::capstan::plugin::host::log(level, message);
}

#[cfg(not(target_family = "wasm"))]
fn write(level: Level, message: &str) {
    crate::v0_1::testing::record_log(level, message);
}
