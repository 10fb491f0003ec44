//! The daemon's HTTP JSON API (documented in `docs/api.md`) and the client
//! the CLI reaches it with.
//!
//! Owns: routes, authentication (a unix socket created 0600, or TCP with a
//! bearer token on every request), turning lifecycle errors into HTTP
//! statuses with a one-line JSON error, request size limits, the
//! `/metrics` text, and where the daemon listens. Every request is handed
//! to [`crate::lifecycle::Lifecycle`] on a blocking thread: the lifecycle
//! does file, database and plugin work, none of which may stall the async
//! runtime.
//!
//! Must not touch: the store, bundles or plugins directly; every rule about
//! what an operation may do belongs to `lifecycle`.

mod address;
mod client;
mod server;

pub use address::{Address, default_state_dir};
pub use client::{Client, ClientError, Response};
pub use server::{MAX_BUNDLE_BYTES, MAX_JSON_BYTES, ServeError, router, serve};

/// The error body of every failed request: `{"error": "one line"}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ErrorBody {
    /// What went wrong, for a person.
    pub error: String,
}

/// The body of `202 Accepted` for a started operation.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StartedBody {
    /// The app as the operation began.
    pub app: crate::store::AppRecord,
    /// The operation's id; poll `/v1/apps/{app}/operations/{id}`.
    pub operation: crate::store::OperationId,
}
