//! The routes, their handlers, authentication and error mapping.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::de::DeserializeOwned;
use tracing::Instrument;

use super::Address;
use super::body::{BodyReader, Cut, Streamed};
use super::limits::{Limits, UPLOAD_RETRY_AFTER};
use super::peer::Peer;
use super::throttle::Throttle;
use super::wire::{self, ErrorBody, ErrorCode};
use crate::lifecycle::{self, ErrorClass, Lifecycle, Started};
use crate::model::AppName;
use crate::store::OperationId;

/// The largest bundle accepted by upload and update (compressed) by
/// default; [`Limits::max_bundle_bytes`] sets another.
pub const MAX_BUNDLE_BYTES: usize = 256 * 1024 * 1024;
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

#[derive(Clone)]
pub(super) struct Api {
    pub(super) lifecycle: Lifecycle,
    pub(super) token: Option<Arc<str>>,
    /// The status page's sessions (a TCP listener's login form).
    pub(super) sessions: super::ui::Sessions,
    /// Whether the session cookie is marked `Secure` (TLS is on).
    pub(super) secure_cookie: bool,
    /// Body sizes, timeouts and the upload bound.
    pub(super) limits: Arc<Limits>,
    /// A slot per bundle upload allowed to stream at once.
    pub(super) uploads: Arc<tokio::sync::Semaphore>,
    /// Failed authentications per peer.
    pub(super) throttle: Arc<Throttle>,
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
        sessions: super::ui::Sessions::default(),
        secure_cookie,
        uploads: Arc::new(tokio::sync::Semaphore::new(limits.max_uploads.max(1))),
        limits: Arc::new(limits),
        throttle: Arc::new(Throttle::default()),
    };
    // Bundle bodies stream to the verifier under `limits` (see
    // `streamed_bundle`); no extractor buffers them.
    let bundles = Router::new()
        .route("/v1/apps", post(upload).get(list))
        .route("/v1/updates", post(update))
        .route("/v1/apps/{app}/diff", get(diff).post(diff_bundle));
    let rest = Router::new()
        .route("/v1/health", get(health))
        .route("/v1/openapi.json", get(super::openapi::serve))
        .route("/v1/facts", get(facts))
        .route("/metrics", get(metrics))
        .route("/v1/apps/{app}", get(show).delete(delete))
        .route("/v1/apps/{app}/apply", post(apply))
        .route("/v1/apps/{app}/remove", post(remove))
        .route("/v1/apps/{app}/abort", post(abort))
        .route("/v1/apps/{app}/recover", post(recover))
        .route("/v1/apps/{app}/rollback", post(rollback))
        .route("/v1/apps/{app}/history", get(history))
        .route("/v1/apps/{app}/operations/{id}", get(operation))
        .route("/v1/volumes", get(volume_list).post(volume_create))
        .route("/v1/platform/events", post(platform_event))
        .route("/v1/volumes/{name}", axum::routing::delete(volume_remove))
        .route("/v1/apps/{app}/overrides", get(override_list))
        .route(
            "/v1/apps/{app}/overrides/{chart}",
            get(override_show).put(override_set).delete(override_delete),
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
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
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

// ---- errors ----

/// A failed request: a stable code (which decides the status) and one line.
#[derive(Debug)]
pub(super) struct ApiError {
    pub(super) code: ErrorCode,
    pub(super) message: String,
    /// A `Retry-After` for the answer (a `429`).
    pub(super) retry_after: Option<Duration>,
}

impl ApiError {
    pub(super) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// `429`: come back after `wait`.
    pub(super) fn too_many(message: impl Into<String>, wait: Duration) -> Self {
        ApiError {
            retry_after: Some(wait),
            ..ApiError::new(ErrorCode::TooManyRequests, message)
        }
    }

    pub(super) fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::BadRequest, message)
    }
}

/// The code of a lifecycle error: by its variant where the variant is a
/// cause of its own, else by its class.
pub(super) fn code_of(error: &lifecycle::Error) -> ErrorCode {
    use crate::store::Error as S;
    use lifecycle::Error as L;
    match error {
        L::Ended { source, .. } => match code_of(source) {
            ErrorCode::Internal => ErrorCode::Conflict,
            code => code,
        },
        L::Store(S::Busy { .. }) | L::Busy { .. } => ErrorCode::Busy,
        L::Store(S::IllegalTransition { .. }) | L::NothingToAbort { .. } => {
            ErrorCode::IllegalTransition
        }
        L::Store(S::AppExists { .. } | S::VersionExists { .. } | S::VolumeExists { .. }) => {
            ErrorCode::AlreadyExists
        }
        L::Store(S::VersionInUse { .. }) | L::VolumeInUse { .. } => ErrorCode::InUse,
        L::Upgrade { .. } => ErrorCode::UpgradeNotAllowed,
        L::Rollback { .. } => ErrorCode::Conflict,
        L::Bundle(_) | L::AppName { .. } | L::WrongApp { .. } => ErrorCode::InvalidBundle,
        L::Vetoed { .. } => ErrorCode::Vetoed,
        L::Store(S::NotLeading | S::Fenced) => ErrorCode::NotLeader,
        _ => match error.class() {
            ErrorClass::BadRequest => ErrorCode::Invalid,
            ErrorClass::NotFound => ErrorCode::NotFound,
            ErrorClass::Conflict => ErrorCode::Conflict,
            ErrorClass::Failed => ErrorCode::Failed,
            ErrorClass::Internal => ErrorCode::Internal,
        },
    }
}

impl From<lifecycle::Error> for ApiError {
    fn from(error: lifecycle::Error) -> Self {
        ApiError::new(code_of(&error), error.one_line())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.code.status();
        if status.is_server_error() && self.code != ErrorCode::NotLeader {
            tracing::error!(%status, code = %self.code, error = %self.message, "request failed");
        } else {
            tracing::info!(%status, code = %self.code, error = %self.message, "request refused");
        }
        let body = ErrorBody {
            error: self.message,
            code: self.code,
        };
        let mut response = (status, axum::Json(body)).into_response();
        if let Some(wait) = self.retry_after {
            // Whole seconds, rounded up: a client never retries early.
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(secs.max(1)));
        }
        if matches!(
            self.code,
            ErrorCode::RequestTimeout | ErrorCode::PayloadTooLarge
        ) {
            // The rest of the body is not read: the connection cannot
            // carry another request.
            response.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
        }
        response
    }
}

type ApiResult = Result<Response, ApiError>;

async fn not_found() -> ApiError {
    ApiError::new(
        ErrorCode::UnknownEndpoint,
        "no such endpoint; see docs/src/reference/http-api.md",
    )
}

async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!(
            "{} does not take {}; see docs/src/reference/http-api.md",
            request.uri().path(),
            request.method()
        ),
    )
}

// ---- authentication ----

/// Checks the bearer token (when the daemon has one) and runs the request
/// inside a span naming its method and path, so what the handler logs
/// (a refusal, an internal error) is tied to the request.
async fn authenticate(State(api): State<Api>, request: Request, next: Next) -> Response {
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
            let public = super::ui::is_public(path);
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
            if !bearer && !by_session && !public && read && super::ui::is_page(path) {
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
fn who(by_session: bool, has_token: bool, peer: Option<&Peer>) -> String {
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

pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

// ---- helpers ----

/// The body, or the reason it could not be read (413 when too large).
fn body_of(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| {
        if let Some(waited) = super::body::stalled_in(&rejection) {
            return stalled(waited);
        }
        let code = if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ErrorCode::PayloadTooLarge
        } else {
            ErrorCode::BadRequest
        };
        ApiError::new(code, rejection.body_text())
    })
}

/// The path's segments, or why they could not be read (bad percent-encoding,
/// not UTF-8).
fn path_of<T>(path: Result<Path<T>, PathRejection>) -> Result<T, ApiError> {
    path.map(|Path(segments)| segments)
        .map_err(|rejection| ApiError::bad_request(rejection.body_text()))
}

/// The query, or why it is not one this endpoint takes.
fn query_of<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    query
        .map(|Query(query)| query)
        .map_err(|rejection| ApiError::bad_request(rejection.body_text()))
}

fn stalled(waited: Duration) -> ApiError {
    ApiError::new(
        ErrorCode::RequestTimeout,
        format!(
            "the request body stalled: no byte for {}s",
            waited.as_secs_f32()
        ),
    )
}

fn too_large(limit: u64) -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        format!("the bundle is larger than this daemon's limit of {limit} bytes"),
    )
}

/// Streams a bundle body into `work` (the lifecycle, on a blocking
/// thread), never whole in memory: refused at once with `413` when its
/// `Content-Length` is past the limit and with `429` when
/// [`Limits::max_uploads`] are already streaming; cut off with `413` past
/// the limit as it arrives and with `408` when it stalls.
async fn streamed_bundle<T: Send + 'static>(
    api: &Api,
    headers: &HeaderMap,
    body: Body,
    work: impl FnOnce(BodyReader) -> Result<T, lifecycle::Error> + Send + 'static,
) -> Result<T, ApiError> {
    let limit = api.limits.max_bundle_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit) {
        return Err(too_large(limit));
    }
    let Ok(_slot) = Arc::clone(&api.uploads).try_acquire_owned() else {
        tracing::info!(
            limit = api.limits.max_uploads,
            "bundle upload refused: the upload slots are taken"
        );
        return Err(ApiError::too_many(
            format!(
                "{} bundle uploads are already streaming, this daemon's limit; retry later",
                api.limits.max_uploads
            ),
            UPLOAD_RETRY_AFTER,
        ));
    };
    let (streamed, reader) = Streamed::start(body, limit);
    let result = blocking(move || work(reader)).await;
    match (result, streamed.cut()) {
        (Ok(value), _) => Ok(value),
        (Err(_), Some(Cut::TooLarge { limit })) => Err(too_large(limit)),
        (Err(_), Some(Cut::Stalled { waited })) => Err(stalled(waited)),
        (Err(e), _) => Err(e),
    }
}

fn app_name(text: &str) -> Result<AppName, ApiError> {
    AppName::new(text).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// A request's JSON object; no body at all is the request's default. A
/// body of only whitespace is not JSON and is refused like any other
/// (schemathesis sent `\r` to `apply` and it was taken as the default).
fn parse_json<T: DeserializeOwned + Default>(body: &Bytes) -> Result<T, ApiError> {
    if body.is_empty() {
        return Ok(T::default());
    }
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("request body is not valid JSON: {e}")))?;
    // serde reads a struct from an array of its fields in order too; every
    // body of this API is an object, as the OpenAPI document says.
    if !value.is_object() {
        return Err(ApiError::bad_request("request body must be a JSON object"));
    }
    serde_json::from_value(value)
        .map_err(|e| ApiError::bad_request(format!("request body is not valid JSON: {e}")))
}

fn json(status: StatusCode, value: &impl serde::Serialize) -> ApiResult {
    Ok((status, axum::Json(value)).into_response())
}

/// Runs lifecycle work on a blocking thread.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, lifecycle::Error> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(ApiError::from),
        Err(e) => Err(ApiError::new(
            ErrorCode::Internal,
            format!("request handler failed: {e}"),
        )),
    }
}

fn started(started: Started) -> ApiResult {
    let body = wire::Started {
        app: started.app.clone(),
        operation: started.operation,
        warnings: started.warnings.clone(),
    };
    json(StatusCode::ACCEPTED, &body)
}

/// The [`wire::SOURCE_HEADER`]: absent, or a registry reference pinned to
/// a digest.
fn source_of(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(wire::SOURCE_HEADER) else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| {
        ApiError::bad_request(format!("{} header is not ASCII", wire::SOURCE_HEADER))
    })?;
    let reference: crate::oci::Reference = text.parse().map_err(|e: crate::oci::Error| {
        ApiError::bad_request(format!("{} header {e}", wire::SOURCE_HEADER))
    })?;
    if reference.tag().is_some() {
        return Err(ApiError::bad_request(format!(
            "{} header {text:?} names a tag; send the digest it resolved to",
            wire::SOURCE_HEADER
        )));
    }
    Ok(Some(reference.to_string()))
}

fn check_bundle_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or(wire::BUNDLE_CONTENT_TYPE);
    let ok = [
        wire::BUNDLE_CONTENT_TYPE,
        "application/x-gzip",
        "application/octet-stream",
    ]
    .iter()
    .any(|t| content_type.starts_with(t));
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            format!("a bundle is sent as application/gzip, not {content_type}"),
        ))
    }
}

// ---- handlers ----

type AppPath = Result<Path<String>, PathRejection>;
type AppAndPath = Result<Path<(String, String)>, PathRejection>;

async fn health() -> ApiResult {
    json(StatusCode::OK, &wire::Health::ok())
}

/// `GET /healthz`: 200 from any live daemon.
async fn healthz() -> ApiResult {
    json(StatusCode::OK, &wire::Health::ok())
}

/// `GET /readyz`: 200 where changes are taken (the leader, or the only
/// daemon), so a Service routes to it; 503 `not-leader` elsewhere.
async fn readyz(State(api): State<Api>) -> ApiResult {
    match api.lifecycle.role() {
        lifecycle::Role::Follower { leader } => Err(not_leader(leader.as_deref())),
        _ => json(StatusCode::OK, &wire::Health::ok()),
    }
}

fn not_leader(leader: Option<&str>) -> ApiError {
    ApiError::new(
        ErrorCode::NotLeader,
        match leader {
            Some(leader) => format!(
                "this daemon does not lead; {leader} does: send changes to it (its GET /readyz \
                 answers 200)"
            ),
            None => "this daemon does not lead, and no leader is known yet; retry shortly".into(),
        },
    )
}

/// Refuses a change (any method but GET and HEAD, the status page's login
/// aside) on a follower, naming the leader.
async fn leader_only(State(api): State<Api>, request: Request, next: Next) -> Response {
    let read = matches!(*request.method(), Method::GET | Method::HEAD);
    if read || super::ui::is_public(request.uri().path()) {
        return next.run(request).await;
    }
    match api.lifecycle.role() {
        lifecycle::Role::Follower { leader } => not_leader(leader.as_deref()).into_response(),
        _ => next.run(request).await,
    }
}

async fn facts(State(api): State<Api>) -> ApiResult {
    json(StatusCode::OK, &api.lifecycle.facts())
}

async fn metrics(State(api): State<Api>) -> Response {
    let mut text = api.lifecycle.metrics().render();
    let slots = api.lifecycle.operation_slots();
    for (name, help, value) in [
        (
            "capstan_operations_running",
            "Operations running now, across apps",
            slots.running,
        ),
        (
            "capstan_operations_queued",
            "Operations waiting for one of the --max-operations slots",
            slots.queued,
        ),
        (
            "capstan_operations_max",
            "Operations that may run at once (--max-operations)",
            slots.max,
        ),
    ] {
        text.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
        ));
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

async fn list(State(api): State<Api>) -> ApiResult {
    let lc = api.lifecycle.clone();
    let apps: Vec<wire::AppRecord> = blocking(move || lc.list()).await?;
    json(StatusCode::OK, &apps)
}

async fn upload(State(api): State<Api>, headers: HeaderMap, body: Body) -> ApiResult {
    let source = match check_bundle_type(&headers).and_then(|()| source_of(&headers)) {
        Ok(source) => source,
        Err(refused) => {
            super::body::drain(body).await;
            return Err(refused);
        }
    };
    let lc = api.lifecycle.clone();
    let app: wire::AppRecord = streamed_bundle(&api, &headers, body, move |bundle| {
        lc.upload_from(bundle, source)
    })
    .await?;
    json(StatusCode::CREATED, &app)
}

async fn update(
    State(api): State<Api>,
    headers: HeaderMap,
    query: Result<Query<wire::UpdateQuery>, QueryRejection>,
    body: Body,
) -> ApiResult {
    let checked = query_of(query).and_then(|query| {
        check_bundle_type(&headers)?;
        Ok((query, source_of(&headers)?))
    });
    let (query, source) = match checked {
        Ok(checked) => checked,
        Err(refused) => {
            super::body::drain(body).await;
            return Err(refused);
        }
    };
    let lc = api.lifecycle.clone();
    started(
        streamed_bundle(&api, &headers, body, move |bundle| {
            lc.update_with(bundle, query.reuse_user_overrides, query.force, source)
        })
        .await?,
    )
}

async fn show(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    let details: wire::AppDetails = blocking(move || lc.show(&app)).await?;
    json(StatusCode::OK, &details)
}

async fn delete(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    blocking(move || lc.delete(&app)).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn apply(
    State(api): State<Api>,
    app: AppPath,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body_of(body)?;
    let app = app_name(&path_of(app)?)?;
    let request: wire::ApplyRequest = parse_json(&body)?;
    let lc = api.lifecycle.clone();
    started(blocking(move || lc.apply_with(&app, request)).await?)
}

async fn remove(
    State(api): State<Api>,
    app: AppPath,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body_of(body)?;
    let app = app_name(&path_of(app)?)?;
    let request: wire::RemoveRequest = parse_json(&body)?;
    let lc = api.lifecycle.clone();
    started(blocking(move || lc.remove_with(&app, request.force, request.keep_secrets)).await?)
}

async fn abort(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    let record: wire::AppRecord = blocking(move || lc.abort(&app)).await?;
    json(StatusCode::ACCEPTED, &record)
}

async fn recover(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    started(blocking(move || lc.recover(&app)).await?)
}

async fn rollback(
    State(api): State<Api>,
    app: AppPath,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body_of(body)?;
    let app = app_name(&path_of(app)?)?;
    let request: wire::RollbackRequest = parse_json(&body)?;
    let lc = api.lifecycle.clone();
    started(blocking(move || lc.rollback(&app, request.version.as_deref())).await?)
}

async fn history(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    let entries: Vec<wire::HistoryEntry> = blocking(move || lc.history(&app)).await?;
    json(StatusCode::OK, &entries)
}

async fn operation(State(api): State<Api>, path: AppAndPath) -> ApiResult {
    let (app, id) = path_of(path)?;
    let app = app_name(&app)?;
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::bad_request(format!("operation id {id:?} is not a number")))?;
    let lc = api.lifecycle.clone();
    let entry: Option<wire::HistoryEntry> = blocking(move || {
        lc.history(&app)
            .map(|h| h.into_iter().find(|e| e.id == OperationId(id)))
    })
    .await?;
    match entry {
        Some(entry) => json(StatusCode::OK, &entry),
        None => Err(ApiError::new(
            ErrorCode::NotFound,
            format!("no operation {id} on this app"),
        )),
    }
}

async fn diff(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    let diffs: Vec<wire::ChartDiff> = blocking(move || lc.diff(&app)).await?;
    json(StatusCode::OK, &diffs)
}

async fn diff_bundle(
    State(api): State<Api>,
    app: AppPath,
    headers: HeaderMap,
    body: Body,
) -> ApiResult {
    check_bundle_type(&headers)?;
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    let diffs: Vec<wire::ChartDiff> = streamed_bundle(&api, &headers, body, move |bundle| {
        lc.diff_bundle(&app, bundle)
    })
    .await?;
    json(StatusCode::OK, &diffs)
}

async fn override_list(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    let list: Vec<wire::OverrideSummary> = blocking(move || lc.override_list(&app)).await?;
    json(StatusCode::OK, &list)
}

async fn override_show(State(api): State<Api>, path: AppAndPath) -> ApiResult {
    let (app, chart) = path_of(path)?;
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    let shown: wire::ChartOverrides = blocking(move || lc.override_show(&app, &chart)).await?;
    json(StatusCode::OK, &shown)
}

async fn override_set(
    State(api): State<Api>,
    path: AppAndPath,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body_of(body)?;
    let (app, chart) = path_of(path)?;
    let app = app_name(&app)?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request(
            "request body is empty; send {\"values\": [...], \"set\": [...]}",
        ));
    }
    let request: wire::OverrideSet = parse_json(&body)?;
    let lc = api.lifecycle.clone();
    let shown: wire::ChartOverrides =
        blocking(move || lc.override_set(&app, &chart, &request)).await?;
    json(StatusCode::OK, &shown)
}

async fn override_delete(State(api): State<Api>, path: AppAndPath) -> ApiResult {
    let (app, chart) = path_of(path)?;
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    let deleted = blocking(move || lc.override_delete(&app, &chart)).await?;
    json(StatusCode::OK, &wire::Deleted { deleted })
}

async fn platform_event(State(api): State<Api>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let body = body_of(body)?;
    let request: wire::PlatformEventRequest = parse_json(&body)?;
    let details: Vec<(String, String)> = request.details.into_iter().collect();
    let lc = api.lifecycle.clone();
    let outcome: wire::PlatformEventOutcome =
        blocking(move || lc.platform_event(&request.name, &details)).await?;
    json(StatusCode::OK, &outcome)
}

async fn volume_list(State(api): State<Api>) -> ApiResult {
    let lc = api.lifecycle.clone();
    let views: Vec<wire::VolumeView> = blocking(move || lc.volume_list()).await?;
    json(StatusCode::OK, &views)
}

async fn volume_create(State(api): State<Api>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let body = body_of(body)?;
    let request: wire::VolumeRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("request body is not a volume: {e}")))?;
    let lc = api.lifecycle.clone();
    let view: wire::VolumeView = blocking(move || lc.volume_create(&request)).await?;
    json(StatusCode::CREATED, &view)
}

async fn volume_remove(
    State(api): State<Api>,
    name: AppPath,
    query: Result<Query<wire::VolumeRemoveQuery>, QueryRejection>,
) -> ApiResult {
    let query = query_of(query)?;
    let name = path_of(name)?;
    let lc = api.lifecycle.clone();
    let view: wire::VolumeView = blocking(move || lc.volume_remove(&name, query.force)).await?;
    json(StatusCode::OK, &view)
}

#[cfg(test)]
mod parse_json_tests {
    use super::*;

    #[test]
    fn no_body_is_the_default_and_whitespace_or_another_kind_is_refused() {
        let parse = |text: &'static str| parse_json::<wire::ApplyRequest>(&Bytes::from(text));
        assert_eq!(parse("").ok(), Some(wire::ApplyRequest::default()));
        assert_eq!(
            parse(" {\"adopt\": true}\n").ok().map(|r| r.adopt),
            Some(true)
        );
        for refused in ["\r", " \n", "[]", "{", "{\"unknown\": 1}"] {
            assert!(parse(refused).is_err(), "{refused:?} was accepted");
        }
    }
}
