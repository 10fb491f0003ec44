//! The router (every route wired to its handler, behind the
//! authentication and leader middleware) and the listeners it is served
//! on: a private unix socket, or TCP with a token and, off loopback, TLS.
//!
//! Handlers live in `handlers` (the JSON API) and `ui` (the status page),
//! the middleware in `auth`, the shared state in `state`.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};

use super::address::Address;
use super::auth::{authenticate, leader_only};
use super::error::{method_not_allowed, not_found};
use super::handlers as h;
use super::limits::Limits;
use super::session::Sessions;
use super::state::Api;
use super::throttle::Throttle;
use crate::lifecycle::Lifecycle;

pub use crate::bundle::MAX_BUNDLE_BYTES;
/// The largest JSON request body.
pub const MAX_JSON_BYTES: usize = 4 * 1024 * 1024;

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Listening on TCP without a token would let anyone on the network
    /// run operations.
    #[error("listening on {address} needs a bearer token (--token-file)")]
    TcpNeedsToken {
        /// The address.
        address: String,
    },
    /// A TCP listener off loopback without TLS would send the token in
    /// clear.
    #[error(
        "listening on {address} without TLS would send the token in clear; give --tls-cert and --tls-key, or --insecure-plain-http"
    )]
    PlainOffLoopback {
        /// The address.
        address: String,
    },
    /// TLS was asked for where it does not apply, or not given where the
    /// address asks for it.
    #[error("{0}")]
    TlsMismatch(String),
    /// Binding the address failed.
    #[error("cannot listen on {address}")]
    Bind {
        /// The address.
        address: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Serving failed.
    #[error("serving on {address} failed")]
    Serve {
        /// The address.
        address: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// The API's routes over `lifecycle`; with a `token`, every request must
/// carry `Authorization: Bearer TOKEN` (or, for a read, the status page's
/// session cookie).
pub fn router(lifecycle: Lifecycle, token: Option<String>) -> Router {
    router_with(lifecycle, token, false)
}

/// [`router`], with the status page's session cookie marked `Secure` when
/// `secure_cookie` (the listener speaks TLS).
pub fn router_with(lifecycle: Lifecycle, token: Option<String>, secure_cookie: bool) -> Router {
    router_limited(lifecycle, token, secure_cookie, Limits::default())
}

/// [`router_with`] under `limits` (the bundle size, the body timeout and
/// the upload bound are the router's; the connection limits are
/// [`serve_with`]'s).
pub fn router_limited(
    lifecycle: Lifecycle,
    token: Option<String>,
    secure_cookie: bool,
    limits: Limits,
) -> Router {
    let api = Api {
        lifecycle,
        token: token.map(Arc::from),
        sessions: Sessions::default(),
        secure_cookie,
        uploads: Arc::new(tokio::sync::Semaphore::new(limits.max_uploads.max(1))),
        limits: Arc::new(limits),
        throttle: Arc::new(Throttle::default()),
    };
    // Bundle bodies stream to the verifier under `limits` (see
    // `streamed_bundle`); no extractor buffers them.
    let bundles = Router::new()
        .route("/v1/apps", post(h::upload).get(h::list))
        .route("/v1/updates", post(h::update))
        .route("/v1/apps/{app}/diff", get(h::diff).post(h::diff_bundle));
    let rest = Router::new()
        .route("/v1/health", get(h::health))
        .route("/v1/openapi.json", get(super::openapi::serve))
        .route("/v1/facts", get(h::facts))
        .route("/metrics", get(h::metrics))
        .route("/v1/apps/{app}", get(h::show).delete(h::delete))
        .route("/v1/apps/{app}/apply", post(h::apply))
        .route("/v1/apps/{app}/remove", post(h::remove))
        .route("/v1/apps/{app}/abort", post(h::abort))
        .route("/v1/apps/{app}/recover", post(h::recover))
        .route("/v1/apps/{app}/rollback", post(h::rollback))
        .route("/v1/apps/{app}/pause", post(h::pause))
        .route("/v1/apps/{app}/resume", post(h::resume))
        .route("/v1/apps/{app}/history", get(h::history))
        .route("/v1/apps/{app}/operations/{id}", get(h::operation))
        .route("/v1/volumes", get(h::volume_list).post(h::volume_create))
        .route("/v1/platform/events", post(h::platform_event))
        .route(
            "/v1/volumes/{name}",
            axum::routing::delete(h::volume_remove),
        )
        .route("/v1/apps/{app}/overrides", get(h::override_list))
        .route(
            "/v1/apps/{app}/overrides/{chart}",
            get(h::override_show)
                .put(h::override_set)
                .delete(h::override_delete),
        )
        .layer(DefaultBodyLimit::max(MAX_JSON_BYTES));
    let page = Router::new()
        .route("/ui", get(super::ui::index))
        .route("/ui/", get(super::ui::index))
        .route(
            "/ui/login",
            get(super::ui::login_form).post(super::ui::login),
        )
        .route("/ui/apps/{app}", get(super::ui::app))
        .route("/ui/status.css", get(super::ui::style))
        .route("/ui/status.js", get(super::ui::script))
        .layer(DefaultBodyLimit::max(16 * 1024));
    bundles
        .merge(rest)
        .merge(page)
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(api.clone(), leader_only))
        .layer(middleware::from_fn_with_state(api.clone(), authenticate))
        // Probes: no token, so a kubelet and a Service can ask.
        .route("/healthz", get(h::healthz))
        .route("/readyz", get(h::readyz))
        .with_state(api)
}

/// Serves the API on `address` until `shutdown` completes. A unix socket
/// is created 0600 inside a fresh 0700 folder and renamed into place, so
/// no one else can connect in the moment between bind and chmod (a stale
/// socket file is replaced); TCP needs a token.
///
/// # Errors
/// [`ServeError`].
pub async fn serve(
    lifecycle: Lifecycle,
    address: &Address,
    token: Option<String>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    serve_with(lifecycle, address, token, Listen::default(), shutdown).await
}

/// How a listener speaks (TLS, or plain HTTP, allowed off loopback only
/// when asked) and what it allows its clients.
#[derive(Clone, Default)]
pub struct Listen {
    /// Serve HTTPS with this configuration ([`super::tls::server_config`]).
    pub tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    /// Allow plain HTTP on an address other than loopback.
    pub insecure_plain_http: bool,
    /// Sizes, timeouts and concurrency ([`Limits::default`] unless set).
    pub limits: Limits,
}

/// [`serve`] with TLS options and limits.
///
/// # Errors
/// As [`serve`]; [`ServeError::PlainOffLoopback`] for plain HTTP off
/// loopback without `insecure_plain_http`; [`ServeError::TlsMismatch`] for
/// TLS on a unix socket, or an `https://` address without TLS.
pub async fn serve_with(
    lifecycle: Lifecycle,
    address: &Address,
    token: Option<String>,
    listen: Listen,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let shown = address.to_string();
    let bind = |source| ServeError::Bind {
        address: shown.clone(),
        source,
    };
    let app = router_limited(
        lifecycle,
        token.clone(),
        listen.tls.is_some(),
        listen.limits.clone(),
    );
    match address {
        Address::Unix(_) if listen.tls.is_some() => Err(ServeError::TlsMismatch(format!(
            "TLS is for a TCP listener, not {shown}"
        ))),
        Address::Https(_) if listen.tls.is_none() => Err(ServeError::TlsMismatch(format!(
            "listening on {shown} needs --tls-cert and --tls-key"
        ))),
        Address::Unix(path) => {
            remove_stale_socket(path).map_err(bind)?;
            let listener = bind_private(path).map_err(bind)?;
            tracing::info!(target: "capstan::audit", address = %shown, "listening");
            super::conn::serve(
                super::conn::Accepting::Unix(listener),
                app,
                listen.limits,
                &shown,
                shutdown,
            )
            .await;
            let _ = std::fs::remove_file(path);
            Ok(())
        }
        Address::Tcp(addr) | Address::Https(addr) => {
            if token.is_none() {
                return Err(ServeError::TcpNeedsToken { address: shown });
            }
            if listen.tls.is_none() && !addr.ip().is_loopback() && !listen.insecure_plain_http {
                return Err(ServeError::PlainOffLoopback { address: shown });
            }
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(bind)?;
            let tls = listen.tls.map(tokio_rustls::TlsAcceptor::from);
            if tls.is_some() {
                tracing::info!(target: "capstan::audit", address = %shown, "listening (TLS)");
            } else {
                tracing::info!(target: "capstan::audit", address = %shown, "listening");
            }
            super::conn::serve(
                super::conn::Accepting::Tcp(listener, tls),
                app,
                listen.limits,
                &shown,
                shutdown,
            )
            .await;
            Ok(())
        }
    }
}

fn remove_stale_socket(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path),
        Ok(_) => Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "a file that is not a socket is in the way",
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Binds `path` with mode 0600 and no window in which another user could
/// connect: bound in a new 0700 folder beside it, chmodded, then renamed.
fn bind_private(path: &std::path::Path) -> std::io::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::DirBuilderExt;
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => std::path::Path::new("."),
    };
    let private = parent.join(format!(".sock{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&private);
    std::fs::DirBuilder::new().mode(0o700).create(&private)?;
    let inside = private.join("s");
    let bound = tokio::net::UnixListener::bind(&inside).and_then(|listener| {
        set_private(&inside)?;
        std::fs::rename(&inside, path)?;
        Ok(listener)
    });
    let _ = std::fs::remove_dir_all(&private);
    bound
}

fn set_private(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}
