//! Owns turning a time into a calendar date: days since 1970-01-01 to a
//! proleptic Gregorian date, and unix milliseconds to the UTC text the
//! history, `app show` and the status page print. One copy of the
//! arithmetic for the template functions, the store and the UI.

/// Days since 1970-01-01 to a civil date `(year, month, day)`
/// (proleptic Gregorian; Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    // Both in range by construction: 1..=31 and 1..=12.
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Unix milliseconds as `YYYY-MM-DD{sep}HH:MM:SS{zone}`, to the second:
/// RFC 3339 with `('T', "Z")`, the status page's with `(' ', " UTC")`.
pub fn utc_text(ms: i64, sep: char, zone: &str) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}{sep}{:02}:{:02}:{:02}{zone}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_across_eras_leap_days_and_the_epoch() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(
            utc_text(1_796_689_216_469, 'T', "Z"),
            "2026-12-08T00:20:16Z"
        );
        assert_eq!(utc_text(-1, ' ', " UTC"), "1969-12-31 23:59:59 UTC");
    }
}
