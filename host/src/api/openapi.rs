//! The API's OpenAPI 3.1 document: every route with its parameters, its
//! request body, and every status it answers with, the bodies' schemas
//! derived (utoipa) from the [`super::wire`] types themselves, and the
//! error codes of each status. Served at `GET /v1/openapi.json` and kept
//! in `docs/src/reference/openapi.json` (`cargo xtask openapi` writes it; a test fails
//! when the two differ).
//!
//! The routes are listed once, in `ROUTES`; a test drives each through
//! the router, so a route missing from the table or the router fails.
//!
//! Must not change what the server does: it describes it.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{ComponentsBuilder, ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, HeaderBuilder, InfoBuilder, OpenApi, OpenApiBuilder, PathItem, PathsBuilder,
    Ref, RefOr, Required, ResponseBuilder,
};
use utoipa::{PartialSchema, ToSchema};

use super::wire::{self, ErrorCode};

/// What a route takes in its body.
#[derive(Debug, Clone, Copy)]
enum Input {
    None,
    /// A JSON body of this schema; empty means the default.
    Json(&'static str, bool),
    /// A bundle (`application/gzip`), streamed.
    Bundle,
}

/// What a route answers on success.
#[derive(Debug, Clone, Copy)]
enum Output {
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
struct Route {
    method: HttpMethod,
    path: &'static str,
    id: &'static str,
    summary: &'static str,
    query: Option<&'static [(&'static str, &'static str)]>,
    input: Input,
    output: Output,
    errors: &'static [ErrorCode],
}

/// Codes any authenticated route may answer with: a missing or wrong
/// token, a peer waiting after failed authentications, a broken store.
const COMMON: &[ErrorCode] = &[
    ErrorCode::Unauthorized,
    ErrorCode::TooManyRequests,
    ErrorCode::Internal,
];

use ErrorCode as E;

/// An app named in the path: its name may be invalid or unknown.
const APP: &[ErrorCode] = &[E::BadRequest, E::NotFound];
/// A started operation: refused by the app's state or a plugin, or failed
/// before it was handed off.
const OPERATION: &[ErrorCode] = &[
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
const UPDATE_QUERY: &[(&str, &str)] = &[("reuse_user_overrides", "boolean"), ("force", "boolean")];
const VOLUME_REMOVE_QUERY: &[(&str, &str)] = &[("force", "boolean")];

/// Every route of the API.
const ROUTES: &[Route] = &[
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
type Link = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// From an answer holding an `AppRecord` (its `name`).
const APP_NAME: &[(&str, &str)] = &[("app", "$response.body#/name")];
/// From a `Started` answer (its `app.name` and `operation`).
const STARTED_APP: &[(&str, &str)] = &[("app", "$response.body#/app/name")];
const STARTED_OPERATION: &[(&str, &str)] = &[
    ("app", "$response.body#/app/name"),
    ("id", "$response.body#/operation"),
];

/// The links of the success answer of the operation `id`.
fn links(id: &str) -> &'static [Link] {
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

/// A success answer with its links.
fn linked(id: &str, mut response: ResponseBuilder) -> ResponseBuilder {
    for (name, target, parameters) in links(id) {
        let mut link = LinkBuilder::new().operation_id(*target);
        for (parameter, expression) in *parameters {
            link = link.parameter(*parameter, *expression);
        }
        response = response.link(*name, link.build());
    }
    response
}

/// The document, as the daemon serves it.
pub fn document() -> OpenApi {
    let mut paths = PathsBuilder::new();
    let mut by_path: Vec<(&str, PathItem)> = Vec::new();
    for route in ROUTES {
        let operation = operation(route);
        match by_path.iter_mut().find(|(path, _)| *path == route.path) {
            Some((_, item)) => {
                item.merge_operations(PathItem::new(route.method.clone(), operation))
            }
            None => by_path.push((route.path, PathItem::new(route.method.clone(), operation))),
        }
    }
    for (path, item) in by_path {
        paths = paths.path(path, item);
    }
    let components = schemas(ComponentsBuilder::new())
        .schema(ErrorCode::name(), ErrorCode::schema())
        .security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The token of `capstan serve --token-file`; a TCP listener needs it on \
                         every request, a unix socket has none",
                    ))
                    .build(),
            ),
        )
        .build();
    OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("capstan daemon API")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(
                    "The HTTP JSON API of `capstan serve` (docs/src/reference/http-api.md). Every error answer is \
                     an `ErrorBody` whose `code` names the cause; each status lists the codes \
                     it carries.",
                ))
                .build(),
        )
        .paths(paths.build())
        .components(Some(components))
        .security(Some([
            SecurityRequirement::new("bearer", Vec::<String>::new()),
            SecurityRequirement::default(),
        ]))
        .build()
}

/// The document as JSON text, as `docs/src/reference/openapi.json` holds it.
pub fn document_json() -> String {
    let mut text = document()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

/// `GET /v1/openapi.json`.
pub(super) async fn serve() -> Response {
    (
        [(header::CONTENT_TYPE, wire::JSON_CONTENT_TYPE)],
        document_json(),
    )
        .into_response()
}

/// Adds the schema of every body type to `components`.
fn schemas(components: ComponentsBuilder) -> ComponentsBuilder {
    components
        .schema_from::<wire::ErrorBody>()
        .schema_from::<wire::Health>()
        .schema_from::<wire::AppRecord>()
        .schema_from::<wire::AppDetails>()
        .schema_from::<wire::Started>()
        .schema_from::<wire::Deleted>()
        .schema_from::<wire::ApplyRequest>()
        .schema_from::<wire::RemoveRequest>()
        .schema_from::<wire::RollbackRequest>()
        .schema_from::<wire::HistoryEntry>()
        .schema_from::<wire::ChartDiff>()
        .schema_from::<wire::OverrideSummary>()
        .schema_from::<wire::ChartOverrides>()
        .schema_from::<wire::OverrideSet>()
        .schema_from::<wire::VolumeRequest>()
        .schema_from::<wire::VolumeView>()
        .schema_from::<wire::PlatformEventRequest>()
        .schema_from::<wire::PlatformEventOutcome>()
        .schema_from::<wire::FactsView>()
        // The types those bodies hold (a test checks that every `$ref`
        // resolves).
        .schema_from::<wire::OperationId>()
        .schema_from::<wire::VolumeRecord>()
        .schema_from::<wire::DecisionRecord>()
        .schema_from::<wire::LayerValues>()
        .schema_from::<wire::OperationCharts>()
        .schema_from::<wire::ChartProgress>()
        .schema_from::<wire::ChartState>()
        .schema_from::<wire::VersionSummary>()
        .schema_from::<wire::ChartSummary>()
        .schema_from::<crate::store::ReleaseRecord>()
        .schema_from::<crate::store::AppState>()
        .schema_from::<crate::store::Operation>()
        .schema_from::<crate::store::Outcome>()
        .schema_from::<crate::model::ObjectRef>()
        .schema_from::<crate::model::WorkloadKind>()
}

fn schema_ref(name: &str) -> RefOr<Schema> {
    RefOr::Ref(Ref::from_schema_name(name))
}

fn operation(route: &Route) -> utoipa::openapi::path::Operation {
    let mut builder = OperationBuilder::new()
        .operation_id(Some(route.id))
        .summary(Some(route.summary));
    for segment in route.path.split('/') {
        if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            let (schema, what): (RefOr<Schema>, &str) = match name {
                "id" => (
                    ObjectBuilder::new()
                        .schema_type(SchemaType::Type(Type::Integer))
                        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                            utoipa::openapi::KnownFormat::Int64,
                        )))
                        .into(),
                    "The operation's id",
                ),
                "app" => (name_schema(53), "The app's name (a DNS-1123 label)"),
                "chart" => (name_schema(63), "The chart's name"),
                _ => (name_schema(63), "The volume's name (a DNS-1123 label)"),
            };
            builder = builder.parameter(
                ParameterBuilder::new()
                    .name(name)
                    .parameter_in(ParameterIn::Path)
                    .required(Required::True)
                    .description(Some(what))
                    .schema(Some(schema)),
            );
        }
    }
    for (name, kind) in route.query.unwrap_or_default() {
        let schema = ObjectBuilder::new().schema_type(SchemaType::Type(match *kind {
            "boolean" => Type::Boolean,
            _ => Type::String,
        }));
        builder = builder.parameter(
            ParameterBuilder::new()
                .name(*name)
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .schema(Some(schema)),
        );
    }
    match route.input {
        Input::None => {}
        Input::Json(schema, required) => {
            builder = builder.request_body(Some(
                RequestBodyBuilder::new()
                    .required(Some(if required {
                        Required::True
                    } else {
                        Required::False
                    }))
                    .content(
                        wire::JSON_CONTENT_TYPE,
                        ContentBuilder::new()
                            .schema(Some(schema_ref(schema)))
                            .build(),
                    )
                    .build(),
            ));
        }
        Input::Bundle => {
            let bytes = ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::String))
                .content_media_type("application/gzip")
                .build();
            builder = builder.request_body(Some(
                RequestBodyBuilder::new()
                    .description(Some(
                        "A signed bundle (gzip-compressed tar), streamed to the verifier; at \
                         most the daemon's bundle size limit",
                    ))
                    .required(Some(Required::True))
                    .content(
                        wire::BUNDLE_CONTENT_TYPE,
                        ContentBuilder::new().schema(Some(bytes)).build(),
                    )
                    .build(),
            ));
        }
    }
    builder = match route.output {
        Output::Json(status, schema) => builder.response(
            status.to_string(),
            linked(
                route.id,
                ResponseBuilder::new().description("Success").content(
                    wire::JSON_CONTENT_TYPE,
                    ContentBuilder::new()
                        .schema(Some(schema_ref(schema)))
                        .build(),
                ),
            ),
        ),
        Output::List(status, schema) => builder.response(
            status.to_string(),
            ResponseBuilder::new().description("Success").content(
                wire::JSON_CONTENT_TYPE,
                ContentBuilder::new()
                    .schema(Some(
                        utoipa::openapi::schema::ArrayBuilder::new().items(schema_ref(schema)),
                    ))
                    .build(),
            ),
        ),
        Output::Empty(status) => builder.response(
            status.to_string(),
            ResponseBuilder::new().description("Done"),
        ),
        Output::Text => builder.response(
            "200",
            ResponseBuilder::new()
                .description("Prometheus text")
                .content(
                    "text/plain",
                    ContentBuilder::new()
                        .schema(Some(
                            ObjectBuilder::new().schema_type(SchemaType::Type(Type::String)),
                        ))
                        .build(),
                ),
        ),
        Output::Document => builder.response(
            "200",
            ResponseBuilder::new()
                .description("The OpenAPI 3.1 document of this API")
                .content(
                    wire::JSON_CONTENT_TYPE,
                    ContentBuilder::new()
                        .schema(Some(
                            ObjectBuilder::new().schema_type(SchemaType::Type(Type::Object)),
                        ))
                        .build(),
                ),
        ),
    };
    let changes = !matches!(route.method, HttpMethod::Get);
    for (status, codes) in errors_by_status(route.errors, changes) {
        let listed: Vec<String> = codes.iter().map(|c| format!("`{c}`")).collect();
        let mut response = ResponseBuilder::new()
            .description(format!("An error: {}", listed.join(", ")))
            .content(
                wire::JSON_CONTENT_TYPE,
                ContentBuilder::new()
                    .schema(Some(schema_ref("ErrorBody")))
                    .build(),
            );
        if status == 429 {
            response = response.header(
                "Retry-After",
                HeaderBuilder::new()
                    .schema(Some(
                        ObjectBuilder::new().schema_type(SchemaType::Type(Type::Integer)),
                    ))
                    .description(Some("Seconds to wait before trying again"))
                    .build(),
            );
        }
        builder = builder.response(status.to_string(), response);
    }
    builder.build()
}

/// The method as HTTP spells it.
#[cfg(test)]
fn method_name(method: &HttpMethod) -> &'static str {
    match method {
        HttpMethod::Get => "GET",
        HttpMethod::Post => "POST",
        HttpMethod::Put => "PUT",
        HttpMethod::Delete => "DELETE",
        HttpMethod::Options => "OPTIONS",
        HttpMethod::Head => "HEAD",
        HttpMethod::Patch => "PATCH",
        HttpMethod::Trace => "TRACE",
    }
}

/// A DNS-1123 label of at most `max` bytes, as `model::names` checks it.
fn name_schema(max: usize) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .pattern(Some("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))
        .min_length(Some(1))
        .max_length(Some(max))
        .into()
}

/// The codes a route may answer with (its own and [`COMMON`], and for a
/// route that `changes` something, `not-leader` from a follower in
/// cluster mode), grouped by status, in status order.
fn errors_by_status(own: &[ErrorCode], changes: bool) -> Vec<(u16, Vec<ErrorCode>)> {
    let mut grouped: Vec<(u16, Vec<ErrorCode>)> = Vec::new();
    for code in ErrorCode::ALL {
        let follower = changes && code == ErrorCode::NotLeader;
        if !own.contains(&code) && !COMMON.contains(&code) && !follower {
            continue;
        }
        let status = code.status().as_u16();
        match grouped.iter_mut().find(|(s, _)| *s == status) {
            Some((_, codes)) => codes.push(code),
            None => grouped.push((status, vec![code])),
        }
    }
    grouped.sort_by_key(|(status, _)| *status);
    grouped
}

impl PartialSchema for ErrorCode {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .enum_values(Some(ErrorCode::ALL.iter().map(|c| c.as_str())))
            .description(Some(
                "The stable cause of a failed request; each code has one HTTP status \
                 (docs/src/reference/error-codes.md). A client treats a code it does not know \
                 by its status.",
            ))
            .into()
    }
}

impl ToSchema for ErrorCode {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_in_docs_is_the_one_the_server_serves() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../docs/src/reference/openapi.json");
        if std::env::var_os("CAPSTAN_WRITE_OPENAPI").is_some() {
            // `cargo xtask openapi`.
            std::fs::write(&path, document_json()).unwrap();
        }
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            written == document_json(),
            "{} is not what the daemon serves; run `cargo xtask openapi`",
            path.display()
        );
    }

    #[test]
    fn every_code_is_in_the_document_and_every_route_names_its_statuses() {
        let json: serde_json::Value = serde_json::from_str(&document_json()).unwrap();
        let codes = &json["components"]["schemas"]["ErrorCode"]["enum"];
        for code in ErrorCode::ALL {
            assert!(
                codes.as_array().unwrap().contains(&code.as_str().into()),
                "{code}"
            );
        }
        for route in ROUTES {
            let method = method_name(&route.method).to_ascii_lowercase();
            let op = &json["paths"][route.path][&method];
            assert!(op.is_object(), "{method} {}", route.path);
            for status in ["401", "429", "500"] {
                assert!(op["responses"][status].is_object(), "{} {status}", route.id);
            }
        }
    }

    #[test]
    fn every_link_names_an_operation_and_fills_its_path_parameters() {
        let mut linked = 0;
        for route in ROUTES {
            for (name, target, parameters) in links(route.id) {
                linked += 1;
                assert!(
                    matches!(route.output, Output::Json(..)),
                    "{}: links from a JSON answer",
                    route.id
                );
                let target = ROUTES
                    .iter()
                    .find(|r| r.id == *target)
                    .unwrap_or_else(|| panic!("{}: {name}: no operation {target}", route.id));
                let mut wanted: Vec<&str> = target
                    .path
                    .split('/')
                    .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
                    .collect();
                let mut given: Vec<&str> = parameters.iter().map(|(p, _)| *p).collect();
                wanted.sort_unstable();
                given.sort_unstable();
                assert_eq!(wanted, given, "{}: {name}", route.id);
            }
        }
        assert!(linked > 0);
        let json: serde_json::Value = serde_json::from_str(&document_json()).unwrap();
        let link = &json["paths"]["/v1/apps"]["post"]["responses"]["201"]["links"]["ApplyApp"];
        assert_eq!(link["operationId"], "applyApp");
        assert_eq!(link["parameters"]["app"], "$response.body#/name");
    }

    #[test]
    fn every_reference_in_the_document_resolves() {
        fn refs<'a>(value: &'a serde_json::Value, found: &mut Vec<&'a str>) {
            match value {
                serde_json::Value::Object(map) => {
                    if let Some(serde_json::Value::String(target)) = map.get("$ref") {
                        found.push(target);
                    }
                    map.values().for_each(|v| refs(v, found));
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
                _ => {}
            }
        }
        let json: serde_json::Value = serde_json::from_str(&document_json()).unwrap();
        let mut found = Vec::new();
        refs(&json, &mut found);
        assert!(!found.is_empty());
        for target in found {
            let name = target.strip_prefix("#/components/schemas/").unwrap();
            assert!(
                json["components"]["schemas"][name].is_object(),
                "{target} does not resolve"
            );
        }
    }

    #[test]
    fn every_route_in_the_document_reaches_a_handler() {
        use tower::ServiceExt as _;
        let dir = tempfile::tempdir().unwrap();
        let target = std::sync::Arc::new(crate::kube::DirTarget::new(dir.path().join("applied")));
        let lifecycle = crate::lifecycle::Lifecycle::open(crate::lifecycle::Options::new(
            dir.path().join("state"),
            crate::trust::TrustStore::empty(),
            target,
        ))
        .unwrap();
        let router = super::super::router(lifecycle, None);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for route in ROUTES {
            let path = route
                .path
                .replace("{app}", "nosuch")
                .replace("{chart}", "nosuch")
                .replace("{name}", "nosuch")
                .replace("{id}", "1");
            let method = method_name(&route.method);
            let request = axum::http::Request::builder()
                .method(method)
                .uri(&path)
                .header(header::CONTENT_TYPE, wire::JSON_CONTENT_TYPE)
                .body(axum::body::Body::from("{}"))
                .unwrap();
            let response = runtime.block_on(router.clone().oneshot(request)).unwrap();
            let status = response.status();
            let body = runtime
                .block_on(http_body_util::BodyExt::collect(response.into_body()))
                .unwrap()
                .to_bytes();
            let code = serde_json::from_slice::<wire::ErrorBody>(&body)
                .map(|error| error.code)
                .ok();
            assert!(
                !matches!(
                    code,
                    Some(ErrorCode::UnknownEndpoint | ErrorCode::MethodNotAllowed)
                ),
                "{method} {path}: {status} {code:?}"
            );
        }
    }
}
