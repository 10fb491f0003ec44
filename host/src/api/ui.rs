//! The read-only status page at `/ui` (docs/src/operating/status-page.md).
//!
//! Owns: the page's routes, its login form and session cookies (a TCP
//! listener's token entered once, answered with a random session id in a
//! cookie that is `HttpOnly`, `SameSite=Strict` and, with TLS, `Secure`;
//! a session is accepted for reads only, so a cookie can never start an
//! operation), the HTML the page is made of, its style sheet and the
//! script that polls the JSON API for live progress.
//!
//! Every page is a pure function of the data it shows (`render_*`), and
//! every piece of text from outside (app names, values, versions, plugin
//! and error messages) reaches the HTML through one function, [`escape`].
//! The script only ever writes text (`textContent`), and the pages are
//! served with a Content-Security-Policy that allows the daemon's own
//! script and style sheet and nothing inline, so a value that slipped
//! through could still not run.
//!
//! Must not touch: the lifecycle's rules; the page reads what the JSON API
//! reads (`show`, `history`, `override_show`, `volume_list`) and changes
//! nothing.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use axum::Form;
use axum::extract::rejection::{FormRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde_json::Value;

use super::server::{Api, ApiError, blocking, constant_time_eq};
use super::wire::{AppDetails, AppRecord, ChartOverrides, FactsView, HistoryEntry, VolumeView};
use crate::lifecycle::{DurationHistogram, OPERATION_BUCKETS};
use crate::model::AppName;
use crate::store::Outcome;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "capstan_session";
/// The most sessions kept; the oldest is forgotten beyond it.
const MAX_SESSIONS: usize = 256;

/// The pages' Content-Security-Policy: the daemon's own script, style
/// sheet and API, nothing inline, no frames.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const STYLE: &str = include_str!("ui/status.css");
const SCRIPT: &str = include_str!("ui/status.js");

/// Escapes `text` for HTML element content and double- or single-quoted
/// attribute values: the one way outside text reaches a page.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The session ids handed out by the login form, newest last.
#[derive(Clone, Default)]
pub(super) struct Sessions(Arc<Mutex<VecDeque<String>>>);

impl Sessions {
    /// A new random session id, remembered.
    fn create(&self) -> Option<String> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).ok()?;
        let id = hex::encode(bytes);
        let mut ids = self.0.lock().ok()?;
        if ids.len() >= MAX_SESSIONS {
            ids.pop_front();
        }
        ids.push_back(id.clone());
        Some(id)
    }

    /// Whether the request's cookie names a session handed out here.
    pub(super) fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(given) = session_of(headers) else {
            return false;
        };
        self.0.lock().is_ok_and(|ids| {
            ids.iter()
                .any(|id| constant_time_eq(id.as_bytes(), given.as_bytes()))
        })
    }
}

/// The session cookie's value in `headers`, if any.
fn session_of(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
}

/// Whether `path` is one of the page's HTML pages (a browser without a
/// session is sent to the login form rather than given a JSON 401).
pub(super) fn is_page(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

/// Paths served without a session: the login form and the static assets.
pub(super) fn is_public(path: &str) -> bool {
    matches!(path, "/ui/login" | "/ui/status.css" | "/ui/status.js")
}

/// The `Set-Cookie` value of a new session.
pub fn session_cookie(id: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict{secure}")
}

fn page(status: StatusCode, html: String) -> Response {
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// An error as a page: the one-line message, escaped.
fn error_page(error: &ApiError) -> Response {
    page(
        error.code.status(),
        layout(
            "error",
            &format!("<p class=\"error\">{}</p>", escape(&error.message)),
            "",
        ),
    )
}

// ---- handlers ----

pub(super) async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}

pub(super) async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

pub(super) async fn login_form(State(api): State<Api>) -> Response {
    if api.token.is_none() {
        return Redirect::to("/ui").into_response();
    }
    page(StatusCode::OK, render_login(None))
}

/// The login form's fields.
#[derive(serde::Deserialize)]
pub(super) struct Login {
    token: String,
}

pub(super) async fn login(
    State(api): State<Api>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<super::Peer>>>,
    form: Result<Form<Login>, FormRejection>,
) -> Response {
    let Some(token) = &api.token else {
        return Redirect::to("/ui").into_response();
    };
    let peer = peer.map(|axum::Extension(axum::extract::ConnectInfo(peer))| peer);
    if let Some(wait) = api.throttle.wait(peer.as_ref()) {
        let mut response = page(
            StatusCode::TOO_MANY_REQUESTS,
            render_login(Some(&format!(
                "too many wrong tokens; retry in {}s",
                wait.as_secs().max(1)
            ))),
        );
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(wait.as_secs().max(1)),
        );
        return response;
    }
    let given = form.map(|Form(login)| login.token).unwrap_or_default();
    if !constant_time_eq(given.trim().as_bytes(), token.as_bytes()) {
        let (failures, _) = api.throttle.failed(peer.as_ref());
        tracing::warn!(target: "capstan::audit", peer = %super::server::describe(peer.as_ref()), failures,
            "status page login with a wrong token refused");
        return page(StatusCode::UNAUTHORIZED, render_login(Some("wrong token")));
    }
    api.throttle.succeeded(peer.as_ref());
    let Some(id) = api.sessions.create() else {
        return page(
            StatusCode::INTERNAL_SERVER_ERROR,
            render_login(Some("could not start a session")),
        );
    };
    let mut response = Redirect::to("/ui").into_response();
    if let Ok(value) = HeaderValue::from_str(&session_cookie(&id, api.secure_cookie)) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

pub(super) async fn index(State(api): State<Api>) -> Response {
    let lc = api.lifecycle.clone();
    let durations = api.lifecycle.metrics().operation_durations();
    match blocking(move || Ok((lc.list()?, lc.volume_list()?, lc.facts()))).await {
        Ok((apps, volumes, facts)) => page(
            StatusCode::OK,
            render_index(&apps, &volumes, &durations, Some(&facts)),
        ),
        Err(e) => error_page(&e),
    }
}

/// Everything the app page shows, read in one go.
pub struct AppPage {
    /// The app and its versions, charts and decisions.
    pub details: AppDetails,
    /// The layers of each chart, in the order of `details.charts`.
    pub overrides: Vec<ChartOverrides>,
    /// Its operations, oldest first.
    pub history: Vec<HistoryEntry>,
    /// The volumes its components mount.
    pub volumes: Vec<VolumeView>,
}

pub(super) async fn app(
    State(api): State<Api>,
    app: Result<Path<String>, PathRejection>,
) -> Response {
    let name = match app {
        Ok(Path(name)) => name,
        Err(rejection) => return error_page(&ApiError::bad_request(rejection.body_text())),
    };
    let name = match AppName::new(&name) {
        Ok(name) => name,
        Err(e) => return error_page(&ApiError::bad_request(e.to_string())),
    };
    let lc = api.lifecycle.clone();
    let read = blocking(move || {
        let details = lc.show(&name)?;
        let mut overrides = Vec::new();
        for chart in &details.charts {
            overrides.push(lc.override_show(&name, &chart.name)?);
        }
        let history = lc.history(&name)?;
        let prefix = format!("{}/", name.as_str());
        let volumes = lc
            .volume_list()?
            .into_iter()
            .filter(|v| v.used_by.iter().any(|u| u.starts_with(&prefix)))
            .collect();
        Ok(AppPage {
            details,
            overrides,
            history,
            volumes,
        })
    })
    .await;
    match read {
        Ok(data) => page(StatusCode::OK, render_app(&data)),
        Err(e) => error_page(&e),
    }
}

// ---- rendering: pure functions of the data ----

fn layout(title: &str, body: &str, poll: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · capstan</title><link rel=\"stylesheet\" href=\"/ui/status.css\">\
         </head><body{}><header><a href=\"/ui\">capstan</a> status</header><main>{}</main>\
         <script src=\"/ui/status.js\"></script></body></html>\n",
        escape(title),
        if poll.is_empty() {
            String::new()
        } else {
            format!(" data-poll=\"{}\"", escape(poll))
        },
        body
    )
}

/// The login form, with `error` above it after a refused token.
pub fn render_login(error: Option<&str>) -> String {
    let error = error
        .map(|e| format!("<p class=\"error\" id=\"login-error\">{}</p>", escape(e)))
        .unwrap_or_default();
    layout(
        "log in",
        &format!(
            "<h1>Log in</h1>{error}<form method=\"post\" action=\"/ui/login\">\
             <label>Token <input type=\"password\" name=\"token\" id=\"token\" \
             autocomplete=\"current-password\" required></label> \
             <button type=\"submit\" id=\"login\">Log in</button></form>\
             <p class=\"note\">The daemon's bearer token (<code>--token-file</code>); \
             kept in a session cookie until the daemon restarts.</p>"
        ),
        "",
    )
}

/// The app list: every app with its state, version and the running
/// operation's progress, every volume, and the daemon's metrics of
/// operation durations as a chart.
pub fn render_index(
    apps: &[AppRecord],
    volumes: &[VolumeView],
    durations: &[DurationHistogram],
    facts: Option<&FactsView>,
) -> String {
    let mut body = String::from("<h1>Apps</h1>");
    if apps.is_empty() {
        body.push_str("<p class=\"note\">No apps uploaded.</p>");
    } else {
        body.push_str(
            "<table id=\"apps\"><thead><tr><th>App</th><th>State</th><th>Version</th>\
             <th>Progress</th><th>Message</th></tr></thead><tbody>",
        );
        for app in apps {
            let name = escape(app.name.as_str());
            let _ = write!(
                body,
                "<tr data-app=\"{name}\"><td><a href=\"/ui/apps/{href}\">{name}</a></td>\
                 <td><span class=\"state {state}\" data-field=\"state\">{state}</span> \
                 <span class=\"mark\" data-field=\"reapply\">{reapply}</span></td>\
                 <td data-field=\"version\">{version}</td>\
                 <td data-field=\"progress\">{progress}</td>\
                 <td data-field=\"message\">{message}</td></tr>",
                href = escape(&super::encode_segment(app.name.as_str())),
                state = escape(app.state.as_str()),
                version = escape(&version_of(app)),
                progress = escape(app.progress.as_deref().unwrap_or("")),
                message = escape(&first_line(app.message.as_deref().unwrap_or(""))),
                reapply = escape(&reapply_text(app)),
            );
        }
        body.push_str("</tbody></table>");
    }
    if let Some(facts) = facts {
        body.push_str(&render_facts(facts));
    }
    body.push_str("<h2>Volumes</h2>");
    body.push_str(&volume_table(volumes));
    body.push_str("<h2>Operation durations</h2>");
    body.push_str(&render_operation_durations(durations));
    layout("apps", &body, "/v1/apps")
}

/// What the app list shows of a `reapply-needed` mark (its reason is on
/// the app's page); empty when unmarked. The script writes the same.
fn reapply_text(app: &AppRecord) -> String {
    match &app.reapply_needed {
        Some(_) => "reapply needed".into(),
        None => String::new(),
    }
}

/// The facts plugins are handed, as `capstan facts show` prints them:
/// each field with where it came from, the last change and error, then
/// the nodes.
pub fn render_facts(view: &FactsView) -> String {
    let facts = &view.facts;
    let mut body = String::from(
        "<h2>Platform facts</h2><table id=\"facts\"><thead><tr><th>Fact</th><th>Value</th>\
         <th>From</th></tr></thead><tbody>",
    );
    for row in view.summary() {
        let _ = write!(
            body,
            "<tr><td>{}</td><td data-fact=\"{}\">{}</td><td>{}</td></tr>",
            escape(row.label),
            escape(row.field),
            escape(&row.value),
            escape(&row.source),
        );
    }
    let _ = write!(
        body,
        "</tbody></table><p class=\"note\">Generation {}{}</p>",
        view.generation,
        match view.changes.is_empty() {
            true => String::new(),
            false => format!("; last change: {}", escape(&view.changes.join("; "))),
        }
    );
    if let Some(error) = &view.error {
        let _ = write!(
            body,
            "<p class=\"error\" id=\"facts-error\">Reading the facts failed (the facts above stay in effect): {}</p>",
            escape(error)
        );
    }
    let _ = write!(
        body,
        "<h3>Nodes ({})</h3>",
        escape(&view.source_of("nodes"))
    );
    if facts.nodes.is_empty() {
        body.push_str("<p class=\"note\">No nodes.</p>");
        return body;
    }
    body.push_str(
        "<table id=\"nodes\"><thead><tr><th>Node</th><th>Roles</th><th>Schedulable</th>\
         <th>State</th><th>Labels</th></tr></thead><tbody>",
    );
    let word = |v: Option<serde_json::Result<Value>>| {
        v.and_then(Result::ok)
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "-".into())
    };
    for node in &facts.nodes {
        let roles: Vec<String> = node
            .roles
            .iter()
            .map(|r| format!("{r:?}").to_lowercase())
            .collect();
        let state = [
            word(node.administrative.map(serde_json::to_value)),
            word(node.operational.map(serde_json::to_value)),
            word(node.availability.map(serde_json::to_value)),
        ]
        .join("/");
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&node.name),
            escape(&roles.join(",")),
            if node.schedulable { "yes" } else { "no" },
            escape(&state),
            node.labels.len(),
        );
    }
    body.push_str("</tbody></table>");
    body
}

/// The daemon's operation duration histograms (`/metrics`,
/// `capstan_operation_duration_seconds`) as a bar chart (inline SVG): a
/// group of bars per operation kind, one bar per bucket with the number
/// of operations that took that long (not cumulative; the last bar is
/// those over the last bound), and a table of counts and means.
pub fn render_operation_durations(durations: &[DurationHistogram]) -> String {
    let durations: Vec<&DurationHistogram> = durations.iter().filter(|d| d.count > 0).collect();
    if durations.is_empty() {
        return "<p class=\"note\" id=\"operation-durations\">No operation has finished since \
                the daemon started.</p>"
            .into();
    }
    let tallest = durations
        .iter()
        .flat_map(|d| duration_bars(d).into_iter().map(|(_, _, n)| n))
        .max()
        .unwrap_or(0)
        .max(1);
    let (bar, gap, group_gap, height, label) = (10i64, 2i64, 28i64, 60i64, 16i64);
    let per_group = (bar + gap) * (OPERATION_BUCKETS.len() as i64 + 1);
    let width = (per_group + group_gap) * durations.len() as i64;
    let mut svg = format!(
        "<svg id=\"operation-durations\" width=\"{width}\" height=\"{total}\" \
         viewBox=\"0 0 {width} {total}\" role=\"img\" aria-label=\"operation durations\">",
        total = height + label + 2
    );
    for (i, d) in durations.iter().enumerate() {
        let x0 = i as i64 * (per_group + group_gap);
        let operation = escape(&d.operation);
        let _ = write!(
            svg,
            "<g data-operation=\"{operation}\" data-count=\"{}\" data-sum=\"{}\">",
            d.count, d.sum
        );
        for (j, (range, le, n)) in duration_bars(d).into_iter().enumerate() {
            let h = if n == 0 {
                1
            } else {
                (n as i64 * height / tallest as i64).max(2)
            };
            let _ = write!(
                svg,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{bar}\" height=\"{h}\" class=\"{class}\" \
                 data-le=\"{le}\" data-count=\"{n}\"><title>{title}</title></rect>",
                x = x0 + j as i64 * (bar + gap),
                y = height + 1 - h,
                class = if n == 0 { "empty" } else { "bar" },
                le = escape(&le),
                title = escape(&format!("{}: {n} took {range}", d.operation)),
            );
        }
        let _ = write!(
            svg,
            "<text x=\"{x0}\" y=\"{}\">{operation}</text></g>",
            height + label
        );
    }
    svg.push_str("</svg>");
    let mut table = String::from(
        "<table id=\"operation-durations-table\"><thead><tr><th>Operation</th>\
         <th>Finished</th><th>Mean</th><th>Total</th></tr></thead><tbody>",
    );
    for d in &durations {
        let _ = write!(
            table,
            "<tr data-operation=\"{}\"><td>{}</td><td class=\"count\">{}</td>\
             <td class=\"mean\">{}</td><td class=\"sum\">{}</td></tr>",
            escape(&d.operation),
            escape(&d.operation),
            d.count,
            escape(&secs(d.sum / d.count as f64)),
            escape(&secs(d.sum)),
        );
    }
    table.push_str("</tbody></table>");
    format!(
        "<figure class=\"durations\">{svg}<figcaption>Operations by how long they took, \
         from the daemon's metrics (<code>capstan_operation_duration_seconds</code> at \
         <code>/metrics</code>) since it started; buckets at most {}s, then over {}s.\
         </figcaption></figure>{table}",
        escape(
            &OPERATION_BUCKETS
                .iter()
                .map(f64::to_string)
                .collect::<Vec<_>>()
                .join("s, ")
        ),
        OPERATION_BUCKETS[OPERATION_BUCKETS.len() - 1]
    )
}

/// One histogram's bars: per bucket, the operations in it alone (not
/// cumulative), as (range for people, upper bound as `/metrics` prints
/// it, count); the last bar is those over the last bound (`+Inf`).
fn duration_bars(d: &DurationHistogram) -> Vec<(String, String, u64)> {
    let mut out = Vec::new();
    let mut below = 0u64;
    let mut lower: Option<f64> = None;
    for (bound, cumulative) in &d.buckets {
        let label = match lower {
            None => format!("at most {bound}s"),
            Some(low) => format!("{low}s to {bound}s"),
        };
        out.push((label, bound.to_string(), cumulative.saturating_sub(below)));
        below = *cumulative;
        lower = Some(*bound);
    }
    let last = lower.map_or_else(|| "any".to_owned(), |low| format!("over {low}s"));
    out.push((last, "+Inf".to_owned(), d.count.saturating_sub(below)));
    out
}

/// Seconds with millisecond precision, e.g. `1.234s`.
fn secs(seconds: f64) -> String {
    format!("{seconds:.3}s")
}

/// One app: state and live progress, the last error in full, charts and
/// groups, each chart's layers side by side with where each value came
/// from, workload decisions, volumes, and the history as a timeline with
/// a chart of operation durations.
pub fn render_app(data: &AppPage) -> String {
    let app = &data.details.app;
    let name = escape(app.name.as_str());
    let mut body = format!(
        "<h1>{name}</h1><dl class=\"summary\" data-app=\"{name}\">\
         <dt>State</dt><dd><span class=\"state {state}\" data-field=\"state\">{state}</span></dd>\
         <dt>Version</dt><dd data-field=\"version\">{version}</dd>\
         <dt>Progress</dt><dd data-field=\"progress\" id=\"progress\">{progress}</dd>\
         <dt>Re-apply</dt><dd data-field=\"reapply-full\" id=\"reapply\">{reapply}</dd></dl>",
        reapply = escape(app.reapply_needed.as_deref().unwrap_or("")),
        state = escape(app.state.as_str()),
        version = escape(&version_of(app)),
        progress = escape(app.progress.as_deref().unwrap_or("")),
    );
    let _ = write!(
        body,
        "<h2>Last message</h2><pre id=\"message\" data-app=\"{name}\" data-field=\"message-full\">{}</pre>",
        escape(app.message.as_deref().unwrap_or(""))
    );
    if let Some(error) = last_error(&data.history) {
        let _ = write!(
            body,
            "<h2>Last error</h2><pre class=\"error\" id=\"last-error\">{} {}: {}</pre>",
            escape(&error.id.to_string()),
            escape(error.operation.as_str()),
            escape(error.message.as_deref().unwrap_or("(no message)"))
        );
    }

    body.push_str("<h2>Charts</h2>");
    if data.details.charts.is_empty() {
        body.push_str("<p class=\"note\">No charts.</p>");
    } else {
        body.push_str(
            "<table id=\"charts\"><thead><tr><th>Chart</th><th>Group</th><th>Namespace</th>\
             <th>Release</th><th>Enabled</th></tr></thead><tbody>",
        );
        for chart in &data.details.charts {
            let _ = write!(
                body,
                "<tr><td><a href=\"#chart-{id}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&chart.name),
                escape(&chart.group),
                escape(&chart.namespace),
                escape(&chart.release),
                if chart.enabled { "yes" } else { "no" },
                id = escape(&anchor(&chart.name)),
            );
        }
        body.push_str("</tbody></table>");
    }

    for chart in &data.overrides {
        body.push_str(&render_layers(chart));
    }

    body.push_str("<h2>Workload decisions</h2>");
    if data.details.decisions.is_empty() {
        body.push_str("<p class=\"note\">None.</p>");
    } else {
        body.push_str(
            "<table id=\"decisions\"><thead><tr><th>Component</th><th>Kind</th>\
             <th>Decided by</th><th>When</th></tr></thead><tbody>",
        );
        for d in &data.details.decisions {
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&d.component),
                escape(d.kind.as_str()),
                escape(&d.decided_by),
                escape(&utc(d.decided_at)),
            );
        }
        body.push_str("</tbody></table>");
    }

    body.push_str("<h2>Volumes</h2>");
    body.push_str(&volume_table(&data.volumes));

    body.push_str("<h2>History</h2>");
    body.push_str(&render_durations(&data.history));
    body.push_str(&render_timeline(&data.history));

    layout(
        app.name.as_str(),
        &body,
        &format!("/v1/apps/{}", super::encode_segment(app.name.as_str())),
    )
}

/// One chart's layers side by side (chart defaults, static, system, user,
/// merged), and each merged value with the highest layer that set it.
pub fn render_layers(chart: &ChartOverrides) -> String {
    let id = escape(&anchor(&chart.chart));
    let mut out = format!(
        "<section class=\"chart\" id=\"chart-{id}\"><h3>Chart {} <span class=\"note\">version {}</span></h3>",
        escape(&chart.chart),
        escape(&chart.version)
    );
    out.push_str("<div class=\"layers\">");
    for layer in &chart.layers {
        let _ = write!(
            out,
            "<div class=\"layer\" data-layer=\"{l}\"><h4>{l}</h4><pre>{}</pre></div>",
            escape(&shown_value(&layer.values)),
            l = escape(&layer.layer),
        );
    }
    let _ = write!(
        out,
        "<div class=\"layer merged\" data-layer=\"merged\"><h4>merged</h4><pre>{}</pre></div></div>",
        escape(&shown_value(&chart.merged))
    );
    for warning in &chart.warnings {
        let _ = write!(out, "<p class=\"warning\">{}</p>", escape(warning));
    }
    let origins = origins(chart);
    if !origins.is_empty() {
        out.push_str(
            "<details><summary>Where each value came from</summary><table class=\"origins\">\
             <thead><tr><th>Key</th><th>Value</th><th>Layer</th></tr></thead><tbody>",
        );
        for (key, value, layer) in origins {
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
                escape(&key),
                escape(&value),
                escape(&layer)
            );
        }
        out.push_str("</tbody></table></details>");
    }
    out.push_str("</section>");
    out
}

/// Every leaf of the merged values, its value, and the highest layer that
/// has that key (`-` when none does, e.g. a value a template computed).
pub fn origins(chart: &ChartOverrides) -> Vec<(String, String, String)> {
    let mut merged = BTreeMap::new();
    leaves(&chart.merged, String::new(), &mut merged);
    let layers: Vec<(String, BTreeMap<String, String>)> = chart
        .layers
        .iter()
        .map(|layer| {
            let mut map = BTreeMap::new();
            leaves(&layer.values, String::new(), &mut map);
            (layer.layer.clone(), map)
        })
        .collect();
    merged
        .into_iter()
        .map(|(key, value)| {
            let from = layers
                .iter()
                .rev()
                .find(|(_, map)| map.contains_key(&key))
                .map_or_else(|| "-".to_owned(), |(name, _)| name.clone());
            (key, value, from)
        })
        .collect()
}

fn leaves(value: &Value, path: String, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, value) in map {
                let path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                leaves(value, path, out);
            }
        }
        Value::Null if path.is_empty() => {}
        value if !path.is_empty() => {
            out.insert(path, value.to_string());
        }
        _ => {}
    }
}

/// The history, newest first, as a timeline.
pub fn render_timeline(history: &[HistoryEntry]) -> String {
    if history.is_empty() {
        return "<p class=\"note\">No operations.</p>".into();
    }
    let mut out = String::from("<ol class=\"timeline\" id=\"timeline\">");
    for entry in history.iter().rev() {
        let states = format!(
            "{} → {} → {}",
            entry.from_state.map_or("-", |s| s.as_str()),
            entry.via_state.as_str(),
            entry.to_state.map_or("…", |s| s.as_str())
        );
        let took = entry
            .finished_at
            .map(|end| format!(" in {}", seconds(end - entry.started_at)))
            .unwrap_or_default();
        let _ = write!(
            out,
            "<li class=\"{outcome}\"><span class=\"when\">{when}</span> \
             <b>{id} {operation}</b> <span class=\"outcome\">{outcome}</span>{took} \
             <span class=\"states\">{states}</span>",
            when = escape(&utc(entry.started_at)),
            id = escape(&entry.id.to_string()),
            operation = escape(entry.operation.as_str()),
            outcome = escape(entry.outcome.as_str()),
            took = escape(&took),
            states = escape(&states),
        );
        if let Some(message) = &entry.message {
            let _ = write!(out, "<pre>{}</pre>", escape(message));
        }
        out.push_str("</li>");
    }
    out.push_str("</ol>");
    out
}

/// A bar chart (inline SVG) of how long each finished operation took,
/// oldest first.
pub fn render_durations(history: &[HistoryEntry]) -> String {
    let finished: Vec<(&HistoryEntry, i64)> = history
        .iter()
        .filter_map(|e| e.finished_at.map(|end| (e, (end - e.started_at).max(0))))
        .collect();
    if finished.is_empty() {
        return String::new();
    }
    let longest = finished.iter().map(|(_, ms)| *ms).max().unwrap_or(0).max(1);
    let (bar, gap, height) = (18i64, 4i64, 80i64);
    let width = (bar + gap) * finished.len() as i64;
    let mut out = format!(
        "<figure class=\"durations\"><svg id=\"durations\" width=\"{width}\" height=\"{}\" \
         viewBox=\"0 0 {width} {}\" role=\"img\" aria-label=\"operation durations\">",
        height + 2,
        height + 2
    );
    for (i, (entry, ms)) in finished.iter().enumerate() {
        let h = (ms * height / longest).max(1);
        let fill = if entry.outcome == Outcome::Succeeded {
            "#2e7d32"
        } else {
            "#c62828"
        };
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{bar}\" height=\"{h}\" fill=\"{fill}\">\
             <title>{}</title></rect>",
            i as i64 * (bar + gap),
            height + 2 - h,
            escape(&format!(
                "{} {} {}: {}",
                entry.id,
                entry.operation.as_str(),
                entry.outcome.as_str(),
                seconds(*ms)
            ))
        );
    }
    let _ = write!(
        out,
        "</svg><figcaption>Operation durations, oldest first (longest {})</figcaption></figure>",
        escape(&seconds(longest))
    );
    out
}

fn volume_table(volumes: &[VolumeView]) -> String {
    if volumes.is_empty() {
        return "<p class=\"note\">No volumes.</p>".into();
    }
    let mut out = String::from(
        "<table class=\"volumes\"><thead><tr><th>Volume</th><th>Node</th><th>Path</th>\
         <th>Size</th><th>Claim</th><th>Used by</th></tr></thead><tbody>",
    );
    for v in volumes {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&v.volume.name),
            escape(&v.volume.node),
            escape(&v.volume.host_path.to_string_lossy()),
            escape(&v.volume.size),
            escape(&v.claim),
            escape(&v.used_by.join(", ")),
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// The failed operation last in `history`, if any.
fn last_error(history: &[HistoryEntry]) -> Option<&HistoryEntry> {
    history
        .iter()
        .rev()
        .find(|e| e.outcome == Outcome::Failed && e.message.is_some())
}

fn version_of(app: &AppRecord) -> String {
    match &app.target_version {
        Some(target) if *target != app.active_version => {
            format!("{} → {target}", app.active_version)
        }
        _ => app.active_version.clone(),
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").to_owned()
}

/// A layer's values as indented JSON; `(not set)` for `null`.
fn shown_value(value: &Value) -> String {
    if value.is_null() {
        return "(not set)".into();
    }
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// An id fragment for a chart name (letters, digits, `-`, `_` kept).
fn anchor(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn seconds(ms: i64) -> String {
    format!("{}.{:03}s", ms / 1000, (ms % 1000).abs())
}

/// Unix milliseconds as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::{ChartSummary, LayerValues};
    use crate::model::WorkloadKind;
    use crate::store::{AppState, DecisionRecord, Operation, OperationId, VolumeRecord};
    use serde_json::json;

    const HOSTILE: &str = "<script>alert(\"x&'y\")</script>";

    fn record(name: &str, message: Option<&str>) -> AppRecord {
        AppRecord {
            name: AppName::new(name).unwrap(),
            state: AppState::Applying,
            active_version: "1.0.0".into(),
            target_version: Some("<b>2.0.0</b>".into()),
            progress: Some("chart <web> 1/2".into()),
            message: message.map(str::to_owned),
            created_at: 0,
            updated_at: 0,
            reapply_needed: None,
        }
    }

    fn entry(id: i64, outcome: Outcome, message: Option<&str>) -> HistoryEntry {
        HistoryEntry {
            id: OperationId(id),
            app: AppName::new("shop").unwrap(),
            operation: Operation::Apply,
            from_state: Some(AppState::Uploaded),
            via_state: AppState::Applying,
            to_state: Some(AppState::ApplyFailed),
            outcome,
            message: message.map(str::to_owned),
            started_at: 1_000,
            finished_at: Some(3_500),
            request: None,
        }
    }

    /// No `<script` and no unescaped quote from the hostile text.
    fn assert_inert(html: &str) {
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains("alert(\"x"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(&quot;x&amp;&#39;y&quot;)&lt;/script&gt;"));
    }

    #[test]
    fn escape_turns_markup_quotes_and_ampersands_into_entities() {
        assert_eq!(
            escape(HOSTILE),
            "&lt;script&gt;alert(&quot;x&amp;&#39;y&quot;)&lt;/script&gt;"
        );
        assert_eq!(escape("a & b"), "a &amp; b");
        assert_eq!(escape("&amp;"), "&amp;amp;");
        assert_eq!(escape("plain ünïcode"), "plain ünïcode");
        assert_eq!(escape(""), "");
    }

    #[test]
    fn the_app_list_escapes_names_versions_progress_and_messages() {
        let html = render_index(&[record("shop", Some(HOSTILE))], &[], &[], None);
        assert_inert(&html);
        assert!(html.contains("1.0.0 → &lt;b&gt;2.0.0&lt;/b&gt;"));
        assert!(html.contains("chart &lt;web&gt; 1/2"));
        assert!(html.contains("href=\"/ui/apps/shop\""));
        assert!(html.contains("data-poll=\"/v1/apps\""));
        // The page's own script is the only script element.
        assert_eq!(html.matches("<script").count(), 1);
    }

    #[test]
    fn the_facts_show_their_sources_nodes_and_a_mark_and_escape_them() {
        use crate::sandbox::{Node, NodeRole, StorageClass};
        let mut facts = crate::lifecycle::default_facts();
        facts.kubernetes_version = "1.37.2".into();
        facts.storage_classes = vec![StorageClass {
            name: HOSTILE.into(),
            provisioner: String::new(),
            is_default: true,
        }];
        let mut node = Node::new(HOSTILE, vec![NodeRole::Controller]);
        node.schedulable = false;
        facts.nodes = vec![node];
        let view = FactsView {
            facts,
            sources: [("kubernetesVersion".to_string(), "cluster".to_string())]
                .into_iter()
                .collect(),
            generation: 3,
            changes: vec![format!("node {HOSTILE}: unschedulable")],
            error: Some(HOSTILE.into()),
        };
        let mut app = record("shop", None);
        app.reapply_needed = Some("facts changed".into());
        let html = render_index(&[app], &[], &[], Some(&view));
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(
            html.contains("<td data-fact=\"kubernetesVersion\">1.37.2</td><td>cluster</td>"),
            "{html}"
        );
        assert!(html.contains("(default)</td><td>default</td>"), "{html}");
        assert!(
            html.contains("Generation 3; last change: node &lt;script&gt;"),
            "{html}"
        );
        assert!(html.contains("id=\"facts-error\""), "{html}");
        assert!(
            html.contains("<td>controller</td><td>no</td><td>-/-/-</td><td>0</td>"),
            "{html}"
        );
        assert!(
            html.contains("data-field=\"reapply\">reapply needed</span>"),
            "{html}"
        );
    }

    #[test]
    fn an_empty_list_says_so() {
        let html = render_index(&[], &[], &[], None);
        assert!(html.contains("No apps uploaded."));
        assert!(html.contains("No volumes."));
        assert!(html.contains("No operation has finished"));
    }

    fn histogram(operation: &str, seconds: &[f64]) -> DurationHistogram {
        DurationHistogram {
            operation: operation.into(),
            buckets: OPERATION_BUCKETS
                .iter()
                .map(|&bound| {
                    (
                        bound,
                        seconds.iter().filter(|&&s| s <= bound).count() as u64,
                    )
                })
                .collect(),
            count: seconds.len() as u64,
            sum: seconds.iter().sum(),
        }
    }

    #[test]
    fn the_operation_duration_chart_draws_each_bucket_of_the_metrics() {
        let durations = [
            histogram("apply", &[0.3, 0.4, 4.0, 400.0]),
            histogram("remove", &[0.05]),
            histogram(HOSTILE, &[]),
        ];
        let html = render_operation_durations(&durations);
        // A kind with nothing finished is left out (and so is its name).
        assert_eq!(html.matches("<g data-operation").count(), 2, "{html}");
        assert!(!html.contains("alert"), "{html}");
        let bars = OPERATION_BUCKETS.len() + 1;
        assert_eq!(html.matches("<rect").count(), 2 * bars);
        // Per bucket, not cumulative: two in (0.25, 0.5], one in (2.5, 5],
        // one over the last bound; the tallest bar is full height.
        assert!(
            html.contains("height=\"60\" class=\"bar\" data-le=\"0.5\" data-count=\"2\""),
            "{html}"
        );
        assert!(
            html.contains("height=\"30\" class=\"bar\" data-le=\"5\" data-count=\"1\""),
            "{html}"
        );
        assert!(html.contains("data-le=\"+Inf\" data-count=\"1\""), "{html}");
        assert!(
            html.contains("class=\"empty\" data-le=\"1\" data-count=\"0\""),
            "{html}"
        );
        assert!(
            html.contains("<title>apply: 2 took 0.25s to 0.5s</title>"),
            "{html}"
        );
        assert!(
            html.contains("<title>apply: 1 took over 300s</title>"),
            "{html}"
        );
        // The table: counts, means and totals.
        assert!(html.contains("<td class=\"count\">4</td><td class=\"mean\">101.175s</td><td class=\"sum\">404.700s</td>"), "{html}");
        assert!(
            html.contains("<td class=\"count\">1</td><td class=\"mean\">0.050s</td>"),
            "{html}"
        );
        let index = render_index(&[], &[], &durations, None);
        assert!(index.contains("id=\"operation-durations\""));
    }

    fn page_data() -> AppPage {
        let app = record("shop", Some(HOSTILE));
        AppPage {
            details: AppDetails {
                app,
                versions: Vec::new(),
                charts: vec![ChartSummary {
                    name: "web".into(),
                    group: "front<end>".into(),
                    namespace: "shop".into(),
                    release: "shop-web".into(),
                    enabled: true,
                }],
                decisions: vec![DecisionRecord {
                    app: AppName::new("shop").unwrap(),
                    component: "web".into(),
                    kind: WorkloadKind::Deployment,
                    decided_by: "ha-replicas".into(),
                    traits_digest: String::new(),
                    decided_at: 86_400_000,
                }],
                releases: Vec::new(),
                chart_progress: None,
            },
            overrides: vec![ChartOverrides {
                app: "shop".into(),
                chart: "web".into(),
                version: "1.0.0".into(),
                layers: vec![
                    LayerValues {
                        layer: "chart-defaults".into(),
                        values: json!({"replicas": 1, "image": {"tag": "1"}}),
                    },
                    LayerValues {
                        layer: "static".into(),
                        values: Value::Null,
                    },
                    LayerValues {
                        layer: "system".into(),
                        values: json!({"replicas": 2}),
                    },
                    LayerValues {
                        layer: "user".into(),
                        values: json!({"banner": HOSTILE}),
                    },
                ],
                merged: json!({"replicas": 2, "image": {"tag": "1"}, "banner": HOSTILE}),
                warnings: vec![format!("user key {HOSTILE} is not in the chart's defaults")],
            }],
            history: vec![
                entry(1, Outcome::Succeeded, None),
                entry(2, Outcome::Failed, Some(HOSTILE)),
            ],
            volumes: vec![VolumeView {
                volume: VolumeRecord {
                    name: "data".into(),
                    node: "n1".into(),
                    host_path: "/srv/<data>".into(),
                    size: "1Gi".into(),
                    storage_class: "local".into(),
                    created_at: 0,
                    namespace: "shop".into(),
                },
                claim: "shop/data".into(),
                used_by: vec!["shop/web".into()],
            }],
        }
    }

    #[test]
    fn the_app_page_shows_every_part_escaped() {
        let html = render_app(&page_data());
        assert_inert(&html);
        assert_eq!(html.matches("<script").count(), 1);
        // Charts and groups, decisions and who decided, volumes.
        assert!(html.contains("<td>front&lt;end&gt;</td>"));
        assert!(html.contains("<td>ha-replicas</td>"));
        assert!(html.contains("1970-01-02 00:00:00 UTC"));
        assert!(html.contains("/srv/&lt;data&gt;"));
        // The last error in full, the timeline newest first.
        assert!(html.contains("id=\"last-error\">#2 apply: &lt;script&gt;"));
        let newest = html.find("<b>#2 apply</b>").unwrap();
        let oldest = html.find("<b>#1 apply</b>").unwrap();
        assert!(newest < oldest);
        assert!(html.contains(" in 2.500s"));
        assert!(html.contains("data-poll=\"/v1/apps/shop\""));
    }

    #[test]
    fn layers_stand_side_by_side_with_where_each_value_came_from() {
        let data = page_data();
        let html = render_layers(&data.overrides[0]);
        for layer in ["chart-defaults", "static", "system", "user", "merged"] {
            assert!(html.contains(&format!("data-layer=\"{layer}\"")), "{layer}");
        }
        assert!(html.contains("(not set)"));
        assert_inert(&html);
        let origins = origins(&data.overrides[0]);
        let from = |key: &str| {
            origins
                .iter()
                .find(|(k, _, _)| k == key)
                .map(|(_, _, layer)| layer.clone())
        };
        assert_eq!(from("replicas").as_deref(), Some("system"));
        assert_eq!(from("image.tag").as_deref(), Some("chart-defaults"));
        assert_eq!(from("banner").as_deref(), Some("user"));
        assert_eq!(origins.len(), 3);
    }

    #[test]
    fn durations_are_bars_scaled_to_the_longest() {
        let mut history = vec![
            entry(1, Outcome::Succeeded, None),
            entry(2, Outcome::Failed, None),
        ];
        history[1].finished_at = Some(history[1].started_at + 1_250);
        history.push(HistoryEntry {
            finished_at: None,
            ..entry(3, Outcome::Running, None)
        });
        let svg = render_durations(&history);
        assert_eq!(svg.matches("<rect").count(), 2, "{svg}");
        assert!(svg.contains("height=\"80\" fill=\"#2e7d32\""));
        assert!(svg.contains("height=\"40\" fill=\"#c62828\""));
        assert!(svg.contains("longest 2.500s"));
        assert_eq!(render_durations(&[]), "");
    }

    #[test]
    fn the_login_form_shows_its_error_escaped() {
        let html = render_login(Some(HOSTILE));
        assert_inert(&html);
        assert!(html.contains("action=\"/ui/login\""));
        assert!(!render_login(None).contains("login-error"));
    }

    #[test]
    fn the_session_cookie_is_http_only_strict_and_secure_with_tls() {
        assert_eq!(
            session_cookie("abc", false),
            "capstan_session=abc; Path=/; HttpOnly; SameSite=Strict"
        );
        assert!(session_cookie("abc", true).ends_with("; Secure"));
    }

    #[test]
    fn a_session_is_admitted_only_with_an_id_handed_out() {
        let sessions = Sessions::default();
        let id = sessions.create().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("other=1; {SESSION_COOKIE}={id}")).unwrap(),
        );
        assert!(sessions.admits(&headers));
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("capstan_session=forged"),
        );
        assert!(!sessions.admits(&headers));
        assert!(!sessions.admits(&HeaderMap::new()));
    }

    #[test]
    fn times_are_utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_709_210_096_000), "2024-02-29 12:34:56 UTC");
        assert_eq!(seconds(61_005), "61.005s");
    }
}
