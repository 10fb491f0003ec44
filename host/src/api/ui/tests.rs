//! The status page's rendering: every outside string escaped, each page
//! showing what its data holds.

use serde_json::Value;

use super::render::seconds;
use super::*;
use crate::api::wire::{
    AppDetails, AppRecord, ChartOverrides, FactsView, HistoryEntry, VolumeView,
};
use crate::lifecycle::{ChartSummary, LayerValues};
use crate::lifecycle::{DurationHistogram, OPERATION_BUCKETS};
use crate::model::WorkloadKind;
use crate::store::Outcome;
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
        automatic_pause: None,
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
    use crate::model::{Node, NodeRole, StorageClass};
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
            drifted: Some(crate::lifecycle::Drifted {
                since: 86_400_000,
                message: HOSTILE.into(),
                objects: vec![crate::model::ObjectDrift {
                    object: format!("ConfigMap shop/{HOSTILE}"),
                    deleted: false,
                    fields: vec![crate::model::DriftedField {
                        field: ".data.currency".into(),
                        manager: HOSTILE.into(),
                        operation: "Update".into(),
                        subresource: Some("scale".into()),
                        time: Some("2026-12-07T10:00:00Z".into()),
                    }],
                }],
            }),
            automatic_paused: None,
            automatic_retry: None,
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
fn the_app_page_says_who_paused_automatic_operations() {
    let mut data = page_data();
    assert!(render_app(&data).contains("id=\"automatic\">on</dd>"));
    data.details.automatic_paused = Some(format!(
        "paused by uid=0 at 2026-12-08T00:00:00Z: {HOSTILE}"
    ));
    data.details.automatic_retry = Some("retry 2 due in 40s after boom".into());
    let html = render_app(&data);
    assert_inert(&html);
    assert!(
        html.contains(
            "id=\"automatic\">paused: paused by uid=0 at 2026-12-08T00:00:00Z: &lt;script&gt;"
        ),
        "{html}"
    );
    assert!(
        html.contains("; retry 2 due in 40s after boom</dd>"),
        "{html}"
    );
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
    // Drift: each field with who changed it, how and when.
    assert!(html.contains("<h2>Drifted</h2>"));
    assert!(html.contains("<td>.data.currency</td><td>&lt;script&gt;"));
    assert!(html.contains("<td>Update through scale</td><td>2026-12-07T10:00:00Z</td>"));
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
fn times_are_utc_dates() {
    assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
    assert_eq!(utc(1_709_210_096_000), "2024-02-29 12:34:56 UTC");
    assert_eq!(seconds(61_005), "61.005s");
}
