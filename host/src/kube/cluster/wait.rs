//! Owns waiting: polling a set of objects until every one is Current.

use std::time::Duration;

/// `5m`, `1m30s`, `45s`, `1.5s`, `200ms`: a duration as a person reads it.
pub fn human(duration: Duration) -> String {
    let secs = duration.as_secs();
    let millis = duration.subsec_millis();
    if secs == 0 {
        return format!("{millis}ms");
    }
    if secs < 60 {
        return match millis {
            0 => format!("{secs}s"),
            m => format!("{secs}.{}s", m / 100),
        };
    }
    match (secs / 60, secs % 60) {
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}
