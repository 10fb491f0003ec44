//! The read-only status page at `/ui` (docs/src/operating/status-page.md).
//!
//! Owns: the page's handlers and its login form (the sessions it hands
//! out are `api::session`'s; a session is accepted for reads only, so a
//! cookie can never start an operation), the headers its pages are
//! served with, its style sheet and the script that polls the JSON API
//! for live progress (`status.css`, `status.js`). The HTML is
//! `render`'s (`ui/render.rs`).
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

mod render;
#[cfg(test)]
mod tests;

use axum::Form;
use axum::extract::rejection::{FormRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use super::auth::describe;
use super::error::{ApiError, blocking};
use super::peer::Peer;
use super::session::constant_time_eq;
use super::state::Api;
use crate::model::AppName;

pub use super::session::{SESSION_COOKIE, session_cookie};
use render::layout;
pub use render::{
    AppPage, escape, origins, render_app, render_durations, render_facts, render_index,
    render_layers, render_login, render_operation_durations, render_timeline, utc,
};

/// The pages' Content-Security-Policy: the daemon's own script, style
/// sheet and API, nothing inline, no frames.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const STYLE: &str = include_str!("status.css");
const SCRIPT: &str = include_str!("status.js");

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
    peer: Option<axum::Extension<axum::extract::ConnectInfo<Peer>>>,
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
        tracing::warn!(target: "capstan::audit", peer = %describe(peer.as_ref()), failures,
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
