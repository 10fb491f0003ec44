//! Small builders shared by the unit tests of this module.

use super::{Map, Value, parse_yaml};

/// A map value from `(key, value)` pairs.
pub(crate) fn map(entries: &[(&str, Value)]) -> Value {
    Value::Map(
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

/// A string value.
pub(crate) fn s(text: &str) -> Value {
    Value::String(text.to_string())
}

/// The map a YAML snippet parses to; panics (in tests only) on anything
/// else.
pub(crate) fn yaml_map(text: &str) -> Map {
    match parse_yaml(text) {
        Ok(Value::Map(m)) => m,
        other => panic!("not a map: {other:?}"),
    }
}
