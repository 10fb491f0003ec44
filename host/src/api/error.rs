//! Failed requests as answers: [`ApiError`] (a stable [`ErrorCode`],
//! which decides the status, and one line), the code of each lifecycle
//! error, the answers of unknown endpoints and methods, and [`blocking`],
//! which runs lifecycle work off the async runtime and turns its error
//! into an [`ApiError`].

use std::time::Duration;

use axum::extract::Request;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::wire::{ErrorBody, ErrorCode};
use crate::lifecycle::{self, ErrorClass};

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

/// What a handler returns.
pub(super) type ApiResult = Result<Response, ApiError>;

/// The fallback for a path no route serves.
pub(super) async fn not_found() -> ApiError {
    ApiError::new(
        ErrorCode::UnknownEndpoint,
        "no such endpoint; see docs/src/reference/http-api.md",
    )
}

/// The fallback for a method a route does not take.
pub(super) async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!(
            "{} does not take {}; see docs/src/reference/http-api.md",
            request.uri().path(),
            request.method()
        ),
    )
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
