//! Injected faults: a test asks for the next N matching requests to fail
//! (a status code, a 429 with `Retry-After`, a delay, or a dropped
//! connection). Matching and using up faults lives here; the server acts
//! on the [`FaultKind`] it gets back.

use std::time::Duration;

/// What an injected fault does to a matching request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// Answer with this HTTP code and a matching `Status` object.
    Status(u16),
    /// Answer 429 TooManyRequests with a `Retry-After` header.
    TooManyRequests {
        /// The `Retry-After` seconds.
        retry_after_secs: u64,
    },
    /// Wait this long, then serve the request normally.
    Delay(Duration),
    /// Close the connection without answering.
    DropConnection,
}

/// A fault for the next `times` requests that match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Only requests with this method (e.g. `"PATCH"`), if given.
    pub method: Option<String>,
    /// Only requests whose path contains this.
    pub path_contains: String,
    /// How many requests it applies to before it is used up.
    pub times: usize,
    /// What it does.
    pub kind: FaultKind,
}

/// Takes one use of the first fault matching the request, if any.
pub fn take(faults: &mut Vec<Fault>, method: &str, path: &str) -> Option<FaultKind> {
    let index = faults.iter().position(|f| {
        f.times > 0
            && f.method
                .as_deref()
                .is_none_or(|m| m.eq_ignore_ascii_case(method))
            && path.contains(&f.path_contains)
    })?;
    let fault = &mut faults[index];
    fault.times -= 1;
    let kind = fault.kind.clone();
    if fault.times == 0 {
        faults.remove(index);
    }
    Some(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_is_used_up() {
        let mut faults = vec![Fault {
            method: Some("GET".into()),
            path_contains: "/configmaps".into(),
            times: 2,
            kind: FaultKind::Status(500),
        }];
        assert_eq!(take(&mut faults, "POST", "/api/v1/configmaps"), None);
        assert_eq!(take(&mut faults, "GET", "/api/v1/pods"), None);
        assert_eq!(
            take(&mut faults, "GET", "/api/v1/configmaps"),
            Some(FaultKind::Status(500))
        );
        assert_eq!(
            take(&mut faults, "get", "/api/v1/configmaps"),
            Some(FaultKind::Status(500))
        );
        assert_eq!(take(&mut faults, "GET", "/api/v1/configmaps"), None);
        assert!(faults.is_empty());
    }
}
