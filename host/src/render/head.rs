//! The head of a rendered manifest: what Helm's `SortManifests` reads of
//! each document (`apiVersion`, `kind`, `metadata.name` and the
//! `helm.sh/hook` annotations) to sort it and to tell hooks apart.
//!
//! Helm parses every document in full for this, and so must we: a
//! document that is not valid YAML is an error. Parsing every document of
//! a chart is costly, though, and almost all of them are plain block YAML.
//! [`scan`] reads such documents line by line and checks them as it goes;
//! whenever a document leaves the simple subset it understands (flow
//! collections, anchors, tags, multi-line scalars, escapes, tabs,
//! non-ASCII text, odd indentation...) it gives up, and [`read`] parses the
//! document fully instead. The scanner only answers for documents the full
//! parser accepts, and then with the same head.

use std::borrow::Cow;

use crate::values::{self, PlainScalar, Value};

/// What Helm reads of one manifest document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    /// `apiVersion` (empty when absent or null).
    pub api_version: String,
    /// `kind` (empty when absent or null).
    pub kind: String,
    /// `metadata.name` (empty when absent or null).
    pub name: String,
    /// `metadata.annotations["helm.sh/hook"]`, when the key is present.
    pub hook: Option<String>,
    /// `metadata.annotations["helm.sh/hook-weight"]` (empty when absent).
    pub hook_weight: String,
}

/// The head of `doc`: from [`scan`] when the document is simple block
/// YAML, from a full parse otherwise.
///
/// # Errors
/// The parse error when `doc` is not valid YAML.
pub fn read(doc: &str) -> Result<Head, values::Error> {
    match scan(doc) {
        Some(head) => Ok(head),
        None => values::parse_yaml(doc).map(|v| head_of_value(&v)),
    }
}

/// The head of a parsed document. Non-string values print as Go's `%v`
/// would; a document that is not a map has an empty head.
pub fn head_of_value(doc: &Value) -> Head {
    let get = |v: &Value, k: &str| -> Option<Value> { v.as_map().and_then(|m| m.get(k)).cloned() };
    let text = |v: Option<Value>| match v {
        Some(Value::String(s)) => s,
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let metadata = get(doc, "metadata").unwrap_or(Value::Null);
    let annotations = get(&metadata, "annotations").unwrap_or(Value::Null);
    Head {
        api_version: text(get(doc, "apiVersion")),
        kind: text(get(doc, "kind")),
        name: text(get(&metadata, "name")),
        hook: get(&annotations, "helm.sh/hook").map(|v| text(Some(v))),
        hook_weight: text(get(&annotations, "helm.sh/hook-weight")),
    }
}

/// The head of `doc` when it is simple block YAML that the full parser
/// accepts; `None` when the document needs the full parser (which may
/// then accept it or report an error).
pub fn scan(doc: &str) -> Option<Head> {
    let tabs = match text_kind(doc) {
        TextKind::Other => return None,
        TextKind::Plain => false,
        TextKind::PlainWithTabs => true,
    };
    let mut scanner = Scanner {
        lines: Lines { text: doc, pos: 0 },
        tabs,
        stack: Vec::new(),
        pending: None,
        found: Found::default(),
    };
    while let Some(line) = scanner.lines.next() {
        scanner.line(line)?;
    }
    scanner.finish()
}

/// Deepest block nesting the scanner follows (the full parser allows
/// [`values::MAX_DEPTH`]).
const MAX_BLOCKS: usize = 64;

/// Longest implicit key the scanner accepts (YAML caps them at 1024).
const MAX_KEY_LEN: usize = 1000;

/// The maps whose keys matter for the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The document's top-level map.
    Root,
    /// The map under the top-level `metadata`.
    Metadata,
    /// The map under `metadata.annotations`.
    Annotations,
    /// Any other collection.
    Other,
}

/// An open block collection.
#[derive(Debug, Clone, Copy)]
struct Block {
    /// Column of its keys or dashes.
    indent: usize,
    /// A sequence (else a map).
    seq: bool,
    role: Role,
}

/// A key or dash with no value on its line: a nested block may follow.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// Column of the key or dash.
    indent: usize,
    /// After a dash (a nested block must be deeper), else after a key
    /// (a sequence may sit at the key's own column).
    after_dash: bool,
    /// The role of the collection that would open.
    role: Role,
}

/// The head fields seen so far.
#[derive(Debug, Default)]
struct Found {
    api_version: Option<String>,
    kind: Option<String>,
    name: Option<String>,
    hook: Option<String>,
    hook_weight: Option<String>,
}

/// Which head field a key fills.
#[derive(Debug, Clone, Copy)]
enum Field {
    ApiVersion,
    Kind,
    Name,
    Hook,
    HookWeight,
}

/// What a key means for the head.
enum Slot {
    /// Its scalar value is a head field.
    Field(Field),
    /// Its value is a map whose keys matter.
    Child(Role),
    /// Nothing: its value only has to be valid.
    Ignored,
}

/// A value written on the same line as its key or dash.
enum Inline<'a> {
    /// Nothing (a nested block or null follows).
    Empty,
    /// A `|` or `>` block scalar header.
    BlockScalar,
    /// `[]` or `{}`.
    EmptyFlow,
    /// A plain scalar and how it resolves.
    Plain(&'a str, PlainScalar),
    /// The inside of a single-quoted scalar.
    SingleQuoted(&'a str),
    /// The inside of a double-quoted scalar.
    DoubleQuoted(&'a str),
}

impl Inline<'_> {
    /// The string this value is, when it is a plain string or a quoted
    /// scalar without escapes.
    fn text(&self) -> Option<String> {
        match self {
            Inline::Plain(text, PlainScalar::String) => Some((*text).to_string()),
            Inline::SingleQuoted(raw) => Some(raw.replace("''", "'")),
            Inline::DoubleQuoted(raw) if !raw.contains('\\') => Some((*raw).to_string()),
            _ => None,
        }
    }
}

/// One line's content after its indentation and any dash.
enum Content<'a> {
    /// `key: value`, with the value text after the colon and spaces.
    Entry(Cow<'a, str>, &'a str),
    /// A lone scalar.
    Scalar(&'a str),
}

/// The lines of a document, without their line feeds.
struct Lines<'a> {
    text: &'a str,
    /// Where the next line starts; past the end when there is none.
    pos: usize,
}

impl<'a> Lines<'a> {
    fn peek(&self) -> Option<&'a str> {
        let rest = self.text.get(self.pos..)?;
        let len = memchr::memchr(b'\n', rest.as_bytes()).unwrap_or(rest.len());
        Some(&rest[..len])
    }

    fn next(&mut self) -> Option<&'a str> {
        let line = self.peek()?;
        self.pos += line.len() + 1;
        Some(line)
    }
}

struct Scanner<'a> {
    lines: Lines<'a>,
    /// Whether the document has tabs at all (else lines need no check).
    tabs: bool,
    stack: Vec<Block>,
    pending: Option<Pending>,
    found: Found,
}

impl<'a> Scanner<'a> {
    /// Checks one line and follows the structure it opens or continues.
    fn line(&mut self, line: &'a str) -> Option<()> {
        let indent = leading_spaces(line);
        let rest = &line[indent..];
        if rest.is_empty() || rest.starts_with('#') {
            return Some(());
        }
        if (self.tabs && rest.as_bytes().contains(&b'\t'))
            || (indent == 0 && is_document_marker(rest))
        {
            return None;
        }
        let dash = rest == "-" || rest.starts_with("- ");
        self.place(indent, dash)?;
        if dash {
            self.sequence_entry(indent, rest)
        } else {
            let role = self.stack.last()?.role;
            match split_content(rest)? {
                Content::Entry(key, value) => self.entry(indent, role, &key, value),
                Content::Scalar(_) => None,
            }
        }
    }

    /// Makes the top of the stack the collection a line at `indent`
    /// belongs to, opening one when the previous line asked for it.
    fn place(&mut self, indent: usize, dash: bool) -> Option<()> {
        if self.stack.is_empty() {
            if indent != 0 || dash {
                return None;
            }
            self.stack.push(Block {
                indent,
                seq: false,
                role: Role::Root,
            });
            return Some(());
        }
        if let Some(pending) = self.pending.take() {
            let opens = indent > pending.indent
                || (indent == pending.indent && dash && !pending.after_dash);
            if opens {
                if pending.role != Role::Other && dash {
                    return None;
                }
                let role = if dash { Role::Other } else { pending.role };
                return self.open(indent, dash, role);
            }
        }
        while let Some(top) = self.stack.last() {
            let leaves_indentless_seq = top.indent == indent && top.seq && !dash;
            if top.indent <= indent && !leaves_indentless_seq {
                break;
            }
            self.stack.pop();
        }
        let top = self.stack.last()?;
        (top.indent == indent && top.seq == dash).then_some(())
    }

    fn open(&mut self, indent: usize, seq: bool, role: Role) -> Option<()> {
        if self.stack.len() >= MAX_BLOCKS {
            return None;
        }
        self.stack.push(Block { indent, seq, role });
        Some(())
    }

    /// A `- ...` line at column `indent`.
    fn sequence_entry(&mut self, indent: usize, rest: &'a str) -> Option<()> {
        let after = &rest[1..];
        let content = after.trim_start_matches(' ');
        if content.is_empty() || content.starts_with('#') {
            self.pending = Some(Pending {
                indent,
                after_dash: true,
                role: Role::Other,
            });
            return Some(());
        }
        if content == "-" || content.starts_with("- ") {
            return None;
        }
        match split_content(content)? {
            Content::Entry(key, value) => {
                let column = indent + 1 + (after.len() - content.len());
                self.open(column, false, Role::Other)?;
                self.entry(column, Role::Other, &key, value)
            }
            Content::Scalar(text) => match inline_value(text)? {
                Inline::BlockScalar => self.skip_block_scalar(indent),
                _ => Some(()),
            },
        }
    }

    /// A `key: value` entry whose key sits at `column` in a map of `role`.
    fn entry(&mut self, column: usize, role: Role, key: &str, value: &'a str) -> Option<()> {
        let value = inline_value(value)?;
        match slot(role, key) {
            Slot::Field(field) => {
                let text = value.text()?;
                self.set(field, text);
                Some(())
            }
            Slot::Child(child) => {
                // A null or empty map holds no head fields; a nested map
                // may follow a bare key.
                self.reset(child);
                match value {
                    Inline::Empty => {
                        self.pending = Some(Pending {
                            indent: column,
                            after_dash: false,
                            role: child,
                        });
                        Some(())
                    }
                    Inline::EmptyFlow => Some(()),
                    _ => None,
                }
            }
            Slot::Ignored => match value {
                Inline::Empty => {
                    self.pending = Some(Pending {
                        indent: column,
                        after_dash: false,
                        role: Role::Other,
                    });
                    Some(())
                }
                Inline::BlockScalar => self.skip_block_scalar(column),
                _ => Some(()),
            },
        }
    }

    fn set(&mut self, field: Field, text: String) {
        let slot = match field {
            Field::ApiVersion => &mut self.found.api_version,
            Field::Kind => &mut self.found.kind,
            Field::Name => &mut self.found.name,
            Field::Hook => &mut self.found.hook,
            Field::HookWeight => &mut self.found.hook_weight,
        };
        *slot = Some(text);
    }

    /// A repeated `metadata` or `annotations` key replaces the earlier
    /// map, so what was read from that one no longer counts.
    fn reset(&mut self, child: Role) {
        if child == Role::Metadata {
            self.found.name = None;
        }
        self.found.hook = None;
        self.found.hook_weight = None;
    }

    /// Consumes the lines of a block scalar whose parent sits at column
    /// `parent`: blank lines and lines deeper than it. Gives up on the
    /// forms whose indentation rules are subtle.
    fn skip_block_scalar(&mut self, parent: usize) -> Option<()> {
        let mut content_indent: Option<usize> = None;
        let mut leading_blank = 0;
        while let Some(line) = self.lines.peek() {
            let spaces = leading_spaces(line);
            let rest = &line[spaces..];
            if rest.is_empty() {
                if content_indent.is_none() {
                    leading_blank = leading_blank.max(spaces);
                }
                self.lines.next();
                continue;
            }
            match content_indent {
                None if spaces > parent => {
                    if leading_blank > spaces || rest.starts_with('\t') {
                        return None;
                    }
                    content_indent = Some(spaces);
                }
                None => break,
                Some(n) if spaces >= n => {}
                Some(_) if spaces <= parent => break,
                Some(_) => return None,
            }
            self.lines.next();
        }
        if content_indent.is_none() && leading_blank > parent {
            return None;
        }
        Some(())
    }

    fn finish(self) -> Option<Head> {
        if self.stack.is_empty() {
            return None;
        }
        let found = self.found;
        Some(Head {
            api_version: found.api_version.unwrap_or_default(),
            kind: found.kind.unwrap_or_default(),
            name: found.name.unwrap_or_default(),
            hook: found.hook,
            hook_weight: found.hook_weight.unwrap_or_default(),
        })
    }
}

/// What `key` in a map of `role` means for the head.
fn slot(role: Role, key: &str) -> Slot {
    match (role, key) {
        (Role::Root, "apiVersion") => Slot::Field(Field::ApiVersion),
        (Role::Root, "kind") => Slot::Field(Field::Kind),
        (Role::Root, "metadata") => Slot::Child(Role::Metadata),
        (Role::Metadata, "name") => Slot::Field(Field::Name),
        (Role::Metadata, "annotations") => Slot::Child(Role::Annotations),
        (Role::Annotations, "helm.sh/hook") => Slot::Field(Field::Hook),
        (Role::Annotations, "helm.sh/hook-weight") => Slot::Field(Field::HookWeight),
        _ => Slot::Ignored,
    }
}

fn leading_spaces(line: &str) -> usize {
    line.bytes().take_while(|b| *b == b' ').count()
}

/// What bytes a document holds.
enum TextKind {
    /// Printable ASCII and line feeds.
    Plain,
    /// Those and tabs, which the scanner allows only in comments and
    /// block scalars.
    PlainWithTabs,
    /// Anything else, which the scanner does not vouch for.
    Other,
}

/// Reads the whole document in blocks without early exit, which compiles
/// to vector code.
fn text_kind(doc: &str) -> TextKind {
    let (mut plain, mut tabs) = (true, false);
    for chunk in doc.as_bytes().chunks(64) {
        let (p, t) = chunk.iter().fold((true, false), |(p, t), &b| {
            let tab = b == b'\t';
            (
                p & ((b' '..=b'~').contains(&b) | (b == b'\n') | tab),
                t | tab,
            )
        });
        plain &= p;
        tabs |= t;
    }
    match (plain, tabs) {
        (false, _) => TextKind::Other,
        (true, false) => TextKind::Plain,
        (true, true) => TextKind::PlainWithTabs,
    }
}

/// `---` or `...` at the start of a line, which end a YAML document.
fn is_document_marker(rest: &str) -> bool {
    rest.starts_with("---") || rest.starts_with("...")
}

/// Splits a line's content into a key and its value, or reads it as a
/// lone scalar; `None` for keys the scanner does not vouch for.
fn split_content(content: &str) -> Option<Content<'_>> {
    if content.starts_with(['"', '\'']) {
        let (inside, after) = quoted(content)?;
        let after = after.trim_start_matches(' ');
        let Some(value) = after.strip_prefix(':') else {
            return Some(Content::Scalar(content));
        };
        if !(value.is_empty() || value.starts_with(' ')) {
            return None;
        }
        let key = match content.as_bytes()[0] {
            b'"' if inside.contains('\\') => return None,
            b'"' => Cow::Borrowed(inside),
            _ => Cow::Owned(inside.replace("''", "'")),
        };
        if inside.len() > MAX_KEY_LEN {
            return None;
        }
        return Some(Content::Entry(key, value.trim_start_matches(' ')));
    }
    let Some(colon) = key_end(content) else {
        return Some(Content::Scalar(content));
    };
    let key = content[..colon].trim_end_matches(' ');
    if !plain_starts_well(key)
        || key.len() > MAX_KEY_LEN
        || values::plain_key_kind(key) == PlainScalar::Refused
    {
        return None;
    }
    let value = content[colon + 1..].trim_start_matches(' ');
    Some(Content::Entry(Cow::Borrowed(key), value))
}

/// Where the `:` that ends a plain key is: the first `:` followed by a
/// space or the end of the line, unless a comment starts before it.
fn key_end(content: &str) -> Option<usize> {
    let bytes = content.as_bytes();
    for i in memchr::memchr2_iter(b':', b'#', bytes) {
        match bytes[i] {
            b':' if bytes.get(i + 1).is_none_or(|n| *n == b' ') => return Some(i),
            b'#' if i > 0 && bytes[i - 1] == b' ' => return None,
            _ => {}
        }
    }
    None
}

/// Reads the value written after a key's colon or a dash (leading spaces
/// already gone); `None` when it is not in the simple subset or is
/// invalid.
fn inline_value(value: &str) -> Option<Inline<'_>> {
    let Some(&first) = value.as_bytes().first() else {
        return Some(Inline::Empty);
    };
    match first {
        b'#' => Some(Inline::Empty),
        b'|' | b'>' => {
            let rest = value[1..].strip_prefix(['+', '-']).unwrap_or(&value[1..]);
            is_trailer(rest).then_some(Inline::BlockScalar)
        }
        b'"' | b'\'' => {
            let (inside, after) = quoted(value)?;
            if !is_trailer(after) {
                return None;
            }
            Some(if first == b'"' {
                Inline::DoubleQuoted(inside)
            } else {
                Inline::SingleQuoted(inside)
            })
        }
        b'[' | b'{' => {
            let rest = value
                .strip_prefix("[]")
                .or_else(|| value.strip_prefix("{}"))?;
            is_trailer(rest).then_some(Inline::EmptyFlow)
        }
        _ => plain_value(value),
    }
}

/// A plain scalar value up to a comment, checked as the parser would.
fn plain_value(value: &str) -> Option<Inline<'_>> {
    if !plain_starts_well(value) {
        return None;
    }
    let bytes = value.as_bytes();
    let mut end = bytes.len();
    for i in memchr::memchr2_iter(b'#', b':', bytes) {
        match bytes[i] {
            b'#' if i > 0 && bytes[i - 1] == b' ' => {
                end = i;
                break;
            }
            // `a: b` and a trailing `a:` are mapping values, not text.
            b':' if bytes.get(i + 1).is_none_or(|n| *n == b' ') => return None,
            _ => {}
        }
    }
    let text = value[..end].trim_end_matches(' ');
    match values::plain_value_kind(text) {
        PlainScalar::Refused => None,
        kind => Some(Inline::Plain(text, kind)),
    }
}

/// Whether a plain scalar may start this way: not with an indicator,
/// except `-` followed by something other than a space.
fn plain_starts_well(text: &str) -> bool {
    match text.as_bytes() {
        [] | [b'-'] => false,
        [b'-', next, ..] => *next != b' ',
        [first, ..] => !is_indicator(*first),
    }
}

/// YAML's indicator characters, which a plain scalar may not start with.
fn is_indicator(b: u8) -> bool {
    matches!(
        b,
        b'-' | b'?'
            | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
    )
}

/// Only spaces and perhaps a comment (after at least one space).
fn is_trailer(rest: &str) -> bool {
    let trimmed = rest.trim_start_matches(' ');
    trimmed.is_empty() || (trimmed.len() < rest.len() && trimmed.starts_with('#'))
}

/// Splits a quoted scalar at the start of `text` into its inside and
/// what follows the closing quote. `None` when it does not close on this
/// line or has an escape the scanner does not vouch for.
fn quoted(text: &str) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    let quote = bytes[0];
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == b'"' => {
                if !bytes.get(i + 1).copied().is_some_and(is_simple_escape) {
                    return None;
                }
                i += 2;
            }
            b'\'' if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b if b == quote => return Some((&text[1..i], &text[i + 1..])),
            _ => i += 1,
        }
    }
    None
}

/// Whether `\` and this byte is one of the one-character escapes of YAML
/// double-quoted scalars.
fn is_simple_escape(b: u8) -> bool {
    matches!(
        b,
        b'0' | b'a'
            | b'b'
            | b't'
            | b'n'
            | b'v'
            | b'f'
            | b'r'
            | b'e'
            | b' '
            | b'"'
            | b'/'
            | b'\\'
            | b'N'
            | b'_'
            | b'L'
            | b'P'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head the full parser gives, or `None` when it refuses `doc`.
    fn parsed(doc: &str) -> Option<Head> {
        values::parse_yaml(doc).ok().map(|v| head_of_value(&v))
    }

    /// Asserts that the scanner reads `doc` and agrees with the parser.
    fn scans(doc: &str) -> Head {
        let head = scan(doc).unwrap_or_else(|| panic!("scanner gave up on {doc:?}"));
        assert_eq!(Some(&head), parsed(doc).as_ref(), "{doc:?}");
        head
    }

    #[test]
    fn reads_plain_manifests() {
        let head = scans(
            "apiVersion: v1\nkind: ConfigMap # a comment\nmetadata:\n  name: web\n  labels:\n    app: x\n    helm.sh/chart: c-1.0\ndata:\n  a: \"1\"\n  b: 'it''s'\n",
        );
        assert_eq!(head.api_version, "v1");
        assert_eq!(head.kind, "ConfigMap");
        assert_eq!(head.name, "web");
        assert_eq!(head.hook, None);
    }

    #[test]
    fn reads_hook_annotations() {
        let head = scans(
            "kind: Job\nmetadata:\n  annotations:\n    \"helm.sh/hook\": pre-install,post-install\n    'helm.sh/hook-weight': \"-5\"\n  name: j\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        args:\n        - --x\n        - \"y\"\n",
        );
        assert_eq!(head.kind, "Job");
        assert_eq!(head.hook.as_deref(), Some("pre-install,post-install"));
        assert_eq!(head.hook_weight, "-5");
        assert_eq!(head.name, "j");
    }

    #[test]
    fn follows_nesting_and_block_scalars() {
        for doc in [
            "kind: A\nspec:\n  list:\n  - a\n  -\n    b: 1\n  - c: 2\n    d:\n    - e\n  other: {}\nlast: []\n",
            "kind: A\ndata:\n  script: |\n    #!/bin/sh\n\n      echo \"x: y\" # not a comment\n  next: >-\n    folded\nmetadata:\n  name: web\n",
            "kind: A\nitems:\n- |\n  text\n- x\n",
            "kind: A\nmetadata:\n  name: first\nmetadata:\n  labels: {}\n",
            "kind: A\nempty:\nafter: 1\n",
            "kind: A\nmetadata:\n  name: x\n  annotations:\nspec: {}\n",
            "kind: A\nmetadata:\n  annotations:\n    helm.sh/hook: test\n  annotations: {}\n",
            "kind: A\nmetadata:\n",
            "kind: A\nweird key with spaces  : v\nurl: http://x:80/a#b\n",
        ] {
            scans(doc);
        }
    }

    #[test]
    fn gives_up_on_what_it_cannot_vouch_for() {
        for doc in [
            "kind: A\nlist: [a, b]\n",
            "kind: &a A\n",
            "kind: !!str A\n",
            "kind: 5\n",
            "kind: yes\n",
            "kind:\n",
            "kind: \"a\\u00e9\"\n",
            "kind: A\nx: multi\n  line\n",
            "kind: A\nx: \"open\n  quote\"\n",
            "kind: A\n\tx: 1\n",
            "kind: é\n",
            "- a\n- b\n",
            "just a scalar\n",
            "# only a comment\n",
            "kind: A\n...\nkind: B\n",
            "kind: A\n<<: {a: 1}\n",
            "kind: A\nx: |2\n  text\n",
        ] {
            assert_eq!(scan(doc), None, "{doc:?}");
        }
    }

    #[test]
    fn gives_up_on_invalid_yaml() {
        for doc in [
            "kind: A\nx: a: b\n",
            "kind: A\n  x: 1\n",
            "kind: A\nx:\n  - a\n  b: 1\n",
            "kind: A\nx: \"a\" b\n",
            "kind: A\nx: @a\n",
            "kind: A\nx: .inf\n",
            "kind: A\nnull: 1\n",
            "kind: A\nx: |\n    deep\n  shallow\n",
            "kind: A\nx: - a\n",
        ] {
            assert_eq!(scan(doc), None, "{doc:?}");
            assert!(read(doc).is_err(), "{doc:?} should not parse");
        }
    }

    /// Every edit of a few manifests, one byte at a time: whenever the
    /// scanner answers, the parser accepts the document with the same head.
    #[test]
    fn agrees_with_the_parser_under_edits() {
        let samples = [
            "apiVersion: v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: test\n    \"helm.sh/hook-weight\": '1'\nspec:\n  args:\n  - a: |\n      x\n    b: [] # c\n",
            "kind: A\nitems:\n- k: v\n  l:\n  - 1\ndata:\n  s: >\n    t\n\n  u: \"q\\n\"\n",
        ];
        let edits = [
            "", " ", "  ", "-", "- ", ":", ": ", "#", " #", "\n", "\"", "'", "|", "{}", "x",
        ];
        let mut checked = 0;
        for sample in samples {
            for at in 0..=sample.len() {
                for edit in edits {
                    for remove in 0..2 {
                        let end = (at + remove).min(sample.len());
                        let doc = format!("{}{}{}", &sample[..at], edit, &sample[end..]);
                        if let Some(head) = scan(&doc) {
                            assert_eq!(Some(head), parsed(&doc), "{doc:?}");
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 100, "only {checked} edits scanned");
    }
}
