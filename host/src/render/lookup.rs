//! Owns Helm's `lookup` when a render is connected to a target: the
//! [`Lookup`] seam that answers it, handed to the render with the
//! `.Capabilities` it renders with ([`crate::render::render_connected`])
//! and kept by the template engine for the render's `lookup` calls.
//!
//! An offline render (`capstan template`, `bundle lint`) has no answerer
//! and `lookup` returns an empty map, as `helm template` does. A connected
//! render (apply, update, rollback, recover, diff) asks its answerer; a
//! read that fails or that the answerer refuses ends the render with the
//! answerer's message, never with a silent empty map. This module knows
//! nothing of clusters or policies: the lifecycle hands in an answerer
//! (`kube::lookup::TargetLookup`) that reads through the apply target.

pub use crate::model::LookupQuery;
use crate::render::funcs::FuncError;
use crate::render::funcs::args::{exactly, text};
use crate::values::{Map, Value};

/// Answers `lookup` for a connected render.
pub trait Lookup: Send + Sync {
    /// The live object as JSON (an empty object when there is none), or,
    /// for an empty `name`, the list object with its `items` (as Helm's
    /// `lookup` returns it).
    ///
    /// # Errors
    /// One line naming the object: a read the policy refuses (and the rule
    /// that refuses it), a kind the target does not serve, a failed read.
    fn lookup(&self, query: &LookupQuery) -> Result<serde_json::Value, String>;
}

/// `lookup API KIND NAMESPACE NAME` in a template: an empty map in an
/// offline render (no `answerer`), as `helm template` gives; the live
/// object (or list) in a connected one, where a refused or failed read is
/// an error.
///
/// # Errors
/// An argument error for other than four strings; the answerer's message.
pub(crate) fn call(answerer: Option<&dyn Lookup>, args: &[Value]) -> Result<Value, FuncError> {
    let [api, kind, namespace, name] = exactly::<4>("lookup", args)?;
    let query = LookupQuery {
        api_version: text(api)?.to_string(),
        kind: text(kind)?.to_string(),
        namespace: text(namespace)?.to_string(),
        name: text(name)?.to_string(),
    };
    answer(answerer, &query).map_err(FuncError::call)
}

/// The answer to `query`: an empty map when the render is offline, else
/// what the answerer says, converted as Kubernetes' unstructured JSON
/// decodes (whole numbers as integers).
pub(crate) fn answer(answerer: Option<&dyn Lookup>, query: &LookupQuery) -> Result<Value, String> {
    match answerer {
        None => Ok(Value::Map(Map::new())),
        Some(lookup) => lookup.lookup(query).map(unstructured),
    }
}

/// JSON as `k8s.io/apimachinery`'s unstructured decoding gives it to
/// templates: integers that fit an `int64` stay integers, other numbers
/// are floats.
pub fn unstructured(json: serde_json::Value) -> Value {
    match json {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::String(s) => Value::String(s),
        serde_json::Value::Array(a) => Value::List(a.into_iter().map(unstructured).collect()),
        serde_json::Value::Object(o) => {
            Value::Map(o.into_iter().map(|(k, v)| (k, unstructured(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;

    impl Lookup for Fixed {
        fn lookup(&self, query: &LookupQuery) -> Result<serde_json::Value, String> {
            match query.name.as_str() {
                "db" => Ok(serde_json::json!({"data": {"password": "c2VjcmV0"}, "n": 3, "f": 1.5})),
                "" => Ok(serde_json::json!({"kind": "SecretList", "items": []})),
                _ => Err(format!("lookup of {query} is refused")),
            }
        }
    }

    fn query(namespace: &str, name: &str) -> LookupQuery {
        LookupQuery {
            api_version: "v1".into(),
            kind: "Secret".into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    #[test]
    fn offline_renders_get_an_empty_map() {
        assert_eq!(
            answer(None, &query("shop", "db")),
            Ok(Value::Map(Map::new()))
        );
    }

    #[test]
    fn a_connected_render_asks_its_answerer() {
        let got = answer(Some(&Fixed), &query("shop", "db"));
        let Ok(Value::Map(map)) = got else {
            panic!("not a map: {got:?}");
        };
        assert_eq!(map.get("n"), Some(&Value::Int(3)));
        assert_eq!(map.get("f"), Some(&Value::Float(1.5)));
        let refused = answer(Some(&Fixed), &query("kube-system", "x"));
        assert_eq!(
            refused,
            Err("lookup of v1/Secret kube-system/x is refused".into())
        );
    }

    #[test]
    fn queries_print_as_objects() {
        assert_eq!(query("shop", "db").to_string(), "v1/Secret shop/db");
        assert_eq!(query("shop", "").to_string(), "v1/Secret shop/*");
        assert_eq!(query("", "").to_string(), "v1/Secret *");
    }
}
