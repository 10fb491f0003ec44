//! A Go `text/template` engine with Helm's settings: lexer, parser, parse
//! tree and executor.
//!
//! Owns the template language (syntax, scoping, truthiness, comparisons,
//! printing, `include`, `tpl`, the methods of Helm's built-in objects).
//! Must not know about charts or files on disk: callers hand it source text
//! and data values; the function library lives in `render::funcs`.
//!
//! Each source is parsed once into a [`TemplateSet`]; an [`Engine`] runs
//! templates of a set any number of times.

mod ast;
mod builtins;
mod exec;
mod lex;
pub mod objects;
mod parse;
mod structural;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

pub use super::rvalue::{RMap, RValue};
pub use ast::Tree;
pub use exec::{Engine, INCLUDE_NESTING_LIMIT, MAX_DEPTH, print_value};
// The executor's values live below the engine and the function library,
// which both use them (`render::rvalue`).
use super::rvalue;

/// A template could not be parsed; the message reads like Go's
/// (`template: NAME:LINE: MESSAGE`).
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    /// The template (file) name.
    pub name: String,
    /// The 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl ParseError {
    /// An error at byte `pos` of the source `src` of template `name`.
    pub fn at(name: &str, src: &str, pos: usize, message: impl Into<String>) -> ParseError {
        let before = &src.as_bytes()[..pos.min(src.len())];
        ParseError {
            name: name.to_string(),
            line: 1 + before.iter().filter(|b| **b == b'\n').count(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "template: {}:{}: {}", self.name, self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Executing a template failed; the message reads like Go's
/// (`template: NAME:LINE:COL: executing "NAME" at <NODE>: MESSAGE`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExecError(pub String);

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExecError {}

/// Stack size for executing templates: deep `include` nesting (Helm
/// allows 1000 levels per name) needs far more than a default thread has.
pub const STACK_SIZE: usize = 1 << 28;

/// Runs `f` on a fresh stack of [`STACK_SIZE`] (reserved, not committed)
/// on the calling thread, so that deeply nested templates fail with a
/// template error rather than overflowing the caller's stack. The stack is
/// unmapped when `f` returns, and the compiled glob patterns `f` left on
/// the thread are dropped, as are the maps that contain themselves which
/// `f` made (`rvalue::CycleScope`). A panic in `f` is caught and ends here.
///
/// # Errors
/// Returns `None` when `f` panics.
pub fn with_big_stack<T>(f: impl FnOnce() -> T) -> Option<T> {
    let cycles = rvalue::CycleScope::begin();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        stacker::grow(STACK_SIZE, f)
    }));
    drop(cycles);
    objects::forget_globs();
    result.ok()
}

/// Whether `name` is a function a template may call.
pub fn is_function(name: &str) -> bool {
    builtins::NAMES.contains(&name) || crate::render::funcs::lookup(name).is_some()
}

/// Named templates: each parsed source under its own name plus every
/// template it `define`s.
#[derive(Debug, Default)]
pub struct TemplateSet {
    trees: HashMap<String, Arc<Tree>>,
}

impl TemplateSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `src` as template `name` and adds it and its definitions. As
    /// in Go, a later definition replaces an earlier one of the same name,
    /// except that an empty body never replaces a non-empty one.
    ///
    /// # Errors
    /// [`ParseError`] for any syntax error or unknown function.
    pub fn add(&mut self, name: &str, src: &str) -> Result<(), ParseError> {
        let parsed = parse::parse(name, src)?;
        self.associate(name.to_string(), parsed.main);
        for (def_name, tree) in parsed.defines {
            self.associate(def_name, tree);
        }
        Ok(())
    }

    fn associate(&mut self, name: String, tree: Tree) {
        if let Some(old) = self.trees.get(&name)
            && tree.is_empty()
            && !old.is_empty()
        {
            return;
        }
        self.trees.insert(name, Arc::new(tree));
    }

    /// The template called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Tree>> {
        self.trees.get(name)
    }

    /// Whether the set has a template called `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.trees.contains_key(name)
    }
}

#[cfg(test)]
mod tests;
