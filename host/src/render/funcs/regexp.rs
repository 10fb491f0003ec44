//! Sprig's regular-expression functions with Go's RE2 semantics on top of
//! the `regex` crate.
//!
//! Patterns are rewritten from Go's syntax first: `\d`, `\w`, `\s` and
//! `\b` match ASCII only as in Go, `\Q...\E` quotes, and characters Go
//! takes literally but Rust does not (`{` that is no repetition, `[` and
//! `&&`/`~~`/`--` inside a class) are escaped. Matching loops follow Go's
//! `FindAll`, `ReplaceAll` and `Split` rules for empty matches. Gaps: `\C`
//! and octal escapes are not supported.

use regex::Regex;

use super::args::{exactly, integer, string_list, text};
use super::{FuncError, Function};
use crate::values::Value;

pub(super) const FUNCTIONS: &[(&str, Function)] = &[
    ("regexMatch", regex_match),
    ("mustRegexMatch", must_regex_match),
    ("regexFind", regex_find),
    ("mustRegexFind", regex_find),
    ("regexFindAll", regex_find_all),
    ("mustRegexFindAll", regex_find_all),
    ("regexReplaceAll", regex_replace_all),
    ("mustRegexReplaceAll", regex_replace_all),
    ("regexReplaceAllLiteral", regex_replace_all_literal),
    ("mustRegexReplaceAllLiteral", regex_replace_all_literal),
    ("regexSplit", regex_split),
    ("mustRegexSplit", regex_split),
    ("regexQuoteMeta", regex_quote_meta),
];

/// Rewrites a Go RE2 pattern into the `regex` crate's syntax.
pub fn translate(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut in_class = false;
    let mut class_start = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            let e = chars[i + 1];
            i += 2;
            if e == 'Q' {
                let mut literal = String::new();
                while i < chars.len() && !(chars[i] == '\\' && chars.get(i + 1) == Some(&'E')) {
                    literal.push(chars[i]);
                    i += 1;
                }
                i += 2;
                out.push_str(&regex::escape(&literal));
                continue;
            }
            class_start = false;
            out.push_str(&match (in_class, e) {
                (false, 'd' | 'w' | 's' | 'b' | 'B') => format!("(?-u:\\{e})"),
                (false, 'D') => "[^0-9]".into(),
                (false, 'W') => "[^0-9A-Za-z_]".into(),
                (false, 'S') => "[^\\t\\n\\f\\r ]".into(),
                (true, 'd') => "0-9".into(),
                (true, 'w') => "0-9A-Za-z_".into(),
                (true, 's') => "\\t\\n\\f\\r ".into(),
                _ => format!("\\{e}"),
            });
            continue;
        }
        if in_class {
            match c {
                ']' if !class_start => in_class = false,
                '[' if chars.get(i + 1) == Some(&':') => {
                    if let Some(end) = find_seq(&chars, i + 2, &[':', ']']) {
                        out.extend(&chars[i..end + 2]);
                        i = end + 2;
                        class_start = false;
                        continue;
                    }
                    out.push_str("\\[");
                    i += 1;
                    class_start = false;
                    continue;
                }
                '[' | '&' | '~' => {
                    out.push('\\');
                    out.push(c);
                    i += 1;
                    class_start = false;
                    continue;
                }
                '-' if chars.get(i + 1) == Some(&'-') => {
                    out.push_str("\\-");
                    i += 1;
                    class_start = false;
                    continue;
                }
                _ => {}
            }
            if !(class_start && c == '^') {
                class_start = false;
            }
            out.push(c);
            i += 1;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                class_start = true;
                out.push('[');
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                i += 1;
                continue;
            }
            '{' if !is_repetition(&chars, i) => out.push_str("\\{"),
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

fn find_seq(chars: &[char], from: usize, seq: &[char]) -> Option<usize> {
    (from..chars.len().saturating_sub(seq.len() - 1)).find(|&k| chars[k..k + seq.len()] == *seq)
}

/// Whether `{` at `i` starts a `{n}`, `{n,}` or `{n,m}` repetition.
fn is_repetition(chars: &[char], i: usize) -> bool {
    let mut j = i + 1;
    let start = j;
    while j < chars.len() && chars[j].is_ascii_digit() {
        j += 1;
    }
    if j == start {
        return false;
    }
    if chars.get(j) == Some(&',') {
        j += 1;
        while j < chars.len() && chars[j].is_ascii_digit() {
            j += 1;
        }
    }
    chars.get(j) == Some(&'}')
}

/// Compiles a Go pattern.
///
/// # Errors
/// Go's `error parsing regexp` prefix with the pattern.
pub fn compile(pattern: &str) -> Result<Regex, FuncError> {
    Regex::new(&translate(pattern)).map_err(|_| {
        FuncError::call(format!(
            "error parsing regexp: invalid pattern: `{pattern}`"
        ))
    })
}

/// Go's `allMatches`: up to `n` matches (all when negative), skipping an
/// empty match right after the previous match.
fn all_matches(re: &Regex, s: &str, n: i64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let mut previous_end: Option<usize> = None;
    while (n < 0 || (out.len() as i64) < n) && pos <= s.len() {
        let Some(m) = re.find_at(s, pos) else { break };
        let mut accept = true;
        if m.end() == pos {
            if Some(m.start()) == previous_end {
                accept = false;
            }
            pos += s[pos..].chars().next().map_or(1, char::len_utf8);
        } else {
            pos = m.end();
        }
        previous_end = Some(m.end());
        if accept {
            out.push((m.start(), m.end()));
        }
    }
    out
}

/// Go's `ReplaceAllString` (expanding `$1`, `${name}`) or
/// `ReplaceAllLiteralString`.
fn replace_all(re: &Regex, s: &str, replacement: &str, expand: bool) -> String {
    let mut out = String::new();
    let mut last_end = 0usize;
    let mut pos = 0usize;
    while pos <= s.len() {
        let Some(caps) = re.captures_at(s, pos) else {
            break;
        };
        let Some(m) = caps.get(0) else { break };
        out.push_str(&s[last_end..m.start()]);
        if m.end() > last_end || m.start() == 0 {
            if expand {
                caps.expand(replacement, &mut out);
            } else {
                out.push_str(replacement);
            }
        }
        last_end = m.end();
        let width = s[pos..].chars().next().map_or(1, char::len_utf8);
        pos = if pos + width > m.end() {
            pos + width
        } else {
            m.end()
        };
    }
    if last_end <= s.len() {
        out.push_str(&s[last_end..]);
    }
    out
}

fn regex_match(args: &[Value]) -> Result<Value, FuncError> {
    let [pattern, s] = exactly::<2>("regexMatch", args)?;
    let (pattern, s) = (text(pattern)?, text(s)?);
    Ok(Value::Bool(compile(pattern).is_ok_and(|re| re.is_match(s))))
}

fn must_regex_match(args: &[Value]) -> Result<Value, FuncError> {
    let [pattern, s] = exactly::<2>("mustRegexMatch", args)?;
    Ok(Value::Bool(compile(text(pattern)?)?.is_match(text(s)?)))
}

fn regex_find(args: &[Value]) -> Result<Value, FuncError> {
    let [pattern, s] = exactly::<2>("regexFind", args)?;
    let s = text(s)?;
    let re = compile(text(pattern)?)?;
    Ok(re.find(s).map_or("", |m| m.as_str()).into())
}

fn regex_find_all(args: &[Value]) -> Result<Value, FuncError> {
    let [pattern, s, n] = exactly::<3>("regexFindAll", args)?;
    let (s, n) = (text(s)?, integer(n)?);
    let re = compile(text(pattern)?)?;
    Ok(string_list(
        all_matches(&re, s, n)
            .into_iter()
            .map(|(a, b)| s[a..b].to_string()),
    ))
}

fn regex_replace_all(args: &[Value]) -> Result<Value, FuncError> {
    let [pattern, s, replacement] = exactly::<3>("regexReplaceAll", args)?;
    let re = compile(text(pattern)?)?;
    Ok(replace_all(&re, text(s)?, text(replacement)?, true).into())
}

fn regex_replace_all_literal(args: &[Value]) -> Result<Value, FuncError> {
    let [pattern, s, replacement] = exactly::<3>("regexReplaceAllLiteral", args)?;
    let re = compile(text(pattern)?)?;
    Ok(replace_all(&re, text(s)?, text(replacement)?, false).into())
}

/// Go's `Regexp.Split(s, n)`.
fn regex_split(args: &[Value]) -> Result<Value, FuncError> {
    let [pattern, s, n] = exactly::<3>("regexSplit", args)?;
    let (pattern, s, n) = (text(pattern)?, text(s)?, integer(n)?);
    let re = compile(pattern)?;
    if n == 0 {
        return Ok(Value::List(Vec::new()));
    }
    if !pattern.is_empty() && s.is_empty() {
        return Ok(string_list([String::new()]));
    }
    let mut pieces = Vec::new();
    let (mut begin, mut end) = (0usize, 0usize);
    for (start, stop) in all_matches(&re, s, n) {
        if n > 0 && pieces.len() as i64 == n - 1 {
            break;
        }
        end = start;
        if stop != 0 {
            pieces.push(s[begin..end].to_string());
        }
        begin = stop;
    }
    if end != s.len() {
        pieces.push(s[begin..].to_string());
    }
    Ok(string_list(pieces))
}

/// Go's `regexp.QuoteMeta`.
fn regex_quote_meta(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("regexQuoteMeta", args)?;
    let mut out = String::new();
    for c in text(s)?.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    fn list(items: &[&str]) -> Value {
        Value::List(items.iter().map(|i| s(i)).collect())
    }

    #[test]
    fn go_syntax_is_translated() {
        assert_eq!(regex_match(&[s(r"^\d+$"), s("١٢")]), Ok(Value::Bool(false)));
        assert_eq!(regex_match(&[s(r"^\d+$"), s("12")]), Ok(Value::Bool(true)));
        assert_eq!(regex_match(&[s(r"a{"), s("xa{")]), Ok(Value::Bool(true)));
        assert_eq!(regex_match(&[s(r"[[a]"), s("[")]), Ok(Value::Bool(true)));
        assert_eq!(
            regex_match(&[s(r"[[:alpha:]&]+"), s("a&b")]),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            regex_match(&[s(r"\Qa.b\E"), s("a.b")]),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            regex_match(&[s(r"\Qa.b\E"), s("axb")]),
            Ok(Value::Bool(false))
        );
        assert_eq!(regex_match(&[s("("), s("x")]), Ok(Value::Bool(false)));
        assert!(must_regex_match(&[s("("), s("x")]).is_err());
    }

    #[test]
    fn patterns_from_bitnami_common() {
        let caps = s("&{map[] {v1.30.0 1 30} {v3.14.0}}");
        assert_eq!(
            regex_match(&[s("{(v[0-9])*[^}]*}}$"), caps]),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            regex_replace_all(&[s(r"(-?[^a-z\d\-])+-?"), s("my_release.Name"), s("-")]),
            Ok(s("my-release-ame"))
        );
        assert_eq!(
            regex_replace_all_literal(&[s(r"\W"), s("a-b.c"), s("@")]),
            Ok(s("a@b@c"))
        );
        assert_eq!(
            regex_find(&[s(r"-r\d+$|sha256:"), s("1.2.3-debian-12-r4")]),
            Ok(s("-r4"))
        );
        let semver_like = r"^([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$";
        assert_eq!(
            regex_match(&[s(semver_like), s("1.25.3-debian-12-r0")]),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            regex_match(&[s(semver_like), s("latest")]),
            Ok(Value::Bool(false))
        );
    }

    #[test]
    fn find_and_replace() {
        assert_eq!(
            regex_find(&[s("[a-zA-Z][1-9]"), s("abcd1234")]),
            Ok(s("d1"))
        );
        assert_eq!(
            regex_find_all(&[s("[2,4,6,8]"), s("123456789"), Value::Int(-1)]),
            Ok(list(&["2", "4", "6", "8"]))
        );
        assert_eq!(
            regex_find_all(&[s("[2,4,6,8]"), s("123456789"), Value::Int(2)]),
            Ok(list(&["2", "4"]))
        );
        assert_eq!(
            regex_find_all(&[s("a*"), s("baaac"), Value::Int(-1)]),
            Ok(list(&["", "aaa", ""]))
        );
        assert_eq!(
            regex_replace_all(&[s("a(x*)b"), s("-ab-axxb-"), s("${1}W")]),
            Ok(s("-W-xxW-"))
        );
        assert_eq!(
            regex_replace_all(&[s("a(x*)b"), s("-ab-axxb-"), s("$1W")]),
            Ok(s("---"))
        );
        assert_eq!(
            regex_replace_all(&[s("a*"), s("baaac"), s("-")]),
            Ok(s("-b-c-"))
        );
        assert_eq!(
            regex_replace_all_literal(&[s("a(x*)b"), s("-ab-axxb-"), s("${1}")]),
            Ok(s("-${1}-${1}-"))
        );
    }

    #[test]
    fn split_like_go() {
        assert_eq!(
            regex_split(&[s("z+"), s("pizza"), Value::Int(-1)]),
            Ok(list(&["pi", "a"]))
        );
        assert_eq!(
            regex_split(&[s("z+"), s("pizza"), Value::Int(1)]),
            Ok(list(&["pizza"]))
        );
        assert_eq!(
            regex_split(&[s("a"), s("banana"), Value::Int(-1)]),
            Ok(list(&["b", "n", "n", ""]))
        );
        assert_eq!(
            regex_split(&[s(""), s("abc"), Value::Int(-1)]),
            Ok(list(&["a", "b", "c"]))
        );
        assert_eq!(
            regex_split(&[s("x"), s(""), Value::Int(-1)]),
            Ok(list(&[""]))
        );
        assert_eq!(
            regex_split(&[s("a"), s("banana"), Value::Int(0)]),
            Ok(list(&[]))
        );
    }

    #[test]
    fn quote_meta_like_go() {
        assert_eq!(regex_quote_meta(&[s("1.2.3-a+b")]), Ok(s(r"1\.2\.3-a\+b")));
    }
}
