//! Encodings and digests: base64 and base32 (Go's standard encodings),
//! `sha1sum`, `sha256sum`, `sha512sum`, `adler32sum`, and the YAML, JSON
//! and TOML conversions, which wrap `crate::values` the way Helm's
//! `pkg/engine/funcs.go` and Sprig wrap their Go libraries.
//!
//! Go strings may hold any bytes; ours are UTF-8, so a decoded value that
//! is not UTF-8 (`b64dec` of binary data) gets U+FFFD for its bad bytes.

use sha1::Sha1;
use sha2::{Digest, Sha256, Sha512};

use super::args::{exactly, text};
use super::{FuncError, Function};
use crate::values::{self, Map, Value};

pub(super) const FUNCTIONS: &[(&str, Function)] = &[
    ("b64enc", b64enc),
    ("b64dec", b64dec),
    ("b32enc", b32enc),
    ("b32dec", b32dec),
    ("sha1sum", sha1sum),
    ("sha256sum", sha256sum),
    ("sha512sum", sha512sum),
    ("adler32sum", adler32sum),
    ("toYaml", to_yaml),
    ("mustToYaml", must_to_yaml),
    ("fromYaml", from_yaml),
    ("fromYamlArray", from_yaml_array),
    ("toJson", to_json),
    ("mustToJson", must_to_json),
    ("toPrettyJson", to_pretty_json),
    ("mustToPrettyJson", must_to_pretty_json),
    ("toRawJson", to_raw_json),
    ("mustToRawJson", must_to_raw_json),
    ("fromJson", from_json),
    ("mustFromJson", must_from_json),
    ("fromJsonArray", from_json_array),
    ("toToml", to_toml),
    ("mustToToml", must_to_toml),
];

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// Go's `base64.StdEncoding.EncodeToString`.
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Go's `base64.StdEncoding.DecodeString`: padding required, `\r` and `\n`
/// skipped. The error is Go's `illegal base64 data at input byte N`.
pub fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    decode_blocks(
        s,
        4,
        6,
        |c| BASE64.iter().position(|&b| b == c).map(|p| p as u32),
        "base64",
    )
}

/// Go's `base32.StdEncoding.EncodeToString`.
pub fn base32_encode(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(5) {
        let mut block = [0u8; 5];
        block[..chunk.len()].copy_from_slice(chunk);
        let n = block.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        let used = (chunk.len() * 8).div_ceil(5);
        for k in 0..8 {
            if k < used {
                out.push(BASE32[(n >> (35 - 5 * k) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Go's `base32.StdEncoding.DecodeString`.
pub fn base32_decode(s: &str) -> Result<Vec<u8>, String> {
    decode_blocks(
        s,
        8,
        5,
        |c| BASE32.iter().position(|&b| b == c).map(|p| p as u32),
        "base32",
    )
}

/// Decodes padded blocks of `block` symbols of `bits` bits each.
fn decode_blocks(
    s: &str,
    block: usize,
    bits: u32,
    symbol: impl Fn(u8) -> Option<u32>,
    name: &str,
) -> Result<Vec<u8>, String> {
    let illegal = |at: usize| format!("illegal {name} data at input byte {at}");
    let symbols: Vec<(usize, u8)> = s
        .bytes()
        .enumerate()
        .filter(|(_, b)| *b != b'\n' && *b != b'\r')
        .collect();
    let mut out = Vec::new();
    for group in symbols.chunks(block) {
        if group.len() < block {
            return Err(illegal(group[0].0));
        }
        let mut acc: u64 = 0;
        let mut count = 0usize;
        let mut padding_from: Option<usize> = None;
        for (k, &(at, c)) in group.iter().enumerate() {
            if c == b'=' {
                if padding_from.is_none() {
                    padding_from = Some(k);
                }
                continue;
            }
            if padding_from.is_some() {
                return Err(illegal(at));
            }
            let v = symbol(c).ok_or_else(|| illegal(at))?;
            acc = (acc << bits) | u64::from(v);
            count += 1;
        }
        let total_bits = count * bits as usize;
        let bytes = total_bits / 8;
        let valid_counts: &[usize] = if block == 4 {
            &[2, 3, 4]
        } else {
            &[2, 4, 5, 7, 8]
        };
        if !valid_counts.contains(&count) {
            return Err(illegal(group[count.min(block - 1)].0));
        }
        acc >>= total_bits % 8;
        for k in (0..bytes).rev() {
            out.push((acc >> (8 * k)) as u8);
        }
        if padding_from.is_some() && group != symbols.chunks(block).last().unwrap_or_default() {
            return Err(illegal(group[block - 1].0 + 1));
        }
    }
    Ok(out)
}

fn b64enc(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("b64enc", args)?;
    Ok(base64_encode(text(s)?.as_bytes()).into())
}

/// `b64dec S`: the decoded text, or Go's error text when S is not base64
/// (Sprig returns the error as the result).
fn b64dec(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("b64dec", args)?;
    Ok(match base64_decode(text(s)?) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(message) => message,
    }
    .into())
}

fn b32enc(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("b32enc", args)?;
    Ok(base32_encode(text(s)?.as_bytes()).into())
}

fn b32dec(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("b32dec", args)?;
    Ok(match base32_decode(text(s)?) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(message) => message,
    }
    .into())
}

fn sha1sum(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("sha1sum", args)?;
    Ok(hex::encode(Sha1::digest(text(s)?.as_bytes())).into())
}

fn sha256sum(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("sha256sum", args)?;
    Ok(hex::encode(Sha256::digest(text(s)?.as_bytes())).into())
}

fn sha512sum(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("sha512sum", args)?;
    Ok(hex::encode(Sha512::digest(text(s)?.as_bytes())).into())
}

/// Adler-32 of the bytes.
pub fn adler32(bytes: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in bytes {
        a = (a + u32::from(byte)) % MOD;
        b = (b + a) % MOD;
    }
    (b << 16) | a
}

/// `adler32sum S`: the checksum in decimal.
fn adler32sum(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("adler32sum", args)?;
    Ok(adler32(text(s)?.as_bytes()).to_string().into())
}

/// `toYaml V`: `sigs.k8s.io/yaml` output without the final newline; "" if
/// V cannot be printed.
fn to_yaml(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("toYaml", args)?;
    Ok(values::to_yaml_trimmed(v).into())
}

/// `mustToYaml V`: as `toYaml`, but an error where `toYaml` gives "".
fn must_to_yaml(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("mustToYaml", args)?;
    let out = values::to_yaml_trimmed(v);
    if out.is_empty() {
        return Err(FuncError::call(
            "json: unsupported value: cannot marshal to yaml",
        ));
    }
    Ok(out.into())
}

/// The first YAML document of `s` (nil for an empty one), as go-yaml's
/// `Unmarshal` reads it.
fn first_yaml_document(s: &str) -> Result<Value, String> {
    let documents = values::parse_yaml_documents(s)
        .map_err(|e| format!("error converting YAML to JSON: {e}"))?;
    Ok(documents.into_iter().next().unwrap_or(Value::Null))
}

/// Go's `json` message for a document of the wrong kind.
fn cannot_unmarshal(value: &Value, into: &str, via_yaml: bool) -> String {
    let what = match value {
        Value::Map(_) => "object",
        Value::List(_) => "array",
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::Float(_) => "number",
        Value::Null => "null",
    };
    let message = format!("json: cannot unmarshal {what} into Go value of type {into}");
    if via_yaml {
        format!("error unmarshaling JSON: while decoding JSON: {message}")
    } else {
        message
    }
}

fn error_map(message: String) -> Value {
    let mut map = Map::new();
    map.insert("Error".into(), Value::String(message));
    Value::Map(map)
}

/// Reads a map the way Helm's `fromYaml` and `fromJson` do: nil gives an
/// empty map, anything but a map gives a map with an `Error` key.
fn into_map(parsed: Result<Value, String>, via_yaml: bool) -> Value {
    match parsed {
        Ok(Value::Map(map)) => Value::Map(map),
        Ok(Value::Null) => Value::Map(Map::new()),
        Ok(other) => error_map(cannot_unmarshal(
            &other,
            "map[string]interface {}",
            via_yaml,
        )),
        Err(message) => error_map(message),
    }
}

/// Reads a list the way `fromYamlArray` and `fromJsonArray` do: nil gives
/// an empty list, an error gives a list holding the message.
fn into_list(parsed: Result<Value, String>, via_yaml: bool) -> Value {
    match parsed {
        Ok(Value::List(items)) => Value::List(items),
        Ok(Value::Null) => Value::List(Vec::new()),
        Ok(other) => Value::List(vec![Value::String(cannot_unmarshal(
            &other,
            "[]interface {}",
            via_yaml,
        ))]),
        Err(message) => Value::List(vec![Value::String(message)]),
    }
}

/// `fromYaml S`: a map; errors are reported in its `Error` key.
fn from_yaml(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("fromYaml", args)?;
    Ok(into_map(first_yaml_document(text(s)?), true))
}

/// `fromYamlArray S`: a list; an error is its only element.
fn from_yaml_array(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("fromYamlArray", args)?;
    Ok(into_list(first_yaml_document(text(s)?), true))
}

fn parse_json(s: &str) -> Result<Value, String> {
    if s.trim().is_empty() {
        return Err("unexpected end of JSON input".into());
    }
    values::parse_json(s).map_err(|e| e.to_string())
}

fn to_json(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("toJson", args)?;
    Ok(values::to_json(v).into())
}

fn must_to_json(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("mustToJson", args)?;
    values::try_to_json(v)
        .map(Value::String)
        .map_err(|e| FuncError::call(e.to_string()))
}

fn to_pretty_json(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("toPrettyJson", args)?;
    Ok(values::to_pretty_json(v).into())
}

fn must_to_pretty_json(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("mustToPrettyJson", args)?;
    values::try_to_json(v).map_err(|e| FuncError::call(e.to_string()))?;
    Ok(values::to_pretty_json(v).into())
}

fn to_raw_json(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("toRawJson", args)?;
    Ok(values::to_raw_json(v).into())
}

fn must_to_raw_json(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("mustToRawJson", args)?;
    values::try_to_json(v).map_err(|e| FuncError::call(e.to_string()))?;
    Ok(values::to_raw_json(v).into())
}

/// `fromJson S`: a map; errors are reported in its `Error` key.
fn from_json(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("fromJson", args)?;
    Ok(into_map(parse_json(text(s)?), false))
}

/// `mustFromJson S`: any JSON value, or an error.
fn must_from_json(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("mustFromJson", args)?;
    parse_json(text(s)?).map_err(FuncError::call)
}

fn from_json_array(args: &[Value]) -> Result<Value, FuncError> {
    let [s] = exactly::<1>("fromJsonArray", args)?;
    Ok(into_list(parse_json(text(s)?), false))
}

/// `toToml V`: BurntSushi/toml's encoding of a map, or the error text.
fn to_toml(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("toToml", args)?;
    Ok(match toml_document(v) {
        Ok(out) | Err(out) => out.into(),
    })
}

fn must_to_toml(args: &[Value]) -> Result<Value, FuncError> {
    let [v] = exactly::<1>("mustToToml", args)?;
    toml_document(v).map(Value::String).map_err(FuncError::call)
}

/// Encodes a top-level map as BurntSushi/toml's `Encoder` does: plain keys
/// first, then tables and arrays of tables, keys sorted, nested tables
/// indented by two spaces per level, whole floats written as integers (as
/// Helm normalises them).
fn toml_document(value: &Value) -> Result<String, String> {
    let Value::Map(map) = value else {
        return Err("toml: top-level values must be Go maps or structs".into());
    };
    let mut out = TomlWriter::default();
    out.table(&[], map)?;
    Ok(out.text)
}

#[derive(Default)]
struct TomlWriter {
    text: String,
}

fn is_table(value: &Value) -> bool {
    match value {
        Value::Map(_) => true,
        Value::List(items) => !items.is_empty() && items.iter().all(|i| matches!(i, Value::Map(_))),
        _ => false,
    }
}

fn toml_key(part: &str) -> String {
    if !part.is_empty()
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        part.to_string()
    } else {
        toml_string(part)
    }
}

fn toml_path(path: &[&str]) -> String {
    path.iter()
        .map(|p| toml_key(p))
        .collect::<Vec<_>>()
        .join(".")
}

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)` with ".0" added to whole
/// numbers.
fn toml_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let text = format!("{f}");
    if text.contains('.') {
        text
    } else {
        format!("{text}.0")
    }
}

fn toml_element(value: &Value) -> Result<String, String> {
    Ok(match value {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => (*f as i64).to_string(),
        Value::Float(f) => toml_float(*f),
        Value::String(s) => toml_string(s),
        Value::List(items) => {
            let parts: Result<Vec<String>, String> = items.iter().map(toml_element).collect();
            format!("[{}]", parts?.join(", "))
        }
        Value::Map(map) => {
            let parts: Result<Vec<String>, String> = map
                .iter()
                .filter(|(_, v)| !matches!(v, Value::Null))
                .map(|(k, v)| Ok(format!("{} = {}", toml_key(k), toml_element(v)?)))
                .collect();
            format!("{{{}}}", parts?.join(", "))
        }
        Value::Null => return Err("toml: cannot encode a nil value".into()),
    })
}

impl TomlWriter {
    fn newline(&mut self) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
    }

    fn indent(depth: usize) -> String {
        "  ".repeat(depth.saturating_sub(1))
    }

    fn table(&mut self, path: &[&str], map: &Map) -> Result<(), String> {
        // A typed nil map (`values::NIL_MAP_KEY`) is an empty table.
        let nil = crate::values::is_nil_map(map);
        let (subs, direct): (Vec<_>, Vec<_>) =
            map.iter().filter(|_| !nil).partition(|(_, v)| is_table(v));
        for (key, value) in direct {
            if matches!(value, Value::Null) {
                continue;
            }
            let depth = path.len() + 1;
            self.text.push_str(&format!(
                "{}{} = {}",
                Self::indent(depth),
                toml_key(key),
                toml_element(value)?
            ));
            self.newline();
        }
        for (key, value) in subs {
            let mut child: Vec<&str> = path.to_vec();
            child.push(key);
            match value {
                Value::Map(inner) => {
                    if child.len() == 1 {
                        self.newline();
                    }
                    self.text.push_str(&format!(
                        "{}[{}]",
                        Self::indent(child.len()),
                        toml_path(&child)
                    ));
                    self.newline();
                    self.table(&child, inner)?;
                }
                Value::List(items) => {
                    for item in items {
                        if let Value::Map(inner) = item {
                            self.newline();
                            self.text.push_str(&format!(
                                "{}[[{}]]",
                                Self::indent(child.len()),
                                toml_path(&child)
                            ));
                            self.newline();
                            self.table(&child, inner)?;
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    #[test]
    fn base64_and_base32_round_trip() {
        assert_eq!(b64enc(&[s("hello")]), Ok(s("aGVsbG8=")));
        assert_eq!(b64enc(&[s("")]), Ok(s("")));
        assert_eq!(b64dec(&[s("aGVsbG8=")]), Ok(s("hello")));
        assert_eq!(b64dec(&[s("aGVs\nbG8=")]), Ok(s("hello")));
        assert_eq!(
            b64dec(&[s("aGVsbG8")]),
            Ok(s("illegal base64 data at input byte 4"))
        );
        assert_eq!(
            b64dec(&[s("a!==")]),
            Ok(s("illegal base64 data at input byte 1"))
        );
        assert_eq!(b32enc(&[s("hello")]), Ok(s("NBSWY3DP")));
        assert_eq!(b32enc(&[s("hi")]), Ok(s("NBUQ====")));
        assert_eq!(b32dec(&[s("NBUQ====")]), Ok(s("hi")));
        assert_eq!(
            b64enc(&[Value::Int(1)]).map_err(|e| e.message),
            Err("wrong type for value; expected string; got int64".into())
        );
    }

    #[test]
    fn digests() {
        assert_eq!(
            sha1sum(&[s("abc")]),
            Ok(s("a9993e364706816aba3e25717850c26c9cd0d89d"))
        );
        assert_eq!(
            sha256sum(&[s("abc")]),
            Ok(s(
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
            ))
        );
        assert_eq!(adler32sum(&[s("Wikipedia")]), Ok(s("300286872")));
        assert!(
            matches!(sha512sum(&[s("abc")]), Ok(Value::String(h)) if h.starts_with("ddaf35a193617aba"))
        );
    }

    #[test]
    fn yaml_and_json_wrappers_follow_helm() {
        let mut m = Map::new();
        m.insert("a".into(), Value::Float(1.0));
        m.insert("b".into(), Value::List(vec![s("x")]));
        assert_eq!(to_yaml(&[Value::Map(m.clone())]), Ok(s("a: 1\nb:\n- x")));
        assert_eq!(
            to_json(&[Value::Map(m.clone())]),
            Ok(s("{\"a\":1,\"b\":[\"x\"]}"))
        );
        assert_eq!(
            from_yaml(&[s("a: 1\nb:\n- x\n")]),
            Ok(Value::Map(m.clone()))
        );
        assert_eq!(from_yaml(&[s("")]), Ok(Value::Map(Map::new())));
        assert_eq!(
            from_yaml(&[s("- 1")]),
            Ok(error_map("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}".into()))
        );
        assert_eq!(
            from_yaml_array(&[s("- 1\n- a")]),
            Ok(Value::List(vec![Value::Float(1.0), s("a")]))
        );
        assert_eq!(
            from_json(&[s("{\"a\":1,\"b\":[\"x\"]}")]),
            Ok(Value::Map(m))
        );
        assert!(matches!(from_json(&[s("{bad")]), Ok(Value::Map(e)) if e.contains_key("Error")));
        assert_eq!(
            from_json_array(&[s("[1]")]),
            Ok(Value::List(vec![Value::Float(1.0)]))
        );
        assert_eq!(must_from_json(&[s("\"x\"")]), Ok(s("x")));
        assert!(must_from_json(&[s("nope")]).is_err());
        assert_eq!(to_raw_json(&[s("<&>")]), Ok(s("\"<&>\"")));
        assert_eq!(to_json(&[s("<&>")]), Ok(s("\"\\u003c\\u0026\\u003e\"")));
    }

    #[test]
    fn toml_like_burntsushi() {
        let mut inner = Map::new();
        inner.insert("port".into(), Value::Float(80.0));
        inner.insert("ratio".into(), Value::Float(0.5));
        let mut deeper = Map::new();
        deeper.insert("x".into(), s("y"));
        inner.insert("deep".into(), Value::Map(deeper));
        let mut m = Map::new();
        m.insert("name".into(), s("a\"b"));
        m.insert("server".into(), Value::Map(inner));
        m.insert(
            "list".into(),
            Value::List(vec![Value::Int(1), Value::Int(2)]),
        );
        assert_eq!(
            to_toml(&[Value::Map(m)]),
            Ok(s(
                "list = [1, 2]\nname = \"a\\\"b\"\n\n[server]\n  port = 80\n  ratio = 0.5\n  [server.deep]\n    x = \"y\"\n"
            ))
        );
        assert_eq!(
            to_toml(&[s("x")]),
            Ok(s("toml: top-level values must be Go maps or structs"))
        );
    }
}
