//! Sprig's map and list functions that keep references, run on the
//! executor's values ([`RValue`]) so that maps alias as Go's do: `dict`,
//! `default`, `list`, `append`/`push`, `get`, `hasKey`, `set`, `unset`, `pick`,
//! `omit`, `merge`/`mergeOverwrite` (mergo: a map of SRC that DST lacks is
//! shared into DST), `deepCopy` and `dig`.
//!
//! A call these functions cannot take as Go's map functions would (a first
//! argument that is not a map, a key that is not a string, ...) is left to
//! the library version in `render::funcs` ([`call`] returns `None`), which
//! reports Sprig's error or result for it.

use std::rc::Rc;

use super::rvalue::{self, MapRef, RMap, RValue};

/// Whether `name` is one of the functions here.
pub fn handles(name: &str) -> bool {
    matches!(
        name,
        "dict"
            | "default"
            | "list"
            | "append"
            | "push"
            | "mustAppend"
            | "mustPush"
            | "get"
            | "hasKey"
            | "set"
            | "unset"
            | "pick"
            | "omit"
            | "merge"
            | "mustMerge"
            | "mergeOverwrite"
            | "mustMergeOverwrite"
            | "deepCopy"
            | "mustDeepCopy"
            | "dig"
    )
}

/// Runs the function `name` on `args`: `None` when the library version
/// must run instead (see the module doc); `Some(Err(message))` for the
/// error Go's function returns.
pub fn call(name: &str, args: &[RValue]) -> Option<Result<RValue, String>> {
    Some(match name {
        "dict" => Ok(make_dict(args)),
        // Sprig's `default D GIVEN`: GIVEN itself unless it is empty; only
        // a map or list GIVEN is decided here (the rest by the library).
        "default" => match args {
            [d, g @ RValue::Map(m)] if g.plain_map().is_some() => {
                let empty = m.borrow().is_empty();
                Ok(if empty { d.clone() } else { g.clone() })
            }
            [d, g @ RValue::List(l)] => Ok(if l.is_empty() { d.clone() } else { g.clone() }),
            _ => return None,
        },
        "list" => Ok(RValue::List(Rc::new(args.to_vec()))),
        "append" | "push" | "mustAppend" | "mustPush" => match args {
            [RValue::List(items), v] => {
                let mut out = Vec::with_capacity(items.len() + 1);
                out.extend(items.iter().cloned());
                out.push(v.clone());
                Ok(RValue::List(Rc::new(out)))
            }
            _ => return None,
        },
        "get" => {
            let [d, RValue::String(key)] = args else {
                return None;
            };
            let d = d.plain_map()?;
            Ok(d.borrow()
                .get(key)
                .cloned()
                .unwrap_or_else(|| RValue::String(String::new())))
        }
        "hasKey" => {
            let [d, RValue::String(key)] = args else {
                return None;
            };
            Ok(RValue::Bool(d.plain_map()?.borrow().contains_key(key)))
        }
        "set" => {
            let [d, RValue::String(key), value] = args else {
                return None;
            };
            let m = d.plain_map()?;
            rvalue::store(m, key.clone(), value.clone()).map(|()| d.clone())
        }
        "unset" => {
            let [d, RValue::String(key)] = args else {
                return None;
            };
            d.plain_map()?.borrow_mut().remove(key);
            Ok(d.clone())
        }
        "pick" | "omit" => {
            let (d, keys) = args.split_first()?;
            let d = d.plain_map()?;
            let keys = key_list(keys)?;
            let keep = name == "pick";
            let out: RMap = d
                .borrow()
                .iter()
                .filter(|(k, _)| keys.contains(&k.as_str()) == keep)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Ok(RValue::new_map(out))
        }
        "merge" | "mustMerge" | "mergeOverwrite" | "mustMergeOverwrite" => {
            let overwrite = name.ends_with("Overwrite");
            let maps: Vec<&MapRef> = args.iter().map(RValue::plain_map).collect::<Option<_>>()?;
            let (dst_map, src_maps) = maps.split_first()?;
            let dst = RValue::Map(Rc::clone(dst_map));
            src_maps
                .iter()
                .try_for_each(|src| rvalue::mergo(dst_map, src, overwrite))
                .map(|()| dst.clone())
        }
        "deepCopy" | "mustDeepCopy" => match args {
            [v] => Ok(v.deep_copy()),
            _ => return None,
        },
        "dig" => return dig(args),
        _ => return None,
    })
}

/// `dict K1 V1 K2 V2 ...`: keys as strings (Sprig's `strval`); a key
/// without a value maps to "".
fn make_dict(args: &[RValue]) -> RValue {
    let mut map = RMap::new();
    for pair in args.chunks(2) {
        let key = match &pair[0] {
            RValue::String(s) => s.clone(),
            other => other.to_value().to_string(),
        };
        let value = pair
            .get(1)
            .cloned()
            .unwrap_or_else(|| RValue::String(String::new()));
        map.insert(key, value);
    }
    RValue::new_map(map)
}

/// The keys of `pick`/`omit`, when every one is a string.
fn key_list(args: &[RValue]) -> Option<Vec<&str>> {
    args.iter()
        .map(|k| match k {
            RValue::String(s) => Some(s.as_str()),
            _ => None,
        })
        .collect()
}

/// `dig KEY... DEFAULT D`: the value at the key path, or DEFAULT when a
/// key is missing; a path through anything but maps is the library's error.
fn dig(args: &[RValue]) -> Option<Result<RValue, String>> {
    if args.len() < 3 {
        return None;
    }
    let (path, rest) = args.split_at(args.len() - 2);
    let default = &rest[0];
    let mut current = rest[1].plain_map()?.clone();
    for (i, key) in path.iter().enumerate() {
        let RValue::String(key) = key else {
            return None;
        };
        let step = current.borrow().get(key).cloned();
        let Some(step) = step else {
            return Some(Ok(default.clone()));
        };
        if i + 1 == path.len() {
            return Some(Ok(step));
        }
        current = step.plain_map()?.clone();
    }
    Some(Ok(default.clone()))
}
