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
//! A map may come to contain itself, directly or through others, as a Go
//! map can (helm-toolkit's per-node overrides build one): see "Maps that
//! contain themselves" in docs/src/reference/template-functions.md. Every walk that
//! follows nested maps keeps the maps on its path, so that a walk Go
//! would never finish ends here with [`Cycle`] instead of recursing
//! forever:
//!
//! - reading through the cycle (fields, `index`, `dig`, `get`, `keys`,
//!   `pick`, `omit`, `include` arguments) never walks it and works;
//! - converting to a plain value ([`RValue::try_to_value`]) for output or
//!   for a library function fails with [`Cycle`]; [`RValue::to_value`]
//!   cuts the cycle to nil and records it, and the executor fails the
//!   template at its end ([`take_cycle_seen`]), so a cut value never
//!   passes for a result;
//! - `deepCopy` and mergo's walk over two cycles fail, `reflect.DeepEqual`
//!   ([`deep_eq`]) stops where Go's does.
//!
//! A cycle of `Rc`s is never freed by dropping: every store that closes
//! one records the map it stored into, and the [`CycleScope`] of the
//! render empties those maps when the render ends, which breaks every
//! cycle the render made (each cycle passes through the map whose store
//! closed it).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashSet};
use std::rc::{Rc, Weak};

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
    /// the executor reports the deadline at its next check. A map that
    /// contains itself becomes nil where it comes back, and the cycle is
    /// recorded for the executor to report (`take_cycle_seen`).
    pub fn to_value(&self) -> Value {
        let mut path = Vec::new();
        match self.convert(&mut path, Cut::Record) {
            Ok(v) => v,
            Err(Cycle) => Value::Null,
        }
    }

    /// The plain value, or `Cycle` when a map on the way contains itself
    /// (a value Go would never finish printing or marshalling).
    ///
    /// # Errors
    /// `Cycle`, as said.
    pub fn try_to_value(&self) -> Result<Value, Cycle> {
        self.convert(&mut Vec::new(), Cut::Fail)
    }

    /// The plain value with every way back into a map that contains
    /// itself replaced by an empty map: enough for the functions that look
    /// only at a value's top (`keys`, `kindOf`, `typeOf`, `empty`...).
    pub fn to_value_cut(&self) -> Value {
        self.convert(&mut Vec::new(), Cut::Empty)
            .unwrap_or(Value::Null)
    }

    fn convert(&self, path: &mut Vec<*const RefCell<RMap>>, cut: Cut) -> Result<Value, Cycle> {
        if matches!(self, RValue::List(_) | RValue::Map(_)) && past_deadline() {
            return Ok(Value::Null);
        }
        Ok(match self {
            RValue::Null => Value::Null,
            RValue::Bool(b) => Value::Bool(*b),
            RValue::Int(i) => Value::Int(*i),
            RValue::Float(x) => Value::Float(*x),
            RValue::String(s) => Value::String(s.clone()),
            RValue::List(items) => Value::List(
                items
                    .iter()
                    .map(|v| v.convert(path, cut))
                    .collect::<Result<_, _>>()?,
            ),
            RValue::Map(m) => {
                let ptr = Rc::as_ptr(m);
                if path.contains(&ptr) {
                    return match cut {
                        Cut::Fail => Err(Cycle),
                        Cut::Record => {
                            CYCLE_SEEN.with(|c| c.set(true));
                            Ok(Value::Null)
                        }
                        Cut::Empty => Ok(Value::Map(Map::new())),
                    };
                }
                path.push(ptr);
                let out = m
                    .borrow()
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), v.convert(path, cut)?)))
                    .collect::<Result<Map, Cycle>>();
                path.pop();
                Value::Map(out?)
            }
        })
    }

    /// The plain value, as [`RValue::to_value`], moving what no other path
    /// holds (a string, a list or map referenced only here) instead of
    /// copying it.
    pub fn into_value(self) -> Value {
        let mut cut = false;
        let v = self.move_out(&mut cut);
        if cut {
            CYCLE_SEEN.with(|c| c.set(true));
        }
        v
    }

    /// The plain value, as [`RValue::try_to_value`], moving what no other
    /// path holds.
    ///
    /// # Errors
    /// `Cycle` when a map in it contains itself.
    pub fn try_into_value(self) -> Result<Value, Cycle> {
        let mut cut = false;
        let v = self.move_out(&mut cut);
        if cut { Err(Cycle) } else { Ok(v) }
    }

    /// Moves out what is held only here and converts the rest; sets `cut`
    /// when a map that contains itself was cut to nil.
    fn move_out(self, cut: &mut bool) -> Value {
        let shared = |v: RValue, cut: &mut bool| {
            v.try_to_value().unwrap_or_else(|Cycle| {
                *cut = true;
                Value::Null
            })
        };
        match self {
            RValue::String(s) => Value::String(s),
            RValue::List(items) => match Rc::try_unwrap(items) {
                Ok(items) if !past_deadline() => {
                    Value::List(items.into_iter().map(|v| v.move_out(cut)).collect())
                }
                Ok(_) => Value::Null,
                Err(items) => shared(RValue::List(items), cut),
            },
            RValue::Map(m) => match Rc::try_unwrap(m) {
                Ok(cell) if !past_deadline() => Value::Map(
                    cell.into_inner()
                        .into_iter()
                        .map(|(k, v)| (k, v.move_out(cut)))
                        .collect::<Map>(),
                ),
                Ok(_) => Value::Null,
                Err(m) => shared(RValue::Map(m), cut),
            },
            scalar => scalar.to_value(),
        }
    }

    /// A copy that shares no map with this one (Sprig's `deepCopy`).
    ///
    /// # Errors
    /// `Cycle` when a map in it contains itself: Go's copystructure
    /// recurses until the stack overflows.
    pub fn deep_copy(&self) -> Result<Self, Cycle> {
        fn walk(v: &RValue, path: &mut Vec<*const RefCell<RMap>>) -> Result<RValue, Cycle> {
            if matches!(v, RValue::List(_) | RValue::Map(_)) && past_deadline() {
                return Ok(RValue::Null);
            }
            Ok(match v {
                RValue::List(items) => RValue::List(Rc::new(
                    items
                        .iter()
                        .map(|x| walk(x, path))
                        .collect::<Result<_, _>>()?,
                )),
                RValue::Map(m) => {
                    let ptr = Rc::as_ptr(m);
                    if path.contains(&ptr) {
                        return Err(Cycle);
                    }
                    path.push(ptr);
                    let out = m
                        .borrow()
                        .iter()
                        .map(|(k, x)| Ok((k.clone(), walk(x, path)?)))
                        .collect::<Result<RMap, Cycle>>();
                    path.pop();
                    RValue::new_map(out?)
                }
                other => other.clone(),
            })
        }
        walk(self, &mut Vec::new())
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
/// integer never equals a float. Like Go's, the walk takes two maps it
/// meets again while comparing them as equal, so maps that contain
/// themselves compare without end. Like copying, the walk ends (false)
/// once the render's deadline has passed.
pub fn deep_eq(a: &RValue, b: &RValue) -> bool {
    deep_eq_seen(a, b, &mut HashSet::new())
}

type MapPair = (*const RefCell<RMap>, *const RefCell<RMap>);

fn deep_eq_seen(a: &RValue, b: &RValue, seen: &mut HashSet<MapPair>) -> bool {
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
                    && x.iter()
                        .zip(y.iter())
                        .all(|(p, q)| deep_eq_seen(p, q, seen)))
        }
        (RValue::Map(x), RValue::Map(y)) => {
            if Rc::ptr_eq(x, y) || !seen.insert((Rc::as_ptr(x), Rc::as_ptr(y))) {
                return true;
            }
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len()
                && !past_deadline()
                && x.iter()
                    .zip(y.iter())
                    .all(|((kx, vx), (ky, vy))| kx == ky && deep_eq_seen(vx, vy, seen))
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

/// How a conversion treats a way back into a map on its path.
#[derive(Debug, Clone, Copy)]
enum Cut {
    /// Fail with [`Cycle`].
    Fail,
    /// Nil, and record the cycle ([`take_cycle_seen`]).
    Record,
    /// An empty map.
    Empty,
}

/// A map that contains itself was met by a walk that would never end in
/// Go (printing, marshalling, copying).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cycle;

/// The message for a walk over a map that contains itself: `what` is the
/// walk (`printing`, `deepCopy`...).
pub fn cycle_message(what: &str) -> String {
    format!(
        "{what} a map that contains itself would never end (Helm overflows its stack); \
         capstan stops here"
    )
}

thread_local! {
    /// The maps that closed a cycle (see the module doc) since the
    /// thread's first [`CycleScope`] began.
    static CYCLIC: RefCell<Vec<Weak<RefCell<RMap>>>> = const { RefCell::new(Vec::new()) };
    /// Whether [`RValue::to_value`] cut a cycle since [`take_cycle_seen`]
    /// last looked.
    static CYCLE_SEEN: Cell<bool> = const { Cell::new(false) };
}

/// Whether a conversion cut a map that contains itself (to nil) since the
/// last call; clears the record.
pub fn take_cycle_seen() -> bool {
    CYCLE_SEEN.with(|c| c.replace(false))
}

/// The cycles made while it lives: dropping it empties every map whose
/// store closed a cycle since it began, so that no `Rc` cycle outlives
/// the render (see the module doc). Scopes nest: each breaks only the
/// cycles made inside it.
pub struct CycleScope {
    mark: usize,
    seen: bool,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl CycleScope {
    /// Begins a scope on this thread.
    pub fn begin() -> CycleScope {
        CycleScope {
            mark: CYCLIC.with(|c| c.borrow().len()),
            seen: take_cycle_seen(),
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for CycleScope {
    fn drop(&mut self) {
        loop {
            // One at a time: emptying a map drops values, which may end
            // other maps, but never runs a template.
            let next = CYCLIC.with(|c| {
                let mut c = c.borrow_mut();
                if c.len() > self.mark { c.pop() } else { None }
            });
            let Some(weak) = next else { break };
            if let Some(map) = weak.upgrade() {
                let entries = match map.try_borrow_mut() {
                    Ok(mut m) => std::mem::take(&mut *m),
                    Err(_) => continue,
                };
                drop(entries);
            }
        }
        CYCLE_SEEN.with(|c| c.set(self.seen));
    }
}

/// How many maps closed a cycle in the scopes still open on this thread
/// (for tests).
#[cfg(test)]
pub fn cycles_open() -> usize {
    CYCLIC.with(|c| c.borrow().iter().filter(|w| w.strong_count() > 0).count())
}

/// Stores `value` under `key` in `map`, as Go's map assignment does: when
/// `value` reaches `map` the map then contains itself, and it is recorded
/// so that the render's [`CycleScope`] frees it.
pub fn store(map: &MapRef, key: String, value: RValue) {
    if matches!(value, RValue::Map(_) | RValue::List(_)) && value.reaches(map) {
        CYCLIC.with(|c| c.borrow_mut().push(Rc::downgrade(map)));
    }
    map.borrow_mut().insert(key, value);
}

/// Prints a value as an action does (see
/// [`print_value`](crate::render::template::print_value)).
///
/// # Errors
/// [`Cycle`] for a map that contains itself, which Go's `fmt` would
/// print without end.
pub fn print(out: &mut String, v: &RValue) -> Result<(), Cycle> {
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
            let _ = write!(out, "{}", other.try_to_value()?);
        }
    }
    Ok(())
}

/// mergo's `Merge` of `src` into `dst` (`WithOverride` when `overwrite`),
/// changing `dst` in place: nested maps merge; without overwrite a key of
/// `dst` keeps its value unless that value is empty (nil, false, 0, "" or
/// empty), so `merge` replaces a `false` in `dst`; with overwrite every
/// non-nil `src` value wins, and a nil one is copied too. A map of `src`
/// that `dst` lacks is stored as is, so both then share it, as in Go.
///
/// # Errors
/// When the walk comes back to a pair of maps it is already merging
/// (both hold a map that contains itself at the same keys): mergo
/// recurses there until Go's stack overflows.
pub fn mergo(dst: &MapRef, src: &MapRef, overwrite: bool) -> Result<(), String> {
    mergo_walk(dst, src, overwrite, &mut Vec::new())
}

fn mergo_walk(
    dst: &MapRef,
    src: &MapRef,
    overwrite: bool,
    path: &mut Vec<MapPair>,
) -> Result<(), String> {
    let pair = (Rc::as_ptr(dst), Rc::as_ptr(src));
    if path.contains(&pair) {
        return Err(cycle_message("merging"));
    }
    if past_deadline() {
        return Ok(());
    }
    path.push(pair);
    let result = mergo_entries(dst, src, overwrite, path);
    path.pop();
    result
}

fn mergo_entries(
    dst: &MapRef,
    src: &MapRef,
    overwrite: bool,
    path: &mut Vec<MapPair>,
) -> Result<(), String> {
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
                    mergo_walk(dst_map, src_map, overwrite, path)?;
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
                store(dst, key.clone(), replaced);
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
            store(dst, key, src_value);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cyclic() -> MapRef {
        let m: MapRef = Rc::new(RefCell::new(RMap::new()));
        m.borrow_mut()
            .insert("k".into(), RValue::String("v".into()));
        store(&m, "self".into(), RValue::Map(m.clone()));
        m
    }

    #[test]
    fn a_cycle_made_in_a_render_is_freed_when_the_render_ends() {
        let weak = crate::render::template::with_big_stack(|| {
            let m = cyclic();
            let w = Rc::downgrade(&m);
            drop(m);
            assert!(w.upgrade().is_some(), "a cycle of Rcs keeps itself alive");
            w
        })
        .unwrap();
        assert!(weak.upgrade().is_none(), "the render's scope freed it");
        assert_eq!(cycles_open(), 0);
    }

    #[test]
    fn a_cycle_made_inside_a_nested_scope_is_freed_by_it() {
        let _outer = CycleScope::begin();
        let outer_cycle = cyclic();
        let inner = {
            let _inner = CycleScope::begin();
            Rc::downgrade(&cyclic())
        };
        assert!(inner.upgrade().is_none());
        assert_eq!(
            outer_cycle.borrow().len(),
            2,
            "the outer scope's cycle is kept"
        );
    }

    #[test]
    fn walks_over_a_cycle_end() {
        let _scope = CycleScope::begin();
        let m = RValue::Map(cyclic());
        assert_eq!(m.try_to_value(), Err(Cycle));
        assert_eq!(m.clone().try_into_value(), Err(Cycle));
        assert!(!take_cycle_seen());
        let cut = m.to_value();
        assert!(take_cycle_seen(), "to_value records the cut");
        assert_eq!(cut.as_map().and_then(|c| c.get("self")), Some(&Value::Null));
        let top = m.to_value_cut();
        let top = top.as_map().unwrap();
        assert_eq!(top.len(), 2);
        assert_eq!(top.get("self"), Some(&Value::Map(Map::new())));
        assert!(m.deep_copy().is_err());
        let other = RValue::Map(cyclic());
        assert!(
            deep_eq(&m, &other),
            "Go's DeepEqual takes pairs met again as equal"
        );
        let RValue::Map(a) = &m else { unreachable!() };
        let RValue::Map(b) = &other else {
            unreachable!()
        };
        assert!(mergo(a, b, false).is_err(), "mergo over two cycles");
        assert!(mergo(a, a, true).is_err(), "mergo over itself");
    }

    #[test]
    fn a_shared_map_is_no_cycle() {
        let _scope = CycleScope::begin();
        let shared = RValue::new_map(RMap::from([("x".into(), RValue::Int(1))]));
        let twice = RValue::new_map(RMap::from([
            ("a".into(), shared.clone()),
            (
                "b".into(),
                RValue::List(Rc::new(vec![shared.clone(), shared])),
            ),
        ]));
        assert!(twice.try_to_value().is_ok());
        assert!(twice.deep_copy().is_ok());
        assert_eq!(cycles_open(), 0);
    }
}
