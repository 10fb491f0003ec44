//! Owns sending one request to the API server and retrying it: which
//! failures are transient, how long to wait between attempts, and when
//! to give up.
//!
//! Transient: 429 (waiting what `Retry-After` or `details.retryAfterSeconds`
//! asks), 500, 502, 503, 504, no answer within the per-request timeout, a
//! refused or reset connection. Everything else fails at once with the
//! verb, the object and the server's message: 400 and 422 (validation),
//! 403, 404 where the object must exist, 409 (a field-manager conflict
//! names each field and manager). Every request capstan sends is safe to
//! repeat: gets, server-side applies (idempotent by design), deletes (a
//! repeated delete's 404 means done).
//!
//! Backoff is capped exponential with "equal jitter": attempt `n` waits
//! between half and all of `min(max_delay, first_delay * 2^n)`, so a crowd
//! of retries spreads out yet never waits less than half the step. The
//! budget bounds the whole operation's elapsed time, waits included; a
//! `Retry-After` that would run past it gives up at once.
//!
//! kube's own retry layer is switched off ([`super::client`]) so there is
//! exactly one policy.

use std::time::{Duration, Instant};

use kube::client::Body;
use serde_json::Value;

use super::error::{Error, FieldConflict, Transient, Verb, field_conflicts};
use crate::kube::ObjectRef;

/// Retry settings of one operation (one request, retried).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The step of the first retry. Default 200 ms.
    pub first_delay: Duration,
    /// The largest step. Default 5 s.
    pub max_delay: Duration,
    /// The most time one operation may take, retries and waits included.
    /// Default 60 s.
    pub budget: Duration,
    /// How long one request may take before it counts as a transient
    /// failure. Default 20 s.
    pub request_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            first_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(5),
            budget: Duration::from_secs(60),
            request_timeout: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (0 for the first retry),
    /// with `jitter` in `[0, 1)`: between half and all of the capped
    /// exponential step.
    pub fn backoff(&self, attempt: u32, jitter: f64) -> Duration {
        let step = self
            .first_delay
            .saturating_mul(2u32.saturating_pow(attempt.min(31)))
            .min(self.max_delay);
        let jitter = jitter.clamp(0.0, 1.0);
        step / 2 + step.mul_f64(jitter / 2.0)
    }
}

/// What to do with an HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// 2xx.
    Success,
    /// 404: the caller decides whether that is an answer or an error.
    NotFound,
    /// Worth retrying.
    Transient,
    /// Fails at once.
    Permanent,
}

/// The class of an HTTP status code.
pub fn classify(code: u16) -> Class {
    match code {
        200..=299 => Class::Success,
        404 => Class::NotFound,
        429 | 500 | 502 | 503 | 504 => Class::Transient,
        _ => Class::Permanent,
    }
}

/// The wait a 429/503 answer asks for: the `Retry-After` header in
/// seconds (an HTTP date is not honoured), else the `Status`'s
/// `details.retryAfterSeconds`.
pub fn retry_after(header: Option<&str>, status: Option<&Value>) -> Option<Duration> {
    header
        .and_then(|h| h.trim().parse::<u64>().ok())
        .or_else(|| {
            status
                .and_then(|s| s.pointer("/details/retryAfterSeconds"))
                .and_then(Value::as_u64)
                .filter(|s| *s > 0)
        })
        .map(Duration::from_secs)
}

/// A successful answer.
#[derive(Debug)]
pub enum Answer {
    /// 2xx with its body.
    Found(Value),
    /// 404.
    NotFound,
}

/// What a request is about, for errors.
#[derive(Debug, Clone)]
pub struct Op<'a> {
    /// The verb.
    pub verb: Verb,
    /// The object or path, as errors name it.
    pub target: String,
    /// The object, when the request is about one (for conflicts).
    pub object: Option<&'a ObjectRef>,
}

/// Sends the request `build` makes, retrying transient failures under
/// `policy`; 404 is an [`Answer::NotFound`], not an error. An empty 2xx
/// body is `null`.
///
/// # Errors
/// [`Error::BuildRequest`] when `build` fails; [`Error::Refused`],
/// [`Error::FieldConflict`] or [`Error::Immutable`] for a permanent
/// failure; [`Error::GaveUp`] when the budget runs out;
/// [`Error::Decode`] for a 2xx body that is not JSON.
pub async fn send<F>(
    client: &kube::Client,
    policy: &RetryPolicy,
    op: &Op<'_>,
    build: F,
) -> Result<Answer, Error>
where
    F: Fn() -> Result<http::Request<Vec<u8>>, kube::core::request::Error>,
{
    let started = Instant::now();
    let mut attempts = 0u32;
    loop {
        let request = build().map_err(|source| Error::BuildRequest {
            verb: op.verb,
            target: op.target.clone(),
            source,
        })?;
        attempts += 1;
        let (failure, asked) = match attempt(client, policy, request).await {
            Ok((code, header, body)) => match classify(code) {
                Class::Success => return decode(op, &body),
                Class::NotFound => return Ok(Answer::NotFound),
                Class::Transient => {
                    let status = serde_json::from_slice::<Value>(&body).ok();
                    let asked = retry_after(header.as_deref(), status.as_ref());
                    let message = server_message(status.as_ref(), &body);
                    (Transient::Status { code, message }, asked)
                }
                Class::Permanent => return Err(refused(op, code, &body)),
            },
            Err(transient) => (transient, None),
        };
        let elapsed = started.elapsed();
        let wait = asked.unwrap_or_else(|| policy.backoff(attempts - 1, jitter()));
        if elapsed + wait >= policy.budget {
            return Err(Error::GaveUp {
                verb: op.verb,
                target: op.target.clone(),
                attempts,
                elapsed,
                last: failure,
            });
        }
        tracing::debug!(verb = %op.verb, target = %op.target, attempts, ?wait, "retrying: {failure}");
        tokio::time::sleep(wait).await;
    }
}

/// One request: its status, `Retry-After` header and body, or the
/// transient failure that prevented an answer.
async fn attempt(
    client: &kube::Client,
    policy: &RetryPolicy,
    request: http::Request<Vec<u8>>,
) -> Result<(u16, Option<String>, Vec<u8>), Transient> {
    let exchange = async {
        let response = client
            .send(request.map(Body::from))
            .await
            .map_err(Transient::Connection)?;
        let code = response.status().as_u16();
        let header = response
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|h| h.to_str().ok())
            .map(str::to_string);
        let body = response
            .into_body()
            .collect_bytes()
            .await
            .map_err(Transient::Connection)?;
        Ok((code, header, body.to_vec()))
    };
    match tokio::time::timeout(policy.request_timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(Transient::Timeout {
            after: policy.request_timeout,
        }),
    }
}

fn decode(op: &Op<'_>, body: &[u8]) -> Result<Answer, Error> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Answer::Found(Value::Null));
    }
    serde_json::from_slice(body)
        .map(Answer::Found)
        .map_err(|source| Error::Decode {
            verb: op.verb,
            target: op.target.clone(),
            source,
        })
}

/// The error for a permanent failure: a field conflict when the 409
/// names fields, an immutable-field refusal when the 422 says so, else
/// [`Error::Refused`] with the server's message.
fn refused(op: &Op<'_>, code: u16, body: &[u8]) -> Error {
    let status = serde_json::from_slice::<Value>(body).ok();
    let message = server_message(status.as_ref(), body);
    let reason = status
        .as_ref()
        .and_then(|s| s.get("reason"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if let Some(object) = op.object {
        let conflicts: Vec<FieldConflict> =
            status.as_ref().map(field_conflicts).unwrap_or_default();
        if code == 409 && !conflicts.is_empty() {
            return Error::FieldConflict {
                object: Box::new(object.clone()),
                conflicts,
            };
        }
        if code == 422 && is_immutable(&message) {
            let field = status
                .as_ref()
                .and_then(|s| s.pointer("/details/causes/0/field"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            return Error::Immutable {
                object: Box::new(object.clone()),
                field,
                message,
            };
        }
    }
    Error::Refused {
        verb: op.verb,
        target: op.target.clone(),
        code,
        reason,
        message,
    }
}

/// Whether a 422's message refuses a change to an immutable field, as
/// the API server words it for StatefulSets, Jobs, Services and
/// generic immutable fields.
pub fn is_immutable(message: &str) -> bool {
    message.contains("is immutable")
        || message.contains("updates to statefulset spec for fields other than")
        || message.contains("may not change once set")
}

/// The `Status`'s message, else the body's first 200 characters.
fn server_message(status: Option<&Value>, body: &[u8]) -> String {
    if let Some(message) = status
        .and_then(|s| s.get("message"))
        .and_then(Value::as_str)
    {
        return message.to_string();
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(200) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None if text.is_empty() => "(empty answer)".to_string(),
        None => text.to_string(),
    }
}

/// A fraction in `[0, 1)` from the OS's random source (0.5 if it fails).
fn jitter() -> f64 {
    match getrandom::u64() {
        Ok(n) => (n >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn statuses_are_classified() {
        for code in [200, 201, 202] {
            assert_eq!(classify(code), Class::Success);
        }
        assert_eq!(classify(404), Class::NotFound);
        for code in [429, 500, 502, 503, 504] {
            assert_eq!(classify(code), Class::Transient, "{code}");
        }
        for code in [400, 401, 403, 405, 409, 410, 415, 422, 501] {
            assert_eq!(classify(code), Class::Permanent, "{code}");
        }
    }

    #[test]
    fn backoff_is_capped_exponential_with_equal_jitter() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.backoff(0, 0.0), Duration::from_millis(100));
        assert_eq!(policy.backoff(0, 1.0), Duration::from_millis(200));
        assert_eq!(policy.backoff(3, 0.0), Duration::from_millis(800));
        assert_eq!(policy.backoff(3, 1.0), Duration::from_millis(1600));
        for attempt in 0..64 {
            for jitter in [0.0, 0.25, 0.5, 0.999, 1.0] {
                let wait = policy.backoff(attempt, jitter);
                assert!(wait <= policy.max_delay, "{attempt} {jitter}");
                assert!(wait >= policy.first_delay / 2);
            }
        }
        assert_eq!(policy.backoff(40, 0.0), policy.max_delay / 2);
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j));
        }
    }

    #[test]
    fn retry_after_comes_from_the_header_or_the_status() {
        assert_eq!(retry_after(Some(" 3"), None), Some(Duration::from_secs(3)));
        let status = json!({"details": {"retryAfterSeconds": 2}});
        assert_eq!(
            retry_after(None, Some(&status)),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT"), None),
            None
        );
        assert_eq!(retry_after(None, Some(&json!({}))), None);
    }

    #[test]
    fn permanent_failures_name_verb_object_and_message() {
        let id = ObjectRef {
            api_version: "apps/v1".into(),
            kind: "StatefulSet".into(),
            namespace: Some("db".into()),
            name: "pg".into(),
        };
        let op = Op {
            verb: Verb::Apply,
            target: id.to_string(),
            object: Some(&id),
        };
        let body = json!({"kind": "Status", "code": 422, "reason": "Invalid",
            "message": "StatefulSet.apps \"pg\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"});
        let err = refused(&op, 422, body.to_string().as_bytes());
        assert!(matches!(err, Error::Immutable { .. }), "{err}");
        let body = json!({"kind": "Status", "code": 403, "reason": "Forbidden",
            "message": "statefulsets.apps \"pg\" is forbidden: User \"ci\" cannot patch resource"});
        let err = refused(&op, 403, body.to_string().as_bytes());
        assert_eq!(
            err.to_string(),
            "apply StatefulSet db/pg (apps/v1) refused with 403 Forbidden: statefulsets.apps \"pg\" is forbidden: User \"ci\" cannot patch resource"
        );
        let err = refused(&op, 400, b"<html>bad gateway</html>");
        assert!(
            err.to_string().ends_with(": <html>bad gateway</html>"),
            "{err}"
        );
    }
}
