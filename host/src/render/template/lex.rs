//! The lexer: splits template source into text and the tokens of actions,
//! applying `{{-` and `-}}` trimming and dropping comments, as Go's
//! `text/template/parse` lexer does. Tokens borrow from the source; only
//! strings with escapes are copied.

use std::borrow::Cow;

use super::ParseError;
use super::ast::Span;

/// A token kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok<'a> {
    /// Text between actions, already trimmed.
    Text(Span),
    /// `{{`
    Open,
    /// `}}`
    Close,
    /// Whitespace inside an action.
    Space,
    /// A function name.
    Ident(&'a str),
    /// A keyword: `if`, `else`, `end`, `range`, `with`, `define`, `template`,
    /// `block`, `break`, `continue`.
    Keyword(&'static str),
    /// `.name` (without the dot)
    Field(&'a str),
    /// `.`
    Dot,
    /// `$` or `$name`
    Variable(&'a str),
    /// A quoted or raw string, unquoted.
    Str(Cow<'a, str>),
    /// A character constant and its code point.
    Char(&'a str, i64),
    /// A number as written.
    Number(&'a str),
    /// `true` or `false`
    Bool(bool),
    /// `nil`
    Nil,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `|`
    Pipe,
    /// `:=`
    Declare,
    /// `=`
    Assign,
    /// `,`
    Comma,
    /// End of input.
    Eof,
}

/// A token and where it starts.
#[derive(Debug, Clone)]
pub struct Token<'a> {
    pub tok: Tok<'a>,
    pub pos: usize,
}

const KEYWORDS: [&str; 10] = [
    "block", "break", "continue", "define", "else", "end", "if", "range", "template", "with",
];

/// The characters trim markers remove.
const SPACES: [char; 4] = [' ', '\t', '\r', '\n'];

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Where the next `{{` in `text` starts.
fn find_open(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(i) = bytes[from..].iter().position(|b| *b == b'{') {
        let at = from + i;
        if bytes.get(at + 1) == Some(&b'{') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

struct Lexer<'a> {
    name: &'a str,
    src: &'a str,
    pos: usize,
    out: Vec<Token<'a>>,
    paren_depth: usize,
}

/// Splits `src` into tokens.
///
/// # Errors
/// [`ParseError`] naming the template and line for unclosed actions,
/// comments, strings or parentheses and bad characters.
pub fn lex<'a>(name: &'a str, src: &'a str) -> Result<Vec<Token<'a>>, ParseError> {
    let mut lx = Lexer {
        name,
        src,
        pos: 0,
        out: Vec::with_capacity(src.len() / 3),
        paren_depth: 0,
    };
    lx.run()?;
    Ok(lx.out)
}

impl<'a> Lexer<'a> {
    fn err(&self, pos: usize, msg: impl Into<String>) -> ParseError {
        ParseError::at(self.name, self.src, pos, msg)
    }

    fn bytes(&self) -> &[u8] {
        self.src.as_bytes()
    }

    fn push(&mut self, tok: Tok<'a>, pos: usize) {
        self.out.push(Token { tok, pos });
    }

    fn run(&mut self) -> Result<(), ParseError> {
        let mut trim_left_of_next_text = false;
        loop {
            let rest = &self.src[self.pos..];
            let open = find_open(rest);
            let text_end = open.map_or(self.src.len(), |i| self.pos + i);
            let trims_before = open.is_some_and(|i| {
                let b = &rest.as_bytes()[i + 2..];
                b.len() >= 2 && b[0] == b'-' && is_space(b[1])
            });
            let mut span = Span {
                start: self.pos,
                end: text_end,
            };
            if trim_left_of_next_text {
                let kept = self.src[span.start..span.end].trim_start_matches(SPACES);
                span.start = span.end - kept.len();
            }
            if trims_before {
                let kept = self.src[span.start..span.end].trim_end_matches(SPACES);
                span.end = span.start + kept.len();
            }
            if span.start < span.end {
                let at = self.pos;
                self.push(Tok::Text(span), at);
            }
            let Some(_) = open else {
                self.push(Tok::Eof, self.src.len());
                return Ok(());
            };
            let action_start = text_end;
            self.pos = text_end + 2;
            if trims_before {
                self.pos += 2;
            }
            trim_left_of_next_text = if self.src[self.pos..].starts_with("/*") {
                self.lex_comment(action_start)?
            } else {
                self.push(Tok::Open, action_start);
                self.lex_action(action_start)?
            };
        }
    }

    /// At a closing delimiter: `Some(trim)` with the position moved past it.
    fn at_close(&self) -> Option<(bool, usize)> {
        let b = &self.bytes()[self.pos..];
        if b.len() >= 4 && is_space(b[0]) && b[1] == b'-' && b[2] == b'}' && b[3] == b'}' {
            return Some((true, 4));
        }
        if b.starts_with(b"}}") {
            return Some((false, 2));
        }
        None
    }

    fn lex_comment(&mut self, start: usize) -> Result<bool, ParseError> {
        let body = &self.src[self.pos + 2..];
        let Some(end) = body.find("*/") else {
            return Err(self.err(start, "unclosed comment"));
        };
        self.pos += 2 + end + 2;
        match self.at_close() {
            Some((trim, len)) => {
                self.pos += len;
                Ok(trim)
            }
            None => Err(self.err(start, "comment ends before closing delimiter")),
        }
    }

    fn lex_action(&mut self, start: usize) -> Result<bool, ParseError> {
        loop {
            if let Some((trim, len)) = self.at_close() {
                if self.paren_depth > 0 {
                    return Err(self.err(self.pos, "unclosed left paren"));
                }
                let at = self.pos;
                self.push(Tok::Close, at);
                self.pos += len;
                return Ok(trim);
            }
            let Some(c) = self.peek_char() else {
                return Err(self.err(start, "unclosed action"));
            };
            let at = self.pos;
            match c {
                ' ' | '\t' | '\r' | '\n' => self.lex_space(),
                '=' => {
                    self.pos += 1;
                    self.push(Tok::Assign, at);
                }
                ':' => {
                    if !self.src[self.pos..].starts_with(":=") {
                        return Err(self.err(at, "expected :="));
                    }
                    self.pos += 2;
                    self.push(Tok::Declare, at);
                }
                '|' => {
                    self.pos += 1;
                    self.push(Tok::Pipe, at);
                }
                ',' => {
                    self.pos += 1;
                    self.push(Tok::Comma, at);
                }
                '"' => self.lex_quote()?,
                '`' => self.lex_raw()?,
                '\'' => self.lex_char()?,
                '$' => self.lex_variable()?,
                '(' => {
                    self.pos += 1;
                    self.paren_depth += 1;
                    self.push(Tok::LParen, at);
                }
                ')' => {
                    self.pos += 1;
                    if self.paren_depth == 0 {
                        return Err(self.err(at, "unexpected right paren"));
                    }
                    self.paren_depth -= 1;
                    self.push(Tok::RParen, at);
                }
                '.' => {
                    let next = self.bytes().get(self.pos + 1).copied();
                    if next.is_some_and(|b| b.is_ascii_digit()) {
                        self.lex_number()?;
                    } else {
                        self.lex_field()?;
                    }
                }
                '+' | '-' | '0'..='9' => self.lex_number()?,
                c if is_alnum(c) => self.lex_identifier()?,
                c => return Err(self.err(at, format!("unexpected {c:?} in command"))),
            }
        }
    }

    fn lex_space(&mut self) {
        let at = self.pos;
        while self.pos < self.src.len() && is_space(self.bytes()[self.pos]) {
            // Stop before a space that begins a trim-marked close.
            if self.at_close().is_some_and(|(trim, _)| trim) {
                break;
            }
            self.pos += 1;
        }
        if self.pos > at {
            self.push(Tok::Space, at);
        }
    }

    /// The character at the current position (read as a byte when ASCII).
    fn peek_char(&self) -> Option<char> {
        match self.bytes().get(self.pos) {
            Some(b) if b.is_ascii() => Some(char::from(*b)),
            Some(_) => self.src[self.pos..].chars().next(),
            None => None,
        }
    }

    fn at_terminator(&self) -> bool {
        let Some(c) = self.peek_char() else {
            return true;
        };
        if matches!(
            c,
            ' ' | '\t' | '\r' | '\n' | '.' | ',' | '|' | ':' | ')' | '('
        ) {
            return true;
        }
        self.src[self.pos..].starts_with("}}")
    }

    fn take_alnum(&mut self) -> &'a str {
        let src = self.src;
        let start = self.pos;
        let bytes = src.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            if b.is_ascii_alphanumeric() || b == b'_' {
                self.pos += 1;
                continue;
            }
            match src[self.pos..].chars().next() {
                Some(c) if !c.is_ascii() && is_alnum(c) => self.pos += c.len_utf8(),
                _ => break,
            }
        }
        &src[start..self.pos]
    }

    fn bad_char(&self) -> ParseError {
        let c = self.src[self.pos..].chars().next().unwrap_or(' ');
        self.err(self.pos, format!("bad character {c:?}"))
    }

    fn lex_identifier(&mut self) -> Result<(), ParseError> {
        let at = self.pos;
        let word = self.take_alnum();
        if !self.at_terminator() {
            return Err(self.bad_char());
        }
        let tok = if let Some(kw) = KEYWORDS.iter().find(|k| **k == word) {
            Tok::Keyword(kw)
        } else if word == "true" || word == "false" {
            Tok::Bool(word == "true")
        } else if word == "nil" {
            Tok::Nil
        } else {
            Tok::Ident(word)
        };
        self.push(tok, at);
        Ok(())
    }

    fn lex_field(&mut self) -> Result<(), ParseError> {
        let at = self.pos;
        self.pos += 1;
        if self.at_terminator() {
            self.push(Tok::Dot, at);
            return Ok(());
        }
        let word = self.take_alnum();
        if word.is_empty() || !self.at_terminator() {
            return Err(self.bad_char());
        }
        self.push(Tok::Field(word), at);
        Ok(())
    }

    fn lex_variable(&mut self) -> Result<(), ParseError> {
        let at = self.pos;
        self.pos += 1;
        self.take_alnum();
        if !self.at_terminator() {
            return Err(self.bad_char());
        }
        let name = &self.src[at..self.pos];
        self.push(Tok::Variable(name), at);
        Ok(())
    }

    /// The index of the quote that closes the literal starting at `at`.
    fn closing_quote(&self, at: usize, quote: u8, what: &str) -> Result<usize, ParseError> {
        let b = self.bytes();
        let mut i = at + 1;
        loop {
            match b.get(i) {
                None | Some(b'\n') => return Err(self.err(at, format!("unterminated {what}"))),
                Some(b'\\') => i += 2,
                Some(c) if *c == quote => return Ok(i),
                Some(_) => i += 1,
            }
        }
    }

    fn lex_quote(&mut self) -> Result<(), ParseError> {
        let at = self.pos;
        let end = self.closing_quote(at, b'"', "quoted string")?;
        let raw = &self.src[at + 1..end];
        let s = if raw.contains('\\') {
            Cow::Owned(unquote(raw).ok_or_else(|| self.err(at, "invalid syntax in quoted string"))?)
        } else {
            Cow::Borrowed(raw)
        };
        self.pos = end + 1;
        self.push(Tok::Str(s), at);
        Ok(())
    }

    fn lex_raw(&mut self) -> Result<(), ParseError> {
        let at = self.pos;
        let Some(end) = self.src[at + 1..].find('`') else {
            return Err(self.err(at, "unterminated raw quoted string"));
        };
        let raw = &self.src[at + 1..at + 1 + end];
        let s = if raw.contains('\r') {
            Cow::Owned(raw.replace('\r', ""))
        } else {
            Cow::Borrowed(raw)
        };
        self.pos = at + 1 + end + 1;
        self.push(Tok::Str(s), at);
        Ok(())
    }

    fn lex_char(&mut self) -> Result<(), ParseError> {
        let at = self.pos;
        let end = self.closing_quote(at, b'\'', "character constant")?;
        let value = unquote_char(&self.src[at + 1..end])
            .ok_or_else(|| self.err(at, "malformed character constant"))?;
        self.pos = end + 1;
        let text = &self.src[at..=end];
        self.push(Tok::Char(text, value), at);
        Ok(())
    }

    fn lex_number(&mut self) -> Result<(), ParseError> {
        let at = self.pos;
        let src = self.src;
        let b = src.as_bytes();
        let mut i = self.pos;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let decimal: fn(u8) -> bool = |c| c.is_ascii_digit() || c == b'_';
        let mut digit = decimal;
        let mut hex = false;
        if b.get(i) == Some(&b'0') {
            match b.get(i + 1) {
                Some(b'x' | b'X') => {
                    i += 2;
                    digit = |c| c.is_ascii_hexdigit() || c == b'_';
                    hex = true;
                }
                Some(b'o' | b'O') => {
                    i += 2;
                    digit = |c| matches!(c, b'0'..=b'7' | b'_');
                }
                Some(b'b' | b'B') => {
                    i += 2;
                    digit = |c| matches!(c, b'0' | b'1' | b'_');
                }
                _ => {}
            }
        }
        let take = |i: &mut usize, digit: fn(u8) -> bool| {
            while b.get(*i).is_some_and(|c| digit(*c)) {
                *i += 1;
            }
        };
        take(&mut i, digit);
        if b.get(i) == Some(&b'.') {
            i += 1;
            take(&mut i, digit);
        }
        // In hex, `e` is a digit; only `p` starts an exponent.
        let exponent = |c: u8| matches!(c, b'p' | b'P') || (!hex && matches!(c, b'e' | b'E'));
        if b.get(i).is_some_and(|c| exponent(*c)) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            take(&mut i, decimal);
        }
        self.pos = i;
        if self.src[i..].chars().next().is_some_and(is_alnum) {
            return Err(self.err(at, format!("bad number syntax: {:?}", &self.src[at..i])));
        }
        if i == at || (i == at + 1 && matches!(b[at], b'+' | b'-')) {
            return Err(self.err(at, "bad number syntax"));
        }
        let text = &self.src[at..i];
        self.push(Tok::Number(text), at);
        Ok(())
    }
}

/// Go's `strconv.Unquote` for the inside of a double-quoted string.
pub fn unquote(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(unescape(&mut chars, '"')?);
    }
    Some(out)
}

fn unquote_char(raw: &str) -> Option<i64> {
    let mut chars = raw.chars().peekable();
    let c = chars.next()?;
    let value = if c == '\\' {
        unescape(&mut chars, '\'')?
    } else {
        c
    };
    if chars.next().is_some() {
        return None;
    }
    Some(value as i64)
}

fn unescape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, quote: char) -> Option<char> {
    let hex = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize| {
        let s: String = chars.take(n).collect();
        if s.len() != n {
            return None;
        }
        u32::from_str_radix(&s, 16).ok().and_then(char::from_u32)
    };
    Some(match chars.next()? {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        'a' => '\x07',
        'b' => '\x08',
        'f' => '\x0c',
        'v' => '\x0b',
        '\\' => '\\',
        'x' => hex(chars, 2)?,
        'u' => hex(chars, 4)?,
        'U' => hex(chars, 8)?,
        c @ '0'..='7' => {
            let rest: String = chars.take(2).collect();
            let s = format!("{c}{rest}");
            char::from_u32(u32::from_str_radix(&s, 8).ok()?)?
        }
        c if c == quote => c,
        _ => return None,
    })
}
