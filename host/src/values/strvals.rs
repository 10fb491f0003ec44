//! Helm's `--set` family (`pkg/strvals`): `a.b=c`, `a=b,c=d`, lists
//! `a[0]=x`, `a[0].b=x`, `a={x,y}`, backslash escapes, and the typed,
//! string, JSON, file and literal variants, with Helm's quirks kept (an
//! empty `a=` is `""`, `a[0]` alone makes an empty list, `{}` is a list
//! holding one empty string).
//!
//! [`merge_value_flags`] applies a whole command line in Helm's fixed
//! order: `-f` files, then `--set-json`, `--set`, `--set-string`,
//! `--set-file`, `--set-literal`, whatever order the flags were given in.

use super::json::json_to_value;
use super::resolve::{IntError, parse_go_int};
use super::{Error, MAX_DEPTH, Map, Value, merge_maps, parse_json, parse_values};

/// The largest list index `--set` accepts (Helm's `MaxIndex`), which also
/// bounds the list an expression can make.
pub const MAX_LIST_INDEX: usize = 65536;

/// The most dotted name levels one key may have (Helm's
/// `MaxNestedNameLevel`).
pub const MAX_NAME_LEVELS: usize = 30;

/// Applies one `--set` expression to `into`: values are typed as Helm
/// types them: `true`/`false` (any case) are booleans, `null` (any case)
/// is a null (which later deletes the key when coalesced), an integer
/// without a leading zero that fits 64 bits is [`Value::Int`] (`0`
/// itself too, `-01` as well since it starts with `-`), and everything
/// else (floats such as `1.5`, `007`, `1e3`) is a string. `a={x,y}` is a
/// list. A later expression overwrites what an earlier one set.
///
/// # Errors
///
/// [`Error::SetSyntax`] with Helm's message (a key with no value, a key
/// ending in `,`, an unterminated list, a bad index, a path through a
/// value that is not a map or list, more than [`MAX_NAME_LEVELS`] dotted
/// levels), [`Error::SetListIndex`] for an index below 0 or above
/// [`MAX_LIST_INDEX`]. On error `into` may hold part of the expression.
pub fn parse_set(expr: &str, into: &mut Map) -> Result<(), Error> {
    SetParser::new(expr, Mode::Typed).parse(into)
}

/// `--set-string`: as [`parse_set`], but every value stays a string.
///
/// # Errors
///
/// As [`parse_set`].
pub fn parse_set_string(expr: &str, into: &mut Map) -> Result<(), Error> {
    SetParser::new(expr, Mode::Strings).parse(into)
}

/// `--set-json`: `key=JSON` pairs (`a={"b":1},c=[1,2]`; an empty value is
/// null; numbers are floats), or, when the expression starts with `{`, a
/// whole JSON object merged in as a `-f` file would be.
///
/// # Errors
///
/// [`Error::SetJson`] for invalid JSON, and those of [`parse_set`].
pub fn parse_set_json(expr: &str, into: &mut Map) -> Result<(), Error> {
    let trimmed = expr.trim();
    if trimmed.starts_with('{') {
        let wrap = |source| Error::SetJson {
            expr: expr.to_string(),
            source: Box::new(source),
        };
        let object = match parse_json(trimmed).map_err(wrap)? {
            Value::Map(m) => m,
            other => {
                return Err(wrap(Error::NotAMap {
                    index: 0,
                    found: other.kind_name(),
                }));
            }
        };
        *into = merge_maps(into, &object);
        return Ok(());
    }
    SetParser::new(expr, Mode::Json).parse(into)
}

/// `--set-literal`: `key=value` where the value is everything after the
/// first `=`, commas and backslashes included, always a string. Keys
/// take no escapes and may contain commas.
///
/// # Errors
///
/// As [`parse_set`].
pub fn parse_set_literal(expr: &str, into: &mut Map) -> Result<(), Error> {
    SetParser::new(expr, Mode::Literal).parse(into)
}

/// `--set-file`: `key=path` pairs whose values are the contents of the
/// files, read through `read` (which gets the path as written and returns
/// the contents, or a message). List syntax reads each path.
///
/// # Errors
///
/// [`Error::SetFile`] when `read` fails, and those of [`parse_set`].
pub fn parse_set_file(
    expr: &str,
    into: &mut Map,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<(), Error> {
    SetParser::new(expr, Mode::File(read)).parse(into)
}

/// Every source of user-supplied values on a `helm template` command line.
#[derive(Debug, Clone, Default)]
pub struct ValueFlags {
    /// Each `-f` file as (name for messages, contents), in order.
    pub files: Vec<(String, String)>,
    /// Each `--set-json` argument, in order.
    pub set_json: Vec<String>,
    /// Each `--set` argument, in order.
    pub set: Vec<String>,
    /// Each `--set-string` argument, in order.
    pub set_string: Vec<String>,
    /// Each `--set-file` argument, in order.
    pub set_file: Vec<String>,
    /// Each `--set-literal` argument, in order.
    pub set_literal: Vec<String>,
}

/// Helm's `values.Options.MergeValues`: the `-f` files merged in order
/// ([`merge_maps`]; each file's documents merged too), then every
/// `--set-json`, `--set`, `--set-string`, `--set-file` and
/// `--set-literal` applied in that fixed order. `read` serves
/// `--set-file`.
///
/// # Errors
///
/// [`Error::ValuesFile`] naming a `-f` file that does not parse, and the
/// errors of the `parse_set*` functions.
pub fn merge_value_flags(
    flags: &ValueFlags,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<Map, Error> {
    merge_value_flags_onto(Map::new(), flags, read)
}

/// [`merge_value_flags`] onto `base` (what Helm's `--reuse-values` starts
/// from) instead of an empty map. This is the one place where values files
/// and `--set` flags are merged: `capstan template`, `override set` and the
/// daemon all come here.
///
/// # Errors
///
/// [`Error::ValuesFile`] naming a `-f` file that does not parse;
/// [`Error::ValueExpression`] naming the flag and expression that does not.
pub fn merge_value_flags_onto(
    mut base: Map,
    flags: &ValueFlags,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<Map, Error> {
    for (name, contents) in &flags.files {
        let values = parse_values(contents).map_err(|source| Error::ValuesFile {
            name: name.clone(),
            source: Box::new(source),
        })?;
        base = merge_maps(&base, &values);
    }
    for expr in &flags.set_json {
        parse_set_json(expr, &mut base).map_err(named("--set-json", expr))?;
    }
    for expr in &flags.set {
        parse_set(expr, &mut base).map_err(named("--set", expr))?;
    }
    for expr in &flags.set_string {
        parse_set_string(expr, &mut base).map_err(named("--set-string", expr))?;
    }
    for expr in &flags.set_file {
        parse_set_file(expr, &mut base, read).map_err(named("--set-file", expr))?;
    }
    for expr in &flags.set_literal {
        parse_set_literal(expr, &mut base).map_err(named("--set-literal", expr))?;
    }
    Ok(base)
}

/// The error of one `--set`-family expression, naming it.
fn named(flag: &'static str, expr: &str) -> impl FnOnce(Error) -> Error {
    let expr = expr.to_string();
    move |source| Error::ValueExpression {
        flag,
        expr,
        source: Box::new(source),
    }
}

/// How values are read.
enum Mode<'r> {
    Typed,
    Strings,
    Json,
    Literal,
    File(&'r dyn Fn(&str) -> Result<String, String>),
}

/// Whether parsing goes on after a step (Go's `nil` versus `io.EOF`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    More,
    End,
}

type Step = Result<Flow, Error>;

/// What `valList` found after `=`.
enum ValList {
    List(Vec<Value>),
    NotAList,
    Eof,
}

struct SetParser<'a, 'r> {
    expr: &'a str,
    chars: Vec<char>,
    pos: usize,
    mode: Mode<'r>,
}

impl<'a, 'r> SetParser<'a, 'r> {
    fn new(expr: &'a str, mode: Mode<'r>) -> Self {
        SetParser {
            expr,
            chars: expr.chars().collect(),
            pos: 0,
            mode,
        }
    }

    fn parse(mut self, into: &mut Map) -> Result<(), Error> {
        while self.key(into, 0, 0)? == Flow::More {}
        Ok(())
    }

    fn literal(&self) -> bool {
        matches!(self.mode, Mode::Literal)
    }

    fn syntax(&self, reason: impl Into<String>) -> Error {
        Error::SetSyntax {
            expr: self.expr.to_string(),
            reason: reason.into(),
        }
    }

    fn index_error(&self, index: i64) -> Error {
        Error::SetListIndex {
            expr: self.expr.to_string(),
            index,
            limit: MAX_LIST_INDEX,
        }
    }

    fn too_deep(&self, depth: usize) -> Result<(), Error> {
        if depth > MAX_DEPTH {
            return Err(self.syntax(format!("nests deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    /// Helm's `runesUntil`: reads up to a stop character, which it
    /// consumes and returns (`None` at the end of input). A backslash
    /// takes the next character literally, except in literal mode.
    fn runes_until(&mut self, stop: &[char]) -> (String, Option<char>) {
        let mut out = String::new();
        while let Some(&c) = self.chars.get(self.pos) {
            self.pos += 1;
            if stop.contains(&c) {
                return (out, Some(c));
            }
            if c == '\\' && !self.literal() {
                match self.chars.get(self.pos) {
                    Some(&next) => {
                        self.pos += 1;
                        out.push(next);
                    }
                    None => return (out, None),
                }
            } else {
                out.push(c);
            }
        }
        (out, None)
    }

    /// Helm's `key`: one `name...=value` step into `data`.
    fn key(&mut self, data: &mut Map, levels: usize, depth: usize) -> Step {
        self.too_deep(depth)?;
        let stop: &[char] = if self.literal() {
            &['=', '[', '.']
        } else {
            &['=', '[', ',', '.']
        };
        let (key, last) = self.runes_until(stop);
        match last {
            None if key.is_empty() => Ok(Flow::End),
            None => Err(self.syntax(format!("key {key:?} has no value"))),
            Some('[') => {
                let Some(index) = self.key_index()? else {
                    return Ok(Flow::End);
                };
                let mut list = match data.get(&key) {
                    None => Vec::new(),
                    Some(Value::List(items)) => items.clone(),
                    Some(other) => return Err(self.conversion_error(other, "[]interface {}")),
                };
                let flow = self.list_item(&mut list, index, levels, depth + 1);
                set(data, key, Value::List(list));
                flow
            }
            Some('=') => self.assign(data, key),
            Some(',') => {
                set(data, key.clone(), Value::String(String::new()));
                Err(self.syntax(format!("key {key:?} has no value (cannot end with ,)")))
            }
            Some(_) => {
                let levels = levels + 1;
                if levels > MAX_NAME_LEVELS {
                    return Err(self.syntax(format!(
                        "value name nested level is greater than maximum supported nested level of {MAX_NAME_LEVELS}"
                    )));
                }
                let mut inner = match data.get(&key) {
                    None => Map::new(),
                    Some(Value::Map(m)) => m.clone(),
                    Some(other) => {
                        return Err(self.conversion_error(other, "map[string]interface {}"));
                    }
                };
                let flow = self.key(&mut inner, levels, depth + 1);
                if matches!(flow, Ok(Flow::More)) && inner.is_empty() {
                    return Err(self.syntax(format!("key map {key:?} has no value")));
                }
                if !inner.is_empty() {
                    set(data, key, Value::Map(inner));
                }
                flow
            }
        }
    }

    /// The value after `key=`.
    fn assign(&mut self, data: &mut Map, key: String) -> Step {
        match self.mode {
            Mode::Json => {
                let value = self.json_value()?;
                set(data, key, value);
                return Ok(Flow::More);
            }
            Mode::Literal => {
                let (value, _) = self.runes_until(&[]);
                set(data, key, Value::String(value));
                return Ok(Flow::More);
            }
            _ => {}
        }
        match self.val_list()? {
            ValList::List(items) => {
                set(data, key, Value::List(items));
                Ok(Flow::More)
            }
            ValList::Eof => {
                set(data, key, Value::String(String::new()));
                Ok(Flow::End)
            }
            ValList::NotAList => {
                let (raw, _) = self.runes_until(&[',']);
                let value = self.read(&raw)?;
                set(data, key, value);
                Ok(Flow::More)
            }
        }
    }

    /// Helm's `keyIndex`: the number before `]`; `None` at the end of
    /// input (which Helm treats as a quiet end).
    fn key_index(&mut self) -> Result<Option<i64>, Error> {
        let (digits, last) = self.runes_until(&[']']);
        if last.is_none() {
            return Ok(None);
        }
        match parse_go_int(&digits, 10) {
            Ok(i) => Ok(Some(i)),
            Err(IntError::Syntax) => Err(self.syntax(format!(
                "error parsing index: strconv.Atoi: parsing {digits:?}: invalid syntax"
            ))),
            Err(IntError::Range) => Err(self.syntax(format!(
                "error parsing index: strconv.Atoi: parsing {digits:?}: value out of range"
            ))),
        }
    }

    /// Helm's `listItem`: what follows `name[i]`.
    fn list_item(
        &mut self,
        list: &mut Vec<Value>,
        index: i64,
        levels: usize,
        depth: usize,
    ) -> Step {
        self.too_deep(depth)?;
        if index < 0 {
            return Err(self.index_error(index));
        }
        let (rest, last) = self.runes_until(&['[', '.', '=']);
        if !rest.is_empty() {
            return Err(self.syntax(format!("unexpected data at end of array index: {rest:?}")));
        }
        match last {
            None => Ok(Flow::End),
            Some('=') => {
                let value = self.list_value()?;
                self.set_index(list, index, value)?;
                Ok(Flow::More)
            }
            Some('[') => {
                let Some(next) = self.key_index()? else {
                    return Ok(Flow::End);
                };
                let mut current = match list.get(index as usize) {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::List(items)) => items.clone(),
                    Some(other) => return Err(self.conversion_error(other, "[]interface {}")),
                };
                match self.list_item(&mut current, next, levels, depth + 1)? {
                    Flow::End => Ok(Flow::End),
                    Flow::More => {
                        self.set_index(list, index, Value::List(current))?;
                        Ok(Flow::More)
                    }
                }
            }
            Some(_) => self.list_item_map(list, index as usize, levels, depth),
        }
    }

    /// `name[i].rest`: the element becomes (or stays) a map.
    fn list_item_map(
        &mut self,
        list: &mut Vec<Value>,
        index: usize,
        levels: usize,
        depth: usize,
    ) -> Step {
        let mut inner = match list.get_mut(index) {
            Some(Value::Map(m)) => std::mem::take(m),
            Some(other) => {
                // Helm replaces an element of another kind with a map.
                *other = Value::Map(Map::new());
                Map::new()
            }
            None => Map::new(),
        };
        let flow = self.key(&mut inner, levels, depth + 1);
        match flow {
            Ok(Flow::More) => {
                self.set_index(list, index as i64, Value::Map(inner))?;
                Ok(Flow::More)
            }
            other => {
                // An existing element was changed in place; a new one is
                // dropped, as in Helm.
                if let Some(slot) = list.get_mut(index) {
                    *slot = Value::Map(inner);
                }
                other
            }
        }
    }

    /// The value after `name[i]=`.
    fn list_value(&mut self) -> Result<Value, Error> {
        match self.mode {
            Mode::Json => return self.json_value(),
            Mode::Literal => return Ok(Value::String(self.runes_until(&[]).0)),
            _ => {}
        }
        match self.val_list()? {
            ValList::List(items) => Ok(Value::List(items)),
            ValList::Eof => Ok(Value::String(String::new())),
            ValList::NotAList => {
                let (raw, _) = self.runes_until(&[',']);
                self.read(&raw)
            }
        }
    }

    /// Helm's `valList`: `{a,b}` after `=`.
    fn val_list(&mut self) -> Result<ValList, Error> {
        match self.chars.get(self.pos) {
            None => return Ok(ValList::Eof),
            Some('{') => self.pos += 1,
            Some(_) => return Ok(ValList::NotAList),
        }
        let mut items = Vec::new();
        loop {
            let (raw, last) = self.runes_until(&[',', '}']);
            match last {
                None => return Err(self.syntax("list must terminate with '}'")),
                Some('}') => {
                    if self.chars.get(self.pos) == Some(&',') {
                        self.pos += 1;
                    }
                    items.push(self.read(&raw)?);
                    return Ok(ValList::List(items));
                }
                Some(_) => items.push(self.read(&raw)?),
            }
        }
    }

    /// Helm's `emptyVal` then one JSON value: an empty value (only spaces
    /// before `,` or the end) is null.
    fn json_value(&mut self) -> Result<Value, Error> {
        if self.skip_empty_value() {
            return Ok(Value::Null);
        }
        let rest: String = self.chars[self.pos..].iter().collect();
        let mut stream = serde_json::Deserializer::from_str(&rest).into_iter::<serde_json::Value>();
        let wrap = |source: Error| Error::SetJson {
            expr: self.expr.to_string(),
            source: Box::new(source),
        };
        let json = match stream.next() {
            Some(Ok(json)) => json,
            Some(Err(e)) => {
                return Err(wrap(Error::JsonSyntax {
                    line: e.line(),
                    column: e.column(),
                }));
            }
            None => return Ok(Value::Null),
        };
        let consumed = rest[..stream.byte_offset()].chars().count();
        self.pos += consumed;
        let value = json_to_value(json).map_err(wrap)?;
        self.skip_empty_value();
        Ok(value)
    }

    /// Skips spaces; true (and consumes the comma) at a `,` or the end.
    fn skip_empty_value(&mut self) -> bool {
        while let Some(&c) = self.chars.get(self.pos) {
            if c == ',' {
                self.pos += 1;
                return true;
            }
            if !c.is_whitespace() {
                return false;
            }
            self.pos += 1;
        }
        true
    }

    /// Turns a raw value into a value for the mode.
    fn read(&self, raw: &str) -> Result<Value, Error> {
        match self.mode {
            Mode::Typed => Ok(typed_value(raw)),
            Mode::File(read) => read(raw)
                .map(Value::String)
                .map_err(|reason| Error::SetFile {
                    expr: self.expr.to_string(),
                    path: raw.to_string(),
                    reason,
                }),
            _ => Ok(Value::String(raw.to_string())),
        }
    }

    /// Helm's `setIndex`.
    fn set_index(&self, list: &mut Vec<Value>, index: i64, value: Value) -> Result<(), Error> {
        if index < 0 || index > MAX_LIST_INDEX as i64 {
            return Err(self.index_error(index));
        }
        let index = index as usize;
        if list.len() <= index {
            list.resize(index + 1, Value::Null);
        }
        list[index] = value;
        Ok(())
    }

    /// The error Helm's recovered type-assertion panic gives when a path
    /// goes through a value of the wrong kind.
    fn conversion_error(&self, found: &Value, wanted: &str) -> Error {
        let go_type = match found {
            Value::Null => {
                return self.syntax(format!(
                    "unable to parse key: interface conversion: interface is nil, not {wanted}"
                ));
            }
            Value::Bool(_) => "bool",
            Value::Int(_) => "int64",
            Value::Float(_) => "float64",
            Value::String(_) => "string",
            Value::List(_) => "[]interface {}",
            Value::Map(_) => "map[string]interface {}",
        };
        self.syntax(format!(
            "unable to parse key: interface conversion: interface {{}} is {go_type}, not {wanted}"
        ))
    }
}

/// Helm's `set`: an empty key is ignored.
fn set(data: &mut Map, key: String, value: Value) {
    if !key.is_empty() {
        data.insert(key, value);
    }
}

/// Helm's `typedVal` for `--set`.
fn typed_value(raw: &str) -> Value {
    if go_equal_fold(raw, "true") {
        return Value::Bool(true);
    }
    if go_equal_fold(raw, "false") {
        return Value::Bool(false);
    }
    if go_equal_fold(raw, "null") {
        return Value::Null;
    }
    if raw == "0" {
        return Value::Int(0);
    }
    if !raw.is_empty()
        && !raw.starts_with('0')
        && let Ok(i) = parse_go_int(raw, 10)
    {
        return Value::Int(i);
    }
    Value::String(raw.to_string())
}

/// Go's `strings.EqualFold` against an ASCII word: ASCII case folding,
/// plus U+017F (long s), which folds to `s`.
fn go_equal_fold(s: &str, word: &str) -> bool {
    let mut chars = s.chars();
    for w in word.chars() {
        match chars.next() {
            Some(c) if c.eq_ignore_ascii_case(&w) => {}
            Some('\u{17F}') if w == 's' => {}
            _ => return false,
        }
    }
    chars.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::test_support::yaml_map as y;

    fn set_typed(expr: &str) -> Result<Map, Error> {
        let mut m = Map::new();
        parse_set(expr, &mut m).map(|()| m)
    }

    fn m(entries: &[(&str, Value)]) -> Map {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn values_are_typed_like_helm() {
        let got = set_typed("a=true,b=FALSE,c=null,d=0,e=42,f=-7,g=007,h=1.5,i=abc,j=,k=9223372036854775808,l=+5,n=NuLL")
            .unwrap();
        let want = m(&[
            ("a", Value::Bool(true)),
            ("b", Value::Bool(false)),
            ("c", Value::Null),
            ("d", Value::Int(0)),
            ("e", Value::Int(42)),
            ("f", Value::Int(-7)),
            ("g", "007".into()),
            ("h", "1.5".into()),
            ("i", "abc".into()),
            ("j", "".into()),
            ("k", "9223372036854775808".into()),
            ("l", Value::Int(5)),
            ("n", Value::Null),
        ]);
        assert_eq!(got, want);
    }

    #[test]
    fn set_string_keeps_strings() {
        let mut got = Map::new();
        parse_set_string("a=true,b=1,c=null,d={x,1}", &mut got).unwrap();
        assert_eq!(
            got,
            m(&[
                ("a", "true".into()),
                ("b", "1".into()),
                ("c", "null".into()),
                ("d", Value::List(vec!["x".into(), "1".into()])),
            ])
        );
    }

    #[test]
    fn nested_names_lists_and_escapes() {
        assert_eq!(
            set_typed("a.b.c=1").unwrap(),
            y("a: {b: {c: 1}}\n")
                .into_iter()
                .map(|(k, v)| (k, int_floats(v)))
                .collect()
        );
        assert_eq!(
            set_typed("name=value,outer.inner=x").unwrap(),
            m(&[
                ("name", "value".into()),
                ("outer", Value::Map(m(&[("inner", "x".into())])))
            ])
        );
        assert_eq!(set_typed("a\\.b=c").unwrap(), m(&[("a.b", "c".into())]));
        assert_eq!(set_typed("a=b\\,c").unwrap(), m(&[("a", "b,c".into())]));
        assert_eq!(set_typed("a=b\\=c").unwrap(), m(&[("a", "b=c".into())]));
        assert_eq!(
            set_typed("a={x,y,z}").unwrap(),
            m(&[("a", Value::List(vec!["x".into(), "y".into(), "z".into()]))])
        );
        assert_eq!(
            set_typed("a={1,true},b=2").unwrap(),
            m(&[
                ("a", Value::List(vec![Value::Int(1), Value::Bool(true)])),
                ("b", Value::Int(2))
            ])
        );
        assert_eq!(
            set_typed("a={}").unwrap(),
            m(&[("a", Value::List(vec!["".into()]))])
        );
        assert_eq!(
            set_typed("list[0]=a,list[2]=c").unwrap(),
            m(&[(
                "list",
                Value::List(vec!["a".into(), Value::Null, "c".into()])
            )])
        );
        assert_eq!(
            set_typed("list[0].name=a,list[0].port=80,list[1].name=b").unwrap(),
            m(&[(
                "list",
                Value::List(vec![
                    Value::Map(m(&[("name", "a".into()), ("port", Value::Int(80))])),
                    Value::Map(m(&[("name", "b".into())])),
                ])
            )])
        );
        assert_eq!(
            set_typed("nested[0][1]=x").unwrap(),
            m(&[(
                "nested",
                Value::List(vec![Value::List(vec![Value::Null, "x".into()])])
            )])
        );
        assert_eq!(
            set_typed("a[0]={1,2}").unwrap(),
            m(&[(
                "a",
                Value::List(vec![Value::List(vec![Value::Int(1), Value::Int(2)])])
            )])
        );
    }

    fn int_floats(v: Value) -> Value {
        match v {
            Value::Float(f) => Value::Int(f as i64),
            Value::Map(mm) => Value::Map(mm.into_iter().map(|(k, v)| (k, int_floats(v))).collect()),
            other => other,
        }
    }

    #[test]
    fn helm_quirks_are_kept() {
        // A trailing `=` sets an empty string; `a[0]` alone makes an empty list.
        assert_eq!(set_typed("a=").unwrap(), m(&[("a", "".into())]));
        assert_eq!(
            set_typed("a.b=").unwrap(),
            m(&[("a", Value::Map(m(&[("b", "".into())])))])
        );
        assert_eq!(set_typed("a[0]").unwrap(), m(&[("a", Value::List(vec![]))]));
        // An unterminated index ends parsing quietly.
        assert_eq!(set_typed("a[1").unwrap(), Map::new());
        // An empty key is ignored.
        assert_eq!(set_typed("=x,b=1").unwrap(), m(&[("b", Value::Int(1))]));
        // Later expressions overwrite, into existing maps.
        let mut base = y("a: {keep: 1, over: 2}\n");
        parse_set("a.over=3", &mut base).unwrap();
        assert_eq!(
            base["a"],
            Value::Map(m(&[("keep", Value::Float(1.0)), ("over", Value::Int(3))]))
        );
    }

    #[test]
    fn errors_use_helms_words() {
        let reason = |expr: &str| match set_typed(expr) {
            Err(Error::SetSyntax { reason, .. }) => reason,
            other => panic!("{expr}: unexpected {other:?}"),
        };
        assert_eq!(reason("a"), "key \"a\" has no value");
        assert_eq!(
            reason("a,b=1"),
            "key \"a\" has no value (cannot end with ,)"
        );
        assert_eq!(reason("a.b"), "key \"b\" has no value");
        assert_eq!(reason("a={1,2"), "list must terminate with '}'");
        assert_eq!(
            reason("a[x]=1"),
            "error parsing index: strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(
            reason("a[0]x=1"),
            "unexpected data at end of array index: \"x\""
        );
        assert_eq!(
            reason("a=1,a.b=2"),
            "unable to parse key: interface conversion: interface {} is int64, not map[string]interface {}"
        );
        assert_eq!(
            reason("a=1,a[0]=2"),
            "unable to parse key: interface conversion: interface {} is int64, not []interface {}"
        );
        let ok = (0..31)
            .map(|i| format!("k{i}"))
            .collect::<Vec<_>>()
            .join(".")
            + "=1";
        assert!(set_typed(&ok).is_ok());
        let deep = (0..32)
            .map(|i| format!("k{i}"))
            .collect::<Vec<_>>()
            .join(".")
            + "=1";
        assert!(reason(&deep).starts_with("value name nested level is greater than maximum"));
    }

    #[test]
    fn list_indexes_are_bounded() {
        assert_eq!(
            set_typed("a[65537]=x"),
            Err(Error::SetListIndex {
                expr: "a[65537]=x".into(),
                index: 65537,
                limit: MAX_LIST_INDEX
            })
        );
        assert!(matches!(
            set_typed("a[-1]=x"),
            Err(Error::SetListIndex { index: -1, .. })
        ));
        assert!(matches!(
            set_typed("a[0][-2]=x"),
            Err(Error::SetListIndex { index: -2, .. })
        ));
        assert!(matches!(
            set_typed("a[99999999999999999999]=x"),
            Err(Error::SetSyntax { .. })
        ));
        let ok = set_typed("a[65536]=x").unwrap();
        assert!(matches!(&ok["a"], Value::List(l) if l.len() == 65537));
    }

    #[test]
    fn hostile_nesting_is_refused() {
        let deep = format!("a{}=1", "[0]".repeat(100_000));
        assert!(matches!(set_typed(&deep), Err(Error::SetSyntax { .. })));
    }

    #[test]
    fn set_json_parses_values_as_json() {
        let mut got = Map::new();
        parse_set_json(r#"a={"b":[1,"x",null]} ,c=true,d=,e="s,t""#, &mut got).unwrap();
        assert_eq!(
            got,
            m(&[
                (
                    "a",
                    Value::Map(m(&[(
                        "b",
                        Value::List(vec![Value::Float(1.0), "x".into(), Value::Null])
                    )]))
                ),
                ("c", Value::Bool(true)),
                ("d", Value::Null),
                ("e", "s,t".into()),
            ])
        );
        let mut list = Map::new();
        parse_set_json("l[1]=[2]", &mut list).unwrap();
        assert_eq!(
            list,
            m(&[(
                "l",
                Value::List(vec![Value::Null, Value::List(vec![Value::Float(2.0)])])
            )])
        );
        assert!(matches!(
            parse_set_json("a={bad", &mut Map::new()),
            Err(Error::SetJson { .. })
        ));
        // Only the comma after a value is consumed, so a space after it
        // belongs to the next key, as in Helm.
        let mut spaced = Map::new();
        parse_set_json("a=1, b=2", &mut spaced).unwrap();
        assert_eq!(
            spaced,
            m(&[("a", Value::Float(1.0)), (" b", Value::Float(2.0))])
        );
    }

    #[test]
    fn set_json_object_form_merges() {
        let mut base = y("a: {b: 1, c: 2}\n");
        parse_set_json(r#" {"a": {"b": 5}, "d": [1]} "#, &mut base).unwrap();
        assert_eq!(base, y("a: {b: 5, c: 2}\nd: [1]\n"));
        assert!(matches!(
            parse_set_json("{nope}", &mut base),
            Err(Error::SetJson { .. })
        ));
    }

    #[test]
    fn set_literal_takes_the_rest_verbatim() {
        let mut got = Map::new();
        parse_set_literal("a.b=x,y=z\\n{1}", &mut got).unwrap();
        assert_eq!(
            got,
            m(&[("a", Value::Map(m(&[("b", "x,y=z\\n{1}".into())])))])
        );
        let mut list = Map::new();
        parse_set_literal("l[0]=true", &mut list).unwrap();
        assert_eq!(list, m(&[("l", Value::List(vec!["true".into()]))]));
    }

    #[test]
    fn set_file_reads_through_the_reader() {
        let read = |path: &str| match path {
            "ok.txt" => Ok("contents\n".to_string()),
            _ => Err("no such file".to_string()),
        };
        let mut got = Map::new();
        parse_set_file("a=ok.txt,l={ok.txt}", &mut got, &read).unwrap();
        assert_eq!(
            got,
            m(&[
                ("a", "contents\n".into()),
                ("l", Value::List(vec!["contents\n".into()]))
            ])
        );
        assert_eq!(
            parse_set_file("a=missing", &mut Map::new(), &read),
            Err(Error::SetFile {
                expr: "a=missing".into(),
                path: "missing".into(),
                reason: "no such file".into()
            })
        );
    }

    #[test]
    fn command_line_order_is_helms() {
        let flags = ValueFlags {
            files: vec![
                ("one.yaml".into(), "a: 1\nb: {c: 1}\n".into()),
                ("two.yaml".into(), "b: {d: 2}\n---\ne: 3\n".into()),
            ],
            set_json: vec!["a=10".into()],
            set: vec!["a=20".into()],
            set_string: vec!["a=30".into()],
            set_file: vec![],
            set_literal: vec!["z=1,2".into()],
        };
        let got = merge_value_flags(&flags, &|_| Err("unused".into())).unwrap();
        assert_eq!(
            got,
            m(&[
                ("a", "30".into()),
                (
                    "b",
                    Value::Map(m(&[("c", Value::Float(1.0)), ("d", Value::Float(2.0))]))
                ),
                ("e", Value::Float(3.0)),
                ("z", "1,2".into()),
            ])
        );
        let bad = ValueFlags {
            files: vec![("bad.yaml".into(), "a: [".into())],
            ..Default::default()
        };
        assert!(
            matches!(merge_value_flags(&bad, &|_| Err(String::new())), Err(Error::ValuesFile { name, .. }) if name == "bad.yaml")
        );
    }

    #[test]
    fn equal_fold_matches_go() {
        assert!(go_equal_fold("TrUe", "true"));
        assert!(go_equal_fold("fal\u{17F}e", "false"));
        assert!(!go_equal_fold("truee", "true"));
        assert!(!go_equal_fold("tru", "true"));
    }
}
