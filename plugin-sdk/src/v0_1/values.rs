//! Building override values without writing JSON by hand.

use serde_json::{Map, Value};

/// Helm values under construction: a JSON object built with dotted paths.
///
/// ```
/// use capstan_plugin_sdk::Values;
/// let v = Values::new().set("replicaCount", 2).set("image.tag", "1.2");
/// assert_eq!(v.to_json(), r#"{"image":{"tag":"1.2"},"replicaCount":2}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Values {
    root: Map<String, Value>,
}

impl Values {
    /// Empty values.
    pub fn new() -> Self {
        Values::default()
    }

    /// Sets `path` (dot separated, such as `a.b.c`) to `value`, creating
    /// the maps on the way and replacing anything that was not a map.
    pub fn set(mut self, path: &str, value: impl Into<Value>) -> Self {
        self.insert(path, value.into());
        self
    }

    /// Sets `path` in place; see [`Values::set`].
    pub fn insert(&mut self, path: &str, value: Value) {
        let mut parts = path.split('.').peekable();
        let mut map = &mut self.root;
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                map.insert(part.to_string(), value);
                return;
            }
            let entry = map
                .entry(part.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            match entry {
                Value::Object(inner) => map = inner,
                _ => return,
            }
        }
    }

    /// Merges a JSON value in at `path` (`""` for the root): maps merge
    /// deeply, everything else replaces. At the root only an object merges;
    /// any other value is ignored.
    pub fn merge(mut self, path: &str, value: Value) -> Self {
        let mut wrapped = value;
        for part in path.rsplit('.').filter(|p| !p.is_empty()) {
            let mut map = Map::new();
            map.insert(part.to_string(), wrapped);
            wrapped = Value::Object(map);
        }
        if let Value::Object(src) = wrapped {
            for (k, v) in src {
                merge_into(self.root.entry(k).or_insert(Value::Null), v);
            }
        }
        self
    }

    /// The values as a JSON object.
    pub fn into_json_value(self) -> Value {
        Value::Object(self.root)
    }

    /// The values as JSON text, what `overrides` returns to the host.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.root).unwrap_or_else(|_| "{}".to_string())
    }

    /// The value at a dotted path, if any (for tests).
    pub fn get(&self, path: &str) -> Option<&Value> {
        let mut parts = path.split('.');
        let first = parts.next()?;
        let mut current = self.root.get(first)?;
        for part in parts {
            current = current.as_object()?.get(part)?;
        }
        Some(current)
    }
}

fn merge_into(slot: &mut Value, value: Value) {
    match (slot, value) {
        (Value::Object(dst), Value::Object(src)) => {
            for (k, v) in src {
                merge_into(dst.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, value) => *slot = value,
    }
}

impl From<Values> for Value {
    fn from(v: Values) -> Value {
        v.into_json_value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dotted_paths_build_nested_maps() {
        let v = Values::new()
            .set("a.b.c", 1)
            .set("a.b.d", "x")
            .set("e", true);
        assert_eq!(
            v.into_json_value(),
            json!({"a": {"b": {"c": 1, "d": "x"}}, "e": true})
        );
    }

    #[test]
    fn a_scalar_on_the_way_is_replaced_by_a_map() {
        let v = Values::new().set("a", 1).set("a.b", 2);
        assert_eq!(v.into_json_value(), json!({"a": {"b": 2}}));
    }

    #[test]
    fn merge_is_deep_for_maps() {
        let v = Values::new()
            .set("x.keep", 1)
            .merge("x", json!({"add": [1, 2], "keep": {"deep": true}}));
        assert_eq!(
            v.into_json_value(),
            json!({"x": {"keep": {"deep": true}, "add": [1, 2]}})
        );
    }
}
