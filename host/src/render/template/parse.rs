//! The parser: turns tokens into [`Tree`]s, one for the file's body and one
//! per `define` or `block`, with Go's rules for pipelines, declarations,
//! `else if`/`else with` chains and `break`/`continue` placement.

use std::sync::Arc;

use super::ParseError;
use super::ast::{Arg, Branch, Command, List, Node, Number, Pipeline, Tree};
use super::lex::{Tok, Token, lex};

/// The result of parsing one source: its body and the templates it defines.
#[derive(Debug)]
pub struct Parsed {
    /// The body under the source's own name.
    pub main: Tree,
    /// `define`d and `block` templates, in source order.
    pub defines: Vec<(String, Tree)>,
}

/// Parses `src` as the template `name`. Identifiers must name a built-in
/// or a library function (Go rejects unknown ones at parse time).
///
/// # Errors
/// [`ParseError`] with the template name and line, in Go's wording.
pub fn parse(name: &str, src: &str) -> Result<Parsed, ParseError> {
    let tokens = lex(name, src)?;
    let text: Arc<str> = Arc::from(src);
    let name_rc: Arc<str> = Arc::from(name);
    let mut p = Parser {
        name,
        src,
        toks: tokens,
        i: 0,
        range_depth: 0,
        vars: vec!["$"],
        defines: Vec::new(),
    };
    let root = p.parse_top()?;
    let mk = |root: List| Tree {
        name: name_rc.clone(),
        text: text.clone(),
        root,
    };
    let defines = std::mem::take(&mut p.defines)
        .into_iter()
        .map(|(n, body)| (n, mk(body)))
        .collect();
    Ok(Parsed {
        main: mk(root),
        defines,
    })
}

struct Parser<'a> {
    name: &'a str,
    src: &'a str,
    toks: Vec<Token<'a>>,
    i: usize,
    range_depth: usize,
    /// Variables in scope, as Go's parser tracks them.
    vars: Vec<&'a str>,
    defines: Vec<(String, List)>,
}

/// How an item list ended.
enum End {
    /// At `{{end}}`.
    Done,
    /// At `{{else}}` (its position).
    Else(usize),
    /// At the end of the input.
    Eof,
}

impl<'a> Parser<'a> {
    fn err(&self, pos: usize, msg: impl Into<String>) -> ParseError {
        ParseError::at(self.name, self.src, pos, msg)
    }

    fn peek(&self) -> &Token<'a> {
        &self.toks[self.i.min(self.toks.len() - 1)]
    }

    /// Consumes the current token. Tokens are never revisited after being
    /// consumed, so the text moves out instead of being copied.
    fn next(&mut self) -> Token<'a> {
        let i = self.i.min(self.toks.len() - 1);
        if matches!(self.toks[i].tok, Tok::Eof) {
            return self.toks[i].clone();
        }
        self.i += 1;
        let pos = self.toks[i].pos;
        let tok = std::mem::replace(&mut self.toks[i].tok, Tok::Space);
        Token { tok, pos }
    }

    fn skip_space(&mut self) {
        while matches!(self.peek().tok, Tok::Space) {
            self.i += 1;
        }
    }

    fn peek_non_space(&mut self) -> &Token<'a> {
        self.skip_space();
        self.peek()
    }

    fn next_non_space(&mut self) -> Token<'a> {
        self.skip_space();
        self.next()
    }

    fn expect_close(&mut self, context: &str) -> Result<(), ParseError> {
        let t = self.next_non_space();
        if !matches!(t.tok, Tok::Close) {
            return Err(self.unexpected(&t, context));
        }
        Ok(())
    }

    fn unexpected(&self, t: &Token<'_>, context: &str) -> ParseError {
        let what = match &t.tok {
            Tok::Close => "<}}>".to_string(),
            Tok::Eof => "EOF".to_string(),
            other => format!("{other:?}"),
        };
        self.err(t.pos, format!("unexpected {what} in {context}"))
    }

    fn parse_top(&mut self) -> Result<List, ParseError> {
        let mut root = Vec::with_capacity(16);
        loop {
            let (is_eof, is_open, pos) = {
                let t = self.peek();
                (matches!(t.tok, Tok::Eof), matches!(t.tok, Tok::Open), t.pos)
            };
            match () {
                () if is_eof => return Ok(root),
                () if is_open => {
                    let t_pos = pos;
                    let save = self.i;
                    self.i += 1;
                    if matches!(self.peek_non_space().tok, Tok::Keyword("define")) {
                        self.i += 1;
                        self.parse_define(t_pos)?;
                        continue;
                    }
                    self.i = save;
                    match self.text_or_action()? {
                        Item::Node(n) => root.push(n),
                        Item::End(pos) => return Err(self.err(pos, "unexpected {{end}}")),
                        Item::Else(pos) => return Err(self.err(pos, "unexpected {{else}}")),
                    }
                }
                () => match self.text_or_action()? {
                    Item::Node(n) => root.push(n),
                    Item::End(pos) | Item::Else(pos) => {
                        return Err(self.err(pos, "unexpected token"));
                    }
                },
            }
        }
    }

    fn parse_define(&mut self, pos: usize) -> Result<(), ParseError> {
        let t = self.next_non_space();
        let Tok::Str(name) = t.tok else {
            return Err(self.err(t.pos, "unexpected name in define clause"));
        };
        self.expect_close("define clause")?;
        let outer_vars = std::mem::replace(&mut self.vars, vec!["$"]);
        let parsed = self.item_list();
        self.vars = outer_vars;
        let (list, end) = parsed?;
        match end {
            End::Done => {}
            End::Else(p) => return Err(self.err(p, "unexpected {{else}} in define clause")),
            End::Eof => return Err(self.err(pos, "unexpected EOF in define clause")),
        }
        self.defines.push((name.into_owned(), list));
        Ok(())
    }

    /// Parses items until `{{end}}` or `{{else}}` (left unconsumed after the
    /// `else` keyword so the caller can look for `if`/`with`).
    fn item_list(&mut self) -> Result<(List, End), ParseError> {
        let mut list = Vec::new();
        loop {
            if matches!(self.peek().tok, Tok::Eof) {
                return Ok((list, End::Eof));
            }
            match self.text_or_action()? {
                Item::Node(n) => list.push(n),
                Item::End(_) => return Ok((list, End::Done)),
                Item::Else(p) => return Ok((list, End::Else(p))),
            }
        }
    }

    fn text_or_action(&mut self) -> Result<Item, ParseError> {
        let t = self.next();
        match t.tok {
            Tok::Text(span) => Ok(Item::Node(Node::Text(span))),
            Tok::Open => self.action(t.pos),
            _ => Err(self.unexpected(&t, "input")),
        }
    }

    fn action(&mut self, pos: usize) -> Result<Item, ParseError> {
        let t = self.peek_non_space();
        let at = t.pos;
        let Tok::Keyword(kw) = t.tok else {
            let pipe = self.pipeline("command", false)?;
            return Ok(Item::Node(Node::Action(pipe)));
        };
        self.i += 1;
        match kw {
            "end" => {
                self.expect_close("end")?;
                Ok(Item::End(at))
            }
            "else" => {
                if !matches!(
                    self.peek_non_space().tok,
                    Tok::Keyword("if") | Tok::Keyword("with")
                ) {
                    self.expect_close("else")?;
                }
                Ok(Item::Else(at))
            }
            "if" => Ok(Item::Node(Node::If(self.control(pos, "if")?))),
            "with" => Ok(Item::Node(Node::With(self.control(pos, "with")?))),
            "range" => Ok(Item::Node(Node::Range(self.control(pos, "range")?))),
            "break" | "continue" => {
                if self.range_depth == 0 {
                    return Err(self.err(at, format!("{{{{{kw}}}}} outside {{{{range}}}}")));
                }
                self.expect_close(kw)?;
                Ok(Item::Node(if kw == "break" {
                    Node::Break
                } else {
                    Node::Continue
                }))
            }
            "template" => self.template_action(pos, "template").map(Item::Node),
            "block" => self.block(pos).map(Item::Node),
            "define" => Err(self.err(at, "unexpected <define> in command")),
            other => Err(self.err(at, format!("unexpected <{other}> in command"))),
        }
    }

    fn template_action(&mut self, pos: usize, context: &str) -> Result<Node, ParseError> {
        let t = self.next_non_space();
        let Tok::Str(name) = t.tok else {
            return Err(self.unexpected(&t, &format!("{context} clause")));
        };
        let name = name.into_owned();
        let pipe = if matches!(self.peek_non_space().tok, Tok::Close) {
            self.i += 1;
            None
        } else {
            Some(self.pipeline(context, false)?)
        };
        Ok(Node::Template { pos, name, pipe })
    }

    fn block(&mut self, pos: usize) -> Result<Node, ParseError> {
        let node = self.template_action(pos, "block")?;
        let (list, end) = self.item_list()?;
        if !matches!(end, End::Done) {
            return Err(self.err(pos, "unexpected end of block clause"));
        }
        if let Node::Template { name, .. } = &node {
            self.defines.push((name.clone(), list));
        }
        Ok(node)
    }

    fn control(&mut self, pos: usize, context: &'static str) -> Result<Branch, ParseError> {
        let scope = self.vars.len();
        let branch = self.control_body(pos, context);
        self.vars.truncate(scope);
        branch
    }

    fn control_body(&mut self, pos: usize, context: &'static str) -> Result<Branch, ParseError> {
        let pipe = self.pipeline(context, false)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let (list, end) = self.item_list()?;
        if context == "range" {
            self.range_depth -= 1;
        }
        let else_list = match end {
            End::Done => None,
            End::Eof => return Err(self.err(pos, format!("unexpected EOF in {context}"))),
            End::Else(else_pos) => {
                let next = match self.peek_non_space().tok {
                    Tok::Keyword(kw) => Some(kw),
                    _ => None,
                };
                if context != "range" && next == Some(context) {
                    // `{{else if}}` / `{{else with}}`: a nested branch sharing the `{{end}}`.
                    self.i += 1;
                    let nested = self.control(else_pos, context)?;
                    Some(vec![if context == "if" {
                        Node::If(nested)
                    } else {
                        Node::With(nested)
                    }])
                } else {
                    if matches!(next, Some("if" | "with")) {
                        return Err(
                            self.err(else_pos, format!("unexpected else-chain in {context}"))
                        );
                    }
                    let (else_list, end) = self.item_list()?;
                    if !matches!(end, End::Done) {
                        return Err(self.err(pos, "expected end; found else or EOF"));
                    }
                    Some(else_list)
                }
            }
        };
        Ok(Branch {
            pos,
            pipe,
            list,
            else_list,
        })
    }

    /// Parses a pipeline up to `}}` (or `)` when `in_paren`).
    fn pipeline(&mut self, context: &str, in_paren: bool) -> Result<Pipeline, ParseError> {
        let start = self.peek_non_space().pos;
        let mut pipe = Pipeline {
            pos: start,
            decl: Vec::new(),
            is_assign: false,
            cmds: Vec::with_capacity(2),
        };
        self.declarations(&mut pipe, context)?;
        loop {
            let t = self.peek_non_space();
            match &t.tok {
                Tok::Close if !in_paren => {
                    self.i += 1;
                    break;
                }
                Tok::RParen if in_paren => {
                    self.i += 1;
                    break;
                }
                Tok::Bool(_)
                | Tok::Char(..)
                | Tok::Dot
                | Tok::Field(_)
                | Tok::Ident(_)
                | Tok::Number(_)
                | Tok::Nil
                | Tok::Str(_)
                | Tok::Variable(_)
                | Tok::LParen => {
                    let cmd = self.command(in_paren)?;
                    pipe.cmds.push(cmd);
                }
                _ => return Err(self.unexpected(self.peek(), context)),
            }
        }
        if pipe.cmds.is_empty() {
            return Err(self.err(start, format!("missing value for {context}")));
        }
        for (i, cmd) in pipe.cmds.iter().enumerate().skip(1) {
            if matches!(
                cmd.args.first(),
                Some(Arg::Bool(_) | Arg::Dot | Arg::Nil | Arg::Number(_) | Arg::String(_))
            ) {
                return Err(self.err(
                    cmd.pos,
                    format!("non executable command in pipeline stage {}", i + 1),
                ));
            }
        }
        Ok(pipe)
    }

    fn declarations(&mut self, pipe: &mut Pipeline, context: &str) -> Result<(), ParseError> {
        loop {
            let save = self.i;
            let t = self.peek_non_space();
            let at = t.pos;
            let Tok::Variable(name) = t.tok else {
                return Ok(());
            };
            self.i += 1;
            match self.peek_non_space().tok {
                ref next @ (Tok::Declare | Tok::Assign) => {
                    pipe.is_assign = matches!(next, Tok::Assign);
                    self.i += 1;
                    pipe.decl.push(Arc::from(name));
                    self.vars.push(name);
                    return Ok(());
                }
                Tok::Comma => {
                    self.i += 1;
                    pipe.decl.push(Arc::from(name));
                    self.vars.push(name);
                    if context == "range" && pipe.decl.len() < 2 {
                        if matches!(self.peek_non_space().tok, Tok::Variable(_)) {
                            continue;
                        }
                        return Err(self.err(at, "range can only initialize variables"));
                    }
                    return Err(self.err(at, format!("too many declarations in {context}")));
                }
                _ => {
                    self.i = save;
                    return Ok(());
                }
            }
        }
    }

    fn command(&mut self, in_paren: bool) -> Result<Command, ParseError> {
        let pos = self.peek_non_space().pos;
        let mut args = Vec::with_capacity(4);
        loop {
            self.skip_space();
            if let Some(arg) = self.operand()? {
                args.push(arg);
            }
            match self.peek().tok {
                Tok::Space => {
                    self.i += 1;
                    match self.peek_non_space().tok {
                        Tok::Close if !in_paren => break,
                        Tok::RParen if in_paren => break,
                        Tok::Pipe => {
                            self.i += 1;
                            break;
                        }
                        _ => continue,
                    }
                }
                Tok::Close if !in_paren => break,
                Tok::RParen if in_paren => break,
                Tok::Pipe => {
                    self.i += 1;
                    break;
                }
                _ => return Err(self.unexpected(self.peek(), "operand")),
            }
        }
        if args.is_empty() {
            return Err(self.err(pos, "empty command"));
        }
        Ok(Command { pos, args })
    }

    fn operand(&mut self) -> Result<Option<Arg>, ParseError> {
        let Some(term) = self.term()? else {
            return Ok(None);
        };
        let mut fields = Vec::new();
        let chain_pos = self.peek().pos;
        while matches!(self.peek().tok, Tok::Field(_)) {
            if let Tok::Field(f) = self.next().tok {
                fields.push(f.to_string());
            }
        }
        if fields.is_empty() {
            return Ok(Some(term));
        }
        Ok(Some(match term {
            Arg::Field(p, mut base) => {
                base.extend(fields);
                Arg::Field(p, base)
            }
            Arg::Variable(p, name, mut base) => {
                base.extend(fields);
                Arg::Variable(p, name, base)
            }
            Arg::Bool(_) | Arg::String(_) | Arg::Number(_) | Arg::Nil | Arg::Dot => {
                return Err(self.err(
                    chain_pos,
                    format!("unexpected . after term {:?}", term.to_string()),
                ));
            }
            other => Arg::Chain(chain_pos, Box::new(other), fields),
        }))
    }

    fn term(&mut self) -> Result<Option<Arg>, ParseError> {
        let is_term = matches!(
            self.peek().tok,
            Tok::Ident(_)
                | Tok::Dot
                | Tok::Nil
                | Tok::Variable(_)
                | Tok::Field(_)
                | Tok::Bool(_)
                | Tok::Char(..)
                | Tok::Number(_)
                | Tok::LParen
                | Tok::Str(_)
        );
        if !is_term {
            return Ok(None);
        }
        let t = self.next();
        let arg = match t.tok {
            Tok::Ident(name) => {
                let Some((known, callee)) = super::ast::Callee::of(name) else {
                    return Err(self.err(t.pos, format!("function {name:?} not defined")));
                };
                Arg::Identifier(t.pos, known, callee)
            }
            Tok::Dot => Arg::Dot,
            Tok::Nil => Arg::Nil,
            Tok::Variable(name) => {
                if !self.vars.contains(&name) {
                    return Err(self.err(t.pos, format!("undefined variable {name:?}")));
                }
                Arg::Variable(t.pos, name.to_string(), Vec::new())
            }
            Tok::Field(f) => Arg::Field(t.pos, vec![f.to_string()]),
            Tok::Bool(b) => Arg::Bool(b),
            Tok::Char(text, value) => Arg::Number(Number {
                text: text.to_string(),
                int: Some(value),
                float: Some(value as f64),
                is_float: false,
            }),
            Tok::Number(text) => Arg::Number(
                parse_number(text)
                    .ok_or_else(|| self.err(t.pos, format!("illegal number syntax: {text:?}")))?,
            ),
            Tok::LParen => {
                let pipe = self.pipeline("parenthesized pipeline", true)?;
                return Ok(Some(Arg::Pipe(Box::new(pipe))));
            }
            Tok::Str(s) => Arg::String(Arc::from(&*s)),
            _ => return Ok(None),
        };
        Ok(Some(arg))
    }
}

enum Item {
    Node(Node),
    End(usize),
    Else(usize),
}

/// Go's number constant rules: ints (with 0x/0o/0b/0 prefixes and `_`) and
/// floats; a float constant is one written with `.`, `e` or `p`.
pub fn parse_number(text: &str) -> Option<Number> {
    if let Some(number) = plain_decimal(text) {
        return Some(number);
    }
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let (neg, body) = match clean.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, clean.strip_prefix('+').unwrap_or(&clean)),
    };
    let lower = body.to_ascii_lowercase();
    let int = if let Some(hex) = lower.strip_prefix("0x") {
        if hex.contains(['.', 'p']) {
            None
        } else {
            i64::from_str_radix(hex, 16).ok()
        }
    } else if let Some(oct) = lower.strip_prefix("0o") {
        i64::from_str_radix(oct, 8).ok()
    } else if let Some(bin) = lower.strip_prefix("0b") {
        i64::from_str_radix(bin, 2).ok()
    } else if lower.len() > 1 && lower.starts_with('0') && lower.bytes().all(|b| b.is_ascii_digit())
    {
        i64::from_str_radix(&lower[1..], 8).ok()
    } else if lower.bytes().all(|b| b.is_ascii_digit()) && !lower.is_empty() {
        lower.parse::<i64>().ok()
    } else {
        None
    };
    let int = int.map(|i| if neg { -i } else { i });
    let looks_float = !lower.starts_with("0x") && lower.contains(['.', 'e', 'p']);
    if let Some(i) = int {
        return Some(Number {
            text: text.to_string(),
            int: Some(i),
            float: Some(i as f64),
            is_float: false,
        });
    }
    if !looks_float {
        return None;
    }
    let f: f64 = body.parse().ok()?;
    let f = if neg { -f } else { f };
    let as_int = (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64);
    Some(Number {
        text: text.to_string(),
        int: as_int,
        float: Some(f),
        is_float: true,
    })
}

/// The common number constant: decimal digits without a leading zero
/// (which would make it octal) that fit an `int64`.
fn plain_decimal(text: &str) -> Option<Number> {
    let digits = text.as_bytes();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits.len() > 1 && digits[0] == b'0' {
        return None;
    }
    let int: i64 = text.parse().ok()?;
    Some(Number {
        text: text.to_string(),
        int: Some(int),
        float: Some(int as f64),
        is_float: false,
    })
}
