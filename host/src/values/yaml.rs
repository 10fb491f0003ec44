//! YAML as Helm reads it, through `sigs.k8s.io/yaml`: go-yaml v2 decodes
//! the document into Go values, which are then turned into JSON and read
//! back. So every number ends up a float, YAML 1.1 booleans (`yes`, `on`,
//! `y`) are booleans, non-string keys become strings, and values JSON
//! cannot hold (`.inf`, a `null` key) are errors.
//!
//! Printing lives in [`super::emit`]; this file only reads.

use std::collections::HashMap;

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, ScanError, Span, Tag};

use super::resolve::{Resolved, resolve_plain};
use super::{Error, Map, Value, format_go_float, merge_maps};

/// The deepest nesting of maps and lists accepted when parsing YAML or
/// JSON. Real values files stay far below it; the cap keeps a hostile
/// document from exhausting the stack of code that walks the result.
pub const MAX_DEPTH: usize = 100;

/// The most nodes that aliases may add to one document by expansion, so
/// that a "billion laughs" document fails instead of exhausting memory.
pub const MAX_ALIAS_NODES: usize = 1_000_000;

/// The most bytes of scalar text that aliases may add to one document by
/// expansion (64 MiB). go-yaml bounds alias expansion by a ratio of nodes;
/// its strings share memory, ours are copied, so a few aliases of one huge
/// string need a bound of their own.
pub const MAX_ALIAS_EXPANSION_BYTES: usize = 64 << 20;

/// Parses the first YAML document of `text` the way Helm reads a values
/// file or `fromYaml` reads a string (`sigs.k8s.io/yaml.Unmarshal`).
///
/// Every number becomes [`Value::Float`] (even `3`); `y`, `yes`, `on`,
/// `true` and their case forms are `true`, their opposites `false`; `~`,
/// `null` and empty values are [`Value::Null`]; quoted and block scalars
/// stay strings; timestamps stay strings; anchors, aliases and `<<` merge
/// keys are expanded (with go-yaml v2's rule that a merged map overwrites
/// keys written before the `<<` and is overwritten by keys after it);
/// integer, float and boolean keys become strings (`1: a` has key `"1"`,
/// `1.5:` key `"1.5"`, `true:` key `"true"`). Only the first document is
/// read, as go-yaml's `Unmarshal` does; later ones are not even checked.
///
/// A stream with no document at all (empty, or only comments) gives an
/// empty map, which is what Helm makes of an empty values file. A
/// document that is only `null` or `---` gives [`Value::Null`]; use
/// [`parse_values`] when the caller needs a map.
///
/// # Errors
///
/// [`Error::YamlSyntax`] for malformed YAML, [`Error::YamlTooDeep`] past
/// [`MAX_DEPTH`], [`Error::YamlAliasExpansion`] past [`MAX_ALIAS_NODES`],
/// [`Error::YamlKey`] for a null, list, map or too-large integer key,
/// [`Error::YamlMerge`] for a `<<` whose value is not a map or list of
/// maps, [`Error::YamlNotFinite`] for `.inf`/`.nan` (JSON cannot hold
/// them), [`Error::YamlTag`] for a scalar whose `!!int`-style tag does not
/// match its text. Every error carries a 1-based line and column.
pub fn parse_yaml(text: &str) -> Result<Value, Error> {
    with_go_yaml_leniency(text, |text| {
        let mut loader = Loader::new(text);
        Ok(loader
            .next_document()?
            .unwrap_or_else(|| Value::Map(Map::new())))
    })
}

/// Parses a values file as Helm 4's `loader.LoadValues` does: every
/// document of the stream is read as [`parse_yaml`] reads one and they
/// are merged in order with [`merge_maps`] (later documents win); an
/// empty file or a `null` document adds nothing.
///
/// # Errors
///
/// Those of [`parse_yaml`], and [`Error::NotAMap`] when a document is a
/// list or a scalar.
pub fn parse_values(text: &str) -> Result<Map, Error> {
    let mut values = Map::new();
    for (index, document) in parse_yaml_documents(text)?.into_iter().enumerate() {
        match document {
            Value::Map(map) => values = merge_maps(&values, &map),
            Value::Null => {}
            other => {
                return Err(Error::NotAMap {
                    index,
                    found: other.kind_name(),
                });
            }
        }
    }
    Ok(values)
}

/// Parses every document of a YAML stream (`---` separated), each as
/// [`parse_yaml`] reads one. A document with no content (`---` alone) is
/// [`Value::Null`]; an empty stream gives no documents. Anchors do not
/// carry across documents.
///
/// # Errors
///
/// Those of [`parse_yaml`], for any document.
pub fn parse_yaml_documents(text: &str) -> Result<Vec<Value>, Error> {
    with_go_yaml_leniency(text, |text| {
        let mut loader = Loader::new(text);
        let mut documents = Vec::new();
        while let Some(document) = loader.next_document()? {
            documents.push(document);
        }
        Ok(documents)
    })
}

/// Parses every document of a rendered manifest stream as Helm's kube
/// client reads them before sending them to the API server
/// (`sigs.k8s.io/yaml.YAMLToJSON`, go-yaml v2 rules): like
/// [`parse_yaml_documents`], except that integers stay [`Value::Int`]
/// (so `defaultMode: 0644` is the integer 420 and a large integer keeps
/// every digit); `yes`/`on` are still booleans and `1e3` a float.
///
/// # Errors
///
/// Those of [`parse_yaml`], for any document.
pub fn parse_manifest_documents(text: &str) -> Result<Vec<Value>, Error> {
    with_go_yaml_leniency(text, |text| {
        let mut loader = Loader::with_numbers(text, Numbers::Integers);
        let mut documents = Vec::new();
        while let Some(document) = loader.next_document()? {
            documents.push(document);
        }
        Ok(documents)
    })
}

/// The parser's complaint about a tab after a mapping's `:`, which go-yaml
/// (libyaml) accepts as ordinary separation.
const TAB_AFTER_COLON: &str = "':' must be followed by a valid YAML whitespace";

/// The parser's complaints about a token of a flow collection (`[...]`,
/// `{...}`) that starts left of the enclosing block's indentation, such as
/// a closing `]` at its key's column. YAML 1.2 asks for that indentation;
/// go-yaml v2 (libyaml) has no indentation rule inside flow collections.
const FLOW_INDENTATION: [&str; 2] = [
    "invalid indentation",
    "invalid indentation in flow construct",
];

/// The parser's complaint about a continuation line of a quoted scalar
/// left of the block's indentation, which go-yaml v2 does not check either.
const QUOTED_INDENTATION: &str = "invalid indentation in quoted scalar";

/// How many bytes [`with_go_yaml_leniency`] may parse again, in all, while
/// it works around the parser's stricter rules for one document (16 MiB):
/// enough for hundreds of fixes in a large values file, and a bound on the
/// work a hostile one can cause.
const MAX_REPARSE_BYTES: usize = 16 << 20;

/// How many fixes [`with_go_yaml_leniency`] may make to one document: with
/// [`MAX_REPARSE_BYTES`] it bounds the work on a short text too, which
/// could otherwise be parsed again hundreds of thousands of times.
const MAX_REPARSE_FIXES: usize = 4096;

/// Runs `parse`, and where the parser refuses what go-yaml v2 accepts,
/// rewrites only blanks that carry no content and parses again:
///
/// - a tab between a key's `:` and its value becomes a space;
/// - a line inside a flow collection that starts left of the block's
///   indentation (`args: [` ... `]` with the `]` at the key's column) gets
///   leading spaces;
/// - so does a continuation line of a quoted scalar that starts left of
///   the indentation.
///
/// Leading blanks of a line inside a flow collection or a quoted scalar are
/// never content (YAML folds them away), so the value read is the value
/// go-yaml reads. Errors go-yaml reports as well (a block mapping key out of
/// line, a missing `]`, a document marker inside a quoted scalar) stay
/// errors: only the three complaints above are worked around.
fn with_go_yaml_leniency<T>(
    text: &str,
    parse: impl Fn(&str) -> Result<T, Error>,
) -> Result<T, Error> {
    let mut patched: Option<String> = None;
    let mut spent = 0usize;
    let mut fixes = 0usize;
    // The flow line moved last and how far it has moved.
    let mut moved: Option<(usize, usize)> = None;
    loop {
        let current = patched.as_deref().unwrap_or(text);
        let result = parse(current);
        let Err(Error::YamlSyntax {
            line,
            column,
            message,
        }) = &result
        else {
            return result;
        };
        spent = spent.saturating_add(current.len());
        if spent > MAX_REPARSE_BYTES {
            return result;
        }
        let (line, col) = (*line, column.saturating_sub(1));
        let fixed = if message == TAB_AFTER_COLON {
            spaces_for_tabs_before(current, line, *column)
        } else if FLOW_INDENTATION.contains(&message.as_str()) {
            shift_flow_line(current, line, col, &mut moved)
        } else if message == QUOTED_INDENTATION {
            indent_quoted_continuation(current, line, col)
        } else {
            None
        };
        fixes += 1;
        match fixed {
            // A fix that changes nothing would meet the same error again.
            Some(fixed) if fixed != current && fixes <= MAX_REPARSE_FIXES => patched = Some(fixed),
            _ => return result,
        }
    }
}

/// The most columns [`shift_flow_line`] moves one line.
const MAX_FLOW_SHIFT: usize = 4096;

/// Byte offset where the 1-based `line` of `text` starts. Lines end as
/// the parser ends them: at `\n`, `\r\n` or a lone `\r`.
fn line_start(text: &str, line: usize) -> Option<usize> {
    let mut start = 0;
    for _ in 1..line {
        let end = line_end(text, start);
        let bytes = text.as_bytes();
        start = match (bytes.get(end), bytes.get(end + 1)) {
            (Some(b'\r'), Some(b'\n')) => end + 2,
            (Some(_), _) => end + 1,
            (None, _) => return None,
        };
    }
    Some(start)
}

/// Byte offset of the line break that ends the line starting at `start`
/// (the text's length for the last line).
fn line_end(text: &str, start: usize) -> usize {
    let rest = &text.as_bytes()[start..];
    start + memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len())
}

/// The column (in characters) of the first non-blank character of the
/// 1-based `line`, or `None` for a blank or missing line.
fn leading_column(text: &str, line: usize) -> Option<usize> {
    let start = line_start(text, line)?;
    let rest = &text[start..line_end(text, start)];
    let blanks = rest.chars().take_while(|c| *c == ' ' || *c == '\t').count();
    (blanks < rest.len()).then_some(blanks)
}

/// `text` with `count` spaces put at the start of the 1-based `line`.
fn with_spaces_at(text: &str, line: usize, count: usize) -> Option<String> {
    let start = line_start(text, line)?;
    let mut out = String::with_capacity(text.len() + count);
    out.push_str(&text[..start]);
    out.extend(std::iter::repeat_n(' ', count));
    out.push_str(&text[start..]);
    Some(out)
}

/// Moves the 1-based `line`, whose token at column `col` (0-based) the
/// parser found left of the indentation inside a flow collection, to the
/// right. The indentation wanted is not in the error, so the first try
/// aligns the line with the nearest non-blank line above it (where a flow
/// collection's other entries usually are), and a line that still fails
/// moves twice as far each time; `moved` remembers the line and how far it
/// has moved.
fn shift_flow_line(
    text: &str,
    line: usize,
    col: usize,
    moved: &mut Option<(usize, usize)>,
) -> Option<String> {
    let shift = match *moved {
        Some((last, by)) if last == line => by,
        _ => {
            let above = (1..line)
                .rev()
                .find_map(|l| leading_column(text, l))
                .unwrap_or(0);
            above.max(col + 1) - col
        }
    };
    let total = match *moved {
        Some((last, by)) if last == line => by.checked_mul(2)?,
        _ => shift,
    };
    if total > MAX_FLOW_SHIFT {
        return None;
    }
    *moved = Some((line, total));
    with_spaces_at(text, line, shift)
}

/// Moves every continuation line of the quoted scalar that opens at the
/// 1-based `line` and 0-based `col` (its quote) so that none starts left of
/// that quote, which is at or right of the indentation the parser wants.
/// A line starting with a document marker (`---`, `...`) stays where it
/// is, so that the parser still reports it as go-yaml does.
fn indent_quoted_continuation(text: &str, line: usize, col: usize) -> Option<String> {
    let start = line_start(text, line)?;
    let (quote_at, quote) = text[start..]
        .char_indices()
        .nth(col)
        .map(|(i, c)| (start + i, c))?;
    if quote != '"' && quote != '\'' {
        return None;
    }
    let end = closing_quote(text, quote_at, quote)?;
    let mut out = String::with_capacity(text.len() + 64);
    let mut changed = false;
    let mut pos = 0;
    for (i, _) in text[quote_at..end].match_indices('\n') {
        let next = quote_at + i + 1;
        out.push_str(&text[pos..next]);
        pos = next;
        let rest = &text[next..];
        let blanks = rest.chars().take_while(|c| *c == ' ' || *c == '\t').count();
        let content = &rest[blanks..];
        let blank_line = content.starts_with('\n') || content.starts_with("\r\n");
        let marker = blanks == 0 && (content.starts_with("---") || content.starts_with("..."));
        if blanks < col && !blank_line && !marker {
            out.extend(std::iter::repeat_n(' ', col - blanks));
            changed = true;
        }
    }
    out.push_str(&text[pos..]);
    changed.then_some(out)
}

/// The byte offset of the quote that closes the scalar opened by `quote`
/// at byte `open`: `\\` escapes the next character in a double-quoted
/// scalar, `''` is a quote in a single-quoted one.
fn closing_quote(text: &str, open: usize, quote: char) -> Option<usize> {
    let mut chars = text[open + 1..].char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if quote == '"' => {
                chars.next();
            }
            '\'' if quote == '\'' => {
                if chars.peek().is_some_and(|(_, n)| *n == '\'') {
                    chars.next();
                } else {
                    return Some(open + 1 + i);
                }
            }
            '"' if quote == '"' => return Some(open + 1 + i),
            _ => {}
        }
    }
    None
}

/// Replaces the tabs in the run of blanks that ends just before the
/// 1-based `line` and `column`, provided a `:` starts that run.
fn spaces_for_tabs_before(text: &str, line: usize, column: usize) -> Option<String> {
    let start = line_start(text, line)?;
    let line_text = &text[start..line_end(text, start)];
    let prefix: Vec<(usize, char)> = line_text
        .char_indices()
        .take(column.checked_sub(1)?)
        .collect();
    let blanks = prefix
        .iter()
        .rev()
        .take_while(|(_, c)| *c == ' ' || *c == '\t')
        .count();
    let colon = prefix.len().checked_sub(blanks + 1)?;
    if prefix[colon].1 != ':' || blanks == 0 {
        return None;
    }
    let mut fixed = String::with_capacity(text.len());
    fixed.push_str(&text[..start]);
    for (i, c) in line_text.chars().enumerate() {
        fixed.push(if i > colon && i < prefix.len() && c == '\t' {
            ' '
        } else {
            c
        });
    }
    fixed.push_str(&text[start + line_text.len()..]);
    Some(fixed)
}

/// A node being built: an open list or map.
enum Frame {
    List {
        items: Vec<Value>,
        anchor: usize,
        shape: Shape,
    },
    Map {
        map: Map,
        key: Option<PendingKey>,
        anchor: usize,
        shape: Shape,
    },
}

/// Size facts of a finished or open node, used for the limits.
#[derive(Clone, Copy, Default)]
struct Shape {
    /// Levels of nesting below and including this node (0 for a scalar).
    height: usize,
    /// Nodes in the subtree, this one included.
    nodes: usize,
    /// Bytes of scalar text in the subtree.
    bytes: usize,
}

/// The key of a map entry whose value has not arrived yet.
enum PendingKey {
    Key(String),
    Merge(Marker),
}

/// An anchored node, kept for its aliases.
struct Anchored {
    value: Value,
    /// The map key this node would make, when it is a scalar.
    key: Option<Result<KeyOrMerge, ()>>,
    shape: Shape,
}

/// What a scalar means in key position.
#[derive(Clone)]
enum KeyOrMerge {
    Key(String),
    Merge,
}

/// One scalar as go-yaml v2 decodes it into `interface{}`.
enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Big(f64),
    Float(f64),
    Str(String),
    Merge,
}

/// How a loader turns numbers into values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Numbers {
    /// Every number a float, as after Helm's YAML -> JSON -> Go trip for
    /// values (`sigs.k8s.io/yaml.Unmarshal` into `interface{}`).
    Floats,
    /// Integers stay integers, as `sigs.k8s.io/yaml.YAMLToJSON` keeps them
    /// when Helm sends a rendered manifest to the API server.
    Integers,
}

struct Loader<'a> {
    numbers: Numbers,
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    anchors: HashMap<usize, Anchored>,
    stack: Vec<Frame>,
    alias_nodes: usize,
    /// Bytes of scalar text aliases have copied into this document.
    alias_bytes: usize,
    done: bool,
}

impl<'a> Loader<'a> {
    fn new(text: &'a str) -> Self {
        Self::with_numbers(text, Numbers::Floats)
    }

    fn with_numbers(text: &'a str, numbers: Numbers) -> Self {
        Loader {
            numbers,
            parser: Parser::new_from_str(text),
            anchors: HashMap::new(),
            stack: Vec::new(),
            alias_nodes: 0,
            alias_bytes: 0,
            done: false,
        }
    }

    fn next_event(&mut self) -> Result<(Event<'a>, Span), Error> {
        match self.parser.next_event() {
            Some(Ok(event)) => Ok(event),
            Some(Err(e)) => Err(syntax_error(&e)),
            None => Ok((Event::StreamEnd, Span::empty(Marker::new(0, 0, 0)))),
        }
    }

    /// Reads the next document, or `None` at the end of the stream.
    fn next_document(&mut self) -> Result<Option<Value>, Error> {
        if self.done {
            return Ok(None);
        }
        loop {
            match self.next_event()?.0 {
                Event::DocumentStart(_) => break,
                Event::StreamEnd => {
                    self.done = true;
                    return Ok(None);
                }
                _ => {}
            }
        }
        self.anchors.clear();
        self.stack.clear();
        self.alias_nodes = 0;
        self.alias_bytes = 0;
        let mut root = None;
        loop {
            let (event, span) = self.next_event()?;
            let finished = match event {
                Event::DocumentEnd => return Ok(Some(root.unwrap_or(Value::Null))),
                Event::StreamEnd => {
                    self.done = true;
                    return Ok(Some(root.unwrap_or(Value::Null)));
                }
                Event::Scalar(text, style, anchor, tag) => {
                    self.scalar(&text, style, anchor, tag.as_deref(), span)?
                }
                Event::Alias(id) => self.alias(id, span)?,
                Event::SequenceStart(anchor, _) => {
                    self.open(span, |shape| Frame::List {
                        items: Vec::new(),
                        anchor,
                        shape,
                    })?;
                    None
                }
                Event::MappingStart(anchor, _) => {
                    self.open(span, |shape| Frame::Map {
                        map: Map::new(),
                        key: None,
                        anchor,
                        shape,
                    })?;
                    None
                }
                Event::SequenceEnd | Event::MappingEnd => Some(self.close()),
                _ => None,
            };
            if let Some((value, shape)) = finished
                && let Some(value) = self.deliver(value, shape, span)?
            {
                root = Some(value);
            }
        }
    }

    /// Whether the next node completes a map key.
    fn expecting_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { key: None, .. }))
    }

    fn open(&mut self, span: Span, frame: impl FnOnce(Shape) -> Frame) -> Result<(), Error> {
        if self.expecting_key() {
            return Err(key_error(span.start));
        }
        if self.stack.len() + 1 > MAX_DEPTH {
            return Err(Error::YamlTooDeep {
                line: span.start.line(),
                column: span.start.col() + 1,
                limit: MAX_DEPTH,
            });
        }
        self.stack.push(frame(Shape {
            height: 1,
            nodes: 1,
            bytes: 0,
        }));
        Ok(())
    }

    /// Pops the open list or map, registering its anchor.
    fn close(&mut self) -> (Value, Shape) {
        let (value, anchor, shape) = match self.stack.pop() {
            Some(Frame::List {
                items,
                anchor,
                shape,
            }) => (Value::List(items), anchor, shape),
            Some(Frame::Map {
                map, anchor, shape, ..
            }) => (Value::Map(map), anchor, shape),
            None => (Value::Null, 0, Shape::default()),
        };
        if anchor != 0 {
            self.anchors.insert(
                anchor,
                Anchored {
                    value: value.clone(),
                    key: None,
                    shape,
                },
            );
        }
        (value, shape)
    }

    fn scalar(
        &mut self,
        text: &str,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        span: Span,
    ) -> Result<Option<(Value, Shape)>, Error> {
        let scalar = decode_scalar(text, style, tag, span.start)?;
        let shape = Shape {
            height: 0,
            nodes: 1,
            bytes: text.len(),
        };
        let key = scalar_key(&scalar);
        if anchor != 0 {
            let value = scalar_value(&scalar, text, span.start, self.numbers);
            self.anchors.insert(
                anchor,
                Anchored {
                    value: value.clone().unwrap_or(Value::Null),
                    key: Some(key.clone()),
                    shape,
                },
            );
            if !self.expecting_key() {
                return value.map(|v| Some((v, shape)));
            }
        }
        if self.expecting_key() {
            self.set_key(key, span.start)?;
            return Ok(None);
        }
        Ok(Some((
            scalar_value(&scalar, text, span.start, self.numbers)?,
            shape,
        )))
    }

    fn alias(&mut self, id: usize, span: Span) -> Result<Option<(Value, Shape)>, Error> {
        let Some(anchored) = self.anchors.get(&id) else {
            return Err(Error::YamlUnknownAnchor {
                line: span.start.line(),
                column: span.start.col() + 1,
            });
        };
        if self.expecting_key() {
            let key = anchored.key.clone().unwrap_or(Err(()));
            self.count_alias_bytes(anchored.shape.bytes, span)?;
            self.set_key(key, span.start)?;
            return Ok(None);
        }
        if self.stack.len() + anchored.shape.height > MAX_DEPTH {
            return Err(Error::YamlTooDeep {
                line: span.start.line(),
                column: span.start.col() + 1,
                limit: MAX_DEPTH,
            });
        }
        self.alias_nodes += anchored.shape.nodes;
        if self.alias_nodes > MAX_ALIAS_NODES {
            return Err(Error::YamlAliasExpansion {
                line: span.start.line(),
                column: span.start.col() + 1,
                limit: MAX_ALIAS_NODES,
            });
        }
        let (value, shape) = (anchored.value.clone(), anchored.shape);
        self.count_alias_bytes(shape.bytes, span)?;
        Ok(Some((value, shape)))
    }

    /// Adds the text an alias copies to the document's total.
    fn count_alias_bytes(&mut self, bytes: usize, span: Span) -> Result<(), Error> {
        self.alias_bytes = self.alias_bytes.saturating_add(bytes);
        if self.alias_bytes > MAX_ALIAS_EXPANSION_BYTES {
            return Err(Error::YamlAliasBytes {
                line: span.start.line(),
                column: span.start.col() + 1,
                limit: MAX_ALIAS_EXPANSION_BYTES,
            });
        }
        Ok(())
    }

    fn set_key(&mut self, key: Result<KeyOrMerge, ()>, at: Marker) -> Result<(), Error> {
        let key_len = match &key {
            Ok(KeyOrMerge::Key(k)) => k.len(),
            _ => 0,
        };
        let pending = match key {
            Ok(KeyOrMerge::Key(k)) => PendingKey::Key(k),
            Ok(KeyOrMerge::Merge) => PendingKey::Merge(at),
            Err(()) => return Err(key_error(at)),
        };
        if let Some(Frame::Map { key, shape, .. }) = self.stack.last_mut() {
            *key = Some(pending);
            shape.bytes = shape.bytes.saturating_add(key_len);
        }
        Ok(())
    }

    /// Hands a finished node to its parent; returns it when it is the
    /// document's root.
    fn deliver(&mut self, value: Value, child: Shape, span: Span) -> Result<Option<Value>, Error> {
        match self.stack.last_mut() {
            None => Ok(Some(value)),
            Some(Frame::List { items, shape, .. }) => {
                grow(shape, child);
                items.push(value);
                Ok(None)
            }
            Some(Frame::Map {
                map, key, shape, ..
            }) => {
                grow(shape, child);
                match key.take() {
                    Some(PendingKey::Key(k)) => {
                        map.insert(k, value);
                    }
                    Some(PendingKey::Merge(at)) => merge_into(map, value, at)?,
                    None => return Err(key_error(span.start)),
                }
                Ok(None)
            }
        }
    }
}

fn grow(parent: &mut Shape, child: Shape) {
    parent.height = parent.height.max(child.height + 1);
    parent.nodes = parent.nodes.saturating_add(child.nodes);
    parent.bytes = parent.bytes.saturating_add(child.bytes);
}

/// go-yaml v2's merge: a map's entries are written over the map being
/// built; a list of maps is applied last to first, so earlier maps win.
fn merge_into(map: &mut Map, value: Value, at: Marker) -> Result<(), Error> {
    let merge_error = || Error::YamlMerge {
        line: at.line(),
        column: at.col() + 1,
    };
    match value {
        Value::Map(source) => map.extend(source),
        Value::List(items) => {
            if !items.iter().all(|item| matches!(item, Value::Map(_))) {
                return Err(merge_error());
            }
            for item in items.into_iter().rev() {
                if let Value::Map(source) = item {
                    map.extend(source);
                }
            }
        }
        _ => return Err(merge_error()),
    }
    Ok(())
}

fn syntax_error(e: &ScanError) -> Error {
    Error::YamlSyntax {
        line: e.marker().line(),
        column: e.marker().col() + 1,
        message: e.info().to_string(),
    }
}

fn key_error(at: Marker) -> Error {
    Error::YamlKey {
        line: at.line(),
        column: at.col() + 1,
    }
}

/// The core-schema name of a tag (`str` for `!!str`), if it is one.
fn core_tag(tag: &Tag) -> Option<&str> {
    match tag.handle.as_str() {
        "!!" | "tag:yaml.org,2002:" => Some(tag.suffix.as_str()),
        _ => None,
    }
}

/// Decodes one scalar as go-yaml v2's `decoder.scalar` does into an
/// `interface{}`.
fn decode_scalar(
    text: &str,
    style: ScalarStyle,
    tag: Option<&Tag>,
    at: Marker,
) -> Result<Scalar, Error> {
    let Some(tag) = tag else {
        return Ok(if style == ScalarStyle::Plain {
            from_resolved(resolve_plain(text), text)
        } else {
            Scalar::Str(text.to_string())
        });
    };
    let wanted = match core_tag(tag) {
        Some(name @ ("int" | "float" | "bool" | "null" | "timestamp")) => name,
        Some("binary") => {
            return Ok(Scalar::Str(
                decode_base64(text).ok_or_else(|| tag_error(tag, at))?,
            ));
        }
        // `!!str`, collection tags on a scalar, and local tags (`!foo`)
        // all leave the text a string.
        _ => return Ok(Scalar::Str(text.to_string())),
    };
    let resolved = resolve_plain(text);
    let matches = matches!(
        (&resolved, wanted),
        (
            Resolved::Int(_) | Resolved::Uint(_) | Resolved::BigInt(_),
            "int" | "float"
        ) | (Resolved::Float(_), "float")
            | (Resolved::Bool(_), "bool")
            | (Resolved::Null, "null")
            | (Resolved::Timestamp, "timestamp")
    );
    if !matches {
        return Err(tag_error(tag, at));
    }
    Ok(from_resolved(resolved, text))
}

fn tag_error(tag: &Tag, at: Marker) -> Error {
    Error::YamlTag {
        tag: format!("{}{}", tag.handle, tag.suffix),
        line: at.line(),
        column: at.col() + 1,
    }
}

fn from_resolved(resolved: Resolved, text: &str) -> Scalar {
    match resolved {
        Resolved::Null => Scalar::Null,
        Resolved::Bool(b) => Scalar::Bool(b),
        Resolved::Int(i) => Scalar::Int(i),
        Resolved::Uint(u) => Scalar::Uint(u),
        Resolved::BigInt(f) => Scalar::Big(f),
        Resolved::Float(f) => Scalar::Float(f),
        Resolved::Merge => Scalar::Merge,
        Resolved::Timestamp | Resolved::Str => Scalar::Str(text.to_string()),
    }
}

/// The value a scalar becomes after the trip through JSON: numbers are
/// floats (or integers that fit an `int64`, with [`Numbers::Integers`]),
/// and JSON refuses non-finite ones.
fn scalar_value(scalar: &Scalar, text: &str, at: Marker, numbers: Numbers) -> Result<Value, Error> {
    let not_finite = || Error::YamlNotFinite {
        text: text.to_string(),
        line: at.line(),
        column: at.col() + 1,
    };
    Ok(match scalar {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(*b),
        Scalar::Int(i) if numbers == Numbers::Integers => Value::Int(*i),
        Scalar::Uint(u) if numbers == Numbers::Integers => {
            i64::try_from(*u).map_or(Value::Float(*u as f64), Value::Int)
        }
        Scalar::Int(i) => Value::Float(*i as f64),
        Scalar::Uint(u) => Value::Float(*u as f64),
        Scalar::Big(f) if f.is_finite() => Value::Float(*f),
        Scalar::Big(_) => return Err(not_finite()),
        Scalar::Float(f) if f.is_finite() => Value::Float(*f),
        Scalar::Float(_) => return Err(not_finite()),
        Scalar::Str(s) => Value::String(s.clone()),
        // A `<<` in value position is the string "<<".
        Scalar::Merge => Value::String("<<".to_string()),
    })
}

/// The map key a scalar becomes (`sigs.k8s.io/yaml`'s key conversion), or
/// `Err` for the kinds it refuses (null, uint64 and big integers).
fn scalar_key(scalar: &Scalar) -> Result<KeyOrMerge, ()> {
    let key = match scalar {
        Scalar::Str(s) => s.clone(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Bool(b) => b.to_string(),
        Scalar::Float(f) => float32_key(*f),
        Scalar::Merge => return Ok(KeyOrMerge::Merge),
        Scalar::Null | Scalar::Uint(_) | Scalar::Big(_) => return Err(()),
    };
    Ok(KeyOrMerge::Key(key))
}

/// `strconv.FormatFloat(f, 'g', -1, 32)` with go-yaml's names for the
/// non-finite values, as `sigs.k8s.io/yaml` formats float keys.
fn float32_key(f: f64) -> String {
    if f.is_nan() {
        return ".nan".to_string();
    }
    let single = f as f32;
    if single.is_infinite() {
        return if single > 0.0 { ".inf" } else { "-.inf" }.to_string();
    }
    // The shortest digits that round-trip through float32, printed in
    // Go's %g layout.
    let shortest: f64 = format!("{single:e}").parse().unwrap_or(f);
    format_go_float(shortest)
}

/// Standard base64 (with padding, line breaks ignored) as Go's
/// `base64.StdEncoding.DecodeString` reads a `!!binary` scalar; bytes that
/// are not UTF-8 become U+FFFD, as `encoding/json` writes them.
fn decode_base64(text: &str) -> Option<String> {
    let mut bits: u32 = 0;
    let mut bit_count = 0;
    let mut out = Vec::new();
    let body = text.trim_end_matches(|c: char| c == '=' || c.is_ascii_whitespace());
    for c in body.chars().filter(|c| !matches!(c, '\n' | '\r')) {
        let sextet = match c {
            'A'..='Z' => c as u32 - 'A' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 26,
            '0'..='9' => c as u32 - '0' as u32 + 52,
            '+' => 62,
            '/' => 63,
            _ => return None,
        };
        bits = (bits << 6) | sextet;
        bit_count += 6;
        if bit_count >= 8 {
            bit_count -= 8;
            out.push((bits >> bit_count) as u8);
            bits &= (1 << bit_count) - 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::test_support::{map, s};

    /// A fuzz finding (`cargo xtask fuzz`, target `helm_yaml`): 41 bytes
    /// with lone `\r` line breaks, which the parser counts as lines and the
    /// tab fix did not, so it "fixed" another line and met the same error
    /// again until its byte budget ran out (seconds, for 41 bytes).
    #[test]
    fn a_fix_that_changes_nothing_ends_the_retries_at_once() {
        let text = "[![\nN:\r-'NN*!.[![\nN:\t-'NN*!m![\nN:\t-',,4\t:";
        let started = std::time::Instant::now();
        for _ in 0..20 {
            let err = parse_yaml_documents(text).map(|_| ()).unwrap_err();
            assert!(matches!(err, Error::YamlSyntax { .. }), "{err}");
            assert!(parse_values(text).is_err());
            assert!(parse_manifest_documents(text).is_err());
        }
        // Sixty parses with a few retries each: far under a second even
        // unoptimised; before, each took about a second.
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn a_tab_after_a_colon_is_fixed_on_the_line_the_parser_means_with_lone_cr_breaks() {
        let v = parse_yaml("a:\tb\rc:\td\r\ne:\tf\n").unwrap();
        let Value::Map(m) = v else {
            panic!("not a map: {v:?}");
        };
        assert_eq!(m.get("a"), Some(&Value::String("b".into())));
        assert_eq!(m.get("c"), Some(&Value::String("d".into())));
        assert_eq!(m.get("e"), Some(&Value::String("f".into())));
    }

    #[test]
    fn manifests_keep_integers_and_read_yaml_1_1() {
        let docs = parse_manifest_documents(
            "a: 0644\nb: yes\nc: on\nd: 1e3\ne: 9007199254740993\nf: '0644'\ng: 0x1F\n---\nh: 1\n",
        )
        .unwrap();
        assert_eq!(
            docs[0],
            map(&[
                ("a", Value::Int(420)),
                ("b", Value::Bool(true)),
                ("c", Value::Bool(true)),
                ("d", Value::Float(1000.0)),
                ("e", Value::Int(9_007_199_254_740_993)),
                ("f", Value::String("0644".into())),
                ("g", Value::Int(31)),
            ])
        );
        assert_eq!(docs[1], map(&[("h", Value::Int(1))]));
    }

    #[test]
    fn every_number_is_a_float() {
        let v =
            parse_yaml("a: 3\nb: 1.5\nc: 0x10\nd: -7\ne: 1e3\nf: 18446744073709551615\n").unwrap();
        assert_eq!(
            v,
            map(&[
                ("a", Value::Float(3.0)),
                ("b", Value::Float(1.5)),
                ("c", Value::Float(16.0)),
                ("d", Value::Float(-7.0)),
                ("e", Value::Float(1000.0)),
                ("f", Value::Float(18446744073709551615.0)),
            ])
        );
    }

    #[test]
    fn yaml_1_1_booleans_and_nulls_resolve_like_go_yaml_v2() {
        let v = parse_yaml(
            "a: yes\nb: Off\nc: y\nd: N\ne: ~\nf:\ng: NULL\nh: 'yes'\ni: \"null\"\nj: yES\n",
        )
        .unwrap();
        assert_eq!(
            v,
            map(&[
                ("a", Value::Bool(true)),
                ("b", Value::Bool(false)),
                ("c", Value::Bool(true)),
                ("d", Value::Bool(false)),
                ("e", Value::Null),
                ("f", Value::Null),
                ("g", Value::Null),
                ("h", s("yes")),
                ("i", s("null")),
                ("j", s("yES")),
            ])
        );
    }

    #[test]
    fn quoted_and_block_scalars_stay_strings() {
        let text = "a: '3'\nb: \"1.5\"\nc: |\n  line1\n  line2\nd: |-\n  x\ne: >\n  folded\n  text\n\nf: |+\n  keep\n\ng: 2001-12-14\n";
        let v = parse_yaml(text).unwrap();
        assert_eq!(
            v,
            map(&[
                ("a", s("3")),
                ("b", s("1.5")),
                ("c", s("line1\nline2\n")),
                ("d", s("x")),
                ("e", s("folded text\n")),
                ("f", s("keep\n\n")),
                ("g", s("2001-12-14")),
            ])
        );
    }

    #[test]
    fn non_string_keys_become_strings() {
        let v = parse_yaml("1: a\n1.5: b\ntrue: c\non: d\n0x10: e\n0.1: f\n1e6: g\n").unwrap();
        assert_eq!(
            v,
            map(&[
                ("1", s("a")),
                ("1.5", s("b")),
                ("true", s("d")),
                ("16", s("e")),
                ("0.1", s("f")),
                ("1e+06", s("g")),
            ])
        );
    }

    #[test]
    fn yaml_1_1_boolean_keys_become_true_and_false() {
        // go-yaml v2 reads the key `y` as a boolean, so Helm sees "true".
        let v = parse_yaml("y: 1\nn: 2\n'y': 3\n").unwrap();
        assert_eq!(
            v,
            map(&[
                ("false", Value::Float(2.0)),
                ("true", Value::Float(1.0)),
                ("y", Value::Float(3.0))
            ])
        );
    }

    #[test]
    fn keys_json_cannot_hold_are_errors() {
        assert!(matches!(
            parse_yaml("~: a\n"),
            Err(Error::YamlKey { line: 1, column: 1 })
        ));
        assert!(matches!(
            parse_yaml("? [a]\n: b\n"),
            Err(Error::YamlKey { .. })
        ));
        assert!(matches!(
            parse_yaml("18446744073709551615: a\n"),
            Err(Error::YamlKey { .. })
        ));
    }

    #[test]
    fn anchors_aliases_and_merge_keys() {
        let text = "base: &b\n  x: 1\n  w: 2\nother:\n  <<: *b\n  w: 3\nlate:\n  w: 9\n  <<: *b\nlist: [*b]\nmulti:\n  <<: [{x: 1}, {x: 2, z: 3}]\nscalar: &s hi\nref: *s\n";
        let v = parse_yaml(text).unwrap();
        let b = map(&[("w", Value::Float(2.0)), ("x", Value::Float(1.0))]);
        assert_eq!(v.as_map().unwrap()["base"], b);
        assert_eq!(
            v.as_map().unwrap()["other"],
            map(&[("w", Value::Float(3.0)), ("x", Value::Float(1.0))])
        );
        // go-yaml v2: the merged map overwrites keys written before `<<`.
        assert_eq!(v.as_map().unwrap()["late"], b);
        assert_eq!(v.as_map().unwrap()["list"], Value::List(vec![b.clone()]));
        assert_eq!(
            v.as_map().unwrap()["multi"],
            map(&[("x", Value::Float(1.0)), ("z", Value::Float(3.0))])
        );
        assert_eq!(v.as_map().unwrap()["ref"], s("hi"));
    }

    #[test]
    fn quoted_merge_key_is_an_ordinary_key() {
        let v = parse_yaml("'<<': {a: 1}\n").unwrap();
        assert_eq!(v, map(&[("<<", map(&[("a", Value::Float(1.0))]))]));
    }

    #[test]
    fn bad_merge_values_are_errors() {
        assert!(matches!(
            parse_yaml("a:\n  <<: 3\n"),
            Err(Error::YamlMerge { line: 2, column: 3 })
        ));
        assert!(matches!(
            parse_yaml("a:\n  <<: [1]\n"),
            Err(Error::YamlMerge { .. })
        ));
    }

    #[test]
    fn empty_input_is_an_empty_map_and_null_is_null() {
        assert_eq!(parse_yaml("").unwrap(), Value::Map(Map::new()));
        assert_eq!(
            parse_yaml("# only a comment\n").unwrap(),
            Value::Map(Map::new())
        );
        assert_eq!(parse_yaml("null\n").unwrap(), Value::Null);
        assert_eq!(parse_values("null\n").unwrap(), Map::new());
        assert_eq!(parse_values("---\n").unwrap(), Map::new());
        assert_eq!(parse_values("").unwrap(), Map::new());
        assert_eq!(
            parse_values("a: {b: 1, c: 2}\n---\na: {b: 3}\nd: 4\n---\n").unwrap(),
            match parse_yaml("a: {b: 3, c: 2}\nd: 4\n").unwrap() {
                Value::Map(m) => m,
                _ => unreachable!(),
            }
        );
        assert!(matches!(
            parse_values("a: 1\n---\n- x\n"),
            Err(Error::NotAMap { index: 1, .. })
        ));
        assert!(matches!(
            parse_values("- a\n"),
            Err(Error::NotAMap { found: "slice", .. })
        ));
    }

    #[test]
    fn only_the_first_document_is_read() {
        assert_eq!(
            parse_yaml("a: 1\n---\nb: [\n").unwrap(),
            map(&[("a", Value::Float(1.0))])
        );
        let docs = parse_yaml_documents("a: 1\n---\n---\n- x\n").unwrap();
        assert_eq!(
            docs,
            vec![
                map(&[("a", Value::Float(1.0))]),
                Value::Null,
                Value::List(vec![s("x")])
            ]
        );
        assert!(parse_yaml_documents("").unwrap().is_empty());
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        match parse_yaml("a: 1\nb: [1, 2\n") {
            Err(Error::YamlSyntax { line, .. }) => assert!(line >= 2),
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            parse_yaml("a: *nope\n"),
            Err(Error::YamlSyntax { .. } | Error::YamlUnknownAnchor { .. })
        ));
    }

    #[test]
    fn infinities_cannot_cross_json() {
        assert!(matches!(
            parse_yaml("a: .inf\n"),
            Err(Error::YamlNotFinite {
                line: 1,
                column: 4,
                ..
            })
        ));
        assert!(matches!(
            parse_yaml("a: .NaN\n"),
            Err(Error::YamlNotFinite { .. })
        ));
        // Too large for float64 and not an integer form: a string, as Go's
        // ParseFloat fails and go-yaml falls back to !!str.
        assert_eq!(parse_yaml("a: 1e400\n").unwrap(), map(&[("a", s("1e400"))]));
    }

    #[test]
    fn tags_are_honoured() {
        let v = parse_yaml(
            "a: !!str 3\nb: !!int \"7\"\nc: !!float 2\nd: !custom 5\ne: !!binary aGVsbG8=\n",
        )
        .unwrap();
        assert_eq!(
            v,
            map(&[
                ("a", s("3")),
                ("b", Value::Float(7.0)),
                ("c", Value::Float(2.0)),
                ("d", s("5")),
                ("e", s("hello")),
            ])
        );
        assert!(matches!(
            parse_yaml("a: !!int abc\n"),
            Err(Error::YamlTag { .. })
        ));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(matches!(
            parse_yaml(&deep),
            Err(Error::YamlTooDeep {
                limit: MAX_DEPTH,
                ..
            })
        ));
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse_yaml(&ok).is_ok());
        let huge = "a: ".to_string() + &"[".repeat(100_000);
        assert!(parse_yaml(&huge).is_err());
    }

    #[test]
    fn aliases_cannot_nest_past_the_depth_limit() {
        let half = MAX_DEPTH / 2 + 1;
        let text = format!(
            "a: &x {}1{}\nb: {}*x{}\n",
            "[".repeat(half),
            "]".repeat(half),
            "[".repeat(half),
            "]".repeat(half)
        );
        assert!(matches!(parse_yaml(&text), Err(Error::YamlTooDeep { .. })));
    }

    #[test]
    fn billion_laughs_is_refused() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        assert!(matches!(
            parse_yaml(&text),
            Err(Error::YamlAliasExpansion { .. })
        ));
    }

    #[test]
    fn crlf_bom_and_bad_escapes() {
        assert_eq!(
            parse_yaml("a: 1\r\nb: x\r\n").unwrap(),
            map(&[("a", Value::Float(1.0)), ("b", s("x"))])
        );
        assert_eq!(
            parse_yaml("\u{FEFF}a: 1\n").unwrap(),
            map(&[("a", Value::Float(1.0))])
        );
        assert!(matches!(
            parse_yaml("a: \"\\q\"\n"),
            Err(Error::YamlSyntax { line: 1, .. })
        ));
        assert!(matches!(
            parse_yaml("a:\n\t- b\n"),
            Err(Error::YamlSyntax { .. })
        ));
    }

    #[test]
    fn a_tab_after_a_colon_separates_as_in_go_yaml() {
        assert_eq!(
            parse_yaml("a:\tb\nc:\t\t1\n").unwrap(),
            map(&[("a", s("b")), ("c", Value::Float(1.0))])
        );
        assert_eq!(
            parse_yaml("x: \"k:\\tv\"\nd: |\n  p:\tq\n").unwrap(),
            map(&[("d", s("p:\tq\n")), ("x", s("k:\tv"))])
        );
        let some = (0..300).map(|i| format!("k{i}:\tv\n")).collect::<String>();
        assert_eq!(parse_yaml(&some).unwrap().as_map().map(Map::len), Some(300));
        // Each fix parses the document again; the work is bounded.
        let many = (0..4000).map(|i| format!("k{i}:\tv\n")).collect::<String>();
        assert!(parse_yaml(&many).is_err());
    }

    fn list(items: &[&str]) -> Value {
        Value::List(items.iter().map(|i| s(i)).collect())
    }

    #[test]
    fn a_flow_sequence_may_close_at_its_keys_column_as_in_go_yaml() {
        // go-yaml v2 (libyaml) has no indentation rule inside flow
        // collections: the `]` may sit at the key's column or left of it.
        let text = "controller:\n  args: [\n    \"--a\",\n    \"--b=1\"\n  ]\n  port: 80\n";
        assert_eq!(
            parse_yaml(text).unwrap(),
            map(&[(
                "controller",
                map(&[
                    ("args", list(&["--a", "--b=1"])),
                    ("port", Value::Float(80.0))
                ])
            )])
        );
        let text = "a:\n  list: [ x,\n  why,\n]\n  b: 1\nc: [\n\"z\"\n,w]\n";
        assert_eq!(
            parse_yaml(text).unwrap(),
            map(&[
                (
                    "a",
                    map(&[("b", Value::Float(1.0)), ("list", list(&["x", "why"]))])
                ),
                ("c", list(&["z", "w"])),
            ])
        );
        // A trailing comma, as libyaml allows, and entries left of the key.
        let text = "top:\n  nested:\n    args: [\n\"-v\",\n  \"-q\",\n    ]\n";
        assert_eq!(
            parse_yaml(text).unwrap(),
            map(&[(
                "top",
                map(&[("nested", map(&[("args", list(&["-v", "-q"]))]))])
            )])
        );
    }

    #[test]
    fn flow_mappings_and_quoted_scalars_span_lines_as_in_go_yaml() {
        let text = "resources: {\n  limits: { cpu: 1 },\nrequests: {memory: 2Gi}\n}\n";
        assert_eq!(
            parse_yaml(text).unwrap(),
            map(&[(
                "resources",
                map(&[
                    ("limits", map(&[("cpu", Value::Float(1.0))])),
                    ("requests", map(&[("memory", s("2Gi"))])),
                ])
            )])
        );
        // Continuation lines of quoted scalars fold, wherever they start.
        let text = "a:\n  b: \"one\ntwo\"\n  c: 'x\n\n  y'\n  d: [\"p\nq\"]\n";
        assert_eq!(
            parse_yaml(text).unwrap(),
            map(&[(
                "a",
                map(&[("b", s("one two")), ("c", s("x\ny")), ("d", list(&["p q"]))])
            )])
        );
        let docs = parse_manifest_documents("x: [\n1,\n2\n]\n---\ny: {\nk: v}\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(
            docs[0],
            map(&[("x", Value::List(vec![Value::Int(1), Value::Int(2)]))])
        );
    }

    #[test]
    fn indentation_errors_go_yaml_reports_stay_errors() {
        for bad in [
            // A block mapping key out of line ("did not find expected key").
            "a:\n  b: 1\n c: 2\n",
            // A flow sequence that never closes.
            "a: [1, 2\nb: 3\n",
            // A document marker inside a quoted scalar.
            "a: \"x\n---\ny\"\n",
            // A flow collection that closes twice.
            "a: [1]\n]\n",
            // Block sequence entries inside a flow sequence.
            "a: [\n- 1\n]\n",
        ] {
            assert!(
                matches!(parse_yaml(bad), Err(Error::YamlSyntax { .. })),
                "{bad:?} parsed: {:?}",
                parse_yaml(bad)
            );
        }
    }

    #[test]
    fn duplicate_keys_keep_the_last() {
        assert_eq!(
            parse_yaml("a: 1\na: 2\n").unwrap(),
            map(&[("a", Value::Float(2.0))])
        );
    }
}
