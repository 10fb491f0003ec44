//! Type conversion and inspection, and the emptiness-driven flow helpers:
//! `int`, `int64`, `float64`, `toString`, `toStrings`, `toDecimal`, `atoi`,
//! `typeOf` and friends, `default`, `empty`, `coalesce`, `all`, `any`,
//! `ternary`, and Helm's `required`, `fail` and `lookup`.
//!
//! Conversions follow spf13/cast as Sprig uses it: a string is parsed with
//! Go's base prefixes (`0x1F`, `0o17`, `0b101`, and a leading `0` meaning
//! octal), a failed conversion gives 0, and floats truncate toward zero.

use super::args::{
    at_least, boolean, exactly, is_empty, kind, names_type, string_list, strslice, strval, text,
    type_name,
};
use super::{FuncError, Function};
use crate::values::Value;

/// Marks the start of a `required` message, as Helm's engine looks for it.
pub const WARN_START: &str = "HELM_ERR_START";
/// Marks the end of a `required` message.
pub const WARN_END: &str = "HELM_ERR_END";

pub(super) const FUNCTIONS: &[(&str, Function)] = &[
    ("int", int),
    ("int64", int64),
    ("float64", float64),
    ("toString", to_string),
    ("toStrings", to_strings),
    ("toDecimal", to_decimal),
    ("atoi", atoi),
    ("typeOf", type_of),
    ("typeIs", type_is),
    ("typeIsLike", type_is_like),
    ("kindOf", kind_of),
    ("kindIs", kind_is),
    ("deepEqual", deep_equal),
    ("default", default),
    ("empty", empty),
    ("coalesce", coalesce),
    ("all", all),
    ("any", any),
    ("ternary", ternary),
    ("required", required),
    ("fail", fail),
];

/// Go's `strconv.ParseInt(s, base, 64)`; `base` 0 reads the prefix.
pub fn parse_go_int(s: &str, base: u32) -> Option<i64> {
    let (negative, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits, prefixed) = if base == 0 {
        let lower = body.to_ascii_lowercase();
        if lower.starts_with("0x") {
            (16, &body[2..], true)
        } else if lower.starts_with("0o") {
            (8, &body[2..], true)
        } else if lower.starts_with("0b") {
            (2, &body[2..], true)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..], true)
        } else {
            (10, body, false)
        }
    } else {
        (base, body, false)
    };
    let digits: String = if base == 0
        && prefixed
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
    {
        digits.replace('_', "")
    } else {
        digits.to_string()
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u64::from_str_radix(&digits, radix).ok()?;
    if negative {
        if magnitude == 1 << 63 {
            Some(i64::MIN)
        } else {
            i64::try_from(magnitude).ok().map(|m| -m)
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// cast's `trimZeroDecimal`: "10.00" becomes "10".
fn trim_zero_decimal(s: &str) -> &str {
    let mut found_zero = false;
    for (i, b) in s.bytes().enumerate().rev() {
        match b {
            b'.' if found_zero => return &s[..i],
            b'.' => {}
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// Go's conversion of a float64 to int64 (truncation; out of range gives
/// the minimum, as on amd64).
fn float_to_int(x: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if x.is_nan() || !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// cast's `ToInt64`, ignoring errors (0), as Sprig calls it.
pub fn to_int64(value: &Value) -> i64 {
    match value {
        Value::Int(i) => *i,
        Value::Float(f) => float_to_int(*f),
        Value::String(s) => parse_go_int(trim_zero_decimal(s), 0).unwrap_or(0),
        Value::Bool(b) => i64::from(*b),
        Value::Null | Value::List(_) | Value::Map(_) => 0,
    }
}

/// cast's `ToFloat64`, ignoring errors (0).
pub fn to_float64(value: &Value) -> f64 {
    match value {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::String(s) => parse_go_float(s).unwrap_or(0.0),
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Null | Value::List(_) | Value::Map(_) => 0.0,
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for the forms charts use.
pub fn parse_go_float(s: &str) -> Option<f64> {
    let lower = s.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if matches!(unsigned, "inf" | "infinity" | "nan") {
        return lower.replace("infinity", "inf").parse().ok();
    }
    if !unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    if lower.starts_with("0x") || lower.starts_with("-0x") || lower.starts_with("+0x") {
        return parse_go_int(s, 0).map(|i| i as f64);
    }
    s.parse().ok()
}

fn int(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("int", args)?;
    Ok(Value::Int(to_int64(v)))
}

fn int64(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("int64", args)?;
    Ok(Value::Int(to_int64(v)))
}

fn float64(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("float64", args)?;
    Ok(Value::Float(to_float64(v)))
}

/// `toString V`: a string as is, anything else in `%v` (nil is `<nil>`).
fn to_string(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("toString", args)?;
    Ok(Value::String(strval(v)))
}

fn to_strings(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("toStrings", args)?;
    Ok(string_list(strslice(v)))
}

/// `toDecimal V`: V's string read as octal ("0777" is 511); 0 if not octal.
fn to_decimal(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("toDecimal", args)?;
    Ok(Value::Int(parse_go_int(&strval(v), 8).unwrap_or(0)))
}

/// `atoi S`: a decimal integer, 0 if S is not one.
fn atoi(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("atoi", args)?;
    Ok(Value::Int(parse_go_int(text(s)?, 10).unwrap_or(0)))
}

fn type_of(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("typeOf", args)?;
    Ok(type_name(v).into())
}

fn type_is(args: &[Value]) -> Result<Value, FuncError> {
    let [target, v] = exactly::<2>("typeIs", args)?;
    Ok(Value::Bool(names_type(text(target)?, type_name(v), v)))
}

/// `typeIsLike T V`: V's type is T or a pointer to T.
fn type_is_like(args: &[Value]) -> Result<Value, FuncError> {
    let [target, v] = exactly::<2>("typeIsLike", args)?;
    let target = text(target)?;
    let actual = type_name(v);
    Ok(Value::Bool(
        names_type(target, actual, v) || format!("*{target}") == actual,
    ))
}

fn kind_of(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("kindOf", args)?;
    Ok(kind(v).into())
}

fn kind_is(args: &[Value]) -> Result<Value, FuncError> {
    let [target, v] = exactly::<2>("kindIs", args)?;
    Ok(Value::Bool(names_type(text(target)?, kind(v), v)))
}

fn deep_equal(args: &[Value]) -> Result<Value, FuncError> {
    let [a, b] = exactly::<2>("deepEqual", args)?;
    Ok(Value::Bool(a == b))
}

/// `default DEFAULT V`: V unless it is empty (nil, false, 0, "", empty list
/// or map) or missing.
fn default(args: &[Value]) -> Result<Value, FuncError> {
    at_least("default", args, 1)?;
    match args.get(1) {
        Some(given) if !is_empty(given) => Ok(given.clone()),
        _ => Ok(args[0].clone()),
    }
}

fn empty(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("empty", args)?;
    Ok(Value::Bool(is_empty(v)))
}

/// `coalesce V...`: the first non-empty value, or nil.
fn coalesce(args: &[Value]) -> Result<Value, FuncError> {
    Ok(args
        .iter()
        .find(|v| !is_empty(v))
        .cloned()
        .unwrap_or(Value::Null))
}

fn all(args: &[Value]) -> Result<Value, FuncError> {
    Ok(Value::Bool(args.iter().all(|v| !is_empty(v))))
}

fn any(args: &[Value]) -> Result<Value, FuncError> {
    Ok(Value::Bool(args.iter().any(|v| !is_empty(v))))
}

/// `ternary TRUE FALSE COND`.
fn ternary(args: &[Value]) -> Result<Value, FuncError> {
    let [if_true, if_false, condition] = exactly::<3>("ternary", args)?;
    Ok(if boolean(condition)? {
        if_true
    } else {
        if_false
    }
    .clone())
}

/// `required MSG V`: V, or an error carrying MSG between Helm's
/// [`WARN_START`] and [`WARN_END`] markers when V is nil or "".
fn required(args: &[Value]) -> Result<Value, FuncError> {
    let [message, v] = exactly::<2>("required", args)?;
    let message = text(message)?;
    match v {
        Value::Null => Err(FuncError::call(format!("{WARN_START}{message}{WARN_END}"))),
        Value::String(s) if s.is_empty() => {
            Err(FuncError::call(format!("{WARN_START}{message}{WARN_END}")))
        }
        other => Ok(other.clone()),
    }
}

/// `fail MSG`: always an error with MSG, between the same markers as
/// `required` (Helm's engine replaces Sprig's `fail` with one that wraps).
fn fail(args: &[Value]) -> Result<Value, FuncError> {
    let [message] = exactly::<1>("fail", args)?;
    Err(FuncError::call(format!(
        "{WARN_START}{}{WARN_END}",
        text(message)?
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::Map;

    #[test]
    fn casts_like_spf13_cast() {
        assert_eq!(to_int64(&Value::Float(3.99)), 3);
        assert_eq!(to_int64(&Value::Float(-3.99)), -3);
        assert_eq!(to_int64(&"0x1F".into()), 31);
        assert_eq!(to_int64(&"010".into()), 8);
        assert_eq!(to_int64(&"10.00".into()), 10);
        assert_eq!(to_int64(&"1.5".into()), 0);
        assert_eq!(to_int64(&"abc".into()), 0);
        assert_eq!(to_int64(&Value::Bool(true)), 1);
        assert_eq!(to_int64(&Value::Null), 0);
        assert_eq!(to_float64(&"1.5".into()), 1.5);
        assert_eq!(to_float64(&"x".into()), 0.0);
        assert_eq!(to_float64(&Value::Int(2)), 2.0);
        assert_eq!(atoi(&["42".into()]), Ok(Value::Int(42)));
        assert_eq!(atoi(&["0x10".into()]), Ok(Value::Int(0)));
        assert_eq!(to_decimal(&["0777".into()]), Ok(Value::Int(511)));
        assert_eq!(to_decimal(&["9".into()]), Ok(Value::Int(0)));
        assert_eq!(int(&[Value::Float(1e6)]), Ok(Value::Int(1_000_000)));
    }

    #[test]
    fn strings_and_types() {
        assert_eq!(to_string(&[Value::Float(1e6)]), Ok("1e+06".into()));
        assert_eq!(to_string(&[Value::Null]), Ok("<nil>".into()));
        assert_eq!(
            to_strings(&[Value::List(vec![Value::Int(1), Value::Null, "a".into()])]),
            Ok(Value::List(vec!["1".into(), "a".into()]))
        );
        assert_eq!(type_of(&[Value::Float(1.0)]), Ok("float64".into()));
        assert_eq!(
            type_of(&[Value::Map(Map::new())]),
            Ok("map[string]interface {}".into())
        );
        assert_eq!(
            type_is(&["string".into(), "x".into()]),
            Ok(Value::Bool(true))
        );
        assert_eq!(kind_of(&[Value::List(vec![])]), Ok("slice".into()));
        assert_eq!(type_of(&[Value::Int(80)]), Ok("int64".into()));
        assert_eq!(
            type_is(&["int".into(), Value::Int(80)]),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            type_is(&["int64".into(), Value::Int(80)]),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            type_is(&["int".into(), Value::Float(80.0)]),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            kind_is(&["int".into(), Value::Int(1)]),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            kind_is(&["invalid".into(), Value::Null]),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            type_is_like(&["int64".into(), Value::Int(1)]),
            Ok(Value::Bool(true))
        );
    }

    #[test]
    fn emptiness_rules() {
        assert_eq!(default(&["d".into(), Value::Bool(false)]), Ok("d".into()));
        assert_eq!(default(&["d".into(), Value::Float(0.0)]), Ok("d".into()));
        assert_eq!(default(&["d".into(), "x".into()]), Ok("x".into()));
        assert_eq!(default(&["d".into()]), Ok("d".into()));
        assert_eq!(empty(&[Value::Map(Map::new())]), Ok(Value::Bool(true)));
        assert_eq!(
            coalesce(&[Value::Null, "".into(), Value::Int(3)]),
            Ok(Value::Int(3))
        );
        assert_eq!(coalesce(&[Value::Null]), Ok(Value::Null));
        assert_eq!(all(&[Value::Int(1), "".into()]), Ok(Value::Bool(false)));
        assert_eq!(any(&[Value::Int(0), "a".into()]), Ok(Value::Bool(true)));
        assert_eq!(
            ternary(&["y".into(), "n".into(), Value::Bool(false)]),
            Ok("n".into())
        );
        assert!(ternary(&["y".into(), "n".into(), "true".into()]).is_err());
    }

    #[test]
    fn helm_flow_functions() {
        assert_eq!(
            required(&["need x".into(), Value::Int(0)]),
            Ok(Value::Int(0))
        );
        assert_eq!(
            required(&["need x".into(), "".into()]),
            Err(FuncError::call("HELM_ERR_STARTneed xHELM_ERR_END"))
        );
        assert!(required(&["need x".into(), Value::Null]).is_err());
        assert_eq!(
            fail(&["boom".into()]),
            Err(FuncError::call("HELM_ERR_STARTboomHELM_ERR_END"))
        );
        let args: Vec<Value> = ["v1", "Secret", "ns", "name"]
            .iter()
            .map(|s| Value::from(*s))
            .collect();
        assert_eq!(
            crate::render::lookup::call(None, &args),
            Ok(Value::Map(Map::new()))
        );
    }
}
