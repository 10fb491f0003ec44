//! Sprig's URL functions `urlParse` and `urlJoin` (Go's `net/url` parsing
//! and printing for the parts templates use), Helm's `toYamlPretty`
//! (go-yaml v3 indentation), and `getHostByName`, which gives "" as Helm
//! does without `--enable-dns`: rendering never uses the network.

use super::args::{dict, exactly, text};
use super::{FuncError, Function};
use crate::values::{self, Map, Value};

pub(super) const FUNCTIONS: &[(&str, Function)] = &[
    ("urlParse", url_parse),
    ("urlJoin", url_join),
    ("toYamlPretty", to_yaml_pretty),
    ("getHostByName", get_host_by_name),
    ("hello", hello),
];

/// The parts of a URL as Go's `url.Parse` splits them.
#[derive(Debug, Default, PartialEq)]
struct Url {
    scheme: String,
    opaque: String,
    userinfo: Option<String>,
    host: String,
    path: String,
    raw_query: String,
    fragment: String,
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .ok_or_else(|| format!("invalid URL escape {:?}", &s[i..]))?;
            let b = u8::from_str_radix(hex, 16)
                .map_err(|_| format!("invalid URL escape {:?}", &s[i..i + 3]))?;
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn parse_url(raw: &str) -> Result<Url, String> {
    let mut url = Url::default();
    let (rest, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    url.fragment = percent_decode(fragment)?;
    let mut rest = rest;
    if let Some(colon) = rest.find(':') {
        let candidate = &rest[..colon];
        let valid = candidate
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && candidate
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        if valid {
            url.scheme = candidate.to_ascii_lowercase();
            rest = &rest[colon + 1..];
        } else if colon == 0 {
            return Err("missing protocol scheme".into());
        }
    }
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, q),
        None => (rest, ""),
    };
    url.raw_query = query.to_string();
    if !url.scheme.is_empty() && !rest.starts_with('/') {
        url.opaque = rest.to_string();
        return Ok(url);
    }
    let path = if let Some(after) = rest.strip_prefix("//") {
        let end = after.find('/').unwrap_or(after.len());
        let authority = &after[..end];
        match authority.rsplit_once('@') {
            Some((user, host)) => {
                url.userinfo = Some(user.to_string());
                url.host = host.to_string();
            }
            None => url.host = authority.to_string(),
        }
        &after[end..]
    } else {
        rest
    };
    url.path = percent_decode(path)?;
    Ok(url)
}

fn hostname(host: &str) -> &str {
    if let Some(inner) = host.strip_prefix('[') {
        return inner.split(']').next().unwrap_or(inner);
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

/// `urlParse URL`: scheme, host, hostname, path, query, opaque, fragment
/// and userinfo.
fn url_parse(args: &[Value]) -> Result<Value, FuncError> {
    let [raw] = exactly::<1>("urlParse", args)?;
    let url =
        parse_url(text(raw)?).map_err(|e| FuncError::call(format!("unable to parse url: {e}")))?;
    let mut map = Map::new();
    map.insert("scheme".into(), url.scheme.clone().into());
    map.insert("host".into(), url.host.clone().into());
    map.insert("hostname".into(), hostname(&url.host).to_string().into());
    map.insert("path".into(), url.path.into());
    map.insert("query".into(), url.raw_query.into());
    map.insert("opaque".into(), url.opaque.into());
    map.insert("fragment".into(), url.fragment.into());
    map.insert("userinfo".into(), url.userinfo.unwrap_or_default().into());
    Ok(Value::Map(map))
}

/// Go's `shouldEscape` for paths and fragments.
fn escape(s: &str, fragment: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || b"-_.~$&+,/:;=@".contains(&b)
            || (fragment && (b == b'?' || b"!()*".contains(&b)));
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn dict_str(map: &Map, key: &str) -> String {
    match map.get(key) {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

/// `urlJoin DICT`: the URL `urlParse` would split into DICT.
fn url_join(args: &[Value]) -> Result<Value, FuncError> {
    let [d] = exactly::<1>("urlJoin", args)?;
    let d = dict(d)?;
    let (scheme, host, path) = (
        dict_str(&d, "scheme"),
        dict_str(&d, "host"),
        dict_str(&d, "path"),
    );
    let (query, opaque, fragment, userinfo) = (
        dict_str(&d, "query"),
        dict_str(&d, "opaque"),
        dict_str(&d, "fragment"),
        dict_str(&d, "userinfo"),
    );
    let mut out = String::new();
    if !scheme.is_empty() {
        out.push_str(&scheme);
        out.push(':');
    }
    if !opaque.is_empty() {
        out.push_str(&opaque);
    } else {
        if !scheme.is_empty() || !host.is_empty() || !userinfo.is_empty() {
            if !host.is_empty() || !path.is_empty() || !userinfo.is_empty() {
                out.push_str("//");
            }
            if !userinfo.is_empty() {
                out.push_str(&userinfo);
                out.push('@');
            }
            out.push_str(&host);
        }
        if !path.is_empty() && !path.starts_with('/') && !host.is_empty() {
            out.push('/');
        }
        out.push_str(&escape(&path, false));
    }
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query);
    }
    if !fragment.is_empty() {
        out.push('#');
        out.push_str(&escape(&fragment, true));
    }
    Ok(out.into())
}

/// The column of the key that ends a line (after any `- ` prefixes), if
/// the line is a key whose value follows on the next lines.
fn nested_key_column(indent: usize, content: &str) -> Option<usize> {
    let mut column = indent;
    let mut rest = content;
    while let Some(after) = rest.strip_prefix("- ") {
        column += 2;
        rest = after;
    }
    (rest.ends_with(':') && !rest.starts_with(['"', '\''])).then_some(column)
}

/// Re-indents `sigs.k8s.io/yaml` output (sequences at their key's column)
/// the way go-yaml v3 with `SetIndent(2)` writes it (sequences two
/// columns further in).
pub fn indent_sequences(yaml: &str) -> String {
    let lines: Vec<&str> = yaml.split('\n').collect();
    let mut out = Vec::with_capacity(lines.len());
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let content = line.trim_start_matches(' ');
        if content.is_empty() {
            out.push(line.to_string());
            continue;
        }
        let indent = line.len() - content.len();
        let is_item = content.starts_with("- ") || content == "-";
        while let Some(&(column, _)) = stack.last() {
            if indent < column || (indent == column && !is_item) {
                stack.pop();
            } else {
                break;
            }
        }
        let extra = stack.last().map_or(0, |&(_, e)| e);
        out.push(format!("{}{content}", " ".repeat(indent + extra)));
        if let Some(column) = nested_key_column(indent, content) {
            let next = lines.get(i + 1).copied().unwrap_or("");
            let next_content = next.trim_start_matches(' ');
            let next_indent = next.len() - next_content.len();
            if next_indent == column && (next_content.starts_with("- ") || next_content == "-") {
                stack.push((column, extra + 2));
            }
        }
    }
    out.join("\n")
}

/// `toYamlPretty V`: like `toYaml`, with lists indented under their key.
fn to_yaml_pretty(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("toYamlPretty", args)?;
    Ok(indent_sequences(&values::to_yaml_trimmed(v)).into())
}

/// `getHostByName NAME`: "", as Helm gives when DNS lookups are not
/// enabled (`helm template` without `--enable-dns`); rendering never uses
/// the network.
fn get_host_by_name(args: &[Value]) -> Result<Value, FuncError> {
    let [name] = exactly::<1>("getHostByName", args)?;
    text(name)?;
    Ok("".into())
}

fn hello(args: &[Value]) -> Result<Value, FuncError> {
    exactly::<0>("hello", args)?;
    Ok("Hello!".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(v: &Value, key: &str) -> String {
        v.as_map()
            .and_then(|m| m.get(key))
            .map(|v| v.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn parses_urls_like_net_url() {
        let parsed = url_parse(&["https://user:pw@example.com:8443/a%20b?x=1&y=2#frag".into()]);
        let Ok(v) = parsed else { panic!("{parsed:?}") };
        assert_eq!(field(&v, "scheme"), "https");
        assert_eq!(field(&v, "host"), "example.com:8443");
        assert_eq!(field(&v, "hostname"), "example.com");
        assert_eq!(field(&v, "path"), "/a b");
        assert_eq!(field(&v, "query"), "x=1&y=2");
        assert_eq!(field(&v, "fragment"), "frag");
        assert_eq!(field(&v, "userinfo"), "user:pw");
        let opaque = url_parse(&["mailto:someone@example.com".into()]);
        assert!(matches!(&opaque, Ok(v) if field(v, "opaque") == "someone@example.com"));
    }

    #[test]
    fn joins_urls() {
        let mut m = Map::new();
        m.insert("scheme".into(), "http".into());
        m.insert("host".into(), "example.com:80".into());
        m.insert("path".into(), "/a b".into());
        m.insert("query".into(), "x=1".into());
        m.insert("userinfo".into(), "u".into());
        assert_eq!(
            url_join(&[Value::Map(m)]),
            Ok("http://u@example.com:80/a%20b?x=1".into())
        );
    }

    #[test]
    fn pretty_yaml_indents_sequences() {
        assert_eq!(
            indent_sequences("a:\n- b:\n  - 1\n  - 2\n  c: x\nd: 1"),
            "a:\n  - b:\n      - 1\n      - 2\n    c: x\nd: 1"
        );
        assert_eq!(indent_sequences("- a\n- b"), "- a\n- b");
        let mut m = Map::new();
        m.insert("list".into(), Value::List(vec!["x".into()]));
        assert_eq!(to_yaml_pretty(&[Value::Map(m)]), Ok("list:\n  - x".into()));
    }

    #[test]
    fn no_network() {
        assert_eq!(get_host_by_name(&["example.com".into()]), Ok("".into()));
        assert_eq!(hello(&[]), Ok("Hello!".into()));
    }
}
