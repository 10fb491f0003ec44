//! The template function library: Sprig's functions, Helm's additions and
//! Go's `text/template` built-ins that format text (`print`, `printf`,
//! `println`, `urlquery`, `html`, `js`).
//!
//! Owns what each function computes from its arguments, with Go's and
//! Sprig's exact semantics, so that charts render byte for byte as with
//! `helm template`. Must not touch the template engine: the control
//! functions (`and`, `or`, `not`, `len`, `index`, `slice`, comparisons,
//! `call`, `include`, `tpl`, `template`) belong to the engine, which looks
//! functions up here by name.
//!
//! Functions are pure: they take their arguments by reference and return a
//! new value. Sprig's map functions that keep references in Go (`dict`,
//! `set`, `unset`, `merge`, `get`, `pick`, ...) run inside the engine on its
//! shared maps (`render::template`); the versions here serve plain values
//! and the calls the engine leaves to them (a first argument that is not a
//! map, for Sprig's error or result).
//!
//! Errors are one message each ([`FuncError`]), as Go's template engine
//! reports them: argument checks ([`is_argument_error`]) are printed as
//! they are, other errors after `error calling NAME: `. `required` and
//! `fail` wrap their message in [`WARN_START`]/[`WARN_END`], which Helm's
//! engine cuts out when it prints the error (`execution error at (...)`).
//!
//! The random functions (`randAlphaNum`, `uuidv4`, `genCA`, ...) and
//! `now` differ on every render, as in Helm; nothing here reads files, the
//! environment or the network.

pub(crate) mod args;
mod convert;
mod crypto;
mod dates;
mod der;
mod dicts;
mod encoding;
mod gofmt;
mod lists;
mod math;
mod random;
mod regexp;
mod secrets;
mod semver;
mod strings;
mod toml_decode;
mod url;

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::LazyLock;

use crate::values::Value;

pub use convert::{WARN_END, WARN_START, to_int64};
pub use gofmt::{sprint, sprintf, sprintln};
pub use semver::{call_version_method, version_method};

/// A template function: takes its arguments in Go call order (in a pipeline
/// the previous value is the last argument) and returns a value or an error.
pub type Function = fn(&[Value]) -> Result<Value, FuncError>;

/// A template function failed; the message is what Go would print after
/// `error calling NAME: `.
#[derive(Debug, Clone, PartialEq)]
pub struct FuncError {
    /// Whether Go would have refused the call before making it.
    pub kind: FuncErrorKind,
    /// The message.
    pub message: String,
}

/// Which check a template function failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FuncErrorKind {
    /// Go's argument check (`wrong number of args ...`, `wrong type for
    /// value ...`), made before the call: Go prints it without the
    /// `error calling NAME: ` prefix.
    Argument,
    /// The function ran and returned an error.
    Call,
}

impl FuncError {
    /// An error the function itself returned.
    pub fn call(message: impl Into<String>) -> Self {
        FuncError {
            kind: FuncErrorKind::Call,
            message: message.into(),
        }
    }

    /// A failed argument check.
    pub fn argument(message: impl Into<String>) -> Self {
        FuncError {
            kind: FuncErrorKind::Argument,
            message: message.into(),
        }
    }
}

impl fmt::Display for FuncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FuncError {}

/// Every group's table, in the order their names are listed.
const GROUPS: &[&[(&str, Function)]] = &[
    gofmt::FUNCTIONS,
    strings::FUNCTIONS,
    lists::FUNCTIONS,
    dicts::FUNCTIONS,
    convert::FUNCTIONS,
    math::FUNCTIONS,
    encoding::FUNCTIONS,
    dates::FUNCTIONS,
    regexp::FUNCTIONS,
    semver::FUNCTIONS,
    random::FUNCTIONS,
    url::FUNCTIONS,
    crypto::FUNCTIONS,
    secrets::FUNCTIONS,
    toml_decode::FUNCTIONS,
];

/// FxHash, a small multiplicative hash for the function table. The table
/// holds only the library's own names, so no template can crowd a bucket;
/// it makes the per-identifier lookup of every parse cheap.
#[derive(Default)]
struct NameHasher(u64);

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Table = HashMap<&'static str, Function, BuildHasherDefault<NameHasher>>;

static TABLE: LazyLock<Table> = LazyLock::new(|| {
    GROUPS
        .iter()
        .flat_map(|group| group.iter())
        .map(|(name, function)| (*name, *function))
        .collect()
});

/// The function called `name` in a template, if the library has one.
pub fn lookup(name: &str) -> Option<Function> {
    TABLE.get(name).copied()
}

/// [`lookup`], with the library's own copy of the name.
pub fn lookup_named(name: &str) -> Option<(&'static str, Function)> {
    TABLE.get_key_value(name).map(|(k, f)| (*k, *f))
}

/// Every function name the library supports, grouped by topic.
pub fn names() -> impl Iterator<Item = &'static str> {
    GROUPS
        .iter()
        .flat_map(|group| group.iter())
        .map(|(name, _)| *name)
}

/// Whether the error is Go's argument check (`wrong number of args ...`,
/// `wrong type for value ...`), which Go reports before calling the
/// function and so without the `error calling NAME: ` prefix it puts on
/// errors the function itself returns.
pub fn is_argument_error(error: &FuncError) -> bool {
    error.kind == FuncErrorKind::Argument
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_unique_and_found() {
        let mut seen = std::collections::HashSet::new();
        for name in names() {
            assert!(seen.insert(name), "{name} listed twice");
            assert!(lookup(name).is_some(), "{name} not found");
        }
        assert!(lookup("no-such-function").is_none());
    }

    #[test]
    fn argument_errors_are_recognised() {
        let upper = lookup("upper").map(|f| f(&[Value::Int(1)]));
        assert!(matches!(upper, Some(Err(e)) if is_argument_error(&e)));
        let arity = lookup("upper").map(|f| f(&[]));
        assert!(matches!(arity, Some(Err(e)) if is_argument_error(&e)));
        let fail = lookup("fail").map(|f| f(&["boom".into()]));
        assert!(matches!(fail, Some(Err(e)) if !is_argument_error(&e)));
    }

    #[test]
    fn engine_functions_are_not_here() {
        for name in [
            "and", "or", "not", "len", "index", "eq", "include", "tpl", "template", "lookup",
        ] {
            assert!(lookup(name).is_none(), "{name} belongs to the engine");
        }
    }
}
