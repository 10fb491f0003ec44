//! JSON as Go's `encoding/json` reads and writes `interface{}` values,
//! which is what Helm's `toJson`, `toPrettyJson`, `fromJson` and
//! `--set-json` use.

use super::{Error, MAX_DEPTH, Map, Value};

/// Go's `json.Marshal`, as Helm's `toJson` prints it: map keys sorted, no
/// spaces, `<`, `>` and `&` escaped as `\u003c`, `\u003e`, `\u0026`,
/// numbers as `encoding/json` formats a float64 (`1`, `1.5`, `1e+21`).
///
/// Returns an empty string when the value holds a NaN or infinite float,
/// because `json.Marshal` fails on those and `toJson` then prints nothing;
/// use [`try_to_json`] to see the error.
pub fn to_json(value: &Value) -> String {
    try_to_json(value).unwrap_or_default()
}

/// [`to_json`] that reports a non-finite float instead of printing
/// nothing (what Helm's `mustToJson` does).
///
/// # Errors
///
/// [`Error::JsonNotFinite`] when a float is NaN or infinite.
pub fn try_to_json(value: &Value) -> Result<String, Error> {
    let mut out = String::new();
    write_json(
        &mut out,
        value,
        &Style {
            indent: None,
            escape_html: true,
        },
        0,
    )?;
    Ok(out)
}

/// Go's `json.MarshalIndent(v, "", "  ")`, as Helm's `toPrettyJson` prints
/// it: one entry per line, two spaces per level, `": "` after keys, and
/// empty maps and lists as `{}` and `[]`. Empty string on a non-finite
/// float, as [`to_json`].
pub fn to_pretty_json(value: &Value) -> String {
    let mut out = String::new();
    match write_json(
        &mut out,
        value,
        &Style {
            indent: Some("  "),
            escape_html: true,
        },
        0,
    ) {
        Ok(()) => out,
        Err(_) => String::new(),
    }
}

/// Sprig's `toRawJson`: [`to_json`] without escaping `<`, `>` and `&`.
pub fn to_raw_json(value: &Value) -> String {
    let mut out = String::new();
    match write_json(
        &mut out,
        value,
        &Style {
            indent: None,
            escape_html: false,
        },
        0,
    ) {
        Ok(()) => out,
        Err(_) => String::new(),
    }
}

/// Go's `json.Unmarshal` into `interface{}`: every number is a
/// [`Value::Float`], a repeated key keeps its last value.
///
/// Differs from Go only in refusing a lone UTF-16 surrogate escape
/// (`"\ud800"`), which Go turns into U+FFFD.
///
/// # Errors
///
/// [`Error::JsonSyntax`] for malformed JSON (with its line and column),
/// [`Error::JsonTooDeep`] when it nests deeper than [`MAX_DEPTH`].
pub fn parse_json(text: &str) -> Result<Value, Error> {
    let json: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        if e.to_string().starts_with("recursion limit exceeded") {
            Error::JsonTooDeep { limit: MAX_DEPTH }
        } else {
            Error::JsonSyntax {
                line: e.line(),
                column: e.column(),
            }
        }
    })?;
    json_to_value(json)
}

/// A parsed JSON value as a [`Value`], refused past [`MAX_DEPTH`].
pub(crate) fn json_to_value(json: serde_json::Value) -> Result<Value, Error> {
    if depth_of(&json) > MAX_DEPTH {
        return Err(Error::JsonTooDeep { limit: MAX_DEPTH });
    }
    Ok(Value::from(json))
}

/// Nesting depth of a parsed JSON value (serde_json stops at 128 levels while
/// parsing, so this recursion is bounded).
fn depth_of(json: &serde_json::Value) -> usize {
    match json {
        serde_json::Value::Array(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
        serde_json::Value::Object(map) => 1 + map.values().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

/// How [`write_json`] lays out its output.
struct Style {
    /// The per-level indent for `MarshalIndent`, or `None` for compact.
    indent: Option<&'static str>,
    /// Whether `<`, `>` and `&` are escaped (Go's default).
    escape_html: bool,
}

fn write_json(out: &mut String, value: &Value, style: &Style, level: usize) -> Result<(), Error> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&go_json_float(*f).ok_or(Error::JsonNotFinite)?),
        Value::String(s) => write_json_string(out, s, style.escape_html),
        Value::List(items) => write_list(out, items, style, level)?,
        Value::Map(map) => match super::version_text(map) {
            // A semver version marshals as its string (`MarshalJSON`).
            Some(text) => write_json_string(out, text, style.escape_html),
            // `encoding/json` encodes a nil map as `null` (see `NIL_MAP_KEY`).
            None if super::is_nil_map(map) => out.push_str("null"),
            None => write_map(out, map, style, level)?,
        },
    }
    Ok(())
}

fn write_list(out: &mut String, items: &[Value], style: &Style, level: usize) -> Result<(), Error> {
    if items.is_empty() {
        out.push_str("[]");
        return Ok(());
    }
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(out, style, level + 1);
        write_json(out, item, style, level + 1)?;
    }
    newline(out, style, level);
    out.push(']');
    Ok(())
}

fn write_map(out: &mut String, map: &Map, style: &Style, level: usize) -> Result<(), Error> {
    if map.is_empty() {
        out.push_str("{}");
        return Ok(());
    }
    out.push('{');
    for (i, (key, item)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(out, style, level + 1);
        write_json_string(out, key, style.escape_html);
        out.push(':');
        if style.indent.is_some() {
            out.push(' ');
        }
        write_json(out, item, style, level + 1)?;
    }
    newline(out, style, level);
    out.push('}');
    Ok(())
}

fn newline(out: &mut String, style: &Style, level: usize) {
    if let Some(indent) = style.indent {
        out.push('\n');
        for _ in 0..level {
            out.push_str(indent);
        }
    }
}

/// A JSON string as `encoding/json` writes it.
fn write_json_string(out: &mut String, s: &str, escape_html: bool) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' if escape_html => push_unicode_escape(out, c as u32, HEX),
            '\u{2028}' | '\u{2029}' => push_unicode_escape(out, c as u32, HEX),
            c if (c as u32) < 0x20 => push_unicode_escape(out, c as u32, HEX),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_unicode_escape(out: &mut String, code: u32, hex: &[u8; 16]) {
    out.push_str("\\u");
    for shift in [12, 8, 4, 0] {
        out.push(char::from(hex[((code >> shift) & 0xF) as usize]));
    }
}

/// A float64 as `encoding/json` writes it: the shortest round-trip digits,
/// plain (`100000000000000000000`, `0.000001`) unless the magnitude is
/// below 1e-6 or at least 1e21, then in exponent form (`1e+21`, `1e-7`).
/// `None` for NaN and infinities, which JSON cannot hold.
pub(crate) fn go_json_float(f: f64) -> Option<String> {
    if !f.is_finite() {
        return None;
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let sci = format!("{f:e}");
        let (mantissa, exp) = sci.split_once('e')?;
        let exp: i32 = exp.parse().ok()?;
        let sign = if exp < 0 { '-' } else { '+' };
        Some(format!("{mantissa}e{sign}{}", exp.unsigned_abs()))
    } else {
        Some(format!("{f}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::test_support::map;

    #[test]
    fn floats_are_formatted_like_encoding_json() {
        assert_eq!(go_json_float(3.0).unwrap(), "3");
        assert_eq!(go_json_float(-0.0).unwrap(), "-0");
        assert_eq!(go_json_float(1.5).unwrap(), "1.5");
        assert_eq!(go_json_float(1e6).unwrap(), "1000000");
        assert_eq!(go_json_float(1e20).unwrap(), "100000000000000000000");
        assert_eq!(go_json_float(1e21).unwrap(), "1e+21");
        assert_eq!(go_json_float(1.5e300).unwrap(), "1.5e+300");
        assert_eq!(go_json_float(0.000001).unwrap(), "0.000001");
        assert_eq!(go_json_float(1e-7).unwrap(), "1e-7");
        assert_eq!(go_json_float(-2.5e-10).unwrap(), "-2.5e-10");
        assert_eq!(go_json_float(0.1).unwrap(), "0.1");
        assert!(go_json_float(f64::NAN).is_none());
    }

    #[test]
    fn marshal_sorts_keys_and_escapes_html() {
        let v = map(&[
            (
                "b",
                Value::List(vec![
                    Value::Int(1),
                    Value::Float(2.5),
                    Value::Null,
                    Value::Bool(true),
                ]),
            ),
            ("a", Value::String("<a href=\"x\">&</a>".into())),
            ("c", map(&[])),
            ("d", Value::List(vec![])),
        ]);
        assert_eq!(
            to_json(&v),
            r#"{"a":"\u003ca href=\"x\"\u003e\u0026\u003c/a\u003e","b":[1,2.5,null,true],"c":{},"d":[]}"#
        );
        assert_eq!(to_raw_json(&map(&[("a", "<&>".into())])), r#"{"a":"<&>"}"#);
    }

    #[test]
    fn control_characters_are_escaped_like_go() {
        let v = Value::String("a\nb\tc\u{1}\u{8}\u{c}\r\\\u{2028}é".into());
        assert_eq!(to_json(&v), r#""a\nb\tc\u0001\b\f\r\\\u2028é""#);
    }

    #[test]
    fn pretty_json_indents_two_spaces() {
        let v = map(&[
            ("a", Value::Float(1.0)),
            ("b", Value::List(vec!["x".into(), map(&[])])),
            ("c", map(&[])),
        ]);
        assert_eq!(
            to_pretty_json(&v),
            "{\n  \"a\": 1,\n  \"b\": [\n    \"x\",\n    {}\n  ],\n  \"c\": {}\n}"
        );
        assert_eq!(to_pretty_json(&Value::List(vec![])), "[]");
    }

    #[test]
    fn non_finite_floats_print_nothing() {
        let v = map(&[("a", Value::Float(f64::INFINITY))]);
        assert_eq!(to_json(&v), "");
        assert_eq!(try_to_json(&v), Err(Error::JsonNotFinite));
        assert_eq!(to_pretty_json(&v), "");
    }

    #[test]
    fn parse_makes_every_number_a_float() {
        let v =
            parse_json(r#"{"a": 1, "b": [2.5, -3e2, 12345678901234567890], "a": 7, "c": null}"#)
                .unwrap();
        assert_eq!(
            v,
            map(&[
                ("a", Value::Float(7.0)),
                (
                    "b",
                    Value::List(vec![
                        Value::Float(2.5),
                        Value::Float(-300.0),
                        Value::Float(12345678901234567890.0)
                    ])
                ),
                ("c", Value::Null),
            ])
        );
    }

    #[test]
    fn parse_errors_are_typed() {
        assert_eq!(
            parse_json("{\"a\": }"),
            Err(Error::JsonSyntax { line: 1, column: 7 })
        );
        assert!(matches!(parse_json("[1] x"), Err(Error::JsonSyntax { .. })));
        assert!(matches!(
            parse_json(r#""\q""#),
            Err(Error::JsonSyntax { .. })
        ));
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(
            parse_json(&deep),
            Err(Error::JsonTooDeep { limit: MAX_DEPTH })
        );
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse_json(&ok).is_ok());
        let huge = "[".repeat(1_000_000);
        assert!(parse_json(&huge).is_err());
    }
}
