//! The daemon's HTTP JSON API (documented in `docs/src/reference/http-api.md`) and the typed
//! client the CLI reaches it with.
//!
//! Owns: routes, authentication (a unix socket created 0600, or TCP with a
//! bearer token on every request, over TLS unless the listener is on
//! loopback or plain HTTP was asked for), turning lifecycle errors into HTTP
//! statuses with a one-line JSON error and a stable code, request size
//! limits, the `/metrics` text, and where the daemon listens. Every
//! request and answer body is a type in [`wire`], shared by the server and
//! [`Client`]. Every request is handed to [`crate::lifecycle::Lifecycle`]
//! on a blocking thread: the lifecycle does file, database and plugin
//! work, none of which may stall the async runtime.
//!
//! Routes (bodies in [`wire`]):
//!
//! ```text
//! GET    /v1/health                           Health
//! GET    /v1/openapi.json                     this API's OpenAPI 3.1 document
//! GET    /v1/facts                            the facts in effect and where they came from
//! GET    /metrics                             Prometheus text
//! GET    /v1/apps                             [AppRecord]
//! POST   /v1/apps                   bundle    AppRecord (201)
//! GET    /v1/apps/{app}                       AppDetails
//! DELETE /v1/apps/{app}                       (204)
//! POST   /v1/apps/{app}/apply       ApplyRequest   Started (202)
//! POST   /v1/apps/{app}/remove      RemoveRequest  Started (202)
//! POST   /v1/updates?UpdateQuery    bundle    Started (202)
//! POST   /v1/apps/{app}/abort                 AppRecord (202)
//! POST   /v1/apps/{app}/recover               Started (202)
//! POST   /v1/apps/{app}/pause       PauseRequest   AppRecord (automatic operations stop)
//! POST   /v1/apps/{app}/resume      PauseRequest   AppRecord (automatic operations run again)
//! GET    /v1/apps/{app}/history               [HistoryEntry]
//! GET    /v1/apps/{app}/operations/{id}       HistoryEntry
//! GET    /v1/apps/{app}/diff                  [ChartDiff]
//! GET    /v1/apps/{app}/overrides             [OverrideSummary]
//! GET    /v1/apps/{app}/overrides/{chart}     ChartOverrides
//! PUT    /v1/apps/{app}/overrides/{chart}  OverrideSet  ChartOverrides
//! DELETE /v1/apps/{app}/overrides/{chart}     Deleted
//! GET    /ui                                  status page (HTML, docs/src/operating/status-page.md)
//! GET    /ui/apps/{app}                       status page of one app
//! GET    /ui/login                  POST form  the page's token form (TCP only)
//! GET    /v1/volumes                          [VolumeView]
//! POST   /v1/volumes                VolumeRequest  VolumeView (201)
//! DELETE /v1/volumes/{name}?VolumeRemoveQuery VolumeView
//! ```
//!
//! Every error answer is a [`wire::ErrorBody`].
//!
//! Must not touch: the store, bundles or plugins directly; every rule about
//! what an operation may do belongs to `lifecycle`.

mod address;
mod auth;
#[cfg(test)]
mod auth_tests;
mod body;
mod client;
mod conn;
mod error;
mod handlers;
pub mod limits;
pub mod openapi;
mod peer;
pub mod retry;
mod server;
mod session;
mod state;
#[cfg(test)]
mod tests;
mod throttle;
pub mod tls;
pub mod ui;
pub mod wire;

pub use address::{Address, default_state_dir};
pub use client::{Client, ClientError, Response, encode_segment};
pub use conn::DRAIN_TIMEOUT;
pub use limits::Limits;
pub use peer::Peer;
pub use server::{
    Listen, MAX_BUNDLE_BYTES, MAX_JSON_BYTES, ServeError, router, router_limited, router_with,
    serve, serve_with,
};
pub use wire::{ErrorBody, ErrorCode};

/// The body of `202 Accepted` for a started operation; see [`wire::Started`].
pub type StartedBody = wire::Started;
