//! Sprig's list functions. Every function that takes a list refuses
//! anything else with Sprig's message (`Cannot find first on type string`);
//! the plain forms panic in Go and the `must` forms return the error, and
//! both reach the template as the same error, so both share one body here.

use super::args::{at_least, exactly, integer, kind, nil_pointer, string_list, strslice, strval};
use super::{FuncError, Function};
use crate::values::Value;

pub(super) const FUNCTIONS: &[(&str, Function)] = &[
    ("list", list),
    ("tuple", list),
    ("append", append),
    ("push", append),
    ("mustAppend", append),
    ("mustPush", append),
    ("prepend", prepend),
    ("mustPrepend", prepend),
    ("first", first),
    ("mustFirst", first),
    ("last", last),
    ("mustLast", last),
    ("rest", rest),
    ("mustRest", rest),
    ("initial", initial),
    ("mustInitial", initial),
    ("reverse", reverse),
    ("mustReverse", reverse),
    ("uniq", uniq),
    ("mustUniq", uniq),
    ("without", without),
    ("mustWithout", without),
    ("has", has),
    ("mustHas", has),
    ("compact", compact),
    ("mustCompact", compact),
    ("concat", concat),
    ("chunk", chunk),
    ("mustChunk", chunk),
    ("mustSlice", must_slice),
    ("sortAlpha", sort_alpha),
];

/// The items of a list argument, or Sprig's error naming the operation.
fn items<'a>(value: &'a Value, operation: &str) -> Result<&'a [Value], FuncError> {
    match value {
        Value::List(items) => Ok(items),
        Value::Null => Err(nil_pointer()),
        other => Err(FuncError::call(format!(
            "Cannot {operation} on type {}",
            kind(other)
        ))),
    }
}

fn list(args: &[Value]) -> Result<Value, FuncError> {
    Ok(Value::List(args.to_vec()))
}

/// `append LIST V`: a new list with V at the end.
fn append(args: &[Value]) -> Result<Value, FuncError> {
    let [list, v] = exactly::<2>("append", args)?;
    let mut out = items(list, "push")?.to_vec();
    out.push(v.clone());
    Ok(Value::List(out))
}

/// `prepend LIST V`: a new list with V at the front.
fn prepend(args: &[Value]) -> Result<Value, FuncError> {
    let [list, v] = exactly::<2>("prepend", args)?;
    let mut out = vec![v.clone()];
    out.extend_from_slice(items(list, "prepend")?);
    Ok(Value::List(out))
}

fn first(args: &[Value]) -> Result<Value, FuncError> {
    let [list] = exactly::<1>("first", args)?;
    Ok(items(list, "find first")?
        .first()
        .cloned()
        .unwrap_or(Value::Null))
}

fn last(args: &[Value]) -> Result<Value, FuncError> {
    let [list] = exactly::<1>("last", args)?;
    Ok(items(list, "find last")?
        .last()
        .cloned()
        .unwrap_or(Value::Null))
}

/// `rest LIST`: all but the first element.
fn rest(args: &[Value]) -> Result<Value, FuncError> {
    let [list] = exactly::<1>("rest", args)?;
    let items = items(list, "find rest")?;
    Ok(Value::List(items.get(1..).unwrap_or_default().to_vec()))
}

/// `initial LIST`: all but the last element.
fn initial(args: &[Value]) -> Result<Value, FuncError> {
    let [list] = exactly::<1>("initial", args)?;
    let items = items(list, "find initial")?;
    Ok(Value::List(items[..items.len().saturating_sub(1)].to_vec()))
}

fn reverse(args: &[Value]) -> Result<Value, FuncError> {
    let [list] = exactly::<1>("reverse", args)?;
    Ok(Value::List(
        items(list, "find reverse")?.iter().rev().cloned().collect(),
    ))
}

/// `uniq LIST`: the first of each set of deeply equal elements.
fn uniq(args: &[Value]) -> Result<Value, FuncError> {
    let [list] = exactly::<1>("uniq", args)?;
    let mut out: Vec<Value> = Vec::new();
    for item in items(list, "find uniq")? {
        if !out.contains(item) {
            out.push(item.clone());
        }
    }
    Ok(Value::List(out))
}

/// `without LIST V...`: the list without elements equal to any V.
fn without(args: &[Value]) -> Result<Value, FuncError> {
    at_least("without", args, 1)?;
    let omit = &args[1..];
    let kept = items(&args[0], "find without")?
        .iter()
        .filter(|item| !omit.contains(item))
        .cloned()
        .collect();
    Ok(Value::List(kept))
}

/// `has NEEDLE LIST`: whether the list holds the needle; false for nil.
fn has(args: &[Value]) -> Result<Value, FuncError> {
    let [needle, haystack] = exactly::<2>("has", args)?;
    if matches!(haystack, Value::Null) {
        return Ok(Value::Bool(false));
    }
    Ok(Value::Bool(items(haystack, "find has")?.contains(needle)))
}

/// `compact LIST`: the list without empty elements.
fn compact(args: &[Value]) -> Result<Value, FuncError> {
    let [list] = exactly::<1>("compact", args)?;
    let kept = items(list, "compact")?
        .iter()
        .filter(|v| v.is_truthy())
        .cloned()
        .collect();
    Ok(Value::List(kept))
}

/// `concat LIST...`: the lists joined.
fn concat(args: &[Value]) -> Result<Value, FuncError> {
    let mut out = Vec::new();
    for arg in args {
        match arg {
            Value::List(items) => out.extend_from_slice(items),
            Value::Null => return Err(nil_pointer()),
            other => {
                return Err(FuncError::call(format!(
                    "Cannot concat type {} as list",
                    kind(other)
                )));
            }
        }
    }
    Ok(Value::List(out))
}

/// `chunk SIZE LIST`: the list cut into lists of SIZE (the last shorter).
fn chunk(args: &[Value]) -> Result<Value, FuncError> {
    let [size, list] = exactly::<2>("chunk", args)?;
    let size = integer(size)?;
    let items = items(list, "chunk")?;
    if size <= 0 {
        return Err(FuncError::call("runtime error: integer divide by zero"));
    }
    Ok(Value::List(
        items
            .chunks(size as usize)
            .map(|c| Value::List(c.to_vec()))
            .collect(),
    ))
}

/// Sprig's `slice LIST [START [END]]`, with indexes converted like `int`.
fn must_slice(args: &[Value]) -> Result<Value, FuncError> {
    at_least("mustSlice", args, 1)?;
    let items = items(&args[0], "slice")?;
    if items.is_empty() {
        return Ok(Value::Null);
    }
    let start = args.get(1).map_or(0, super::convert::to_int64);
    let end = args
        .get(2)
        .map_or(items.len() as i64, super::convert::to_int64);
    if start < 0 || end < start || end > items.len() as i64 {
        return Err(FuncError::call(format!(
            "reflect: slice index out of range [{start}:{end}]"
        )));
    }
    Ok(Value::List(items[start as usize..end as usize].to_vec()))
}

/// `sortAlpha LIST`: the elements as strings, sorted; a non-list becomes a
/// one-element list.
fn sort_alpha(args: &[Value]) -> Result<Value, FuncError> {
    let [list] = exactly::<1>("sortAlpha", args)?;
    let mut out = match list {
        Value::List(_) => strslice(list),
        other => vec![strval(other)],
    };
    out.sort();
    Ok(string_list(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(items: &[Value]) -> Value {
        Value::List(items.to_vec())
    }

    fn i(n: i64) -> Value {
        Value::Int(n)
    }

    fn err(f: Function, args: &[Value]) -> String {
        f(args).err().map(|e| e.message).unwrap_or_default()
    }

    #[test]
    fn building_lists() {
        assert_eq!(list(&[i(1), "a".into()]), Ok(l(&[i(1), "a".into()])));
        assert_eq!(append(&[l(&[i(1)]), i(2)]), Ok(l(&[i(1), i(2)])));
        assert_eq!(prepend(&[l(&[i(1)]), i(0)]), Ok(l(&[i(0), i(1)])));
        assert_eq!(
            concat(&[l(&[i(1)]), l(&[i(2), i(3)])]),
            Ok(l(&[i(1), i(2), i(3)]))
        );
        assert_eq!(
            err(append, &["x".into(), i(1)]),
            "Cannot push on type string"
        );
        assert_eq!(
            err(concat, &[l(&[]), i(1)]),
            "Cannot concat type int64 as list"
        );
    }

    #[test]
    fn taking_apart() {
        let xs = l(&[i(1), i(2), i(3)]);
        assert_eq!(first(std::slice::from_ref(&xs)), Ok(i(1)));
        assert_eq!(last(std::slice::from_ref(&xs)), Ok(i(3)));
        assert_eq!(rest(std::slice::from_ref(&xs)), Ok(l(&[i(2), i(3)])));
        assert_eq!(initial(std::slice::from_ref(&xs)), Ok(l(&[i(1), i(2)])));
        assert_eq!(
            reverse(std::slice::from_ref(&xs)),
            Ok(l(&[i(3), i(2), i(1)]))
        );
        assert_eq!(first(&[l(&[])]), Ok(Value::Null));
        assert_eq!(rest(&[l(&[])]), Ok(l(&[])));
        assert_eq!(
            err(first, &["abc".into()]),
            "Cannot find first on type string"
        );
        assert!(first(&[Value::Null]).is_err());
        assert_eq!(must_slice(&[xs.clone(), i(1)]), Ok(l(&[i(2), i(3)])));
        assert_eq!(must_slice(&[xs, i(1), i(2)]), Ok(l(&[i(2)])));
    }

    #[test]
    fn filtering() {
        let xs = l(&[
            i(1),
            "a".into(),
            i(1),
            Value::Float(1.0),
            "".into(),
            Value::Null,
        ]);
        assert_eq!(
            uniq(std::slice::from_ref(&xs)),
            Ok(l(&[
                i(1),
                "a".into(),
                Value::Float(1.0),
                "".into(),
                Value::Null
            ]))
        );
        assert_eq!(
            compact(std::slice::from_ref(&xs)),
            Ok(l(&[i(1), "a".into(), i(1), Value::Float(1.0)]))
        );
        assert_eq!(
            without(&[xs.clone(), i(1), Value::Null]),
            Ok(l(&["a".into(), Value::Float(1.0), "".into()]))
        );
        assert_eq!(has(&["a".into(), xs.clone()]), Ok(Value::Bool(true)));
        assert_eq!(has(&[i(5), Value::Null]), Ok(Value::Bool(false)));
        assert_eq!(
            chunk(&[i(2), l(&[i(1), i(2), i(3)])]),
            Ok(l(&[l(&[i(1), i(2)]), l(&[i(3)])]))
        );
    }

    #[test]
    fn sort_alpha_sorts_strings() {
        let xs = l(&["b".into(), i(10), "a".into(), Value::Null, i(9)]);
        assert_eq!(
            sort_alpha(&[xs]),
            Ok(l(&["10".into(), "9".into(), "a".into(), "b".into()]))
        );
        assert_eq!(sort_alpha(&["x".into()]), Ok(l(&["x".into()])));
    }
}
