//! Methods of Helm's built-in objects that templates call like fields:
//! `.Files.Get "x"`, `.Files.Glob`, `.Files.Lines`, `.Files.AsConfig`,
//! `.Files.AsSecrets`, `.Files.GetBytes`, `.Capabilities.APIVersions.Has`
//! and the methods of a semver version (`(semver "1.2.3").Major`, which
//! `funcs` computes).
//!
//! A `.Files` value is a map with one reserved key holding the id of a file
//! set the engine keeps, so that passing `$` around (for example through
//! `dict`) does not copy every file of the chart.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use crate::values::{Map, Value};

/// Files of a chart by path, as `.Files` sees them.
pub type FileSet = BTreeMap<String, Arc<[u8]>>;

const FILES_KEY: &str = "\u{0}files";

/// The `.Files` value for file set `id`; an empty set's value is false
/// in `if`, `and`, `empty`... as Go's empty `Files` map is.
pub fn files_value(id: usize, empty: bool) -> Value {
    let mut m = Map::new();
    m.insert(FILES_KEY.to_string(), Value::Int(id as i64));
    if empty {
        m.insert(
            crate::values::EMPTY_OBJECT_KEY.to_string(),
            Value::Bool(true),
        );
    }
    Value::Map(m)
}

/// Whether `v` is a `.Files` value.
pub fn is_files(v: &Value) -> bool {
    files_id(v).is_some()
}

/// The file set id of a `.Files` value.
pub fn files_id(v: &Value) -> Option<usize> {
    files_map_id(v.as_map()?)
}

/// Whether a map is a `.Files` value.
pub fn is_files_map(m: &Map) -> bool {
    files_map_id(m).is_some()
}

fn files_map_id(m: &Map) -> Option<usize> {
    match m.get(FILES_KEY)? {
        Value::Int(i) => usize::try_from(*i).ok(),
        _ => None,
    }
}

/// A method of a built-in object.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    Get,
    GetBytes,
    Glob,
    Lines,
    AsConfig,
    AsSecrets,
    Has,
    /// A method of a semver version (`Major`, `Compare`, `IncMajor`...).
    Version(&'static str),
}

/// The method `name` of `recv`, if `recv` is a built-in object that has it.
pub fn method_kind(recv: &Value, name: &str) -> Option<Method> {
    // The name first: most fields are not methods, and that is cheaper to
    // see than whether the receiver is `.Files`.
    let files_method = match name {
        "Get" => Some(Method::Get),
        "GetBytes" => Some(Method::GetBytes),
        "Glob" => Some(Method::Glob),
        "Lines" => Some(Method::Lines),
        "AsConfig" => Some(Method::AsConfig),
        "AsSecrets" => Some(Method::AsSecrets),
        _ => None,
    };
    if files_method.is_some() && is_files(recv) {
        return files_method;
    }
    if matches!(recv, Value::List(_)) && name == "Has" {
        return Some(Method::Has);
    }
    crate::render::funcs::version_method(recv, name).map(Method::Version)
}

/// What a method returns.
pub enum MethodResult {
    Value(Value),
    /// A new file set (from `Glob`) for the engine to register.
    Files(FileSet),
}

fn one_string(method: &str, args: &[Value]) -> Result<String, String> {
    match args {
        [Value::String(s)] => Ok(s.clone()),
        [other] => Ok(other.to_string()),
        _ => Err(format!(
            "wrong number of args for {method}: want 1 got {}",
            args.len()
        )),
    }
}

/// Calls `method` on `recv` with `args`; `sets` are the engine's file sets.
///
/// # Errors
/// A message in Go's wording for a wrong argument count.
pub fn call_method(
    method: Method,
    recv: &Value,
    args: &[Value],
    sets: &[Rc<FileSet>],
) -> Result<MethodResult, String> {
    if let Method::Version(name) = method {
        return crate::render::funcs::call_version_method(name, recv, args)
            .map(MethodResult::Value)
            .map_err(|e| {
                if crate::render::funcs::is_argument_error(&e) {
                    e.message
                } else {
                    format!("error calling {name}: {}", e.message)
                }
            });
    }
    if method == Method::Has {
        let want = one_string("Has", args)?;
        let Value::List(items) = recv else {
            return Ok(MethodResult::Value(Value::Bool(false)));
        };
        let has = items.iter().any(|v| v.as_str() == Some(want.as_str()));
        return Ok(MethodResult::Value(Value::Bool(has)));
    }
    let empty = FileSet::new();
    let files = files_id(recv)
        .and_then(|id| sets.get(id))
        .map_or(&empty, |s| &**s);
    let text = |data: &[u8]| String::from_utf8_lossy(data).into_owned();
    let value = match method {
        Method::Get | Method::GetBytes => {
            let name = one_string("Get", args)?;
            Value::String(files.get(&name).map(|d| text(d)).unwrap_or_default())
        }
        Method::Lines => {
            let name = one_string("Lines", args)?;
            match files.get(&name) {
                None => Value::List(Vec::new()),
                Some(d) => {
                    let s = text(d);
                    let s = s.strip_suffix('\n').unwrap_or(&s);
                    Value::List(
                        s.split('\n')
                            .map(|l| Value::String(l.to_string()))
                            .collect(),
                    )
                }
            }
        }
        Method::Glob => {
            let pattern = one_string("Glob", args)?;
            let matcher = Glob::cached(&pattern);
            let set: FileSet = files
                .iter()
                .filter(|(name, _)| matcher.is_match(name))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            crate::render::limits::count_glob_matches(set.len())?;
            return Ok(MethodResult::Files(set));
        }
        Method::AsConfig | Method::AsSecrets => {
            if !args.is_empty() {
                return Err(format!("wrong number of args: want 0 got {}", args.len()));
            }
            let mut m = Map::new();
            for (name, data) in files {
                let base = name.rsplit('/').next().unwrap_or(name).to_string();
                let v = if method == Method::AsConfig {
                    text(data)
                } else {
                    base64(data)
                };
                m.insert(base, Value::String(v));
            }
            Value::String(crate::values::to_yaml_trimmed(&Value::Map(m)))
        }
        Method::Has | Method::Version(_) => Value::Null,
    };
    Ok(MethodResult::Value(value))
}

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Glob matching as Helm's `Files.Glob` does (gobwas/glob with `/` as the
/// separator): `*` and `?` stay within a path segment, `**` crosses them,
/// `[...]` classes and `{a,b}` alternatives.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    Glob::new(pattern).is_match(name)
}

/// A compiled glob. It is translated to a regular expression of the
/// `regex` crate, whose matching is linear in the name's length whatever
/// the pattern (a backtracking matcher takes exponential time on patterns
/// such as `*a*a*a*a*b`).
pub struct Glob(Option<regex::Regex>);

/// Cap on the compiled size of a glob's expression.
const GLOB_REGEX_SIZE_LIMIT: usize = 1 << 20;

impl Glob {
    /// Compiles `pattern`; a pattern that cannot compile matches nothing.
    pub fn new(pattern: &str) -> Glob {
        let p: Vec<char> = pattern.chars().collect();
        let mut re = String::with_capacity(pattern.len() * 2 + 8);
        re.push_str("^(?s:");
        translate(&p, false, &mut re);
        re.push_str(")$");
        Glob(
            regex::RegexBuilder::new(&re)
                .size_limit(GLOB_REGEX_SIZE_LIMIT)
                .build()
                .ok(),
        )
    }

    /// The compiled `pattern`, from a small per-thread cache: templates
    /// call `Glob` with the same few patterns, often in a loop.
    pub fn cached(pattern: &str) -> Rc<Glob> {
        const CACHED_PATTERNS: usize = 64;
        GLOB_CACHE.with(|c| {
            let mut cache = c.borrow_mut();
            if let Some(g) = cache.get(pattern) {
                return g.clone();
            }
            if cache.len() >= CACHED_PATTERNS {
                cache.clear();
            }
            let g = Rc::new(Glob::new(pattern));
            cache.insert(pattern.to_string(), g.clone());
            g
        })
    }

    /// Whether `name` matches.
    pub fn is_match(&self, name: &str) -> bool {
        self.0.as_ref().is_some_and(|re| re.is_match(name))
    }
}

thread_local! {
    /// Compiled `Glob` patterns of the render running on this thread.
    static GLOB_CACHE: std::cell::RefCell<std::collections::HashMap<String, Rc<Glob>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Drops the compiled `Glob` patterns kept on this thread (up to 64 of up
/// to 1 MiB each), once a render is over.
pub fn forget_globs() {
    GLOB_CACHE.with(|c| c.borrow_mut().clear());
}

/// A character as a regex escape that is literal anywhere, inside a class too.
fn literal(c: char, out: &mut String) {
    out.push_str(&format!("\\x{{{:x}}}", u32::from(c)));
}

/// Appends the regex for glob `p`; inside `{...}` a `,` ends an alternative
/// (the caller splits on it first).
fn translate(p: &[char], _in_braces: bool, out: &mut String) {
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '*' if p.get(i + 1) == Some(&'*') => {
                out.push_str(".*");
                i += 2;
                // gobwas treats a run of stars after `**` as one super star.
                while p.get(i) == Some(&'*') {
                    i += 1;
                }
            }
            '*' => {
                out.push_str("[^/]*");
                i += 1;
            }
            '?' => {
                out.push_str("[^/]");
                i += 1;
            }
            '[' => match p[i + 1..].iter().position(|x| *x == ']') {
                None => {
                    literal('[', out);
                    i += 1;
                }
                Some(len) => {
                    let end = i + 1 + len;
                    let class = &p[i + 1..end];
                    let (negate, class) = match class.first() {
                        Some('!') | Some('^') => (true, &class[1..]),
                        _ => (false, class),
                    };
                    if class.is_empty() {
                        // Nothing can match an empty class.
                        out.push_str(if negate { "." } else { "[^\\x{0}-\\x{10ffff}]" });
                    } else {
                        out.push_str(if negate { "[^" } else { "[" });
                        let mut k = 0;
                        while k < class.len() {
                            if k + 2 < class.len() && class[k + 1] == '-' {
                                literal(class[k], out);
                                out.push('-');
                                literal(class[k + 2], out);
                                k += 3;
                            } else {
                                literal(class[k], out);
                                k += 1;
                            }
                        }
                        out.push(']');
                    }
                    i = end + 1;
                }
            },
            '{' => match p[i + 1..].iter().position(|x| *x == '}') {
                None => {
                    literal('{', out);
                    i += 1;
                }
                Some(len) => {
                    let end = i + 1 + len;
                    out.push_str("(?:");
                    for (k, alt) in p[i + 1..end].split(|x| *x == ',').enumerate() {
                        if k > 0 {
                            out.push('|');
                        }
                        translate(alt, true, out);
                    }
                    out.push(')');
                    i = end + 1;
                }
            },
            '\\' if i + 1 < p.len() => {
                literal(p[i + 1], out);
                i += 2;
            }
            c => {
                literal(c, out);
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_follows_gobwas_rules() {
        assert!(glob_match("files/*.conf", "files/a.conf"));
        assert!(!glob_match("files/*.conf", "files/sub/a.conf"));
        assert!(glob_match("files/**.conf", "files/sub/a.conf"));
        assert!(glob_match("config/{a,b}.yaml", "config/b.yaml"));
        assert!(glob_match("f?le[0-9]", "file7"));
        assert!(!glob_match("f?le[!0-9]", "file7"));
        assert!(glob_match("a\\*b", "a*b"));
        assert!(!glob_match("a\\*b", "axb"));
        assert!(glob_match("[a", "[a"));
        assert!(glob_match("{x", "{x"));
        assert!(glob_match("files/{a,*.conf}", "files/z.conf"));
        assert!(!glob_match("files/{a,*.conf}", "files/d/z.conf"));
        assert!(glob_match("x.(y)+", "x.(y)+"));
    }

    #[test]
    fn glob_matching_does_not_backtrack() {
        // Exponential for a backtracking matcher; the regex answers at once.
        let name = format!("files/{}", "a".repeat(200));
        let pattern = format!("files/{}b", "*a".repeat(40));
        assert!(!glob_match(&pattern, &name));
        assert!(glob_match(&format!("files/{}", "*a".repeat(40)), &name));
    }

    #[test]
    fn base64_pads_like_go() {
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert_eq!(base64(b""), "");
    }
}
