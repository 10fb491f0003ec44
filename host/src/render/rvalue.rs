//! The executor's own value: a [`Value`] whose maps are references, as
//! Go's `map[string]interface{}` is.
//!
//! A chart's context is converted once when it enters the engine
//! (`render::template`); a map reached through two paths (`$m :=
//! .Values.m`, `dict "x" $a`, a nested map that `merge` or `pick` shared)
//! is then one map, and Sprig's `set`, `unset` and the merges change it in
//! place for every path. Lists are shared too but never change (Sprig's
//! list functions return new lists). Values go back to [`Value`] for
//! output and for the library functions that take plain values.
//!
//! Lives below both the engine and the function library (`render::funcs`)
//! because both run mergo's walk ([`mergo`]): the engine on its shared
//! maps, the library's `merge` on values it converts for the call.
//!
//! A map can never come to contain itself: the functions that store into
//! an existing map refuse a value that reaches it ([`RValue::reaches`]), so
//! converting back and dropping always end.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;

use crate::render::limits;
use crate::values::{Map, Value};

/// A map shared by every path that reaches it.
pub type MapRef = Rc<RefCell<RMap>>;
/// The entries of a map, in sorted key order.
pub type RMap = BTreeMap<String, RValue>;

/// One value during execution (see the module doc).
#[derive(Debug, Clone, Default)]
pub enum RValue {
    /// Go's `nil`.
    #[default]
    Null,
    /// A boolean.
    Bool(bool),
    /// A Go `int64`.
    Int(i64),
    /// A Go `float64`.
    Float(f64),
    /// A string.
    String(String),
    /// A list; its elements may be shared maps.
    List(Rc<Vec<RValue>>),
    /// A map, shared by reference.
    Map(MapRef),
}

impl From<Value> for RValue {
    fn from(v: Value) -> Self {
        match v {
            Value::Null => RValue::Null,
            Value::Bool(b) => RValue::Bool(b),
            Value::Int(i) => RValue::Int(i),
            Value::Float(x) => RValue::Float(x),
            Value::String(s) => RValue::String(s),
            Value::List(items) => {
                RValue::List(Rc::new(items.into_iter().map(Self::from).collect()))
            }
            Value::Map(m) => RValue::Map(map_ref(m)),
        }
    }
}

/// A plain map as a new shared map.
pub fn map_ref(m: Map) -> MapRef {
    Rc::new(RefCell::new(
        m.into_iter().map(|(k, v)| (k, RValue::from(v))).collect(),
    ))
}

impl RValue {
    /// A new map holding `entries`.
    pub fn new_map(entries: RMap) -> Self {
        RValue::Map(Rc::new(RefCell::new(entries)))
    }

    /// The plain value, copied all the way down.
    ///
    /// A value reached many times over (maps nested in maps each holding
    /// the same map twice) copies to a far larger plain value; once the
    /// render's deadline has passed, what is left to copy becomes nil, and
    /// the executor reports the deadline at its next check.
    pub fn to_value(&self) -> Value {
        if matches!(self, RValue::List(_) | RValue::Map(_)) && past_deadline() {
            return Value::Null;
        }
        match self {
            RValue::Null => Value::Null,
            RValue::Bool(b) => Value::Bool(*b),
            RValue::Int(i) => Value::Int(*i),
            RValue::Float(x) => Value::Float(*x),
            RValue::String(s) => Value::String(s.clone()),
            RValue::List(items) => Value::List(items.iter().map(Self::to_value).collect()),
            RValue::Map(m) => Value::Map(
                m.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect::<Map>(),
            ),
        }
    }

    /// The plain value, as [`RValue::to_value`], moving what no other path
    /// holds (a string, a list or map referenced only here) instead of
    /// copying it.
    pub fn into_value(self) -> Value {
        match self {
            RValue::String(s) => Value::String(s),
            RValue::List(items) => match Rc::try_unwrap(items) {
                Ok(items) if !past_deadline() => {
                    Value::List(items.into_iter().map(Self::into_value).collect())
                }
                Ok(_) => Value::Null,
                Err(shared) => RValue::List(shared).to_value(),
            },
            RValue::Map(m) => match Rc::try_unwrap(m) {
                Ok(cell) if !past_deadline() => Value::Map(
                    cell.into_inner()
                        .into_iter()
                        .map(|(k, v)| (k, v.into_value()))
                        .collect::<Map>(),
                ),
                Ok(_) => Value::Null,
                Err(shared) => RValue::Map(shared).to_value(),
            },
            scalar => scalar.to_value(),
        }
    }

    /// A copy that shares no map with this one (Sprig's `deepCopy`).
    pub fn deep_copy(&self) -> Self {
        if matches!(self, RValue::List(_) | RValue::Map(_)) && past_deadline() {
            return RValue::Null;
        }
        match self {
            RValue::List(items) => {
                RValue::List(Rc::new(items.iter().map(Self::deep_copy).collect()))
            }
            RValue::Map(m) => RValue::new_map(
                m.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.deep_copy()))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Go template truthiness, as [`Value::is_truthy`].
    pub fn is_truthy(&self) -> bool {
        match self {
            RValue::Null => false,
            RValue::Bool(b) => *b,
            RValue::Int(i) => *i != 0,
            RValue::Float(x) => *x != 0.0,
            RValue::String(s) => !s.is_empty(),
            RValue::List(l) => !l.is_empty(),
            RValue::Map(m) => {
                let m = m.borrow();
                !m.is_empty() && !m.contains_key(crate::values::EMPTY_OBJECT_KEY)
            }
        }
    }

    /// Whether this is a map that stands for a built-in object (`.Files`,
    /// a semver version): such maps hold a reserved key, which sorts first.
    pub fn is_object(&self) -> bool {
        match self {
            RValue::Map(m) => is_object_map(&m.borrow()),
            _ => false,
        }
    }

    /// The map inside, if this is a plain map (not a built-in object).
    pub fn plain_map(&self) -> Option<&MapRef> {
        match self {
            RValue::Map(m) if !is_object_map(&m.borrow()) => Some(m),
            _ => None,
        }
    }

    /// Whether `target` can be reached from this value (is it, or is inside it).
    pub fn reaches(&self, target: &MapRef) -> bool {
        fn walk(v: &RValue, target: &MapRef, seen: &mut HashSet<*const RefCell<RMap>>) -> bool {
            match v {
                RValue::Map(m) => {
                    if Rc::ptr_eq(m, target) {
                        return true;
                    }
                    if !seen.insert(Rc::as_ptr(m)) {
                        return false;
                    }
                    let entries: Vec<RValue> = m.borrow().values().cloned().collect();
                    entries.iter().any(|e| walk(e, target, seen))
                }
                RValue::List(items) => items.iter().any(|e| walk(e, target, seen)),
                _ => false,
            }
        }
        walk(self, target, &mut HashSet::new())
    }
}

/// Go's `reflect.DeepEqual` on two values, as Sprig's `uniq` and
/// `without` compare elements: the same map or list is equal to itself,
/// otherwise lists and maps are equal when their elements are; an
/// integer never equals a float. Like copying, the walk ends (false) once
/// the render's deadline has passed.
pub fn deep_eq(a: &RValue, b: &RValue) -> bool {
    match (a, b) {
        (RValue::Null, RValue::Null) => true,
        (RValue::Bool(x), RValue::Bool(y)) => x == y,
        (RValue::Int(x), RValue::Int(y)) => x == y,
        (RValue::Float(x), RValue::Float(y)) => x == y,
        (RValue::String(x), RValue::String(y)) => x == y,
        (RValue::List(x), RValue::List(y)) => {
            Rc::ptr_eq(x, y)
                || (x.len() == y.len()
                    && !past_deadline()
                    && x.iter().zip(y.iter()).all(|(p, q)| deep_eq(p, q)))
        }
        (RValue::Map(x), RValue::Map(y)) => {
            if Rc::ptr_eq(x, y) {
                return true;
            }
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len()
                && !past_deadline()
                && x.iter()
                    .zip(y.iter())
                    .all(|((kx, vx), (ky, vy))| kx == ky && deep_eq(vx, vy))
        }
        _ => false,
    }
}

/// One unit of copying: true once the render's deadline has passed (or any
/// render limit has tripped), from then on at every call, so that what is
/// left of a copy is cut at once.
fn past_deadline() -> bool {
    limits::tick().is_err() || limits::tripped().is_some()
}

/// Whether a map stands for a built-in object (see [`RValue::is_object`]).
pub fn is_object_map(m: &RMap) -> bool {
    m.keys().next().is_some_and(|k| k.starts_with('\u{0}'))
}

/// Stores `value` under `key` in `map`.
///
/// # Errors
/// When `value` reaches `map`: Go would build a map that contains itself,
/// which no output could print.
pub fn store(map: &MapRef, key: String, value: RValue) -> Result<(), String> {
    if value.reaches(map) {
        return Err(format!("storing {key:?} would make a map contain itself"));
    }
    map.borrow_mut().insert(key, value);
    Ok(())
}

/// Prints a value as an action does (see
/// [`print_value`](crate::render::template::print_value)).
pub fn print(out: &mut String, v: &RValue) {
    use std::fmt::Write;
    match v {
        RValue::Null => out.push_str("<no value>"),
        RValue::String(s) => out.push_str(s),
        RValue::Bool(b) => {
            let _ = write!(out, "{}", Value::Bool(*b));
        }
        RValue::Int(i) => {
            let _ = write!(out, "{}", Value::Int(*i));
        }
        RValue::Float(x) => {
            let _ = write!(out, "{}", Value::Float(*x));
        }
        other => {
            let _ = write!(out, "{}", other.to_value());
        }
    }
}

/// mergo's `Merge` of `src` into `dst` (`WithOverride` when `overwrite`),
/// changing `dst` in place: nested maps merge; without overwrite a key of
/// `dst` keeps its value unless that value is empty (nil, false, 0, "" or
/// empty), so `merge` replaces a `false` in `dst`; with overwrite every
/// non-nil `src` value wins, and a nil one is copied too. A map of `src`
/// that `dst` lacks is stored as is, so both then share it, as in Go.
///
/// # Errors
/// When a stored value would make a map contain itself.
pub fn mergo(dst: &MapRef, src: &MapRef, overwrite: bool) -> Result<(), String> {
    if Rc::ptr_eq(dst, src) {
        return Ok(());
    }
    let entries: Vec<(String, RValue)> = src
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (key, src_value) in entries {
        if matches!(src_value, RValue::Null) {
            if overwrite {
                dst.borrow_mut().insert(key, RValue::Null);
            }
            continue;
        }
        let dst_before = dst.borrow().get(&key).cloned();
        match &src_value {
            RValue::Map(src_map) => {
                if let Some(RValue::Map(dst_map)) = &dst_before {
                    mergo(dst_map, src_map, overwrite)?;
                }
            }
            RValue::List(_) => {
                let replaced = if overwrite || dst.borrow().is_empty() {
                    src_value.clone()
                } else {
                    match &dst_before {
                        None | Some(RValue::Null) => RValue::List(Rc::new(Vec::new())),
                        Some(existing) => existing.clone(),
                    }
                };
                store(dst, key.clone(), replaced)?;
            }
            _ => {}
        }
        let dst_present_and_set = dst_before.as_ref().is_some_and(RValue::is_truthy);
        if dst_present_and_set {
            if matches!(src_value, RValue::List(_)) {
                continue;
            }
            if matches!(src_value, RValue::Map(_)) && matches!(dst_before, Some(RValue::Map(_))) {
                continue;
            }
        }
        if overwrite || !dst_present_and_set {
            store(dst, key, src_value)?;
        }
    }
    Ok(())
}
