//! Argument checking shared by every function: arity and Go's parameter
//! types, with the messages Go's `text/template` gives when they do not fit.

use std::borrow::Cow;

use super::FuncError;
use crate::values::{Map, Value};

/// The arguments of a function with exactly `N` parameters.
///
/// # Errors
/// Go's "wrong number of args" message when the count differs.
pub fn exactly<'a, const N: usize>(
    name: &str,
    args: &'a [Value],
) -> Result<&'a [Value; N], FuncError> {
    args.try_into().map_err(|_| {
        FuncError::argument(format!(
            "wrong number of args for {name}: want {N} got {}",
            args.len()
        ))
    })
}

/// Checks that a variadic function got at least `n` arguments.
///
/// # Errors
/// Go's "wrong number of args" message when there are fewer.
pub fn at_least(name: &str, args: &[Value], n: usize) -> Result<(), FuncError> {
    if args.len() < n {
        return Err(FuncError::argument(format!(
            "wrong number of args for {name}: want at least {n} got {}",
            args.len()
        )));
    }
    Ok(())
}

/// Go's name for the dynamic type of a value, as `%T` prints it.
///
/// An integer is Go's `int64`, the type of `--set` integers and of Sprig's
/// arithmetic; integer literals, `len`, `int` and `atoi` are `int` in Go
/// but share the one variant here.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int64",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::List(_) => "[]interface {}",
        Value::Map(_) => value.version_type().unwrap_or("map[string]interface {}"),
    }
}

/// The error Go gives when an argument does not fit a typed parameter.
pub fn wrong_type(expected: &str, got: &Value) -> FuncError {
    let got = match got {
        Value::Null => "interface {}",
        other => type_name(other),
    };
    FuncError::argument(format!(
        "wrong type for value; expected {expected}; got {got}"
    ))
}

/// An argument for a Go `string` parameter.
///
/// # Errors
/// Anything but a string, as Go does not convert.
pub fn text(value: &Value) -> Result<&str, FuncError> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(wrong_type("string", other)),
    }
}

/// An argument for a Go `int` parameter. Integer literals and integer
/// results fit; a float (every number from a values file) does not, as in Go.
///
/// # Errors
/// Anything but an integer.
pub fn integer(value: &Value) -> Result<i64, FuncError> {
    match value {
        Value::Int(i) => Ok(*i),
        other => Err(wrong_type("int", other)),
    }
}

/// An argument for a Go `bool` parameter.
///
/// # Errors
/// Anything but a boolean.
pub fn boolean(value: &Value) -> Result<bool, FuncError> {
    match value {
        Value::Bool(b) => Ok(*b),
        other => Err(wrong_type("bool", other)),
    }
}

/// An argument for a Go `map[string]interface{}` parameter; nil is an empty
/// map, as Go passes a nil map.
///
/// # Errors
/// Anything but a map or nil; a semver version (held as a marked map, see
/// [`crate::values::VERSION_KEY`]) is Go's `*semver.Version` and does not
/// fit either (`keys`, `hasKey`, `values`, `set` ... refuse it).
pub fn dict(value: &Value) -> Result<Cow<'_, Map>, FuncError> {
    match value {
        Value::Map(m) if m.contains_key(crate::values::VERSION_KEY) => {
            Err(wrong_type("map[string]interface {}", value))
        }
        // A typed nil map holds nothing (see `values::NIL_MAP_KEY`).
        Value::Map(m) if crate::values::is_nil_map(m) => Ok(Cow::Owned(Map::new())),
        Value::Map(m) => Ok(Cow::Borrowed(m)),
        Value::Null => Ok(Cow::Owned(Map::new())),
        other => Err(wrong_type("map[string]interface {}", other)),
    }
}

/// Sprig's `strval`: a string as is, anything else as `%v` prints it.
pub fn strval(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Sprig's `strslice`: a list becomes its elements as strings (nil
/// elements dropped), nil an empty list, anything else a one-element list.
pub fn strslice(value: &Value) -> Vec<String> {
    match value {
        Value::List(items) => items
            .iter()
            .filter(|v| !matches!(v, Value::Null))
            .map(strval)
            .collect(),
        Value::Null => Vec::new(),
        other => vec![strval(other)],
    }
}

/// A list of strings as a template value.
pub fn string_list<I: IntoIterator<Item = String>>(items: I) -> Value {
    Value::List(items.into_iter().map(Value::String).collect())
}

/// Sprig's `empty`: nil, false, zero, and empty strings, lists and maps.
pub fn is_empty(value: &Value) -> bool {
    !value.is_truthy()
}

/// Go's name for a value's kind, as `kindOf` and Sprig's errors print it
/// (`Cannot find first on type string`); integers are `int64`, as
/// [`type_name`] explains.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "invalid",
        other => other.kind_name(),
    }
}

/// Whether `name` is the type or kind of `value`; an integer answers to
/// both `int` and `int64`, since Go's two integer types share one variant
/// here.
pub fn names_type(name: &str, actual: &str, value: &Value) -> bool {
    name == actual || (matches!(value, Value::Int(_)) && name == "int")
}

/// The error Go gives when a Sprig function dereferences a nil argument.
pub fn nil_pointer() -> FuncError {
    FuncError::call("runtime error: invalid memory address or nil pointer dereference")
}
