//! What the daemon allows one client: the size and pace of a request body,
//! how many bundle uploads stream at once, how long a connection may take
//! to send a request or sit idle, how many connections a listener holds,
//! and how fast one peer may guess the bearer token.
//!
//! Every limit has a `DEFAULT_*` constant with the reason for its value,
//! and a `capstan serve` flag (docs/src/reference/limits.md, "The API"). The defaults are
//! the safe choice for a daemon on a platform's controller; tests set them
//! low so a limit is reached in milliseconds.
//!
//! What the limits do not cover: the work an operation does once admitted
//! (render, plugin and apply limits are the lifecycle's), TLS handshakes
//! (their own [`super::tls::HANDSHAKE_TIMEOUT`]), and clients that open
//! connections faster than the kernel's backlog drains (a firewall's job).

use std::time::Duration;

/// Default for [`Limits::max_bundle_bytes`]: 256 MiB of compressed bundle,
/// well above an app of charts and plugins (a few MiB) and below the
/// verifier's 512 MiB of unpacked files.
pub const DEFAULT_MAX_BUNDLE_BYTES: u64 = crate::bundle::MAX_BUNDLE_BYTES as u64;
/// Default for [`Limits::max_uploads`]: bundle uploads streaming at once.
/// Each holds a staging folder and a verifier's buffers (about 1 MiB) and
/// hashes on a blocking thread; four keep two cores busy without starving
/// the other requests.
pub const DEFAULT_MAX_UPLOADS: usize = 4;
/// Default for [`Limits::body_timeout`]: a request body that sends no byte
/// for this long is cut off (a stalled upload holds a staging folder and
/// an upload slot).
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default for [`Limits::header_timeout`]: from a request's first byte to
/// the end of its headers. A client that sends half a request line and
/// stops holds a file descriptor until then.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`Limits::idle_timeout`]: a kept-alive connection with no
/// request in progress and no byte in either direction for this long is
/// closed.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default for [`Limits::max_connections`]: open connections per
/// listener. Below the usual 1,024 file descriptors a process starts
/// with, so a flood of connections cannot take the descriptors the store
/// and the plugins need.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Failed authentications one peer may make before it must wait; a
/// success forgets them.
pub const AUTH_FAILURES_FREE: u32 = 5;
/// The first wait after [`AUTH_FAILURES_FREE`] failures; each further
/// failure doubles it, up to [`AUTH_MAX_WAIT`].
pub const AUTH_FIRST_WAIT: Duration = Duration::from_secs(1);
/// The longest wait a peer is given after failed authentications.
pub const AUTH_MAX_WAIT: Duration = Duration::from_secs(30);
/// The `Retry-After` of a `429` for an upload past [`Limits::max_uploads`].
pub const UPLOAD_RETRY_AFTER: Duration = Duration::from_secs(5);

/// Limits on clients of one listener. [`Limits::default`] gives the
/// `DEFAULT_*` constants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest bundle body (`POST /v1/apps`, `/v1/updates`,
    /// `/v1/apps/{app}/diff`), counted as it streams; past it, `413`.
    /// Default [`DEFAULT_MAX_BUNDLE_BYTES`].
    pub max_bundle_bytes: u64,
    /// Bundle uploads streaming at once; past it, `429` with
    /// `Retry-After`. Default [`DEFAULT_MAX_UPLOADS`].
    pub max_uploads: usize,
    /// Longest wait for the next byte of a request body; past it, `408`
    /// and the connection is closed. Default [`DEFAULT_BODY_TIMEOUT`].
    pub body_timeout: Duration,
    /// Longest time from a request's first byte to the end of its
    /// headers; past it, the connection is closed without an answer.
    /// Default [`DEFAULT_HEADER_TIMEOUT`].
    pub header_timeout: Duration,
    /// Longest time a connection may sit with no request in progress and
    /// no byte moving. Default [`DEFAULT_IDLE_TIMEOUT`].
    pub idle_timeout: Duration,
    /// Connections open at once on the listener; a connection past it is
    /// closed as soon as it is accepted, and a warning is logged. Default
    /// [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bundle_bytes: DEFAULT_MAX_BUNDLE_BYTES,
            max_uploads: DEFAULT_MAX_UPLOADS,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}
