//! YAML printing as Helm's `toYaml` does it: `sigs.k8s.io/yaml.Marshal`,
//! which writes the value as JSON, reads that JSON back with go-yaml v2
//! (so whole floats become integers again) and prints it with go-yaml v2's
//! emitter, a port of libyaml.
//!
//! This file follows that emitter closely (its indentation stack, column
//! tracking, scalar analysis and style choice) because the byte-exact
//! output is the contract: block style, two-space indentation, list items
//! at their parent key's indentation, keys in go-yaml's "natural" order,
//! strings quoted only when they would read back as something else, and
//! long plain or quoted strings folded after column 80.

use super::json::go_json_float;
use super::resolve::{Resolved, is_base60_float, parse_go_int, parse_go_uint, resolve_plain};
use super::{Error, Map, Value};

/// The column after which go-yaml v2 folds long strings (`best_width`).
const BEST_WIDTH: usize = 80;
/// Spaces per indentation level (`best_indent`).
const BEST_INDENT: i32 = 2;
/// Keys longer than this many bytes are written as `? key` (libyaml's
/// simple-key limit).
const MAX_SIMPLE_KEY_BYTES: usize = 128;
/// The deepest nesting printed; deeper values are refused rather than
/// risking the stack.
pub const MAX_EMIT_DEPTH: usize = 1000;

/// Go's `sigs.k8s.io/yaml.Marshal(value)`, exactly, including its final
/// newline: `a: 1\nb:\n- x\n`.
///
/// Helm's `toYaml` trims that final newline (`strings.TrimSuffix(s,
/// "\n")`); [`to_yaml_trimmed`] does the same. Like `toYaml`, this returns
/// an empty string when the value cannot be marshalled (a NaN or infinite
/// float, or nesting deeper than [`MAX_EMIT_DEPTH`]); [`try_to_yaml`]
/// reports the reason.
///
/// Numbers print as `encoding/json` would and go-yaml then re-reads them:
/// a whole float within the 64-bit integer range prints as an integer
/// (`3`, `1000000`), others in Go's `%g` style (`1.5`, `1e+21`, `1e-07`).
pub fn to_yaml(value: &Value) -> String {
    try_to_yaml(value).unwrap_or_default()
}

/// What Helm's `toYaml` prints: [`to_yaml`] without its final newline.
pub fn to_yaml_trimmed(value: &Value) -> String {
    let mut out = to_yaml(value);
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

/// [`to_yaml`] that reports why a value cannot be printed, as Helm's
/// `mustToYaml` does.
///
/// # Errors
///
/// [`Error::JsonNotFinite`] for a NaN or infinite float (the JSON step
/// fails in Go too), [`Error::YamlOutputTooDeep`] past [`MAX_EMIT_DEPTH`].
pub fn try_to_yaml(value: &Value) -> Result<String, Error> {
    let mut emitter = Emitter::new();
    emitter.node(value, Context::PLAIN, 0)?;
    // Document end: go-yaml ends the last line.
    emitter.write_indent();
    Ok(emitter.out)
}

/// Where a node sits, as the emitter's `*_context` flags record it.
#[derive(Clone, Copy)]
struct Context {
    /// The node is a mapping key or value (lists there may be indentless).
    mapping: bool,
    /// The node is a simple key (no folding, no block scalar).
    simple_key: bool,
}

impl Context {
    /// The document root or a list item.
    const PLAIN: Context = Context {
        mapping: false,
        simple_key: false,
    };
    const MAPPING_VALUE: Context = Context {
        mapping: true,
        simple_key: false,
    };
    const SIMPLE_KEY: Context = Context {
        mapping: true,
        simple_key: true,
    };
}

/// The scalar styles go-yaml picks between.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// What libyaml's `yaml_emitter_analyze_scalar` learns about a scalar.
#[derive(Debug, Clone, Copy)]
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

struct Emitter {
    out: String,
    /// Current column, in characters.
    column: usize,
    indent: i32,
    indents: Vec<i32>,
    whitespace: bool,
    indention: bool,
}

impl Emitter {
    fn new() -> Self {
        Emitter {
            out: String::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
        }
    }

    fn node(&mut self, value: &Value, ctx: Context, depth: usize) -> Result<(), Error> {
        if depth > MAX_EMIT_DEPTH {
            return Err(Error::YamlOutputTooDeep {
                limit: MAX_EMIT_DEPTH,
            });
        }
        if let Some(text) = value.version_text() {
            // A semver version marshals as its string (`MarshalJSON`).
            self.scalar(text, requested_string_style(text), ctx);
            return Ok(());
        }
        match value {
            Value::Null => self.scalar("null", Style::Plain, ctx),
            Value::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain, ctx),
            Value::Int(i) => self.scalar(&i.to_string(), Style::Plain, ctx),
            Value::Float(f) => self.scalar(&yaml_number(*f)?, Style::Plain, ctx),
            Value::String(s) => self.scalar(s, requested_string_style(s), ctx),
            Value::List(items) if items.is_empty() => self.empty_flow("[", "]"),
            // A typed nil map marshals as JSON's `null` (see `NIL_MAP_KEY`).
            Value::Map(map) if super::is_nil_map(map) => self.scalar("null", Style::Plain, ctx),
            Value::Map(map) if map.is_empty() => self.empty_flow("{", "}"),
            Value::List(items) => self.block_sequence(items, ctx, depth)?,
            Value::Map(map) => self.block_mapping(map, depth)?,
        }
        Ok(())
    }

    fn block_sequence(&mut self, items: &[Value], ctx: Context, depth: usize) -> Result<(), Error> {
        self.increase_indent(false, ctx.mapping && !self.indention);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, Context::PLAIN, depth + 1)?;
        }
        self.pop_indent();
        Ok(())
    }

    fn block_mapping(&mut self, map: &Map, depth: usize) -> Result<(), Error> {
        self.increase_indent(false, false);
        for key in sorted_keys(map) {
            self.write_indent();
            let analysis = analyze(key);
            if !analysis.multiline && key.len() <= MAX_SIMPLE_KEY_BYTES {
                self.scalar(key, requested_string_style(key), Context::SIMPLE_KEY);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.scalar(key, requested_string_style(key), Context::MAPPING_VALUE);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(&map[key], Context::MAPPING_VALUE, depth + 1)?;
        }
        self.pop_indent();
        Ok(())
    }

    /// An empty list or map, which libyaml always writes in flow style.
    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    fn scalar(&mut self, text: &str, requested: Style, ctx: Context) {
        let analysis = analyze(text);
        let style = select_style(requested, &analysis, ctx.simple_key, text.is_empty());
        self.increase_indent(true, false);
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.write_plain(text, allow_breaks),
            Style::SingleQuoted => self.write_single_quoted(text, allow_breaks),
            Style::DoubleQuoted => self.write_double_quoted(text, allow_breaks),
            Style::Literal => self.write_literal(text),
        }
        self.pop_indent();
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// libyaml's `write_break`: a `\n` starts a new line; other line
    /// breaks are copied as they are and also reset the column.
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn write_plain(&mut self, text: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        self.write_folding(text, allow_breaks, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted(&mut self, text: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        self.write_folding(text, allow_breaks, true);
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// The body of a plain or single-quoted scalar: a space past column 80
    /// becomes a line break (never the first or last character inside
    /// quotes, never before another space), and quotes double inside
    /// single quotes.
    fn write_folding(&mut self, text: &str, allow_breaks: bool, quoted: bool) {
        let chars: Vec<char> = text.chars().collect();
        let mut spaces = false;
        let mut breaks = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_is_space = chars.get(i + 1) == Some(&' ');
                let inside = !quoted || (i > 0 && i + 1 < chars.len());
                if allow_breaks && !spaces && self.column > BEST_WIDTH && inside && !next_is_space {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if quoted && c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
    }

    fn write_double_quoted(&mut self, text: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = text.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || c == '\u{FEFF}' || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                self.write_escape(c);
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// The part of a double-quoted escape after the backslash.
    fn write_escape(&mut self, c: char) {
        let short = match c {
            '\0' => Some('0'),
            '\u{7}' => Some('a'),
            '\u{8}' => Some('b'),
            '\t' => Some('t'),
            '\n' => Some('n'),
            '\u{b}' => Some('v'),
            '\u{c}' => Some('f'),
            '\r' => Some('r'),
            '\u{1b}' => Some('e'),
            '"' => Some('"'),
            '\\' => Some('\\'),
            '\u{85}' => Some('N'),
            '\u{a0}' => Some('_'),
            '\u{2028}' => Some('L'),
            '\u{2029}' => Some('P'),
            _ => None,
        };
        if let Some(letter) = short {
            self.put(letter);
            return;
        }
        let code = c as u32;
        let (letter, width) = if code <= 0xFF {
            ('x', 2)
        } else if code <= 0xFFFF {
            ('u', 4)
        } else {
            ('U', 8)
        };
        self.put(letter);
        for k in (0..width).rev() {
            let digit = (code >> (k * 4)) & 0xF;
            self.put(
                char::from_digit(digit, 16)
                    .unwrap_or('0')
                    .to_ascii_uppercase(),
            );
        }
    }

    fn write_literal(&mut self, text: &str) {
        self.write_indicator("|", true, false, false);
        self.write_block_scalar_hints(text);
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in text.chars() {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }

    /// The indentation hint (`|2`) when the text starts with a space or a
    /// line break, and the chomping hint: `-` without a final line break,
    /// `+` with more than one (or when the text is only a break).
    fn write_block_scalar_hints(&mut self, text: &str) {
        let mut chars = text.chars();
        if text.starts_with(|c: char| c == ' ' || is_break(c)) {
            let hint = char::from_digit(BEST_INDENT as u32, 10).unwrap_or('2');
            self.write_indicator(&hint.to_string(), false, false, false);
        }
        let last = chars.next_back();
        let chomp = match last {
            None => Some("-"),
            Some(c) if !is_break(c) => Some("-"),
            Some(_) => match chars.next_back() {
                None => Some("+"),
                Some(c) if is_break(c) => Some("+"),
                Some(_) => None,
            },
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
    }
}

/// The number text go-yaml prints for a float after the JSON round trip:
/// `encoding/json`'s digits, re-read by go-yaml as an integer when they
/// fit 64 bits, else as a float printed in `%g` style.
fn yaml_number(f: f64) -> Result<String, Error> {
    let json = go_json_float(f).ok_or(Error::JsonNotFinite)?;
    if let Ok(i) = parse_go_int(&json, 0) {
        return Ok(i.to_string());
    }
    if let Ok(u) = parse_go_uint(&json, 0) {
        return Ok(u.to_string());
    }
    Ok(super::format_go_float(f))
}

/// go-yaml v2's `stringv`: a string with a line break asks for a literal
/// block; one that reads back as itself plainly asks for plain; anything
/// else (`"true"`, `"1"`, `""`, `"2001-12-14"`, `"1:20"`) double quotes.
fn requested_string_style(s: &str) -> Style {
    if s.contains('\n') {
        return Style::Literal;
    }
    if resolve_plain(s) == Resolved::Str && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::DoubleQuoted
    }
}

/// libyaml's `yaml_emitter_select_scalar_style` for block context.
fn select_style(requested: Style, analysis: &Analysis, simple_key: bool, empty: bool) -> Style {
    let mut style = requested;
    if simple_key && analysis.multiline {
        style = Style::DoubleQuoted;
    }
    if style == Style::Plain && (!analysis.block_plain_allowed || (empty && simple_key)) {
        style = Style::SingleQuoted;
    }
    if style == Style::SingleQuoted && !analysis.single_quoted_allowed {
        style = Style::DoubleQuoted;
    }
    if style == Style::Literal && (!analysis.block_allowed || simple_key) {
        style = Style::DoubleQuoted;
    }
    style
}

/// libyaml's `is_printable` with the emitter in unicode mode.
fn is_printable(c: char) -> bool {
    matches!(c, '\n' | ' '..='~' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
        && c != '\u{FEFF}'
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// libyaml's `yaml_emitter_analyze_scalar`, reduced to the flags block
/// context uses.
fn analyze(text: &str) -> Analysis {
    if text.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut chars = text.chars().peekable();
    let mut block_indicators = text.starts_with("---") || text.starts_with("...");
    let mut line_breaks = false;
    let mut special_characters = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut preceded_by_whitespace = true;
    let mut previous_space = false;
    let mut previous_break = false;
    let mut i = 0;
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let followed_by_whitespace = next.is_none_or(is_blank);
        let last = next.is_none();
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => {
                    block_indicators = true;
                }
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special_characters = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= last;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blank(c) || is_break(c) || c == '\0';
        i += 1;
    }
    let mut analysis = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space
        || leading_break
        || trailing_space
        || trailing_break
        || line_breaks
        || block_indicators
    {
        analysis.block_plain_allowed = false;
    }
    if trailing_space {
        analysis.block_allowed = false;
    }
    if break_space {
        analysis.block_plain_allowed = false;
        analysis.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        analysis.block_plain_allowed = false;
        analysis.single_quoted_allowed = false;
        analysis.block_allowed = false;
    }
    analysis
}

/// A map's keys in go-yaml's order (its `keyList.Less`): runs of digits
/// compare by value, a non-letter sorts before a letter, letters by code
/// point. Sorted with a merge sort of our own, because that order is not
/// guaranteed to be total for odd keys and the standard sort may panic on
/// such a comparator.
fn sorted_keys(map: &Map) -> Vec<&str> {
    let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
    let mut scratch = Vec::with_capacity(keys.len());
    merge_sort(&mut keys, &mut scratch);
    keys
}

/// A stable top-down merge sort by [`go_yaml_key_less`], in place with one
/// scratch buffer.
fn merge_sort<'a>(keys: &mut [&'a str], scratch: &mut Vec<&'a str>) {
    if keys.len() <= 1 {
        return;
    }
    let mid = keys.len() / 2;
    merge_sort(&mut keys[..mid], scratch);
    merge_sort(&mut keys[mid..], scratch);
    scratch.clear();
    let (left, right) = keys.split_at(mid);
    let (mut l, mut r) = (0, 0);
    while l < left.len() && r < right.len() {
        if go_yaml_key_less(right[r], left[l]) {
            scratch.push(right[r]);
            r += 1;
        } else {
            scratch.push(left[l]);
            l += 1;
        }
    }
    scratch.extend_from_slice(&left[l..]);
    scratch.extend_from_slice(&right[r..]);
    keys.copy_from_slice(scratch);
}

/// go-yaml v2's `keyList.Less` for two string keys, which compares runes:
/// ASCII keys (almost all) are compared as bytes, without decoding.
pub(crate) fn go_yaml_key_less(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return key_less(a.as_bytes(), b.as_bytes());
    }
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    key_less(&ar, &br)
}

/// A rune of a key: a `char`, or an ASCII byte.
trait Rune: Copy + PartialOrd {
    fn char(self) -> char;
}

impl Rune for char {
    fn char(self) -> char {
        self
    }
}

impl Rune for u8 {
    fn char(self) -> char {
        char::from(self)
    }
}

/// [`go_yaml_key_less`] on the runes of two keys.
fn key_less<R: Rune>(ar: &[R], br: &[R]) -> bool {
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let al = ar[i].char().is_alphabetic();
        let bl = br[i].char().is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0_i64, 0_i64);
        if ar[i].char() == '0' || br[i].char() == '0' {
            let nonzero_before = ar[..i]
                .iter()
                .rev()
                .take_while(|c| c.char().is_ascii_digit())
                .any(|c| c.char() != '0');
            if nonzero_before {
                an = 1;
                bn = 1;
            }
        }
        let ai = digit_run(ar, i, &mut an);
        let bi = digit_run(br, i, &mut bn);
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// Accumulates the digits starting at `from` into `n` (wrapping as Go's
/// int64 does) and returns the index after them.
fn digit_run<R: Rune>(runes: &[R], from: usize, n: &mut i64) -> usize {
    let mut i = from;
    while let Some(d) = runes.get(i).and_then(|c| c.char().to_digit(10)) {
        *n = n.wrapping_mul(10).wrapping_add(i64::from(d));
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::test_support::{map, s};

    fn one(value: Value) -> String {
        to_yaml(&map(&[("v", value)]))
    }

    #[test]
    fn scalars_print_like_go_yaml_marshal() {
        assert_eq!(one(s("hi")), "v: hi\n");
        assert_eq!(one(s("true")), "v: \"true\"\n");
        assert_eq!(one(s("false")), "v: \"false\"\n");
        assert_eq!(one(s("10")), "v: \"10\"\n");
        assert_eq!(one(s("")), "v: \"\"\n");
        assert_eq!(one(s("-")), "v: '-'\n");
        assert_eq!(one(s("<foo>")), "v: <foo>\n");
        assert_eq!(one(s("1:1")), "v: \"1:1\"\n");
        assert_eq!(one(s("\0")), "v: \"\\0\"\n");
        assert_eq!(
            one(s("2015-02-24T18:19:39Z")),
            "v: \"2015-02-24T18:19:39Z\"\n"
        );
        assert_eq!(one(s("b: c")), "v: 'b: c'\n");
        assert_eq!(one(s("Hello #comment")), "v: 'Hello #comment'\n");
        assert_eq!(one(s("你好 #comment")), "v: '你好 #comment'\n");
        assert_eq!(one(s("你好")), "v: 你好\n");
        assert_eq!(one(Value::Null), "v: null\n");
        assert_eq!(one(Value::Bool(true)), "v: true\n");
        assert_eq!(one(Value::Int(-10)), "v: -10\n");
        assert_eq!(one(Value::Float(0.1)), "v: 0.1\n");
        assert_eq!(one(Value::Float(-0.1)), "v: -0.1\n");
    }

    #[test]
    fn strings_that_would_read_back_differently_are_quoted() {
        for text in [
            "yes",
            "No",
            "on",
            "y",
            "N",
            "~",
            "null",
            "1.5",
            "1e3",
            "0x1F",
            "017",
            ".inf",
            "2001-12-14",
            "+1",
            "1_000",
            "<<",
        ] {
            assert_eq!(one(s(text)), format!("v: \"{text}\"\n"), "{text}");
        }
        for text in [
            "yEs",
            "1.2.3",
            "abc",
            "a b",
            "0x",
            "1e",
            "hello-world",
            "x:y",
            "a#b",
            "http://x",
        ] {
            assert_eq!(one(s(text)), format!("v: {text}\n"), "{text}");
        }
        assert_eq!(one(s("*")), "v: '*'\n");
        assert_eq!(one(s("&a")), "v: '&a'\n");
        assert_eq!(one(s("- a")), "v: '- a'\n");
        assert_eq!(one(s("-a")), "v: -a\n");
        assert_eq!(one(s(" lead")), "v: ' lead'\n");
        assert_eq!(one(s("trail ")), "v: 'trail '\n");
        assert_eq!(one(s("a: b")), "v: 'a: b'\n");
        assert_eq!(one(s("{x}")), "v: '{x}'\n");
        assert_eq!(one(s("[x]")), "v: '[x]'\n");
        assert_eq!(one(s("it's")), "v: it's\n");
        assert_eq!(one(s("'q'")), "v: '''q'''\n");
        assert_eq!(one(s("\"q\"")), "v: '\"q\"'\n");
        assert_eq!(one(s("a\tb")), "v: \"a\\tb\"\n");
        assert_eq!(one(s("---")), "v: '---'\n");
        assert_eq!(one(s("@x")), "v: '@x'\n");
        assert_eq!(one(s("%x")), "v: '%x'\n");
        assert_eq!(one(s("😀")), "v: \"\\U0001F600\"\n");
        assert_eq!(one(s("a\u{7f}")), "v: \"a\\x7F\"\n");
    }

    #[test]
    fn multi_line_strings_are_literal_blocks() {
        assert_eq!(one(s("a\nb")), "v: |-\n  a\n  b\n");
        assert_eq!(one(s("a\nb\n")), "v: |\n  a\n  b\n");
        assert_eq!(one(s("a\nb\n\n")), "v: |+\n  a\n  b\n\n");
        assert_eq!(one(s("a\n\nb")), "v: |-\n  a\n\n  b\n");
        assert_eq!(one(s("  a\nb")), "v: |2-\n    a\n  b\n");
        assert_eq!(one(s("\n")), "v: |2+\n\n");
        // A space before a line break, a tab or a trailing space forbid the
        // block style, so the string is double quoted with escapes.
        assert_eq!(one(s("a \nb")), "v: \"a \\nb\"\n");
        assert_eq!(one(s("a\tx\nb")), "v: \"a\\tx\\nb\"\n");
        assert_eq!(one(s("a\nb ")), "v: \"a\\nb \"\n");
        let nested = to_yaml(&map(&[
            ("a", map(&[("b", s("x\ny\n"))])),
            ("c", Value::List(vec![s("p\nq")])),
        ]));
        assert_eq!(nested, "a:\n  b: |\n    x\n    y\nc:\n- |-\n  p\n  q\n");
    }

    #[test]
    fn whole_floats_print_as_integers() {
        assert_eq!(one(Value::Float(3.0)), "v: 3\n");
        assert_eq!(one(Value::Float(1e6)), "v: 1000000\n");
        assert_eq!(one(Value::Float(1e18)), "v: 1000000000000000000\n");
        assert_eq!(one(Value::Float(1e20)), "v: 1e+20\n");
        assert_eq!(one(Value::Float(1e21)), "v: 1e+21\n");
        assert_eq!(one(Value::Float(1.5)), "v: 1.5\n");
        assert_eq!(one(Value::Float(0.000001)), "v: 1e-06\n");
        assert_eq!(one(Value::Float(123456.789)), "v: 123456.789\n");
        assert_eq!(one(Value::Float(-0.0)), "v: 0\n");
        assert_eq!(one(Value::Float(f64::NAN)), "");
        assert_eq!(
            try_to_yaml(&Value::Float(f64::INFINITY)),
            Err(Error::JsonNotFinite)
        );
    }

    #[test]
    fn collections_use_block_style_with_compact_lists() {
        let v = map(&[(
            "v",
            Value::List(vec![
                s("A"),
                Value::Int(1),
                map(&[("B", Value::List(vec![Value::Int(2), Value::Int(3)]))]),
            ]),
        )]);
        assert_eq!(to_yaml(&v), "v:\n- A\n- 1\n- B:\n  - 2\n  - 3\n");
        let v = map(&[
            ("a", map(&[("b", s("c"))])),
            ("e", map(&[])),
            ("l", Value::List(vec![])),
        ]);
        assert_eq!(to_yaml(&v), "a:\n  b: c\ne: {}\nl: []\n");
        let v = Value::List(vec![
            Value::List(vec![s("a"), s("b")]),
            map(&[("x", Value::Int(1)), ("y", map(&[("z", Value::Null)]))]),
            Value::List(vec![]),
            map(&[]),
        ]);
        assert_eq!(
            to_yaml(&v),
            "- - a\n  - b\n- x: 1\n  \"y\":\n    z: null\n- []\n- {}\n"
        );
        assert_eq!(to_yaml(&map(&[])), "{}\n");
        assert_eq!(to_yaml(&Value::List(vec![])), "[]\n");
        assert_eq!(to_yaml(&Value::Null), "null\n");
        assert_eq!(to_yaml(&s("hello")), "hello\n");
        assert_eq!(to_yaml(&s("a\nb")), "|-\n  a\n  b\n");
        assert_eq!(to_yaml_trimmed(&map(&[("a", Value::Int(1))])), "a: 1");
    }

    #[test]
    fn keys_are_quoted_like_values() {
        let v = map(&[
            ("true", Value::Int(1)),
            ("1", Value::Int(2)),
            ("a b", Value::Int(3)),
            ("", Value::Int(4)),
            ("a:", Value::Int(5)),
        ]);
        assert_eq!(
            to_yaml(&v),
            "\"\": 4\n\"1\": 2\na b: 3\n'a:': 5\n\"true\": 1\n"
        );
    }

    #[test]
    fn long_and_multi_line_keys_use_the_complex_form() {
        let long = "k".repeat(129);
        assert_eq!(
            to_yaml(&map(&[(long.as_str(), Value::Int(1))])),
            format!("? {long}\n: 1\n")
        );
        let fits = "k".repeat(128);
        assert_eq!(
            to_yaml(&map(&[(fits.as_str(), Value::Int(1))])),
            format!("{fits}: 1\n")
        );
        assert_eq!(
            to_yaml(&map(&[("a\nb", Value::Int(1))])),
            "? |-\n  a\n  b\n: 1\n"
        );
    }

    #[test]
    fn long_strings_fold_after_column_80() {
        let v = map(&[(
            "a",
            s(
                "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 ",
            ),
        )]);
        assert_eq!(
            to_yaml(&v),
            "a: 'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 abcdefghijklmnopqrstuvwxyz\n  ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 '\n"
        );
        let words = vec!["word"; 30].join(" ");
        let folded = to_yaml(&map(&[("k", s(&words))]));
        let expected_first = format!("k: {}", vec!["word"; 16].join(" "));
        assert_eq!(folded.lines().next().unwrap(), expected_first);
        assert_eq!(
            folded.lines().nth(1).unwrap(),
            format!("  {}", vec!["word"; 14].join(" "))
        );
        // No spaces: nothing to fold at.
        let solid = "x".repeat(200);
        assert_eq!(to_yaml(&map(&[("k", s(&solid))])), format!("k: {solid}\n"));
        // Keys never fold.
        let key = vec!["ab"; 40].join(" ");
        assert_eq!(
            to_yaml(&map(&[(key.as_str(), Value::Int(1))])),
            format!("{key}: 1\n")
        );
    }

    #[test]
    fn double_quoted_strings_fold_with_escaped_spaces() {
        let text = format!("{}\t{}", "a ".repeat(45), " b".repeat(10));
        let out = to_yaml(&map(&[("k", s(&text))]));
        assert!(out.starts_with("k: \"a a a"), "{out}");
        assert!(out.contains("\n  "), "{out}");
        assert!(parse_back(&out, "k") == s(&text), "{out}");
    }

    fn parse_back(yaml: &str, key: &str) -> Value {
        super::super::parse_yaml(yaml).unwrap().as_map().unwrap()[key].clone()
    }

    #[test]
    fn output_reads_back_to_the_same_value() {
        let cases = [
            "plain",
            "with space",
            " lead",
            "trail ",
            "a: b",
            "#x",
            "x #y",
            "\"",
            "'",
            "\\",
            "a\nb",
            "a\n",
            "\n\nx",
            "tab\there",
            "yes",
            "1.0",
            "",
            "long ".repeat(30).as_str().trim_end(),
            "ünïcødé",
            "\r\n",
        ]
        .map(String::from);
        for text in cases {
            let out = to_yaml(&map(&[("k", s(&text))]));
            assert_eq!(
                parse_back(&out, "k"),
                s(&text),
                "{text:?} printed as {out:?}"
            );
        }
    }

    #[test]
    fn keys_sort_in_go_yaml_natural_order() {
        let order = [
            "", ".1", ".2", ".a", "1", "2", "a!10", "a/0001", "a/002", "a/3", "a/10", "a/11",
            "a/0012", "a/100", "a~10", "ab/1", "b/1", "b/01", "b/2", "b/02", "b/3", "b/03", "b1",
            "b01", "b3", "c2.10", "c10.2", "d1", "d7", "d7abc", "d12", "d12a",
        ];
        let m: Map = order
            .iter()
            .map(|k| (k.to_string(), Value::Int(1)))
            .collect();
        assert_eq!(sorted_keys(&m), order.to_vec());
        assert!(go_yaml_key_less("_a", "Zeta"));
        assert!(go_yaml_key_less("Zeta", "alpha"));
        // Non-ASCII keys compare by rune, with the same digit runs.
        assert!(go_yaml_key_less("ü9", "ü10"));
        assert!(!go_yaml_key_less("ü10", "ü9"));
        assert!(go_yaml_key_less("a", "é"));
        assert!(go_yaml_key_less("é1", "éa"));
    }

    #[test]
    fn deep_values_are_refused_not_overflowed() {
        let mut v = Value::Null;
        for _ in 0..(MAX_EMIT_DEPTH + 5) {
            v = Value::List(vec![v]);
        }
        assert_eq!(
            try_to_yaml(&v),
            Err(Error::YamlOutputTooDeep {
                limit: MAX_EMIT_DEPTH
            })
        );
        assert_eq!(to_yaml(&v), "");
    }
}
