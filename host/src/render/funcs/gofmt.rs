//! Go's `fmt` printing as templates see it: `print` (`Sprint`), `println`
//! (`Sprintln`) and `printf` (`Sprintf`) with Go's verbs, flags, width,
//! precision, argument indexes and its in-band error strings, plus the
//! `text/template` escapers `urlquery`, `html` and `js`.

use std::borrow::Cow;

use super::FuncError;
use super::args::type_name;
use crate::values::{Value, format_go_float};

pub(super) const FUNCTIONS: &[(&str, super::Function)] = &[
    ("print", print),
    ("println", println),
    ("printf", printf),
    ("urlquery", urlquery),
    ("html", html),
    ("js", js),
];

fn print(args: &[Value]) -> Result<Value, FuncError> {
    Ok(Value::String(sprint(args)))
}

fn println(args: &[Value]) -> Result<Value, FuncError> {
    Ok(Value::String(sprintln(args)))
}

fn printf(args: &[Value]) -> Result<Value, FuncError> {
    super::args::at_least("printf", args, 1)?;
    let format = super::args::text(&args[0])?;
    let mut printer = Printer::new(format, &args[1..]);
    printer.run();
    if printer.overflow {
        let len = printer.out.len();
        return Err(FuncError::call(
            crate::render::limits::check_string("printf", len)
                .err()
                .unwrap_or_default(),
        ));
    }
    Ok(Value::String(printer.out))
}

fn urlquery(args: &[Value]) -> Result<Value, FuncError> {
    Ok(Value::String(query_escape(&eval_args(args))))
}

fn html(args: &[Value]) -> Result<Value, FuncError> {
    Ok(Value::String(html_escape(&eval_args(args))))
}

fn js(args: &[Value]) -> Result<Value, FuncError> {
    Ok(Value::String(js_escape(&eval_args(args))))
}

/// `text/template`'s `evalArgs`: one string argument as is, anything else
/// through `Sprint`.
fn eval_args(args: &[Value]) -> String {
    match args {
        [Value::String(s)] => s.clone(),
        _ => sprint(args),
    }
}

/// Go's `fmt.Sprint`: operands in `%v`, with a space between two operands
/// when neither is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    let mut previous_string = false;
    for (i, arg) in args.iter().enumerate() {
        let is_string = matches!(arg, Value::String(_));
        if i > 0 && !is_string && !previous_string {
            out.push(' ');
        }
        out.push_str(&arg.to_string());
        previous_string = is_string;
    }
    out
}

/// Go's `fmt.Sprintln`: operands in `%v`, always separated by a space, and
/// a newline at the end.
pub fn sprintln(args: &[Value]) -> String {
    let mut out = args
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join(" ");
    out.push('\n');
    out
}

/// The flags, width and precision of one directive.
#[derive(Debug, Clone, Copy, Default)]
struct Spec {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    plus_v: bool,
    sharp_v: bool,
    width: Option<usize>,
    precision: Option<usize>,
}

/// Go's `fmt.Sprintf` over template values, including Go's in-band errors:
/// `%!d(string=x)` for a verb that does not fit, `%!d(MISSING)`,
/// `%!(EXTRA type=value)`, `%!(NOVERB)`, `%!(BADWIDTH)`, `%!(BADPREC)` and
/// `%!d(BADINDEX)`.
/// Stops (at the directive that crosses it) once the output is over
/// [`crate::render::limits::MAX_STRING_BYTES`]; `printf` then fails.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut printer = Printer::new(format, args);
    printer.run();
    printer.out
}

/// The bytes of the string operands: a good first guess of the output size.
fn text_len(args: &[Value]) -> usize {
    args.iter()
        .map(|a| match a {
            Value::String(s) => s.len(),
            _ => 0,
        })
        .sum()
}

/// The state of one `Sprintf` call, as Go's `pp.doPrintf` keeps it.
struct Printer<'a> {
    format: &'a str,
    args: &'a [Value],
    /// Position in the format.
    i: usize,
    /// The next operand.
    arg_num: usize,
    /// Whether an explicit index was used (then extra operands are fine).
    reordered: bool,
    /// False after a bad explicit index in the current directive.
    good_arg_num: bool,
    out: String,
    /// Set when the output went over the string cap and printing stopped.
    overflow: bool,
}

impl<'a> Printer<'a> {
    fn new(format: &'a str, args: &'a [Value]) -> Self {
        Printer {
            format,
            args,
            i: 0,
            arg_num: 0,
            reordered: false,
            good_arg_num: true,
            out: String::with_capacity(format.len() + text_len(args)),
            overflow: false,
        }
    }

    fn byte(&self) -> Option<u8> {
        self.format.as_bytes().get(self.i).copied()
    }

    fn run(&mut self) {
        while self.i < self.format.len() {
            let start = self.i;
            let rest = &self.format[start..];
            self.i = start + rest.find('%').unwrap_or(rest.len());
            self.out.push_str(&self.format[start..self.i]);
            if self.i >= self.format.len() {
                break;
            }
            self.i += 1;
            if !self.directive() {
                break;
            }
            if self.out.len() > crate::render::limits::MAX_STRING_BYTES {
                self.overflow = true;
                return;
            }
        }
        if !self.reordered && self.arg_num < self.args.len() {
            self.extra();
        }
    }

    /// One directive after its `%`; false when the format ended early.
    fn directive(&mut self) -> bool {
        self.good_arg_num = true;
        if self.byte() == Some(b's') {
            // A bare `%s`, the usual directive: no flags, index, width or
            // precision to read.
            self.i += 1;
            self.print_verb('s', Spec::default());
            return true;
        }
        let mut spec = self.flags();
        let mut after_index = self.index();
        if self.byte() == Some(b'*') {
            self.i += 1;
            match self.star_operand() {
                Some(w) => {
                    if w < 0 {
                        spec.minus = true;
                        spec.zero = false;
                    }
                    spec.width = Some(w.unsigned_abs() as usize);
                }
                None => self.out.push_str("%!(BADWIDTH)"),
            }
            after_index = false;
        } else {
            spec.width = self.number();
            if after_index && spec.width.is_some() {
                self.good_arg_num = false;
            }
        }
        if self.i + 1 < self.format.len() && self.byte() == Some(b'.') {
            self.i += 1;
            if after_index {
                self.good_arg_num = false;
            }
            after_index = self.index();
            if self.byte() == Some(b'*') {
                self.i += 1;
                match self.star_operand() {
                    Some(p) => spec.precision = usize::try_from(p).ok(),
                    None => self.out.push_str("%!(BADPREC)"),
                }
                after_index = false;
            } else {
                spec.precision = Some(self.number().unwrap_or(0));
            }
        }
        if !after_index {
            self.index();
        }
        let Some(verb) = self.format[self.i..].chars().next() else {
            self.out.push_str("%!(NOVERB)");
            return false;
        };
        self.i += verb.len_utf8();
        self.print_verb(verb, spec);
        true
    }

    fn print_verb(&mut self, verb: char, mut spec: Spec) {
        if verb == '%' {
            self.out.push('%');
        } else if !self.good_arg_num {
            self.out.push_str(&format!("%!{verb}(BADINDEX)"));
        } else if self.arg_num >= self.args.len() {
            self.out.push_str(&format!("%!{verb}(MISSING)"));
        } else {
            if verb == 'v' {
                spec.sharp_v = spec.sharp;
                spec.sharp = false;
                spec.plus_v = spec.plus;
                spec.plus = false;
            }
            format_arg(&mut self.out, &self.args[self.arg_num], verb, &spec);
            self.arg_num += 1;
        }
    }

    fn flags(&mut self) -> Spec {
        let mut spec = Spec::default();
        while let Some(b) = self.byte() {
            match b {
                b'#' => spec.sharp = true,
                b'0' => spec.zero = !spec.minus,
                b'+' => spec.plus = true,
                b'-' => {
                    spec.minus = true;
                    spec.zero = false;
                }
                b' ' => spec.space = true,
                _ => break,
            }
            self.i += 1;
        }
        spec
    }

    /// An explicit argument index `[n]`; returns whether one was present.
    fn index(&mut self) -> bool {
        if self.byte() != Some(b'[') {
            return false;
        }
        self.reordered = true;
        let rest = &self.format[self.i + 1..];
        let Some(close) = rest.find(']') else {
            self.i += 1;
            self.good_arg_num = false;
            return false;
        };
        let inner = &rest[..close];
        self.i += close + 2;
        let parsed = (!inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()))
            .then(|| inner.parse::<usize>().ok())
            .flatten();
        match parsed {
            Some(n) if n >= 1 && n <= self.args.len() => self.arg_num = n - 1,
            _ => self.good_arg_num = false,
        }
        parsed.is_some()
    }

    /// A decimal width or precision, as Go's `parsenum`.
    fn number(&mut self) -> Option<usize> {
        let start = self.i;
        let mut n = 0usize;
        while let Some(b) = self.byte().filter(u8::is_ascii_digit) {
            if n > 1_000_000 {
                self.i = self.format.len();
                return None;
            }
            n = n * 10 + usize::from(b - b'0');
            self.i += 1;
        }
        (self.i > start).then_some(n)
    }

    /// The operand of a `*` width or precision.
    fn star_operand(&mut self) -> Option<i64> {
        int_from_arg(self.args, &mut self.arg_num)
    }

    /// `%!(EXTRA type=value, ...)` for operands no verb used.
    fn extra(&mut self) {
        self.out.push_str("%!(EXTRA ");
        for (k, arg) in self.args[self.arg_num..].iter().enumerate() {
            if k > 0 {
                self.out.push_str(", ");
            }
            match arg {
                Value::Null => self.out.push_str("<nil>"),
                other => {
                    self.out.push_str(type_name(other));
                    self.out.push('=');
                    format_arg(&mut self.out, other, 'v', &Spec::default());
                }
            }
        }
        self.out.push(')');
    }
}

/// Reads a width or precision operand for `*`.
fn int_from_arg(args: &[Value], arg_num: &mut usize) -> Option<i64> {
    let value = args.get(*arg_num)?;
    *arg_num += 1;
    match value {
        Value::Int(n) if n.unsigned_abs() <= 1_000_000 => Some(*n),
        _ => None,
    }
}

/// Formats one operand, as Go's `printArg` does for the types a template
/// value can hold.
fn format_arg(out: &mut String, value: &Value, verb: char, spec: &Spec) {
    if verb == 'T' {
        pad(out, type_name(value), spec, false);
        return;
    }
    if let Some(text) = value.version_text() {
        // A semver version is a `fmt.Stringer`: `%v` and `%s` print its
        // `String()`, as a string operand would.
        return format_arg(out, &Value::String(text.to_string()), verb, spec);
    }
    match value {
        Value::Null => match verb {
            'v' => pad(out, "<nil>", spec, false),
            _ => bad_verb(out, value, verb, spec),
        },
        Value::Bool(b) => match verb {
            't' | 'v' => pad(out, if *b { "true" } else { "false" }, spec, false),
            _ => bad_verb(out, value, verb, spec),
        },
        Value::Int(n) => format_integer(out, value, *n, verb, spec),
        Value::Float(x) => format_float(out, value, *x, verb, spec),
        Value::String(s) => format_string(out, value, s, verb, spec),
        Value::List(items) => {
            if spec.sharp_v {
                out.push_str("[]interface {}{");
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    format_element(out, item, verb, spec);
                }
                out.push('}');
                return;
            }
            out.push('[');
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push(' ');
                }
                format_element(out, item, verb, spec);
            }
            out.push(']');
        }
        Value::Map(map) => {
            if spec.sharp_v {
                out.push_str("map[string]interface {}{");
            } else {
                out.push_str("map[");
            }
            // A typed nil map has no entries (`map[]`).
            let nil = crate::values::is_nil_map(map);
            for (k, (key, item)) in map.iter().filter(|_| !nil).enumerate() {
                if k > 0 {
                    out.push_str(if spec.sharp_v { ", " } else { " " });
                }
                format_arg(out, &Value::String(key.clone()), verb, spec);
                out.push(':');
                format_element(out, item, verb, spec);
            }
            out.push(if spec.sharp_v { '}' } else { ']' });
        }
    }
}

/// An element inside a list or map: nil prints as `<nil>` whatever the verb.
fn format_element(out: &mut String, value: &Value, verb: char, spec: &Spec) {
    match value {
        Value::Null if spec.sharp_v => out.push_str("interface {}(nil)"),
        Value::Null => pad(out, "<nil>", spec, false),
        other => format_arg(out, other, verb, spec),
    }
}

/// Go's `%!verb(type=value)` for a verb that does not fit the operand.
fn bad_verb(out: &mut String, value: &Value, verb: char, spec: &Spec) {
    out.push_str("%!");
    out.push(verb);
    out.push('(');
    match value {
        Value::Null => out.push_str("<nil>"),
        other => {
            out.push_str(type_name(other));
            out.push('=');
            let mut inner = *spec;
            inner.sharp_v = false;
            inner.plus_v = false;
            format_arg(out, other, 'v', &inner);
        }
    }
    out.push(')');
}

/// Pads to the width: spaces on the left, on the right with `-`, or zeros on
/// the left with `0` where zero padding applies.
fn pad(out: &mut String, text: &str, spec: &Spec, zero_allowed: bool) {
    let Some(width) = spec.width else {
        out.push_str(text);
        return;
    };
    let len = text.chars().count();
    if len >= width {
        out.push_str(text);
        return;
    }
    let fill = width - len;
    if spec.minus {
        out.push_str(text);
        out.extend(std::iter::repeat_n(' ', fill));
    } else {
        let c = if spec.zero && zero_allowed { '0' } else { ' ' };
        out.extend(std::iter::repeat_n(c, fill));
        out.push_str(text);
    }
}

fn format_integer(out: &mut String, value: &Value, n: i64, verb: char, spec: &Spec) {
    match verb {
        'v' if spec.sharp_v => integer_digits(out, n, 10, false, spec),
        'v' | 'd' => integer_digits(out, n, 10, false, spec),
        'b' => integer_digits(out, n, 2, false, spec),
        'o' => integer_digits(out, n, 8, false, spec),
        'O' => integer_digits(out, n, 8, true, spec),
        'x' => integer_digits(out, n, 16, false, spec),
        'X' => integer_digits(out, n, 16, true, spec),
        'c' => pad(out, &rune_of(n).to_string(), spec, false),
        'q' => pad(out, &quote_rune(rune_of(n), spec.plus), spec, false),
        'U' => format_unicode(out, n, spec),
        _ => bad_verb(out, value, verb, spec),
    }
}

fn rune_of(n: i64) -> char {
    u32::try_from(n)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{FFFD}')
}

/// Go's `fmtInteger`: precision as minimum digits, zero padding as
/// precision, sign and base prefix, then padding to the width. `upper`
/// means upper-case hex digits, or for base 8 the `0o` prefix of `%O`.
fn integer_digits(out: &mut String, n: i64, base: u32, upper: bool, spec: &Spec) {
    let negative = n < 0;
    let magnitude = n.unsigned_abs();
    let mut precision = 0usize;
    if let Some(p) = spec.precision {
        precision = p;
        if p == 0 && magnitude == 0 {
            let mut s = *spec;
            s.zero = false;
            pad(out, "", &s, false);
            return;
        }
    } else if spec.zero && spec.width.is_some() {
        precision = spec.width.unwrap_or(0);
        if negative || spec.plus || spec.space {
            precision = precision.saturating_sub(1);
        }
    }
    let mut digits = match base {
        2 => format!("{magnitude:b}"),
        8 => format!("{magnitude:o}"),
        16 if upper => format!("{magnitude:X}"),
        16 => format!("{magnitude:x}"),
        _ => magnitude.to_string(),
    };
    if digits.len() < precision {
        digits = "0".repeat(precision - digits.len()) + &digits;
    }
    let mut prefix = String::new();
    if spec.sharp {
        match base {
            2 => prefix.push_str("0b"),
            8 if !digits.starts_with('0') => prefix.push('0'),
            16 => prefix.push_str(if upper { "0X" } else { "0x" }),
            _ => {}
        }
    }
    if base == 8 && upper {
        prefix.push_str("0o");
    }
    let sign = if negative {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    };
    let text = format!("{sign}{prefix}{digits}");
    let mut s = *spec;
    s.zero = false;
    pad(out, &text, &s, false);
}

fn format_unicode(out: &mut String, n: i64, spec: &Spec) {
    let mut digits = format!("{:X}", n as u64);
    let min = spec.precision.unwrap_or(4).max(4);
    if digits.len() < min {
        digits = "0".repeat(min - digits.len()) + &digits;
    }
    let mut text = format!("U+{digits}");
    if spec.sharp {
        let c = rune_of(n);
        if !c.is_control() && u32::try_from(n).is_ok_and(|u| u <= 0x10FFFF) {
            text.push_str(&format!(" '{c}'"));
        }
    }
    let mut s = *spec;
    s.zero = false;
    pad(out, &text, &s, false);
}

fn format_float(out: &mut String, value: &Value, x: f64, verb: char, spec: &Spec) {
    let (verb, default_precision) = match verb {
        'v' => ('g', None),
        'g' | 'G' | 'b' | 'x' | 'X' => (verb, None),
        'f' | 'F' | 'e' | 'E' => (verb, Some(6)),
        _ => {
            bad_verb(out, value, verb, spec);
            return;
        }
    };
    let precision = spec.precision.or(default_precision);
    let body = float_body(x.abs(), verb, precision, spec.sharp);
    let sign = if x.is_sign_negative() && !x.is_nan() {
        '-'
    } else if spec.plus {
        '+'
    } else if spec.space {
        ' '
    } else {
        '\0'
    };
    if x.is_nan() || x.is_infinite() {
        let mut text = String::new();
        if x.is_infinite() {
            text.push(if sign == '\0' { '+' } else { sign });
        } else if sign != '\0' {
            text.push(sign);
        }
        text.push_str(&body);
        let mut s = *spec;
        s.zero = false;
        pad(out, &text, &s, false);
        return;
    }
    let width = spec.width.unwrap_or(0);
    let len = body.len() + usize::from(sign != '\0');
    if sign != '\0' && spec.zero && !spec.minus && width > len {
        out.push(sign);
        out.extend(std::iter::repeat_n('0', width - len));
        out.push_str(&body);
        return;
    }
    let mut text = String::new();
    if sign != '\0' {
        text.push(sign);
    }
    text.push_str(&body);
    pad(out, &text, spec, true);
}

/// The unsigned digits of a float for `%e`, `%f`, `%g` (and their upper
/// forms), as `strconv.FormatFloat` writes them.
fn float_body(x: f64, verb: char, precision: Option<usize>, sharp: bool) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return "Inf".into();
    }
    let body = match verb {
        'f' | 'F' => format!("{:.*}", precision.unwrap_or(6), x),
        'e' | 'E' => go_exponent(&format!("{:.*e}", precision.unwrap_or(6), x)),
        _ => match precision {
            None => format_go_float(x),
            Some(p) => format_g_precision(x, p.max(1), sharp),
        },
    };
    if verb.is_ascii_uppercase() {
        body.to_uppercase()
    } else {
        body
    }
}

/// Rewrites Rust's `1.5e3` exponent as Go's `1.5e+03`.
fn go_exponent(rust: &str) -> String {
    let Some((mantissa, exp)) = rust.split_once('e') else {
        return rust.to_string();
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

/// `%.Ng`: N significant digits, exponent form when the exponent is below
/// -4 or at least N, trailing zeros removed (kept with `#`).
fn format_g_precision(x: f64, precision: usize, sharp: bool) -> String {
    let sci = format!("{:.*e}", precision - 1, x);
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !sharp {
        while digits.len() > 1 && digits.ends_with('0') {
            digits.pop();
        }
    }
    if x == 0.0 {
        digits = if sharp {
            "0".repeat(precision)
        } else {
            "0".into()
        };
    }
    let eprec = if !sharp && (precision > digits.len()) && (digits.len() as i32 > exp) {
        digits.len() as i32
    } else {
        precision as i32
    };
    if exp < -4 || exp >= eprec {
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        return go_exponent(&format!("{m}e{exp}"));
    }
    if exp < 0 {
        format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
    } else {
        let int_len = (exp + 1) as usize;
        if digits.len() <= int_len {
            format!("{digits}{}", "0".repeat(int_len - digits.len()))
        } else {
            format!("{}.{}", &digits[..int_len], &digits[int_len..])
        }
    }
}

fn format_string(out: &mut String, value: &Value, s: &str, verb: char, spec: &Spec) {
    match verb {
        'v' if spec.sharp_v => pad(out, &quote(s, false), spec, false),
        'v' | 's' => {
            let text: Cow<'_, str> = match spec.precision {
                Some(p) => Cow::Owned(s.chars().take(p).collect()),
                None => Cow::Borrowed(s),
            };
            pad(out, &text, spec, false);
        }
        'x' | 'X' => {
            let bytes = match spec.precision {
                Some(p) => &s.as_bytes()[..p.min(s.len())],
                None => s.as_bytes(),
            };
            let mut text = String::new();
            for (k, b) in bytes.iter().enumerate() {
                if spec.space && k > 0 {
                    text.push(' ');
                }
                if spec.sharp && (spec.space || k == 0) {
                    text.push_str(if verb == 'X' { "0X" } else { "0x" });
                }
                if verb == 'X' {
                    text.push_str(&format!("{b:02X}"));
                } else {
                    text.push_str(&format!("{b:02x}"));
                }
            }
            pad(out, &text, spec, false);
        }
        'q' => {
            let text: String = match spec.precision {
                Some(p) => s.chars().take(p).collect(),
                None => s.to_string(),
            };
            if spec.sharp && can_backquote(&text) {
                pad(out, &format!("`{text}`"), spec, false);
            } else {
                pad(out, &quote(&text, spec.plus), spec, false);
            }
        }
        _ => bad_verb(out, value, verb, spec),
    }
}

fn can_backquote(s: &str) -> bool {
    s.chars()
        .all(|c| c != '`' && c != '\u{FEFF}' && (c == '\t' || !c.is_control()))
}

/// Go's `strconv.Quote` (or `QuoteToASCII` when `ascii`).
pub fn quote(s: &str, ascii: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    quote_into(&mut out, s, ascii);
    out
}

/// [`quote`], appending to `out`.
pub fn quote_into(out: &mut String, s: &str, ascii: bool) {
    out.reserve(s.len() + 2);
    out.push('"');
    // Printable ASCII other than the quote and backslash stays as it is.
    let plain = s
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\');
    if plain {
        out.push_str(s);
    } else {
        for c in s.chars() {
            escape_char(out, c, '"', ascii);
        }
    }
    out.push('"');
}

fn quote_rune(c: char, ascii: bool) -> String {
    let mut out = String::from("'");
    escape_char(&mut out, c, '\'', ascii);
    out.push('\'');
    out
}

fn escape_char(out: &mut String, c: char, quote: char, ascii: bool) {
    match c {
        _ if c == quote || c == '\\' => {
            out.push('\\');
            out.push(c);
        }
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        _ if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
        _ if ascii && !c.is_ascii() || !is_printable(c) => {
            if (c as u32) < 0x10000 {
                out.push_str(&format!("\\u{:04x}", c as u32));
            } else {
                out.push_str(&format!("\\U{:08x}", c as u32));
            }
        }
        _ => out.push(c),
    }
}

/// An approximation of Go's `strconv.IsPrint`: letters, marks, numbers,
/// punctuation, symbols and the ASCII space.
fn is_printable(c: char) -> bool {
    if c.is_ascii() {
        return !c.is_ascii_control();
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(c as u32, 0xAD | 0x2028 | 0x2029 | 0xFEFF | 0xE000..=0xF8FF | 0xFFF9..=0xFFFB)
        || (0x200B..=0x200F).contains(&(c as u32))
        || (0x202A..=0x202E).contains(&(c as u32))
        || (0x2060..=0x206F).contains(&(c as u32)))
}

/// Go's `url.QueryEscape`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Rewrites each character `replacement` names, keeping the others.
fn escape_with(s: &str, replacement: impl Fn(char) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match replacement(c) {
            Some(r) => out.push_str(&r),
            None => out.push(c),
        }
    }
    out
}

/// Go's `template.HTMLEscapeString`.
pub fn html_escape(s: &str) -> String {
    escape_with(s, |c| {
        Some(
            match c {
                '\0' => "\u{FFFD}",
                '"' => "&#34;",
                '\'' => "&#39;",
                '&' => "&amp;",
                '<' => "&lt;",
                '>' => "&gt;",
                _ => return None,
            }
            .to_string(),
        )
    })
}

/// Go's `template.JSEscapeString`.
pub fn js_escape(s: &str) -> String {
    escape_with(s, |c| {
        Some(match c {
            '\\' => "\\\\".into(),
            '\'' => "\\'".into(),
            '"' => "\\\"".into(),
            '<' => "\\u003C".into(),
            '>' => "\\u003E".into(),
            '&' => "\\u0026".into(),
            '=' => "\\u003D".into(),
            _ if (c as u32) < 0x20 || !is_printable(c) && !c.is_ascii() => {
                format!("\\u{:04X}", c as u32)
            }
            _ => return None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::Map;

    fn f(format: &str, args: &[Value]) -> String {
        sprintf(format, args)
    }

    #[test]
    fn sprint_spaces_only_between_non_strings() {
        let args = [
            Value::Int(1),
            Value::Int(2),
            "a".into(),
            Value::Int(3),
            "b".into(),
            "c".into(),
        ];
        assert_eq!(sprint(&args), "1 2a3bc");
        assert_eq!(sprint(&[Value::Null, Value::Float(1.5)]), "<nil> 1.5");
        assert_eq!(
            sprintln(&["a".into(), "b".into(), Value::Int(1)]),
            "a b 1\n"
        );
    }

    #[test]
    fn printf_basic_verbs() {
        assert_eq!(f("%s-%d", &["a".into(), Value::Int(5)]), "a-5");
        assert_eq!(f("%v", &[Value::Float(1e6)]), "1e+06");
        assert_eq!(f("%q", &["a\"b\n".into()]), "\"a\\\"b\\n\"");
        assert_eq!(
            f(
                "%x %X %o %b",
                &[
                    Value::Int(255),
                    Value::Int(255),
                    Value::Int(8),
                    Value::Int(5)
                ]
            ),
            "ff FF 10 101"
        );
        assert_eq!(
            f(
                "%#x %#o %O",
                &[Value::Int(255), Value::Int(8), Value::Int(8)]
            ),
            "0xff 010 0o10"
        );
        assert_eq!(f("%t", &[Value::Bool(true)]), "true");
        assert_eq!(f("%c%c", &[Value::Int(72), Value::Int(105)]), "Hi");
        assert_eq!(
            f("%U %#U", &[Value::Int(0x41), Value::Int(0x41)]),
            "U+0041 U+0041 'A'"
        );
        assert_eq!(f("%x", &["hi".into()]), "6869");
        assert_eq!(f("100%%", &[]), "100%");
        assert_eq!(
            f(
                "%T %T %T %T",
                &[
                    Value::Float(1.0),
                    Value::Int(1),
                    Value::List(vec![]),
                    Value::Null
                ]
            ),
            "float64 int64 []interface {} <nil>"
        );
    }

    #[test]
    fn printf_width_precision_and_flags() {
        assert_eq!(f("[%5d]", &[Value::Int(42)]), "[   42]");
        assert_eq!(f("[%-5d]", &[Value::Int(42)]), "[42   ]");
        assert_eq!(f("[%05d]", &[Value::Int(-42)]), "[-0042]");
        assert_eq!(f("[%+d]", &[Value::Int(42)]), "[+42]");
        assert_eq!(f("[% d]", &[Value::Int(42)]), "[ 42]");
        assert_eq!(f("[%.3d]", &[Value::Int(7)]), "[007]");
        assert_eq!(f("[%6.2f]", &[Value::Float(1.23456)]), "[  1.23]");
        assert_eq!(f("[%-8.3s]", &["abcdef".into()]), "[abc     ]");
        assert_eq!(f("[%05s]", &["ab".into()]), "[   ab]");
        assert_eq!(f("[%08.3f]", &[Value::Float(-1.23456)]), "[-001.235]");
        assert_eq!(f("[%*d]", &[Value::Int(4), Value::Int(7)]), "[   7]");
        assert_eq!(f("[%+v]", &[Value::Int(5)]), "[5]");
    }

    #[test]
    fn printf_floats_like_strconv() {
        assert_eq!(f("%f", &[Value::Float(1.0)]), "1.000000");
        assert_eq!(f("%e", &[Value::Float(1234.5678)]), "1.234568e+03");
        assert_eq!(f("%E", &[Value::Float(0.000123)]), "1.230000E-04");
        assert_eq!(f("%g", &[Value::Float(100000.0)]), "100000");
        assert_eq!(f("%g", &[Value::Float(1e21)]), "1e+21");
        assert_eq!(f("%.3g", &[Value::Float(1234.5678)]), "1.23e+03");
        assert_eq!(f("%.5g", &[Value::Float(100.0)]), "100");
        assert_eq!(f("%.2f", &[Value::Float(2.0 / 3.0)]), "0.67");
        assert_eq!(f("%v", &[Value::Float(0.1 + 0.2)]), "0.30000000000000004");
        assert_eq!(f("%f", &[Value::Float(f64::INFINITY)]), "+Inf");
        assert_eq!(
            f("%5.1f|%-6.1f|", &[Value::Float(-1.25), Value::Float(1.0)]),
            " -1.2|1.0   |"
        );
    }

    #[test]
    fn printf_bad_verbs_missing_and_extra() {
        assert_eq!(f("%d", &["x".into()]), "%!d(string=x)");
        assert_eq!(f("%d", &[Value::Float(80.0)]), "%!d(float64=80)");
        assert_eq!(f("%s", &[Value::Int(3)]), "%!s(int64=3)");
        assert_eq!(f("%s", &[Value::Null]), "%!s(<nil>)");
        assert_eq!(f("%v", &[Value::Null]), "<nil>");
        assert_eq!(f("%d %d", &[Value::Int(1)]), "1 %!d(MISSING)");
        assert_eq!(
            f("%d", &[Value::Int(1), "a".into(), Value::Null]),
            "1%!(EXTRA string=a, <nil>)"
        );
        assert_eq!(f("abc%", &[]), "abc%!(NOVERB)");
        assert_eq!(f("%z", &[Value::Int(1)]), "%!z(int64=1)");
        assert_eq!(f("%*d", &["x".into(), Value::Int(1)]), "%!(BADWIDTH)1");
        assert_eq!(f("%t", &[Value::Int(1)]), "%!t(int64=1)");
    }

    #[test]
    fn printf_argument_indexes() {
        assert_eq!(f("%[2]s %[1]s", &["a".into(), "b".into()]), "b a");
        assert_eq!(f("%[3]d", &[Value::Int(1)]), "%!d(BADINDEX)");
        assert_eq!(f("%[1]d %[1]x", &[Value::Int(10)]), "10 a");
    }

    #[test]
    fn printf_composites_apply_the_verb_per_element() {
        let list = Value::List(vec!["a".into(), Value::Int(1), Value::Null]);
        assert_eq!(f("%v", std::slice::from_ref(&list)), "[a 1 <nil>]");
        assert_eq!(
            f("%q", std::slice::from_ref(&list)),
            "[\"a\" '\\x01' <nil>]"
        );
        assert_eq!(
            f("%d", std::slice::from_ref(&list)),
            "[%!d(string=a) 1 <nil>]"
        );
        let mut m = Map::new();
        m.insert("k".into(), Value::Float(1.5));
        assert_eq!(f("%v", &[Value::Map(m.clone())]), "map[k:1.5]");
        assert_eq!(
            f("%#v", &[Value::Map(m)]),
            "map[string]interface {}{\"k\":1.5}"
        );
    }

    #[test]
    fn escapers_match_text_template() {
        assert_eq!(query_escape("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
        assert_eq!(
            html_escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&#34;&lt;/a&gt;"
        );
        assert_eq!(js_escape("a'b\"c<d>\n"), "a\\'b\\\"c\\u003Cd\\u003E\\u000A");
        assert_eq!(eval_args(&[Value::Int(1), Value::Int(2)]), "1 2");
    }
}
