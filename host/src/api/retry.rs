//! When the client asks again: a daemon that answers `429` (an upload past
//! its slots, a peer that must wait after failed authentications) or `503`
//! with `Retry-After` (a follower that knows no leader yet) is waited out,
//! for the time it names (each wait capped at [`Retries::each`], with a
//! little jitter so a crowd of clients does not come back at once) and no
//! longer in all than [`Retries::total`]; then the answer is the error, as
//! without retries. Nothing else is retried: a `503` without `Retry-After`
//! (a store that lost the lead mid-operation) or any other status is
//! answered at once.
//!
//! Why retrying a change is safe: every answer retried here is given
//! before the daemon does anything with the request. The auth throttle's
//! `429` (`auth::authenticate`) and the follower's `503`
//! (`auth::leader_only`) come from middleware before any handler runs;
//! the upload `429` (`handlers::streamed_bundle`) is answered when no
//! upload slot is free, before the body is read or the lifecycle is
//! called, and the upload, update and diff handlers do nothing but check
//! headers before it. Each attempt sends the whole body again from the
//! client's own copy, never the rest of a half-read stream.
//!
//! Must not decide what a request is; it only says whether and how long
//! to wait before sending the same one again.

use std::time::Duration;

use hyper::StatusCode;

use super::wire::ErrorBody;

/// The longest daemon reason shown in a waiting notice, in characters.
pub const MAX_REASON_CHARS: usize = 200;

/// How long the client waits out a busy daemon. [`Retries::default`] is
/// what the CLI uses; [`Retries::none`] answers at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retries {
    /// The longest one wait, whatever `Retry-After` says. Default 30 s.
    pub each: Duration,
    /// The longest all waits of one request together. Default 2 minutes.
    pub total: Duration,
}

impl Default for Retries {
    fn default() -> Self {
        Retries {
            each: Duration::from_secs(30),
            total: Duration::from_secs(120),
        }
    }
}

impl Retries {
    /// No retry at all.
    pub fn none() -> Retries {
        Retries {
            each: Duration::ZERO,
            total: Duration::ZERO,
        }
    }
}

/// One wait before asking again, as told to the person waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    /// The status that was answered (`429` or `503`).
    pub status: u16,
    /// The daemon's reason, one line of at most [`MAX_REASON_CHARS`].
    pub reason: String,
    /// How long the client waits now.
    pub wait: Duration,
    /// The attempt that follows the wait (2 for the first retry).
    pub attempt: u32,
}

/// The wait a status and its `Retry-After` ask for, before the cap and
/// the jitter; `None` when the answer is not retried.
pub(super) fn asked(
    status: StatusCode,
    retry_after: Option<Duration>,
    retries: u32,
) -> Option<Duration> {
    match status {
        // A 429 without Retry-After backs off from one second.
        StatusCode::TOO_MANY_REQUESTS => Some(
            retry_after
                .unwrap_or_else(|| Duration::from_secs(1).saturating_mul(1 << retries.min(6))),
        ),
        StatusCode::SERVICE_UNAVAILABLE => retry_after,
        _ => None,
    }
}

/// The wait before the next attempt: what the answer asks
/// ([`asked`]), capped at `retries.each`, plus `jitter` (a fraction in
/// 0..1 of a quarter of the wait); `None` when the answer is not retried
/// or the wait would take the total past `retries.total`.
pub(super) fn next_wait(
    retries: &Retries,
    status: StatusCode,
    retry_after: Option<Duration>,
    done: u32,
    waited: Duration,
    jitter: f64,
) -> Option<Duration> {
    let base = asked(status, retry_after, done)?.min(retries.each);
    let wait = base + base.div_f64(4.0).mul_f64(jitter.clamp(0.0, 1.0));
    (waited.saturating_add(wait) <= retries.total && !wait.is_zero()).then_some(wait)
}

/// A `Retry-After` in whole seconds (an HTTP date is not understood and
/// is taken as absent); bounded so no answer can ask for years.
pub(super) fn retry_after(value: Option<&hyper::header::HeaderValue>) -> Option<Duration> {
    let seconds: u64 = value?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds.min(24 * 3600)))
}

/// The daemon's reason in an error answer, one line, at most
/// [`MAX_REASON_CHARS`] characters.
pub(super) fn reason(status: StatusCode, body: &[u8]) -> String {
    let text = match serde_json::from_slice::<ErrorBody>(body) {
        Ok(body) => body.error,
        Err(_) => format!("the daemon answered {status}"),
    };
    let mut line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_REASON_CHARS + 1)
        .collect();
    if line.chars().count() > MAX_REASON_CHARS {
        line = line.chars().take(MAX_REASON_CHARS - 1).collect();
        line.push('…');
    }
    line
}

/// A fraction in 0..1 from the system's random source (0 without one).
pub(super) fn jitter() -> f64 {
    let mut bytes = [0u8; 2];
    match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u16::from_le_bytes(bytes)) / f64::from(u16::MAX),
        Err(_) => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn a_429_waits_what_it_asks_capped_and_a_400_or_bare_503_is_not_retried() {
        let r = Retries::default();
        let wait = |status, after, done, waited| next_wait(&r, status, after, done, waited, 0.0);
        assert_eq!(
            wait(StatusCode::TOO_MANY_REQUESTS, Some(S(5)), 0, S(0)),
            Some(S(5))
        );
        assert_eq!(
            wait(StatusCode::TOO_MANY_REQUESTS, Some(S(3600)), 0, S(0)),
            Some(S(30))
        );
        assert_eq!(
            wait(StatusCode::TOO_MANY_REQUESTS, None, 3, S(0)),
            Some(S(8))
        );
        assert_eq!(
            wait(StatusCode::SERVICE_UNAVAILABLE, Some(S(2)), 0, S(0)),
            Some(S(2))
        );
        assert_eq!(wait(StatusCode::SERVICE_UNAVAILABLE, None, 0, S(0)), None);
        assert_eq!(wait(StatusCode::BAD_REQUEST, Some(S(1)), 0, S(0)), None);
        assert_eq!(wait(StatusCode::CONFLICT, Some(S(1)), 0, S(0)), None);
        // The total is a bound: a wait that would pass it is not taken.
        assert_eq!(
            wait(StatusCode::TOO_MANY_REQUESTS, Some(S(30)), 4, S(100)),
            None
        );
        assert_eq!(
            wait(StatusCode::TOO_MANY_REQUESTS, Some(S(20)), 4, S(100)),
            Some(S(20))
        );
        // The jitter adds at most a quarter.
        let most = next_wait(&r, StatusCode::TOO_MANY_REQUESTS, Some(S(8)), 0, S(0), 1.0);
        assert_eq!(most, Some(S(10)));
        assert_eq!(
            next_wait(
                &Retries::none(),
                StatusCode::TOO_MANY_REQUESTS,
                Some(S(1)),
                0,
                S(0),
                0.0
            ),
            None
        );
    }

    #[test]
    fn retry_after_is_whole_seconds_and_bounded() {
        let header = |s: &'static str| hyper::header::HeaderValue::from_static(s);
        assert_eq!(retry_after(Some(&header(" 5"))), Some(S(5)));
        assert_eq!(
            retry_after(Some(&header("Wed, 21 Oct 2015 07:28:00 GMT"))),
            None
        );
        assert_eq!(
            retry_after(Some(&header("99999999999"))),
            Some(S(24 * 3600))
        );
        assert_eq!(retry_after(None), None);
    }

    #[test]
    fn the_reason_is_one_bounded_line() {
        let body = serde_json::json!({"error": format!("a\nb{}", "x".repeat(500)), "code": "too-many-requests"});
        let line = reason(StatusCode::TOO_MANY_REQUESTS, body.to_string().as_bytes());
        assert!(line.starts_with("a b"), "{line}");
        assert_eq!(line.chars().count(), MAX_REASON_CHARS);
        assert!(line.ends_with('…'));
        assert_eq!(
            reason(StatusCode::SERVICE_UNAVAILABLE, b"<html>"),
            "the daemon answered 503 Service Unavailable"
        );
    }

    /// A one-connection-at-a-time HTTP server on loopback that answers
    /// each request with the next of `answers` and keeps each request's
    /// body.
    fn scripted(
        answers: Vec<&'static str>,
    ) -> (std::net::SocketAddr, std::thread::JoinHandle<Vec<Vec<u8>>>) {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let mut bodies = Vec::new();
            for answer in answers {
                let (stream, _) = listener.accept().unwrap();
                let mut reader = BufReader::new(stream);
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    if line.trim().is_empty() {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                bodies.push(body);
                reader.get_mut().write_all(answer.as_bytes()).unwrap();
            }
            bodies
        });
        (addr, server)
    }

    fn answer(status: &str, retry_after: Option<u32>, error: &str) -> &'static str {
        let body = format!(r#"{{"error":"{error}","code":"too-many-requests"}}"#);
        let after = retry_after.map_or_else(String::new, |s| format!("Retry-After: {s}\r\n"));
        Box::leak(
            format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{after}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .into_boxed_str(),
        )
    }

    #[test]
    fn the_client_retries_a_429_with_the_whole_body_and_not_a_400() {
        let created = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnull";
        let (addr, server) = scripted(vec![
            answer("429 Too Many Requests", Some(1), "uploads are busy"),
            created,
        ]);
        let waits = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = waits.clone();
        let client = crate::api::Client::new(crate::api::Address::Tcp(addr), None)
            .unwrap()
            .with_retries(Retries::default(), move |w| {
                seen.lock().unwrap().push(w.clone())
            });
        let body = vec![7u8; 300_000];
        let started = std::time::Instant::now();
        client
            .call::<()>(
                hyper::Method::POST,
                "/v1/apps",
                Some(("application/gzip", body.clone())),
            )
            .unwrap();

        assert!(started.elapsed() >= S(1), "retried before Retry-After");
        let bodies = server.join().unwrap();
        assert_eq!(
            bodies,
            vec![body.clone(), body],
            "each attempt sends the whole body"
        );
        let waits = waits.lock().unwrap();
        assert_eq!(waits.len(), 1);
        assert_eq!((waits[0].status, waits[0].attempt), (429, 2));
        assert_eq!(waits[0].reason, "uploads are busy");
        assert!(waits[0].wait >= S(1) && waits[0].wait <= Duration::from_millis(1250));

        // A 400 is answered at once, once.
        let (addr, server) = scripted(vec![answer("400 Bad Request", Some(1), "no")]);
        let client = crate::api::Client::new(crate::api::Address::Tcp(addr), None)
            .unwrap()
            .with_retries(Retries::default(), |w| panic!("waited for a 400: {w:?}"));
        let error = client
            .call::<()>(
                hyper::Method::POST,
                "/v1/apps",
                Some(("application/gzip", vec![1])),
            )
            .unwrap_err();
        assert!(
            matches!(error, crate::api::ClientError::Status { status: 400, .. }),
            "{error:?}"
        );
        assert_eq!(server.join().unwrap().len(), 1);
    }
}
