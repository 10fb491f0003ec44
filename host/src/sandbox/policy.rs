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
/// epoch every [`EPOCH_TICK`], and at each tick the call compares the
/// wall clock with its deadline (and looks at its abort flag), so a call
/// ends within one tick of its deadline, never before it. The deadline runs
/// from the moment the call is asked for: waiting for a pool slot counts.
/// No host call blocks: `log` never does, and the monotonic clock's waits
/// (a plugin's `sleep`) are ready at once.
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

/// Plugin calls that may hold a component instance at once, across all
/// apps: the size of the engine's instance pool. A call past it waits for a
/// slot within its own deadline and ends in `pool-exhausted` if none comes
/// free. One app may hold at most a quarter of the pool (at least one slot;
/// see [`Policy::get_app_slots`]), so one app's slow plugins cannot take
/// every slot. `capstan serve --plugin-pool-size N` sets it.
pub const DEFAULT_POOL_SIZE: usize = 64;

/// The largest pool [`Policy::pool_size`] accepts: each slot reserves
/// virtual address space for its memories up front.
pub const MAX_POOL_SIZE: usize = 1024;

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
    pub(crate) pool_size: usize,
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
            pool_size: DEFAULT_POOL_SIZE,
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

    /// Sets how many calls may hold an instance at once, clamped to
    /// `1..=`[`MAX_POOL_SIZE`]. Default: [`DEFAULT_POOL_SIZE`].
    #[must_use]
    pub fn pool_size(mut self, slots: usize) -> Self {
        self.pool_size = slots.clamp(1, MAX_POOL_SIZE);
        self
    }

    /// How many calls may hold an instance at once.
    pub fn get_pool_size(&self) -> usize {
        self.pool_size
    }

    /// How many of the pool's slots one app may hold at once: a quarter of
    /// the pool, at least one.
    pub fn get_app_slots(&self) -> usize {
        (self.pool_size / 4).max(1)
    }

    /// The wall-clock deadline per call.
    pub fn get_deadline(&self) -> Duration {
        self.deadline
    }

    /// The memory cap per call, in bytes.
    pub fn get_memory_bytes(&self) -> usize {
        self.memory_bytes
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
        assert_eq!(p.get_pool_size(), 64);
        assert_eq!(p.get_app_slots(), 16);
    }

    #[test]
    fn the_pool_is_clamped_and_every_app_gets_at_least_one_slot() {
        assert_eq!(Policy::new().pool_size(0).get_pool_size(), 1);
        assert_eq!(Policy::new().pool_size(1).get_app_slots(), 1);
        assert_eq!(Policy::new().pool_size(7).get_app_slots(), 1);
        assert_eq!(Policy::new().pool_size(8).get_app_slots(), 2);
        assert_eq!(
            Policy::new().pool_size(usize::MAX).get_pool_size(),
            MAX_POOL_SIZE
        );
    }
}
