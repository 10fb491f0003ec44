//! Hiding secret values: a [`Redactor`] knows the secrets in play and
//! replaces each with [`REDACTED`] wherever it appears in text (log lines,
//! diffs, history, command output) or in the strings of a JSON value.
//!
//! A secret is looked for in every form the host itself may write it in:
//!
//! - as it is;
//! - base64-encoded (standard alphabet, padded), as a Secret's `data`
//!   holds it;
//! - JSON-escaped, as it sits inside a JSON or YAML double-quoted string
//!   when it holds a quote, a backslash or a control character: as
//!   `serde_json` writes it, and as Go's `encoding/json` (Helm's `toJson`)
//!   does, which also escapes `<`, `>`, `&`, U+2028 and U+2029;
//! - in a YAML single-quoted string, each `'` doubled;
//! - line by line when it spans lines: a PEM in a YAML block scalar is
//!   indented, so only its lines appear whole.
//!
//! Other encodings (URL-encoding, base64 at another alignment or without
//! padding, a secret cut across two log lines) are not found: callers keep
//! secrets out of such places.

use std::borrow::Cow;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use zeroize::Zeroizing;

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// The shortest secret looked for inside a longer text, in bytes.
///
/// A shorter one is kept but replaced only where a whole text or a whole
/// JSON string equals it: looking for `no` or `42` inside text would cut
/// every occurrence of those common strings out of the output, leaving
/// logs and diffs unreadable while protecting a value that guessing finds
/// at once anyway. Generated passwords are never that short (at least 8
/// characters); a short one can only come from an existing Secret.
pub const MIN_SUBSTRING_BYTES: usize = 4;

/// A line of a multi-line secret shorter than this (trimmed, in bytes) is
/// not looked for on its own: short lines of a configuration file
/// (`}` or `debug: true`) are no secret and common elsewhere.
const MIN_LINE_BYTES: usize = 16;

/// The secrets to hide and the replacing of them.
///
/// Adding is cheap; [`Redactor::redact`] scans its text once, checking the
/// secrets at each position that starts like one of them, so its cost grows
/// with the text times the secrets starting there. Overlapping or
/// adjacent occurrences become one [`REDACTED`], so no part of either is
/// left.
///
/// The secrets are wiped from memory when the redactor drops (best
/// effort: not the texts it was given or returned), and `Debug` shows only
/// how many forms it holds.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Every form of every secret, once, longest first.
    forms: Vec<Zeroizing<String>>,
    /// The first bytes of the forms looked for inside texts (a bit per
    /// byte value), to skip positions at once.
    first_bytes: [u64; 4],
}

impl Redactor {
    /// A redactor that hides nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Hides `secret` from now on, in its forms (see the module doc). An
    /// empty secret is ignored.
    pub fn add(&mut self, secret: &str) {
        self.add_bytes(secret.as_bytes());
    }

    /// Hides a secret given as bytes, as a Secret's data holds it: its
    /// base64 form always, and the forms of its text when it is UTF-8. An
    /// empty secret is ignored.
    pub fn add_bytes(&mut self, secret: &[u8]) {
        if secret.is_empty() {
            return;
        }
        let base64 = Zeroizing::new(STANDARD.encode(secret));
        self.insert(&base64);
        let Ok(text) = std::str::from_utf8(secret) else {
            return;
        };
        self.insert(text);
        if let Ok(quoted) = serde_json::to_string(text) {
            let quoted = Zeroizing::new(quoted);
            if let Some(inner) = quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
                self.insert(inner);
                self.insert(&go_json_escaped(inner));
            }
        }
        if text.contains('\'') && !text.contains('\n') {
            let mut single = Zeroizing::new(String::with_capacity(text.len() * 2));
            for c in text.chars() {
                single.push(c);
                if c == '\'' {
                    single.push('\'');
                }
            }
            self.insert(&single);
        }
        if text.contains('\n') {
            for line in text.lines().map(str::trim) {
                if line.len() >= MIN_LINE_BYTES && !line.starts_with("-----") {
                    self.insert(line);
                }
            }
        }
    }

    /// How many forms of secrets it looks for.
    pub fn len(&self) -> usize {
        self.forms.len()
    }

    /// True when it hides nothing.
    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`]: borrowed when it
    /// holds none. A text that equals a secret shorter than
    /// [`MIN_SUBSTRING_BYTES`] is replaced whole; such a secret is not
    /// looked for inside longer texts.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.forms.iter().any(|form| form.as_str() == text) {
            return Cow::Owned(REDACTED.to_owned());
        }
        let bytes = text.as_bytes();
        let mut out = String::new();
        let mut copied = 0;
        // The occurrence being widened: overlapping and adjacent ones join.
        let mut run: Option<(usize, usize)> = None;
        for (at, &byte) in bytes.iter().enumerate() {
            if let Some((start, end)) = run
                && at > end
            {
                if !push_redacted(&mut out, text, copied, start) {
                    return Cow::Owned(REDACTED.to_owned());
                }
                copied = end;
                run = None;
            }
            if !self.may_start(byte) {
                continue;
            }
            let rest = &bytes[at..];
            let Some(found) = self
                .forms
                .iter()
                .take_while(|form| form.len() >= MIN_SUBSTRING_BYTES)
                .find(|form| rest.starts_with(form.as_bytes()))
            else {
                continue;
            };
            let found_end = at + found.len();
            run = match run {
                Some((start, end)) => Some((start, end.max(found_end))),
                None => Some((at, found_end)),
            };
        }
        if let Some((start, end)) = run {
            if !push_redacted(&mut out, text, copied, start) {
                return Cow::Owned(REDACTED.to_owned());
            }
            copied = end;
        }
        if copied == 0 && out.is_empty() {
            return Cow::Borrowed(text);
        }
        match text.get(copied..) {
            Some(tail) => out.push_str(tail),
            None => return Cow::Owned(REDACTED.to_owned()),
        }
        Cow::Owned(out)
    }

    /// Redacts, in place, every string of `value` and every key of its
    /// maps, at any depth ([`Redactor::redact`] on each; a string equal to
    /// a short secret is replaced whole). Keys that become equal merge, the
    /// later value winning: the result is for showing, not for using.
    ///
    /// Walks the value with a list of its own, not by recursion, so a
    /// deeply nested value cannot exhaust the stack.
    pub fn redact_json(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        let mut pending = vec![value];
        while let Some(value) = pending.pop() {
            match value {
                Value::String(text) => {
                    if let Cow::Owned(redacted) = self.redact(text) {
                        *text = redacted;
                    }
                }
                Value::Array(items) => pending.extend(items.iter_mut()),
                Value::Object(map) => {
                    if map
                        .keys()
                        .any(|key| matches!(self.redact(key), Cow::Owned(_)))
                    {
                        *map = std::mem::take(map)
                            .into_iter()
                            .map(|(key, value)| (self.redact(&key).into_owned(), value))
                            .collect();
                    }
                    pending.extend(map.values_mut());
                }
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
            }
        }
    }

    /// Adds one form, keeping the forms distinct and longest first.
    fn insert(&mut self, form: &str) {
        if form.is_empty() || self.forms.iter().any(|f| f.as_str() == form) {
            return;
        }
        let at = self.forms.partition_point(|f| f.len() >= form.len());
        self.forms.insert(at, Zeroizing::new(form.to_owned()));
        if form.len() >= MIN_SUBSTRING_BYTES
            && let Some(&first) = form.as_bytes().first()
        {
            self.first_bytes[usize::from(first >> 6)] |= 1 << (first & 63);
        }
    }

    /// Whether a form looked for inside texts starts with `byte`.
    fn may_start(&self, byte: u8) -> bool {
        self.first_bytes[usize::from(byte >> 6)] & (1 << (byte & 63)) != 0
    }
}

/// A string escaped by `serde_json` (without its quotes) as Go's
/// `encoding/json` writes it: `<`, `>`, `&`, U+2028 and U+2029 as `\u`
/// escapes too.
fn go_json_escaped(escaped: &str) -> Zeroizing<String> {
    let mut out = Zeroizing::new(String::with_capacity(escaped.len() * 6));
    for c in escaped.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Appends `text[copied..start]` and [`REDACTED`] to `out`; false if those
/// are not character boundaries (they always are: a form is whole UTF-8,
/// so it starts and ends on one), in which case the caller hides the whole
/// text rather than panic.
fn push_redacted(out: &mut String, text: &str, copied: usize, start: usize) -> bool {
    match text.get(copied..start) {
        Some(before) => {
            out.push_str(before);
            out.push_str(REDACTED);
            true
        }
        None => false,
    }
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("forms", &self.forms.len())
            .field("secrets", &format_args!("{REDACTED}"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use serde_json::json;

    use super::*;
    use crate::model::SecretShape;
    use crate::secrets::generate_at;

    fn redactor(secrets: &[&str]) -> Redactor {
        let mut r = Redactor::new();
        for s in secrets {
            r.add(s);
        }
        r
    }

    #[test]
    fn replaces_every_occurrence() {
        let r = redactor(&["hunter22"]);
        assert_eq!(
            r.redact("password=hunter22 again:hunter22hunter22!"),
            "password=<redacted> again:<redacted>!"
        );
        assert_eq!(r.redact("hunter22"), "<redacted>");
    }

    #[test]
    fn borrows_text_without_secrets() {
        let r = redactor(&["hunter22"]);
        assert!(matches!(
            r.redact("nothing here: hunter2"),
            Cow::Borrowed(_)
        ));
        assert!(matches!(r.redact(""), Cow::Borrowed(_)));
        assert!(matches!(
            Redactor::new().redact("hunter22"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn replaces_the_base64_form() {
        let r = redactor(&["s3cr3t-pa55"]);
        let encoded = STANDARD.encode("s3cr3t-pa55");
        assert_eq!(encoded, "czNjcjN0LXBhNTU=");
        let manifest = format!("data:\n  password: {encoded}\n");
        assert_eq!(r.redact(&manifest), "data:\n  password: <redacted>\n");
    }

    #[test]
    fn binary_secrets_are_hidden_in_base64() {
        let mut r = Redactor::new();
        r.add_bytes(&[0xff, 0x00, 0x10, 0x80]);
        r.add_bytes(&[]);
        assert_eq!(r.len(), 1);
        assert_eq!(r.redact("key: /wAQgA=="), "key: <redacted>");
    }

    #[test]
    fn replaces_the_json_escaped_form() {
        let secret = "pa\"ss\\wo\nrd";
        let r = redactor(&[secret]);
        let json = serde_json::to_string(&json!({"password": secret})).unwrap();
        assert_eq!(r.redact(&json), r#"{"password":"<redacted>"}"#);
    }

    #[test]
    fn replaces_the_go_json_and_yaml_single_quoted_forms() {
        let secret = "a<b>&'c\"d\u{2028}";
        let r = redactor(&[secret]);
        assert_eq!(
            r.redact(r#"{"p":"a\u003cb\u003e\u0026'c\"d\u2028"}"#),
            r#"{"p":"<redacted>"}"#
        );
        assert_eq!(r.redact("p: 'a<b>&''c\"d\u{2028}'"), "p: '<redacted>'");
    }

    #[test]
    fn multi_line_secrets_are_found_line_by_line() {
        let now = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
        let shape = SecretShape::Certificate {
            common_name: "a".into(),
            dns_names: vec!["a.example".into()],
            validity_days: 1,
        };
        let secret = generate_at(&shape, &mut rand_core::OsRng, now).unwrap();
        let key = secret["tls.key"].as_str().unwrap();
        let r = redactor(&[key]);
        // As YAML writes it in a block scalar: indented.
        let indented: String = key.lines().map(|l| format!("    {l}\n")).collect();
        let yaml = format!("stringData:\n  tls.key: |\n{indented}");
        let redacted = r.redact(&yaml);
        for line in key.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!redacted.contains(line), "{redacted}");
        }
        // The armor lines are no secret and stay.
        assert!(redacted.contains("-----BEGIN PRIVATE KEY-----"));
        // And whole, or base64-encoded, it goes in one piece.
        assert_eq!(r.redact(key), "<redacted>");
        assert_eq!(r.redact(&STANDARD.encode(key)), "<redacted>");
    }

    #[test]
    fn longest_first_and_overlaps_leave_nothing() {
        let r = redactor(&["pass", "password123"]);
        assert_eq!(
            r.redact("x password123 y pass z"),
            "x <redacted> y <redacted> z"
        );
        // Two secrets overlapping: one marker, no tail of either.
        let r = redactor(&["abcdef", "defghi"]);
        assert_eq!(r.redact("[abcdefghi]"), "[<redacted>]");
        assert_eq!(r.redact("[defghiabcdef]"), "[<redacted>]");
        // One inside another, and one starting inside a longer one.
        let r = redactor(&["aaaaaa", "aaaab"]);
        assert_eq!(r.redact("-aaaaaab-"), "-<redacted>-");
    }

    #[test]
    fn short_secrets_are_kept_but_only_replaced_whole() {
        let r = redactor(&["abc"]);
        // Kept: the secret and its base64 form.
        assert_eq!(r.len(), 2);
        assert_eq!(r.redact("xabcx abc"), "xabcx abc");
        assert_eq!(r.redact("abc"), "<redacted>");
        // Its base64 form "YWJj" is four bytes and is looked for.
        assert_eq!(r.redact("data: YWJj"), "data: <redacted>");
        let mut value = json!({"k": "abc", "l": ["xabcx", "abc"]});
        r.redact_json(&mut value);
        assert_eq!(
            value,
            json!({"k": "<redacted>", "l": ["xabcx", "<redacted>"]})
        );
    }

    #[test]
    fn unicode_secrets_and_texts() {
        let r = redactor(&["pässwörd"]);
        assert_eq!(r.redact("ä pässwörd ö"), "ä <redacted> ö");
        assert_eq!(r.redact("äpässwördpässwörd"), "ä<redacted>");
    }

    #[test]
    fn empty_secrets_are_ignored() {
        let r = redactor(&[""]);
        assert!(r.is_empty());
        assert_eq!(r.redact("anything"), "anything");
        let mut value = json!({"": ""});
        r.redact_json(&mut value);
        assert_eq!(value, json!({"": ""}));
    }

    #[test]
    fn redacts_json_strings_and_keys_at_any_depth() {
        let r = redactor(&["t0p-s3cret"]);
        let mut value = json!({
            "auth": {"password": "t0p-s3cret", "note": "was t0p-s3cret"},
            "list": [1, true, null, ["t0p-s3cret"], {"t0p-s3cret": "key"}],
            "encoded": STANDARD.encode("t0p-s3cret"),
        });
        r.redact_json(&mut value);
        assert_eq!(
            value,
            json!({
                "auth": {"password": "<redacted>", "note": "was <redacted>"},
                "list": [1, true, null, ["<redacted>"], {"<redacted>": "key"}],
                "encoded": "<redacted>",
            })
        );
    }

    #[test]
    fn redact_json_survives_deep_nesting() {
        let r = redactor(&["t0p-s3cret"]);
        let mut value = json!("t0p-s3cret");
        for _ in 0..1_000 {
            value = json!([value]);
        }
        r.redact_json(&mut value);
        let mut inner = &value;
        while let Value::Array(items) = inner {
            inner = &items[0];
        }
        assert_eq!(inner, &json!("<redacted>"));
    }

    #[test]
    fn debug_prints_no_secret() {
        let r = redactor(&["t0p-s3cret", "abc"]);
        for debug in [format!("{r:?}"), format!("{r:#?}")] {
            assert!(!debug.contains("t0p"), "{debug}");
            assert!(!debug.contains("abc"), "{debug}");
            assert!(!debug.contains(&STANDARD.encode("t0p-s3cret")), "{debug}");
            assert!(debug.contains("<redacted>"), "{debug}");
        }
        assert_eq!(
            format!("{r:?}"),
            "Redactor { forms: 4, secrets: <redacted> }"
        );
    }
}
