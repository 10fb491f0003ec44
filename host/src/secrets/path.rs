//! A secret value's path: parsing the contract's dot-separated form into
//! segments, writing segments back in that form, and placing a value at a
//! path in a chart's values.
//!
//! The form (contract 0.2, `secret-value.path`): segments separated by
//! dots; a segment holding a dot is written within double quotes
//! (`"a.b".c`). There is no escape: a segment cannot hold a double quote.
//! Every segment is a map key; there is no list index (`a[0]`), so a
//! secret value cannot be placed inside a list.

use serde_json::{Map, Value};

use super::{Error, excerpt};

/// The most segments a path may have.
pub const MAX_PATH_SEGMENTS: usize = 32;
/// The longest segment, in bytes (quotes not counted).
pub const MAX_SEGMENT_BYTES: usize = 253;

/// Splits a secret value's path into its segments: `auth.password` is
/// `["auth", "password"]`, `"a.b".c` is `["a.b", "c"]`.
///
/// # Errors
///
/// [`Error::EmptyPath`] for `""`; [`Error::EmptySegment`] for `a..b`,
/// `.a`, `a.` or `""`; [`Error::UnterminatedQuote`] for `"a.b`;
/// [`Error::StrayQuote`] for a quote inside an unquoted segment (`a"b`);
/// [`Error::TextAfterQuote`] for `"a"b`; [`Error::TooManySegments`] past
/// [`MAX_PATH_SEGMENTS`]; [`Error::SegmentTooLong`] past
/// [`MAX_SEGMENT_BYTES`]. Parsing is linear in the path's length and
/// stops at the first error.
pub fn parse_path(path: &str) -> Result<Vec<String>, Error> {
    if path.is_empty() {
        return Err(Error::EmptyPath);
    }
    let mut segments = Vec::new();
    let mut at = 0;
    loop {
        if segments.len() == MAX_PATH_SEGMENTS {
            return Err(Error::TooManySegments {
                path: excerpt(path),
            });
        }
        let rest = &path[at..];
        let segment = if let Some(quoted) = rest.strip_prefix('"') {
            let Some(close) = quoted.find('"') else {
                return Err(Error::UnterminatedQuote {
                    path: excerpt(path),
                });
            };
            let segment = &quoted[..close];
            // Past the opening quote, the segment and the closing quote.
            at += close + 2;
            if at < path.len() && !path[at..].starts_with('.') {
                return Err(Error::TextAfterQuote {
                    path: excerpt(path),
                    offset: at,
                });
            }
            segment
        } else {
            let end = rest.find('.').unwrap_or(rest.len());
            let segment = &rest[..end];
            if let Some(quote) = segment.find('"') {
                return Err(Error::StrayQuote {
                    path: excerpt(path),
                    offset: at + quote,
                });
            }
            at += end;
            segment
        };
        let position = segments.len() + 1;
        if segment.is_empty() {
            return Err(Error::EmptySegment {
                path: excerpt(path),
                segment: position,
            });
        }
        if segment.len() > MAX_SEGMENT_BYTES {
            return Err(Error::SegmentTooLong {
                path: excerpt(path),
                segment: position,
            });
        }
        segments.push(segment.to_owned());
        if at == path.len() {
            return Ok(segments);
        }
        // At a dot: the next segment starts after it.
        at += 1;
    }
}

/// Writes segments back as a path: joined with dots, a segment holding a
/// dot within quotes. The inverse of [`parse_path`] for what it returns.
pub fn display_path(segments: &[String]) -> String {
    let mut out = String::new();
    for (i, segment) in segments.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        if segment.contains('.') {
            out.push('"');
            out.push_str(segment);
            out.push('"');
        } else {
            out.push_str(segment);
        }
    }
    out
}

/// Places `value` at `path` in `values`, creating the maps on the way that
/// are missing. Whatever the path held before is replaced, a map included.
///
/// Takes segments as [`parse_path`] returns them and does not check them
/// again.
///
/// # Errors
///
/// [`Error::EmptyPath`] for no segments; [`Error::NotAMap`] when a value on
/// the way is not a map (a string, a number, a list, `null`...): nothing
/// is changed then but the maps created before it, which are empty.
pub fn set(values: &mut Map<String, Value>, path: &[String], value: Value) -> Result<(), Error> {
    let Some((last, parents)) = path.split_last() else {
        return Err(Error::EmptyPath);
    };
    let mut map = values;
    for (depth, segment) in parents.iter().enumerate() {
        let next = map
            .entry(segment.as_str())
            .or_insert_with(|| Value::Object(Map::new()));
        map = match next {
            Value::Object(inner) => inner,
            other => {
                return Err(Error::NotAMap {
                    path: excerpt(&display_path(path)),
                    at: excerpt(&display_path(&path[..=depth])),
                    found: kind(other),
                });
            }
        };
    }
    map.insert(last.clone(), value);
    Ok(())
}

/// What a JSON value is, for an error.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parsed(path: &str) -> Vec<String> {
        parse_path(path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn segments(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|&p| p.to_owned()).collect()
    }

    #[test]
    fn parses_plain_and_quoted_segments() {
        assert_eq!(parsed("password"), ["password"]);
        assert_eq!(parsed("auth.password"), ["auth", "password"]);
        assert_eq!(parsed(r#""a.b".c"#), ["a.b", "c"]);
        assert_eq!(parsed(r#"c."a.b""#), ["c", "a.b"]);
        assert_eq!(parsed(r#"x."a.b".y"#), ["x", "a.b", "y"]);
        assert_eq!(parsed(r#""plain""#), ["plain"]);
        assert_eq!(parsed(r#""...""#), ["..."]);
        assert_eq!(
            parsed(r#"ingress.annotations."nginx.ingress.kubernetes.io/auth-secret""#),
            [
                "ingress",
                "annotations",
                "nginx.ingress.kubernetes.io/auth-secret"
            ]
        );
        assert_eq!(parsed("ünï.cödé"), ["ünï", "cödé"]);
        assert_eq!(parsed("a b.c-d_e"), ["a b", "c-d_e"]);
    }

    #[test]
    fn rejects_empty_paths_and_segments() {
        assert!(matches!(parse_path(""), Err(Error::EmptyPath)));
        for (path, position) in [
            ("a..b", 2),
            (".a", 1),
            ("a.", 2),
            (".", 1),
            (r#""""#, 1),
            (r#"a."""#, 2),
        ] {
            match parse_path(path) {
                Err(Error::EmptySegment { segment, .. }) => assert_eq!(segment, position, "{path}"),
                other => panic!("{path}: {other:?}"),
            }
        }
        assert_eq!(
            parse_path("a..b").unwrap_err().to_string(),
            r#"secret value path "a..b" has an empty segment (segment 2)"#
        );
    }

    #[test]
    fn rejects_misplaced_quotes() {
        for path in [r#""a.b"#, r#"""#, r#"a."b"#] {
            assert!(
                matches!(parse_path(path), Err(Error::UnterminatedQuote { .. })),
                "{path}"
            );
        }
        match parse_path(r#"ab"c.d"#) {
            Err(Error::StrayQuote { offset, .. }) => assert_eq!(offset, 2),
            other => panic!("{other:?}"),
        }
        match parse_path(r#"x."a"b.c"#) {
            Err(Error::TextAfterQuote { offset, .. }) => assert_eq!(offset, 5),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse_path(r#"a"b"#).unwrap_err().to_string(),
            r#"secret value path "a\"b" has a quote inside a segment at byte 1; quote the whole segment"#
        );
    }

    #[test]
    fn bounds_segments_and_their_length() {
        let most = vec!["s"; MAX_PATH_SEGMENTS].join(".");
        assert_eq!(parsed(&most).len(), MAX_PATH_SEGMENTS);
        let too_many = vec!["seg"; MAX_PATH_SEGMENTS + 1].join(".");
        assert!(matches!(
            parse_path(&too_many),
            Err(Error::TooManySegments { .. })
        ));
        assert_eq!(
            parse_path(&too_many).unwrap_err().to_string(),
            format!(
                "secret value path \"{}...\" has more than 32 segments",
                &too_many[..100]
            )
        );

        let longest = "x".repeat(MAX_SEGMENT_BYTES);
        assert_eq!(parsed(&format!("a.{longest}")), ["a", longest.as_str()]);
        assert_eq!(parsed(&format!("\"{longest}\"")), [longest.as_str()]);
        let long = "x".repeat(MAX_SEGMENT_BYTES + 1);
        for path in [format!("a.{long}"), format!("a.\"{long}\"")] {
            match parse_path(&path) {
                Err(Error::SegmentTooLong { segment, .. }) => assert_eq!(segment, 2),
                other => panic!("{other:?}"),
            }
        }
        // A multi-byte segment counts bytes.
        let wide = "é".repeat(127);
        assert!(matches!(
            parse_path(&wide),
            Err(Error::SegmentTooLong { segment: 1, .. })
        ));
    }

    #[test]
    fn display_round_trips() {
        for path in ["a", "auth.password", r#""a.b".c"#, r#"x."y.z""#] {
            assert_eq!(display_path(&parsed(path)), path);
        }
        assert_eq!(display_path(&[]), "");
    }

    #[test]
    fn set_creates_maps_on_the_way() {
        let mut values = Map::new();
        set(&mut values, &segments(&["auth", "password"]), json!("pw")).unwrap();
        set(&mut values, &segments(&["auth", "user"]), json!("admin")).unwrap();
        set(&mut values, &segments(&["a.b", "c", "d"]), json!(1)).unwrap();
        set(&mut values, &segments(&["top"]), json!(true)).unwrap();
        assert_eq!(
            Value::Object(values),
            json!({
                "auth": {"password": "pw", "user": "admin"},
                "a.b": {"c": {"d": 1}},
                "top": true,
            })
        );
    }

    #[test]
    fn set_replaces_the_leaf_whatever_it_was() {
        let mut values = json!({"auth": {"password": "plain", "tls": {"crt": "x"}}})
            .as_object()
            .cloned()
            .unwrap();
        set(
            &mut values,
            &segments(&["auth", "password"]),
            json!("secret"),
        )
        .unwrap();
        set(&mut values, &segments(&["auth", "tls"]), json!("pem")).unwrap();
        assert_eq!(
            Value::Object(values),
            json!({"auth": {"password": "secret", "tls": "pem"}})
        );
    }

    #[test]
    fn set_refuses_to_go_through_a_value_that_is_not_a_map() {
        let original = json!({
            "s": "text", "n": 1, "l": [{"a": 1}], "z": null, "b": false,
            "m": {"deep": "text"},
        });
        for (path, at, found) in [
            (&["s", "x"][..], "s", "a string"),
            (&["n", "x"][..], "n", "a number"),
            (&["l", "0", "a"][..], "l", "a list"),
            (&["z", "x"][..], "z", "null"),
            (&["b", "x"][..], "b", "a boolean"),
            (&["m", "deep", "x"][..], "m.deep", "a string"),
        ] {
            let mut values = original.as_object().cloned().unwrap();
            let err = set(&mut values, &segments(path), json!("hunter2-xyz")).unwrap_err();
            match &err {
                Error::NotAMap {
                    at: a, found: f, ..
                } => {
                    assert_eq!((a.as_str(), *f), (at, found), "{path:?}");
                }
                other => panic!("{other:?}"),
            }
            assert!(
                !err.to_string().contains("hunter2"),
                "the value leaked: {err}"
            );
            assert_eq!(
                Value::Object(values),
                original,
                "{path:?} changed the values"
            );
        }
        let mut values = original.as_object().cloned().unwrap();
        let err = set(&mut values, &segments(&["m.x", "deep", "more"]), json!(0));
        assert!(err.is_ok());
        let err = set(
            &mut values,
            &segments(&["m.x", "deep", "more", "x"]),
            json!(0),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"cannot set secret value at "\"m.x\".deep.more.x": "\"m.x\".deep.more" holds a number, not a map"#
        );
    }

    #[test]
    fn set_needs_a_path() {
        let mut values = Map::new();
        assert!(matches!(
            set(&mut values, &[], json!(1)),
            Err(Error::EmptyPath)
        ));
        assert!(values.is_empty());
    }
}
