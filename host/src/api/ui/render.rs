//! The status page's HTML: every page a pure function of the data it
//! shows, and every piece of text from outside reaching it through one
//! function, [`escape`].
//!
//! Must not read anything: the handlers in `ui` read and pass the data in.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::api::client::encode_segment;
use crate::api::wire::{
    AppDetails, AppRecord, ChartOverrides, FactsView, HistoryEntry, VolumeView,
};
use crate::lifecycle::{DurationHistogram, OPERATION_BUCKETS};
use crate::store::Outcome;

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

/// The frame of every page: title, style sheet, script and, when `poll`
/// is given, the JSON path the script polls.
pub(super) fn layout(title: &str, body: &str, poll: &str) -> String {
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
                href = escape(&encode_segment(app.name.as_str())),
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

/// What the app page says of the daemon's automatic operations for the
/// app: `on`, `paused by … at …: reason`, and a pending retry.
fn automatic_text(details: &AppDetails) -> String {
    let mut text = match &details.automatic_paused {
        Some(why) => format!("paused: {why}"),
        None => "on".to_owned(),
    };
    if let Some(retry) = &details.automatic_retry {
        text.push_str(&format!("; {retry}"));
    }
    text
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
         <dt>Re-apply</dt><dd data-field=\"reapply-full\" id=\"reapply\">{reapply}</dd>\
         <dt>Automatic</dt><dd data-field=\"automatic\" id=\"automatic\">{automatic}</dd></dl>",
        reapply = escape(app.reapply_needed.as_deref().unwrap_or("")),
        automatic = escape(&automatic_text(&data.details)),
        state = escape(app.state.as_str()),
        version = escape(&version_of(app)),
        progress = escape(app.progress.as_deref().unwrap_or("")),
    );
    let _ = write!(
        body,
        "<h2>Last message</h2><pre id=\"message\" data-app=\"{name}\" data-field=\"message-full\">{}</pre>",
        escape(app.message.as_deref().unwrap_or(""))
    );
    if let Some(drifted) = &data.details.drifted {
        body.push_str("<h2>Drifted</h2><table id=\"drift\"><thead><tr><th>Object</th><th>Field</th><th>Changed by</th><th>How</th><th>When</th></tr></thead><tbody>");
        for object in &drifted.objects {
            if object.deleted {
                let _ = write!(
                    body,
                    "<tr><td>{}</td><td colspan=\"4\">deleted</td></tr>",
                    escape(&object.object)
                );
            }
            for field in &object.fields {
                let how = match &field.subresource {
                    Some(sub) => format!("{} through {sub}", field.operation),
                    None => field.operation.clone(),
                };
                let _ = write!(
                    body,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    escape(&object.object),
                    escape(&field.field),
                    escape(&field.manager),
                    escape(&how),
                    escape(field.time.as_deref().unwrap_or(""))
                );
            }
        }
        body.push_str("</tbody></table>");
    }
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
        &format!("/v1/apps/{}", encode_segment(app.name.as_str())),
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

pub(super) fn seconds(ms: i64) -> String {
    format!("{}.{:03}s", ms / 1000, (ms % 1000).abs())
}

/// Unix milliseconds as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc(ms: i64) -> String {
    crate::model::clock::utc_text(ms, ' ', " UTC")
}
