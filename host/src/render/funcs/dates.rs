//! Sprig's date functions over a small model of Go's `time.Time`, with Go's
//! reference-time layouts (`2006-01-02T15:04:05Z07:00`) for formatting and
//! parsing, and Go's `time.Duration` text (`1h0m0s`).
//!
//! A template value cannot hold a `time.Time`, so `now`, `toDate` and
//! `dateModify` return the time as the text Go prints for it
//! (`2024-05-01 10:00:00.5 +0000 UTC`), which is what `{{ now }}` shows;
//! the date functions read that text back as a time. Integers are Unix
//! seconds, as in Sprig. Every time is in UTC: `date` uses the machine's
//! local zone in Helm, and `dateInZone` any IANA zone; here both are UTC
//! (Go's own fallback for an unknown zone), so output differs from Helm on
//! a machine whose zone is not UTC.

use std::time::{SystemTime, UNIX_EPOCH};

use super::args::{at_least, exactly, text, wrong_type};
use super::{FuncError, Function};
use crate::values::Value;

pub(super) const FUNCTIONS: &[(&str, Function)] = &[
    ("now", now),
    ("date", date),
    ("dateInZone", date_in_zone),
    ("date_in_zone", date_in_zone),
    ("htmlDate", html_date),
    ("htmlDateInZone", html_date_in_zone),
    ("unixEpoch", unix_epoch),
    ("dateModify", date_modify),
    ("date_modify", date_modify),
    ("mustDateModify", must_date_modify),
    ("must_date_modify", must_date_modify),
    ("toDate", to_date),
    ("mustToDate", must_to_date),
    ("ago", ago),
    ("duration", duration),
    ("durationRound", duration_round),
];

/// A point in time: seconds and nanoseconds since the Unix epoch, shown at
/// a fixed offset with a zone name.
#[derive(Debug, Clone, PartialEq)]
pub struct GoTime {
    /// Seconds since 1970-01-01 00:00:00 UTC.
    pub unix: i64,
    /// Nanoseconds within the second.
    pub nanos: u32,
    /// Offset east of UTC in seconds.
    pub offset: i32,
    /// Zone abbreviation (`UTC`).
    pub zone: String,
}

const NANOS_PER_SECOND: i64 = 1_000_000_000;

impl GoTime {
    fn utc(unix: i64, nanos: u32) -> GoTime {
        GoTime {
            unix,
            nanos,
            offset: 0,
            zone: "UTC".into(),
        }
    }

    fn now() -> GoTime {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => GoTime::utc(d.as_secs() as i64, d.subsec_nanos()),
            Err(_) => GoTime::utc(0, 0),
        }
    }

    /// Go's zero `time.Time` (January 1, year 1, UTC).
    fn zero() -> GoTime {
        GoTime::utc(-62_135_596_800, 0)
    }

    fn total_nanos(&self) -> i128 {
        i128::from(self.unix) * i128::from(NANOS_PER_SECOND) + i128::from(self.nanos)
    }

    fn add_nanos(&self, d: i64) -> GoTime {
        let total = self.total_nanos() + i128::from(d);
        let unix = total.div_euclid(i128::from(NANOS_PER_SECOND)) as i64;
        let nanos = total.rem_euclid(i128::from(NANOS_PER_SECOND)) as u32;
        GoTime {
            unix,
            nanos,
            offset: self.offset,
            zone: self.zone.clone(),
        }
    }

    /// Go's `Time.String()`.
    pub fn go_string(&self) -> String {
        format_layout(self, "2006-01-02 15:04:05.999999999 -0700 MST")
    }
}

/// Days since 1970-01-01 to a civil date (proleptic Gregorian).
pub(super) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    crate::model::clock::civil_from_days(days)
}

/// A civil date to days since 1970-01-01.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

/// The broken-down local time of a [`GoTime`].
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    weekday: usize,
    yearday: u32,
}

fn civil(t: &GoTime) -> Civil {
    let local = t.unix + i64::from(t.offset);
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400) as u32;
    let (year, month, day) = civil_from_days(days);
    let yearday = (days - days_from_civil(year, 1, 1) + 1) as u32;
    Civil {
        year,
        month,
        day,
        hour: secs / 3600,
        minute: secs / 60 % 60,
        second: secs % 60,
        weekday: (days + 4).rem_euclid(7) as usize,
        yearday,
    }
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// One element of a Go layout.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    Pm,
    LowerPm,
    Tz,
    /// Numeric zone: (use Z for UTC, with colons, hours only, seconds).
    Zone {
        z: bool,
        colon: bool,
        hours_only: bool,
        seconds: bool,
    },
    /// Fractional seconds: (digits, trim zeros, separator).
    Frac {
        digits: usize,
        trim: bool,
        sep: char,
    },
}

fn starts_lower(s: &str) -> bool {
    s.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
}

/// Go's `nextStdChunk`: the literal prefix, the element, and the rest.
fn next_chunk(layout: &str) -> (&str, Option<Std>, &str) {
    let b = layout.as_bytes();
    let zones: [(&str, Std); 10] = [
        (
            "Z070000",
            Std::Zone {
                z: true,
                colon: false,
                hours_only: false,
                seconds: true,
            },
        ),
        (
            "Z07:00:00",
            Std::Zone {
                z: true,
                colon: true,
                hours_only: false,
                seconds: true,
            },
        ),
        (
            "Z0700",
            Std::Zone {
                z: true,
                colon: false,
                hours_only: false,
                seconds: false,
            },
        ),
        (
            "Z07:00",
            Std::Zone {
                z: true,
                colon: true,
                hours_only: false,
                seconds: false,
            },
        ),
        (
            "Z07",
            Std::Zone {
                z: true,
                colon: false,
                hours_only: true,
                seconds: false,
            },
        ),
        (
            "-070000",
            Std::Zone {
                z: false,
                colon: false,
                hours_only: false,
                seconds: true,
            },
        ),
        (
            "-07:00:00",
            Std::Zone {
                z: false,
                colon: true,
                hours_only: false,
                seconds: true,
            },
        ),
        (
            "-0700",
            Std::Zone {
                z: false,
                colon: false,
                hours_only: false,
                seconds: false,
            },
        ),
        (
            "-07:00",
            Std::Zone {
                z: false,
                colon: true,
                hours_only: false,
                seconds: false,
            },
        ),
        (
            "-07",
            Std::Zone {
                z: false,
                colon: false,
                hours_only: true,
                seconds: false,
            },
        ),
    ];
    for i in 0..b.len() {
        let rest = &layout[i..];
        let found: Option<(Std, usize)> = match b[i] {
            b'J' if rest.starts_with("January") => Some((Std::LongMonth, 7)),
            b'J' if rest.starts_with("Jan") && !starts_lower(&rest[3..]) => Some((Std::Month, 3)),
            b'M' if rest.starts_with("Monday") => Some((Std::LongWeekDay, 6)),
            b'M' if rest.starts_with("Mon") && !starts_lower(&rest[3..]) => Some((Std::WeekDay, 3)),
            b'M' if rest.starts_with("MST") => Some((Std::Tz, 3)),
            b'0' if b.len() > i + 1 && (b'1'..=b'6').contains(&b[i + 1]) => {
                let std = [
                    Std::ZeroMonth,
                    Std::ZeroDay,
                    Std::ZeroHour12,
                    Std::ZeroMinute,
                    Std::ZeroSecond,
                    Std::Year,
                ][usize::from(b[i + 1] - b'1')];
                Some((std, 2))
            }
            b'0' if rest.starts_with("002") => Some((Std::ZeroYearDay, 3)),
            b'1' if rest.starts_with("15") => Some((Std::Hour, 2)),
            b'1' => Some((Std::NumMonth, 1)),
            b'2' if rest.starts_with("2006") => Some((Std::LongYear, 4)),
            b'2' => Some((Std::Day, 1)),
            b'_' if rest.starts_with("_2006") => {
                return (&layout[..i + 1], Some(Std::LongYear), &layout[i + 5..]);
            }
            b'_' if rest.starts_with("_2") => Some((Std::UnderDay, 2)),
            b'_' if rest.starts_with("__2") => Some((Std::UnderYearDay, 3)),
            b'3' => Some((Std::Hour12, 1)),
            b'4' => Some((Std::Minute, 1)),
            b'5' => Some((Std::Second, 1)),
            b'P' if rest.starts_with("PM") => Some((Std::Pm, 2)),
            b'p' if rest.starts_with("pm") => Some((Std::LowerPm, 2)),
            b'-' | b'Z' => zones
                .iter()
                .find(|(p, _)| rest.starts_with(p))
                .map(|(p, s)| (*s, p.len())),
            b'.' | b',' if b.len() > i + 1 && (b[i + 1] == b'0' || b[i + 1] == b'9') => {
                let ch = b[i + 1];
                let mut j = i + 1;
                while j < b.len() && b[j] == ch {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    None
                } else {
                    let std = Std::Frac {
                        digits: j - i - 1,
                        trim: ch == b'9',
                        sep: b[i] as char,
                    };
                    Some((std, j - i))
                }
            }
            _ => None,
        };
        if let Some((std, len)) = found {
            return (&layout[..i], Some(std), &layout[i + len..]);
        }
    }
    (layout, None, "")
}

/// Go's `Time.Format(layout)`.
pub fn format_layout(t: &GoTime, layout: &str) -> String {
    let c = civil(t);
    let mut out = String::new();
    let mut rest = layout;
    loop {
        let (prefix, std, tail) = next_chunk(rest);
        out.push_str(prefix);
        let Some(std) = std else { break };
        rest = tail;
        let hour12 = if c.hour.is_multiple_of(12) {
            12
        } else {
            c.hour % 12
        };
        match std {
            Std::LongMonth => out.push_str(MONTHS[c.month as usize - 1]),
            Std::Month => out.push_str(&MONTHS[c.month as usize - 1][..3]),
            Std::NumMonth => out.push_str(&c.month.to_string()),
            Std::ZeroMonth => out.push_str(&format!("{:02}", c.month)),
            Std::LongWeekDay => out.push_str(WEEKDAYS[c.weekday]),
            Std::WeekDay => out.push_str(&WEEKDAYS[c.weekday][..3]),
            Std::Day => out.push_str(&c.day.to_string()),
            Std::UnderDay => out.push_str(&format!("{:>2}", c.day)),
            Std::ZeroDay => out.push_str(&format!("{:02}", c.day)),
            Std::UnderYearDay => out.push_str(&format!("{:>3}", c.yearday)),
            Std::ZeroYearDay => out.push_str(&format!("{:03}", c.yearday)),
            Std::Hour => out.push_str(&format!("{:02}", c.hour)),
            Std::Hour12 => out.push_str(&hour12.to_string()),
            Std::ZeroHour12 => out.push_str(&format!("{hour12:02}")),
            Std::Minute => out.push_str(&c.minute.to_string()),
            Std::ZeroMinute => out.push_str(&format!("{:02}", c.minute)),
            Std::Second => out.push_str(&c.second.to_string()),
            Std::ZeroSecond => out.push_str(&format!("{:02}", c.second)),
            Std::LongYear => {
                if c.year < 0 {
                    out.push_str(&format!("-{:04}", -c.year));
                } else {
                    out.push_str(&format!("{:04}", c.year));
                }
            }
            Std::Year => out.push_str(&format!("{:02}", c.year.rem_euclid(100))),
            Std::Pm => out.push_str(if c.hour >= 12 { "PM" } else { "AM" }),
            Std::LowerPm => out.push_str(if c.hour >= 12 { "pm" } else { "am" }),
            Std::Tz => {
                if t.zone.is_empty() {
                    out.push_str(&numeric_zone(t.offset, false, false, false));
                } else {
                    out.push_str(&t.zone);
                }
            }
            Std::Zone {
                z,
                colon,
                hours_only,
                seconds,
            } => {
                if z && t.offset == 0 {
                    out.push('Z');
                } else if hours_only {
                    let s = numeric_zone(t.offset, false, false, false);
                    out.push_str(&s[..3]);
                } else {
                    out.push_str(&numeric_zone(t.offset, colon, seconds, false));
                }
            }
            Std::Frac { digits, trim, sep } => {
                let all = format!("{:09}", t.nanos);
                let mut frac = all[..digits.min(9)].to_string();
                if trim {
                    while frac.ends_with('0') {
                        frac.pop();
                    }
                    if !frac.is_empty() {
                        out.push(sep);
                        out.push_str(&frac);
                    }
                } else {
                    out.push(sep);
                    out.push_str(&frac);
                }
            }
        }
    }
    out
}

fn numeric_zone(offset: i32, colon: bool, seconds: bool, _z: bool) -> String {
    let sign = if offset < 0 { '-' } else { '+' };
    let abs = offset.unsigned_abs();
    let sep = if colon { ":" } else { "" };
    let mut s = format!("{sign}{:02}{sep}{:02}", abs / 3600, abs / 60 % 60);
    if seconds {
        s.push_str(&format!("{sep}{:02}", abs % 60));
    }
    s
}

/// Go's `time.ParseInLocation(layout, value, UTC)` for the layout elements
/// charts use. The error text follows Go's.
pub fn parse_layout(layout: &str, value: &str) -> Result<GoTime, String> {
    let mut fields = Fields::default();
    let mut rest = value;
    let mut layout_rest = layout;
    loop {
        let (literal, std, tail) = next_chunk(layout_rest);
        rest = rest
            .strip_prefix(literal)
            .ok_or_else(|| cannot_parse(value, layout, rest, literal))?;
        let Some(std) = std else {
            if !rest.is_empty() {
                return Err(format!("parsing time {value:?}: extra text: {rest:?}"));
            }
            break;
        };
        let element = &layout_rest[literal.len()..layout_rest.len() - tail.len()];
        layout_rest = tail;
        let next_is_fraction = matches!(next_chunk(layout_rest).1, Some(Std::Frac { .. }));
        let before = rest;
        fields
            .read(std, &mut rest, next_is_fraction)
            .map_err(|()| cannot_parse(value, layout, before, element))?;
    }
    fields.time(value)
}

fn cannot_parse(value: &str, layout: &str, rest: &str, element: &str) -> String {
    format!("parsing time {value:?} as {layout:?}: cannot parse {rest:?} as {element:?}")
}

/// The parts of a time read so far.
struct Fields {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
    pm: Option<bool>,
    offset: i32,
    zone: String,
}

impl Default for Fields {
    fn default() -> Self {
        Fields {
            year: 1,
            month: 1,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
            nanos: 0,
            pm: None,
            offset: 0,
            zone: "UTC".into(),
        }
    }
}

/// Reads `min` to `max` digits.
fn take_digits(rest: &mut &str, min: usize, max: usize) -> Result<u32, ()> {
    let n = rest
        .bytes()
        .take(max)
        .take_while(u8::is_ascii_digit)
        .count();
    if n < min {
        return Err(());
    }
    let value = rest[..n].parse().map_err(|_| ())?;
    *rest = &rest[n..];
    Ok(value)
}

/// Reads one of `names` (or its first three letters), case-insensitively;
/// returns its index.
fn take_name(rest: &mut &str, names: &[&str], short: bool) -> Result<usize, ()> {
    for (index, name) in names.iter().enumerate() {
        let name = if short { &name[..3] } else { name };
        if rest
            .get(..name.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(name))
        {
            *rest = &rest[name.len()..];
            return Ok(index);
        }
    }
    Err(())
}

/// Reads a numeric zone (`+07:00`, `-0700`, `Z` where allowed).
fn take_zone(
    rest: &mut &str,
    z: bool,
    colon: bool,
    hours_only: bool,
    seconds: bool,
) -> Result<i32, ()> {
    if z && rest.starts_with('Z') {
        *rest = &rest[1..];
        return Ok(0);
    }
    let sign = match rest.as_bytes().first() {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => return Err(()),
    };
    *rest = &rest[1..];
    let mut total = take_digits(rest, 2, 2)? * 3600;
    if !hours_only {
        for (step, unit) in [(true, 60), (seconds, 1)] {
            if !step {
                continue;
            }
            if colon {
                *rest = rest.strip_prefix(':').ok_or(())?;
            }
            total += take_digits(rest, 2, 2)? * unit;
        }
    }
    Ok(sign * total as i32)
}

/// Reads fractional-second digits after a `.` or `,`.
fn take_fraction(rest: &mut &str) -> Option<u32> {
    let after = rest.strip_prefix(['.', ','])?;
    let n = after.bytes().take_while(u8::is_ascii_digit).count();
    let nanos = fraction_nanos(&after[..n]);
    *rest = &after[n..];
    Some(nanos)
}

impl Fields {
    /// Reads one layout element from the front of `rest`.
    fn read(&mut self, std: Std, rest: &mut &str, next_is_fraction: bool) -> Result<(), ()> {
        let width = |zero: bool| if zero { 2 } else { 1 };
        match std {
            Std::LongYear => self.year = i64::from(take_digits(rest, 4, 4)?),
            Std::Year => {
                let y = i64::from(take_digits(rest, 2, 2)?);
                self.year = if y >= 69 { y + 1900 } else { y + 2000 };
            }
            Std::LongMonth | Std::Month => {
                self.month = take_name(rest, &MONTHS, std == Std::Month)? as u32 + 1;
            }
            Std::LongWeekDay | Std::WeekDay => {
                take_name(rest, &WEEKDAYS, std == Std::WeekDay)?;
            }
            Std::NumMonth | Std::ZeroMonth => {
                self.month = take_digits(rest, width(std == Std::ZeroMonth), 2)?;
                if !(1..=12).contains(&self.month) {
                    return Err(());
                }
            }
            Std::Day | Std::ZeroDay | Std::UnderDay => {
                if std == Std::UnderDay {
                    *rest = rest.strip_prefix(' ').unwrap_or(rest);
                }
                self.day = take_digits(rest, width(std == Std::ZeroDay), 2)?;
            }
            Std::UnderYearDay | Std::ZeroYearDay => {
                *rest = rest.trim_start_matches(' ');
                take_digits(rest, 1, 3)?;
            }
            Std::Hour => self.hour = take_digits(rest, 2, 2)?,
            Std::Hour12 | Std::ZeroHour12 => {
                self.hour = take_digits(rest, width(std == Std::ZeroHour12), 2)?;
            }
            Std::Minute | Std::ZeroMinute => {
                self.minute = take_digits(rest, width(std == Std::ZeroMinute), 2)?;
            }
            Std::Second | Std::ZeroSecond => {
                self.second = take_digits(rest, width(std == Std::ZeroSecond), 2)?;
                // Go accepts a fraction after the seconds even when the
                // layout has none.
                if !next_is_fraction {
                    let mut probe = *rest;
                    if let Some(nanos) =
                        take_fraction(&mut probe).filter(|_| probe.len() + 1 < rest.len())
                    {
                        self.nanos = nanos;
                        *rest = probe;
                    }
                }
            }
            Std::Pm | Std::LowerPm => {
                self.pm = match rest.get(..2).map(str::to_ascii_uppercase).as_deref() {
                    Some("PM") => Some(true),
                    Some("AM") => Some(false),
                    _ => return Err(()),
                };
                *rest = &rest[2..];
            }
            Std::Tz => {
                let n = rest.bytes().take_while(u8::is_ascii_uppercase).count();
                if n < 3 {
                    return Err(());
                }
                self.zone = rest[..n].to_string();
                *rest = &rest[n..];
            }
            Std::Zone {
                z,
                colon,
                hours_only,
                seconds,
            } => {
                self.offset = take_zone(rest, z, colon, hours_only, seconds)?;
                // A zero offset is the local zone (UTC here); any other is
                // a fixed zone without a name, as Go makes it.
                if self.offset != 0 {
                    self.zone = String::new();
                }
            }
            Std::Frac { digits, trim, .. } => {
                let before = rest.len();
                match take_fraction(rest) {
                    Some(nanos) if trim || before - rest.len() == digits + 1 => self.nanos = nanos,
                    None if trim => {}
                    _ => return Err(()),
                }
            }
        }
        Ok(())
    }

    /// The time these fields name, checking the day and clock ranges.
    fn time(mut self, value: &str) -> Result<GoTime, String> {
        match self.pm {
            Some(true) if self.hour < 12 => self.hour += 12,
            Some(false) if self.hour == 12 => self.hour = 0,
            _ => {}
        }
        let days_in_month = match self.month {
            2 if is_leap(self.year) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        if self.day < 1 || self.day > days_in_month {
            return Err(format!("parsing time {value:?}: day out of range"));
        }
        if self.hour > 23 || self.minute > 59 || self.second > 59 {
            return Err(format!(
                "parsing time {value:?}: hour, minute or second out of range"
            ));
        }
        let clock = i64::from(self.hour * 3600 + self.minute * 60 + self.second);
        let local = days_from_civil(self.year, self.month, self.day) * 86_400 + clock;
        Ok(GoTime {
            unix: local - i64::from(self.offset),
            nanos: self.nanos,
            offset: self.offset,
            zone: self.zone,
        })
    }
}

fn fraction_nanos(digits: &str) -> u32 {
    let mut padded: String = digits.chars().take(9).collect();
    while padded.len() < 9 {
        padded.push('0');
    }
    padded.parse().unwrap_or(0)
}

/// Reads a time argument: a time's text, or Unix seconds.
fn time_of(value: &Value) -> Option<GoTime> {
    match value {
        Value::Int(i) => Some(GoTime::utc(*i, 0)),
        Value::String(s) => parse_go_time_string(s),
        _ => None,
    }
}

/// Reads Go's `Time.String()` text back.
fn parse_go_time_string(s: &str) -> Option<GoTime> {
    let s = s.split(" m=").next().unwrap_or(s);
    parse_layout("2006-01-02 15:04:05.999999999 -0700 MST", s)
        .or_else(|_| parse_layout("2006-01-02 15:04:05.999999999 -0700 -0700", s))
        .ok()
}

/// A `time.Time` parameter.
fn time_arg(value: &Value) -> Result<GoTime, FuncError> {
    time_of(value).ok_or_else(|| wrong_type("time.Time", value))
}

fn now(args: &[Value]) -> Result<Value, FuncError> {
    exactly::<0>("now", args)?;
    Ok(GoTime::now().go_string().into())
}

/// Sprig's `dateInZone`: a time or Unix seconds formatted in the zone;
/// anything else means now.
fn format_in_zone(layout: &str, value: &Value) -> String {
    let t = time_of(value).unwrap_or_else(GoTime::now);
    let t = GoTime::utc(t.unix, t.nanos);
    format_layout(&t, layout)
}

fn date(args: &[Value]) -> Result<Value, FuncError> {
    let [layout, value] = exactly::<2>("date", args)?;
    Ok(format_in_zone(text(layout)?, value).into())
}

fn date_in_zone(args: &[Value]) -> Result<Value, FuncError> {
    let [layout, value, zone] = exactly::<3>("dateInZone", args)?;
    text(zone)?;
    Ok(format_in_zone(text(layout)?, value).into())
}

fn html_date(args: &[Value]) -> Result<Value, FuncError> {
    let [value] = exactly::<1>("htmlDate", args)?;
    Ok(format_in_zone("2006-01-02", value).into())
}

fn html_date_in_zone(args: &[Value]) -> Result<Value, FuncError> {
    let [value, zone] = exactly::<2>("htmlDateInZone", args)?;
    text(zone)?;
    Ok(format_in_zone("2006-01-02", value).into())
}

fn unix_epoch(args: &[Value]) -> Result<Value, FuncError> {
    let [value] = exactly::<1>("unixEpoch", args)?;
    Ok(time_arg(value)?.unix.to_string().into())
}

/// `dateModify DURATION TIME`: the time moved by the duration, unchanged
/// when the duration does not parse.
fn date_modify(args: &[Value]) -> Result<Value, FuncError> {
    let [d, value] = exactly::<2>("dateModify", args)?;
    let t = time_arg(value)?;
    Ok(match parse_duration(text(d)?) {
        Ok(nanos) => t.add_nanos(nanos),
        Err(_) => t,
    }
    .go_string()
    .into())
}

fn must_date_modify(args: &[Value]) -> Result<Value, FuncError> {
    let [d, value] = exactly::<2>("mustDateModify", args)?;
    let t = time_arg(value)?;
    let nanos = parse_duration(text(d)?).map_err(FuncError::call)?;
    Ok(t.add_nanos(nanos).go_string().into())
}

/// `toDate LAYOUT TEXT`: the parsed time, or Go's zero time.
fn to_date(args: &[Value]) -> Result<Value, FuncError> {
    let [layout, value] = exactly::<2>("toDate", args)?;
    Ok(parse_layout(text(layout)?, text(value)?)
        .unwrap_or_else(|_| GoTime::zero())
        .go_string()
        .into())
}

fn must_to_date(args: &[Value]) -> Result<Value, FuncError> {
    let [layout, value] = exactly::<2>("mustToDate", args)?;
    parse_layout(text(layout)?, text(value)?)
        .map(|t| Value::String(t.go_string()))
        .map_err(FuncError::call)
}

/// `ago TIME`: the time since, rounded to seconds.
fn ago(args: &[Value]) -> Result<Value, FuncError> {
    let [value] = exactly::<1>("ago", args)?;
    let now = GoTime::now();
    let t = time_of(value).unwrap_or_else(|| now.clone());
    let nanos = now.total_nanos() - t.total_nanos();
    let rounded = (nanos
        + if nanos >= 0 {
            500_000_000
        } else {
            -500_000_000
        })
        / 1_000_000_000
        * 1_000_000_000;
    Ok(duration_string(rounded.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64).into())
}

/// `duration SECONDS`: Go's text for that many seconds; only integers and
/// decimal strings count, anything else is 0.
fn duration(args: &[Value]) -> Result<Value, FuncError> {
    let [value] = exactly::<1>("duration", args)?;
    let seconds = match value {
        Value::Int(i) => *i,
        Value::String(s) => s.parse().unwrap_or(0),
        _ => 0,
    };
    Ok(duration_string(seconds.wrapping_mul(NANOS_PER_SECOND)).into())
}

/// `durationRound D`: the largest whole unit (y, mo, d, h, m, s), Sprig's.
fn duration_round(args: &[Value]) -> Result<Value, FuncError> {
    at_least("durationRound", args, 1)?;
    let nanos: i64 = match &args[0] {
        Value::String(s) => parse_duration(s).unwrap_or(0),
        Value::Int(i) => *i,
        other => match parse_go_time_string(&other.to_string()) {
            Some(t) => (GoTime::now().total_nanos() - t.total_nanos()) as i64,
            None => 0,
        },
    };
    let u = nanos.unsigned_abs();
    let hour = 3_600_000_000_000u64;
    let units: [(u64, &str); 6] = [
        (hour * 24 * 365, "y"),
        (hour * 24 * 30, "mo"),
        (hour * 24, "d"),
        (hour, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
    ];
    for (size, suffix) in units {
        if u > size {
            return Ok(format!("{}{suffix}", u / size).into());
        }
    }
    Ok("0s".into())
}

/// Go's `time.Duration.String()`.
pub fn duration_string(nanos: i64) -> String {
    let negative = nanos < 0;
    let mut u = nanos.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (prec, unit) = match u {
            0 => return "0s".into(),
            1..=999 => (0, "ns"),
            1_000..=999_999 => (3, "µs"),
            _ => (6, "ms"),
        };
        out.push_str(&fraction_text(u, prec));
        out.push_str(unit);
    } else {
        let frac = fraction_text(u % 1_000_000_000, 9);
        u /= 1_000_000_000;
        let seconds = u % 60;
        u /= 60;
        let mut text = String::new();
        if u > 0 {
            let minutes = u % 60;
            u /= 60;
            if u > 0 {
                text.push_str(&format!("{u}h"));
            }
            text.push_str(&format!("{minutes}m"));
        }
        text.push_str(&format!("{seconds}{}s", frac.trim_start_matches('0')));
        out.push_str(&text);
    }
    if negative {
        out.insert(0, '-');
    }
    out
}

/// `v / 10^prec` as Go's `fmtFrac` and `fmtInt` write it, without trailing
/// zeros (for the whole-second case, only the fraction part is used).
fn fraction_text(v: u64, prec: u32) -> String {
    let divisor = 10u64.pow(prec);
    let whole = v / divisor;
    let mut frac = format!("{:0width$}", v % divisor, width = prec as usize);
    while frac.ends_with('0') {
        frac.pop();
    }
    if frac.is_empty() {
        if prec == 9 {
            String::new()
        } else {
            whole.to_string()
        }
    } else if prec == 9 {
        format!(".{frac}")
    } else {
        format!("{whole}.{frac}")
    }
}

/// Go's `time.ParseDuration`.
///
/// # Errors
/// Go's `time: invalid duration "x"` text.
pub fn parse_duration(s: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {s:?}");
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let n = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        if n == 0 || rest[..n] == *"." {
            return Err(invalid());
        }
        let number: f64 = rest[..n].parse().map_err(|_| invalid())?;
        rest = &rest[n..];
        let u = rest
            .bytes()
            .take_while(|b| !b.is_ascii_digit() && *b != b'.')
            .count();
        let unit = &rest[..u];
        rest = &rest[u..];
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => return Err(format!("time: missing unit in duration {s:?}")),
            other => return Err(format!("time: unknown unit {other:?} in duration {s:?}")),
        };
        total += number * scale;
    }
    if total > i64::MAX as f64 {
        return Err(invalid());
    }
    let nanos = total.round() as i64;
    Ok(if negative { -nanos } else { nanos })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(unix: i64, nanos: u32) -> GoTime {
        GoTime::utc(unix, nanos)
    }

    #[test]
    fn formats_reference_layouts() {
        // 2009-11-10 23:00:00 UTC, a Tuesday.
        let time = t(1_257_894_000, 0);
        assert_eq!(
            format_layout(&time, "2006-01-02 15:04:05"),
            "2009-11-10 23:00:00"
        );
        assert_eq!(
            format_layout(&time, "Mon Jan _2 3:04PM MST 2006"),
            "Tue Nov 10 11:00PM UTC 2009"
        );
        assert_eq!(
            format_layout(&time, "Monday, January 2, 06 002"),
            "Tuesday, November 10, 09 314"
        );
        assert_eq!(
            format_layout(&time, "2006-01-02T15:04:05Z07:00"),
            "2009-11-10T23:00:00Z"
        );
        assert_eq!(format_layout(&time, "-07:00 pm"), "+00:00 pm");
        let frac = t(0, 120_000_000);
        assert_eq!(
            format_layout(&frac, "05.000 05.999 05.9"),
            "00.120 00.12 00.1"
        );
        assert_eq!(
            t(1_700_000_000, 5).go_string(),
            "2023-11-14 22:13:20.000000005 +0000 UTC"
        );
        assert_eq!(GoTime::zero().go_string(), "0001-01-01 00:00:00 +0000 UTC");
    }

    #[test]
    fn parses_layouts_and_reads_times_back() {
        let parsed = parse_layout("2006-01-02", "2017-12-31").map(|t| t.go_string());
        assert_eq!(parsed, Ok("2017-12-31 00:00:00 +0000 UTC".into()));
        let parsed =
            parse_layout(time_rfc3339(), "2020-02-29T10:20:30+02:00").map(|t| (t.unix, t.offset));
        assert_eq!(parsed, Ok((1_582_964_430, 7200)));
        let fixed =
            parse_layout(time_rfc3339(), "2020-02-29T10:20:30+02:00").map(|t| t.go_string());
        assert_eq!(fixed, Ok("2020-02-29 10:20:30 +0200 +0200".into()));
        let utc = parse_layout(time_rfc3339(), "2020-02-29T10:20:30+00:00").map(|t| t.go_string());
        assert_eq!(utc, Ok("2020-02-29 10:20:30 +0000 UTC".into()));
        assert!(parse_layout("2006-01-02", "2017-13-01").is_err());
        assert!(parse_layout("2006-01-02", "nope").is_err());
        assert!(parse_layout("Jan", "Jaé").is_err());
        let time = t(1_257_894_000, 500);
        assert_eq!(parse_go_time_string(&time.go_string()), Some(time));
    }

    fn time_rfc3339() -> &'static str {
        "2006-01-02T15:04:05Z07:00"
    }

    #[test]
    fn date_functions() {
        assert_eq!(
            date(&["2006-01-02".into(), Value::Int(86_400)]),
            Ok("1970-01-02".into())
        );
        let stamp = "2017-12-31 00:00:00 +0000 UTC";
        assert_eq!(
            to_date(&["2006-01-02".into(), "2017-12-31".into()]),
            Ok(stamp.into())
        );
        assert_eq!(
            date(&["02/01/2006".into(), stamp.into()]),
            Ok("31/12/2017".into())
        );
        assert_eq!(unix_epoch(&[stamp.into()]), Ok("1514678400".into()));
        assert_eq!(
            date_modify(&["-1.5h".into(), stamp.into()]),
            Ok("2017-12-30 22:30:00 +0000 UTC".into())
        );
        assert_eq!(
            to_date(&["2006".into(), "x".into()]),
            Ok("0001-01-01 00:00:00 +0000 UTC".into())
        );
        assert!(must_to_date(&["2006".into(), "x".into()]).is_err());
        assert_eq!(html_date(&[Value::Int(0)]), Ok("1970-01-01".into()));
        assert!(matches!(now(&[]), Ok(Value::String(s)) if s.ends_with(" +0000 UTC")));
    }

    #[test]
    fn durations_like_go() {
        assert_eq!(duration_string(0), "0s");
        assert_eq!(duration_string(90 * NANOS_PER_SECOND), "1m30s");
        assert_eq!(duration_string(3600 * NANOS_PER_SECOND), "1h0m0s");
        assert_eq!(duration_string(1_500_000_000), "1.5s");
        assert_eq!(duration_string(1_500_000), "1.5ms");
        assert_eq!(duration_string(1_500), "1.5µs");
        assert_eq!(duration_string(-2 * NANOS_PER_SECOND), "-2s");
        assert_eq!(duration(&["95".into()]), Ok("1m35s".into()));
        assert_eq!(duration(&[Value::Float(95.0)]), Ok("0s".into()));
        assert_eq!(parse_duration("1h30m"), Ok(5_400 * NANOS_PER_SECOND));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert!(parse_duration("5").is_err());
        assert_eq!(duration_round(&["2h5m".into()]), Ok("2h".into()));
        // Sprig's units: "mo" for 30-day months, "y" for 365-day years,
        // each only when strictly exceeded (24h stays hours).
        assert_eq!(duration_round(&["3000h".into()]), Ok("4mo".into()));
        assert_eq!(duration_round(&["9000h".into()]), Ok("1y".into()));
        assert_eq!(duration_round(&["-9000h".into()]), Ok("1y".into()));
        assert_eq!(duration_round(&["24h".into()]), Ok("24h".into()));
        assert_eq!(duration_round(&["720h".into()]), Ok("30d".into()));
        assert_eq!(duration_round(&["721h".into()]), Ok("1mo".into()));
        assert_eq!(duration_round(&["90s".into()]), Ok("1m".into()));
    }
}
