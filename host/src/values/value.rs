//! The value model shared by values, render and workload: what Helm's Go code
//! holds in `map[string]interface{}`.
//!
//! Helm reads values files through YAML -> JSON -> Go, so every number from a
//! values file or `fromYaml`/`fromJson` is a `float64` ([`Value::Float`]);
//! integers appear only from `--set` and template functions such as `int`
//! ([`Value::Int`]). Maps keep their keys sorted, as Go's template `range`
//! and Helm's YAML output both sort them.

use std::collections::BTreeMap;
use std::fmt;

/// A map of values with keys in sorted order.
pub type Map = BTreeMap<String, Value>;

/// One Helm value.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    /// Go's `nil`.
    #[default]
    Null,
    /// A boolean.
    Bool(bool),
    /// A Go `int64` (from `--set`, `int`, `len`, arithmetic).
    Int(i64),
    /// A Go `float64` (every number read from YAML or JSON).
    Float(f64),
    /// A string.
    String(String),
    /// A list (`[]interface{}`).
    List(Vec<Value>),
    /// A map (`map[string]interface{}`).
    Map(Map),
}

/// The key that marks a map standing for an empty built-in object (the
/// renderer's `.Files` value of an empty set): such a map is not truthy
/// and counts as empty, as an empty Go map does.
pub const EMPTY_OBJECT_KEY: &str = "\u{0}empty";

/// The key that marks a map standing for a typed Go nil map: Helm 4's
/// `.Chart.Annotations` of a chart that sets none is the `map[string]string`
/// field's nil value. Such a map ([`Value::nil_map`]) has no entries (it
/// also holds [`EMPTY_OBJECT_KEY`], so it is false and empty), prints as
/// `map[]` as Go's `fmt` does, and encodes to JSON and YAML as `null`, as
/// `encoding/json` encodes a nil map.
pub const NIL_MAP_KEY: &str = "\u{0}nil";

/// The key that marks a map standing for a Masterminds/semver version, as
/// Sprig's `semver` returns it: its value is the version's `String()`.
/// Such a map prints, and encodes to JSON and YAML, as that string, as Go
/// does through the type's `String` and `MarshalJSON` methods; the
/// renderer calls the version's methods (`.Major`, `.Compare`, ...).
pub const VERSION_KEY: &str = "\u{0}semver";
/// The key holding a version's `Original()` text (see [`VERSION_KEY`]).
pub const VERSION_ORIGINAL_KEY: &str = "\u{0}semver.original";
/// The key present when a version is a Go `semver.Version` value (what
/// `IncMajor`, `SetPrerelease`... return) rather than the
/// `*semver.Version` pointer `semver` returns: Go finds only the
/// value-receiver methods on it (see [`VERSION_KEY`]).
pub const VERSION_VALUE_KEY: &str = "\u{0}semver.value";

impl Value {
    /// Go's name for the kind of this value, as Sprig's `kindOf` reports it.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int64",
            Value::Float(_) => "float64",
            Value::String(_) => "string",
            Value::List(_) => "slice",
            Value::Map(m) if m.contains_key(VERSION_VALUE_KEY) => "struct",
            Value::Map(m) if m.contains_key(VERSION_KEY) => "ptr",
            Value::Map(_) => "map",
        }
    }

    /// Go's name for the type of a semver version (see [`VERSION_KEY`]),
    /// if this is one: `*semver.Version`, or `semver.Version` for a value.
    pub fn version_type(&self) -> Option<&'static str> {
        let m = self.as_map()?;
        if m.contains_key(VERSION_VALUE_KEY) {
            Some("semver.Version")
        } else if m.contains_key(VERSION_KEY) {
            Some("*semver.Version")
        } else {
            None
        }
    }

    /// Go template truthiness: false, 0, nil, and empty strings, lists and
    /// maps are false; everything else is true.
    ///
    /// A map holding [`EMPTY_OBJECT_KEY`] stands for an empty built-in
    /// object (an empty `.Files` set) and is false, as Go's empty map is.
    pub fn is_truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty() && !m.contains_key(EMPTY_OBJECT_KEY),
        }
    }

    /// A typed Go nil map (see [`NIL_MAP_KEY`]).
    pub fn nil_map() -> Value {
        let mut m = Map::new();
        m.insert(EMPTY_OBJECT_KEY.to_string(), Value::Bool(true));
        m.insert(NIL_MAP_KEY.to_string(), Value::Bool(true));
        Value::Map(m)
    }

    /// Whether this is a typed Go nil map (see [`NIL_MAP_KEY`]).
    pub fn is_nil_map(&self) -> bool {
        self.as_map().is_some_and(is_nil_map)
    }

    /// The `String()` of a semver version (see [`VERSION_KEY`]), if this
    /// is one.
    pub fn version_text(&self) -> Option<&str> {
        match self {
            Value::Map(m) => version_text(m),
            _ => None,
        }
    }

    /// The map inside, if this is a map.
    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The string inside, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

/// Whether a map stands for a typed Go nil map (see [`NIL_MAP_KEY`]).
pub fn is_nil_map(map: &Map) -> bool {
    map.contains_key(NIL_MAP_KEY)
}

/// The `String()` of a map standing for a semver version (see
/// [`VERSION_KEY`]).
pub fn version_text(map: &Map) -> Option<&str> {
    match map.get(VERSION_KEY) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Float(f)
    }
}

impl From<Map> for Value {
    fn from(m: Map) -> Self {
        Value::Map(m)
    }
}

impl From<Vec<Value>> for Value {
    fn from(l: Vec<Value>) -> Self {
        Value::List(l)
    }
}

impl Value {
    /// A manifest's JSON as a value, integers kept as [`Value::Int`] (where
    /// [`From<serde_json::Value>`] makes every number a float, as Go's
    /// `encoding/json` does for values). The inverse of the JSON that
    /// [`crate::values::parse_manifest_documents`] documents become, so a
    /// manifest printed with [`crate::values::to_yaml`] reads back the same.
    pub fn from_manifest_json(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(a) => {
                Value::List(a.iter().map(Value::from_manifest_json).collect())
            }
            serde_json::Value::Object(o) => Value::Map(
                o.iter()
                    .map(|(k, v)| (k.clone(), Value::from_manifest_json(v)))
                    .collect(),
            ),
        }
    }
}

impl From<serde_json::Value> for Value {
    /// JSON numbers become floats, as Go's `encoding/json` decodes them.
    fn from(json: serde_json::Value) -> Self {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
            serde_json::Value::String(s) => Value::String(s),
            serde_json::Value::Array(a) => Value::List(a.into_iter().map(Value::from).collect()),
            serde_json::Value::Object(o) => {
                Value::Map(o.into_iter().map(|(k, v)| (k, Value::from(v))).collect())
            }
        }
    }
}

impl From<&Value> for serde_json::Value {
    /// Floats that hold a whole number become JSON integers, as Go's
    /// `encoding/json` prints them (`1`, not `1.0`). Non-finite floats,
    /// which JSON cannot hold, become `null`.
    fn from(value: &Value) -> Self {
        match value {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Float(f) => float_to_json(*f),
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Into::into).collect()),
            Value::Map(m) => match version_text(m) {
                Some(text) => serde_json::Value::String(text.to_string()),
                None => serde_json::Value::Object(
                    m.iter().map(|(k, v)| (k.clone(), v.into())).collect(),
                ),
            },
        }
    }
}

fn float_to_json(f: f64) -> serde_json::Value {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        serde_json::Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, serde_json::Value::Number)
    }
}

/// Formats a value as Go's `fmt.Sprint` (`%v`) does, which is what a
/// template prints for `{{ .x }}`: `1e+06` for a float of a million,
/// `[a b]` for a list, `map[k:v]` for a map and `<nil>` for nil.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("<nil>"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => f.write_str(&format_go_float(*x)),
            Value::String(s) => f.write_str(s),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Value::Map(map) if is_nil_map(map) => f.write_str("map[]"),
            Value::Map(map) if version_text(map).is_some() => {
                f.write_str(version_text(map).unwrap_or_default())
            }
            Value::Map(map) => {
                f.write_str("map[")?;
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{k}:{v}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// Go's `strconv.FormatFloat(x, 'g', -1, 64)`, which `fmt`'s `%v` uses for a
/// float64: the shortest digits that round-trip, in exponent form when the
/// decimal exponent is below -4 or at least 6 (`1e+06`, `1.5e-05`), plain
/// otherwise (`100000`, `0.0001`).
pub fn format_go_float(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "1.2345e6".
    let sci = format!("{:e}", x);
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        // %e form with the shortest digits: d.ddde+XX, at least two exponent digits.
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let abs = exp.unsigned_abs();
        if abs < 10 {
            out.push('0');
        }
        out.push_str(&abs.to_string());
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let int_len = (exp + 1) as usize;
        if digits.len() <= int_len {
            out.push_str(&digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_go_percent_v() {
        assert_eq!(format_go_float(1000000.0), "1e+06");
        assert_eq!(format_go_float(100000.0), "100000");
        assert_eq!(format_go_float(3.0), "3");
        assert_eq!(format_go_float(0.5), "0.5");
        assert_eq!(format_go_float(0.0001), "0.0001");
        assert_eq!(format_go_float(0.00001), "1e-05");
        assert_eq!(format_go_float(123456789.0), "1.23456789e+08");
        assert_eq!(format_go_float(-2.5), "-2.5");
        assert_eq!(format_go_float(1.5e300), "1.5e+300");
    }

    #[test]
    fn composite_values_print_like_go() {
        let mut m = Map::new();
        m.insert("b".into(), Value::Int(2));
        m.insert("a".into(), Value::List(vec!["x".into(), Value::Null]));
        assert_eq!(Value::Map(m).to_string(), "map[a:[x <nil>] b:2]");
    }
}
