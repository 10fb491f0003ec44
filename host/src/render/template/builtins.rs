//! Go's `text/template` built-in functions that the engine owns: `not`,
//! `len`, `index`, `slice`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`, `call`
//! (`and` and `or` short-circuit inside the executor).

use std::cmp::Ordering;

use super::exec::go_type;
use super::rvalue::RValue;
use crate::values::Value;

/// How a built-in failed.
#[derive(Debug)]
pub enum CallError {
    /// Reported as `error calling NAME: MSG`.
    Call(String),
    /// Reported as the bare message (argument count errors).
    Plain(String),
}

/// Names of the built-ins handled here or in the executor (`lookup` is
/// Helm's, answered by the render's answerer the engine holds).
pub const NAMES: [&str; 16] = [
    "and", "or", "not", "len", "index", "slice", "eq", "ne", "lt", "le", "gt", "ge", "call",
    "include", "tpl", "lookup",
];

/// Calls the built-in `name`, or `None` when `name` is not one.
pub fn call(name: &str, args: &[RValue]) -> Option<Result<RValue, CallError>> {
    let plain = |i: usize| args[i].to_value();
    let r = match name {
        "not" => arity(name, args, 1).map(|_| Value::Bool(!args[0].is_truthy())),
        "len" => arity(name, args, 1).and_then(|_| length(&args[0])),
        "index" => return Some(at_least(name, args, 1).and_then(|_| index(args))),
        "slice" => return Some(at_least(name, args, 1).and_then(|_| slice(args))),
        "eq" => at_least(name, args, 1).and_then(|_| eq(args).map(Value::Bool)),
        "ne" => arity(name, args, 2).and_then(|_| eq(args).map(|b| Value::Bool(!b))),
        "lt" => arity(name, args, 2).and_then(|_| less(&plain(0), &plain(1)).map(Value::Bool)),
        "le" => arity(name, args, 2).and_then(|_| {
            let lt = less(&plain(0), &plain(1))?;
            Ok(Value::Bool(lt || eq(args)?))
        }),
        "gt" => arity(name, args, 2).and_then(|_| {
            let lt = less(&plain(0), &plain(1))?;
            Ok(Value::Bool(!lt && !eq(args)?))
        }),
        "ge" => {
            arity(name, args, 2).and_then(|_| less(&plain(0), &plain(1)).map(|lt| Value::Bool(!lt)))
        }
        "call" => at_least(name, args, 1).and_then(|_| {
            Err(CallError::Call(match &args[0] {
                RValue::Null => "call of nil".to_string(),
                other => format!("non-function of type {}", go_type(&other.to_value())),
            }))
        }),
        _ => return None,
    };
    Some(r.map(RValue::from))
}

fn arity<T>(name: &str, args: &[T], want: usize) -> Result<(), CallError> {
    if args.len() != want {
        return Err(CallError::Plain(format!(
            "wrong number of args for {name}: want {want} got {}",
            args.len()
        )));
    }
    Ok(())
}

fn at_least<T>(name: &str, args: &[T], want: usize) -> Result<(), CallError> {
    if args.len() < want {
        return Err(CallError::Plain(format!(
            "wrong number of args for {name}: want at least {want} got {}",
            args.len()
        )));
    }
    Ok(())
}

fn call_err(msg: impl Into<String>) -> CallError {
    CallError::Call(msg.into())
}

fn length(v: &RValue) -> Result<Value, CallError> {
    // Go dereferences the `*semver.Version` a version stands for and finds a
    // struct, which has no length.
    if v.is_object() && v.to_value().version_type().is_some() {
        return Err(call_err("len of type semver.Version"));
    }
    let n = match v {
        RValue::String(s) => s.len(),
        RValue::List(l) => l.len(),
        // An empty built-in object or a typed nil map has no entries.
        RValue::Map(m) if m.borrow().contains_key(crate::values::EMPTY_OBJECT_KEY) => 0,
        RValue::Map(m) => m.borrow().len(),
        RValue::Null => return Err(call_err("len of nil pointer")),
        other => {
            return Err(call_err(format!(
                "len of type {}",
                go_type(&other.to_value())
            )));
        }
    };
    Ok(Value::Int(n as i64))
}

fn int_index(v: &Value, what: &str) -> Result<i64, CallError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Null => Err(call_err(format!("cannot index {what} with nil"))),
        other => Err(call_err(format!(
            "cannot index {what} with type {}",
            go_type(other)
        ))),
    }
}

/// Go's `index`: the element itself, so that a map reached through it is
/// the map inside the indexed value.
fn index(args: &[RValue]) -> Result<RValue, CallError> {
    let mut item = args[0].clone();
    if matches!(item, RValue::Null) {
        return Err(call_err("index of untyped nil"));
    }
    for idx in &args[1..] {
        let idx = idx.to_value();
        let next = match &item {
            RValue::Null => return Err(call_err("index of nil pointer")),
            RValue::List(l) => {
                let i = int_index(&idx, "slice/array")?;
                if i < 0 || i as usize >= l.len() {
                    return Err(call_err(format!("index out of range: {i}")));
                }
                l[i as usize].clone()
            }
            RValue::String(s) => {
                let i = int_index(&idx, "slice/array")?;
                if i < 0 || i as usize >= s.len() {
                    return Err(call_err(format!("index out of range: {i}")));
                }
                return Ok(RValue::Int(i64::from(s.as_bytes()[i as usize])));
            }
            RValue::Map(m) if m.borrow().contains_key(crate::values::VERSION_KEY) => {
                return Err(call_err(format!(
                    "can't index item of type {}",
                    go_type(&item.to_value())
                )));
            }
            RValue::Map(m) => match &idx {
                Value::String(k) => m.borrow().get(k).cloned().unwrap_or(RValue::Null),
                Value::Null => return Err(call_err("value is nil; should be of type string")),
                other => {
                    return Err(call_err(format!(
                        "value has type {}; should be string",
                        go_type(other)
                    )));
                }
            },
            other => {
                return Err(call_err(format!(
                    "can't index item of type {}",
                    go_type(&other.to_value())
                )));
            }
        };
        item = next;
    }
    Ok(item)
}

fn slice(args: &[RValue]) -> Result<RValue, CallError> {
    let item = &args[0];
    if args.len() > 4 {
        return Err(call_err(format!(
            "too many slice indexes: {}",
            args.len() - 1
        )));
    }
    let len = match item {
        RValue::String(s) => s.len(),
        RValue::List(l) => l.len(),
        RValue::Null => return Err(call_err("slice of untyped nil")),
        other => {
            return Err(call_err(format!(
                "can't slice item of type {}",
                go_type(&other.to_value())
            )));
        }
    };
    let mut idx = [0usize, len, len];
    for (i, a) in args[1..].iter().enumerate() {
        let n = int_index(&a.to_value(), "slice/array")?;
        if n < 0 || n as usize > len {
            return Err(call_err(format!("index out of range: {n}")));
        }
        idx[i] = n as usize;
    }
    if args.len() == 4 && matches!(item, RValue::String(_)) {
        return Err(call_err("cannot 3-index slice a string"));
    }
    if idx[0] > idx[1] {
        return Err(call_err(format!(
            "invalid slice index: {} > {}",
            idx[0], idx[1]
        )));
    }
    match item {
        RValue::String(s) => s
            .get(idx[0]..idx[1])
            .map(|x| RValue::String(x.to_string()))
            .ok_or_else(|| call_err("slice splits a character")),
        RValue::List(l) => Ok(RValue::List(std::rc::Rc::new(l[idx[0]..idx[1]].to_vec()))),
        _ => Err(call_err("can't slice")),
    }
}

#[derive(PartialEq, Clone, Copy)]
enum Kind {
    Bool,
    Int,
    Float,
    String,
    Nil,
    Other,
}

fn kind(v: &Value) -> Kind {
    match v {
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) => Kind::Int,
        Value::Float(_) => Kind::Float,
        Value::String(_) => Kind::String,
        Value::Null => Kind::Nil,
        _ => Kind::Other,
    }
}

/// Go's `eq arg1 arg2...`: true when arg1 equals any of the others.
/// Scalars are compared in place; a list or map is copied only for the
/// error message.
fn eq(args: &[RValue]) -> Result<bool, CallError> {
    let a = &args[0];
    if args.len() < 2 {
        return Err(call_err("missing argument for comparison"));
    }
    for b in &args[1..] {
        let truth = match (a, b) {
            (RValue::Bool(x), RValue::Bool(y)) => x == y,
            (RValue::Int(x), RValue::Int(y)) => x == y,
            (RValue::Float(x), RValue::Float(y)) => x == y,
            (RValue::String(x), RValue::String(y)) => x == y,
            (RValue::Null, RValue::Null) => true,
            // Nil against anything else is unequal, not an error.
            (RValue::Null, _) | (_, RValue::Null) => false,
            // Lists and maps are one kind to Go's check, and not comparable.
            (RValue::List(_) | RValue::Map(_), RValue::List(_) | RValue::Map(_)) => {
                let other = a.to_value();
                return Err(call_err(format!(
                    "non-comparable type {other}: {}",
                    go_type(&other)
                )));
            }
            _ => return Err(call_err("incompatible types for comparison")),
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Go's `lt`: both basic and of the same kind (ints, floats or strings).
fn less(a: &Value, b: &Value) -> Result<bool, CallError> {
    let (ka, kb) = (kind(a), kind(b));
    let basic = |k: Kind| matches!(k, Kind::Int | Kind::Float | Kind::String | Kind::Bool);
    if !basic(ka) || !basic(kb) {
        return Err(call_err("invalid type for comparison"));
    }
    if ka != kb {
        return Err(call_err("incompatible types for comparison"));
    }
    Ok(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x < y,
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y) == Some(Ordering::Less),
        (Value::String(x), Value::String(y)) => x < y,
        _ => return Err(call_err("invalid type for comparison")),
    })
}
