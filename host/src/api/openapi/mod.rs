//! The API's OpenAPI 3.1 document: every route with its parameters, its
//! request body, and every status it answers with, the bodies' schemas
//! derived (utoipa) from the [`super::wire`] types themselves, and the
//! error codes of each status. Served at `GET /v1/openapi.json` and kept
//! in `docs/src/reference/openapi.json` (`cargo xtask openapi` writes it; a test fails
//! when the two differ).
//!
//! The routes are listed once, in `routes::ROUTES`; a test drives each through
//! the router, so a route missing from the table or the router fails.
//!
//! Must not change what the server does: it describes it.

mod routes;
#[cfg(test)]
mod tests;

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
use routes::{COMMON, Input, Output, ROUTES, Route, links};

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
        .schema_from::<wire::PauseRequest>()
        .schema_from::<crate::store::AutomaticPause>()
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
        .schema_from::<wire::ObjectDrift>()
        .schema_from::<wire::DriftedField>()
        .schema_from::<wire::Drifted>()
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
        let retry_after = match status {
            429 => Some("Seconds to wait before trying again"),
            503 => Some(
                "Seconds to wait before trying again; only while no leader is known \
                 (nothing was done, the same request may be sent again)",
            ),
            _ => None,
        };
        if let Some(description) = retry_after {
            response = response.header(
                "Retry-After",
                HeaderBuilder::new()
                    .schema(Some(
                        ObjectBuilder::new().schema_type(SchemaType::Type(Type::Integer)),
                    ))
                    .description(Some(description))
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
