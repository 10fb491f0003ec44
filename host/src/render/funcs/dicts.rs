//! Sprig's dictionary functions: building, reading, changing, merging and
//! copying `map[string]interface{}` values.
//!
//! `keys` and `values` return keys in sorted order (Go's order is random);
//! `set`, `unset` and the merges return the changed map (the engine runs
//! its own versions on shared maps, see the module doc of `super`).

use super::args::{at_least, dict, exactly, string_list, strval, text, type_name};
use super::{FuncError, Function};
use crate::render::rvalue::{self, RValue};
use crate::values::{Map, Value};

pub(super) const FUNCTIONS: &[(&str, Function)] = &[
    ("dict", make_dict),
    ("get", get),
    ("set", set),
    ("unset", unset),
    ("hasKey", has_key),
    ("pluck", pluck),
    ("keys", keys),
    ("values", values),
    ("pick", pick),
    ("omit", omit),
    ("merge", merge),
    ("mustMerge", merge),
    ("mergeOverwrite", merge_overwrite),
    ("mustMergeOverwrite", merge_overwrite),
    ("deepCopy", deep_copy),
    ("mustDeepCopy", deep_copy),
    ("dig", dig),
];

/// `dict K1 V1 K2 V2 ...`: keys as strings; a key without a value maps to "".
fn make_dict(args: &[Value]) -> Result<Value, FuncError> {
    let mut map = Map::new();
    for pair in args.chunks(2) {
        let value = pair
            .get(1)
            .cloned()
            .unwrap_or_else(|| Value::String(String::new()));
        map.insert(strval(&pair[0]), value);
    }
    Ok(Value::Map(map))
}

/// `get D KEY`: the value, or "" when the key is absent.
fn get(args: &[Value]) -> Result<Value, FuncError> {
    let [d, key] = exactly::<2>("get", args)?;
    let (d, key) = (dict(d)?, text(key)?);
    Ok(d.get(key)
        .cloned()
        .unwrap_or_else(|| Value::String(String::new())))
}

/// `set D KEY VALUE`: D with KEY set.
fn set(args: &[Value]) -> Result<Value, FuncError> {
    let [d, key, value] = exactly::<3>("set", args)?;
    let mut d = dict(d)?.into_owned();
    d.insert(text(key)?.to_string(), value.clone());
    Ok(Value::Map(d))
}

/// `unset D KEY`: D without KEY.
fn unset(args: &[Value]) -> Result<Value, FuncError> {
    let [d, key] = exactly::<2>("unset", args)?;
    let mut d = dict(d)?.into_owned();
    d.remove(text(key)?);
    Ok(Value::Map(d))
}

fn has_key(args: &[Value]) -> Result<Value, FuncError> {
    let [d, key] = exactly::<2>("hasKey", args)?;
    Ok(Value::Bool(dict(d)?.contains_key(text(key)?)))
}

/// `pluck KEY D...`: the KEY value of each map that has it.
fn pluck(args: &[Value]) -> Result<Value, FuncError> {
    at_least("pluck", args, 1)?;
    let key = text(&args[0])?;
    let mut out = Vec::new();
    for d in &args[1..] {
        if let Some(v) = dict(d)?.get(key) {
            out.push(v.clone());
        }
    }
    Ok(Value::List(out))
}

/// `keys D...`: the keys of every map, each map's sorted.
fn keys(args: &[Value]) -> Result<Value, FuncError> {
    let mut out = Vec::new();
    for d in args {
        out.extend(dict(d)?.keys().cloned());
    }
    Ok(string_list(out))
}

/// `values D`: the values in key order.
fn values(args: &[Value]) -> Result<Value, FuncError> {
    let [d] = exactly::<1>("values", args)?;
    Ok(Value::List(dict(d)?.values().cloned().collect()))
}

fn key_list(args: &[Value]) -> Result<Vec<&str>, FuncError> {
    args.iter().map(text).collect()
}

/// `pick D KEY...`: a map with only those keys.
fn pick(args: &[Value]) -> Result<Value, FuncError> {
    at_least("pick", args, 1)?;
    let d = dict(&args[0])?;
    let wanted = key_list(&args[1..])?;
    let out = d
        .iter()
        .filter(|(k, _)| wanted.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(Value::Map(out))
}

/// `omit D KEY...`: a map without those keys.
fn omit(args: &[Value]) -> Result<Value, FuncError> {
    at_least("omit", args, 1)?;
    let d = dict(&args[0])?;
    let unwanted = key_list(&args[1..])?;
    let out = d
        .iter()
        .filter(|(k, _)| !unwanted.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(Value::Map(out))
}

/// mergo's `Merge` of each SRC into a copy of DST, by the engine's walk
/// ([`crate::render::rvalue::mergo`]) on the arguments converted for it.
fn merge_with(name: &str, args: &[Value], overwrite: bool) -> Result<Value, FuncError> {
    at_least(name, args, 1)?;
    let dst = rvalue::map_ref(dict(&args[0])?.into_owned());
    for src in &args[1..] {
        let src = rvalue::map_ref(dict(src)?.into_owned());
        rvalue::mergo(&dst, &src, overwrite).map_err(FuncError::call)?;
    }
    Ok(RValue::Map(dst).to_value())
}

/// `merge DST SRC...`: SRC values fill DST's gaps, DST wins (deeply).
fn merge(args: &[Value]) -> Result<Value, FuncError> {
    merge_with("merge", args, false)
}

/// `mergeOverwrite DST SRC...`: SRC values win (deeply).
fn merge_overwrite(args: &[Value]) -> Result<Value, FuncError> {
    merge_with("mergeOverwrite", args, true)
}

fn deep_copy(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("deepCopy", args)?;
    Ok(v.clone())
}

/// `dig KEY... DEFAULT D`: the value at the key path, or DEFAULT when a key
/// is missing.
fn dig(args: &[Value]) -> Result<Value, FuncError> {
    if args.len() < 3 {
        return Err(FuncError::call("dig needs at least three arguments"));
    }
    let (path, rest) = args.split_at(args.len() - 2);
    let default = &rest[0];
    let mut current = match &rest[1] {
        Value::Map(m) if !m.contains_key(crate::values::VERSION_KEY) => m,
        other => return Err(conversion_error(other, "map[string]interface {}")),
    };
    for (i, key) in path.iter().enumerate() {
        let key = match key {
            Value::String(s) => s,
            other => return Err(conversion_error(other, "string")),
        };
        let Some(step) = current.get(key) else {
            return Ok(default.clone());
        };
        if i + 1 == path.len() {
            return Ok(step.clone());
        }
        current = match step {
            Value::Map(m) if !m.contains_key(crate::values::VERSION_KEY) => m,
            other => return Err(conversion_error(other, "map[string]interface {}")),
        };
    }
    Ok(default.clone())
}

/// Go's failed type assertion panic, as the template reports it.
fn conversion_error(value: &Value, wanted: &str) -> FuncError {
    let got = match value {
        Value::Null => "nil",
        other => type_name(other),
    };
    FuncError::call(format!(
        "interface conversion: interface {{}} is {got}, not {wanted}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(pairs: &[(&str, Value)]) -> Value {
        Value::Map(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn building_and_reading() {
        assert_eq!(
            make_dict(&["a".into(), Value::Int(1), Value::Int(2)]),
            Ok(d(&[("a", Value::Int(1)), ("2", "".into())]))
        );
        let m = d(&[("a", Value::Int(1)), ("b", Value::Null)]);
        assert_eq!(get(&[m.clone(), "a".into()]), Ok(Value::Int(1)));
        assert_eq!(get(&[m.clone(), "zz".into()]), Ok("".into()));
        assert_eq!(has_key(&[m.clone(), "b".into()]), Ok(Value::Bool(true)));
        assert_eq!(has_key(&[Value::Null, "b".into()]), Ok(Value::Bool(false)));
        assert_eq!(
            keys(&[m.clone(), d(&[("0", Value::Null)])]),
            Ok(Value::List(vec!["a".into(), "b".into(), "0".into()]))
        );
        assert_eq!(
            values(std::slice::from_ref(&m)),
            Ok(Value::List(vec![Value::Int(1), Value::Null]))
        );
        assert_eq!(
            pick(&[m.clone(), "a".into()]),
            Ok(d(&[("a", Value::Int(1))]))
        );
        assert_eq!(omit(&[m.clone(), "a".into()]), Ok(d(&[("b", Value::Null)])));
        assert_eq!(
            pluck(&["a".into(), m.clone(), d(&[]), d(&[("a", Value::Int(2))])]),
            Ok(Value::List(vec![Value::Int(1), Value::Int(2)]))
        );
        assert_eq!(
            set(&[m.clone(), "c".into(), Value::Bool(true)]).map(|v| v.as_map().map(|m| m.len())),
            Ok(Some(3))
        );
        assert_eq!(unset(&[m, "a".into()]), Ok(d(&[("b", Value::Null)])));
    }

    #[test]
    fn merge_keeps_dst_except_empty_values() {
        let dst = d(&[
            ("keep", "dst".into()),
            ("empty", "".into()),
            ("off", Value::Bool(false)),
            ("list", Value::List(vec![Value::Int(1)])),
            ("nested", d(&[("a", Value::Int(1))])),
        ]);
        let src = d(&[
            ("keep", "src".into()),
            ("empty", "src".into()),
            ("off", Value::Bool(true)),
            ("list", Value::List(vec![Value::Int(2)])),
            ("nested", d(&[("a", Value::Int(2)), ("b", Value::Int(3))])),
            ("new", Value::List(vec![])),
            ("gone", Value::Null),
        ]);
        let merged = merge(&[dst.clone(), src.clone()]);
        assert_eq!(
            merged,
            Ok(d(&[
                ("empty", "src".into()),
                ("keep", "dst".into()),
                ("list", Value::List(vec![Value::Int(1)])),
                ("nested", d(&[("a", Value::Int(1)), ("b", Value::Int(3))])),
                ("new", Value::List(vec![])),
                ("off", Value::Bool(true)),
            ]))
        );
        let over = merge_overwrite(&[dst, src]);
        assert_eq!(
            over,
            Ok(d(&[
                ("empty", "src".into()),
                ("gone", Value::Null),
                ("keep", "src".into()),
                ("list", Value::List(vec![Value::Int(2)])),
                ("nested", d(&[("a", Value::Int(2)), ("b", Value::Int(3))])),
                ("new", Value::List(vec![])),
                ("off", Value::Bool(true)),
            ]))
        );
    }

    #[test]
    fn dig_walks_paths() {
        let m = d(&[("a", d(&[("b", "x".into()), ("s", "str".into())]))]);
        assert_eq!(
            dig(&["a".into(), "b".into(), "def".into(), m.clone()]),
            Ok("x".into())
        );
        assert_eq!(
            dig(&["a".into(), "z".into(), "def".into(), m.clone()]),
            Ok("def".into())
        );
        assert_eq!(
            dig(&["a".into(), "s".into(), "t".into(), "def".into(), m]).map_err(|e| e.message),
            Err("interface conversion: interface {} is string, not map[string]interface {}".into())
        );
    }
}
