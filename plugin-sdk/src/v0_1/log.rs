//! Log lines that reach the host's log under the plugin's name.
//!
//! Inside the sandbox these call the host's `log` import; the host keeps a
//! per-call budget and ends a call that logs past it. In native unit tests
//! (see [`crate::testing`]) the lines are kept in memory for the test to read.

/// How bad a log line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Fine detail.
    Trace,
    /// Useful when debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Something looks wrong.
    Warn,
    /// Something failed.
    Error,
}

// Every function that reaches the import is `#[inline]`: it is then
// compiled only into the plugins that call it, so a 0.2 plugin, which
// never does, links nothing of the 0.1 bindings.

/// Writes a log line at `level`.
#[inline]
pub fn log(level: Level, message: &str) {
    write(level, message);
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
    use crate::bindings::capstan::plugin::types::LogLevel;
    let level = match level {
        Level::Trace => LogLevel::Trace,
        Level::Debug => LogLevel::Debug,
        Level::Info => LogLevel::Info,
        Level::Warn => LogLevel::Warn,
        Level::Error => LogLevel::Error,
    };
    crate::bindings::capstan::plugin::host::log(level, message);
}

#[cfg(not(target_family = "wasm"))]
fn write(level: Level, message: &str) {
    crate::v0_1::testing::record_log(level, message);
}
