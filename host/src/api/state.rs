//! The state every handler and middleware of the API shares ([`Api`]):
//! the lifecycle, the token, the status page's sessions, the limits, the
//! upload slots and the failed-authentication throttle.
//!
//! Holds data only; the router that builds it is `server`'s, and the
//! files that read it (handlers, authentication, the status page) import
//! it from here, so none of them imports another for its state.

use std::sync::Arc;

use super::limits::Limits;
use super::session::Sessions;
use super::throttle::Throttle;
use crate::lifecycle::Lifecycle;

/// What the API's handlers share, cloned into each request.
#[derive(Clone)]
pub(super) struct Api {
    /// Where every request's work is done.
    pub(super) lifecycle: Lifecycle,
    /// The bearer token every request must carry (none on a unix socket).
    pub(super) token: Option<Arc<str>>,
    /// The status page's sessions (a TCP listener's login form).
    pub(super) sessions: Sessions,
    /// Whether the session cookie is marked `Secure` (TLS is on).
    pub(super) secure_cookie: bool,
    /// Body sizes, timeouts and the upload bound.
    pub(super) limits: Arc<Limits>,
    /// A slot per bundle upload allowed to stream at once.
    pub(super) uploads: Arc<tokio::sync::Semaphore>,
    /// Failed authentications per peer.
    pub(super) throttle: Arc<Throttle>,
}
