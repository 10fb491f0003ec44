//! The JSON API's handlers, one per route (the routes are listed in the
//! module doc of `api` and wired in `server`), and the helpers that read
//! a request (path, query, JSON body, a streamed bundle) and write an
//! answer.
//!
//! Each hands its work to the lifecycle on a blocking thread
//! ([`blocking`]); none decides what an operation may do.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::auth::not_leader;
use super::body::{BodyReader, Cut, Streamed};
use super::error::{ApiError, ApiResult, blocking};
use super::limits::UPLOAD_RETRY_AFTER;
use super::state::Api;
use super::wire::{self, ErrorCode};
use crate::lifecycle::{self, Started};
use crate::model::AppName;
use crate::store::OperationId;

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
pub(super) async fn streamed_bundle<T: Send + 'static>(
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
        // Read a little of the body before answering (bounded, see
        // `drain`), so the client reads the 429 rather than a reset and
        // can send the bundle again (module `retry`).
        super::body::drain(body).await;
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

type AppPath = Result<Path<String>, PathRejection>;
type AppAndPath = Result<Path<(String, String)>, PathRejection>;

pub(super) async fn health() -> ApiResult {
    json(StatusCode::OK, &wire::Health::ok())
}

/// `GET /healthz`: 200 from any live daemon.
pub(super) async fn healthz() -> ApiResult {
    json(StatusCode::OK, &wire::Health::ok())
}

/// `GET /readyz`: 200 where changes are taken (the leader, or the only
/// daemon), so a Service routes to it; 503 `not-leader` elsewhere.
pub(super) async fn readyz(State(api): State<Api>) -> ApiResult {
    match api.lifecycle.role() {
        lifecycle::Role::Follower { leader } => Err(not_leader(leader.as_deref())),
        _ => json(StatusCode::OK, &wire::Health::ok()),
    }
}

pub(super) async fn facts(State(api): State<Api>) -> ApiResult {
    json(StatusCode::OK, &api.lifecycle.facts())
}

pub(super) async fn metrics(State(api): State<Api>) -> Response {
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

pub(super) async fn list(State(api): State<Api>) -> ApiResult {
    let lc = api.lifecycle.clone();
    let apps: Vec<wire::AppRecord> = blocking(move || lc.list()).await?;
    json(StatusCode::OK, &apps)
}

pub(super) async fn upload(State(api): State<Api>, headers: HeaderMap, body: Body) -> ApiResult {
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

pub(super) async fn update(
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
            lc.update_with(
                bundle,
                query.reuse_user_overrides,
                query.force,
                source,
                query.on_failure,
            )
        })
        .await?,
    )
}

pub(super) async fn show(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    let details: wire::AppDetails = blocking(move || lc.show(&app)).await?;
    json(StatusCode::OK, &details)
}

pub(super) async fn delete(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    blocking(move || lc.delete(&app)).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(super) async fn apply(
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

pub(super) async fn remove(
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

pub(super) async fn abort(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    let record: wire::AppRecord = blocking(move || lc.abort(&app)).await?;
    json(StatusCode::ACCEPTED, &record)
}

pub(super) async fn recover(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    started(blocking(move || lc.recover(&app)).await?)
}

pub(super) async fn rollback(
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

/// Who is asking, as the audit line names them (the unix peer's uid, or
/// a token holder and its address).
fn caller(api: &Api, extensions: &axum::http::Extensions) -> String {
    let peer = extensions
        .get::<axum::extract::ConnectInfo<super::peer::Peer>>()
        .map(|info| info.0);
    super::auth::who(false, api.token.is_some(), peer.as_ref())
}

pub(super) async fn pause(
    State(api): State<Api>,
    extensions: axum::http::Extensions,
    app: AppPath,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    pause_or_resume(api, &extensions, app, body, true).await
}

pub(super) async fn resume(
    State(api): State<Api>,
    extensions: axum::http::Extensions,
    app: AppPath,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    pause_or_resume(api, &extensions, app, body, false).await
}

/// Pauses (`pause`) or resumes an app's automatic operations, naming
/// the caller.
async fn pause_or_resume(
    api: Api,
    extensions: &axum::http::Extensions,
    app: AppPath,
    body: Result<Bytes, BytesRejection>,
    pause: bool,
) -> ApiResult {
    let body = body_of(body)?;
    let app = app_name(&path_of(app)?)?;
    let request: wire::PauseRequest = parse_json(&body)?;
    let by = caller(&api, extensions);
    let lc = api.lifecycle.clone();
    let record: wire::AppRecord = blocking(move || {
        let reason = request.reason.as_deref();
        match pause {
            true => lc.pause_automatic(&app, &by, reason),
            false => lc.resume_automatic(&app, &by, reason),
        }
    })
    .await?;
    json(StatusCode::OK, &record)
}

pub(super) async fn history(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    let entries: Vec<wire::HistoryEntry> = blocking(move || lc.history(&app)).await?;
    json(StatusCode::OK, &entries)
}

pub(super) async fn operation(State(api): State<Api>, path: AppAndPath) -> ApiResult {
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

pub(super) async fn diff(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    let diffs: Vec<wire::ChartDiff> = blocking(move || lc.diff(&app)).await?;
    json(StatusCode::OK, &diffs)
}

pub(super) async fn diff_bundle(
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

pub(super) async fn override_list(State(api): State<Api>, app: AppPath) -> ApiResult {
    let app = app_name(&path_of(app)?)?;
    let lc = api.lifecycle.clone();
    let list: Vec<wire::OverrideSummary> = blocking(move || lc.override_list(&app)).await?;
    json(StatusCode::OK, &list)
}

pub(super) async fn override_show(State(api): State<Api>, path: AppAndPath) -> ApiResult {
    let (app, chart) = path_of(path)?;
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    let shown: wire::ChartOverrides = blocking(move || lc.override_show(&app, &chart)).await?;
    json(StatusCode::OK, &shown)
}

pub(super) async fn override_set(
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

pub(super) async fn override_delete(State(api): State<Api>, path: AppAndPath) -> ApiResult {
    let (app, chart) = path_of(path)?;
    let app = app_name(&app)?;
    let lc = api.lifecycle.clone();
    let deleted = blocking(move || lc.override_delete(&app, &chart)).await?;
    json(StatusCode::OK, &wire::Deleted { deleted })
}

pub(super) async fn platform_event(
    State(api): State<Api>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body_of(body)?;
    let request: wire::PlatformEventRequest = parse_json(&body)?;
    let details: Vec<(String, String)> = request.details.into_iter().collect();
    let lc = api.lifecycle.clone();
    let outcome: wire::PlatformEventOutcome =
        blocking(move || lc.platform_event(&request.name, &details)).await?;
    json(StatusCode::OK, &outcome)
}

pub(super) async fn volume_list(State(api): State<Api>) -> ApiResult {
    let lc = api.lifecycle.clone();
    let views: Vec<wire::VolumeView> = blocking(move || lc.volume_list()).await?;
    json(StatusCode::OK, &views)
}

pub(super) async fn volume_create(
    State(api): State<Api>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body_of(body)?;
    let request: wire::VolumeRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("request body is not a volume: {e}")))?;
    let lc = api.lifecycle.clone();
    let view: wire::VolumeView = blocking(move || lc.volume_create(&request)).await?;
    json(StatusCode::CREATED, &view)
}

pub(super) async fn volume_remove(
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
