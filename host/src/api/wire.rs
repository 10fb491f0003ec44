//! Every request and response body of the API, in one place: the server's
//! handlers decode requests into and encode answers from these types, and
//! [`super::Client`] does the reverse, so the two cannot drift apart.
//!
//! Records the store or the lifecycle already define (an app, a history
//! entry, a volume, override layers, a diff) are re-exported as they are;
//! the types defined here are the API's own bodies. The JSON shapes are
//! those of `docs/src/reference/http-api.md`.
//!
//! Forwards compatibility: answers are decoded without
//! `deny_unknown_fields`, so a client ignores fields a newer daemon adds,
//! and an error code it does not know decodes as [`ErrorCode::Unknown`].
//! Requests are refused with `bad-request` when they carry unknown fields.

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

pub use crate::lifecycle::{
    ChartDiff, ChartOverrides, ChartProgress, ChartState, FactsView, LayerValues, OperationCharts,
    OverrideSet, OverrideSummary, PlatformEventOutcome, PlatformEventRequest, VolumeRequest,
    VolumeView,
};
pub use crate::model::{DriftedField, ObjectDrift};
pub use crate::store::{AppRecord, DecisionRecord, HistoryEntry, OperationId, VolumeRecord};

/// The content type a bundle is sent with (`POST /v1/apps`, `POST /v1/updates`).
pub const BUNDLE_CONTENT_TYPE: &str = "application/gzip";

/// The request header of an upload or update whose bundle was fetched from
/// a registry: `oci://HOST[:PORT]/REPO@sha256:DIGEST`, pinned to the
/// manifest digest. The version records it as its source (provenance only:
/// the bundle is verified as any other).
pub const SOURCE_HEADER: &str = "capstan-source";
/// The content type of every JSON body.
pub const JSON_CONTENT_TYPE: &str = "application/json";

// ---- errors ----

/// The body of every failed request: `{"error": "one line", "code": "stable-code"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What went wrong, for a person: one line.
    pub error: String,
    /// Which kind of wrong it is, for a program; absent from a daemon that
    /// predates codes, and then [`ErrorCode::Unknown`].
    #[serde(default)]
    pub code: ErrorCode,
}

/// The stable, machine-readable cause of a failed request. Each code has
/// one HTTP status ([`ErrorCode::status`]); `docs/src/reference/error-codes.md` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    /// 400: the request is malformed: a body that is not JSON or has
    /// unknown or mistyped fields, a bad query string, an invalid app name
    /// or operation id in the path, a missing body.
    BadRequest,
    /// 400: the bundle was rejected: signature, trust, format, limits, or
    /// the app name it carries.
    InvalidBundle,
    /// 400: the request is well formed but what it asks for is invalid:
    /// overrides that are not YAML or `--set` syntax, an unknown component
    /// to re-decide, an invalid volume.
    Invalid,
    /// 401: the bearer token is missing or wrong.
    Unauthorized,
    /// 404: no such app, version, chart, operation or volume.
    NotFound,
    /// 404: no endpoint has this path.
    UnknownEndpoint,
    /// 405: the endpoint does not take this method.
    MethodNotAllowed,
    /// 408: the request body stalled (no byte for the daemon's body
    /// timeout); the connection is closed.
    RequestTimeout,
    /// 409: the app is in the middle of an operation.
    Busy,
    /// 409: the operation is not allowed from the app's state (including
    /// an abort with nothing running to abort).
    IllegalTransition,
    /// 409: the app, version or volume already exists.
    AlreadyExists,
    /// 409: the version or volume is in use.
    InUse,
    /// 409: the bundle's version is not an upgrade the active version allows.
    UpgradeNotAllowed,
    /// 409: another conflict with the app's state.
    Conflict,
    /// 413: the body is larger than the endpoint accepts.
    PayloadTooLarge,
    /// 415: a bundle sent with another content type.
    UnsupportedMediaType,
    /// 422: a plugin's lifecycle hook vetoed the operation.
    Vetoed,
    /// 422: the operation ran and failed (a plugin fault, a render error,
    /// an unsupported platform, an apply error).
    Failed,
    /// 429: come back later (the `Retry-After` header says when): the
    /// daemon's bundle uploads are all streaming, or this peer presented
    /// too many wrong tokens.
    TooManyRequests,
    /// 500: the daemon's own state is broken (database, files).
    Internal,
    /// 503: this daemon follows (cluster mode): another leads and takes
    /// changes; the message names it.
    NotLeader,
    /// A code this client does not know (from a newer daemon), or none.
    #[default]
    #[serde(other)]
    Unknown,
}

impl ErrorCode {
    /// Every code the daemon sends, in the order of the table in `docs/src/reference/error-codes.md`.
    pub const ALL: [ErrorCode; 21] = [
        ErrorCode::BadRequest,
        ErrorCode::InvalidBundle,
        ErrorCode::Invalid,
        ErrorCode::Unauthorized,
        ErrorCode::NotFound,
        ErrorCode::UnknownEndpoint,
        ErrorCode::MethodNotAllowed,
        ErrorCode::RequestTimeout,
        ErrorCode::Busy,
        ErrorCode::IllegalTransition,
        ErrorCode::AlreadyExists,
        ErrorCode::InUse,
        ErrorCode::UpgradeNotAllowed,
        ErrorCode::Conflict,
        ErrorCode::PayloadTooLarge,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::Vetoed,
        ErrorCode::Failed,
        ErrorCode::TooManyRequests,
        ErrorCode::Internal,
        ErrorCode::NotLeader,
    ];

    /// The HTTP status the daemon answers with this code.
    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::BadRequest | ErrorCode::InvalidBundle | ErrorCode::Invalid => {
                StatusCode::BAD_REQUEST
            }
            ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorCode::NotFound | ErrorCode::UnknownEndpoint => StatusCode::NOT_FOUND,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ErrorCode::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::Busy
            | ErrorCode::IllegalTransition
            | ErrorCode::AlreadyExists
            | ErrorCode::InUse
            | ErrorCode::UpgradeNotAllowed
            | ErrorCode::Conflict => StatusCode::CONFLICT,
            ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::Vetoed | ErrorCode::Failed => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::Internal | ErrorCode::Unknown => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::NotLeader => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The code as it appears in JSON, e.g. `not-found`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad-request",
            ErrorCode::InvalidBundle => "invalid-bundle",
            ErrorCode::Invalid => "invalid",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::NotFound => "not-found",
            ErrorCode::UnknownEndpoint => "unknown-endpoint",
            ErrorCode::MethodNotAllowed => "method-not-allowed",
            ErrorCode::RequestTimeout => "request-timeout",
            ErrorCode::TooManyRequests => "too-many-requests",
            ErrorCode::Busy => "busy",
            ErrorCode::IllegalTransition => "illegal-transition",
            ErrorCode::AlreadyExists => "already-exists",
            ErrorCode::InUse => "in-use",
            ErrorCode::UpgradeNotAllowed => "upgrade-not-allowed",
            ErrorCode::Conflict => "conflict",
            ErrorCode::PayloadTooLarge => "payload-too-large",
            ErrorCode::UnsupportedMediaType => "unsupported-media-type",
            ErrorCode::Vetoed => "vetoed",
            ErrorCode::Failed => "failed",
            ErrorCode::Internal => "internal",
            ErrorCode::NotLeader => "not-leader",
            ErrorCode::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

// ---- requests ----

/// `POST /v1/apps/{app}/apply`: the operator's flags, one type from
/// the wire to the apply's steps.
pub use crate::model::ApplyRequest;

/// `POST /v1/apps/{app}/remove`; an empty body is the default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveRequest {
    /// Go on past failing charts and hooks; also from `uploaded`.
    #[serde(default)]
    pub force: bool,
    /// Keep the secrets the host generated for the app's plugins (their
    /// Secrets stay in the owned release), so that applying the app again
    /// hands out the same passwords and keys; `app delete` removes them.
    #[serde(default)]
    pub keep_secrets: bool,
}

/// `POST /v1/apps/{app}/pause` and `/resume`; an empty body gives no
/// reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PauseRequest {
    /// Why, kept in the app's record and history: at most 256
    /// characters, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The query of `POST /v1/updates`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateQuery {
    /// Keep (`true`) or drop (`false`) user overrides; absent: the new
    /// bundle's `maintain_user_overrides`.
    #[serde(default)]
    pub reuse_user_overrides: Option<bool>,
    /// Accept a version that is not newer, or whose `from_versions` does
    /// not list the active one (`app update --force`).
    #[serde(default)]
    pub force: bool,
    /// What a failed update leaves, over the new bundle's `on_failure`
    /// (`app update --on-failure keep|rollback`); absent: the bundle's.
    #[serde(default)]
    pub on_failure: Option<crate::model::OnFailure>,
}

impl UpdateQuery {
    /// The query string, with its `?`, or nothing.
    pub fn to_query(&self) -> String {
        let mut parts = Vec::new();
        if let Some(reuse) = self.reuse_user_overrides {
            parts.push(format!("reuse_user_overrides={reuse}"));
        }
        if self.force {
            parts.push("force=true".to_owned());
        }
        if let Some(on_failure) = self.on_failure {
            parts.push(format!("on_failure={on_failure}"));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }
}

/// `POST /v1/apps/{app}/rollback`; an empty body goes back to the version
/// most recently left.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RollbackRequest {
    /// The kept version to go back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The query of `DELETE /v1/volumes/{name}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VolumeRemoveQuery {
    /// Remove it even while apps mount it.
    #[serde(default)]
    pub force: bool,
}

impl VolumeRemoveQuery {
    /// The query string, with its `?`, or nothing.
    pub fn to_query(&self) -> String {
        if self.force {
            "?force=true".into()
        } else {
            String::new()
        }
    }
}

// ---- answers ----

/// `202 Accepted` for a started operation (apply, remove, update, recover).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Started {
    /// The app as the operation began.
    pub app: AppRecord,
    /// The operation's id; poll `/v1/apps/{app}/operations/{id}`.
    pub operation: OperationId,
    /// What the operator should know at once (what a forced update
    /// forces); absent when there is nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// `GET /v1/apps/{app}`: the app and everything `app show` prints about
/// it, as the lifecycle builds it.
pub use crate::lifecycle::{AppDetails, ChartSummary, Drifted, VersionSummary};

/// `DELETE /v1/apps/{app}/overrides/{chart}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Deleted {
    /// Whether the chart had user overrides.
    pub deleted: bool,
}

/// `GET /v1/health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
}

impl Health {
    /// A daemon that answers.
    pub fn ok() -> Self {
        Health {
            status: "ok".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_spells_as_its_serde_name_and_unknown_ones_decode() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, code.as_str(), "{code:?}");
            assert_eq!(serde_json::from_value::<ErrorCode>(json).unwrap(), code);
            assert!(code.status().is_client_error() || code.status().is_server_error());
        }
        let newer: ErrorBody =
            serde_json::from_str(r#"{"error": "x", "code": "from-the-future"}"#).unwrap();
        assert_eq!(newer.code, ErrorCode::Unknown);
        let older: ErrorBody = serde_json::from_str(r#"{"error": "x"}"#).unwrap();
        assert_eq!(older.code, ErrorCode::Unknown);
    }

    #[test]
    fn queries_spell_as_the_server_reads_them() {
        assert_eq!(UpdateQuery::default().to_query(), "");
        let keep = UpdateQuery {
            reuse_user_overrides: Some(true),
            force: false,
            on_failure: None,
        };
        assert_eq!(keep.to_query(), "?reuse_user_overrides=true");
        let forced = UpdateQuery {
            reuse_user_overrides: Some(false),
            force: true,
            on_failure: None,
        };
        assert_eq!(forced.to_query(), "?reuse_user_overrides=false&force=true");
        let kept = UpdateQuery {
            on_failure: Some(crate::model::OnFailure::Keep),
            ..UpdateQuery::default()
        };
        assert_eq!(kept.to_query(), "?on_failure=keep");
        assert_eq!(VolumeRemoveQuery { force: true }.to_query(), "?force=true");
        assert_eq!(VolumeRemoveQuery::default().to_query(), "");
    }
}
