//! `semver` and `semverCompare` with Masterminds/semver v3 rules: lenient
//! versions (`v1.2`, `1`), constraints with `=`, `!=`, `>`, `<`, `>=`,
//! `<=`, `~`, `~>`, `^`, wildcards (`1.2.x`, `*`), hyphen ranges
//! (`1.2 - 1.4.5`), `,` or space for AND, `||` for OR, and the rule that a
//! prerelease version only matches a constraint that carries a prerelease
//! (`>=1.19.0-0` admits `v1.20.0-gke.1`).
//!
//! `semver` returns a version object, as Sprig returns a
//! `*semver.Version`: a map marked with [`VERSION_KEY`] that prints (and
//! encodes to JSON and YAML) as the version's `String()`, and whose
//! methods templates call like fields ([`version_method`],
//! [`call_version_method`]): `.Major`, `.Minor`, `.Patch`,
//! `.Prerelease`, `.Metadata`, `.Original`, `.String`, `.Compare`,
//! `.LessThan`, `.LessThanEqual`, `.GreaterThan`, `.GreaterThanEqual`,
//! `.Equal`, `.IncMajor`, `.IncMinor`, `.IncPatch`, `.SetPrerelease` and
//! `.SetMetadata`, with Masterminds/semver v3's results. `Inc*` and `Set*`
//! return a `semver.Version` value, on which Go finds only the
//! value-receiver methods (not `Original` nor the comparisons).

use std::cmp::Ordering;

use super::args::{exactly, text, type_name};
use super::{FuncError, Function};
use crate::values::{Map, VERSION_KEY, VERSION_ORIGINAL_KEY, VERSION_VALUE_KEY, Value};

pub(super) const FUNCTIONS: &[(&str, Function)] =
    &[("semver", semver), ("semverCompare", semver_compare)];

/// A parsed version.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    metadata: String,
    original: String,
}

/// Masterminds/semver v3.4's `ErrInvalidSemVer` (v3.4 lower-cased its
/// error texts; Helm 4 builds with it).
fn invalid_version() -> String {
    "invalid semantic version".into()
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

impl Version {
    /// Masterminds' `NewVersion`: `v` prefix, missing minor or patch allowed.
    ///
    /// # Errors
    /// Masterminds v3.4's texts: "invalid semantic version" for anything
    /// else, "version segment starts with 0" for a prerelease number such
    /// as `01`, and strconv's range error for a number over 64 bits.
    pub fn parse(s: &str) -> Result<Version, String> {
        let body = s.strip_prefix('v').unwrap_or(s);
        let (body, metadata) = match body.split_once('+') {
            Some((b, m)) if is_ident(m) => (b, m.to_string()),
            Some(_) => return Err(invalid_version()),
            None => (body, String::new()),
        };
        let (core, pre) = match body.split_once('-') {
            Some((c, p)) if is_ident(p) => (c, p.to_string()),
            Some(_) => return Err(invalid_version()),
            None => (body, String::new()),
        };
        let parts: Vec<&str> = core.split('.').collect();
        if parts.is_empty() || parts.len() > 3 {
            return Err(invalid_version());
        }
        let mut numbers = [0u64; 3];
        for (k, part) in parts.iter().enumerate() {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid_version());
            }
            numbers[k] = part
                .parse()
                .map_err(|_| {
                    format!(
                        "error parsing version segment: strconv.ParseUint: parsing {part:?}: value out of range"
                    )
                })?;
        }
        for ident in pre.split('.').filter(|_| !pre.is_empty()) {
            if ident.len() > 1
                && ident.starts_with('0')
                && ident.bytes().all(|b| b.is_ascii_digit())
            {
                return Err("version segment starts with 0".into());
            }
        }
        Ok(Version {
            major: numbers[0],
            minor: numbers[1],
            patch: numbers[2],
            pre,
            metadata,
            original: s.to_string(),
        })
    }

    /// Masterminds' `String()`: `MAJOR.MINOR.PATCH[-PRE][+METADATA]`,
    /// without the `v` the original text may have.
    pub fn canonical(&self) -> String {
        let mut out = format!("{}.{}.{}", self.major, self.minor, self.patch);
        if !self.pre.is_empty() {
            out.push('-');
            out.push_str(&self.pre);
        }
        if !self.metadata.is_empty() {
            out.push('+');
            out.push_str(&self.metadata);
        }
        out
    }

    /// The version as a template value: a `*semver.Version`, or a
    /// `semver.Version` value when `is_value`.
    pub fn to_value(&self, is_value: bool) -> Value {
        let mut map = Map::new();
        map.insert(VERSION_KEY.into(), Value::String(self.canonical()));
        map.insert(
            VERSION_ORIGINAL_KEY.into(),
            Value::String(self.original.clone()),
        );
        if is_value {
            map.insert(VERSION_VALUE_KEY.into(), Value::Bool(true));
        }
        Value::Map(map)
    }

    /// The version a template value stands for (see [`Version::to_value`]).
    fn of_value(value: &Value) -> Option<Version> {
        match value.as_map()?.get(VERSION_ORIGINAL_KEY)? {
            Value::String(original) => Version::parse(original).ok(),
            _ => None,
        }
    }

    /// The same version with its original text rebuilt as Masterminds'
    /// `Inc*`/`Set*` do: the original's `v` prefix, then `String()`.
    fn with_new_original(mut self, before: &str) -> Version {
        let prefix = if before.starts_with('v') { "v" } else { "" };
        self.original = format!("{prefix}{}", self.canonical());
        self
    }

    /// Precedence: numbers, then a prerelease sorts before the release.
    pub fn compare(&self, other: &Version) -> Ordering {
        self.major
            .cmp(&other.major)
            .then(self.minor.cmp(&other.minor))
            .then(self.patch.cmp(&other.patch))
            .then_with(|| compare_prerelease(&self.pre, &other.pre))
    }
}

fn compare_prerelease(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let (pa, pb): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
    for (x, y) in pa.iter().zip(pb.iter()) {
        let order = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(nx), Ok(ny)) => nx.cmp(&ny),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            _ => x.cmp(y),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    pa.len().cmp(&pb.len())
}

/// One comparison of a constraint.
#[derive(Debug, Clone)]
struct Constraint {
    op: String,
    version: Version,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

/// Splits `op version` pieces out of one AND group.
fn constraint_tokens(group: &str) -> Result<Vec<(String, String)>, String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = group.chars().collect();
    let mut i = 0;
    let improper = || format!("improper constraint: {group}");
    while i < chars.len() {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ',') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let mut op = String::new();
        while i < chars.len() && "=!<>~^".contains(chars[i]) {
            op.push(chars[i]);
            i += 1;
        }
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        let mut version = String::new();
        while i < chars.len() && !chars[i].is_whitespace() && chars[i] != ',' {
            version.push(chars[i]);
            i += 1;
        }
        if !matches!(
            op.as_str(),
            "" | "=" | "!=" | ">" | "<" | ">=" | "=>" | "<=" | "=<" | "~" | "~>" | "^"
        ) {
            return Err(improper());
        }
        if version.is_empty() {
            return Err(improper());
        }
        tokens.push((op, version));
    }
    if tokens.is_empty() {
        tokens.push((String::new(), "*".into()));
    }
    Ok(tokens)
}

fn parse_constraint(op: &str, text: &str) -> Result<Constraint, String> {
    let improper = || format!("improper constraint: {op}{text}");
    let body = text.strip_prefix('v').unwrap_or(text);
    let (body, _metadata) = body.split_once('+').unwrap_or((body, ""));
    let (core, pre) = match body.split_once('-') {
        Some((c, p)) => (c, format!("-{p}")),
        None => (body, String::new()),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !(is_x(p) || p.bytes().all(|b| b.is_ascii_digit())))
    {
        return Err(improper());
    }
    let major = parts.first().copied().unwrap_or("");
    let minor = parts.get(1).copied().unwrap_or("");
    let patch = parts.get(2).copied().unwrap_or("");
    let (version, minor_dirty, patch_dirty, dirty) = if is_x(major) || major.is_empty() {
        (format!("0.0.0{pre}"), false, false, true)
    } else if is_x(minor) || minor.is_empty() {
        (format!("{major}.0.0{pre}"), true, false, true)
    } else if is_x(patch) || patch.is_empty() {
        (format!("{major}.{minor}.0{pre}"), false, true, true)
    } else {
        (format!("{major}.{minor}.{patch}{pre}"), false, false, false)
    };
    let version = Version::parse(&version).map_err(|_| improper())?;
    Ok(Constraint {
        op: op.to_string(),
        version,
        minor_dirty,
        patch_dirty,
        dirty,
    })
}

impl Constraint {
    fn check(&self, v: &Version) -> bool {
        let c = &self.version;
        // A prerelease version only matches constraints with a prerelease
        // (for `!=`, only when the constraint has a wildcard).
        if !v.pre.is_empty() && c.pre.is_empty() && (self.op != "!=" || self.dirty) {
            return false;
        }
        match self.op.as_str() {
            "" | "=" => {
                if self.dirty {
                    self.tilde(v)
                } else {
                    v.compare(c) == Ordering::Equal
                }
            }
            "!=" => self.not_equal(v),
            ">" => self.greater(v),
            "<" => v.compare(c) == Ordering::Less,
            ">=" | "=>" => v.compare(c) != Ordering::Less,
            "<=" | "=<" => self.less_equal(v),
            "~" | "~>" => self.tilde(v),
            "^" => self.caret(v),
            _ => false,
        }
    }

    fn not_equal(&self, v: &Version) -> bool {
        let c = &self.version;
        if self.dirty {
            if c.major != v.major {
                return true;
            }
            if c.minor != v.minor && !self.minor_dirty {
                return true;
            } else if self.minor_dirty {
                return false;
            } else if c.patch != v.patch && !self.patch_dirty {
                return true;
            } else if self.patch_dirty {
                if !v.pre.is_empty() || !c.pre.is_empty() {
                    return compare_prerelease(&v.pre, &c.pre) != Ordering::Equal;
                }
                return false;
            }
        }
        v.compare(c) != Ordering::Equal
    }

    fn greater(&self, v: &Version) -> bool {
        let c = &self.version;
        if !self.dirty {
            return v.compare(c) == Ordering::Greater;
        }
        if v.major > c.major {
            return true;
        } else if v.major < c.major || self.minor_dirty {
            return false;
        } else if self.patch_dirty {
            return v.minor > c.minor;
        }
        v.compare(c) == Ordering::Greater
    }

    fn less_equal(&self, v: &Version) -> bool {
        let c = &self.version;
        if !self.dirty {
            return v.compare(c) != Ordering::Greater;
        }
        !(v.major > c.major || (v.major == c.major && v.minor > c.minor && !self.minor_dirty))
    }

    fn tilde(&self, v: &Version) -> bool {
        let c = &self.version;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        if v.major != c.major {
            return false;
        }
        v.minor == c.minor || self.minor_dirty
    }

    fn caret(&self, v: &Version) -> bool {
        let c = &self.version;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major > 0 || self.minor_dirty {
            return v.major == c.major;
        }
        if v.major > 0 {
            return false;
        }
        if c.minor > 0 || self.patch_dirty {
            return v.minor == c.minor;
        }
        if v.minor > 0 {
            return false;
        }
        c.patch == v.patch
    }
}

/// Rewrites `A - B` ranges as `>= A, <= B`.
fn rewrite_ranges(s: &str) -> String {
    let words: Vec<&str> = s.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if i + 2 < words.len()
            && words[i + 1] == "-"
            && !words[i].starts_with(|c: char| "=!<>~^".contains(c))
        {
            out.push(format!(">= {}, <= {}", words[i], words[i + 2]));
            i += 3;
        } else {
            out.push(words[i].to_string());
            i += 1;
        }
    }
    out.join(" ")
}

/// Masterminds' `Constraints.Check`.
///
/// # Errors
/// `improper constraint: ...` for text that is no constraint.
pub fn constraint_matches(constraint: &str, version: &Version) -> Result<bool, String> {
    let rewritten = rewrite_ranges(constraint);
    let mut any = false;
    for group in rewritten.split("||") {
        let mut all = true;
        for (op, text) in constraint_tokens(group)? {
            if !parse_constraint(&op, &text)?.check(version) {
                all = false;
            }
        }
        any |= all;
    }
    Ok(any)
}

/// `semver V`: the version object (a `*semver.Version`).
fn semver(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("semver", args)?;
    let v = Version::parse(text(v)?).map_err(FuncError::call)?;
    Ok(v.to_value(false))
}

/// The method `name` of `recv`, if `recv` is a version object that has it
/// (Go's method set: a `semver.Version` value lacks the pointer methods).
pub fn version_method(recv: &Value, name: &str) -> Option<&'static str> {
    // The name first, as a `match`: most fields a template reads are no
    // method, and that is cheaper to see than the receiver's kind.
    let (method, on_value) = match name {
        "String" => ("String", true),
        "Major" => ("Major", true),
        "Minor" => ("Minor", true),
        "Patch" => ("Patch", true),
        "Prerelease" => ("Prerelease", true),
        "Metadata" => ("Metadata", true),
        "IncPatch" => ("IncPatch", true),
        "IncMinor" => ("IncMinor", true),
        "IncMajor" => ("IncMajor", true),
        "SetPrerelease" => ("SetPrerelease", true),
        "SetMetadata" => ("SetMetadata", true),
        // Pointer receivers in Masterminds/semver v3.
        "Original" => ("Original", false),
        "Compare" => ("Compare", false),
        "LessThan" => ("LessThan", false),
        "LessThanEqual" => ("LessThanEqual", false),
        "GreaterThan" => ("GreaterThan", false),
        "GreaterThanEqual" => ("GreaterThanEqual", false),
        "Equal" => ("Equal", false),
        _ => return None,
    };
    let map = recv.as_map()?;
    if !map.contains_key(VERSION_KEY) {
        return None;
    }
    (on_value || !map.contains_key(VERSION_VALUE_KEY)).then_some(method)
}

/// The `*semver.Version` argument of a comparison; `None` for Go's nil.
fn version_arg(value: &Value) -> Result<Option<Version>, FuncError> {
    if matches!(value, Value::Null) {
        return Ok(None);
    }
    let is_pointer = value
        .as_map()
        .is_some_and(|m| !m.contains_key(VERSION_VALUE_KEY));
    match Version::of_value(value) {
        Some(v) if is_pointer => Ok(Some(v)),
        _ => Err(FuncError::argument(format!(
            "wrong type for value; expected *semver.Version; got {}",
            type_name(value)
        ))),
    }
}

/// Go's panic on a nil `*semver.Version`, as the template reports it.
fn nil_version() -> FuncError {
    FuncError::call("runtime error: invalid memory address or nil pointer dereference")
}

fn segment(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Calls the version method `name` (from [`version_method`]) on `recv`
/// with `args`, as Masterminds/semver v3 computes it.
///
/// # Errors
/// Go's argument errors (count, a non-version argument), Go's nil
/// dereference for a comparison with nil, and Masterminds' errors for an
/// invalid prerelease or metadata.
pub fn call_version_method(name: &str, recv: &Value, args: &[Value]) -> Result<Value, FuncError> {
    let Some(v) = Version::of_value(recv) else {
        return Err(FuncError::call(format!("{name}: not a semver version")));
    };
    let want = match name {
        "Compare" | "LessThan" | "LessThanEqual" | "GreaterThan" | "GreaterThanEqual" | "Equal"
        | "SetPrerelease" | "SetMetadata" => 1,
        _ => 0,
    };
    if args.len() != want {
        return Err(FuncError::argument(format!(
            "wrong number of args for {name}: want {want} got {}",
            args.len()
        )));
    }
    let before = v.original.clone();
    Ok(match name {
        "String" => Value::String(v.canonical()),
        "Original" => Value::String(v.original),
        "Major" => segment(v.major),
        "Minor" => segment(v.minor),
        "Patch" => segment(v.patch),
        "Prerelease" => Value::String(v.pre),
        "Metadata" => Value::String(v.metadata),
        "IncPatch" => {
            let mut next = v;
            if next.pre.is_empty() {
                next.patch += 1;
            }
            next.pre.clear();
            next.metadata.clear();
            next.with_new_original(&before).to_value(true)
        }
        "IncMinor" => {
            let mut next = v;
            next.minor += 1;
            next.patch = 0;
            next.pre.clear();
            next.metadata.clear();
            next.with_new_original(&before).to_value(true)
        }
        "IncMajor" => {
            let mut next = v;
            next.major += 1;
            next.minor = 0;
            next.patch = 0;
            next.pre.clear();
            next.metadata.clear();
            next.with_new_original(&before).to_value(true)
        }
        "SetPrerelease" | "SetMetadata" => {
            let Value::String(part) = &args[0] else {
                return Err(FuncError::argument(format!(
                    "wrong type for value; expected string; got {}",
                    type_name(&args[0])
                )));
            };
            let mut next = v;
            if name == "SetPrerelease" {
                if !part.is_empty() {
                    validate_prerelease(part).map_err(FuncError::call)?;
                }
                next.pre.clone_from(part);
            } else {
                if !part.is_empty() && !is_ident(part) {
                    return Err(FuncError::call("invalid metadata string"));
                }
                next.metadata.clone_from(part);
            }
            next.with_new_original(&before).to_value(true)
        }
        _ => {
            let other = version_arg(&args[0])?;
            if name == "Equal" {
                return Ok(Value::Bool(
                    other.is_some_and(|o| v.compare(&o) == Ordering::Equal),
                ));
            }
            let order = v.compare(&other.ok_or_else(nil_version)?);
            match name {
                "Compare" => Value::Int(order as i64),
                "LessThan" => Value::Bool(order == Ordering::Less),
                "LessThanEqual" => Value::Bool(order != Ordering::Greater),
                "GreaterThan" => Value::Bool(order == Ordering::Greater),
                _ => Value::Bool(order != Ordering::Less),
            }
        }
    })
}

/// Masterminds' `validatePrerelease`: dot-separated, non-empty
/// identifiers of `[0-9A-Za-z-]`, numeric ones without a leading zero.
fn validate_prerelease(pre: &str) -> Result<(), String> {
    for part in pre.split('.') {
        if part.is_empty() {
            return Err("invalid prerelease string".into());
        }
        if part.bytes().all(|b| b.is_ascii_digit()) {
            if part.len() > 1 && part.starts_with('0') {
                return Err("version segment starts with 0".into());
            }
        } else if !part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err("invalid prerelease string".into());
        }
    }
    Ok(())
}

/// `semverCompare CONSTRAINT VERSION`.
fn semver_compare(args: &[Value]) -> Result<Value, FuncError> {
    let [constraint, version] = exactly::<2>("semverCompare", args)?;
    let (constraint, version) = (text(constraint)?, text(version)?);
    let version = Version::parse(version).map_err(FuncError::call)?;
    constraint_matches(constraint, &version)
        .map(Value::Bool)
        .map_err(FuncError::call)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(c: &str, v: &str) -> bool {
        let version = Version::parse(v).unwrap_or_else(|e| panic!("{v}: {e}"));
        constraint_matches(c, &version).unwrap_or_else(|e| panic!("{c}: {e}"))
    }

    #[test]
    fn versions_parse_leniently() {
        assert!(Version::parse("v1.2").is_ok());
        assert!(Version::parse("1").is_ok());
        assert!(Version::parse("1.2.3-beta.1+build.5").is_ok());
        assert!(Version::parse("1.2.3.4").is_err());
        assert!(Version::parse("a.b").is_err());
        assert!(Version::parse("").is_err());
    }

    #[test]
    fn parse_errors_read_like_masterminds_v3_4() {
        // Masterminds/semver v3.4 (Helm 4): lower-case texts, strconv's
        // error for a number over 64 bits, the prerelease's leading zero.
        assert_eq!(
            Version::parse("a.b"),
            Err("invalid semantic version".into())
        );
        assert_eq!(Version::parse(""), Err("invalid semantic version".into()));
        assert_eq!(
            Version::parse("1.2.3-01"),
            Err("version segment starts with 0".into())
        );
        assert_eq!(
            Version::parse("1.99999999999999999999"),
            Err("error parsing version segment: strconv.ParseUint: parsing \"99999999999999999999\": value out of range".into())
        );
        // Coercion (v3.4's default) admits leading zeros in the numbers.
        assert_eq!(
            Version::parse("01.02.3").map(|v| v.canonical()),
            Ok("1.2.3".into())
        );
        assert_eq!(
            semver(&["x".into()]).map_err(|e| e.message),
            Err("invalid semantic version".into())
        );
    }

    #[test]
    fn comparisons() {
        assert!(check(">=1.19.0-0", "v1.20.0-gke.1"));
        assert!(!check(">=1.19.0", "v1.20.0-gke.1"));
        assert!(check(">=1.19-0", "v1.31.0"));
        assert!(check("<1.14-0", "1.13.5"));
        assert!(!check("<1.14-0", "1.14.0"));
        assert!(check(">= 1.2.3, < 2", "1.9.0"));
        assert!(check(">= 1.2.3 < 2", "1.9.0"));
        assert!(!check(">= 1.2.3, < 2", "2.0.0"));
        assert!(check("1.2.x", "1.2.9"));
        assert!(!check("1.2.x", "1.3.0"));
        assert!(check("*", "5.0.0"));
        assert!(check("!=1.2.3", "1.2.4"));
        assert!(!check("!=1.2.3", "1.2.3"));
        assert!(check("!=1.2.3", "1.2.4-beta"));
        assert!(!check("!=1.2.x", "1.3.0-beta"));
        assert!(check(">11", "12.0.0"));
        assert!(!check(">11", "11.1.0"));
        assert!(check("<=1.2", "1.2.9"));
        assert!(check("1.1 - 1.3", "1.3.0"));
        assert!(!check("1.1 - 1.3", "1.4.0"));
        assert!(check("<1 || >=2", "2.5.0"));
        assert!(!check("<1 || >=2", "1.5.0"));
    }

    #[test]
    fn tilde_and_caret() {
        assert!(check("~1.2.3", "1.2.9"));
        assert!(!check("~1.2.3", "1.3.0"));
        assert!(check("~1", "1.9.0"));
        assert!(check("^1.2.3", "1.9.0"));
        assert!(!check("^1.2.3", "2.0.0"));
        assert!(check("^0.2.3", "0.2.9"));
        assert!(!check("^0.2.3", "0.3.0"));
        assert!(check("^0.0.3", "0.0.3"));
        assert!(!check("^0.0.3", "0.0.4"));
    }

    #[test]
    fn template_functions() {
        assert_eq!(
            semver_compare(&[">=1.2".into(), "1.3.0".into()]),
            Ok(Value::Bool(true))
        );
        assert!(semver_compare(&[">=1.2".into(), "bad".into()]).is_err());
        assert!(semver_compare(&["??1".into(), "1.0.0".into()]).is_err());
        let v = semver(&["v1.2-rc.1".into()]).map_err(|e| e.message);
        assert_eq!(v.as_ref().map(|v| v.version_text()), Ok(Some("1.2.0-rc.1")));
        let v = v.unwrap_or_default();
        let call = |name: &str, args: &[Value]| call_version_method(name, &v, args);
        assert_eq!(call("Minor", &[]), Ok(Value::Int(2)));
        assert_eq!(call("Prerelease", &[]), Ok("rc.1".into()));
        assert_eq!(call("Original", &[]), Ok("v1.2-rc.1".into()));
        let next = call("IncMinor", &[]).unwrap_or_default();
        assert_eq!(next.version_text(), Some("1.3.0"));
        // Masterminds keeps the original's `v` and writes String() after it.
        assert_eq!(
            call_version_method("String", &next, &[]),
            Ok("1.3.0".into())
        );
        assert_eq!(version_method(&next, "Original"), None);
        assert_eq!(version_method(&v, "Original"), Some("Original"));
        assert_eq!(version_method(&Value::Null, "Major"), None);
    }
}
