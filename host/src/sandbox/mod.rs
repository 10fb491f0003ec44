//! Runs plugin components under a [`Policy`]: the wasmtime engine, the
//! compiled-component cache, limits, the host's imports and typed calls.
//!
//! Every app's plugins are WebAssembly components exporting the
//! `capstan:plugin/override-plugin` world of contract 0.1.0
//! (`wit/v0.1/plugin.wit`) or 0.2.0 (`wit/v0.2/plugin.wit`); the host links
//! both, and each plugin is called through the contract its component
//! was built against. They are
//! untrusted: the sandbox grants no capability but the `log` import and the
//! WASI interfaces a `wasm32-wasip2` component needs to link, each of them
//! empty (no preopened directories, no environment, closed stdin, fixed
//! clocks, seeded randomness). Every call first takes a slot of the
//! bounded instance pool (at most a share of it per app), then gets a fresh
//! store from a pre-instantiated component, a wall-clock deadline, a memory
//! cap and caps on output and log size, and can be aborted at any epoch
//! tick; a plugin that breaks any of them ends in a typed [`Fault`], and the
//! host goes on.
//!
//! The sandbox never reads the store, the bundle or the cluster: callers
//! hand it wasm bytes and facts, and get values back.

mod cache;
mod call;
mod contract;
mod facts;
mod inspect;
mod policy;
mod runtime;
mod slots;
mod v0_1;
mod v0_2;
mod wasi;

pub use cache::ComponentCache;
pub use call::CallContext;
pub use inspect::{Inspection, Producer, WORLD};
pub use policy::{
    DEFAULT_DEADLINE, DEFAULT_LOG_BYTES, DEFAULT_MEMORY_BYTES, DEFAULT_OUTPUT_BYTES,
    DEFAULT_POOL_SIZE, EPOCH_TICK, LOG_LINE_COST, MAX_POOL_SIZE, Policy,
};
pub use runtime::{
    MAX_HOOK_STATE_BYTES, MAX_RETRY_AFTER_SECONDS, Plugin, PluginInfo, Sandbox, pooling_config,
};

/// The WIT package this host speaks first (`wit/v0.1/plugin.wit`'s `package`
/// line); it links [`WIT_PACKAGES`] all.
pub const WIT_PACKAGE: &str = "capstan:plugin@0.1.0";

/// Every WIT package version the host links: `wit/v0.1/plugin.wit` and
/// `wit/v0.2/plugin.wit`.
pub const WIT_PACKAGES: [&str; 2] = ["capstan:plugin@0.1.0", "capstan:plugin@0.2.0"];

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Bindings generated from `wit/v0.1/plugin.wit` (0.1.0).
pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit/v0.1",
        world: "capstan:plugin/override-plugin",
        imports: { default: trappable },
    });
}

/// Bindings generated from `wit/v0.2/plugin.wit` (0.2.0).
pub(crate) mod bindings_v2 {
    wasmtime::component::bindgen!({
        path: "../wit/v0.2",
        world: "capstan:plugin/override-plugin",
        imports: { default: trappable },
    });
}

/// An error from loading or calling a plugin.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The wasmtime engine could not be configured (pooling allocator
    /// reservations refused by the OS, for example).
    #[error("setting up the plugin engine")]
    Engine(#[source] wasmtime::Error),
    /// The thread that enforces deadlines could not be started; without it
    /// no call may run.
    #[error("starting the plugin deadline ticker")]
    Ticker(#[source] std::io::Error),
    /// The bytes are not a WebAssembly component wasmtime can compile.
    #[error("plugin {plugin}: invalid-component: {reason}")]
    InvalidComponent {
        /// The plugin's name as the caller knows it.
        plugin: String,
        /// What the compiler said, on one line.
        reason: String,
    },
    /// The component imports something the sandbox does not provide, or
    /// does not export the capstan world.
    #[error("plugin {plugin}: link: {reason}")]
    Link {
        /// The plugin's name as the caller knows it.
        plugin: String,
        /// The missing import or export, on one line.
        reason: String,
    },
    /// Reading or writing the compiled-component cache failed.
    #[error("compiled-component cache at {}", path.display())]
    Cache {
        /// The file or directory involved.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A call ended in a fault: the plugin misbehaved or reported an error.
    #[error("plugin {plugin}: {fault}")]
    Fault {
        /// The plugin's name.
        plugin: String,
        /// What went wrong.
        fault: Fault,
    },
}

impl Error {
    /// The fault, if this error is one.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            Error::Fault { fault, .. } => Some(fault),
            _ => None,
        }
    }

    /// A short stable name for the kind of error, as printed after the
    /// plugin's name: `timeout`, `memory-limit`, `link`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Engine(_) | Error::Ticker(_) => "engine",
            Error::InvalidComponent { .. } => "invalid-component",
            Error::Link { .. } => "link",
            Error::Cache { .. } => "cache",
            Error::Fault { fault, .. } => fault.kind(),
        }
    }
}

/// What the plugin's output or log stream was when it grew too large.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The value a call returned.
    Output,
    /// The `log` import.
    Log,
    /// WASI stdout.
    Stdout,
    /// WASI stderr.
    Stderr,
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stream::Output => "output",
            Stream::Log => "log",
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        })
    }
}

/// The error a plugin reported itself (the WIT `plugin-error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginError {
    /// The facts lack something the plugin needs.
    InvalidFacts(String),
    /// The call asked for something the plugin does not serve.
    Unsupported(String),
    /// Any other failure.
    Failed(String),
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginError::InvalidFacts(m) => write!(f, "invalid facts: {m}"),
            PluginError::Unsupported(m) => write!(f, "unsupported: {m}"),
            PluginError::Failed(m) => write!(f, "failed: {m}"),
        }
    }
}

/// How a plugin call failed. Each variant is its own kind (see
/// [`Fault::kind`]), and the host process survives every one of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The call ran past its wall-clock deadline and was interrupted.
    Timeout {
        /// The deadline it ran past.
        deadline: Duration,
    },
    /// The instance tried to grow its memory past the cap.
    MemoryLimit {
        /// The cap in bytes.
        limit: usize,
    },
    /// The plugin exhausted its wasm stack (runaway recursion).
    StackOverflow,
    /// The plugin trapped (a panic, `unreachable`, an out-of-bounds access).
    Trap {
        /// The trap's description, with the plugin's panic message when its
        /// stderr had one.
        message: String,
        /// The innermost wasm frames, `func <- func <- ...`.
        backtrace: String,
    },
    /// The plugin returned something that is not what the contract says
    /// (overrides that are not a JSON object, for example).
    InvalidOutput {
        /// What was wrong.
        reason: String,
    },
    /// The output or a log stream grew past its cap.
    OutputTooLarge {
        /// Which stream.
        stream: Stream,
        /// The cap in bytes.
        limit: usize,
    },
    /// The plugin returned its own error.
    PluginError(PluginError),
    /// The call was interrupted because the operation it served was
    /// aborted (`app abort`): it ends at the next epoch tick, whether the
    /// plugin computes, sleeps or waits for a slot.
    Aborted,
    /// No instance slot came free within the call's deadline: the pool
    /// was full, or the app already held its share of it.
    PoolExhausted {
        /// Slots in the pool.
        slots: usize,
        /// Slots one app may hold at once.
        per_app: usize,
        /// How long the call waited.
        waited: Duration,
    },
}

impl Fault {
    /// The stable name of this fault's kind: `timeout`, `memory-limit`,
    /// `stack-overflow`, `trap`, `invalid-output`, `output-too-large`,
    /// `plugin-error`, `aborted` or `pool-exhausted`.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Timeout { .. } => "timeout",
            Fault::MemoryLimit { .. } => "memory-limit",
            Fault::StackOverflow => "stack-overflow",
            Fault::Trap { .. } => "trap",
            Fault::InvalidOutput { .. } => "invalid-output",
            Fault::OutputTooLarge { .. } => "output-too-large",
            Fault::PluginError(_) => "plugin-error",
            Fault::Aborted => "aborted",
            Fault::PoolExhausted { .. } => "pool-exhausted",
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.kind())?;
        match self {
            Fault::Timeout { deadline } => {
                write!(f, "ran past its {} ms deadline", deadline.as_millis())
            }
            Fault::MemoryLimit { limit } => {
                write!(f, "tried to grow its memory past {} MiB", limit >> 20)
            }
            Fault::StackOverflow => f.write_str("exhausted its call stack"),
            Fault::Trap { message, backtrace } if backtrace.is_empty() => f.write_str(message),
            Fault::Trap { message, backtrace } => write!(f, "{message} (at {backtrace})"),
            Fault::InvalidOutput { reason } => f.write_str(reason),
            Fault::OutputTooLarge { stream, limit } => {
                write!(f, "{stream} exceeded {} KiB", limit >> 10)
            }
            Fault::PluginError(e) => write!(f, "{e}"),
            Fault::Aborted => f.write_str("interrupted: the operation was aborted"),
            Fault::PoolExhausted {
                slots,
                per_app,
                waited,
            } => write!(
                f,
                "no plugin slot came free in {} ms (a pool of {slots}, at most {per_app} per app)",
                waited.as_millis()
            ),
        }
    }
}
