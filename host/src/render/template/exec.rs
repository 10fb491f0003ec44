//! The executor: walks parsed trees against a data value, as Go's
//! `text/template` `exec.go` does, with Helm's options (`missingkey=zero`,
//! `include`, `tpl`, recursion limits).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use super::ast::{Arg, Branch, Callee, Command, List, Node, Number, Pipeline, Tree};
use super::builtins;
use super::objects;
use super::rvalue::{self, RValue};
use super::structural;
use super::{ExecError, TemplateSet};
use crate::render::lookup::{self, Lookup};
use crate::render::{funcs, limits};
use crate::values::Value;

/// Helm's limit on how often one template name may be nested through `include`.
pub const INCLUDE_NESTING_LIMIT: usize = 1000;
/// Our limit on nested template calls of any kind (Go allows 100000, but our
/// frames live on the thread's stack).
pub const MAX_DEPTH: usize = 3000;

/// A value during execution: maps are shared references (see
/// [`super::rvalue`]), so cloning one is cheap.
pub type Val = RValue;

/// What a body asks of the enclosing range.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Flow {
    Normal,
    Break,
    Continue,
}

/// Per-render state shared by every template executed in it.
pub struct Engine<'s> {
    set: &'s TemplateSet,
    /// File sets reachable through `.Files` values (index = id).
    pub files: RefCell<Vec<Rc<objects::FileSet>>>,
    /// The names of the `include`s being executed, outermost first: how
    /// often a name occurs is Helm's nesting count for it.
    includes: RefCell<Vec<Arc<str>>>,
    tpl_cache: RefCell<HashMap<(String, String), Rc<TemplateSet>>>,
    depth: std::cell::Cell<usize>,
    /// The name `$`, shared by every frame.
    dollar: Arc<str>,
    /// Spare buffers, so that hot paths do not allocate on every call.
    spare: RefCell<Spare>,
    /// The maps that templates see as Helm's `common.Values` (`.Values`,
    /// `.Template`, a `Table` result), whose methods they may call.
    values_maps: RefCell<Vec<rvalue::MapRef>>,
    /// Maps that print as a Go `Stringer` does (`.Capabilities.KubeVersion`).
    stringers: RefCell<Vec<(rvalue::MapRef, String)>>,
    /// `.Capabilities`, a `*common.Capabilities` in Helm.
    capabilities: RefCell<Option<rvalue::MapRef>>,
    /// What answers `lookup`: the render's answerer when it is connected
    /// to a target, `None` offline (an empty map, as `helm template`).
    lookup: Option<&'s dyn Lookup>,
}

/// Emptied buffers kept for reuse by an [`Engine`].
#[derive(Default)]
struct Spare {
    /// Argument lists for library functions.
    args: Vec<Vec<Value>>,
    /// Variable stacks for template frames.
    vars: Vec<Vars>,
    /// Output buffers for `include`.
    texts: Vec<String>,
}

/// The variables in scope in a frame, innermost last.
type Vars = Vec<(Arc<str>, Val)>;

/// How many emptied buffers of each kind an engine keeps.
const SPARE_LIMIT: usize = 16;

/// Adds an emptied buffer to `pool`, unless the pool is full.
fn keep<T>(pool: &mut Vec<T>, buffer: T) {
    if pool.len() < SPARE_LIMIT {
        pool.push(buffer);
    }
}

/// One template invocation: where errors point and the variables in scope.
struct Frame<'a> {
    tree: &'a Tree,
    name: &'a str,
    vars: Vars,
    locals: Option<Rc<TemplateSet>>,
    /// The node being evaluated, for error context.
    at: Option<(usize, String)>,
}

type Res<T> = Result<T, ExecError>;

/// A function a template calls on plain values: one of the library's, or
/// the engine's own `lookup` through the render's answerer.
type Call<'a> = dyn Fn(&[Value]) -> Result<Value, funcs::FuncError> + 'a;

impl<'s> Engine<'s> {
    /// An engine over a parsed template set.
    pub fn new(set: &'s TemplateSet) -> Self {
        Engine {
            set,
            files: RefCell::new(Vec::new()),
            includes: RefCell::new(Vec::new()),
            tpl_cache: RefCell::new(HashMap::new()),
            depth: std::cell::Cell::new(0),
            dollar: Arc::from("$"),
            spare: RefCell::new(Spare::default()),
            values_maps: RefCell::new(Vec::new()),
            stringers: RefCell::new(Vec::new()),
            capabilities: RefCell::new(None),
            lookup: None,
        }
    }

    /// An engine over `set` whose `lookup` calls `lookup` answers (a
    /// connected render); `None` leaves it offline, as [`Engine::new`].
    pub fn connected(set: &'s TemplateSet, lookup: Option<&'s dyn Lookup>) -> Self {
        Engine {
            lookup,
            ..Engine::new(set)
        }
    }

    /// Makes the map `v` the templates' `.Capabilities` (for its Go type
    /// name).
    pub fn mark_capabilities(&self, v: &Val) {
        if let Val::Map(m) = v {
            *self.capabilities.borrow_mut() = Some(m.clone());
        }
    }

    /// Makes `v`, when it is a map, one of Helm's `common.Values` for the
    /// templates: `.YAML`, `.AsMap`, `.Table`, `.PathValue` and `.Encode`
    /// are its methods (taking precedence over its keys, as in Go).
    pub fn mark_values(&self, v: &Val) {
        if let Val::Map(m) = v {
            let mut all = self.values_maps.borrow_mut();
            if !all.iter().any(|x| Rc::ptr_eq(x, m)) {
                all.push(m.clone());
            }
        }
    }

    /// Makes the map `v` print, in an action, as `text` (Go prints a
    /// value whose pointer has a `String` method through it).
    pub fn mark_stringer(&self, v: &Val, text: String) {
        if let Val::Map(m) = v {
            self.stringers.borrow_mut().push((m.clone(), text));
        }
    }

    /// What `v` prints as when it is a marked `Stringer`.
    fn stringer(&self, v: &Val) -> Option<String> {
        let Val::Map(m) = v else { return None };
        self.stringers
            .borrow()
            .iter()
            .find(|(x, _)| Rc::ptr_eq(x, m))
            .map(|(_, text)| text.clone())
    }

    /// `name` when it is a method of `common.Values` and `recv` is one.
    fn values_method<'n>(&self, recv: &Val, name: &'n str) -> Option<&'n str> {
        if !VALUES_METHODS.contains(&name) {
            return None;
        }
        let Val::Map(m) = recv else { return None };
        self.values_maps
            .borrow()
            .iter()
            .any(|x| Rc::ptr_eq(x, m))
            .then_some(name)
    }

    /// Calls the `common.Values` method `name` of `recv` with `args`, with
    /// Helm 4's results and Go's errors.
    fn call_values_method(
        &self,
        recv: &rvalue::MapRef,
        name: &str,
        args: &[Val],
    ) -> Result<Val, String> {
        let want = |n: usize| {
            if args.len() == n {
                Ok(())
            } else {
                Err(format!(
                    "wrong number of args for {name}: want {n} got {}",
                    args.len()
                ))
            }
        };
        match name {
            "AsMap" => {
                want(0)?;
                // Helm returns a new empty map for an empty one.
                Ok(if recv.borrow().is_empty() {
                    Val::new_map(rvalue::RMap::new())
                } else {
                    Val::Map(recv.clone())
                })
            }
            "YAML" => {
                want(0)?;
                let whole = Val::Map(recv.clone());
                let v = whole.try_to_value().map_err(|rvalue::Cycle| {
                    format!(
                        "error calling YAML: error marshaling into JSON: {JSON_CYCLE_PREFIX}{}",
                        self.json_cycle_type(&whole)
                    )
                })?;
                Ok(Val::String(crate::values::to_yaml(&v)))
            }
            "Encode" => {
                want(1)?;
                Err(match &args[0] {
                    // Go calls it with a nil writer, which it dereferences.
                    Val::Null => "error calling Encode: runtime error: invalid memory address or nil pointer dereference".to_string(),
                    other => format!(
                        "wrong type for value; expected io.Writer; got {}",
                        go_type(&other.to_value())
                    ),
                })
            }
            "Table" => {
                want(1)?;
                let path = string_arg(&args[0])?;
                let table = values_table(recv, &path)
                    .map_err(|key| format!("error calling Table: {key:?} is not a table"))?;
                let table = Val::Map(table);
                self.mark_values(&table);
                Ok(table)
            }
            "PathValue" => {
                want(1)?;
                let path = string_arg(&args[0])?;
                values_path_value(recv, &path).map_err(|e| format!("error calling PathValue: {e}"))
            }
            _ => Err(format!("can't evaluate field {name}")),
        }
    }

    /// An empty argument list, reused when one is spare.
    fn take_args(&self) -> Vec<Value> {
        self.spare.borrow_mut().args.pop().unwrap_or_default()
    }

    /// Empties `args` and keeps it for a later call.
    fn give_args(&self, mut args: Vec<Value>) {
        args.clear();
        keep(&mut self.spare.borrow_mut().args, args);
    }

    /// An empty variable stack, reused when one is spare.
    fn take_vars(&self) -> Vars {
        self.spare.borrow_mut().vars.pop().unwrap_or_default()
    }

    /// Empties `vars` and keeps it for a later frame.
    fn give_vars(&self, mut vars: Vars) {
        vars.clear();
        keep(&mut self.spare.borrow_mut().vars, vars);
    }

    /// An empty output buffer, reused when one is spare.
    fn take_text(&self) -> String {
        self.spare.borrow_mut().texts.pop().unwrap_or_default()
    }

    /// Empties `text` and keeps it for a later `include`.
    fn give_text(&self, mut text: String) {
        text.clear();
        keep(&mut self.spare.borrow_mut().texts, text);
    }

    /// Registers a file set and returns the `.Files` value that refers to it.
    pub fn register_files(&self, files: objects::FileSet) -> Value {
        let mut all = self.files.borrow_mut();
        let empty = files.is_empty();
        all.push(Rc::new(files));
        objects::files_value(all.len() - 1, empty)
    }

    /// Executes the template `name` with `data` as `.` and `$`.
    ///
    /// # Errors
    /// [`ExecError`] in Go's format when the template is missing or any
    /// action fails.
    pub fn execute(&self, name: &str, data: Rc<Value>) -> Res<String> {
        let data = Rc::try_unwrap(data).unwrap_or_else(|rc| (*rc).clone());
        self.execute_shared(name, &RValue::from(data))
    }

    /// [`Engine::execute`] on data already converted for the engine:
    /// Sprig's `set`, `unset` and `merge` change its maps in place, as in
    /// Go, so a later template run on the same data sees what an earlier
    /// one set.
    ///
    /// # Errors
    /// As [`Engine::execute`].
    pub fn execute_shared(&self, name: &str, data: &RValue) -> Res<String> {
        let Some((tree, locals)) = self.lookup(name, &None) else {
            return Err(ExecError(format!(
                "template: no template {name:?} associated with template"
            )));
        };
        // Output is usually about as long as the source, often longer.
        let mut out = String::with_capacity(tree.text.len() * 2);
        rvalue::take_cycle_seen();
        self.run_tree(&tree, name, data.clone(), locals, &mut out)?;
        // A copy cut short by the deadline (see `RValue::to_value`) must
        // not pass for a result, nor one that cut a map containing itself.
        limits::check_deadline().map_err(|msg| ExecError(format!("template: {name}: {msg}")))?;
        if rvalue::take_cycle_seen() {
            return Err(ExecError(format!(
                "template: {name}: {}",
                rvalue::cycle_message("reading")
            )));
        }
        Ok(out)
    }

    fn lookup(
        &self,
        name: &str,
        locals: &Option<Rc<TemplateSet>>,
    ) -> Option<(Arc<Tree>, Option<Rc<TemplateSet>>)> {
        if let Some(l) = locals
            && let Some(t) = l.get(name)
        {
            return Some((t.clone(), locals.clone()));
        }
        self.set.get(name).map(|t| (t.clone(), locals.clone()))
    }

    fn run_tree(
        &self,
        tree: &Tree,
        name: &str,
        data: Val,
        locals: Option<Rc<TemplateSet>>,
        out: &mut String,
    ) -> Res<()> {
        let depth = self.depth.get() + 1;
        if depth > MAX_DEPTH {
            return Err(ExecError(limits::trip(
                limits::LimitKind::Recursion,
                format!("template: {name}: exceeded maximum template depth ({MAX_DEPTH})"),
            )));
        }
        // The deadline is checked by `walk_list`'s ticks, one for each node.
        self.depth.set(depth);
        let mut vars = self.take_vars();
        vars.push((self.dollar.clone(), data.clone()));
        let mut frame = Frame {
            tree,
            name,
            vars,
            locals,
            at: None,
        };
        let mut dot = data;
        let result = self.walk_list(&mut frame, &mut dot, &tree.root, out);
        self.depth.set(depth - 1);
        self.give_vars(frame.vars);
        result.map(|_| ())
    }

    fn err(&self, frame: &Frame<'_>, msg: impl std::fmt::Display) -> ExecError {
        match &frame.at {
            Some((pos, ctx)) => {
                let (line, col) = frame.tree.line_col(*pos);
                ExecError(format!(
                    "template: {}:{}:{}: executing {:?} at <{}>: {}",
                    frame.tree.name, line, col, frame.name, ctx, msg
                ))
            }
            None => ExecError(format!("template: {}: {}", frame.name, msg)),
        }
    }

    fn walk_list(
        &self,
        f: &mut Frame<'_>,
        dot: &mut Val,
        list: &List,
        out: &mut String,
    ) -> Res<Flow> {
        for node in list {
            if let Err(msg) = limits::tick().and_then(|()| limits::check_output(out.len())) {
                f.at = Some((node_pos(node), node_context(node)));
                return Err(self.err(f, msg));
            }
            let flow = self.walk(f, dot, node, out)?;
            if flow != Flow::Normal {
                return Ok(flow);
            }
        }
        Ok(Flow::Normal)
    }

    fn walk(&self, f: &mut Frame<'_>, dot: &mut Val, node: &Node, out: &mut String) -> Res<Flow> {
        match node {
            Node::Text(span) => out.push_str(f.tree.text_of(*span)),
            Node::Action(pipe) => {
                if print_plain_field(out, dot, pipe) {
                    return Ok(Flow::Normal);
                }
                let v = self.eval_pipeline(f, dot, pipe)?;
                if pipe.decl.is_empty() {
                    self.print(f, pipe, out, &v)?;
                }
            }
            Node::If(b) => return self.walk_if_with(f, dot, b, false, out),
            Node::With(b) => return self.walk_if_with(f, dot, b, true, out),
            Node::Range(b) => return self.walk_range(f, dot, b, out),
            Node::Template { pos, name, pipe } => {
                let data = match pipe {
                    Some(p) => self.eval_pipeline(f, dot, p)?,
                    None => Val::Null,
                };
                let Some((tree, locals)) = self.lookup(name, &f.locals) else {
                    f.at = Some((*pos, format!("{{{{template {name:?}}}}}")));
                    return Err(self.err(f, format!("template {name:?} not defined")));
                };
                self.run_tree(&tree, name, data, locals, out)?;
            }
            Node::Break => return Ok(Flow::Break),
            Node::Continue => return Ok(Flow::Continue),
        }
        Ok(Flow::Normal)
    }

    fn walk_if_with(
        &self,
        f: &mut Frame<'_>,
        dot: &mut Val,
        b: &Branch,
        is_with: bool,
        out: &mut String,
    ) -> Res<Flow> {
        let mark = f.vars.len();
        let v = self.eval_pipeline(f, dot, &b.pipe)?;
        let flow = if v.is_truthy() {
            if is_with {
                let mut new_dot = v;
                self.walk_list(f, &mut new_dot, &b.list, out)?
            } else {
                self.walk_list(f, dot, &b.list, out)?
            }
        } else if let Some(e) = &b.else_list {
            self.walk_list(f, dot, e, out)?
        } else {
            Flow::Normal
        };
        f.vars.truncate(mark);
        Ok(flow)
    }

    fn walk_range(
        &self,
        f: &mut Frame<'_>,
        dot: &mut Val,
        b: &Branch,
        out: &mut String,
    ) -> Res<Flow> {
        let mark = f.vars.len();
        // The pipeline's declarations are bound per element, not to the whole value.
        let decl = &b.pipe.decl;
        let v = self.eval_commands(f, dot, &b.pipe)?;
        // Lists and counts are walked lazily, so that a large range never
        // holds a second copy of what it walks; a map's entries are taken
        // as they are when the range starts.
        let mut items: Box<dyn Iterator<Item = (Val, Val)>> = match v {
            Val::List(items) => {
                let len = items.len();
                Box::new(
                    (0..len).filter_map(move |i| Some((Val::Int(i as i64), items.get(i)?.clone()))),
                )
            }
            Val::Int(n) if b.pipe.decl.len() < 2 => {
                Box::new((0..n).map(|i| (Val::Int(i), Val::Int(i))))
            }
            v => Box::new(self.shared_range_items(f, b, &v)?.into_iter()),
        };
        let Some(first) = items.next() else {
            let flow = match &b.else_list {
                Some(e) => self.walk_list(f, dot, e, out)?,
                None => Flow::Normal,
            };
            f.vars.truncate(mark);
            return Ok(flow);
        };
        for (key, mut elem) in std::iter::once(first).chain(items) {
            if let Err(msg) = limits::tick() {
                f.at = Some((b.pipe.pos, b.pipe.to_string()));
                return Err(self.err(f, msg));
            }
            match decl.len() {
                0 => {}
                1 => f.vars.push((decl[0].clone(), elem.clone())),
                _ => {
                    f.vars.push((decl[0].clone(), key));
                    f.vars.push((decl[1].clone(), elem.clone()));
                }
            }
            let flow = self.walk_list(f, &mut elem, &b.list, out)?;
            f.vars.truncate(mark);
            if flow == Flow::Break {
                break;
            }
        }
        Ok(Flow::Normal)
    }

    /// The (key, element) pairs `range` walks for a value other than a
    /// list or a count.
    fn shared_range_items(&self, f: &mut Frame<'_>, b: &Branch, v: &Val) -> Res<Vec<(Val, Val)>> {
        Ok(match v {
            Val::Null => Vec::new(),
            Val::Map(m) if m.borrow().contains_key(crate::values::NIL_MAP_KEY) => Vec::new(),
            Val::Map(m) if !v.is_object() => m
                .borrow()
                .iter()
                .map(|(k, x)| (Val::String(k.clone()), x.clone()))
                .collect(),
            Val::Map(_) if objects::is_files(&v.to_value()) => {
                let files = self.files_of(f, &v.to_value())?;
                files
                    .iter()
                    .map(|(k, data)| {
                        let text = String::from_utf8_lossy(data).into_owned();
                        (Val::String(k.clone()), Val::String(text))
                    })
                    .collect()
            }
            Val::Int(n) => {
                if b.pipe.decl.len() > 1 {
                    f.at = Some((b.pipe.pos, b.pipe.to_string()));
                    return Err(self.err(
                        f,
                        format!("can't use {n} to iterate over more than one variable"),
                    ));
                }
                (0..*n).map(|i| (Val::Int(i), Val::Int(i))).collect()
            }
            other => {
                f.at = Some((b.pipe.pos, b.pipe.to_string()));
                return Err(self.err(f, format!("range can't iterate over {}", other.to_value())));
            }
        })
    }

    fn files_of(&self, f: &Frame<'_>, v: &Value) -> Res<Rc<objects::FileSet>> {
        let id = objects::files_id(v).ok_or_else(|| self.err(f, "invalid .Files value"))?;
        self.files
            .borrow()
            .get(id)
            .cloned()
            .ok_or_else(|| self.err(f, "invalid .Files value"))
    }

    /// The value of a pipeline's commands, ignoring its declarations.
    fn eval_commands(&self, f: &mut Frame<'_>, dot: &mut Val, pipe: &Pipeline) -> Res<Val> {
        let mut value: Option<Val> = None;
        for cmd in &pipe.cmds {
            value = Some(self.eval_command(f, dot, cmd, value)?);
        }
        Ok(value.unwrap_or(Val::Null))
    }

    fn eval_pipeline(&self, f: &mut Frame<'_>, dot: &mut Val, pipe: &Pipeline) -> Res<Val> {
        let value = self.eval_commands(f, dot, pipe)?;
        if pipe.decl.is_empty() {
            return Ok(value);
        }
        for name in &pipe.decl {
            if pipe.is_assign {
                match f.vars.iter_mut().rev().find(|(n, _)| n == name) {
                    Some(slot) => slot.1 = value.clone(),
                    None => {
                        f.at = Some((pipe.pos, pipe.to_string()));
                        return Err(self.err(f, format!("undefined variable: {name}")));
                    }
                }
            } else {
                f.vars.push((name.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    fn eval_command(
        &self,
        f: &mut Frame<'_>,
        dot: &mut Val,
        cmd: &Command,
        fin: Option<Val>,
    ) -> Res<Val> {
        let first = &cmd.args[0];
        let rest = &cmd.args[1..];
        match first {
            Arg::Field(pos, fields) => {
                let recv = dot.clone();
                self.eval_fields(f, dot, *pos, first, recv, fields, rest, fin)
            }
            Arg::Variable(pos, name, fields) => {
                let base = self.variable(f, *pos, name)?;
                if fields.is_empty() {
                    self.not_a_function(f, cmd, fin.is_some())?;
                    return Ok(base);
                }
                self.eval_fields(f, dot, *pos, first, base, fields, rest, fin)
            }
            Arg::Chain(pos, base, fields) => {
                let recv = self.eval_arg(f, dot, base)?;
                self.eval_fields(f, dot, *pos, first, recv, fields, rest, fin)
            }
            Arg::Identifier(..) => self.call_function(f, dot, cmd, fin),
            Arg::Pipe(p) => {
                self.not_a_function(f, cmd, fin.is_some())?;
                self.eval_pipeline(f, dot, p)
            }
            _ => {
                self.not_a_function(f, cmd, fin.is_some())?;
                if matches!(first, Arg::Nil) {
                    f.at = Some((cmd.pos, cmd.to_string()));
                    return Err(self.err(f, "nil is not a command"));
                }
                self.eval_arg(f, dot, first)
            }
        }
    }

    fn not_a_function(&self, f: &mut Frame<'_>, cmd: &Command, has_final: bool) -> Res<()> {
        if cmd.args.len() > 1 || has_final {
            f.at = Some((cmd.pos, cmd.to_string()));
            return Err(self.err(
                f,
                format!("can't give argument to non-function {}", cmd.args[0]),
            ));
        }
        Ok(())
    }

    fn variable(&self, f: &mut Frame<'_>, pos: usize, name: &str) -> Res<Val> {
        match f.vars.iter().rev().find(|(n, _)| &**n == name) {
            Some((_, v)) => Ok(v.clone()),
            None => {
                f.at = Some((pos, name.to_string()));
                Err(self.err(f, format!("undefined variable: {name}")))
            }
        }
    }

    /// Evaluates `recv.fields...`; the last field receives `args` and `fin`
    /// when it is a method of a built-in object.
    #[allow(clippy::too_many_arguments)]
    fn eval_fields(
        &self,
        f: &mut Frame<'_>,
        dot: &mut Val,
        pos: usize,
        node: &Arg,
        recv: Val,
        fields: &[String],
        args: &[Arg],
        fin: Option<Val>,
    ) -> Res<Val> {
        let has_args = !args.is_empty() || fin.is_some();
        let (last, init) = match fields.split_last() {
            Some(x) => x,
            None => return Ok(recv),
        };
        // Go digs the value out of a nil `interface{}` that a pipeline or a
        // variable holds, which leaves an invalid value, and a field of an
        // invalid value is the zero value without error: so
        // `((.Values.global).postgresql).auth` is nil when `postgresql` is
        // missing. Inside one chain (`.a.b.c`, `$x.a.b`) a missing key
        // stays a nil interface and a further field fails, as below.
        if matches!(recv, Val::Null) && matches!(node, Arg::Chain(..) | Arg::Variable(..)) {
            return Ok(Val::Null);
        }
        let mut cur: Val = recv;
        for (i, name) in init.iter().enumerate() {
            if let (Some(method), Val::Map(m)) = (self.values_method(&cur, name), &cur) {
                let m = m.clone();
                match self.call_values_method(&m, method, &[]) {
                    Ok(next) => {
                        cur = next;
                        continue;
                    }
                    Err(msg) => {
                        f.at = Some((pos, node.to_string()));
                        return Err(self.err(f, msg));
                    }
                }
            }
            match plain_entry(&cur, name) {
                Some(Some(next)) => {
                    cur = next;
                    continue;
                }
                Some(None) => {
                    // Missing key: the zero value; a further field is a nil pointer.
                    f.at = Some((pos, node.to_string()));
                    return Err(self.err(
                        f,
                        format!("nil pointer evaluating interface {{}}.{}", fields[i + 1]),
                    ));
                }
                None => {}
            }
            if let Some(method @ objects::Method::Version(_)) = method_of(&cur, name) {
                // A method in the middle of a chain (`(semver "1").IncMajor.Major`):
                // its result is the receiver of the rest.
                let files = self.files.borrow();
                let result = objects::call_method(method, &cur.to_value(), &[], &files);
                drop(files);
                return match result {
                    Ok(objects::MethodResult::Value(v)) => self.eval_fields(
                        f,
                        dot,
                        pos,
                        node,
                        Val::from(v),
                        &fields[i + 1..],
                        args,
                        fin,
                    ),
                    Ok(objects::MethodResult::Files(_)) => Ok(Val::Null),
                    Err(msg) => {
                        f.at = Some((pos, node.to_string()));
                        Err(self.err(f, msg))
                    }
                };
            }
            match field(&cur, name) {
                Ok(Some(next)) => cur = next,
                Ok(None) => {
                    // Missing key: the zero value; a further field is a nil pointer.
                    f.at = Some((pos, node.to_string()));
                    return Err(self.err(
                        f,
                        format!("nil pointer evaluating interface {{}}.{}", fields[i + 1]),
                    ));
                }
                Err(msg) => {
                    f.at = Some((pos, node.to_string()));
                    return Err(self.err(f, msg));
                }
            }
        }
        if let (Some(method), Val::Map(m)) = (self.values_method(&cur, last), &cur) {
            let m = m.clone();
            if let Some((arg, msg)) = args
                .iter()
                .find_map(|a| method_arg_error(method, a).map(|m| (a, m)))
            {
                f.at = Some((pos, arg.to_string()));
                return Err(self.err(f, msg));
            }
            let vals = self.eval_args(f, dot, args, fin)?;
            return self.call_values_method(&m, method, &vals).map_err(|msg| {
                f.at = Some((pos, node.to_string()));
                self.err(f, msg)
            });
        }
        if let Some(entry) = plain_entry(&cur, last) {
            if has_args {
                f.at = Some((pos, node.to_string()));
                return Err(self.err(f, format!("{last} is not a method but has arguments")));
            }
            return Ok(entry.unwrap_or(Val::Null));
        }
        if let Some(method) = method_of(&cur, last) {
            let mut vals = Vec::with_capacity(args.len() + 1);
            for a in args {
                vals.push(self.eval_arg(f, dot, a)?.to_value());
            }
            if let Some(v) = fin {
                vals.push(v.to_value());
            }
            let files = self.files.borrow();
            let result = objects::call_method(method, &cur.to_value(), &vals, &files);
            drop(files);
            return match result {
                Ok(objects::MethodResult::Value(v)) => Ok(Val::from(v)),
                Ok(objects::MethodResult::Files(set)) => Ok(Val::from(self.register_files(set))),
                Err(msg) => {
                    f.at = Some((pos, node.to_string()));
                    Err(self.err(f, msg))
                }
            };
        }
        if has_args {
            f.at = Some((pos, node.to_string()));
            return Err(self.err(f, format!("{last} is not a method but has arguments")));
        }
        match field(&cur, last) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Ok(Val::Null),
            Err(msg) => {
                f.at = Some((pos, node.to_string()));
                Err(self.err(f, msg))
            }
        }
    }

    fn eval_arg(&self, f: &mut Frame<'_>, dot: &mut Val, arg: &Arg) -> Res<Val> {
        match arg {
            Arg::Dot => Ok(dot.clone()),
            Arg::Nil => Ok(Val::Null),
            Arg::Bool(b) => Ok(Val::Bool(*b)),
            Arg::Number(n) => Ok(Val::from(number_value(n))),
            Arg::String(s) => Ok(Val::String(String::from(&**s))),
            Arg::Field(pos, fields) => {
                let recv = dot.clone();
                self.eval_fields(f, dot, *pos, arg, recv, fields, &[], None)
            }
            Arg::Variable(pos, name, fields) => {
                let base = self.variable(f, *pos, name)?;
                self.eval_fields(f, dot, *pos, arg, base, fields, &[], None)
            }
            Arg::Chain(pos, base, fields) => {
                let recv = self.eval_arg(f, dot, base)?;
                self.eval_fields(f, dot, *pos, arg, recv, fields, &[], None)
            }
            Arg::Pipe(p) => {
                let mark = f.vars.len();
                let v = self.eval_pipeline(f, dot, p);
                f.vars.truncate(mark);
                v
            }
            Arg::Identifier(pos, ..) => {
                let cmd = Command {
                    pos: *pos,
                    args: vec![arg.clone()],
                };
                self.call_function(f, dot, &cmd, None)
            }
        }
    }

    fn eval_args(
        &self,
        f: &mut Frame<'_>,
        dot: &mut Val,
        args: &[Arg],
        fin: Option<Val>,
    ) -> Res<Vec<Val>> {
        let mut vals = Vec::with_capacity(args.len() + 1);
        for a in args {
            vals.push(self.eval_arg(f, dot, a)?);
        }
        if let Some(v) = fin {
            vals.push(v);
        }
        Ok(vals)
    }

    /// Calls the function that starts `cmd` with the rest of `cmd` as
    /// arguments, then `fin` (the previous pipeline value).
    fn call_function(
        &self,
        f: &mut Frame<'_>,
        dot: &mut Val,
        cmd: &Command,
        fin: Option<Val>,
    ) -> Res<Val> {
        let (name, callee) = match cmd.args.first() {
            Some(Arg::Identifier(_, name, callee)) => (*name, *callee),
            _ => return Err(self.err(f, "not a function call")),
        };
        let args = &cmd.args[1..];
        match callee {
            Callee::Library(func) => {
                let vals = self.eval_args(f, dot, args, fin)?;
                self.call_library(f, cmd, name, Some(&func), vals)
            }
            Callee::Structural(func) => {
                let vals = self.eval_args(f, dot, args, fin)?;
                match structural::call(name, &vals) {
                    Some(result) => result.map_err(|msg| {
                        f.at = Some((cmd.pos, cmd.to_string()));
                        self.err(f, format!("error calling {name}: {msg}"))
                    }),
                    None => self.call_library(f, cmd, name, Some(&func), vals),
                }
            }
            Callee::And | Callee::Or => {
                self.and_or(f, dot, cmd, matches!(callee, Callee::And), args, fin)
            }
            Callee::Include => {
                if let ([Arg::String(name), data_arg], None) = (args, &fin) {
                    // The usual `include "name" data`: the literal name is
                    // used in place.
                    let data = self.eval_arg(f, dot, data_arg)?;
                    return self.include_named(f, cmd, name.clone(), data);
                }
                let mut vals = self.eval_args(f, dot, args, fin)?;
                let data = (vals.len() == 2).then(|| vals.remove(1));
                self.include(f, cmd, vals, data)
            }
            Callee::Tpl => {
                let vals = self.eval_args(f, dot, args, fin)?;
                self.tpl(f, cmd, vals)
            }
            Callee::Lookup => {
                let vals = self.eval_args(f, dot, args, fin)?;
                let answer = |args: &[Value]| lookup::call(self.lookup, args);
                self.call_library(f, cmd, name, Some(&answer), vals)
            }
            Callee::Builtin => {
                let vals = self.eval_args(f, dot, args, fin)?;
                if let ("len", [v]) = (name, vals.as_slice())
                    && let Some(count) = self.file_count(v)
                {
                    // `.Files` is Go's `map[string][]byte`: its length is
                    // the number of files.
                    return Ok(Val::Int(count as i64));
                }
                match builtins::call(name, &vals) {
                    Some(r) => r.map_err(|e| {
                        f.at = Some((cmd.pos, cmd.to_string()));
                        match e {
                            builtins::CallError::Call(msg) => {
                                self.err(f, format!("error calling {name}: {msg}"))
                            }
                            builtins::CallError::Plain(msg) => self.err(f, msg),
                        }
                    }),
                    None => {
                        let func = funcs::lookup(name);
                        self.call_library(f, cmd, name, func.as_ref().map(|func| func as _), vals)
                    }
                }
            }
        }
    }

    /// How many files the `.Files` value `v` holds; `None` when `v` is
    /// not a `.Files` value.
    fn file_count(&self, v: &Val) -> Option<usize> {
        if !v.is_object() {
            return None;
        }
        let id = objects::files_id(&v.to_value())?;
        self.files.borrow().get(id).map(|set| set.len())
    }

    /// Calls the library function `func` (`name` in the template) on
    /// plain copies of `vals`.
    fn call_library(
        &self,
        f: &mut Frame<'_>,
        cmd: &Command,
        name: &str,
        func: Option<&Call<'_>>,
        vals: Vec<Val>,
    ) -> Res<Val> {
        let Some(func) = func else {
            f.at = Some((cmd.pos, cmd.to_string()));
            return Err(self.err(f, format!("function {name:?} not defined")));
        };
        // Go's names for the types of Helm's objects.
        if let ("typeOf", [v @ Val::Map(m)]) = (name, vals.as_slice()) {
            let named = if self.values_maps.borrow().iter().any(|x| Rc::ptr_eq(x, m)) {
                Some("common.Values")
            } else if self
                .capabilities
                .borrow()
                .as_ref()
                .is_some_and(|c| Rc::ptr_eq(c, m))
            {
                Some("*common.Capabilities")
            } else if v.is_object() && objects::is_files(&v.to_value()) {
                Some("engine.files")
            } else {
                None
            };
            if let Some(named) = named {
                return Ok(Val::String(named.into()));
            }
        }
        let mut plain = self.take_args();
        let shallow = looks_only_at_the_top(name);
        let json = cyclic_json_error(name);
        let mut cycle: Option<&'static str> = None;
        for v in vals {
            let converted = if shallow {
                Ok(v.to_value_cut())
            } else if json.is_some() {
                v.try_to_value()
                    .map_err(|rvalue::Cycle| self.json_cycle_type(&v))
            } else {
                v.try_into_value().map_err(|rvalue::Cycle| "")
            };
            plain.push(converted.unwrap_or_else(|via| {
                cycle.get_or_insert(via);
                Value::Null
            }));
        }
        let called = match cycle {
            Some(via) => cyclic_argument(name, via),
            None => func(&plain).and_then(|v| check_result(name, v)),
        };
        self.give_args(plain);
        match called {
            Ok(v) => Ok(Val::from(v)),
            Err(e) => Err(self.func_error(f, cmd, name, e)),
        }
    }

    /// The type encoding/json names in its cycle error for `v`: it counts
    /// the maps and lists it is inside (keys in sorted order) and, past
    /// 1000, reports the first one it meets again.
    fn json_cycle_type(&self, v: &Val) -> &'static str {
        const START_DETECTING_AFTER: usize = 1000;
        fn walk(
            engine: &Engine<'_>,
            v: &Val,
            level: usize,
            seen: &mut Vec<usize>,
        ) -> Option<&'static str> {
            let (ptr, name) = match v {
                Val::Map(m) => {
                    let typed = engine.values_maps.borrow().iter().any(|x| Rc::ptr_eq(x, m));
                    let name = if typed {
                        "common.Values"
                    } else {
                        "map[string]interface {}"
                    };
                    (Rc::as_ptr(m) as usize, name)
                }
                Val::List(l) => (Rc::as_ptr(l) as usize, "[]interface {}"),
                _ => return None,
            };
            if limits::tick().is_err() {
                return Some(name);
            }
            let level = level + 1;
            let tracked = level > START_DETECTING_AFTER;
            if tracked {
                if seen.contains(&ptr) {
                    return Some(name);
                }
                seen.push(ptr);
            }
            let found = match v {
                Val::Map(m) => {
                    let children: Vec<Val> = m.borrow().values().cloned().collect();
                    children.iter().find_map(|c| walk(engine, c, level, seen))
                }
                Val::List(l) => l.iter().find_map(|c| walk(engine, c, level, seen)),
                _ => None,
            };
            if tracked {
                seen.pop();
            }
            found
        }
        walk(self, v, 0, &mut Vec::new()).unwrap_or("map[string]interface {}")
    }

    /// Prints the value of an action.
    fn print(&self, f: &mut Frame<'_>, pipe: &Pipeline, out: &mut String, v: &Val) -> Res<()> {
        if let Some(text) = self.stringer(v) {
            out.push_str(&text);
            return Ok(());
        }
        let mark = out.len();
        rvalue::print(out, v).map_err(|rvalue::Cycle| {
            out.truncate(mark);
            f.at = Some((pipe.pos, pipe.to_string()));
            self.err(f, rvalue::cycle_message("printing"))
        })
    }

    /// The error a library function's failure is reported as.
    fn func_error(
        &self,
        f: &mut Frame<'_>,
        cmd: &Command,
        name: &str,
        e: funcs::FuncError,
    ) -> ExecError {
        f.at = Some((cmd.pos, cmd.to_string()));
        // Go checks arguments before the call and reports that without
        // the `error calling` prefix.
        let message = match e.kind {
            funcs::FuncErrorKind::Argument => e.message,
            funcs::FuncErrorKind::Call => format!("error calling {name}: {}", e.message),
        };
        self.err(f, message)
    }

    fn and_or(
        &self,
        f: &mut Frame<'_>,
        dot: &mut Val,
        cmd: &Command,
        is_and: bool,
        args: &[Arg],
        fin: Option<Val>,
    ) -> Res<Val> {
        let total = args.len() + usize::from(fin.is_some());
        if total == 0 {
            f.at = Some((cmd.pos, cmd.to_string()));
            let name = if is_and { "and" } else { "or" };
            return Err(self.err(
                f,
                format!("wrong number of args for {name}: want at least 1 got 0"),
            ));
        }
        let mut last = Val::Null;
        for a in args {
            last = self.eval_arg(f, dot, a)?;
            if last.is_truthy() != is_and {
                return Ok(last);
            }
        }
        if let Some(v) = fin {
            last = v;
        }
        Ok(last)
    }

    /// Runs `include`.
    fn include(
        &self,
        f: &mut Frame<'_>,
        cmd: &Command,
        vals: Vec<Val>,
        data: Option<Val>,
    ) -> Res<Val> {
        let fail = |this: &Self, f: &mut Frame<'_>, msg: String| {
            f.at = Some((cmd.pos, cmd.to_string()));
            Err(this.err(f, format!("error calling include: {msg}")))
        };
        let given = vals.len() + usize::from(data.is_some());
        if given != 2 {
            f.at = Some((cmd.pos, cmd.to_string()));
            return Err(self.err(
                f,
                format!("wrong number of args for include: want 2 got {given}"),
            ));
        }
        let mut it = vals.into_iter();
        let name = match it.next() {
            Some(Val::String(s)) => s,
            Some(other) => {
                let other = other.to_value();
                return fail(
                    self,
                    f,
                    format!("template name must be a string, got {other}"),
                );
            }
            None => return fail(self, f, "missing template name".into()),
        };
        drop(it);
        let data = data.unwrap_or_default();
        self.include_named(f, cmd, Arc::from(name), data)
    }

    /// Runs the template `name` with `data` for `include`.
    fn include_named(
        &self,
        f: &mut Frame<'_>,
        cmd: &Command,
        name: Arc<str>,
        data: Val,
    ) -> Res<Val> {
        let fail = |this: &Self, f: &mut Frame<'_>, msg: String| {
            f.at = Some((cmd.pos, cmd.to_string()));
            Err(this.err(f, format!("error calling include: {msg}")))
        };
        let too_deep = {
            let mut includes = self.includes.borrow_mut();
            let nested = includes.iter().filter(|n| ***n == *name).count();
            if nested <= INCLUDE_NESTING_LIMIT {
                includes.push(name.clone());
            }
            nested > INCLUDE_NESTING_LIMIT
        };
        if too_deep {
            let msg = limits::trip(
                limits::LimitKind::Recursion,
                format!(
                    "rendering template has a nested reference name: {name}: unable to execute template"
                ),
            );
            return fail(self, f, msg);
        }
        let mut buffer = self.take_text();
        let result = match self.lookup(&name, &f.locals) {
            Some((tree, locals)) => self.run_tree(&tree, &name, data, locals, &mut buffer),
            None => Err(ExecError(format!(
                "template: no template {name:?} associated with template {:?}",
                f.name
            ))),
        };
        // Nested includes have removed theirs, so the last name is ours.
        self.includes.borrow_mut().pop();
        // The text is copied out at its final size; the buffer, grown
        // once, serves the next include.
        let out = buffer.as_str().to_owned();
        self.give_text(buffer);
        match result {
            Ok(()) => Ok(Val::String(out)),
            Err(e) => fail(self, f, e.0),
        }
    }

    fn tpl(&self, f: &mut Frame<'_>, cmd: &Command, vals: Vec<Val>) -> Res<Val> {
        let fail = |this: &Self, f: &mut Frame<'_>, msg: String| {
            f.at = Some((cmd.pos, cmd.to_string()));
            Err(this.err(f, format!("error calling tpl: {msg}")))
        };
        if vals.len() != 2 {
            f.at = Some((cmd.pos, cmd.to_string()));
            return Err(self.err(
                f,
                format!("wrong number of args for tpl: want 2 got {}", vals.len()),
            ));
        }
        let mut it = vals.into_iter();
        let text = match it.next() {
            Some(Val::String(s)) => s,
            Some(Val::Null) | None => String::new(),
            Some(other) => other.to_value().to_string(),
        };
        let data = it.next().unwrap_or_default();
        let tpl_name = field(&data, "Template")
            .ok()
            .flatten()
            .and_then(|t| field(&t, "Name").ok().flatten())
            .and_then(|n| match n {
                Val::String(s) => Some(s),
                _ => None,
            });
        let Some(tpl_name) = tpl_name else {
            return fail(
                self,
                f,
                format!("cannot retrieve Template.Name from values inside tpl function: {text}"),
            );
        };
        let key = (tpl_name.clone(), text.clone());
        let cached = self.tpl_cache.borrow().get(&key).cloned();
        let set = match cached {
            Some(s) => s,
            None => {
                let mut set = TemplateSet::new();
                if let Err(e) = set.add(&tpl_name, &text) {
                    return fail(self, f, format!("parse error: {e}"));
                }
                let set = Rc::new(set);
                self.tpl_cache.borrow_mut().insert(key, set.clone());
                set
            }
        };
        let Some(tree) = set.get(&tpl_name).cloned() else {
            return Ok(Val::String(String::new()));
        };
        let mut out = String::new();
        // Defines inside the tpl text are visible only to this execution.
        match self.run_tree(&tree, &tpl_name, data, Some(set), &mut out) {
            Ok(()) => Ok(Val::String(out.replace("<no value>", ""))),
            Err(e) => fail(
                self,
                f,
                format!("error during tpl function execution for {text:?}: {}", e.0),
            ),
        }
    }
}

/// The methods of Helm 4's `common.Values`.
const VALUES_METHODS: [&str; 5] = ["AsMap", "Encode", "PathValue", "Table", "YAML"];

/// encoding/json's error for a map that contains itself (it looks for
/// one past 1000 levels), before the type it names.
const JSON_CYCLE_PREFIX: &str = "json: unsupported value: encountered a cycle via ";

/// Go's error for a constant argument node that cannot be the parameter
/// of the `common.Values` method `method` (`text/template`'s `evalArg`).
fn method_arg_error(method: &str, arg: &Arg) -> Option<String> {
    match (method, arg) {
        ("Table" | "PathValue", Arg::Number(_) | Arg::Bool(_)) => {
            Some(format!("expected string; found {arg}"))
        }
        ("Table" | "PathValue", Arg::Nil) => Some("cannot assign nil to string".into()),
        ("Encode", Arg::Number(_) | Arg::Bool(_) | Arg::String(_)) => {
            Some(format!("can't handle {arg} for arg of type io.Writer"))
        }
        _ => None,
    }
}

/// A string parameter of a Go method, checked as `text/template` does.
fn string_arg(v: &Val) -> Result<String, String> {
    match v {
        Val::String(s) => Ok(s.clone()),
        Val::Null => Err("invalid value; expected string".into()),
        other => Err(format!(
            "wrong type for value; expected string; got {}",
            go_type(&other.to_value())
        )),
    }
}

/// Helm's `Values.Table`: the map at the dotted `path`; the key that is
/// missing or no map otherwise.
fn values_table(recv: &rvalue::MapRef, path: &str) -> Result<rvalue::MapRef, String> {
    let mut table = recv.clone();
    for key in path.split('.') {
        let next = table.borrow().get(key).cloned();
        match next.as_ref().and_then(Val::plain_map) {
            Some(m) => table = m.clone(),
            None => return Err(key.to_string()),
        }
    }
    Ok(table)
}

/// Helm's `Values.PathValue`: the value (not a map) at the dotted `path`.
fn values_path_value(recv: &rvalue::MapRef, path: &str) -> Result<Val, String> {
    if path.is_empty() {
        return Err("YAML path cannot be empty".into());
    }
    let no_value = |key: &str| format!("{key:?} is not a value");
    let (table, key) = match path.rsplit_once('.') {
        None => (recv.clone(), path),
        Some((init, key)) => (values_table(recv, init).map_err(|_| no_value(key))?, key),
    };
    let found = table.borrow().get(key).cloned();
    match found {
        Some(v) if v.plain_map().is_none() || v.is_object() => Ok(v),
        _ => Err(no_value(key)),
    }
}

/// Whether the library function `name` looks only at the top of its
/// arguments (their keys, kind, type or emptiness), so that a map that
/// contains itself deeper down changes nothing for it.
fn looks_only_at_the_top(name: &str) -> bool {
    matches!(
        name,
        "keys" | "kindOf" | "kindIs" | "typeOf" | "typeIs" | "typeIsLike" | "empty"
    )
}

/// For the functions that marshal JSON (or YAML through JSON), how
/// encoding/json's cycle error reaches the template: `Some(None)` when
/// the function drops it and returns "", `Some(Some(prefix))` when it is
/// the call's error, after `prefix`.
fn cyclic_json_error(name: &str) -> Option<Option<&'static str>> {
    match name {
        "toJson" | "toPrettyJson" | "toYaml" => Some(None),
        "mustToJson" | "mustToPrettyJson" | "mustToRawJson" | "toRawJson" => Some(Some("")),
        "mustToYaml" => Some(Some("error marshaling into JSON: ")),
        _ => None,
    }
}

/// The result of the library function `name` given a map that contains
/// itself: what Go's returns (`via` is the type encoding/json names), or
/// the error where Go's would never end.
fn cyclic_argument(name: &str, via: &str) -> Result<Value, funcs::FuncError> {
    let message = match cyclic_json_error(name) {
        Some(None) => return Ok(Value::String(String::new())),
        Some(Some(prefix)) => format!("{prefix}{}{via}", JSON_CYCLE_PREFIX),
        None => rvalue::cycle_message("reading"),
    };
    Err(funcs::FuncError {
        kind: funcs::FuncErrorKind::Call,
        message,
    })
}

/// Where `node` starts, for an error raised before it runs.
fn node_pos(node: &Node) -> usize {
    match node {
        Node::Text(span) => span.start,
        Node::Action(pipe) => pipe.pos,
        Node::If(b) | Node::With(b) | Node::Range(b) => b.pos,
        Node::Template { pos, .. } => *pos,
        Node::Break | Node::Continue => 0,
    }
}

/// The `<...>` context of an error raised before `node` runs.
fn node_context(node: &Node) -> String {
    match node {
        Node::Action(pipe) => pipe.to_string(),
        Node::If(b) => format!("if {}", b.pipe),
        Node::With(b) => format!("with {}", b.pipe),
        Node::Range(b) => format!("range {}", b.pipe),
        Node::Template { name, .. } => format!("{{{{template {name:?}}}}}"),
        Node::Text(_) => "text".into(),
        Node::Break => "break".into(),
        Node::Continue => "continue".into(),
    }
}

/// A library function's result, checked against the string size limit.
fn check_result(name: &str, v: Value) -> Result<Value, funcs::FuncError> {
    match &v {
        Value::String(text) => limits::check_string(name, text.len())
            .map(|()| v)
            .map_err(|m| funcs::FuncError {
                kind: funcs::FuncErrorKind::Call,
                message: m,
            }),
        _ => Ok(v),
    }
}

/// One field step: `Ok(None)` for a missing key (Go's zero value).
fn field(recv: &Val, name: &str) -> Result<Option<Val>, String> {
    match recv {
        Val::Map(m) => {
            let m = m.borrow();
            match m.get(name) {
                None if m.contains_key(crate::values::VERSION_KEY) => {
                    drop(m);
                    Err(format!(
                        "can't evaluate field {name} in type {}",
                        go_type(&recv.to_value())
                    ))
                }
                found => Ok(found.cloned()),
            }
        }
        Val::Null => Err(format!("nil pointer evaluating interface {{}}.{name}")),
        other => Err(format!(
            "can't evaluate field {name} in type {}",
            go_type(&other.to_value())
        )),
    }
}

/// The entry `name` of `v` when `v` is a plain map (not a built-in
/// object): `Some(None)` when it has no such key, `None` when `v` is no
/// plain map (a field of anything else goes through [`field`]).
fn plain_entry(v: &Val, name: &str) -> Option<Option<Val>> {
    let Val::Map(m) = v else { return None };
    let m = m.borrow();
    if rvalue::is_object_map(&m) {
        return None;
    }
    Some(m.get(name).cloned())
}

/// The method `name` of `recv`, if `recv` is a built-in object (or a list,
/// for `.Capabilities.APIVersions.Has`) that has it.
fn method_of(recv: &Val, name: &str) -> Option<objects::Method> {
    match recv {
        Val::List(_) if name == "Has" => Some(objects::Method::Has),
        Val::Map(_) if recv.is_object() => objects::method_kind(&recv.to_value(), name),
        _ => None,
    }
}

/// Prints an action of a lone field chain (`{{ .a.b }}`) read in place,
/// a missing last key as Go's zero value; false (nothing printed) when the
/// general path must run: declarations, functions, methods, or a step
/// that fails (which reports the error).
fn print_plain_field(out: &mut String, dot: &Val, pipe: &Pipeline) -> bool {
    let ([cmd], true) = (pipe.cmds.as_slice(), pipe.decl.is_empty()) else {
        return false;
    };
    let [Arg::Field(_, fields)] = cmd.args.as_slice() else {
        return false;
    };
    fn walk(out: &mut String, cur: &Val, fields: &[String]) -> bool {
        let Some((first, rest)) = fields.split_first() else {
            return false;
        };
        let Val::Map(m) = cur else {
            return false;
        };
        if cur.is_object() {
            return false;
        }
        // A method of `common.Values` is the general path's to call.
        if VALUES_METHODS.contains(&first.as_str()) {
            return false;
        }
        let m = m.borrow();
        match (m.get(first), rest.is_empty()) {
            // A map may print through a `String` method or contain
            // itself: the general path sees to both.
            (Some(Val::Map(_)), true) => false,
            (Some(v), true) => rvalue::print(out, v).is_ok(),
            (None, true) => {
                out.push_str("<no value>");
                true
            }
            (Some(next), false) => walk(out, next, rest),
            (None, false) => false,
        }
    }
    walk(out, dot, fields)
}

/// Go's name for the dynamic type of a value, as error messages print it.
pub fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "interface {}",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::List(_) => "[]interface {}",
        Value::Map(_) => v.version_type().unwrap_or("map[string]interface {}"),
    }
}

/// The value of a number constant as Go passes it to an `interface{}`.
pub fn number_value(n: &Number) -> Value {
    match (n.is_float, n.int, n.float) {
        (true, _, Some(x)) => Value::Float(x),
        (_, Some(i), _) => Value::Int(i),
        (_, _, Some(x)) => Value::Float(x),
        _ => Value::Null,
    }
}

/// Prints a value as an action does: `<no value>` for nil, `%v` otherwise.
pub fn print_value(out: &mut String, v: &Value) {
    use std::fmt::Write;
    match v {
        Value::Null => out.push_str("<no value>"),
        Value::String(s) => out.push_str(s),
        other => {
            let _ = write!(out, "{other}");
        }
    }
}
