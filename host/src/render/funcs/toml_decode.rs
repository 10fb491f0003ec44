//! Helm v4's `fromToml`: a TOML 1.0 document read into a map, as
//! BurntSushi/toml decodes it into `map[string]interface{}` (integers are
//! int64, floats float64). Dates and times are kept as their text, since a
//! template value has no time type.

use super::args::{exactly, text};
use super::{FuncError, Function};
use crate::values::{Map, Value};

pub(super) const FUNCTIONS: &[(&str, Function)] = &[("fromToml", from_toml)];

/// `fromToml S`: the document as a map; an error gives a map with an
/// `Error` key, as Helm does.
fn from_toml(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("fromToml", args)?;
    Ok(Value::Map(parse_toml(text(s)?).unwrap_or_else(|message| {
        let mut map = Map::new();
        map.insert("Error".into(), Value::String(message));
        map
    })))
}

/// Parses a TOML document.
///
/// # Errors
/// A one-line description with the line number.
pub fn parse_toml(input: &str) -> Result<Map, String> {
    let mut parser = Parser {
        chars: input.chars().collect(),
        pos: 0,
    };
    parser
        .document()
        .map_err(|e| format!("toml: line {}: {e}", parser.line()))
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

/// Where key/value lines go: a table path, and whether its last segment is
/// an array of tables (then the last element is meant).
type Path = Vec<String>;

/// The most tables and arrays a document may nest.
const MAX_NESTING: usize = 128;

fn table_at<'m>(root: &'m mut Map, path: &[String]) -> Result<&'m mut Map, String> {
    let mut current = root;
    for key in path {
        let entry = current
            .entry(key.clone())
            .or_insert_with(|| Value::Map(Map::new()));
        current = match entry {
            Value::Map(map) => map,
            Value::List(items) => match items.last_mut() {
                Some(Value::Map(map)) => map,
                _ => return Err(format!("key {key:?} is not a table")),
            },
            _ => return Err(format!("key {key:?} is already defined")),
        };
    }
    Ok(current)
}

impl Parser {
    fn line(&self) -> usize {
        self.chars[..self.pos.min(self.chars.len())]
            .iter()
            .filter(|c| **c == '\n')
            .count()
            + 1
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn starts_with(&self, s: &str) -> bool {
        s.chars()
            .enumerate()
            .all(|(i, c)| self.peek_at(i) == Some(c))
    }

    fn skip_spaces(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
    }

    fn skip_comment(&mut self) {
        if self.peek() == Some('#') {
            while self.peek().is_some_and(|c| c != '\n') {
                self.pos += 1;
            }
        }
    }

    /// Spaces, comments and newlines.
    fn skip_blank(&mut self) {
        loop {
            self.skip_spaces();
            self.skip_comment();
            match self.peek() {
                Some('\n') => self.pos += 1,
                Some('\r') if self.peek_at(1) == Some('\n') => self.pos += 2,
                _ => return,
            }
        }
    }

    fn end_of_line(&mut self) -> Result<(), String> {
        self.skip_spaces();
        self.skip_comment();
        match self.peek() {
            None | Some('\n') => Ok(()),
            Some('\r') if self.peek_at(1) == Some('\n') => Ok(()),
            Some(c) => Err(format!("expected a newline, found {c:?}")),
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected {c:?}"))
        }
    }

    fn document(&mut self) -> Result<Map, String> {
        let mut root = Map::new();
        let mut current: Path = Vec::new();
        loop {
            self.skip_blank();
            let Some(c) = self.peek() else { break };
            if c == '[' && self.peek_at(1) == Some('[') {
                self.pos += 2;
                let path = self.dotted_key()?;
                self.expect(']')?;
                self.expect(']')?;
                self.end_of_line()?;
                let (last, parent) = path.split_last().ok_or("empty table name")?;
                let table = table_at(&mut root, parent)?;
                let entry = table
                    .entry(last.clone())
                    .or_insert_with(|| Value::List(Vec::new()));
                match entry {
                    Value::List(items) => items.push(Value::Map(Map::new())),
                    _ => return Err(format!("key {last:?} is not an array of tables")),
                }
                current = path;
            } else if c == '[' {
                self.pos += 1;
                let path = self.dotted_key()?;
                self.expect(']')?;
                self.end_of_line()?;
                table_at(&mut root, &path)?;
                current = path;
            } else {
                let key = self.dotted_key()?;
                self.expect('=')?;
                self.skip_spaces();
                let value = self.value(0)?;
                self.end_of_line()?;
                let table = table_at(&mut root, &current)?;
                insert_dotted(table, &key, value)?;
            }
        }
        Ok(root)
    }

    fn dotted_key(&mut self) -> Result<Vec<String>, String> {
        let mut parts = Vec::new();
        loop {
            self.skip_spaces();
            parts.push(self.simple_key()?);
            self.skip_spaces();
            if self.peek() == Some('.') {
                self.pos += 1;
            } else {
                return Ok(parts);
            }
        }
    }

    fn simple_key(&mut self) -> Result<String, String> {
        match self.peek() {
            Some('"') => self.basic_string(),
            Some('\'') => self.literal_string(),
            _ => {
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    self.pos += 1;
                }
                if start == self.pos {
                    return Err("expected a key".into());
                }
                Ok(self.chars[start..self.pos].iter().collect())
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_NESTING {
            return Err("nesting too deep".into());
        }
        match self.peek() {
            Some('"') if self.starts_with("\"\"\"") => self.multiline_basic().map(Value::String),
            Some('"') => self.basic_string().map(Value::String),
            Some('\'') if self.starts_with("'''") => self.multiline_literal().map(Value::String),
            Some('\'') => self.literal_string().map(Value::String),
            Some('[') => self.array(depth),
            Some('{') => self.inline_table(depth),
            Some('t') if self.starts_with("true") => {
                self.pos += 4;
                Ok(Value::Bool(true))
            }
            Some('f') if self.starts_with("false") => {
                self.pos += 5;
                Ok(Value::Bool(false))
            }
            Some(_) => self.scalar(),
            None => Err("expected a value".into()),
        }
    }

    fn escape(&mut self) -> Result<char, String> {
        let c = self.peek().ok_or("unfinished escape")?;
        self.pos += 1;
        Ok(match c {
            'b' => '\u{8}',
            't' => '\t',
            'n' => '\n',
            'f' => '\u{c}',
            'r' => '\r',
            'e' => '\u{1b}',
            '"' => '"',
            '\\' => '\\',
            'u' | 'U' => {
                let len = if c == 'u' { 4 } else { 8 };
                let hex: String = self
                    .chars
                    .get(self.pos..self.pos + len)
                    .ok_or("short unicode escape")?
                    .iter()
                    .collect();
                self.pos += len;
                u32::from_str_radix(&hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("invalid unicode escape \\{c}{hex}"))?
            }
            other => return Err(format!("invalid escape \\{other}")),
        })
    }

    fn basic_string(&mut self) -> Result<String, String> {
        self.expect('"')?;
        let mut out = String::new();
        loop {
            match self.peek() {
                None | Some('\n') => return Err("unterminated string".into()),
                Some('"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some('\\') => {
                    self.pos += 1;
                    out.push(self.escape()?);
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn literal_string(&mut self) -> Result<String, String> {
        self.expect('\'')?;
        let start = self.pos;
        while self.peek().is_some_and(|c| c != '\'' && c != '\n') {
            self.pos += 1;
        }
        let out: String = self.chars[start..self.pos].iter().collect();
        self.expect('\'')
            .map_err(|_| "unterminated string".to_string())?;
        Ok(out)
    }

    fn skip_first_newline(&mut self) {
        if self.peek() == Some('\n') {
            self.pos += 1;
        } else if self.starts_with("\r\n") {
            self.pos += 2;
        }
    }

    fn multiline_basic(&mut self) -> Result<String, String> {
        self.pos += 3;
        self.skip_first_newline();
        let mut out = String::new();
        loop {
            if self.starts_with("\"\"\"") && !self.starts_with("\"\"\"\"") {
                self.pos += 3;
                return Ok(out);
            }
            match self.peek() {
                None => return Err("unterminated string".into()),
                Some('\\') => {
                    self.pos += 1;
                    let rest = self.chars[self.pos..]
                        .iter()
                        .take_while(|c| matches!(c, ' ' | '\t' | '\r'))
                        .count();
                    if self.peek_at(rest) == Some('\n') {
                        while self.peek().is_some_and(char::is_whitespace) {
                            self.pos += 1;
                        }
                    } else {
                        out.push(self.escape()?);
                    }
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn multiline_literal(&mut self) -> Result<String, String> {
        self.pos += 3;
        self.skip_first_newline();
        let mut out = String::new();
        loop {
            if self.starts_with("'''") && !self.starts_with("''''") {
                self.pos += 3;
                return Ok(out);
            }
            let c = self.peek().ok_or("unterminated string")?;
            out.push(c);
            self.pos += 1;
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, String> {
        self.expect('[')?;
        let mut items = Vec::new();
        loop {
            self.skip_blank();
            if self.peek() == Some(']') {
                self.pos += 1;
                return Ok(Value::List(items));
            }
            items.push(self.value(depth + 1)?);
            self.skip_blank();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(']') => {}
                _ => return Err("expected ',' or ']' in array".into()),
            }
        }
    }

    fn inline_table(&mut self, depth: usize) -> Result<Value, String> {
        self.expect('{')?;
        let mut map = Map::new();
        self.skip_spaces();
        if self.peek() == Some('}') {
            self.pos += 1;
            return Ok(Value::Map(map));
        }
        loop {
            let key = self.dotted_key()?;
            self.expect('=')?;
            self.skip_spaces();
            let value = self.value(depth + 1)?;
            insert_dotted(&mut map, &key, value)?;
            self.skip_spaces();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some('}') => {
                    self.pos += 1;
                    return Ok(Value::Map(map));
                }
                _ => return Err("expected ',' or '}' in inline table".into()),
            }
        }
    }

    /// Numbers, `inf`, `nan`, dates and times.
    fn scalar(&mut self) -> Result<Value, String> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || "+-_.:".contains(c))
        {
            self.pos += 1;
        }
        // A date followed by a space and a time is one value.
        let date_like = self.pos - start == 10 && self.chars.get(start + 4) == Some(&'-');
        if date_like
            && self.peek() == Some(' ')
            && self.peek_at(1).is_some_and(|c| c.is_ascii_digit())
        {
            self.pos += 1;
            while self
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || "+-_.:".contains(c))
            {
                self.pos += 1;
            }
        }
        let token: String = self.chars[start..self.pos].iter().collect();
        scalar_value(&token)
    }
}

fn scalar_value(token: &str) -> Result<Value, String> {
    let invalid = || format!("invalid value {token:?}");
    let unsigned = token.trim_start_matches(['+', '-']);
    let negative = token.starts_with('-');
    match unsigned {
        "inf" => {
            return Ok(Value::Float(if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }));
        }
        "nan" => return Ok(Value::Float(f64::NAN)),
        _ => {}
    }
    let bytes = token.as_bytes();
    let is_date = bytes.len() >= 10 && bytes[4] == b'-' && bytes[7] == b'-';
    let is_time = bytes.len() >= 8 && bytes[2] == b':';
    if is_date || is_time {
        return Ok(Value::String(token.to_string()));
    }
    if token.is_empty() || token.contains("__") || token.starts_with('_') || token.ends_with('_') {
        return Err(invalid());
    }
    let clean = token.replace('_', "");
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(digits) = clean.strip_prefix(prefix) {
            return i64::from_str_radix(digits, radix)
                .map(Value::Int)
                .map_err(|_| invalid());
        }
    }
    if clean.contains(['.', 'e', 'E']) {
        return clean
            .parse::<f64>()
            .map(Value::Float)
            .map_err(|_| invalid());
    }
    let digits = clean.trim_start_matches(['+', '-']);
    if digits.len() > 1 && digits.starts_with('0') {
        return Err(invalid());
    }
    clean.parse::<i64>().map(Value::Int).map_err(|_| invalid())
}

fn insert_dotted(table: &mut Map, key: &[String], value: Value) -> Result<(), String> {
    let (last, parents) = key.split_last().ok_or("empty key")?;
    let target = table_at(table, parents)?;
    if target.contains_key(last) {
        return Err(format!("key {last:?} is already defined"));
    }
    target.insert(last.clone(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(map: &'a Map, path: &[&str]) -> Option<&'a Value> {
        let (last, parents) = path.split_last()?;
        let mut current = map;
        for p in parents {
            current = current.get(*p)?.as_map()?;
        }
        current.get(*last)
    }

    #[test]
    fn reads_a_document() {
        let doc = r#"
# comment
title = "TOML \"x\" \u00e9"
count = 1_000
ratio = 0.5
hex = 0xff
on = true
when = 1979-05-27 07:32:00Z
list = [1, 2, "three", [4], ]
inline = { a = 1, b.c = "d" }
lit = 'C:\path'
multi = """
a \
  b"""

[server]
port = 8080
[server.tls]
enabled = false

[[items]]
name = "one"
[[items]]
name = "two"
"#;
        let map = parse_toml(doc).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            get(&map, &["title"]),
            Some(&Value::String("TOML \"x\" é".into()))
        );
        assert_eq!(get(&map, &["count"]), Some(&Value::Int(1000)));
        assert_eq!(get(&map, &["ratio"]), Some(&Value::Float(0.5)));
        assert_eq!(get(&map, &["hex"]), Some(&Value::Int(255)));
        assert_eq!(get(&map, &["on"]), Some(&Value::Bool(true)));
        assert_eq!(
            get(&map, &["when"]),
            Some(&Value::String("1979-05-27 07:32:00Z".into()))
        );
        assert_eq!(
            get(&map, &["list"]).map(|l| l.to_string()),
            Some("[1 2 three [4]]".into())
        );
        assert_eq!(
            get(&map, &["inline", "b", "c"]),
            Some(&Value::String("d".into()))
        );
        assert_eq!(get(&map, &["lit"]), Some(&Value::String("C:\\path".into())));
        assert_eq!(get(&map, &["multi"]), Some(&Value::String("a b".into())));
        assert_eq!(get(&map, &["server", "port"]), Some(&Value::Int(8080)));
        assert_eq!(
            get(&map, &["server", "tls", "enabled"]),
            Some(&Value::Bool(false))
        );
        assert_eq!(
            get(&map, &["items"]).map(|l| l.to_string()),
            Some("[map[name:one] map[name:two]]".into())
        );
    }

    #[test]
    fn reports_errors_in_the_error_key() {
        assert!(parse_toml("a = 1\na = 2").is_err());
        assert!(parse_toml("a = ").is_err());
        assert!(parse_toml("a = 01").is_err());
        let result = from_toml(&["a = [1".into()]);
        assert!(matches!(result, Ok(Value::Map(m)) if m.contains_key("Error")));
        assert!(scalar_value("-0x10").is_err());
    }
}
