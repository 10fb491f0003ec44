//! Sprig's map and list functions that keep references, run on the
//! executor's values ([`RValue`]) so that maps alias as Go's do: `dict`,
//! `default`, `list`, `append`/`push`, `get`, `hasKey`, `set`, `unset`, `pick`,
//! `omit`, `merge`/`mergeOverwrite` (mergo: a map of SRC that DST lacks is
//! shared into DST), `deepCopy` and `dig`; and the functions that hand out
//! their arguments or their elements, which in Go are the same maps:
//! `required`, `tuple`, `prepend`, `first`, `last`, `rest`, `initial`,
//! `reverse`, `uniq`, `without`, `compact`, `chunk`, `mustSlice` (and their
//! `must` forms), `concat`, `values`, `pluck`, `ternary` and `coalesce`;
//! and `has` and `deepEqual`, which compare as Go's `reflect.DeepEqual`
//! (ending on maps that contain themselves).
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
            | "required"
            | "list"
            | "tuple"
            | "prepend"
            | "mustPrepend"
            | "chunk"
            | "mustChunk"
            | "pluck"
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
            | "first"
            | "mustFirst"
            | "last"
            | "mustLast"
            | "rest"
            | "mustRest"
            | "initial"
            | "mustInitial"
            | "reverse"
            | "mustReverse"
            | "uniq"
            | "mustUniq"
            | "without"
            | "mustWithout"
            | "compact"
            | "mustCompact"
            | "mustSlice"
            | "concat"
            | "values"
            | "ternary"
            | "coalesce"
            | "has"
            | "mustHas"
            | "deepEqual"
    )
}

/// Runs the function `name` on `args`: `None` when the library version
/// must run instead (see the module doc); `Some(Err(message))` for the
/// error Go's function returns.
pub fn call(name: &str, args: &[RValue]) -> Option<Result<RValue, String>> {
    Some(match name {
        "dict" => Ok(make_dict(args)),
        // Sprig's `default D GIVEN...`: GIVEN itself unless it is empty
        // (or missing), else D itself.
        "default" => {
            let (d, given) = args.split_first()?;
            Ok(match given.first() {
                Some(g) if g.is_truthy() => g.clone(),
                _ => d.clone(),
            })
        }
        // `required MSG V`: V itself; the error for an empty V is the
        // library's.
        "required" => match args {
            [RValue::String(_), RValue::Null] => return None,
            [RValue::String(_), RValue::String(v)] if v.is_empty() => return None,
            [RValue::String(_), v] => Ok(v.clone()),
            _ => return None,
        },
        "list" | "tuple" => Ok(RValue::List(Rc::new(args.to_vec()))),
        "prepend" | "mustPrepend" => match args {
            [RValue::List(items), v] => {
                let mut out = Vec::with_capacity(items.len() + 1);
                out.push(v.clone());
                out.extend(items.iter().cloned());
                Ok(list(out))
            }
            _ => return None,
        },
        // `chunk SIZE LIST`: lists holding the same elements.
        "chunk" | "mustChunk" => match args {
            [RValue::Int(size), RValue::List(items)] if *size > 0 => {
                let size = usize::try_from(*size).ok()?;
                Ok(list(items.chunks(size).map(|c| list(c.to_vec())).collect()))
            }
            _ => return None,
        },
        // `pluck KEY D...`: the KEY value of each map that has it (a nil D
        // has none).
        "pluck" => {
            let (RValue::String(key), maps) = args.split_first()? else {
                return None;
            };
            let mut out = Vec::new();
            for d in maps {
                if matches!(d, RValue::Null) {
                    continue;
                }
                if let Some(v) = d.plain_map()?.borrow().get(key) {
                    out.push(v.clone());
                }
            }
            Ok(list(out))
        }
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
            rvalue::store(m, key.clone(), value.clone());
            Ok(d.clone())
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
            let (dst, srcs) = args.split_first()?;
            let dst_map = dst.plain_map()?;
            // A nil SRC is Go's nil map: nothing to merge.
            let src_maps: Vec<&MapRef> = srcs
                .iter()
                .filter(|src| !matches!(src, RValue::Null))
                .map(RValue::plain_map)
                .collect::<Option<_>>()?;
            src_maps
                .iter()
                .try_for_each(|src| rvalue::mergo(dst_map, src, overwrite))
                .map(|()| dst.clone())
        }
        "deepCopy" | "mustDeepCopy" => match args {
            [v] => v
                .deep_copy()
                .map_err(|rvalue::Cycle| rvalue::cycle_message("copying")),
            _ => return None,
        },
        "dig" => return dig(args),
        // The element itself (nil for an empty list).
        "first" | "mustFirst" | "last" | "mustLast" => {
            let [RValue::List(items)] = args else {
                return None;
            };
            let item = if name.ends_with("irst") {
                items.first()
            } else {
                items.last()
            };
            Ok(item.cloned().unwrap_or_default())
        }
        "rest" | "mustRest" | "initial" | "mustInitial" | "reverse" | "mustReverse" => {
            let [RValue::List(items)] = args else {
                return None;
            };
            let out: Vec<RValue> = match name {
                "rest" | "mustRest" => items.iter().skip(1).cloned().collect(),
                "initial" | "mustInitial" => items[..items.len().saturating_sub(1)].to_vec(),
                _ => items.iter().rev().cloned().collect(),
            };
            Ok(list(out))
        }
        // The first of each set of deeply equal elements (Go's
        // `reflect.DeepEqual`).
        "uniq" | "mustUniq" => {
            let [RValue::List(items)] = args else {
                return None;
            };
            let mut out: Vec<RValue> = Vec::new();
            for item in items.iter() {
                if !out.iter().any(|seen| rvalue::deep_eq(seen, item)) {
                    out.push(item.clone());
                }
            }
            Ok(list(out))
        }
        "without" | "mustWithout" => {
            let (RValue::List(items), omit) = args.split_first()? else {
                return None;
            };
            let kept = items
                .iter()
                .filter(|item| !omit.iter().any(|o| rvalue::deep_eq(o, item)))
                .cloned()
                .collect();
            Ok(list(kept))
        }
        "compact" | "mustCompact" => {
            let [RValue::List(items)] = args else {
                return None;
            };
            Ok(list(
                items.iter().filter(|v| v.is_truthy()).cloned().collect(),
            ))
        }
        "mustSlice" => return slice(args),
        "concat" => {
            let mut out = Vec::new();
            for arg in args {
                let RValue::List(items) = arg else {
                    return None;
                };
                out.extend(items.iter().cloned());
            }
            Ok(list(out))
        }
        "values" => {
            let [d] = args else {
                return None;
            };
            Ok(list(d.plain_map()?.borrow().values().cloned().collect()))
        }
        "ternary" => {
            let [if_true, if_false, RValue::Bool(condition)] = args else {
                return None;
            };
            Ok(if *condition { if_true } else { if_false }.clone())
        }
        // Sprig's `has NEEDLE LIST` and `deepEqual A B` compare with Go's
        // `reflect.DeepEqual`, which ends on maps that contain themselves.
        "has" | "mustHas" => match args {
            [needle, RValue::List(items)] => Ok(RValue::Bool(
                items.iter().any(|item| rvalue::deep_eq(needle, item)),
            )),
            _ => return None,
        },
        "deepEqual" => match args {
            [a, b] => Ok(RValue::Bool(rvalue::deep_eq(a, b))),
            _ => return None,
        },
        "coalesce" => Ok(args
            .iter()
            .find(|v| v.is_truthy())
            .cloned()
            .unwrap_or_default()),
        _ => return None,
    })
}

fn list(items: Vec<RValue>) -> RValue {
    RValue::List(Rc::new(items))
}

/// Sprig's `slice LIST [START [END]]` (`mustSlice` here, see
/// docs/src/reference/template-functions.md): nil for an empty list; indexes out of
/// range are the library's error.
fn slice(args: &[RValue]) -> Option<Result<RValue, String>> {
    let (RValue::List(items), indexes) = args.split_first()? else {
        return None;
    };
    if items.is_empty() {
        return Some(Ok(RValue::Null));
    }
    let index = |i: usize, default: usize| -> Option<i64> {
        match indexes.get(i) {
            None => i64::try_from(default).ok(),
            Some(RValue::List(_) | RValue::Map(_)) => None,
            Some(v) => Some(crate::render::funcs::to_int64(&v.to_value())),
        }
    };
    let (start, end) = (index(0, 0)?, index(1, items.len())?);
    let start = usize::try_from(start).ok()?;
    let end = usize::try_from(end).ok()?;
    let part = items.get(start..end)?;
    Some(Ok(list(part.to_vec())))
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
