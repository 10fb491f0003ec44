//! The API's routes as the OpenAPI document describes them: [`ROUTES`],
//! every route once with its method, path, operation id, query, body,
//! success answer and the error codes it may answer with, and the links
//! from one operation's answer to the next ([`links`]).
//!
//! Data only; `openapi` builds the document from it. A route missing here
//! or in the router fails a test.

use utoipa::openapi::path::HttpMethod;

use crate::api::wire::ErrorCode;

/// What a route takes in its body.
#[derive(Debug, Clone, Copy)]
pub(super) enum Input {
    None,
    /// A JSON body of this schema; empty means the default.
    Json(&'static str, bool),
    /// A bundle (`application/gzip`), streamed.
    Bundle,
}

/// What a route answers on success.
#[derive(Debug, Clone, Copy)]
pub(super) enum Output {
    /// JSON of the named schema.
    Json(u16, &'static str),
    /// A JSON array of the named schema.
    List(u16, &'static str),
    /// No body.
    Empty(u16),
    /// Prometheus text.
    Text,
    /// This document.
    Document,
}

/// One route: method, path (with `{app}`-style parameters), operation id,
/// summary, query schema, body, success answer, and the error codes it
/// may answer with beyond those of every route ([`COMMON`]).
pub(super) struct Route {
    pub(super) method: HttpMethod,
    pub(super) path: &'static str,
    pub(super) id: &'static str,
    pub(super) summary: &'static str,
    pub(super) query: Option<&'static [(&'static str, &'static str)]>,
    pub(super) input: Input,
    pub(super) output: Output,
    pub(super) errors: &'static [ErrorCode],
}

/// Codes any authenticated route may answer with: a missing or wrong
/// token, a peer waiting after failed authentications, a broken store.
pub(super) const COMMON: &[ErrorCode] = &[
    ErrorCode::Unauthorized,
    ErrorCode::TooManyRequests,
    ErrorCode::Internal,
];

use ErrorCode as E;

/// An app named in the path: its name may be invalid or unknown.
pub(super) const APP: &[ErrorCode] = &[E::BadRequest, E::NotFound];
/// A started operation: refused by the app's state or a plugin, or failed
/// before it was handed off.
pub(super) const OPERATION: &[ErrorCode] = &[
    E::BadRequest,
    E::NotFound,
    E::PayloadTooLarge,
    E::RequestTimeout,
    E::Invalid,
    E::Busy,
    E::IllegalTransition,
    E::Conflict,
    E::Vetoed,
    E::Failed,
];
pub(super) const UPDATE_QUERY: &[(&str, &str)] = &[
    ("reuse_user_overrides", "boolean"),
    ("force", "boolean"),
    ("on_failure", "string"),
];
pub(super) const VOLUME_REMOVE_QUERY: &[(&str, &str)] = &[("force", "boolean")];

/// Every route of the API.
pub(super) const ROUTES: &[Route] = &[
    Route {
        method: HttpMethod::Get,
        path: "/v1/health",
        id: "health",
        summary: "Whether the daemon answers",
        query: None,
        input: Input::None,
        output: Output::Json(200, "Health"),
        errors: &[],
    },
    Route {
        method: HttpMethod::Get,
        path: "/healthz",
        id: "healthz",
        summary: "Whether the daemon lives (no token, on every listener): 200 on any live daemon",
        query: None,
        input: Input::None,
        output: Output::Json(200, "Health"),
        errors: &[],
    },
    Route {
        method: HttpMethod::Get,
        path: "/readyz",
        id: "readyz",
        summary: "Whether this daemon takes changes (no token, on every listener): 200 on the \
                  leader or the only daemon, 503 `not-leader` on a follower",
        query: None,
        input: Input::None,
        output: Output::Json(200, "Health"),
        errors: &[E::NotLeader],
    },
    Route {
        method: HttpMethod::Get,
        path: "/v1/facts",
        id: "facts",
        summary: "The facts in effect, where each field came from, and what changed last",
        query: None,
        input: Input::None,
        output: Output::Json(200, "FactsView"),
        errors: &[],
    },
    Route {
        method: HttpMethod::Get,
        path: "/v1/openapi.json",
        id: "openapi",
        summary: "This document",
        query: None,
        input: Input::None,
        output: Output::Document,
        errors: &[],
    },
    Route {
        method: HttpMethod::Get,
        path: "/metrics",
        id: "metrics",
        summary: "Prometheus metrics (text exposition format)",
        query: None,
        input: Input::None,
        output: Output::Text,
        errors: &[],
    },
    Route {
        method: HttpMethod::Get,
        path: "/v1/apps",
        id: "listApps",
        summary: "Every app",
        query: None,
        input: Input::None,
        output: Output::List(200, "AppRecord"),
        errors: &[],
    },
    Route {
        method: HttpMethod::Post,
        path: "/v1/apps",
        id: "uploadApp",
        summary: "Upload a signed bundle as a new app (streamed to the verifier)",
        query: None,
        input: Input::Bundle,
        output: Output::Json(201, "AppRecord"),
        errors: &[
            E::BadRequest,
            E::InvalidBundle,
            E::PayloadTooLarge,
            E::RequestTimeout,
            E::UnsupportedMediaType,
            E::AlreadyExists,
            E::Conflict,
        ],
    },
    Route {
        method: HttpMethod::Post,
        path: "/v1/updates",
        id: "updateApp",
        summary: "Update the app a bundle names to the bundle's version",
        query: Some(UPDATE_QUERY),
        input: Input::Bundle,
        output: Output::Json(202, "Started"),
        errors: &[
            E::BadRequest,
            E::InvalidBundle,
            E::PayloadTooLarge,
            E::RequestTimeout,
            E::UnsupportedMediaType,
            E::NotFound,
            E::Invalid,
            E::Busy,
            E::IllegalTransition,
            E::AlreadyExists,
            E::UpgradeNotAllowed,
            E::Conflict,
            E::Vetoed,
            E::Failed,
        ],
    },
    Route {
        method: HttpMethod::Get,
        path: "/v1/apps/{app}",
        id: "showApp",
        summary: "An app with its versions, charts, decisions and releases",
        query: None,
        input: Input::None,
        output: Output::Json(200, "AppDetails"),
        errors: APP,
    },
    Route {
        method: HttpMethod::Delete,
        path: "/v1/apps/{app}",
        id: "deleteApp",
        summary: "Forget an app that is not applied",
        query: None,
        input: Input::None,
        output: Output::Empty(204),
        errors: &[
            E::BadRequest,
            E::NotFound,
            E::Busy,
            E::IllegalTransition,
            E::Conflict,
        ],
    },
    Route {
        method: HttpMethod::Post,
        path: "/v1/apps/{app}/apply",
        id: "applyApp",
        summary: "Apply (or re-apply) the active version",
        query: None,
        input: Input::Json("ApplyRequest", false),
        output: Output::Json(202, "Started"),
        errors: OPERATION,
    },
    Route {
        method: HttpMethod::Post,
        path: "/v1/apps/{app}/remove",
        id: "removeApp",
        summary: "Remove the app's objects from the target",
        query: None,
        input: Input::Json("RemoveRequest", false),
        output: Output::Json(202, "Started"),
        errors: OPERATION,
    },
    Route {
        method: HttpMethod::Post,
        path: "/v1/apps/{app}/abort",
        id: "abortApp",
        summary: "Stop the app's running operation at its next step",
        query: None,
        input: Input::None,
        output: Output::Json(202, "AppRecord"),
        errors: &[
            E::BadRequest,
            E::NotFound,
            E::IllegalTransition,
            E::Conflict,
        ],
    },
    Route {
        method: HttpMethod::Post,
        path: "/v1/apps/{app}/recover",
        id: "recoverApp",
        summary: "Finish or undo an operation a crash interrupted",
        query: None,
        input: Input::None,
        output: Output::Json(202, "Started"),
        errors: OPERATION,
    },
    Route {
        method: HttpMethod::Post,
        path: "/v1/apps/{app}/rollback",
        id: "rollbackApp",
        summary: "Go back to a kept earlier version",
        query: None,
        input: Input::Json("RollbackRequest", false),
        output: Output::Json(202, "Started"),
        errors: OPERATION,
    },
    Route {
        method: HttpMethod::Post,
        path: "/v1/apps/{app}/pause",
        id: "pauseApp",
        summary: "Stop the daemon's automatic operations for the app (an operator's still run)",
        query: None,
        input: Input::Json("PauseRequest", false),
        output: Output::Json(200, "AppRecord"),
        errors: &[E::BadRequest, E::NotFound, E::Invalid, E::PayloadTooLarge],
    },
    Route {
        method: HttpMethod::Post,
        path: "/v1/apps/{app}/resume",
        id: "resumeApp",
        summary: "Let the daemon start automatic operations for the app again",
        query: None,
        input: Input::Json("PauseRequest", false),
        output: Output::Json(200, "AppRecord"),
        errors: &[E::BadRequest, E::NotFound, E::Invalid, E::PayloadTooLarge],
    },
    Route {
        method: HttpMethod::Get,
        path: "/v1/apps/{app}/history",
        id: "appHistory",
        summary: "The app's operations, oldest first",
        query: None,
        input: Input::None,
        output: Output::List(200, "HistoryEntry"),
        errors: APP,
    },
    Route {
        method: HttpMethod::Get,
        path: "/v1/apps/{app}/operations/{id}",
        id: "appOperation",
        summary: "One operation of the app",
        query: None,
        input: Input::None,
        output: Output::Json(200, "HistoryEntry"),
        errors: APP,
    },
    Route {
        method: HttpMethod::Get,
        path: "/v1/apps/{app}/diff",
        id: "diffApp",
        summary: "What an apply of the active version would change",
        query: None,
        input: Input::None,
        output: Output::List(200, "ChartDiff"),
        errors: &[
            E::BadRequest,
            E::NotFound,
            E::Invalid,
            E::Conflict,
            E::Failed,
        ],
    },
    Route {
        method: HttpMethod::Post,
        path: "/v1/apps/{app}/diff",
        id: "diffBundle",
        summary: "What an update to the sent bundle would change (nothing is stored)",
        query: None,
        input: Input::Bundle,
        output: Output::List(200, "ChartDiff"),
        errors: &[
            E::BadRequest,
            E::InvalidBundle,
            E::PayloadTooLarge,
            E::RequestTimeout,
            E::UnsupportedMediaType,
            E::NotFound,
            E::Invalid,
            E::Conflict,
            E::Failed,
        ],
    },
    Route {
        method: HttpMethod::Get,
        path: "/v1/apps/{app}/overrides",
        id: "listOverrides",
        summary: "The override layers each chart of the app has",
        query: None,
        input: Input::None,
        output: Output::List(200, "OverrideSummary"),
        errors: APP,
    },
    Route {
        method: HttpMethod::Get,
        path: "/v1/apps/{app}/overrides/{chart}",
        id: "showOverrides",
        summary: "Every layer of one chart and the merged values",
        query: None,
        input: Input::None,
        output: Output::Json(200, "ChartOverrides"),
        errors: &[E::BadRequest, E::NotFound, E::Invalid],
    },
    Route {
        method: HttpMethod::Put,
        path: "/v1/apps/{app}/overrides/{chart}",
        id: "setOverrides",
        summary: "Set the chart's user overrides",
        query: None,
        input: Input::Json("OverrideSet", true),
        output: Output::Json(200, "ChartOverrides"),
        errors: &[
            E::BadRequest,
            E::NotFound,
            E::PayloadTooLarge,
            E::RequestTimeout,
            E::Invalid,
            E::Busy,
            E::Conflict,
        ],
    },
    Route {
        method: HttpMethod::Delete,
        path: "/v1/apps/{app}/overrides/{chart}",
        id: "deleteOverrides",
        summary: "Drop the chart's user overrides",
        query: None,
        input: Input::None,
        output: Output::Json(200, "Deleted"),
        errors: &[E::BadRequest, E::NotFound, E::Invalid, E::Busy, E::Conflict],
    },
    Route {
        method: HttpMethod::Get,
        path: "/v1/volumes",
        id: "listVolumes",
        summary: "Every local volume and who uses it",
        query: None,
        input: Input::None,
        output: Output::List(200, "VolumeView"),
        errors: &[],
    },
    Route {
        method: HttpMethod::Post,
        path: "/v1/volumes",
        id: "createVolume",
        summary: "Create a local volume",
        query: None,
        input: Input::Json("VolumeRequest", true),
        output: Output::Json(201, "VolumeView"),
        errors: &[
            E::BadRequest,
            E::PayloadTooLarge,
            E::RequestTimeout,
            E::Invalid,
            E::AlreadyExists,
            E::Conflict,
            E::Failed,
        ],
    },
    Route {
        method: HttpMethod::Post,
        path: "/v1/platform/events",
        id: "postPlatformEvent",
        summary: "Post a platform event: apps that declared a trigger for it are asked whether to re-apply",
        query: None,
        input: Input::Json("PlatformEventRequest", true),
        output: Output::Json(200, "PlatformEventOutcome"),
        errors: &[
            E::BadRequest,
            E::PayloadTooLarge,
            E::RequestTimeout,
            E::Invalid,
        ],
    },
    Route {
        method: HttpMethod::Delete,
        path: "/v1/volumes/{name}",
        id: "removeVolume",
        summary: "Remove a local volume",
        query: Some(VOLUME_REMOVE_QUERY),
        input: Input::None,
        output: Output::Json(200, "VolumeView"),
        errors: &[E::BadRequest, E::NotFound, E::InUse, E::Conflict, E::Failed],
    },
];

/// A link from a success answer to another operation (OpenAPI `links`):
/// the name, the target's operation id, and each of its path parameters
/// with the runtime expression that fills it. They let a client, and
/// schemathesis's stateful phase, chain upload -> apply -> show.
pub(super) type Link = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// From an answer holding an `AppRecord` (its `name`).
pub(super) const APP_NAME: &[(&str, &str)] = &[("app", "$response.body#/name")];
/// From a `Started` answer (its `app.name` and `operation`).
pub(super) const STARTED_APP: &[(&str, &str)] = &[("app", "$response.body#/app/name")];
pub(super) const STARTED_OPERATION: &[(&str, &str)] = &[
    ("app", "$response.body#/app/name"),
    ("id", "$response.body#/operation"),
];

/// The links of the success answer of the operation `id`.
pub(super) fn links(id: &str) -> &'static [Link] {
    const STARTED: &[Link] = &[
        ("GetOperation", "appOperation", STARTED_OPERATION),
        ("GetApp", "showApp", STARTED_APP),
        ("GetHistory", "appHistory", STARTED_APP),
        ("AbortApp", "abortApp", STARTED_APP),
    ];
    match id {
        "uploadApp" => &[
            ("GetApp", "showApp", APP_NAME),
            ("ApplyApp", "applyApp", APP_NAME),
            ("DiffApp", "diffApp", APP_NAME),
            ("ListOverrides", "listOverrides", APP_NAME),
            ("GetHistory", "appHistory", APP_NAME),
            ("DeleteApp", "deleteApp", APP_NAME),
        ],
        "showApp" => &[
            ("ApplyApp", "applyApp", APP_NAME),
            ("RemoveApp", "removeApp", APP_NAME),
            ("DeleteApp", "deleteApp", APP_NAME),
        ],
        "applyApp" | "updateApp" | "recoverApp" | "rollbackApp" => STARTED,
        "removeApp" => &[
            ("GetOperation", "appOperation", STARTED_OPERATION),
            ("GetApp", "showApp", STARTED_APP),
            ("DeleteApp", "deleteApp", STARTED_APP),
        ],
        "createVolume" => &[(
            "RemoveVolume",
            "removeVolume",
            &[("name", "$response.body#/name")],
        )],
        _ => &[],
    }
}
