//! Sprig's string functions: case, trimming, cutting, quoting, indenting,
//! splitting and joining, word wrapping, and the `path` helpers.
//!
//! Sprig works on Go strings, which are bytes: `trunc`, `substr`, `abbrev`
//! and `wrap` count bytes as Go does; a cut inside a multi-byte character
//! leaves U+FFFD where Go would leave a broken byte.

use super::args::{at_least, exactly, integer, string_list, strslice, text};
use super::{FuncError, Function};
use crate::render::limits;
use crate::values::{Map, Value};

pub(super) const FUNCTIONS: &[(&str, Function)] = &[
    ("upper", upper),
    ("lower", lower),
    ("title", title),
    ("untitle", untitle),
    ("trim", trim),
    ("trimAll", trim_all),
    ("trimall", trim_all),
    ("trimSuffix", trim_suffix),
    ("trimPrefix", trim_prefix),
    ("trunc", trunc),
    ("substr", substr),
    ("repeat", repeat),
    ("replace", replace),
    ("contains", contains),
    ("hasPrefix", has_prefix),
    ("hasSuffix", has_suffix),
    ("nospace", nospace),
    ("initials", initials),
    ("abbrev", abbrev),
    ("abbrevboth", abbrevboth),
    ("wrap", wrap),
    ("wrapWith", wrap_with),
    ("camelcase", camelcase),
    ("snakecase", snakecase),
    ("kebabcase", kebabcase),
    ("swapcase", swapcase),
    ("plural", plural),
    ("cat", cat),
    ("quote", quote),
    ("squote", squote),
    ("indent", indent),
    ("nindent", nindent),
    ("split", split),
    ("splitList", split_list),
    ("splitn", splitn),
    ("join", join),
    ("base", base),
    ("dir", dir),
    ("clean", clean),
    ("ext", ext),
    ("isAbs", is_abs),
    ("osBase", base),
    ("osDir", dir),
    ("osClean", clean),
    ("osExt", ext),
    ("osIsAbs", is_abs),
];

/// Applies a `string -> string` function to a one-string call.
fn map_text(name: &str, args: &[Value], f: impl Fn(&str) -> String) -> Result<Value, FuncError> {
    let [s] = exactly::<1>(name, args)?;
    Ok(Value::String(f(text(s)?)))
}

/// Reads the two strings of a `(a, b string)` call.
fn two_texts<'a>(name: &str, args: &'a [Value]) -> Result<(&'a str, &'a str), FuncError> {
    let [a, b] = exactly::<2>(name, args)?;
    Ok((text(a)?, text(b)?))
}

/// Go's `s[start:end]` on bytes.
fn byte_slice(s: &str, start: usize, end: usize) -> String {
    String::from_utf8_lossy(&s.as_bytes()[start..end]).into_owned()
}

fn upper(args: &[Value]) -> Result<Value, FuncError> {
    map_text("upper", args, str::to_uppercase)
}

fn lower(args: &[Value]) -> Result<Value, FuncError> {
    map_text("lower", args, str::to_lowercase)
}

/// Go's `strings.Title`: upper-cases the first letter of each word.
fn title(args: &[Value]) -> Result<Value, FuncError> {
    map_text("title", args, |s| {
        let mut previous = ' ';
        s.chars()
            .map(|c| {
                let out = if is_title_separator(previous) {
                    c.to_uppercase().next().unwrap_or(c)
                } else {
                    c
                };
                previous = c;
                out
            })
            .collect()
    })
}

fn is_title_separator(c: char) -> bool {
    if c.is_ascii() {
        return !(c.is_ascii_alphanumeric() || c == '_');
    }
    if c.is_alphanumeric() {
        return false;
    }
    c.is_whitespace()
}

/// goutils' `Uncapitalize`: lower-cases the first letter of each
/// space-separated word.
fn untitle(args: &[Value]) -> Result<Value, FuncError> {
    map_text("untitle", args, |s| {
        let mut next = true;
        s.chars()
            .map(|c| {
                if c.is_whitespace() {
                    next = true;
                    c
                } else if next {
                    next = false;
                    c.to_lowercase().next().unwrap_or(c)
                } else {
                    c
                }
            })
            .collect()
    })
}

fn trim(args: &[Value]) -> Result<Value, FuncError> {
    map_text("trim", args, |s| s.trim().to_string())
}

/// `trimAll CUTSET S`: Go's `strings.Trim(s, cutset)`.
fn trim_all(args: &[Value]) -> Result<Value, FuncError> {
    let (cutset, s) = two_texts("trimAll", args)?;
    Ok(s.trim_matches(|c| cutset.contains(c)).into())
}

fn trim_suffix(args: &[Value]) -> Result<Value, FuncError> {
    let (suffix, s) = two_texts("trimSuffix", args)?;
    Ok(s.strip_suffix(suffix).unwrap_or(s).into())
}

fn trim_prefix(args: &[Value]) -> Result<Value, FuncError> {
    let (prefix, s) = two_texts("trimPrefix", args)?;
    Ok(s.strip_prefix(prefix).unwrap_or(s).into())
}

/// `trunc N S`: the first N bytes, or with a negative N the last -N.
fn trunc(args: &[Value]) -> Result<Value, FuncError> {
    let [n, s] = exactly::<2>("trunc", args)?;
    let (n, s) = (integer(n)?, text(s)?);
    let len = s.len() as i64;
    let out = if n < 0 && len + n > 0 {
        byte_slice(s, (len + n) as usize, s.len())
    } else if n >= 0 && len > n {
        byte_slice(s, 0, n as usize)
    } else {
        s.to_string()
    };
    Ok(out.into())
}

/// `substr START END S`, by bytes, as Sprig slices it.
fn substr(args: &[Value]) -> Result<Value, FuncError> {
    let [start, end, s] = exactly::<3>("substr", args)?;
    let (start, end, s) = (integer(start)?, integer(end)?, text(s)?);
    let len = s.len() as i64;
    let (from, to) = if start < 0 {
        (0, end)
    } else if end < 0 || end > len {
        (start, len)
    } else {
        (start, end)
    };
    if from > to || to > len || to < 0 {
        return Err(FuncError::call(format!(
            "runtime error: slice bounds out of range [{from}:{to}]"
        )));
    }
    Ok(byte_slice(s, from as usize, to as usize).into())
}

fn repeat(args: &[Value]) -> Result<Value, FuncError> {
    let [count, s] = exactly::<2>("repeat", args)?;
    let (count, s) = (integer(count)?, text(s)?);
    let count =
        usize::try_from(count).map_err(|_| FuncError::call("strings: negative Repeat count"))?;
    limits::check_string("repeat", s.len().saturating_mul(count)).map_err(FuncError::call)?;
    Ok(s.repeat(count).into())
}

/// `replace OLD NEW S`.
fn replace(args: &[Value]) -> Result<Value, FuncError> {
    let [old, new, s] = exactly::<3>("replace", args)?;
    Ok(text(s)?.replace(text(old)?, text(new)?).into())
}

/// `contains SUBSTR S`.
fn contains(args: &[Value]) -> Result<Value, FuncError> {
    let (needle, s) = two_texts("contains", args)?;
    Ok(Value::Bool(s.contains(needle)))
}

fn has_prefix(args: &[Value]) -> Result<Value, FuncError> {
    let (prefix, s) = two_texts("hasPrefix", args)?;
    Ok(Value::Bool(s.starts_with(prefix)))
}

fn has_suffix(args: &[Value]) -> Result<Value, FuncError> {
    let (suffix, s) = two_texts("hasSuffix", args)?;
    Ok(Value::Bool(s.ends_with(suffix)))
}

fn nospace(args: &[Value]) -> Result<Value, FuncError> {
    map_text("nospace", args, |s| {
        s.chars().filter(|c| !c.is_whitespace()).collect()
    })
}

/// goutils' `Initials`: the first byte of each space-separated word.
fn initials(args: &[Value]) -> Result<Value, FuncError> {
    map_text("initials", args, |s| {
        let mut out = Vec::new();
        let mut gap = true;
        for &b in s.as_bytes() {
            if (b as char).is_whitespace() {
                gap = true;
            } else if gap {
                out.push(b);
                gap = false;
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    })
}

/// goutils' `AbbreviateFull`; None where it returns an error.
fn abbreviate_full(s: &str, offset: i64, max_width: i64) -> Option<String> {
    if s.is_empty() {
        return Some(String::new());
    }
    if max_width < 4 {
        return None;
    }
    let len = s.len() as i64;
    if len <= max_width {
        return Some(s.to_string());
    }
    let mut offset = offset.min(len);
    if len.saturating_sub(offset) < max_width - 3 {
        offset = len - (max_width - 3);
    }
    if offset <= 4 {
        return Some(byte_slice(s, 0, (max_width - 3) as usize) + "...");
    }
    if max_width < 7 {
        return None;
    }
    if offset.saturating_add(max_width - 3) < len {
        let rest = byte_slice(s, offset as usize, s.len());
        return Some(format!("...{}", abbreviate_full(&rest, 0, max_width - 3)?));
    }
    Some(format!(
        "...{}",
        byte_slice(s, (len - (max_width - 3)) as usize, s.len())
    ))
}

/// `abbrev WIDTH S`: cut to WIDTH bytes ending in `...`.
fn abbrev(args: &[Value]) -> Result<Value, FuncError> {
    let [width, s] = exactly::<2>("abbrev", args)?;
    let (width, s) = (integer(width)?, text(s)?);
    if width < 4 {
        return Ok(s.into());
    }
    Ok(abbreviate_full(s, 0, width).unwrap_or_default().into())
}

/// `abbrevboth LEFT RIGHT S`.
fn abbrevboth(args: &[Value]) -> Result<Value, FuncError> {
    let [left, right, s] = exactly::<3>("abbrevboth", args)?;
    let (left, right, s) = (integer(left)?, integer(right)?, text(s)?);
    if right < 4 || left > 0 && right < 7 {
        return Ok(s.into());
    }
    Ok(abbreviate_full(s, left, right).unwrap_or_default().into())
}

/// goutils' `WrapCustom`: breaks lines at spaces so that no line is longer
/// than `width` bytes; long words are cut only when `wrap_long`.
fn wrap_custom(s: &str, width: i64, newline: &str, wrap_long: bool) -> String {
    if s.is_empty() {
        return String::new();
    }
    let newline = if newline.is_empty() { "\n" } else { newline };
    let width = width.max(1) as usize;
    let bytes = s.as_bytes();
    let len = bytes.len();
    let mut offset = 0usize;
    let mut out: Vec<u8> = Vec::new();
    while len - offset > width {
        if bytes[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = width + offset + 1;
        if let Some(space) = bytes[offset..end].iter().rposition(|&b| b == b' ') {
            let at = space + offset;
            out.extend_from_slice(&bytes[offset..at]);
            out.extend_from_slice(newline.as_bytes());
            offset = at + 1;
        } else if wrap_long {
            let end = width + offset;
            out.extend_from_slice(&bytes[offset..end]);
            out.extend_from_slice(newline.as_bytes());
            offset += width;
        } else {
            let end = width + offset;
            match bytes[end..].iter().position(|&b| b == b' ') {
                None => {
                    out.extend_from_slice(&bytes[offset..]);
                    offset = len;
                }
                Some(index) => {
                    let at = index + end;
                    out.extend_from_slice(&bytes[offset..at]);
                    out.extend_from_slice(newline.as_bytes());
                    offset = at + 1;
                }
            }
        }
    }
    out.extend_from_slice(&bytes[offset..]);
    String::from_utf8_lossy(&out).into_owned()
}

fn wrap(args: &[Value]) -> Result<Value, FuncError> {
    let [width, s] = exactly::<2>("wrap", args)?;
    Ok(wrap_custom(text(s)?, integer(width)?, "", false).into())
}

fn wrap_with(args: &[Value]) -> Result<Value, FuncError> {
    let [width, sep, s] = exactly::<3>("wrapWith", args)?;
    Ok(wrap_custom(text(s)?, integer(width)?, text(sep)?, true).into())
}

fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || c.is_whitespace()
}

/// xstrings' `ToCamelCase`: words joined by `_`, `-` or spaces become
/// capitalised and joined; leading connectors stay.
fn camelcase(args: &[Value]) -> Result<Value, FuncError> {
    map_text("camelcase", args, |s| {
        let mut out = String::new();
        let leading: String = s.chars().take_while(|c| is_connector(*c)).collect();
        out.push_str(&leading);
        let rest = &s[leading.len()..];
        let mut pending_connectors = 0usize;
        let mut capitalise_next = true;
        let mut word_upper = false;
        for c in rest.chars() {
            if is_connector(c) {
                pending_connectors += 1;
                capitalise_next = true;
                continue;
            }
            if pending_connectors > 1 {
                out.extend(std::iter::repeat_n('_', pending_connectors - 1));
            }
            pending_connectors = 0;
            if capitalise_next {
                word_upper = c.is_uppercase();
                out.extend(c.to_uppercase());
                capitalise_next = false;
            } else if word_upper && c.is_uppercase() {
                out.extend(c.to_lowercase());
            } else {
                word_upper = false;
                out.push(c);
            }
        }
        if pending_connectors > 0 {
            out.extend(std::iter::repeat_n('_', pending_connectors));
        }
        out
    })
}

/// Splits camel case and connector-separated text into lower-case words,
/// as xstrings' snake and kebab case do.
fn case_words(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, words: &mut Vec<String>| {
        if !current.is_empty() {
            words.push(std::mem::take(current).to_lowercase());
        }
    };
    for i in 0..chars.len() {
        let c = chars[i];
        if is_connector(c) {
            flush(&mut current, &mut words);
            continue;
        }
        let previous = if i > 0 { Some(chars[i - 1]) } else { None };
        let next = chars.get(i + 1).copied();
        let boundary = match previous {
            None => false,
            Some(p) if is_connector(p) => false,
            Some(p) => {
                if c.is_uppercase() {
                    p.is_lowercase()
                        || p.is_ascii_digit()
                        || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
                } else if c.is_ascii_digit() && !p.is_ascii_digit() {
                    let after = chars[i..].iter().find(|c| !c.is_ascii_digit());
                    after.is_some_and(|a| a.is_lowercase())
                } else {
                    false
                }
            }
        };
        if boundary {
            flush(&mut current, &mut words);
        }
        current.push(c);
    }
    flush(&mut current, &mut words);
    words
}

fn snakecase(args: &[Value]) -> Result<Value, FuncError> {
    map_text("snakecase", args, |s| case_words(s).join("_"))
}

fn kebabcase(args: &[Value]) -> Result<Value, FuncError> {
    map_text("kebabcase", args, |s| case_words(s).join("-"))
}

fn swapcase(args: &[Value]) -> Result<Value, FuncError> {
    map_text("swapcase", args, |s| {
        let mut out = String::new();
        for c in s.chars() {
            if c.is_uppercase() {
                out.extend(c.to_lowercase());
            } else if c.is_lowercase() {
                out.extend(c.to_uppercase());
            } else {
                out.push(c);
            }
        }
        out
    })
}

/// `plural ONE MANY COUNT`.
fn plural(args: &[Value]) -> Result<Value, FuncError> {
    let [one, many, count] = exactly::<3>("plural", args)?;
    let (one, many, count) = (text(one)?, text(many)?, integer(count)?);
    Ok(if count == 1 { one } else { many }.into())
}

/// `cat A B ...`: non-nil operands in `%v`, separated by spaces.
fn cat(args: &[Value]) -> Result<Value, FuncError> {
    let parts: Vec<String> = args
        .iter()
        .filter(|v| !matches!(v, Value::Null))
        .map(|v| v.to_string())
        .collect();
    Ok(parts.join(" ").into())
}

/// `quote A B ...`: each non-nil operand as a Go-quoted string.
fn quote(args: &[Value]) -> Result<Value, FuncError> {
    let mut out = String::with_capacity(match args {
        [Value::String(s)] => s.len() + 2,
        _ => 0,
    });
    for v in args.iter().filter(|v| !matches!(v, Value::Null)) {
        // Every quoted operand is at least `""`, so a non-empty buffer
        // means one came before.
        if !out.is_empty() {
            out.push(' ');
        }
        match v {
            Value::String(s) => super::gofmt::quote_into(&mut out, s, false),
            other => super::gofmt::quote_into(&mut out, &other.to_string(), false),
        }
    }
    Ok(out.into())
}

/// `squote A B ...`: each non-nil operand in single quotes, unescaped.
fn squote(args: &[Value]) -> Result<Value, FuncError> {
    let parts: Vec<String> = args
        .iter()
        .filter(|v| !matches!(v, Value::Null))
        .map(|v| format!("'{v}'"))
        .collect();
    Ok(parts.join(" ").into())
}

/// `prefix`, then `s` with `spaces` spaces before every line (Sprig's
/// `pad + strings.Replace(s, "\n", "\n"+pad, -1)`), built in one buffer.
fn indent_text(name: &str, args: &[Value], prefix: &str) -> Result<String, FuncError> {
    let [spaces, s] = exactly::<2>(name, args)?;
    let (spaces, s) = (integer(spaces)?, text(s)?);
    let spaces =
        usize::try_from(spaces).map_err(|_| FuncError::call("strings: negative Repeat count"))?;
    let lines = memchr::memchr_iter(b'\n', s.as_bytes()).count() + 1;
    let padding = spaces.saturating_mul(lines);
    limits::check_string(name, padding.saturating_add(s.len())).map_err(FuncError::call)?;
    let mut out = String::with_capacity(prefix.len() + s.len() + padding);
    out.push_str(prefix);
    push_spaces(&mut out, spaces);
    let mut rest = s;
    while let Some(i) = memchr::memchr(b'\n', rest.as_bytes()) {
        out.push_str(&rest[..=i]);
        push_spaces(&mut out, spaces);
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Appends `n` spaces.
fn push_spaces(out: &mut String, n: usize) {
    const SPACES: &str = "                                ";
    let mut left = n;
    while left > 0 {
        let step = left.min(SPACES.len());
        out.push_str(&SPACES[..step]);
        left -= step;
    }
}

/// `indent N S`: N spaces before every line.
fn indent(args: &[Value]) -> Result<Value, FuncError> {
    Ok(indent_text("indent", args, "")?.into())
}

/// `nindent N S`: a newline, then `indent N S`.
fn nindent(args: &[Value]) -> Result<Value, FuncError> {
    Ok(indent_text("nindent", args, "\n")?.into())
}

/// Go's `strings.Split`, including its empty-separator rule (one piece per
/// character).
fn go_split(s: &str, sep: &str, limit: i64) -> Vec<String> {
    if limit == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = s.chars().map(String::from).collect();
        if limit > 0 && chars.len() > limit as usize {
            let head = limit as usize - 1;
            let mut out: Vec<String> = chars[..head].to_vec();
            out.push(chars[head..].concat());
            return out;
        }
        return chars;
    }
    if limit < 0 {
        s.split(sep).map(String::from).collect()
    } else {
        s.splitn(limit as usize, sep).map(String::from).collect()
    }
}

/// Pieces as the map Sprig's `split` returns: `_0`, `_1`, ...
fn pieces_map(pieces: Vec<String>) -> Value {
    let map: Map = pieces
        .into_iter()
        .enumerate()
        .map(|(i, p)| (format!("_{i}"), Value::String(p)))
        .collect();
    Value::Map(map)
}

/// `split SEP S`: a map `_0`, `_1`, ... of the pieces.
fn split(args: &[Value]) -> Result<Value, FuncError> {
    let (sep, s) = two_texts("split", args)?;
    Ok(pieces_map(go_split(s, sep, -1)))
}

/// `splitList SEP S`: the pieces as a list.
fn split_list(args: &[Value]) -> Result<Value, FuncError> {
    let (sep, s) = two_texts("splitList", args)?;
    Ok(string_list(go_split(s, sep, -1)))
}

/// `splitn SEP N S`: at most N pieces, as a map like `split`.
fn splitn(args: &[Value]) -> Result<Value, FuncError> {
    let [sep, n, s] = exactly::<3>("splitn", args)?;
    Ok(pieces_map(go_split(text(s)?, text(sep)?, integer(n)?)))
}

/// `join SEP LIST`: the list's non-nil elements as strings, joined.
fn join(args: &[Value]) -> Result<Value, FuncError> {
    let [sep, list] = exactly::<2>("join", args)?;
    let sep = text(sep)?;
    let parts = strslice(list);
    let len = parts.iter().fold(0usize, |n, p| {
        n.saturating_add(p.len()).saturating_add(sep.len())
    });
    limits::check_string("join", len).map_err(FuncError::call)?;
    Ok(parts.join(sep).into())
}

/// Go's `path.Clean`.
pub fn clean_path(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

fn base(args: &[Value]) -> Result<Value, FuncError> {
    map_text("base", args, |p| {
        if p.is_empty() {
            return ".".into();
        }
        let trimmed = p.trim_end_matches('/');
        if trimmed.is_empty() {
            return "/".into();
        }
        trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
    })
}

fn dir(args: &[Value]) -> Result<Value, FuncError> {
    map_text("dir", args, |p| {
        let cut = p.rfind('/').map_or(0, |i| i + 1);
        clean_path(&p[..cut])
    })
}

fn clean(args: &[Value]) -> Result<Value, FuncError> {
    map_text("clean", args, clean_path)
}

fn ext(args: &[Value]) -> Result<Value, FuncError> {
    map_text("ext", args, |p| {
        for (i, c) in p.char_indices().rev() {
            if c == '/' {
                break;
            }
            if c == '.' {
                return p[i..].to_string();
            }
        }
        String::new()
    })
}

fn is_abs(args: &[Value]) -> Result<Value, FuncError> {
    let [p] = exactly::<1>("isAbs", args)?;
    Ok(Value::Bool(text(p)?.starts_with('/')))
}

/// Keeps `at_least` in use for variadic helpers elsewhere in this file.
#[allow(dead_code)]
fn variadic_check(args: &[Value]) -> Result<(), FuncError> {
    at_least("cat", args, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(f: Function, args: &[Value]) -> Value {
        f(args).unwrap_or_else(|e| Value::String(format!("ERR {e}")))
    }

    fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    #[test]
    fn case_functions() {
        assert_eq!(
            call(title, &[s("hello wORLD-foo_bar")]),
            s("Hello WORLD-Foo_bar")
        );
        assert_eq!(call(untitle, &[s("Hello World")]), s("hello world"));
        assert_eq!(call(camelcase, &[s("http_server")]), s("HttpServer"));
        assert_eq!(
            call(camelcase, &[s("_complex__case_")]),
            s("_Complex_Case_")
        );
        assert_eq!(call(camelcase, &[s("GOLANG_IS_GREAT")]), s("GolangIsGreat"));
        assert_eq!(call(snakecase, &[s("FirstName")]), s("first_name"));
        assert_eq!(call(snakecase, &[s("HTTPServer")]), s("http_server"));
        assert_eq!(call(snakecase, &[s("NoHTTPS")]), s("no_https"));
        assert_eq!(call(snakecase, &[s("GO-PATH")]), s("go_path"));
        assert_eq!(call(snakecase, &[s("http2xx")]), s("http_2xx"));
        assert_eq!(call(snakecase, &[s("HTTP20xOK")]), s("http_20x_ok"));
        assert_eq!(call(snakecase, &[s("Duration2m3s")]), s("duration_2m_3s"));
        assert_eq!(call(snakecase, &[s("Bld4Floor3rd")]), s("bld4_floor_3rd"));
        assert_eq!(call(kebabcase, &[s("FirstName")]), s("first-name"));
        assert_eq!(call(swapcase, &[s("This Is")]), s("tHIS iS"));
    }

    #[test]
    fn trimming_and_cutting() {
        assert_eq!(call(trim, &[s("  a b \n")]), s("a b"));
        assert_eq!(call(trim_all, &[s("$"), s("$5.00$")]), s("5.00"));
        assert_eq!(call(trim_suffix, &[s("-"), s("hello-")]), s("hello"));
        assert_eq!(call(trim_prefix, &[s("-"), s("-hello")]), s("hello"));
        assert_eq!(call(trunc, &[Value::Int(5), s("hello world")]), s("hello"));
        assert_eq!(call(trunc, &[Value::Int(-5), s("hello world")]), s("world"));
        assert_eq!(call(trunc, &[Value::Int(63), s("short")]), s("short"));
        assert_eq!(
            call(trunc, &[Value::Float(3.0), s("short")]),
            s("ERR wrong type for value; expected int; got float64")
        );
        assert_eq!(
            call(substr, &[Value::Int(0), Value::Int(5), s("hello world")]),
            s("hello")
        );
        assert_eq!(
            call(substr, &[Value::Int(6), Value::Int(100), s("hello world")]),
            s("world")
        );
        assert_eq!(call(nospace, &[s("h e l\tl o")]), s("hello"));
        assert_eq!(call(abbrev, &[Value::Int(5), s("hello world")]), s("he..."));
        assert_eq!(
            call(
                abbrevboth,
                &[Value::Int(5), Value::Int(10), s("1234 5678 9123")]
            ),
            s("...5678...")
        );
        assert_eq!(call(initials, &[s("First Try")]), s("FT"));
        assert_eq!(call(repeat, &[Value::Int(3), s("ab")]), s("ababab"));
    }

    #[test]
    fn quoting_and_indenting() {
        assert_eq!(
            call(quote, &[s("a\"b"), Value::Null, Value::Float(80.0)]),
            s("\"a\\\"b\" \"80\"")
        );
        assert_eq!(call(quote, &[Value::Null]), s(""));
        assert_eq!(call(squote, &[s("a"), Value::Bool(true)]), s("'a' 'true'"));
        assert_eq!(call(indent, &[Value::Int(2), s("a\nb")]), s("  a\n  b"));
        assert_eq!(call(nindent, &[Value::Int(2), s("a\n")]), s("\n  a\n  "));
        assert_eq!(
            call(indent, &[Value::Int(2), Value::Null]),
            s("ERR wrong type for value; expected string; got interface {}")
        );
        assert_eq!(call(cat, &[s("a"), Value::Null, Value::Int(1)]), s("a 1"));
        assert!(indent(&[Value::Int(i64::MAX), s("a")]).is_err());
        assert!(indent(&[Value::Int(-1), s("a")]).is_err());
        assert!(repeat(&[Value::Int(i64::MAX), s("ab")]).is_err());
        let long = s("1234 5678 9123");
        assert_eq!(
            call(
                abbrevboth,
                &[Value::Int(i64::MIN), Value::Int(10), long.clone()]
            ),
            s("1234 56...")
        );
        assert_eq!(
            call(
                abbrevboth,
                &[Value::Int(5), Value::Int(i64::MAX), long.clone()]
            ),
            long
        );
    }

    #[test]
    fn splitting_and_joining() {
        let m = call(split, &[s("$"), s("foo$bar$baz")]);
        assert_eq!(m.as_map().and_then(|m| m.get("_2")), Some(&s("baz")));
        assert_eq!(
            call(split_list, &[s(","), s("a,b")]),
            Value::List(vec![s("a"), s("b")])
        );
        assert_eq!(
            call(split_list, &[s(""), s("ab")]),
            Value::List(vec![s("a"), s("b")])
        );
        let m = call(splitn, &[s("$"), Value::Int(2), s("foo$bar$baz")]);
        assert_eq!(m.as_map().and_then(|m| m.get("_1")), Some(&s("bar$baz")));
        let list = Value::List(vec![s("a"), Value::Int(1), Value::Null]);
        assert_eq!(call(join, &[s("-"), list]), s("a-1"));
        assert_eq!(call(join, &[s("-"), s("abc")]), s("abc"));
    }

    #[test]
    fn wrapping() {
        assert_eq!(
            call(wrap, &[Value::Int(10), s("The quick brown fox")]),
            s("The quick\nbrown fox")
        );
        assert_eq!(
            call(wrap_with, &[Value::Int(5), s("\t"), s("Hello World")]),
            s("Hello\tWorld")
        );
        assert_eq!(
            call(wrap_with, &[Value::Int(3), s("|"), s("abcdefg")]),
            s("abc|def|g")
        );
    }

    #[test]
    fn paths() {
        assert_eq!(clean_path("a//b/../c/."), "a/c");
        assert_eq!(clean_path("/../a"), "/a");
        assert_eq!(call(base, &[s("/a/b.txt")]), s("b.txt"));
        assert_eq!(call(dir, &[s("/a/b.txt")]), s("/a"));
        assert_eq!(call(dir, &[s("b.txt")]), s("."));
        assert_eq!(call(ext, &[s("/a/b.tar.gz")]), s(".gz"));
        assert_eq!(call(is_abs, &[s("/a")]), Value::Bool(true));
    }
}
