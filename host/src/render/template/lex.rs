//! The lexer: splits template source into text and the tokens of actions,
//! applying `{{-` and `-}}` trimming and dropping comments, as Go's
//! `text/template/parse` lexer does.

use super::ParseError;

/// A token kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// Text between actions, already trimmed.
    Text(String),
    /// `{{`
    Open,
    /// `}}`
    Close,
    /// Whitespace inside an action.
    Space,
    /// A function name.
    Ident(String),
    /// A keyword: `if`, `else`, `end`, `range`, `with`, `define`, `template`,
    /// `block`, `break`, `continue`.
    Keyword(&'static str),
    /// `.name`
    Field(String),
    /// `.`
    Dot,
    /// `$` or `$name`
    Variable(String),
    /// A quoted or raw string, unquoted.
    Str(String),
    /// A character constant and its code point.
    Char(String, i64),
    /// A number as written.
    Number(String),
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
pub struct Token {
    pub tok: Tok,
    pub pos: usize,
}

const KEYWORDS: [&str; 10] = [
    "block", "break", "continue", "define", "else", "end", "if", "range", "template", "with",
];

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

struct Lexer<'a> {
    name: &'a str,
    src: &'a str,
    pos: usize,
    out: Vec<Token>,
    paren_depth: usize,
}

/// Splits `src` into tokens.
///
/// # Errors
/// [`ParseError`] naming the template and line for unclosed actions,
/// comments, strings or parentheses and bad characters.
pub fn lex(name: &str, src: &str) -> Result<Vec<Token>, ParseError> {
    let mut lx = Lexer {
        name,
        src,
        pos: 0,
        out: Vec::new(),
        paren_depth: 0,
    };
    lx.run()?;
    Ok(lx.out)
}

impl Lexer<'_> {
    fn err(&self, pos: usize, msg: impl Into<String>) -> ParseError {
        ParseError::at(self.name, self.src, pos, msg)
    }

    fn bytes(&self) -> &[u8] {
        self.src.as_bytes()
    }

    fn push(&mut self, tok: Tok, pos: usize) {
        self.out.push(Token { tok, pos });
    }

    fn run(&mut self) -> Result<(), ParseError> {
        let mut trim_left_of_next_text = false;
        loop {
            let rest = &self.src[self.pos..];
            let open = rest.find("{{");
            let text_end = open.map_or(self.src.len(), |i| self.pos + i);
            let trims_before = open.is_some_and(|i| {
                let b = &rest.as_bytes()[i + 2..];
                b.len() >= 2 && b[0] == b'-' && is_space(b[1])
            });
            let mut text = &self.src[self.pos..text_end];
            if trim_left_of_next_text {
                text = text.trim_start_matches([' ', '\t', '\r', '\n']);
            }
            if trims_before {
                text = text.trim_end_matches([' ', '\t', '\r', '\n']);
            }
            if !text.is_empty() {
                let at = self.pos;
                self.push(Tok::Text(text.to_string()), at);
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
            let Some(c) = self.src[self.pos..].chars().next() else {
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

    fn at_terminator(&self) -> bool {
        let Some(c) = self.src[self.pos..].chars().next() else {
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

    fn take_alnum(&mut self) -> &str {
        let start = self.pos;
        for c in self.src[start..].chars() {
            if !is_alnum(c) {
                break;
            }
            self.pos += c.len_utf8();
        }
        &self.src[start..self.pos]
    }

    fn bad_char(&self) -> ParseError {
        let c = self.src[self.pos..].chars().next().unwrap_or(' ');
        self.err(self.pos, format!("bad character {c:?}"))
    }

    fn lex_identifier(&mut self) -> Result<(), ParseError> {
        let at = self.pos;
        let word = self.take_alnum().to_string();
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
        let word = self.take_alnum().to_string();
        if word.is_empty() || !self.at_terminator() {
            return Err(self.bad_char());
        }
        self.push(Tok::Field(word), at);
        Ok(())
    }

    fn lex_variable(&mut self) -> Result<(), ParseError> {
        let at = self.pos;
        self.pos += 1;
        let word = self.take_alnum().to_string();
        if !self.at_terminator() {
            return Err(self.bad_char());
        }
        self.push(Tok::Variable(format!("${word}")), at);
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
        let s = unquote(&self.src[at + 1..end])
            .ok_or_else(|| self.err(at, "invalid syntax in quoted string"))?;
        self.pos = end + 1;
        self.push(Tok::Str(s), at);
        Ok(())
    }

    fn lex_raw(&mut self) -> Result<(), ParseError> {
        let at = self.pos;
        let Some(end) = self.src[at + 1..].find('`') else {
            return Err(self.err(at, "unterminated raw quoted string"));
        };
        let s = self.src[at + 1..at + 1 + end].replace('\r', "");
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
        self.push(Tok::Char(self.src[at..=end].to_string(), value), at);
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
        let mut digits: &[u8] = b"0123456789_";
        if b.get(i) == Some(&b'0') {
            match b.get(i + 1) {
                Some(b'x' | b'X') => {
                    i += 2;
                    digits = b"0123456789abcdefABCDEF_";
                }
                Some(b'o' | b'O') => {
                    i += 2;
                    digits = b"01234567_";
                }
                Some(b'b' | b'B') => {
                    i += 2;
                    digits = b"01_";
                }
                _ => {}
            }
        }
        let take = |i: &mut usize, set: &[u8]| {
            while b.get(*i).is_some_and(|c| set.contains(c)) {
                *i += 1;
            }
        };
        take(&mut i, digits);
        if b.get(i) == Some(&b'.') {
            i += 1;
            take(&mut i, digits);
        }
        let exp: &[u8] = if digits.len() > 12 { b"pP" } else { b"eEpP" };
        if b.get(i).is_some_and(|c| exp.contains(c)) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            take(&mut i, b"0123456789_");
        }
        self.pos = i;
        if self.src[i..].chars().next().is_some_and(is_alnum) {
            return Err(self.err(at, format!("bad number syntax: {:?}", &self.src[at..i])));
        }
        if i == at || (i == at + 1 && matches!(b[at], b'+' | b'-')) {
            return Err(self.err(at, "bad number syntax"));
        }
        let text = self.src[at..i].to_string();
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
