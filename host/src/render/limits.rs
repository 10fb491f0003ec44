//! Render limits: what a chart may cost the process that renders it.
//!
//! A chart is code the daemon runs. A signature says who wrote it, not that
//! it is harmless, so every render runs under a budget, whichever path it
//! comes from (`capstan template`, the daemon's plan step, anything else
//! calling [`crate::render::render`]):
//!
//! | limit | default | enforced where |
//! |---|---|---|
//! | deadline per render | [`DEFAULT_DEADLINE`] (10 s) | the executor's node walk, every `range` iteration, `include`, `template` and `tpl`; every function that loops is bounded by a size cap below |
//! | output per chart | [`DEFAULT_MAX_OUTPUT_BYTES`] (64 MiB) | every output buffer (templates, `include`, `tpl`) and the sum over the chart's templates |
//! | intermediate strings | [`MAX_STRING_BYTES`] (64 MiB, fixed) | `repeat`, `indent`/`nindent`, `printf`, `join`, and any function result |
//! | `.Files.Glob` matches per render | [`DEFAULT_MAX_GLOB_MATCHES`] (100,000) | each `Glob` call adds its matches; matching itself is linear time |
//! | `include` nesting per name | 1000 (Helm's, fixed) | `include`, with Helm's message |
//! | YAML alias expansion | `values::yaml::MAX_ALIAS_EXPANSION_BYTES` | the go-yaml v2 reader (values files, `-f`, `fromYaml`) |
//!
//! Exceeding one is [`crate::render::Error::Limit`] with a [`LimitKind`] and
//! the template and line where it happened. A render never panics or aborts
//! the process because of a limit; in the daemon it fails that app's
//! operation only.
//!
//! What this does not cover: memory held by values a template builds
//! (lists and maps in variables) is bounded only indirectly, by the
//! deadline and the string and output caps; there is no allocator-level
//! accounting.
//!
//! The budget of the render running on the current thread lives in a
//! thread-local (a render runs on one thread, on its own stack, see
//! [`crate::render::template::with_big_stack`]), so the function library can
//! check it without the engine passing it around. A render started inside
//! another on the same thread has its own budget, and the outer one's is
//! back when it ends.

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Default deadline of one chart render.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(10);
/// Default cap on the bytes one chart render may output.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 << 20;
/// Cap on any one string a function makes (`repeat`, `printf`, `join`...).
pub const MAX_STRING_BYTES: usize = 64 << 20;
/// Default cap on the files `.Files.Glob` may match in one render, summed
/// over its calls.
pub const DEFAULT_MAX_GLOB_MATCHES: usize = 100_000;

/// How often (in ticks) the deadline is compared with the clock.
const TICKS_PER_CLOCK_READ: u32 = 256;

/// The limits of one render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderLimits {
    /// Wall-clock time one chart render may take. Default [`DEFAULT_DEADLINE`].
    pub deadline: Duration,
    /// Bytes one chart render may output. Default [`DEFAULT_MAX_OUTPUT_BYTES`].
    pub max_output_bytes: usize,
    /// Files `.Files.Glob` may match in one render. Default
    /// [`DEFAULT_MAX_GLOB_MATCHES`].
    pub max_glob_matches: usize,
}

impl Default for RenderLimits {
    fn default() -> Self {
        RenderLimits {
            deadline: DEFAULT_DEADLINE,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_glob_matches: DEFAULT_MAX_GLOB_MATCHES,
        }
    }
}

static CONFIGURED: OnceLock<RenderLimits> = OnceLock::new();

impl RenderLimits {
    /// The limits of this process: those given to [`RenderLimits::configure`]
    /// (the daemon's `--render-timeout`), else the defaults.
    pub fn configured() -> RenderLimits {
        CONFIGURED.get().copied().unwrap_or_default()
    }

    /// Sets the process-wide limits once, at startup; a second call is
    /// ignored (returns false).
    pub fn configure(self) -> bool {
        CONFIGURED.set(self).is_ok()
    }
}

/// Which limit a render ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// The render deadline passed.
    Deadline,
    /// The chart's output grew past its cap.
    Output,
    /// A function would have made a string past [`MAX_STRING_BYTES`].
    StringSize,
    /// `.Files.Glob` matched more files than allowed.
    GlobMatches,
    /// `include`/`tpl`/`template` nested too deep.
    Recursion,
}

impl std::fmt::Display for LimitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LimitKind::Deadline => "deadline",
            LimitKind::Output => "output size",
            LimitKind::StringSize => "string size",
            LimitKind::GlobMatches => "glob matches",
            LimitKind::Recursion => "recursion",
        })
    }
}

#[derive(Clone, Copy)]
struct Active {
    started: Instant,
    limits: RenderLimits,
}

thread_local! {
    static ACTIVE: Cell<Option<Active>> = const { Cell::new(None) };
    static TICKS: Cell<u32> = const { Cell::new(0) };
    static GLOB_MATCHED: Cell<usize> = const { Cell::new(0) };
    static TRIPPED: Cell<Option<LimitKind>> = const { Cell::new(None) };
}

/// The budget of the render on this thread; dropping it ends the budget
/// and brings back the budget it interrupted, if any (a render started
/// inside another on the same thread has its own).
pub struct Budget {
    outer: Saved,
    _not_send: std::marker::PhantomData<*const ()>,
}

/// A thread's budget state, as [`start`] found it.
struct Saved {
    active: Option<Active>,
    ticks: u32,
    glob_matched: usize,
    tripped: Option<LimitKind>,
}

/// Starts the budget of a render on the current thread.
pub fn start(limits: RenderLimits) -> Budget {
    let outer = Saved {
        active: ACTIVE.with(Cell::get),
        ticks: TICKS.with(Cell::get),
        glob_matched: GLOB_MATCHED.with(Cell::get),
        tripped: TRIPPED.with(Cell::get),
    };
    ACTIVE.with(|a| {
        a.set(Some(Active {
            started: Instant::now(),
            limits,
        }))
    });
    TICKS.with(|t| t.set(0));
    GLOB_MATCHED.with(|g| g.set(0));
    TRIPPED.with(|t| t.set(None));
    Budget {
        outer,
        _not_send: std::marker::PhantomData,
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        let outer = &self.outer;
        ACTIVE.with(|a| a.set(outer.active));
        TICKS.with(|t| t.set(outer.ticks));
        GLOB_MATCHED.with(|g| g.set(outer.glob_matched));
        TRIPPED.with(|t| t.set(outer.tripped));
    }
}

/// The limit the current render ran into, if any.
pub fn tripped() -> Option<LimitKind> {
    TRIPPED.with(Cell::get)
}

/// Records that `kind` was exceeded and returns `message` for the error.
pub fn trip(kind: LimitKind, message: String) -> String {
    TRIPPED.with(|t| {
        if t.get().is_none() {
            t.set(Some(kind));
        }
    });
    message
}

fn active() -> Option<Active> {
    ACTIVE.with(Cell::get)
}

/// One unit of work; every few hundred the deadline is checked.
///
/// # Errors
/// The deadline message once the render's deadline has passed.
#[inline]
pub fn tick() -> Result<(), String> {
    let n = TICKS.with(|t| {
        let n = t.get().wrapping_add(1);
        t.set(n);
        n
    });
    if !n.is_multiple_of(TICKS_PER_CLOCK_READ) {
        return Ok(());
    }
    check_deadline()
}

/// Compares the clock with the deadline now.
///
/// # Errors
/// The deadline message once the render's deadline has passed.
pub fn check_deadline() -> Result<(), String> {
    let Some(a) = active() else { return Ok(()) };
    if a.started.elapsed() > a.limits.deadline {
        return Err(trip(
            LimitKind::Deadline,
            format!(
                "render ran past its deadline of {}",
                human_duration(a.limits.deadline)
            ),
        ));
    }
    Ok(())
}

/// Checks an output buffer's length against the output cap.
///
/// # Errors
/// The output message when `len` is over the cap.
#[inline]
pub fn check_output(len: usize) -> Result<(), String> {
    let max = active().map_or(DEFAULT_MAX_OUTPUT_BYTES, |a| a.limits.max_output_bytes);
    if len > max {
        return Err(trip(
            LimitKind::Output,
            format!("rendered output is over the limit of {}", human_bytes(max)),
        ));
    }
    Ok(())
}

/// Checks the size of a string a function is about to make.
///
/// # Errors
/// The string-size message when `len` is over [`MAX_STRING_BYTES`].
pub fn check_string(what: &str, len: usize) -> Result<(), String> {
    if len > MAX_STRING_BYTES {
        return Err(trip(
            LimitKind::StringSize,
            format!(
                "{what} result of {len} bytes is over the limit of {}",
                human_bytes(MAX_STRING_BYTES)
            ),
        ));
    }
    Ok(())
}

/// Adds `n` files matched by a `.Files.Glob` call to the render's count.
///
/// # Errors
/// The glob message when the render's total goes over the cap.
pub fn count_glob_matches(n: usize) -> Result<(), String> {
    let max = active().map_or(DEFAULT_MAX_GLOB_MATCHES, |a| a.limits.max_glob_matches);
    let total = GLOB_MATCHED.with(|g| {
        let total = g.get().saturating_add(n);
        g.set(total);
        total
    });
    if total > max {
        return Err(trip(
            LimitKind::GlobMatches,
            format!(".Files.Glob matched more than {max} files in one render"),
        ));
    }
    Ok(())
}

/// `10s`, `1.5s`, `250ms`.
pub fn human_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{}s", d.as_secs())
    } else if d.as_secs() == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}

/// `64 MiB`, `512 KiB`, `100 bytes`.
pub fn human_bytes(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders run on the caller's thread, so a render started inside
    /// another (a name template, say) must leave the outer one's budget as
    /// it found it.
    #[test]
    fn a_nested_budget_gives_the_outer_one_back() {
        let outer = start(RenderLimits {
            max_output_bytes: 1024,
            ..RenderLimits::default()
        });
        let _ = trip(LimitKind::Output, String::new());
        {
            let _inner = start(RenderLimits {
                max_output_bytes: 10,
                ..RenderLimits::default()
            });
            assert_eq!(tripped(), None);
            assert!(check_output(11).is_err());
            let _ = trip(LimitKind::StringSize, String::new());
        }
        assert_eq!(tripped(), Some(LimitKind::Output));
        assert_eq!(check_output(1024), Ok(()));
        drop(outer);
        assert!(active().is_none());
        assert_eq!(check_output(DEFAULT_MAX_OUTPUT_BYTES), Ok(()));
    }

    #[test]
    fn deadline_trips_after_it_passes_and_names_itself() {
        let _budget = start(RenderLimits {
            deadline: Duration::from_millis(20),
            ..RenderLimits::default()
        });
        assert_eq!(check_deadline(), Ok(()));
        std::thread::sleep(Duration::from_millis(30));
        let mut result = Ok(());
        for _ in 0..TICKS_PER_CLOCK_READ {
            result = result.and(tick());
        }
        assert_eq!(
            result,
            Err("render ran past its deadline of 20ms".to_string())
        );
        assert_eq!(tripped(), Some(LimitKind::Deadline));
    }

    #[test]
    fn output_and_glob_caps_follow_the_limits() {
        let _budget = start(RenderLimits {
            max_output_bytes: 1024,
            max_glob_matches: 3,
            ..RenderLimits::default()
        });
        assert_eq!(check_output(1024), Ok(()));
        assert_eq!(
            check_output(1025),
            Err("rendered output is over the limit of 1 KiB".to_string())
        );
        assert_eq!(count_glob_matches(3), Ok(()));
        assert!(count_glob_matches(1).is_err());
        // The first limit hit is the one reported.
        assert_eq!(tripped(), Some(LimitKind::Output));
    }

    #[test]
    fn without_a_budget_only_the_fixed_caps_apply() {
        assert_eq!(check_deadline(), Ok(()));
        assert!(check_string("repeat", MAX_STRING_BYTES + 1).is_err());
        assert_eq!(check_string("repeat", MAX_STRING_BYTES), Ok(()));
    }
}
