//! The routes, their handlers, authentication and error mapping.

use std::future::Future;
use std::io::Cursor;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::{Address, ErrorBody, StartedBody};
use crate::lifecycle::{self, ErrorClass, Lifecycle, OverrideSet, Started, VolumeRequest};
use crate::model::AppName;
use crate::store::OperationId;

/// The largest bundle accepted by upload and update (compressed).
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
struct Api {
    lifecycle: Lifecycle,
    token: Option<Arc<str>>,
}

/// The API's routes over `lifecycle`; with a `token`, every request must
/// carry `Authorization: Bearer TOKEN`.
pub fn router(lifecycle: Lifecycle, token: Option<String>) -> Router {
    let api = Api {
        lifecycle,
        token: token.map(Arc::from),
    };
    let bundles = Router::new()
        .route("/v1/apps", post(upload).get(list))
        .route("/v1/updates", post(update))
        .layer(DefaultBodyLimit::max(MAX_BUNDLE_BYTES));
    let rest = Router::new()
        .route("/v1/health", get(health))
        .route("/metrics", get(metrics))
        .route("/v1/apps/{app}", get(show).delete(delete))
        .route("/v1/apps/{app}/apply", post(apply))
        .route("/v1/apps/{app}/remove", post(remove))
        .route("/v1/apps/{app}/abort", post(abort))
        .route("/v1/apps/{app}/recover", post(recover))
        .route("/v1/apps/{app}/history", get(history))
        .route("/v1/apps/{app}/operations/{id}", get(operation))
        .route("/v1/apps/{app}/diff", get(diff))
        .route("/v1/volumes", get(volume_list).post(volume_create))
        .route("/v1/volumes/{name}", axum::routing::delete(volume_remove))
        .route("/v1/apps/{app}/overrides", get(override_list))
        .route(
            "/v1/apps/{app}/overrides/{chart}",
            get(override_show).put(override_set).delete(override_delete),
        )
        .layer(DefaultBodyLimit::max(MAX_JSON_BYTES));
    bundles
        .merge(rest)
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(api.clone(), authenticate))
        .with_state(api)
}

/// Serves the API on `address` until `shutdown` completes. A unix socket
/// is created 0600 (a stale socket file is replaced); TCP needs a token.
///
/// # Errors
/// [`ServeError`].
pub async fn serve(
    lifecycle: Lifecycle,
    address: &Address,
    token: Option<String>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let shown = address.to_string();
    let bind = |source| ServeError::Bind {
        address: shown.clone(),
        source,
    };
    let app = router(lifecycle, token.clone());
    match address {
        Address::Unix(path) => {
            remove_stale_socket(path).map_err(bind)?;
            let listener = tokio::net::UnixListener::bind(path).map_err(bind)?;
            set_private(path).map_err(bind)?;
            tracing::info!(address = %shown, "listening");
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
                .map_err(|source| ServeError::Serve {
                    address: shown.clone(),
                    source,
                })?;
            let _ = std::fs::remove_file(path);
            Ok(())
        }
        Address::Tcp(addr) => {
            if token.is_none() {
                return Err(ServeError::TcpNeedsToken { address: shown });
            }
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(bind)?;
            tracing::info!(address = %shown, "listening");
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
                .map_err(|source| ServeError::Serve {
                    address: shown,
                    source,
                })
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

fn set_private(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

// ---- errors ----

/// A failed request: a status and one line.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }

    fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }
}

impl From<lifecycle::Error> for ApiError {
    fn from(error: lifecycle::Error) -> Self {
        let status = match error.class() {
            ErrorClass::BadRequest => StatusCode::BAD_REQUEST,
            ErrorClass::NotFound => StatusCode::NOT_FOUND,
            ErrorClass::Conflict => StatusCode::CONFLICT,
            ErrorClass::Failed => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorClass::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, error.one_line())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(status = %self.status, error = %self.message, "request failed");
        } else {
            tracing::info!(status = %self.status, error = %self.message, "request refused");
        }
        let body = ErrorBody {
            error: self.message,
        };
        (self.status, axum::Json(body)).into_response()
    }
}

type ApiResult = Result<Response, ApiError>;

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "no such endpoint; see docs/api.md")
}

// ---- authentication ----

async fn authenticate(State(api): State<Api>, request: Request, next: Next) -> Response {
    if let Some(token) = &api.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let ok = given.is_some_and(|given| constant_time_eq(given.as_bytes(), token.as_bytes()));
        if !ok {
            tracing::warn!(method = %request.method(), path = %request.uri().path(), "request without a valid bearer token refused");
            let mut response =
                ApiError::new(StatusCode::UNAUTHORIZED, "missing or wrong bearer token")
                    .into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
    }
    if request.method() != axum::http::Method::GET {
        tracing::info!(method = %request.method(), path = %request.uri().path(), "mutation");
    }
    next.run(request).await
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

// ---- helpers ----

/// The body, or the reason it could not be read (413 when too large).
fn body_of(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| ApiError::new(rejection.status(), rejection.body_text()))
}

fn app_name(text: &str) -> Result<AppName, ApiError> {
    AppName::new(text).map_err(|e| ApiError::bad_request(e.to_string()))
}

fn parse_json<T: DeserializeOwned + Default>(body: &Bytes) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("request body is not valid JSON: {e}")))
}

fn json(status: StatusCode, value: &impl serde::Serialize) -> ApiResult {
    Ok((status, axum::Json(value)).into_response())
}

/// Runs lifecycle work on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, lifecycle::Error> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(ApiError::from),
        Err(e) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("request handler failed: {e}"),
        )),
    }
}

fn started(started: Started) -> ApiResult {
    let body = StartedBody {
        app: started.app.clone(),
        operation: started.operation,
    };
    json(StatusCode::ACCEPTED, &body)
}

fn check_bundle_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/gzip");
    let ok = [
        "application/gzip",
        "application/x-gzip",
        "application/octet-stream",
    ]
    .iter()
    .any(|t| content_type.starts_with(t));
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("a bundle is sent as application/gzip, not {content_type}"),
        ))
    }
}

// ---- handlers ----

async fn health() -> ApiResult {
    json(StatusCode::OK, &serde_json::json!({"status": "ok"}))
}

async fn metrics(State(api): State<Api>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        api.lifecycle.metrics().render(),
    )
        .into_response()
}

async fn list(State(api): State<Api>) -> ApiResult {
    let lc = api.lifecycle.clone();
    json(StatusCode::OK, &blocking(move || lc.list()).await?)
}

async fn upload(
    State(api): State<Api>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body_of(body)?;
    check_bundle_type(&headers)?;
    let lc = api.lifecycle.clone();
    let app = blocking(move || lc.upload(Cursor::new(body))).await?;
    json(StatusCode::CREATED, &app)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateQuery {
    reuse_user_overrides: Option<bool>,
}

async fn update(
    State(api): State<Api>,
    headers: HeaderMap,
    query: Result<Query<UpdateQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let Query(query) = query.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    let body = body_of(body)?;
    check_bundle_type(&headers)?;
    let lc = api.lifecycle.clone();
    started(blocking(move || lc.update(Cursor::new(body), query.reuse_user_overrides)).await?)
}

async fn show(State(api): State<Api>, Path(app): Path<String>) -> ApiResult {
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    json(StatusCode::OK, &blocking(move || lc.show(&app)).await?)
}

async fn delete(State(api): State<Api>, Path(app): Path<String>) -> ApiResult {
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    blocking(move || lc.delete(&app)).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApplyBody {
    #[serde(default)]
    rekind: Vec<String>,
}

async fn apply(
    State(api): State<Api>,
    Path(app): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body_of(body)?;
    let app = app_name(&app)?;
    let request: ApplyBody = parse_json(&body)?;
    let lc = api.lifecycle.clone();
    started(blocking(move || lc.apply(&app, request.rekind)).await?)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoveBody {
    #[serde(default)]
    force: bool,
}

async fn remove(
    State(api): State<Api>,
    Path(app): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body_of(body)?;
    let app = app_name(&app)?;
    let request: RemoveBody = parse_json(&body)?;
    let lc = api.lifecycle.clone();
    started(blocking(move || lc.remove(&app, request.force)).await?)
}

async fn abort(State(api): State<Api>, Path(app): Path<String>) -> ApiResult {
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    json(
        StatusCode::ACCEPTED,
        &blocking(move || lc.abort(&app)).await?,
    )
}

async fn recover(State(api): State<Api>, Path(app): Path<String>) -> ApiResult {
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    started(blocking(move || lc.recover(&app)).await?)
}

async fn history(State(api): State<Api>, Path(app): Path<String>) -> ApiResult {
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    json(StatusCode::OK, &blocking(move || lc.history(&app)).await?)
}

async fn operation(State(api): State<Api>, Path((app, id)): Path<(String, String)>) -> ApiResult {
    let app = app_name(&app)?;
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::bad_request(format!("operation id {id:?} is not a number")))?;
    let lc = api.lifecycle.clone();
    let entry = blocking(move || {
        lc.history(&app)
            .map(|h| h.into_iter().find(|e| e.id == OperationId(id)))
    })
    .await?;
    match entry {
        Some(entry) => json(StatusCode::OK, &entry),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no operation {id} on this app"),
        )),
    }
}

async fn diff(State(api): State<Api>, Path(app): Path<String>) -> ApiResult {
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    json(StatusCode::OK, &blocking(move || lc.diff(&app)).await?)
}

async fn override_list(State(api): State<Api>, Path(app): Path<String>) -> ApiResult {
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    json(
        StatusCode::OK,
        &blocking(move || lc.override_list(&app)).await?,
    )
}

async fn override_show(
    State(api): State<Api>,
    Path((app, chart)): Path<(String, String)>,
) -> ApiResult {
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    json(
        StatusCode::OK,
        &blocking(move || lc.override_show(&app, &chart)).await?,
    )
}

async fn override_set(
    State(api): State<Api>,
    Path((app, chart)): Path<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body_of(body)?;
    let app = app_name(&app)?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request(
            "request body is empty; send {\"values\": [...], \"set\": [...]}",
        ));
    }
    let request: OverrideSet = parse_json(&body)?;
    let lc = api.lifecycle.clone();
    json(
        StatusCode::OK,
        &blocking(move || lc.override_set(&app, &chart, &request)).await?,
    )
}

async fn override_delete(
    State(api): State<Api>,
    Path((app, chart)): Path<(String, String)>,
) -> ApiResult {
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    let existed = blocking(move || lc.override_delete(&app, &chart)).await?;
    json(StatusCode::OK, &serde_json::json!({"deleted": existed}))
}

async fn volume_list(State(api): State<Api>) -> ApiResult {
    let lc = api.lifecycle.clone();
    json(StatusCode::OK, &blocking(move || lc.volume_list()).await?)
}

async fn volume_create(State(api): State<Api>, body: Result<Bytes, BytesRejection>) -> ApiResult {
    let body = body_of(body)?;
    let request: VolumeRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("request body is not a volume: {e}")))?;
    let lc = api.lifecycle.clone();
    json(
        StatusCode::CREATED,
        &blocking(move || lc.volume_create(&request)).await?,
    )
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ForceQuery {
    #[serde(default)]
    force: bool,
}

async fn volume_remove(
    State(api): State<Api>,
    Path(name): Path<String>,
    query: Result<Query<ForceQuery>, QueryRejection>,
) -> ApiResult {
    let Query(query) = query.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    let lc = api.lifecycle.clone();
    json(
        StatusCode::OK,
        &blocking(move || lc.volume_remove(&name, query.force)).await?,
    )
}
