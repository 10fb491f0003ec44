//! One plugin call: its store state, its limits, its inputs' seed, and the
//! mapping of whatever ended it to a typed [`Fault`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Trap, WasmBacktrace};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::capstan::plugin::{host, types};
use super::policy::Policy;
use super::wasi::{self, Output};
use super::{Fault, Stream};

/// What the caller fixes for a call so that it is deterministic.
///
/// The plugin's wall clock reads [`CallContext::now`] for the whole call,
/// and its random bytes come from a seed derived from
/// `CallContext::app_secret` and the call's inputs: the same inputs give
/// the same output (stable diffs, idempotent re-applies), while values a
/// plugin generates, such as passwords, stay unguessable to anyone without
/// the secret.
///
/// A context may also carry an abort flag ([`CallContext::abort_on`]): once
/// it is raised, the call ends with [`super::Fault::Aborted`] at the next
/// epoch tick, and a call that has not started yet does not start.
#[derive(Clone)]
pub struct CallContext {
    app_secret: [u8; 32],
    now: SystemTime,
    abort: Option<Arc<AtomicBool>>,
    deadline: Option<Duration>,
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("app_secret", &"<redacted>")
            .field("now", &self.now)
            .field("abort", &self.aborted())
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl CallContext {
    /// A context with the app's secret; the clock reads the Unix epoch
    /// until [`CallContext::at`] sets it.
    pub fn new(app_secret: [u8; 32]) -> Self {
        CallContext {
            app_secret,
            now: SystemTime::UNIX_EPOCH,
            abort: None,
            deadline: None,
        }
    }

    /// Ends the call (or keeps it from starting) once `flag` is raised:
    /// the operation the call serves was aborted.
    #[must_use]
    pub fn abort_on(mut self, flag: Arc<AtomicBool>) -> Self {
        self.abort = Some(flag);
        self
    }

    /// Gives this call a shorter deadline than the policy's (a caller with
    /// a budget of its own); the policy's deadline stays the most any call
    /// gets.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Whether the abort flag is raised.
    pub fn aborted(&self) -> bool {
        self.abort
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::SeqCst))
    }

    /// The abort flag, if the call has one.
    pub(crate) fn abort_flag(&self) -> Option<&Arc<AtomicBool>> {
        self.abort.as_ref()
    }

    /// The call's deadline under `policy`.
    pub(crate) fn deadline_under(&self, policy: &Policy) -> Duration {
        self.deadline
            .map_or(policy.deadline, |mine| mine.min(policy.deadline))
    }

    /// The same abort flag and deadline with no secret and the clock at
    /// the epoch, for `info`, whose answer must not depend on the app.
    pub(crate) fn bare(&self) -> CallContext {
        CallContext {
            app_secret: [0; 32],
            now: SystemTime::UNIX_EPOCH,
            abort: self.abort.clone(),
            deadline: self.deadline,
        }
    }

    /// Fixes the wall-clock instant the plugin sees (for example the time
    /// the app version was uploaded, which stays the same across re-applies).
    #[must_use]
    pub fn at(mut self, now: SystemTime) -> Self {
        self.now = now;
        self
    }

    /// The instant the plugin's wall clock reads.
    pub fn now(&self) -> SystemTime {
        self.now
    }

    /// What the seed of a call of `function` with `inputs` (the call's
    /// arguments, serialized deterministically) is computed from, kept by
    /// the call until its plugin first reaches for WASI.
    pub(crate) fn seed_source(&self, function: &'static str, inputs: Vec<Arc<[u8]>>) -> SeedSource {
        SeedSource {
            app_secret: self.app_secret,
            now: self.now,
            function,
            inputs,
        }
    }
}

/// The secret, instant and inputs a call's WASI context is built from,
/// kept until the plugin first uses WASI: a call that never reads a
/// clock, a random number or its stdout costs no hash and no context.
pub(crate) struct SeedSource {
    app_secret: [u8; 32],
    now: SystemTime,
    function: &'static str,
    inputs: Vec<Arc<[u8]>>,
}

impl SeedSource {
    /// The seed of the call: SHA-256 of the app's secret, the function
    /// and each input with its length.
    fn seed(&self) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(b"capstan plugin seed v1\0");
        hasher.update(self.app_secret);
        hasher.update(self.function.as_bytes());
        for input in &self.inputs {
            hasher.update((input.len() as u64).to_le_bytes());
            hasher.update(input);
        }
        hasher.finalize().into()
    }
}

/// The store data of one call.
pub(crate) struct HostState {
    plugin: Arc<str>,
    /// The WASI context and its output pipes, built from `source` when the
    /// plugin first calls a WASI function.
    wasi: Option<(WasiCtx, Output)>,
    source: SeedSource,
    table: ResourceTable,
    memory_limit: usize,
    memory_exceeded: bool,
    log_limit: usize,
    log_used: usize,
    log_exceeded: bool,
    /// Set by the epoch callback when it ended the call for an abort.
    pub(crate) aborted: bool,
}

impl HostState {
    pub(crate) fn new(plugin: Arc<str>, policy: &Policy, source: SeedSource) -> Self {
        HostState {
            plugin,
            wasi: None,
            source,
            table: ResourceTable::new(),
            memory_limit: policy.memory_bytes,
            memory_exceeded: false,
            log_limit: policy.log_bytes,
            log_used: 0,
            log_exceeded: false,
            aborted: false,
        }
    }

    /// Forwards what the plugin wrote to stdout and stderr to the host's
    /// log, line by line, under the plugin's name.
    pub(crate) fn forward_stdio(&self) {
        let Some((_, output)) = &self.wasi else {
            return;
        };
        for (stream, pipe) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
            let bytes = pipe.contents();
            for line in String::from_utf8_lossy(&bytes).lines() {
                tracing::info!(plugin = %self.plugin, stream, "{line}");
            }
        }
    }

    /// Maps the error that ended a call to its fault. The store's own
    /// records come first: a memory or log cap that was hit explains the
    /// trap that followed it.
    pub(crate) fn classify(&self, error: &wasmtime::Error, deadline: Duration) -> Fault {
        if self.aborted {
            return Fault::Aborted;
        }
        if let Some(fault) = self.limit_hit() {
            return fault;
        }
        match error.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => Fault::Timeout { deadline },
            Some(Trap::StackOverflow) => Fault::StackOverflow,
            Some(trap) => Fault::Trap {
                message: self.with_panic_message(trap.to_string()),
                backtrace: backtrace_summary(error),
            },
            None => Fault::Trap {
                message: self.with_panic_message(one_line(&format!("{error:#}"))),
                backtrace: backtrace_summary(error),
            },
        }
    }

    /// The limit the call ran into, if any: the memory cap (a grow the
    /// limiter refused), the log budget, or a full stdout or stderr. A
    /// plugin may survive hitting one (CPython turns a refused grow into
    /// `MemoryError` and a full stdout into `OSError`, which it can catch),
    /// so the host checks after a call that returned as well as after one
    /// that trapped: a call that hit a limit ends in its fault either way.
    pub(crate) fn limit_hit(&self) -> Option<Fault> {
        if self.memory_exceeded {
            return Some(Fault::MemoryLimit {
                limit: self.memory_limit,
            });
        }
        if self.log_exceeded {
            return Some(Fault::OutputTooLarge {
                stream: Stream::Log,
                limit: self.log_limit,
            });
        }
        let (_, output) = self.wasi.as_ref()?;
        for (stream, pipe) in [
            (Stream::Stdout, &output.stdout),
            (Stream::Stderr, &output.stderr),
        ] {
            if pipe.contents().len() >= output.capacity {
                return Some(Fault::OutputTooLarge {
                    stream,
                    limit: output.capacity,
                });
            }
        }
        None
    }

    /// Adds the plugin's panic message, when its stderr has one, to a trap
    /// description: a Rust panic reaches the host as `unreachable`.
    fn with_panic_message(&self, message: String) -> String {
        let Some((_, output)) = &self.wasi else {
            return message;
        };
        let stderr = output.stderr.contents();
        let text = String::from_utf8_lossy(&stderr);
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if line.contains("panicked at") {
                let detail = lines.next().unwrap_or("").trim();
                return format!("{message}: plugin panicked: {detail}");
            }
        }
        message
    }
}

/// The innermost frames of a trap's wasm backtrace, `f <- g <- h`.
fn backtrace_summary(error: &wasmtime::Error) -> String {
    const FRAMES: usize = 4;
    let Some(trace) = error.downcast_ref::<WasmBacktrace>() else {
        return String::new();
    };
    trace
        .frames()
        .iter()
        .take(FRAMES)
        .map(|frame| {
            frame
                .func_name()
                .map(demangled)
                .unwrap_or_else(|| format!("func[{}]", frame.func_index()))
        })
        .collect::<Vec<_>>()
        .join(" <- ")
}

fn demangled(name: &str) -> String {
    let text = name.to_string();
    // Keep backtraces short: drop the hash suffix of Rust symbols.
    match text.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            head.to_string()
        }
        _ => text,
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let (ctx, _) = self.wasi.get_or_insert_with(|| {
            wasi::context(self.source.now, self.source.seed(), self.log_limit)
        });
        WasiCtxView {
            ctx,
            table: &mut self.table,
        }
    }
}

impl ResourceLimiter for HostState {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_limit {
            self.memory_exceeded = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// Table elements an instance may grow to; function tables of real plugins
/// hold a few thousand entries at most.
const MAX_TABLE_ELEMENTS: usize = 100_000;

impl types::Host for HostState {}

impl host::Host for HostState {
    fn log(&mut self, level: types::LogLevel, message: String) -> wasmtime::Result<()> {
        let level = match level {
            types::LogLevel::Trace => tracing::Level::TRACE,
            types::LogLevel::Debug => tracing::Level::DEBUG,
            types::LogLevel::Info => tracing::Level::INFO,
            types::LogLevel::Warn => tracing::Level::WARN,
            types::LogLevel::Error => tracing::Level::ERROR,
        };
        self.log_line(level, &message)
    }
}

impl HostState {
    /// One line of the `log` import of any contract version, charged to
    /// the call's log budget.
    pub(crate) fn log_line(
        &mut self,
        level: tracing::Level,
        message: &str,
    ) -> wasmtime::Result<()> {
        self.log_used = self
            .log_used
            .saturating_add(message.len())
            .saturating_add(crate::sandbox::LOG_LINE_COST);
        if self.log_used > self.log_limit {
            self.log_exceeded = true;
            return Err(wasmtime::format_err!(
                "plugin {} logged past its budget",
                self.plugin
            ));
        }
        let plugin = &*self.plugin;
        match level {
            tracing::Level::TRACE => tracing::trace!(plugin, "{message}"),
            tracing::Level::DEBUG => tracing::debug!(plugin, "{message}"),
            tracing::Level::INFO => tracing::info!(plugin, "{message}"),
            tracing::Level::WARN => tracing::warn!(plugin, "{message}"),
            _ => tracing::error!(plugin, "{message}"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(ctx: &CallContext, function: &'static str, inputs: &[&[u8]]) -> [u8; 32] {
        let inputs = inputs.iter().map(|input| Arc::from(*input)).collect();
        ctx.seed_source(function, inputs).seed()
    }

    #[test]
    fn the_seed_depends_on_secret_function_and_every_input() {
        let a = CallContext::new([1; 32]);
        let b = CallContext::new([2; 32]);
        let base = seed(&a, "overrides", &[b"app", b"facts"]);
        assert_eq!(base, seed(&a, "overrides", &[b"app", b"facts"]));
        assert_ne!(base, seed(&b, "overrides", &[b"app", b"facts"]));
        assert_ne!(base, seed(&a, "lifecycle", &[b"app", b"facts"]));
        assert_ne!(base, seed(&a, "overrides", &[b"app", b"facts2"]));
        // Length prefixes keep input boundaries apart.
        assert_ne!(base, seed(&a, "overrides", &[b"ap", b"pfacts"]));
    }

    /// Issue 13: ten million empty `log` calls wrote 927,000 lines. Each
    /// call is charged, so the budget bounds lines too.
    #[test]
    fn empty_log_calls_are_charged_so_the_budget_bounds_lines() {
        let policy = Policy::new().log_bytes(64 * 1024);
        let source = CallContext::new([0; 32]).seed_source("lifecycle", Vec::new());
        let mut state = HostState::new("p".into(), &policy, source);
        let mut lines = 0usize;
        while host::Host::log(&mut state, types::LogLevel::Trace, String::new()).is_ok() {
            lines += 1;
            assert!(lines <= 1_000_000, "empty log calls are never stopped");
        }
        assert_eq!(lines, 64 * 1024 / crate::sandbox::LOG_LINE_COST);
        assert!(state.log_exceeded);
    }

    #[test]
    fn rust_symbol_hashes_are_dropped() {
        assert_eq!(
            demangled("hostile::spin::h0123456789abcdef"),
            "hostile::spin"
        );
        assert_eq!(demangled("plain"), "plain");
    }
}
