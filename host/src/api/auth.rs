//! The middleware every request passes: authentication (a bearer token,
//! or the status page's session cookie for reads; a throttle on peers
//! that keep failing), the audit line of each change, and the refusal of
//! changes on a follower that does not lead.
//!
//! Must not decide what an operation may do: that is the lifecycle's.

use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use tracing::Instrument;

use super::error::ApiError;
use super::peer::Peer;
use super::session::{constant_time_eq, is_page, is_public};
use super::state::Api;
use super::wire::ErrorCode;
use crate::lifecycle;

/// Checks the bearer token (when the daemon has one) and runs the request
/// inside a span naming its method and path, so what the handler logs
/// (a refusal, an internal error) is tied to the request.
pub(super) async fn authenticate(State(api): State<Api>, request: Request, next: Next) -> Response {
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        path = %request.uri().path()
    );
    async move {
        let peer = request
            .extensions()
            .get::<axum::extract::ConnectInfo<Peer>>()
            .map(|info| info.0);
        let mut by_session = false;
        if let Some(token) = &api.token {
            let presented = request.headers().get(header::AUTHORIZATION);
            // The status page's session cookie admits reads only, so a
            // cookie can never start an operation; the login form and the
            // page's static files need neither.
            let path = request.uri().path();
            let read = matches!(*request.method(), Method::GET | Method::HEAD);
            let public = is_public(path);
            let session = read && api.sessions.admits(request.headers());
            // A peer that keeps presenting wrong tokens waits before its
            // next one is even compared (module `throttle`).
            if presented.is_some()
                && !public
                && !session
                && let Some(wait) = api.throttle.wait(peer.as_ref())
            {
                tracing::info!(peer = %describe(peer.as_ref()),
                    "request refused: the peer must wait after failed authentications");
                return ApiError::too_many(
                    format!(
                        "too many failed authentications from this peer; retry in {}s",
                        wait.as_secs().max(1)
                    ),
                    wait,
                )
                .into_response();
            }
            let given = presented
                .and_then(|v| v.to_str().ok())
                .and_then(bearer_credentials);
            let bearer =
                given.is_some_and(|given| constant_time_eq(given.as_bytes(), token.as_bytes()));
            by_session = !bearer && session;
            if bearer {
                api.throttle.succeeded(peer.as_ref());
            }
            if !bearer && !by_session && !public && read && is_page(path) {
                return Redirect::to("/ui/login").into_response();
            }
            if !(bearer || by_session || public) {
                if presented.is_some() {
                    let (failures, wait) = api.throttle.failed(peer.as_ref());
                    tracing::warn!(target: "capstan::audit", peer = %describe(peer.as_ref()), failures,
                        wait_secs = wait.map(|w| w.as_secs()),
                        "request with a wrong bearer token refused");
                } else {
                    tracing::warn!(peer = %describe(peer.as_ref()),
                        "request without a bearer token refused");
                }
                let mut response =
                    ApiError::new(ErrorCode::Unauthorized, "missing or wrong bearer token")
                        .into_response();
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
                return response;
            }
        }
        let mutating = request.method() != axum::http::Method::GET;
        let method = request.method().clone();
        let path = request.uri().path().to_owned();
        let response = next.run(request).await;
        if mutating {
            // The audit line: who (the unix socket peer's uid, or a token
            // holder over TCP and its address), what, and how it ended; at
            // the default log level.
            let who = who(by_session, api.token.is_some(), peer.as_ref());
            tracing::info!(target: "capstan::audit", who = who.as_str(), %method, path = %path,
                status = response.status().as_u16(), "request");
        }
        response
    }
    .instrument(span)
    .await
}

/// The credentials of an `Authorization: Bearer TOKEN` value: the scheme
/// in any case (RFC 9110 section 11.1), one or more spaces, then the token
/// as given (compared exactly). `None` for another scheme or no token.
fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, rest) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = rest.trim_start_matches(' ');
    (!token.is_empty()).then_some(token)
}

/// The audit line's `who`: `uid=N pid=P` on the unix socket (the kernel's
/// word for the peer), `bearer-token from ADDR` or `session from ADDR`
/// over TCP; without connection info (a router driven in tests),
/// `socket-owner`, `bearer-token` or `session`.
pub(super) fn who(by_session: bool, has_token: bool, peer: Option<&Peer>) -> String {
    let holder = if by_session {
        "session"
    } else if has_token {
        "bearer-token"
    } else {
        "socket-owner"
    };
    match peer {
        Some(unix @ Peer::Unix { .. }) => unix.describe(),
        Some(tcp @ Peer::Tcp(_)) => format!("{holder} from {}", tcp.describe()),
        None => holder.to_owned(),
    }
}

/// A peer for a log line: its address or uid, or `unknown` without
/// connection info.
pub(super) fn describe(peer: Option<&Peer>) -> String {
    peer.map_or_else(|| "unknown".to_owned(), Peer::describe)
}

/// The answer of a follower to a change: `503 not-leader`, naming the
/// leader when one is known. When none is known yet (an election is under
/// way) it carries `Retry-After` ([`NO_LEADER_RETRY_AFTER`]): asking again
/// here may succeed, and nothing was done (the CLI waits it out, module
/// `retry`). With a leader known, asking here again would not help.
pub(super) fn not_leader(leader: Option<&str>) -> ApiError {
    match leader {
        Some(leader) => ApiError::new(
            ErrorCode::NotLeader,
            format!(
                "this daemon does not lead; {leader} does: send changes to it (its GET /readyz \
                 answers 200)"
            ),
        ),
        None => ApiError {
            retry_after: Some(NO_LEADER_RETRY_AFTER),
            ..ApiError::new(
                ErrorCode::NotLeader,
                "this daemon does not lead, and no leader is known yet; retry shortly",
            )
        },
    }
}

/// The `Retry-After` of a follower's `503` while no leader is known: about
/// one Lease retry period.
pub(super) const NO_LEADER_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Refuses a change (any method but GET and HEAD, the status page's login
/// aside) on a follower, naming the leader.
pub(super) async fn leader_only(State(api): State<Api>, request: Request, next: Next) -> Response {
    let read = matches!(*request.method(), Method::GET | Method::HEAD);
    if read || is_public(request.uri().path()) {
        return next.run(request).await;
    }
    match api.lifecycle.role() {
        lifecycle::Role::Follower { leader } => not_leader(leader.as_deref()).into_response(),
        _ => next.run(request).await,
    }
}
