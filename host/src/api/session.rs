//! The status page's sessions: a TCP listener's token entered once in the
//! login form is answered with a random session id in a cookie that is
//! `HttpOnly`, `SameSite=Strict` and, with TLS, `Secure`; [`Sessions`]
//! remembers the ids handed out. Also which paths are the page's and
//! which are served without a session, and the constant-time comparison
//! every secret (a token, a session id) is checked with.
//!
//! Must not decide what a session may do: `auth` admits a session for
//! reads only.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, header};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "capstan_session";
/// The most sessions kept; the oldest is forgotten beyond it.
const MAX_SESSIONS: usize = 256;

/// The session ids handed out by the login form, newest last.
#[derive(Clone, Default)]
pub(super) struct Sessions(Arc<Mutex<VecDeque<String>>>);

impl Sessions {
    /// A new random session id, remembered.
    pub(super) fn create(&self) -> Option<String> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).ok()?;
        let id = hex::encode(bytes);
        let mut ids = self.0.lock().ok()?;
        if ids.len() >= MAX_SESSIONS {
            ids.pop_front();
        }
        ids.push_back(id.clone());
        Some(id)
    }

    /// Whether the request's cookie names a session handed out here.
    pub(super) fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(given) = session_of(headers) else {
            return false;
        };
        self.0.lock().is_ok_and(|ids| {
            ids.iter()
                .any(|id| constant_time_eq(id.as_bytes(), given.as_bytes()))
        })
    }
}

/// The session cookie's value in `headers`, if any.
fn session_of(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
}

/// Whether `path` is one of the page's HTML pages (a browser without a
/// session is sent to the login form rather than given a JSON 401).
pub(super) fn is_page(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

/// Paths served without a session: the login form and the static assets.
pub(super) fn is_public(path: &str) -> bool {
    matches!(path, "/ui/login" | "/ui/status.css" | "/ui/status.js")
}

/// The `Set-Cookie` value of a new session.
pub fn session_cookie(id: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict{secure}")
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths
/// only (a secret compared must not leak how much of it matched).
pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn the_session_cookie_is_http_only_strict_and_secure_with_tls() {
        assert_eq!(
            session_cookie("abc", false),
            "capstan_session=abc; Path=/; HttpOnly; SameSite=Strict"
        );
        assert!(session_cookie("abc", true).ends_with("; Secure"));
    }

    #[test]
    fn a_session_is_admitted_only_with_an_id_handed_out() {
        let sessions = Sessions::default();
        let id = sessions.create().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("other=1; {SESSION_COOKIE}={id}")).unwrap(),
        );
        assert!(sessions.admits(&headers));
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("capstan_session=forged"),
        );
        assert!(!sessions.admits(&headers));
        assert!(!sessions.admits(&HeaderMap::new()));
    }
}
