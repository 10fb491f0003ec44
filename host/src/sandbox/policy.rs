//! What a plugin may use: limits per call and the (empty) set of grants.
//!
//! Shaped like wasmtime's `WasiCtxBuilder`: [`Policy::new`] documents every
//! default, and each limit is a `DEFAULT_*` constant with a line on what it
//! does not cover.

use std::time::Duration;

/// Wall-clock time a single call may run before it is interrupted (not
/// CPU time: on a loaded machine a call gets less CPU in it, so a memory
/// bomb may end as `timeout` before it reaches the memory cap).
///
/// Enforced by epoch interruption: a ticker thread advances the engine's
/// epoch every [`EPOCH_TICK`], so a call ends within one tick of its
/// deadline. No host call blocks: `log` never does, and the monotonic
/// clock's waits (a plugin's `sleep`) are ready at once.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(2);

/// Linear memory a single call's instance may grow to, in bytes.
///
/// Counts wasm linear memories only; the host's own allocations for the
/// call (lifted strings, the store) are bounded by the output and log caps.
pub const DEFAULT_MEMORY_BYTES: usize = 64 << 20;

/// The largest JSON text `overrides` may return, and the largest message a
/// plugin error or veto may carry.
pub const DEFAULT_OUTPUT_BYTES: usize = 1 << 20;

/// Log bytes a call may write, separately for the `log` import, stdout and
/// stderr. A call that writes past it ends with `output-too-large`. Each
/// `log` call is charged [`LOG_LINE_COST`] on top of its message, so empty
/// messages cannot flood the host's log either.
pub const DEFAULT_LOG_BYTES: usize = 64 << 10;

/// What one `log` call costs against the log budget besides its message:
/// about what the host's log line around it (time, level, plugin) takes.
/// With the default budget a call may log at most 1,024 lines.
pub const LOG_LINE_COST: usize = 64;

/// How often the epoch ticker advances; the granularity of deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Limits and grants for plugin calls.
///
/// The defaults grant nothing:
///
/// - no filesystem: no preopened directories, so every open fails;
/// - no environment variables and no arguments;
/// - no network: the `wasi:sockets` interfaces are not linked at all, so a
///   component importing them does not load;
/// - stdin closed; stdout and stderr go into bounded in-memory buffers that
///   are forwarded to the host's log after the call;
/// - a wall clock fixed for the call and a monotonic clock that does not
///   advance (see [`crate::sandbox::CallContext`]);
/// - random bytes from a seed derived from a per-app secret and the call's
///   inputs, so the same inputs give the same output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub(crate) deadline: Duration,
    pub(crate) memory_bytes: usize,
    pub(crate) output_bytes: usize,
    pub(crate) log_bytes: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new()
    }
}

impl Policy {
    /// The default policy: every limit at its `DEFAULT_*` value, no grants.
    pub fn new() -> Self {
        Policy {
            deadline: DEFAULT_DEADLINE,
            memory_bytes: DEFAULT_MEMORY_BYTES,
            output_bytes: DEFAULT_OUTPUT_BYTES,
            log_bytes: DEFAULT_LOG_BYTES,
        }
    }

    /// Sets the wall-clock deadline per call. Default: [`DEFAULT_DEADLINE`].
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Sets the memory cap per call. Default: [`DEFAULT_MEMORY_BYTES`].
    #[must_use]
    pub fn memory_bytes(mut self, bytes: usize) -> Self {
        self.memory_bytes = bytes;
        self
    }

    /// Sets the output cap per call. Default: [`DEFAULT_OUTPUT_BYTES`].
    #[must_use]
    pub fn output_bytes(mut self, bytes: usize) -> Self {
        self.output_bytes = bytes;
        self
    }

    /// Sets the log cap per call and stream. Default: [`DEFAULT_LOG_BYTES`].
    #[must_use]
    pub fn log_bytes(mut self, bytes: usize) -> Self {
        self.log_bytes = bytes;
        self
    }

    /// The wall-clock deadline per call.
    pub fn get_deadline(&self) -> Duration {
        self.deadline
    }

    /// The memory cap per call, in bytes.
    pub fn get_memory_bytes(&self) -> usize {
        self.memory_bytes
    }

    /// The epoch ticks a call may run: the deadline rounded up to whole
    /// ticks, at least one.
    pub(crate) fn deadline_ticks(&self) -> u64 {
        let tick = EPOCH_TICK.as_nanos().max(1);
        let ticks = self.deadline.as_nanos().div_ceil(tick);
        u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_constants() {
        let p = Policy::new();
        assert_eq!(p.deadline, DEFAULT_DEADLINE);
        assert_eq!(p.memory_bytes, 64 * 1024 * 1024);
        assert_eq!(p.output_bytes, 1024 * 1024);
        assert_eq!(p.log_bytes, 64 * 1024);
    }

    #[test]
    fn deadline_rounds_up_to_whole_ticks() {
        let p = Policy::new().deadline(Duration::from_millis(12));
        assert_eq!(p.deadline_ticks(), 3);
        let zero = Policy::new().deadline(Duration::ZERO);
        assert_eq!(zero.deadline_ticks(), 1);
    }
}
