//! The parse tree of a Go text/template, as `text/template/parse` builds it.

use std::fmt;
use std::sync::Arc;

/// A byte offset into the source of the template that holds a node.
pub type Pos = usize;

/// A list of nodes executed in order.
pub type List = Vec<Node>;

/// A byte range of a tree's source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// One node of a template body.
#[derive(Debug, Clone)]
pub enum Node {
    /// Plain text copied to the output, kept as a range of the source.
    Text(Span),
    /// `{{ pipeline }}`: prints the value unless the pipeline declares variables.
    Action(Pipeline),
    /// `{{ if }}` / `{{ else if }}` / `{{ else }}`.
    If(Branch),
    /// `{{ with }}` / `{{ else with }}` / `{{ else }}`.
    With(Branch),
    /// `{{ range }}` / `{{ else }}`.
    Range(Branch),
    /// `{{ template "name" pipeline }}`.
    Template {
        /// Where the action starts.
        pos: Pos,
        /// The template to run.
        name: String,
        /// The data to run it with.
        pipe: Option<Pipeline>,
    },
    /// `{{ break }}` inside a range.
    Break,
    /// `{{ continue }}` inside a range.
    Continue,
}

/// The shared shape of `if`, `with` and `range`.
#[derive(Debug, Clone)]
pub struct Branch {
    /// Where the action starts.
    pub pos: Pos,
    /// The condition or the value to range over.
    pub pipe: Pipeline,
    /// Executed when the condition holds (or per element).
    pub list: List,
    /// Executed otherwise (`else`), possibly a nested `if`/`with`.
    pub else_list: Option<List>,
}

/// A pipeline: optional variable declarations, then commands joined by `|`.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// Where the pipeline starts.
    pub pos: Pos,
    /// Declared or assigned variables (with their `$`).
    pub decl: Vec<Arc<str>>,
    /// True for `=`, false for `:=`.
    pub is_assign: bool,
    /// The commands, the output of each fed as the last argument of the next.
    pub cmds: Vec<Command>,
}

/// One command of a pipeline: an operand, or a function with arguments.
#[derive(Debug, Clone)]
pub struct Command {
    /// Where the command starts.
    pub pos: Pos,
    /// The words of the command.
    pub args: Vec<Arg>,
}

/// One word of a command.
#[derive(Debug, Clone)]
pub enum Arg {
    /// `.`
    Dot,
    /// `nil`
    Nil,
    /// `true` / `false`
    Bool(bool),
    /// A number constant.
    Number(Number),
    /// A string constant (already unquoted).
    String(Arc<str>),
    /// A function name, with what it calls resolved at parse time.
    Identifier(Pos, &'static str, Callee),
    /// `.a.b.c`
    Field(Pos, Vec<String>),
    /// `$x.a.b` (`$` alone for the root).
    Variable(Pos, String, Vec<String>),
    /// `(pipeline).a.b`
    Chain(Pos, Box<Arg>, Vec<String>),
    /// `(pipeline)`
    Pipe(Box<Pipeline>),
}

/// What a function name calls, decided once when the template is parsed
/// so that a call does not look its name up again.
#[derive(Debug, Clone, Copy)]
pub enum Callee {
    /// A function that keeps map references (`template::structural`), with
    /// the library version for the calls it leaves to the library.
    Structural(crate::render::funcs::Function),
    /// A function of the library (`render::funcs`), on plain values.
    Library(crate::render::funcs::Function),
    /// `and`: stops at the first false argument.
    And,
    /// `or`: stops at the first true argument.
    Or,
    /// Helm's `include`.
    Include,
    /// Helm's `tpl`.
    Tpl,
    /// Helm's `lookup`, answered by the render's [`crate::render::Lookup`].
    Lookup,
    /// Another built-in of `text/template` (`eq`, `len`, `index`, ...).
    Builtin,
}

impl Callee {
    /// What the function `name` calls; `None` when no function has that name.
    pub fn of(name: &str) -> Option<(&'static str, Callee)> {
        if let Some(builtin) = super::builtins::NAMES.iter().find(|n| **n == name) {
            let callee = match *builtin {
                "and" => Callee::And,
                "or" => Callee::Or,
                "include" => Callee::Include,
                "tpl" => Callee::Tpl,
                "lookup" => Callee::Lookup,
                _ => Callee::Builtin,
            };
            return Some((builtin, callee));
        }
        let (known, func) = crate::render::funcs::lookup_named(name)?;
        let callee = if super::structural::handles(known) {
            Callee::Structural(func)
        } else {
            Callee::Library(func)
        };
        Some((known, callee))
    }
}

/// A number constant with the forms Go gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Number {
    /// The source text.
    pub text: String,
    /// The value as an int, if it is one.
    pub int: Option<i64>,
    /// The value as a float, if it is one.
    pub float: Option<f64>,
    /// Whether Go treats the constant as a float (`1.5`, `1e3`).
    pub is_float: bool,
}

/// A parsed template file: its main body and the templates it defines.
#[derive(Debug, Clone)]
pub struct Tree {
    /// The name the source was parsed under (a file path).
    pub name: Arc<str>,
    /// The source text (for line and column of errors).
    pub text: Arc<str>,
    /// The top-level body.
    pub root: List,
}

impl Tree {
    /// Line (1-based) and column (0-based byte, as Go counts) of a position.
    pub fn line_col(&self, pos: Pos) -> (usize, usize) {
        let pos = pos.min(self.text.len());
        let before = &self.text.as_bytes()[..pos];
        let line = 1 + before.iter().filter(|b| **b == b'\n').count();
        let col = match before.iter().rposition(|b| *b == b'\n') {
            Some(nl) => pos - (nl + 1),
            None => pos,
        };
        (line, col)
    }

    /// The source text a `Node::Text` stands for (empty if the span
    /// does not fit the source, which the parser never produces).
    pub fn text_of(&self, span: Span) -> &str {
        self.text.get(span.start..span.end).unwrap_or_default()
    }

    /// Whether the body has nothing but whitespace text (Go's `IsEmptyTree`).
    pub fn is_empty(&self) -> bool {
        self.root
            .iter()
            .all(|n| matches!(n, Node::Text(span) if self.text_of(*span).trim().is_empty()))
    }
}

fn write_fields(f: &mut fmt::Formatter<'_>, fields: &[String]) -> fmt::Result {
    for field in fields {
        write!(f, ".{field}")?;
    }
    Ok(())
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Dot => f.write_str("."),
            Arg::Nil => f.write_str("nil"),
            Arg::Bool(b) => write!(f, "{b}"),
            Arg::Number(n) => f.write_str(&n.text),
            Arg::String(s) => write!(f, "{s:?}"),
            Arg::Identifier(_, name, _) => f.write_str(name),
            Arg::Field(_, fields) => write_fields(f, fields),
            Arg::Variable(_, name, fields) => {
                f.write_str(name)?;
                write_fields(f, fields)
            }
            Arg::Chain(_, base, fields) => {
                write!(f, "{base}")?;
                write_fields(f, fields)
            }
            Arg::Pipe(p) => write!(f, "({p})"),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, arg) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{arg}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            for (i, name) in self.decl.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                f.write_str(name)?;
            }
            f.write_str(if self.is_assign { " = " } else { " := " })?;
        }
        for (i, cmd) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{cmd}")?;
        }
        Ok(())
    }
}
