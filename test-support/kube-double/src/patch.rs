//! The non-apply patch formats: JSON merge patch (RFC 7386; strategic merge
//! patch is treated as one) and JSON patch (RFC 6902). Pure functions on
//! values; a malformed patch is an error the server answers with a 4xx.

use serde_json::{Value, json};

/// Applies an RFC 7386 merge patch: objects merge key by key, `null` removes.
pub fn merge(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (None, Some(p)) => {
            *target = json!({});
            merge(target, &Value::Object(p.clone()));
        }
        _ => *target = patch.clone(),
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn tokens(pointer: &str) -> Result<Vec<String>, String> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let rest = pointer
        .strip_prefix('/')
        .ok_or_else(|| format!("invalid JSON pointer {pointer:?}"))?;
    Ok(rest.split('/').map(unescape).collect())
}

fn index(token: &str, len: usize, allow_end: bool) -> Result<usize, String> {
    if allow_end && token == "-" {
        return Ok(len);
    }
    let i: usize = token
        .parse()
        .map_err(|_| format!("invalid array index {token:?}"))?;
    if i > len || (!allow_end && i == len) {
        return Err(format!("array index {i} out of bounds"));
    }
    Ok(i)
}

fn parent<'a>(doc: &'a mut Value, path: &[String]) -> Result<&'a mut Value, String> {
    let mut v = doc;
    for t in path {
        v = match v {
            Value::Object(m) => m
                .get_mut(t)
                .ok_or_else(|| format!("missing path element {t:?}"))?,
            Value::Array(a) => {
                let i = index(t, a.len(), false)?;
                &mut a[i]
            }
            _ => return Err(format!("cannot descend into a scalar at {t:?}")),
        };
    }
    Ok(v)
}

fn get(doc: &Value, path: &[String]) -> Result<Value, String> {
    let mut v = doc;
    for t in path {
        v = match v {
            Value::Object(m) => m
                .get(t)
                .ok_or_else(|| format!("missing path element {t:?}"))?,
            Value::Array(a) => &a[index(t, a.len(), false)?],
            _ => return Err(format!("cannot descend into a scalar at {t:?}")),
        };
    }
    Ok(v.clone())
}

fn add(doc: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    let Some((last, init)) = path.split_last() else {
        *doc = value;
        return Ok(());
    };
    match parent(doc, init)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            let i = index(last, a.len(), true)?;
            a.insert(i, value);
        }
        _ => return Err("cannot add to a scalar".into()),
    }
    Ok(())
}

fn remove(doc: &mut Value, path: &[String]) -> Result<Value, String> {
    let (last, init) = path
        .split_last()
        .ok_or("cannot remove the whole document")?;
    match parent(doc, init)? {
        Value::Object(m) => m
            .remove(last)
            .ok_or_else(|| format!("missing path element {last:?}")),
        Value::Array(a) => {
            let i = index(last, a.len(), false)?;
            Ok(a.remove(i))
        }
        _ => Err("cannot remove from a scalar".into()),
    }
}

/// Applies an RFC 6902 JSON patch (add, remove, replace, move, copy, test).
///
/// # Errors
/// A message naming the operation that failed; the target is then in an
/// unspecified state, so callers patch a copy.
pub fn json_patch(doc: &mut Value, patch: &Value) -> Result<(), String> {
    let ops = patch
        .as_array()
        .ok_or("a JSON patch must be an array of operations")?;
    for op in ops {
        let name = op["op"]
            .as_str()
            .ok_or("a JSON patch operation needs \"op\"")?;
        let path = tokens(
            op["path"]
                .as_str()
                .ok_or("a JSON patch operation needs \"path\"")?,
        )?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| format!("operation {name:?} needs \"value\""))
        };
        let from = || tokens(op["from"].as_str().unwrap_or_default());
        match name {
            "add" => add(doc, &path, value()?)?,
            "remove" => {
                remove(doc, &path)?;
            }
            "replace" => {
                remove(doc, &path)?;
                add(doc, &path, value()?)?;
            }
            "move" => {
                let v = remove(doc, &from()?)?;
                add(doc, &path, v)?;
            }
            "copy" => {
                let v = get(doc, &from()?)?;
                add(doc, &path, v)?;
            }
            "test" => {
                if get(doc, &path)? != value()? {
                    return Err(format!("test failed at {:?}", op["path"]));
                }
            }
            other => return Err(format!("unknown JSON patch operation {other:?}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_patch_operations() {
        let mut doc = json!({"a": {"b": 1}, "list": [1, 2], "x/y": 0});
        let patch = json!([
            {"op": "add", "path": "/a/c", "value": 2},
            {"op": "replace", "path": "/a/b", "value": 3},
            {"op": "add", "path": "/list/-", "value": 9},
            {"op": "remove", "path": "/list/0"},
            {"op": "move", "from": "/x~1y", "path": "/moved"},
            {"op": "copy", "from": "/a", "path": "/copied"},
            {"op": "test", "path": "/a/b", "value": 3},
        ]);
        assert_eq!(json_patch(&mut doc, &patch), Ok(()));
        assert_eq!(
            doc,
            json!({"a": {"b": 3, "c": 2}, "list": [2, 9], "moved": 0, "copied": {"b": 3, "c": 2}})
        );
        let mut doc = json!({"a": 1});
        assert!(json_patch(&mut doc, &json!([{"op": "remove", "path": "/nope"}])).is_err());
        assert!(json_patch(&mut doc, &json!([{"op": "test", "path": "/a", "value": 2}])).is_err());
        assert!(json_patch(&mut doc, &json!({"op": "add"})).is_err());
        assert!(
            json_patch(
                &mut doc,
                &json!([{"op": "add", "path": "/l/99", "value": 1}])
            )
            .is_err()
        );
    }

    #[test]
    fn merge_patch_removes_with_null() {
        let mut doc = json!({"a": {"b": 1, "c": 2}});
        merge(&mut doc, &json!({"a": {"b": null, "d": 3}}));
        assert_eq!(doc, json!({"a": {"c": 2, "d": 3}}));
    }
}
