//! The HTTP side of the double: accepts connections, records every request,
//! applies injected faults and the bearer-token check, routes paths to
//! discovery or to the resource handlers, and streams watches.
//!
//! Routes:
//! - `GET /version`, `/healthz`, `/livez`, `/readyz`
//! - `GET /api`, `/api/v1`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}` (discovery)
//! - `/api/v1/[namespaces/{ns}/]{plural}[/{name}[/status]]` and the same under
//!   `/apis/{group}/{version}`: GET (get, list, watch, Table), POST (create),
//!   PUT (replace), PATCH (apply, merge, strategic merge), DELETE (one or a
//!   collection)
//! - anything else: a 404 `Status`.
//!
//! Handlers run synchronously under the store's mutex; only the body read,
//! injected delays and watch streams await, never while holding a lock.

use crate::apply::{self, path_string};
use crate::discovery::{self, ResourceInfo};
use crate::faults::{self, Fault, FaultKind};
use crate::openapi;
use crate::patch;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::{self, ApiError};
use crate::store::{ObjKey, Propagation, Store};
use crate::util;
use crate::validation::{self, FieldValidation};
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;

/// The largest request body accepted; larger ones get 413 (the real server allows 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// How many requests the record keeps; older ones are forgotten (a
/// standalone double may run for a long demo).
pub const MAX_RECORDED_REQUESTS: usize = 50_000;

/// One request as the double received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// `GET`, `PATCH`, ...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The raw query string (may be empty).
    pub query: String,
    /// The `Content-Type` header, if sent.
    pub content_type: Option<String>,
    /// The body as text (lossy UTF-8).
    pub body: String,
    /// The `Impersonate-User` header, if sent: the user the client asked
    /// to act as. Recorded only; the double does not authorize.
    pub impersonate_user: Option<String>,
}

/// State shared by the server, the controller loop and the [`crate::KubeDouble`] handle.
pub struct Shared {
    /// The stored objects.
    pub store: Mutex<Store>,
    /// Every request, in order.
    pub requests: Mutex<std::collections::VecDeque<RecordedRequest>>,
    /// Faults not yet used up.
    pub faults: Mutex<Vec<Fault>>,
    /// Whether controllers are simulated.
    pub simulate: AtomicBool,
    /// The bearer token every request needs, if any.
    pub token: Option<String>,
    /// Wakes watches when the store changes.
    pub changes: tokio::sync::watch::Receiver<u64>,
}

/// Locks a mutex, recovering from poisoning (a panicking test thread must not wedge the double).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn store(&self) -> MutexGuard<'_, Store> {
        lock(&self.store)
    }
}

/// A response body: whole, or a stream of watch events.
pub enum Body {
    /// A complete body.
    Full(Option<Bytes>),
    /// Chunks as they come; ends when the sender is dropped.
    Stream(mpsc::Receiver<Bytes>),
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx) => rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
        }
    }
}

type Resp = Response<Body>;

fn respond(code: u16, content_type: &str, body: Vec<u8>) -> Resp {
    let mut r = Response::new(Body::Full(Some(Bytes::from(body))));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(CONTENT_TYPE, v);
    }
    r
}

fn json_response(code: u16, value: &Value) -> Resp {
    respond(
        code,
        "application/json",
        serde_json::to_vec(value).unwrap_or_default(),
    )
}

fn error_response(e: &ApiError) -> Resp {
    let mut r = json_response(e.code, &e.to_status());
    if let Some(secs) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert("Retry-After", v);
    }
    r
}

fn with_warnings(mut r: Resp, warnings: &[String]) -> Resp {
    for w in warnings {
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{}\"", w.replace('"', "\\\""))) {
            r.headers_mut().append("Warning", v);
        }
    }
    r
}

/// What a handler needs to know about a request.
struct Ctx {
    method: String,
    query: Vec<(String, String)>,
    accept: String,
    content_type: Option<String>,
    user_agent: String,
    body: Bytes,
}

impl Ctx {
    fn q(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn flag(&self, key: &str) -> bool {
        matches!(self.q(key), Some("true" | "1" | ""))
    }

    fn dry_run(&self) -> Result<bool, ApiError> {
        match self.q("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "Invalid dry run value: \"{other}\"; supported values: All"
            ))),
        }
    }

    /// The field manager of a non-apply write: `fieldManager`, else the user agent's program name.
    fn update_manager(&self) -> String {
        if let Some(m) = self.q("fieldManager").filter(|m| !m.is_empty()) {
            return m.to_string();
        }
        let program = self.user_agent.split('/').next().unwrap_or_default().trim();
        if program.is_empty() {
            "unknown".into()
        } else {
            program.to_string()
        }
    }
}

/// Serves connections on `listener` until `shutdown` fires.
pub async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    mut shutdown: tokio::sync::oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let shared = shared.clone();
                tokio::spawn(async move {
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let service = hyper::service::service_fn(move |req| handle(shared.clone(), req));
                    // A failed or dropped connection concerns only its client.
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        }
    }
}

async fn read_body(body: Incoming, content_length: Option<usize>) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("the request body is larger than {MAX_BODY_BYTES} bytes"),
        )
    };
    if content_length.is_some_and(|n| n > MAX_BODY_BYTES) {
        return Err(too_large());
    }
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(too_large())
        }
        Err(e) => Err(ApiError::bad_request(format!(
            "reading the request body: {e}"
        ))),
    }
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Resp, std::io::Error> {
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    let raw_query = req.uri().query().unwrap_or_default().to_string();
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let content_type = header("content-type");
    let accept = header("accept").unwrap_or_default();
    let user_agent = header("user-agent").unwrap_or_default();
    let authorization = header("authorization");
    let impersonate_user = header("impersonate-user");
    let content_length = header("content-length").and_then(|v| v.parse::<usize>().ok());
    let body = read_body(req.into_body(), content_length).await;
    {
        let mut requests = lock(&shared.requests);
        if requests.len() >= MAX_RECORDED_REQUESTS {
            requests.pop_front();
        }
        requests.push_back(RecordedRequest {
            method: method.clone(),
            path: path.clone(),
            query: raw_query.clone(),
            content_type: content_type.clone(),
            body: body
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default(),
            impersonate_user,
        });
    }
    let fault = faults::take(&mut lock(&shared.faults), &method, &path);
    match fault {
        Some(FaultKind::Status(code)) => return Ok(error_response(&ApiError::from_code(code))),
        Some(FaultKind::TooManyRequests { retry_after_secs }) => {
            let mut e = ApiError::new(
                429,
                "TooManyRequests",
                "Too many requests, please try again later.",
            );
            e.retry_after = Some(retry_after_secs);
            return Ok(error_response(&e));
        }
        Some(FaultKind::Delay(d)) => tokio::time::sleep(d).await,
        Some(FaultKind::DropConnection) => {
            return Err(std::io::Error::other("injected fault: connection dropped"));
        }
        None => {}
    }
    if let Some(token) = &shared.token
        && authorization.as_deref() != Some(format!("Bearer {token}").as_str())
    {
        return Ok(error_response(&ApiError::new(
            401,
            "Unauthorized",
            "Unauthorized",
        )));
    }
    let body = match body {
        Ok(b) => b,
        Err(e) => return Ok(error_response(&e)),
    };
    let ctx = Ctx {
        method,
        query: util::parse_query(&raw_query),
        accept,
        content_type,
        user_agent,
        body,
    };
    Ok(route(&shared, &path, &ctx))
}

fn route(shared: &Arc<Shared>, path: &str, ctx: &Ctx) -> Resp {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let discovery_only = |v: Option<Value>| -> Resp {
        if ctx.method != "GET" {
            return error_response(&ApiError::method_not_allowed());
        }
        match v {
            Some(v) => json_response(200, &v),
            None => error_response(&ApiError::no_route()),
        }
    };
    let served = || {
        shared
            .store()
            .resources(shared.simulate.load(Ordering::SeqCst))
    };
    match segs.as_slice() {
        ["healthz" | "livez" | "readyz"] => respond(200, "text/plain", b"ok".to_vec()),
        ["version"] => discovery_only(Some(discovery::version())),
        ["api" | "apis"] if ctx.method == "GET" && discovery::wants_aggregated(&ctx.accept) => {
            let doc = discovery::aggregated(&served(), segs[0] == "api");
            respond(
                200,
                discovery::AGGREGATED_V2,
                serde_json::to_vec(&doc).unwrap_or_default(),
            )
        }
        ["api"] => discovery_only(Some(discovery::api_versions())),
        ["apis"] => discovery_only(Some(discovery::api_group_list(&served()))),
        ["apis", group] => discovery_only(discovery::api_group(&served(), group)),
        ["api", "v1"] => discovery_only(discovery::api_resource_list(&served(), "", "v1")),
        ["apis", group, version] => {
            discovery_only(discovery::api_resource_list(&served(), group, version))
        }
        ["openapi", "v3"] => discovery_only(Some(openapi::index(&served()))),
        ["openapi", "v3", "api", "v1"] => discovery_only(openapi::document(&served(), "", "v1")),
        ["openapi", "v3", "apis", group, version] => {
            discovery_only(openapi::document(&served(), group, version))
        }
        ["api", "v1", rest @ ..] => resource(shared, "", "v1", rest, ctx),
        ["apis", group, version, rest @ ..] => resource(shared, group, version, rest, ctx),
        _ => error_response(&ApiError::no_route()),
    }
}

/// Which object or collection a resource path names.
struct Target {
    r: ResourceInfo,
    namespace: Option<String>,
    name: Option<String>,
    status: bool,
    scale: bool,
}

fn resolve(shared: &Shared, group: &str, version: &str, segs: &[&str]) -> Result<Target, ApiError> {
    let (namespace, plural, name, sub) = match segs {
        [p] => (None, *p, None, None),
        ["namespaces", n] => (None, "namespaces", Some(*n), None),
        ["namespaces", n, s @ ("status" | "finalize")] => (None, "namespaces", Some(*n), Some(*s)),
        ["namespaces", ns, p] => (Some(*ns), *p, None, None),
        ["namespaces", ns, p, n] => (Some(*ns), *p, Some(*n), None),
        ["namespaces", ns, p, n, s] => (Some(*ns), *p, Some(*n), Some(*s)),
        [p, n] => (None, *p, Some(*n), None),
        [p, n, s] => (None, *p, Some(*n), Some(*s)),
        _ => return Err(ApiError::no_route()),
    };
    let served = shared
        .store()
        .resources(shared.simulate.load(Ordering::SeqCst));
    let r = served
        .into_iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
        .ok_or_else(ApiError::no_route)?;
    if namespace.is_some() && !r.namespaced {
        return Err(ApiError::no_route());
    }
    if name.is_some() && namespace.is_none() && r.namespaced {
        return Err(ApiError::no_route());
    }
    let (status, scale) = match sub {
        None => (false, false),
        Some("status") if r.status_subresource => (true, false),
        Some("finalize") if r.plural == "namespaces" => (true, false),
        Some("scale") if r.has_scale() => (false, true),
        Some(_) => return Err(ApiError::no_route()),
    };
    Ok(Target {
        r,
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
        status,
        scale,
    })
}

fn resource(shared: &Arc<Shared>, group: &str, version: &str, segs: &[&str], ctx: &Ctx) -> Resp {
    let t = match resolve(shared, group, version, segs) {
        Ok(t) => t,
        Err(e) => return error_response(&e),
    };
    if t.scale {
        return match scale(shared, &t, ctx) {
            Ok(r) => r,
            Err(e) => error_response(&e),
        };
    }
    let result = match (ctx.method.as_str(), &t.name) {
        ("GET", None) if ctx.flag("watch") => return watch(shared, &t, ctx),
        ("GET", None) => list(shared, &t, ctx),
        ("GET", Some(name)) => get(shared, &t, name, ctx),
        ("POST", None) => create(shared, &t, ctx),
        ("PUT", Some(name)) => replace(shared, &t, name, ctx),
        ("PATCH", Some(name)) => patch(shared, &t, name, ctx),
        ("DELETE", Some(name)) => delete(shared, &t, name, ctx),
        ("DELETE", None) => delete_collection(shared, &t, ctx),
        _ => Err(ApiError::method_not_allowed()),
    };
    match result {
        Ok(r) => r,
        Err(e) => error_response(&e),
    }
}

/// Sets `apiVersion` and `kind` to those of the endpoint the client used.
fn label(r: &ResourceInfo, mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!(r.api_version()));
        map.insert("kind".into(), json!(r.kind));
    }
    object
}

fn key_of(t: &Target, name: &str) -> ObjKey {
    ObjKey::new(&t.r, t.namespace.as_deref().unwrap_or_default(), name)
}

fn selectors(ctx: &Ctx) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels = LabelSelector::parse(ctx.q("labelSelector").unwrap_or_default())
        .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?;
    let fields = FieldSelector::parse(ctx.q("fieldSelector").unwrap_or_default())
        .map_err(ApiError::bad_request)?;
    Ok((labels, fields))
}

fn in_scope(t: &Target, key: &ObjKey) -> bool {
    key.group == t.r.group
        && key.plural == t.r.plural
        && t.namespace.as_ref().is_none_or(|ns| *ns == key.namespace)
}

fn wants_table(ctx: &Ctx) -> bool {
    ctx.accept.contains("as=Table")
}

fn age(created: &Value) -> String {
    let Some(t) = created.as_str().and_then(util::parse_rfc3339) else {
        return "<unknown>".into();
    };
    let secs = (util::unix_now() - t).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// A minimal `meta.k8s.io/v1` Table (Name, Age), which `kubectl get` prints.
fn table(items: &[Value], rv: u64, ctx: &Ctx) -> Value {
    let include = ctx.q("includeObject").unwrap_or("Metadata");
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let mut row = json!({"cells": [o["metadata"]["name"], age(&o["metadata"]["creationTimestamp"])]});
            let object = match include {
                "None" => None,
                "Object" => Some(o.clone()),
                _ => Some(json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]})),
            };
            if let (Some(object), Some(m)) = (object, row.as_object_mut()) {
                m.insert("object".into(), object);
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv.to_string()},
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0},
            {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0},
        ],
        "rows": rows,
    })
}

fn list(shared: &Shared, t: &Target, ctx: &Ctx) -> Result<Resp, ApiError> {
    let (labels, fields) = selectors(ctx)?;
    let limit = match ctx.q("limit") {
        None | Some("") => None,
        Some(l) => Some(
            l.parse::<usize>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
        ),
    }
    .filter(|l| *l > 0);
    let offset = match ctx.q("continue") {
        None | Some("") => 0,
        Some(c) => c
            .strip_prefix("offset-")
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| ApiError::bad_request(format!("invalid continue token {c:?}")))?,
    };
    let store = shared.store();
    let rv = store.resource_version();
    let matching: Vec<Value> = store
        .objects
        .iter()
        .filter(|(k, _)| in_scope(t, k))
        .map(|(_, s)| Store::render(s))
        .filter(|o| labels.matches(o) && fields.matches(o))
        .collect();
    drop(store);
    let total = matching.len();
    let end = limit.map_or(total, |l| offset.saturating_add(l).min(total));
    let items: Vec<Value> = matching
        .into_iter()
        .skip(offset)
        .take(end.saturating_sub(offset))
        .map(|o| label(&t.r, o))
        .collect();
    if wants_table(ctx) {
        return Ok(json_response(200, &table(&items, rv, ctx)));
    }
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if end < total
        && let Some(m) = metadata.as_object_mut()
    {
        m.insert("continue".into(), json!(format!("offset-{end}")));
        m.insert("remainingItemCount".into(), json!(total - end));
    }
    Ok(json_response(
        200,
        &json!({
            "kind": format!("{}List", t.r.kind),
            "apiVersion": t.r.api_version(),
            "metadata": metadata,
            "items": items,
        }),
    ))
}

fn get(shared: &Shared, t: &Target, name: &str, ctx: &Ctx) -> Result<Resp, ApiError> {
    let store = shared.store();
    let object = store
        .get(&key_of(t, name))
        .ok_or_else(|| ApiError::not_found(&t.r.group, &t.r.plural, name))?;
    let rv = store.resource_version();
    drop(store);
    let object = label(&t.r, object);
    if wants_table(ctx) {
        return Ok(json_response(200, &table(&[object], rv, ctx)));
    }
    Ok(json_response(200, &object))
}

/// Parses a JSON or YAML body into an object.
fn parse_body(ctx: &Ctx, yaml: bool) -> Result<Value, ApiError> {
    let value: Value = if yaml {
        serde_yaml_ng::from_slice(&ctx.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
    } else {
        serde_json::from_slice(&ctx.body).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        })?
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be an object",
        ));
    }
    validation::check_metadata(&value)?;
    Ok(value)
}

fn body_is_yaml(ctx: &Ctx) -> Result<bool, ApiError> {
    let ct = ctx.content_type.as_deref().unwrap_or("application/json");
    let mime = ct.split(';').next().unwrap_or_default().trim();
    match mime {
        "application/json" | "" | "*/*" => Ok(false),
        "application/yaml" => Ok(true),
        other => Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {other})"
            ),
        )),
    }
}

/// Refuses a body whose apiVersion/kind do not belong to the endpoint.
fn check_type(t: &Target, object: &Value, required: bool) -> Result<(), ApiError> {
    let api_version = object["apiVersion"].as_str();
    let kind = object["kind"].as_str();
    if required && (api_version.is_none() || kind.is_none()) {
        let missing = if api_version.is_none() {
            "apiVersion"
        } else {
            "kind"
        };
        return Err(ApiError::bad_request(format!("{missing} must be set")));
    }
    if let Some(av) = api_version {
        let group = av.rsplit_once('/').map(|(g, _)| g).unwrap_or_default();
        if group != t.r.group {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({})",
                t.r.api_version()
            )));
        }
    }
    if let Some(k) = kind
        && k != t.r.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            t.r.kind
        )));
    }
    Ok(())
}

fn check_namespace(store: &Store, t: &Target, object: &Value) -> Result<(), ApiError> {
    let Some(ns) = &t.namespace else {
        return Ok(());
    };
    if let Some(body_ns) = object["metadata"]["namespace"].as_str()
        && !body_ns.is_empty()
        && body_ns != ns
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let ns_key = ObjKey {
        group: String::new(),
        plural: "namespaces".into(),
        namespace: String::new(),
        name: ns.clone(),
    };
    match store.objects.get(&ns_key) {
        None => Err(ApiError::not_found("", "namespaces", ns)),
        Some(n) if n.object["metadata"].get("deletionTimestamp").is_some() => Err(ApiError::new(
            403,
            "Forbidden",
            format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            ),
        )),
        Some(_) => Ok(()),
    }
}

fn unknown_fields(
    t: &Target,
    object: &mut Value,
    mode: FieldValidation,
    strict_message: impl Fn(&[String]) -> String,
) -> Result<Vec<String>, ApiError> {
    let unknown = validation::take_unknown_fields(&t.r, object);
    if unknown.is_empty() || mode == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    if mode == FieldValidation::Strict {
        return Err(ApiError::bad_request(strict_message(&unknown)));
    }
    Ok(unknown
        .iter()
        .map(|f| format!("unknown field \"{}\"", f.trim_start_matches('.')))
        .collect())
}

fn decoding_error(unknown: &[String]) -> String {
    let fields: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field \"{}\"", f.trim_start_matches('.')))
        .collect();
    format!("strict decoding error: {}", fields.join(", "))
}

fn create(shared: &Shared, t: &Target, ctx: &Ctx) -> Result<Resp, ApiError> {
    // A namespaced kind is created under its namespace, never across them.
    if t.status || (t.r.namespaced && t.namespace.is_none()) {
        return Err(ApiError::method_not_allowed());
    }
    let mut object = parse_body(ctx, body_is_yaml(ctx)?)?;
    check_type(t, &object, false)?;
    let mode = FieldValidation::parse(ctx.q("fieldValidation"))?;
    let warnings = unknown_fields(t, &mut object, mode, decoding_error)?;
    let dry_run = ctx.dry_run()?;
    let mut store = shared.store();
    check_namespace(&store, t, &object)?;
    let name = match object["metadata"]["name"]
        .as_str()
        .filter(|n| !n.is_empty())
    {
        Some(n) => n.to_string(),
        None => match object["metadata"]["generateName"]
            .as_str()
            .filter(|n| !n.is_empty())
        {
            Some(prefix) => format!(
                "{prefix}{}",
                &util::new_uid(store.resource_version() + 7)[..5]
            ),
            None => {
                return Err(ApiError::invalid(
                    &t.r.group,
                    &t.r.kind,
                    "",
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                ));
            }
        },
    };
    let key = key_of(t, &name);
    if store.objects.contains_key(&key) {
        return Err(ApiError::already_exists(&t.r.group, &t.r.plural, &name));
    }
    let object = label(&t.r, object);
    let seq = store.resource_version();
    let mut object = object;
    validation::normalize(&t.r, &mut object, None, seq);
    let spec_changed = store.prepare(&key, &mut object, None);
    let mut managers = Vec::new();
    apply::record_update(
        None,
        &object,
        &mut managers,
        &ctx.update_manager(),
        &t.r.api_version(),
        &util::now_rfc3339(),
    );
    let out = if dry_run {
        dry_view(object, managers, None)
    } else {
        store.commit(key, object, managers, spec_changed)
    };
    Ok(with_warnings(json_response(201, &out), &warnings))
}

/// What a dry run answers: the object as it would be stored, with the
/// stored resourceVersion (none for a create), since nothing was written.
fn dry_view(object: Value, managers: Vec<apply::ManagedEntry>, old: Option<&Value>) -> Value {
    let view = Store::render(&crate::store::Stored {
        object,
        managers,
        spec_changed: std::time::Instant::now(),
        status_pinned: false,
    });
    crate::store::dry_run_view(view, old)
}

fn conflict_modified(t: &Target, name: &str) -> ApiError {
    ApiError::new(409, "Conflict", format!(
        "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
        status::qualified(&t.r.group, &t.r.plural)
    ))
    .with_details(json!({"name": name, "group": t.r.group, "kind": t.r.plural}))
}

/// Writes `new` over the stored `old` (already checked to exist) as a non-apply update.
fn write_update(
    store: &mut Store,
    t: &Target,
    key: ObjKey,
    mut new: Value,
    ctx: &Ctx,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let old = store
        .objects
        .get(&key)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&t.r.group, &t.r.plural, &key.name))?;
    if t.status {
        // Only the status changes through the status subresource.
        let status = new.get("status").cloned();
        new = old.object.clone();
        if let Some(map) = new.as_object_mut() {
            match status {
                Some(s) => map.insert("status".into(), s),
                None => map.remove("status"),
            };
        }
    } else if let (Some(map), Some(status), true) = (
        new.as_object_mut(),
        old.object.get("status"),
        t.r.status_subresource,
    ) {
        map.insert("status".into(), status.clone());
    }
    let mut new = label(&t.r, new);
    validation::check_update(&t.r, &old.object, &new)?;
    let seq = store.resource_version();
    validation::normalize(&t.r, &mut new, Some(&old.object), seq);
    let spec_changed = store.prepare(&key, &mut new, Some(&old.object));
    let mut managers = old.managers.clone();
    apply::record_update(
        Some(&old.object),
        &new,
        &mut managers,
        &ctx.update_manager(),
        &t.r.api_version(),
        &util::now_rfc3339(),
    );
    if dry_run {
        return Ok(dry_view(new, managers, Some(&old.object)));
    }
    Ok(store.commit(key, new, managers, spec_changed))
}

fn replace(shared: &Shared, t: &Target, name: &str, ctx: &Ctx) -> Result<Resp, ApiError> {
    let mut object = parse_body(ctx, body_is_yaml(ctx)?)?;
    check_type(t, &object, false)?;
    if let Some(n) = object["metadata"]["name"].as_str()
        && n != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    let mode = FieldValidation::parse(ctx.q("fieldValidation"))?;
    let warnings = unknown_fields(t, &mut object, mode, decoding_error)?;
    let dry_run = ctx.dry_run()?;
    let mut store = shared.store();
    let key = key_of(t, name);
    let Some(old) = store.objects.get(&key) else {
        return Err(ApiError::not_found(&t.r.group, &t.r.plural, name));
    };
    if let Some(rv) = object["metadata"]["resourceVersion"].as_str()
        && Some(rv) != old.object["metadata"]["resourceVersion"].as_str()
    {
        return Err(conflict_modified(t, name));
    }
    let out = write_update(&mut store, t, key, object, ctx, dry_run)?;
    Ok(with_warnings(json_response(200, &out), &warnings))
}

fn patch(shared: &Shared, t: &Target, name: &str, ctx: &Ctx) -> Result<Resp, ApiError> {
    let ct = ctx.content_type.as_deref().unwrap_or_default();
    let mime = ct.split(';').next().unwrap_or_default().trim();
    match mime {
        "application/apply-patch+yaml" => server_side_apply(shared, t, name, ctx),
        "application/merge-patch+json"
        | "application/strategic-merge-patch+json"
        | "application/json-patch+json" => {
            if ctx.q("force").is_some() {
                return Err(ApiError::bad_request(
                    "force: Forbidden: may not be specified for non-apply patch",
                ));
            }
            let patch: Value = serde_json::from_slice(&ctx.body)
                .map_err(|e| ApiError::bad_request(format!("invalid patch body: {e}")))?;
            if mime == "application/json-patch+json" && !patch.is_array() {
                return Err(ApiError::bad_request(
                    "a JSON patch must be an array of operations",
                ));
            }
            if mime != "application/json-patch+json" && !patch.is_object() {
                return Err(ApiError::bad_request("a merge patch must be an object"));
            }
            let mode = FieldValidation::parse(ctx.q("fieldValidation"))?;
            let dry_run = ctx.dry_run()?;
            let mut store = shared.store();
            let key = key_of(t, name);
            let Some(old) = store.objects.get(&key) else {
                return Err(ApiError::not_found(&t.r.group, &t.r.plural, name));
            };
            let mut new = Store::render(old);
            if mime == "application/json-patch+json" {
                patch::json_patch(&mut new, &patch).map_err(|e| {
                    ApiError::new(
                        422,
                        "Invalid",
                        format!("the JSON patch could not be applied: {e}"),
                    )
                })?;
            } else {
                patch::merge(&mut new, &patch);
            }
            validation::check_metadata(&new)?;
            let warnings = unknown_fields(t, &mut new, mode, decoding_error)?;
            if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("name".into(), json!(name));
            }
            let out = write_update(&mut store, t, key, new, ctx, dry_run)?;
            Ok(with_warnings(json_response(200, &out), &warnings))
        }
        _ => Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {mime:?})"
            ),
        )),
    }
}

fn server_side_apply(shared: &Shared, t: &Target, name: &str, ctx: &Ctx) -> Result<Resp, ApiError> {
    let manager = ctx.q("fieldManager").unwrap_or_default().to_string();
    if manager.is_empty() {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            "fieldManager",
            "FieldValueRequired",
            "Required value: is required for apply patch",
        ));
    }
    let force = match ctx.q("force") {
        None | Some("false") => false,
        Some("true") | Some("") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "invalid force value {other:?}"
            )));
        }
    };
    let mode = FieldValidation::parse(ctx.q("fieldValidation"))?;
    let dry_run = ctx.dry_run()?;
    let mut applied = parse_body(ctx, true)?;
    check_type(t, &applied, true)?;
    match applied["metadata"]["name"].as_str() {
        Some(n) if n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    if let Some(meta) = applied.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("name".into(), json!(name));
    } else if let Some(map) = applied.as_object_mut() {
        map.insert("metadata".into(), json!({"name": name}));
    }
    let ns = t.namespace.clone().unwrap_or_default();
    let gvk = format!("{}, Kind={}", t.r.api_version(), t.r.kind);
    let warnings = unknown_fields(t, &mut applied, mode, |unknown| {
        let obj = if ns.is_empty() {
            name.to_string()
        } else {
            format!("{ns}/{name}")
        };
        format!(
            "failed to create typed patch object ({obj}; {gvk}): {}: field not declared in schema",
            unknown.join(", ")
        )
    })?;
    if t.status {
        // Applying to /status sets only the status.
        let status = applied.get("status").cloned().unwrap_or(json!({}));
        let mut store = shared.store();
        let key = key_of(t, name);
        let Some(old) = store.objects.get(&key).cloned() else {
            return Err(ApiError::not_found(&t.r.group, &t.r.plural, name));
        };
        let mut new = old.object.clone();
        if let Some(map) = new.as_object_mut() {
            map.insert("status".into(), status);
        }
        let out = write_update(&mut store, t, key, new, ctx, dry_run)?;
        return Ok(json_response(200, &out));
    }
    // With a status subresource, the main resource ignores status.
    if let Some(map) = applied.as_object_mut().filter(|_| t.r.status_subresource) {
        map.remove("status");
    }
    let mut store = shared.store();
    let key = key_of(t, name);
    let existing = store.objects.get(&key).cloned();
    if existing.is_none() {
        check_namespace(&store, t, &applied)?;
    }
    let (base, entries) = match &existing {
        Some(s) => (s.object.clone(), s.managers.clone()),
        None => (json!({}), Vec::new()),
    };
    let now = util::now_rfc3339();
    let (mut merged, managers) = apply::apply(
        &base,
        &entries,
        &applied,
        &manager,
        &t.r.api_version(),
        force,
        &now,
    )
    .map_err(|conflicts| conflict_error(t, name, &conflicts))?;
    let seq = store.resource_version();
    let old_object = existing.as_ref().map(|s| &s.object);
    if let Some(old) = old_object {
        validation::check_update(&t.r, old, &merged)?;
    }
    merged = label(&t.r, merged);
    validation::normalize(&t.r, &mut merged, old_object, seq);
    let spec_changed = store.prepare(&key, &mut merged, old_object);
    let code = if existing.is_some() { 200 } else { 201 };
    let out = if dry_run {
        dry_view(merged, managers, existing.as_ref().map(|s| &s.object))
    } else {
        store.commit(key, merged, managers, spec_changed)
    };
    Ok(with_warnings(json_response(code, &out), &warnings))
}

/// The 409 an apply gets when it would change another manager's field, worded as the real server words it.
fn conflict_error(t: &Target, name: &str, conflicts: &[apply::Conflict]) -> ApiError {
    let message = if let [c] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with \"{}\": {}",
            c.manager,
            path_string(&c.path)
        )
    } else {
        let mut by_manager: Vec<(&str, Vec<String>)> = Vec::new();
        for c in conflicts {
            let p = path_string(&c.path);
            match by_manager.iter_mut().find(|(m, _)| *m == c.manager) {
                Some((_, paths)) => paths.push(p),
                None => by_manager.push((&c.manager, vec![p])),
            }
        }
        let mut s = format!("Apply failed with {} conflicts:", conflicts.len());
        for (m, paths) in by_manager {
            s.push_str(&format!(" conflicts with \"{m}\""));
            if let [p] = paths.as_slice() {
                s.push_str(&format!(": {p}"));
            } else {
                s.push(':');
                for p in paths {
                    s.push_str(&format!("\n- {p}"));
                }
            }
        }
        s
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|c| json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{}\"", c.manager), "field": path_string(&c.path)}))
        .collect();
    ApiError::new(409, "Conflict", message).with_details(json!({
        "name": name, "group": t.r.group, "kind": t.r.plural, "causes": causes,
    }))
}

fn delete_options(ctx: &Ctx) -> Result<(Propagation, bool, Value), ApiError> {
    let opts: Value = if ctx.body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(&ctx.body)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
    };
    if !opts.is_object() {
        return Err(ApiError::bad_request(
            "invalid DeleteOptions: not an object",
        ));
    }
    let policy = opts["propagationPolicy"]
        .as_str()
        .or(ctx.q("propagationPolicy"));
    let propagation = match policy {
        None | Some("Background") => Propagation::Background,
        Some("Foreground") => Propagation::Foreground,
        Some("Orphan") => Propagation::Orphan,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
            )));
        }
    };
    let propagation = if opts["orphanDependents"] == true {
        Propagation::Orphan
    } else {
        propagation
    };
    let dry_run = match &opts["dryRun"] {
        Value::Array(a) => a.iter().any(|v| v == "All"),
        _ => ctx.dry_run()?,
    };
    Ok((propagation, dry_run, opts["preconditions"].clone()))
}

fn delete(shared: &Shared, t: &Target, name: &str, ctx: &Ctx) -> Result<Resp, ApiError> {
    if t.status {
        return Err(ApiError::method_not_allowed());
    }
    let (propagation, dry_run, preconditions) = delete_options(ctx)?;
    let mut store = shared.store();
    let key = key_of(t, name);
    let Some(current) = store.get(&key) else {
        return Err(ApiError::not_found(&t.r.group, &t.r.plural, name));
    };
    for (field, what) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
        if let Some(want) = preconditions[field].as_str()
            && Some(want) != current["metadata"][field].as_str()
        {
            return Err(ApiError::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: {what} in precondition: {want}, {what} in object meta: {}",
                    status::qualified(&t.r.group, &t.r.plural),
                    current["metadata"][field].as_str().unwrap_or_default()
                ),
            ));
        }
    }
    if dry_run {
        return Ok(json_response(200, &label(&t.r, current)));
    }
    let out = store.delete(&key, propagation).unwrap_or(current);
    Ok(json_response(200, &label(&t.r, out)))
}

fn delete_collection(shared: &Shared, t: &Target, ctx: &Ctx) -> Result<Resp, ApiError> {
    let (labels, fields) = selectors(ctx)?;
    let (propagation, dry_run, _) = delete_options(ctx)?;
    let mut store = shared.store();
    let keys: Vec<ObjKey> = store
        .objects
        .iter()
        .filter(|(k, s)| in_scope(t, k) && labels.matches(&s.object) && fields.matches(&s.object))
        .map(|(k, _)| k.clone())
        .collect();
    let mut items = Vec::new();
    for k in keys {
        let out = if dry_run {
            store.get(&k)
        } else {
            store.delete(&k, propagation)
        };
        items.extend(out.map(|o| label(&t.r, o)));
    }
    let rv = store.resource_version();
    Ok(json_response(
        200,
        &json!({
            "kind": format!("{}List", t.r.kind), "apiVersion": t.r.api_version(),
            "metadata": {"resourceVersion": rv.to_string()}, "items": items,
        }),
    ))
}

/// The `autoscaling/v1` Scale of a workload.
fn scale_of(object: &Value) -> Value {
    let selector: Vec<String> = object["spec"]["selector"]["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    let meta = &object["metadata"];
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"],
                     "resourceVersion": meta["resourceVersion"], "creationTimestamp": meta["creationTimestamp"]},
        "spec": {"replicas": object["spec"]["replicas"].as_i64().unwrap_or(1)},
        "status": {"replicas": object["status"]["replicas"].as_i64().unwrap_or(0), "selector": selector.join(",")},
    })
}

/// `GET`, `PUT` and `PATCH` on `/scale`: reads or sets `spec.replicas`.
fn scale(shared: &Shared, t: &Target, ctx: &Ctx) -> Result<Resp, ApiError> {
    let Some(name) = t.name.clone() else {
        return Err(ApiError::no_route());
    };
    let mut store = shared.store();
    let key = key_of(t, &name);
    let current = store
        .get(&key)
        .ok_or_else(|| ApiError::not_found(&t.r.group, &t.r.plural, &name))?;
    let mut wanted = scale_of(&current);
    match ctx.method.as_str() {
        "GET" => return Ok(json_response(200, &wanted)),
        "PUT" => wanted = parse_body(ctx, body_is_yaml(ctx)?)?,
        "PATCH" => {
            let mime = ctx
                .content_type
                .as_deref()
                .unwrap_or_default()
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            let body: Value = serde_json::from_slice(&ctx.body)
                .map_err(|e| ApiError::bad_request(format!("invalid patch body: {e}")))?;
            match mime.as_str() {
                "application/json-patch+json" => {
                    patch::json_patch(&mut wanted, &body).map_err(|e| {
                        ApiError::new(
                            422,
                            "Invalid",
                            format!("the JSON patch could not be applied: {e}"),
                        )
                    })?
                }
                "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
                    patch::merge(&mut wanted, &body)
                }
                _ => {
                    return Err(ApiError::new(
                        415,
                        "UnsupportedMediaType",
                        format!("unsupported patch type {mime:?} for /scale"),
                    ));
                }
            }
        }
        _ => return Err(ApiError::method_not_allowed()),
    }
    let replicas = wanted["spec"]["replicas"]
        .as_i64()
        .filter(|n| *n >= 0)
        .ok_or_else(|| {
            ApiError::invalid(
                "autoscaling",
                "Scale",
                &name,
                "spec.replicas",
                "FieldValueInvalid",
                "Invalid value: must be a non-negative integer",
            )
        })?;
    let mut new = current;
    if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("replicas".into(), json!(replicas));
    }
    let parent = Target {
        r: t.r.clone(),
        namespace: t.namespace.clone(),
        name: t.name.clone(),
        status: false,
        scale: false,
    };
    let out = write_update(&mut store, &parent, key, new, ctx, ctx.dry_run()?)?;
    Ok(json_response(200, &scale_of(&out)))
}

fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

fn watch(shared: &Arc<Shared>, t: &Target, ctx: &Ctx) -> Resp {
    let (labels, fields) = match selectors(ctx) {
        Ok(s) => s,
        Err(e) => return error_response(&e),
    };
    let timeout = ctx
        .q("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(1800)
        .min(3600);
    let send_initial = ctx.q("sendInitialEvents") == Some("true");
    let mut changes = shared.changes.clone();
    let mut lines = Vec::new();
    let start = {
        let store = shared.store();
        let current = || {
            store
                .objects
                .iter()
                .filter(|(k, _)| in_scope(t, k))
                .map(|(_, s)| label(&t.r, Store::render(s)))
                .filter(|o| labels.matches(o) && fields.matches(o))
                .collect::<Vec<_>>()
        };
        let rv_param = ctx.q("resourceVersion").unwrap_or_default();
        let start = match rv_param {
            "" | "0" => {
                lines.extend(current().iter().map(|o| event_line("ADDED", o)));
                store.resource_version()
            }
            rv => match rv.parse::<u64>() {
                Ok(n) if n >= store.oldest_event_rv() => {
                    if send_initial {
                        lines.extend(current().iter().map(|o| event_line("ADDED", o)));
                    }
                    if send_initial {
                        store.resource_version()
                    } else {
                        n
                    }
                }
                Ok(n) => {
                    let status = ApiError::new(
                        410,
                        "Expired",
                        format!(
                            "too old resource version: {n} ({})",
                            store.oldest_event_rv()
                        ),
                    )
                    .to_status();
                    let line = event_line("ERROR", &status);
                    return respond(200, "application/json", line.to_vec());
                }
                Err(_) => {
                    return error_response(&ApiError::bad_request(format!(
                        "invalid resourceVersion {rv:?}"
                    )));
                }
            },
        };
        if send_initial {
            lines.push(event_line(
                "BOOKMARK",
                &json!({
                    "kind": t.r.kind, "apiVersion": t.r.api_version(),
                    "metadata": {"resourceVersion": store.resource_version().to_string(),
                                 "annotations": {"k8s.io/initial-events-end": "true"}},
                }),
            ));
        }
        start
    };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let shared = shared.clone();
    let (group, plural, namespace) = (t.r.group.clone(), t.r.plural.clone(), t.namespace.clone());
    let r = t.r.clone();
    tokio::spawn(async move {
        for line in lines {
            if tx.send(line).await.is_err() {
                return;
            }
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
        let mut last = start;
        loop {
            let batch: Vec<Bytes> = {
                let store = lock(&shared.store);
                let batch = store
                    .events_after(last)
                    .filter(|e| e.key.group == group && e.key.plural == plural)
                    .filter(|e| namespace.as_ref().is_none_or(|ns| *ns == e.key.namespace))
                    .filter(|e| labels.matches(&e.object) && fields.matches(&e.object))
                    .map(|e| event_line(e.kind, &label(&r, e.object.clone())))
                    .collect();
                last = last.max(store.resource_version());
                batch
            };
            for line in batch {
                if tx.send(line).await.is_err() {
                    return;
                }
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tx.closed() => return,
            }
        }
    });
    let mut resp = Response::new(Body::Stream(rx));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}
