//! How go-yaml v2 (the YAML library under `sigs.k8s.io/yaml`) resolves a
//! plain scalar to a type, and the bits of Go's `strconv` it leans on.
//!
//! Both directions need this: parsing decides what `yes` or `0x1F` mean,
//! and printing quotes every string that would otherwise read back as
//! something else.

/// What a plain scalar means to go-yaml v2.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved {
    /// `~`, `null`, `Null`, `NULL` or nothing.
    Null,
    /// A YAML 1.1 boolean (`y`, `yes`, `on`, `true` and their case forms).
    Bool(bool),
    /// An integer that fits `int64`.
    Int(i64),
    /// An integer that fits only `uint64`.
    Uint(u64),
    /// An integer too large for 64 bits (a Go `big.Int`), as the nearest
    /// float (what JSON turns it into). Only prefixed forms (`0x...`) get
    /// here: long decimal digits match the float pattern first.
    BigInt(f64),
    /// A float, possibly infinite or NaN (`.inf`, `.nan`).
    Float(f64),
    /// A timestamp, which go-yaml v2 hands back as the original string.
    Timestamp,
    /// `<<`, the merge key.
    Merge,
    /// Anything else: a string.
    Str,
}

/// go-yaml v2's `resolve("", text)` for an untagged plain scalar.
pub(crate) fn resolve_plain(text: &str) -> Resolved {
    // Most scalars are words, which are not numbers; the fixed spellings
    // that start with a letter start with one of `yYnNtTfFoO` and have at
    // most five letters (`false`).
    if let Some(&first) = text.as_bytes().first()
        && first.is_ascii_alphabetic()
        && (text.len() > 5
            || !matches!(
                first,
                b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O'
            ))
    {
        return Resolved::Str;
    }
    if let Some(fixed) = resolve_fixed(text) {
        return fixed;
    }
    match text.as_bytes().first() {
        Some(b'.') => match parse_go_float(text) {
            Some(f) => Resolved::Float(f),
            None => Resolved::Str,
        },
        Some(b'0'..=b'9' | b'+' | b'-') => resolve_number(text),
        _ => Resolved::Str,
    }
}

/// What a plain (unquoted) scalar becomes once [`super::parse_yaml`] has
/// read it, for callers that scan simple YAML themselves and must agree
/// with the full parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainScalar {
    /// A string: text that resolves to nothing else, or a timestamp.
    String,
    /// A number, a boolean or null (as a key: turned into a string key).
    Other,
    /// Something `parse_yaml` refuses in that position, or a merge key.
    Refused,
}

/// How `parse_yaml` reads a plain scalar in value position: numbers,
/// booleans and nulls are [`PlainScalar::Other`]; infinite or NaN floats
/// (`.inf`, `1e400`, huge `0x...` integers) are [`PlainScalar::Refused`],
/// as JSON cannot hold them; `<<` and everything else is a string.
pub fn plain_value_kind(text: &str) -> PlainScalar {
    match resolve_plain(text) {
        Resolved::Null | Resolved::Bool(_) | Resolved::Int(_) | Resolved::Uint(_) => {
            PlainScalar::Other
        }
        Resolved::BigInt(f) | Resolved::Float(f) if f.is_finite() => PlainScalar::Other,
        Resolved::BigInt(_) | Resolved::Float(_) => PlainScalar::Refused,
        Resolved::Timestamp | Resolved::Str | Resolved::Merge => PlainScalar::String,
    }
}

/// How `parse_yaml` reads a plain scalar in key position: strings and
/// timestamps are [`PlainScalar::String`]; numbers and booleans become
/// string keys ([`PlainScalar::Other`]); null and integers past `int64`
/// are refused, and `<<` (a merge, not an ordinary key) is reported as
/// [`PlainScalar::Refused`] too.
pub fn plain_key_kind(text: &str) -> PlainScalar {
    match resolve_plain(text) {
        Resolved::Timestamp | Resolved::Str => PlainScalar::String,
        Resolved::Bool(_) | Resolved::Int(_) | Resolved::Float(_) => PlainScalar::Other,
        Resolved::Null | Resolved::Uint(_) | Resolved::BigInt(_) | Resolved::Merge => {
            PlainScalar::Refused
        }
    }
}

/// The fixed spellings go-yaml v2 knows (its `resolveMap`).
fn resolve_fixed(text: &str) -> Option<Resolved> {
    let resolved = match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Resolved::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Resolved::Bool(false)
        }
        "" | "~" | "null" | "Null" | "NULL" => Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Resolved::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Resolved::Float(f64::NEG_INFINITY),
        "<<" => Resolved::Merge,
        _ => return None,
    };
    Some(resolved)
}

/// The digit-or-sign branch of go-yaml v2's `resolve`: timestamp, then
/// `int64`, `uint64`, float, `0b` binary, and finally a big integer.
fn resolve_number(text: &str) -> Resolved {
    if is_timestamp(text) {
        return Resolved::Timestamp;
    }
    let plain: String = text.chars().filter(|&c| c != '_').collect();
    let int_err = match parse_go_int(&plain, 0) {
        Ok(i) => return Resolved::Int(i),
        Err(e) => e,
    };
    let uint_err = match parse_go_uint(&plain, 0) {
        Ok(u) => return Resolved::Uint(u),
        Err(e) => e,
    };
    if is_yaml_style_float(&plain)
        && let Some(f) = parse_go_float(&plain)
    {
        return Resolved::Float(f);
    }
    if let Some(bits) = plain.strip_prefix("0b") {
        if let Ok(i) = parse_go_int(bits, 2) {
            return Resolved::Int(i);
        }
        if let Ok(u) = parse_go_uint(bits, 2) {
            return Resolved::Uint(u);
        }
    } else if let Some(bits) = plain.strip_prefix("-0b")
        && let Ok(i) = parse_go_int(&format!("-{bits}"), 2)
    {
        return Resolved::Int(i);
    }
    // go-yaml checks the error of its last conversion, the uint64 one.
    let _ = int_err;
    if uint_err == IntError::Range
        && let Some(f) = big_int_value(&plain)
    {
        return Resolved::BigInt(f);
    }
    Resolved::Str
}

/// The value of an unsigned integer `big.Int.SetString(text, 0)` accepts
/// (`ParseUint` already refused a sign), as the nearest float.
fn big_int_value(text: &str) -> Option<f64> {
    let (base, digits) = split_base_prefix(text);
    if digits.is_empty() {
        return None;
    }
    digits.chars().try_fold(0.0_f64, |acc, c| {
        Some(acc * f64::from(base) + f64::from(c.to_digit(base)?))
    })
}

/// go-yaml v2's `yamlStyleFloat`:
/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_style_float(text: &str) -> bool {
    let s = text.strip_prefix(['+', '-']).unwrap_or(text).as_bytes();
    let digits =
        |s: &[u8], from: usize| s[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let mut i;
    if s.first() == Some(&b'.') {
        let n = digits(s, 1);
        if n == 0 {
            return false;
        }
        i = 1 + n;
    } else {
        let n = digits(s, 0);
        if n == 0 {
            return false;
        }
        i = n;
        if s.get(i) == Some(&b'.') {
            i += 1 + digits(s, i + 1);
        }
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let n = digits(s, i);
        if n == 0 {
            return false;
        }
        i += n;
    }
    i == s.len()
}

/// Go's `strconv.ParseFloat(text, 64)` for the decimal forms YAML can
/// reach; `None` where Go reports an error, including overflow to ±Inf.
pub(crate) fn parse_go_float(text: &str) -> Option<f64> {
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    let decimal = body
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if !decimal || body.is_empty() {
        return None;
    }
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Why Go's `strconv.ParseInt`/`ParseUint` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntError {
    /// Not a number in that base (`strconv.ErrSyntax`).
    Syntax,
    /// A number, but too large (`strconv.ErrRange`).
    Range,
}

/// Go's `strconv.ParseUint(text, base, 64)`; base 0 reads the `0x`, `0o`,
/// `0b` and leading-`0` octal prefixes. Underscores are not accepted (the
/// callers here strip or reject them first).
pub(crate) fn parse_go_uint(text: &str, base: u32) -> Result<u64, IntError> {
    if text.is_empty() {
        return Err(IntError::Syntax);
    }
    let (base, digits) = if base == 0 {
        split_base_prefix(text)
    } else {
        (base, text)
    };
    let mut value: u64 = 0;
    let mut overflow = false;
    for c in digits.chars() {
        let digit = c.to_digit(base).ok_or(IntError::Syntax)?;
        match value
            .checked_mul(u64::from(base))
            .and_then(|v| v.checked_add(u64::from(digit)))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
    }
    if overflow {
        Err(IntError::Range)
    } else {
        Ok(value)
    }
}

/// Splits Go's base prefix off an unsigned number for base 0.
fn split_base_prefix(text: &str) -> (u32, &str) {
    let bytes = text.as_bytes();
    if bytes[0] != b'0' {
        return (10, text);
    }
    if bytes.len() >= 3 {
        match bytes[1].to_ascii_lowercase() {
            b'b' => return (2, &text[2..]),
            b'o' => return (8, &text[2..]),
            b'x' => return (16, &text[2..]),
            _ => {}
        }
    }
    (8, &text[1..])
}

/// Go's `strconv.ParseInt(text, base, 64)`.
pub(crate) fn parse_go_int(text: &str, base: u32) -> Result<i64, IntError> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'+') => (false, &text[1..]),
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    let magnitude = parse_go_uint(digits, base)?;
    if negative {
        if magnitude > i64::MAX as u64 + 1 {
            return Err(IntError::Range);
        }
        Ok((magnitude as i64).wrapping_neg())
    } else {
        i64::try_from(magnitude).map_err(|_| IntError::Range)
    }
}

/// go-yaml v2's `parseTimestamp`: `YYYY-M-D`, optionally followed by
/// `T`/`t` and a time with a `Z` or `±hh:mm` zone, or by a space and a
/// time without a zone, as Go's `time.Parse` accepts them.
pub(crate) fn is_timestamp(text: &str) -> bool {
    let s = text.as_bytes();
    if s.len() < 5 || !s[..4].iter().all(u8::is_ascii_digit) || s[4] != b'-' {
        return false;
    }
    let year: u32 = text[..4].parse().unwrap_or(0);
    let mut i = 5;
    let Some(month) = take_go_num(s, &mut i) else {
        return false;
    };
    if s.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    let Some(day) = take_go_num(s, &mut i) else {
        return false;
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(month, year) {
        return false;
    }
    match s.get(i) {
        None => true,
        Some(b'T' | b't') => matches_time(s, i + 1, true),
        Some(b' ') => matches_time(s, i + 1, false),
        Some(_) => false,
    }
}

/// `15:4:5.999999999` then, when `zoned`, `Z07:00`, to the end of `s`.
fn matches_time(s: &[u8], mut i: usize, zoned: bool) -> bool {
    let Some(hour) = take_go_num(s, &mut i) else {
        return false;
    };
    if s.get(i) != Some(&b':') {
        return false;
    }
    i += 1;
    let Some(minute) = take_go_num(s, &mut i) else {
        return false;
    };
    if s.get(i) != Some(&b':') {
        return false;
    }
    i += 1;
    let Some(second) = take_go_num(s, &mut i) else {
        return false;
    };
    if hour > 23 || minute > 59 || second > 59 {
        return false;
    }
    if matches!(s.get(i), Some(b'.' | b',')) && s.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while s.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if !zoned {
        return i == s.len();
    }
    match s.get(i) {
        Some(b'Z') => i + 1 == s.len(),
        Some(b'+' | b'-') => {
            let zone = &s[i + 1..];
            zone.len() == 5
                && zone[0].is_ascii_digit()
                && zone[1].is_ascii_digit()
                && zone[2] == b':'
                && zone[3].is_ascii_digit()
                && zone[4].is_ascii_digit()
                && (zone[0] - b'0') * 10 + (zone[1] - b'0') <= 24
                && (zone[3] - b'0') * 10 + (zone[4] - b'0') < 60
        }
        _ => false,
    }
}

/// Go's `getnum(value, false)`: one or two digits.
fn take_go_num(s: &[u8], i: &mut usize) -> Option<u32> {
    let first = *s.get(*i).filter(|b| b.is_ascii_digit())?;
    *i += 1;
    let mut n = u32::from(first - b'0');
    if let Some(&second) = s.get(*i).filter(|b| b.is_ascii_digit()) {
        *i += 1;
        n = n * 10 + u32::from(second - b'0');
    }
    Some(n)
}

fn days_in_month(month: u32, year: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// go-yaml v2's `isBase60Float`, used only when printing: strings such as
/// `1:20` are quoted for old YAML 1.1 readers.
pub(crate) fn is_base60_float(text: &str) -> bool {
    let s = text.strip_prefix(['+', '-']).unwrap_or(text).as_bytes();
    if !s.first().is_some_and(u8::is_ascii_digit) || !text.contains(':') {
        return false;
    }
    let mut i = s
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'_')
        .count();
    let mut groups = 0;
    while s.get(i) == Some(&b':') {
        i += 1;
        let n = s[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        let ok = match n {
            1 => true,
            2 => s[i] <= b'5',
            _ => false,
        };
        if !ok {
            return false;
        }
        i += n;
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if s.get(i) == Some(&b'.') {
        i += 1;
        i += s[i..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'_')
            .count();
    }
    i == s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_kinds_agree_with_the_parser() {
        let texts = [
            "ConfigMap",
            "2024-01-02",
            "<<",
            "5",
            "-1.5",
            "yes",
            "Off",
            "~",
            "null",
            ".inf",
            "-.Inf",
            ".nan",
            "1e400",
            "0x1F",
            "18446744073709551615",
            "0xFFFFFFFFFFFFFFFFFF",
            "1:30",
            "v1",
            "1.0.0",
        ];
        for text in texts {
            let as_value = match super::super::parse_yaml(&format!("k: {text}\n")) {
                Ok(crate::values::Value::Map(m)) => match m.get("k") {
                    Some(crate::values::Value::String(s)) if s == text => PlainScalar::String,
                    Some(_) => PlainScalar::Other,
                    None => PlainScalar::Refused,
                },
                _ => PlainScalar::Refused,
            };
            assert_eq!(plain_value_kind(text), as_value, "value {text}");
            let as_key = super::super::parse_yaml(&format!("{text}: v\n"));
            match plain_key_kind(text) {
                PlainScalar::Refused => assert!(as_key.is_err(), "key {text}"),
                PlainScalar::Other => assert!(as_key.is_ok(), "key {text}"),
                PlainScalar::String => assert!(
                    matches!(as_key, Ok(crate::values::Value::Map(m)) if m.contains_key(text)),
                    "key {text}"
                ),
            }
        }
    }

    #[test]
    fn yaml_1_1_booleans_and_nulls() {
        for t in [
            "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE",
        ] {
            assert_eq!(resolve_plain(t), Resolved::Bool(true), "{t}");
        }
        for f in [
            "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE",
        ] {
            assert_eq!(resolve_plain(f), Resolved::Bool(false), "{f}");
        }
        for s in ["yEs", "tRue", "oN", "nO", "ye"] {
            assert_eq!(resolve_plain(s), Resolved::Str, "{s}");
        }
        for n in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(resolve_plain(n), Resolved::Null, "{n}");
        }
        assert_eq!(resolve_plain("nULL"), Resolved::Str);
    }

    #[test]
    fn integers_use_go_base_prefixes() {
        assert_eq!(resolve_plain("3"), Resolved::Int(3));
        assert_eq!(resolve_plain("-3"), Resolved::Int(-3));
        assert_eq!(resolve_plain("+3"), Resolved::Int(3));
        assert_eq!(resolve_plain("0x1F"), Resolved::Int(31));
        assert_eq!(resolve_plain("0o17"), Resolved::Int(15));
        assert_eq!(resolve_plain("017"), Resolved::Int(15));
        assert_eq!(resolve_plain("0b101"), Resolved::Int(5));
        assert_eq!(resolve_plain("-0b101"), Resolved::Int(-5));
        assert_eq!(resolve_plain("1_000"), Resolved::Int(1000));
        assert_eq!(resolve_plain("0"), Resolved::Int(0));
        // Not octal, so it falls through to the float pattern.
        assert_eq!(resolve_plain("08"), Resolved::Float(8.0));
        assert_eq!(
            resolve_plain("18446744073709551615"),
            Resolved::Uint(u64::MAX)
        );
        // Long decimal integers match the float pattern before big.Int.
        assert_eq!(
            resolve_plain("123456789012345678901234567890"),
            Resolved::Float(1.2345678901234568e29)
        );
        assert_eq!(
            resolve_plain("0x10000000000000000"),
            Resolved::BigInt(18446744073709551616.0)
        );
        assert_eq!(
            resolve_plain("-123456789012345678901234567890"),
            Resolved::Float(-1.2345678901234568e29)
        );
        assert_eq!(resolve_plain("0x"), Resolved::Str);
        assert_eq!(resolve_plain("-"), Resolved::Str);
        assert_eq!(resolve_plain("1.2.3"), Resolved::Str);
    }

    #[test]
    fn floats_follow_the_yaml_style_pattern() {
        assert_eq!(resolve_plain("1.5"), Resolved::Float(1.5));
        assert_eq!(resolve_plain("1."), Resolved::Float(1.0));
        assert_eq!(resolve_plain(".5"), Resolved::Float(0.5));
        assert_eq!(resolve_plain("1e3"), Resolved::Float(1000.0));
        assert_eq!(resolve_plain("-1.5E-2"), Resolved::Float(-0.015));
        assert_eq!(resolve_plain("1e400"), Resolved::Str);
        assert_eq!(resolve_plain("."), Resolved::Str);
        assert_eq!(resolve_plain("1e"), Resolved::Str);
        assert_eq!(resolve_plain("inf"), Resolved::Str);
        assert_eq!(resolve_plain("1_0.5"), Resolved::Float(10.5));
        assert!(matches!(resolve_plain(".nan"), Resolved::Float(f) if f.is_nan()));
        assert_eq!(resolve_plain("-.inf"), Resolved::Float(f64::NEG_INFINITY));
    }

    #[test]
    fn timestamps_are_recognised_like_time_parse() {
        for t in [
            "2001-12-14",
            "2001-1-2",
            "2001-12-14T21:59:43.10Z",
            "2001-12-14t21:59:43-05:00",
            "2001-12-14 21:59:43.10",
            "2024-02-29",
        ] {
            assert!(is_timestamp(t), "{t}");
            assert_eq!(resolve_plain(t), Resolved::Timestamp);
        }
        for t in [
            "2001-13-14",
            "2023-02-29",
            "2001-12-14 21:59:43 Z",
            "201-12-14",
            "2001-12-144",
        ] {
            assert!(!is_timestamp(t), "{t}");
        }
    }

    #[test]
    fn base60_floats_are_spotted() {
        assert!(is_base60_float("1:20"));
        assert!(is_base60_float("-190:20:30.15"));
        assert!(!is_base60_float("1:60"));
        assert!(!is_base60_float("a:1"));
        assert!(!is_base60_float("1"));
    }

    #[test]
    fn go_int_parsing_reports_range_and_syntax() {
        assert_eq!(parse_go_int("9223372036854775807", 10), Ok(i64::MAX));
        assert_eq!(parse_go_int("-9223372036854775808", 10), Ok(i64::MIN));
        assert_eq!(
            parse_go_int("9223372036854775808", 10),
            Err(IntError::Range)
        );
        assert_eq!(parse_go_int("12a", 10), Err(IntError::Syntax));
        assert_eq!(parse_go_int("", 10), Err(IntError::Syntax));
        assert_eq!(parse_go_uint("-1", 0), Err(IntError::Syntax));
    }
}
