//! Owns where the facts handed to plugins come from: the [`FactsSource`]
//! seam, the facts in effect with where each field came from
//! ([`FactsView`]), and the static source (`serve --facts FILE`, or one
//! all-in-one node). The source that reads the cluster is
//! [`super::cluster_facts::ClusterFacts`]; re-evaluation
//! ([`super::reevaluate`]) waits on a source for changes.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::Facts;
use crate::model::Trigger;

/// The facts in effect and their history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FactsView {
    /// The facts, as plugins get them (before each app's own local
    /// volumes are put in).
    #[schema(value_type = Object)]
    pub facts: Facts,
    /// Where each top-level field came from: `cluster`, `file PATH`,
    /// `configmap NS/NAME`, `default`.
    pub sources: BTreeMap<String, String>,
    /// Counts changes: 0 for the first facts, one more at each change.
    pub generation: u64,
    /// What the last change changed, one line each (empty before any).
    pub changes: Vec<String>,
    /// The last error reading the facts, if the last read failed (the
    /// facts before it stay in effect).
    pub error: Option<String>,
}

/// One line of the facts' summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactRow {
    /// What a person calls it (`system mode`).
    pub label: &'static str,
    /// The field of the facts document (`systemMode`).
    pub field: &'static str,
    /// Its value in words.
    pub value: String,
    /// Where it came from (`cluster`, `file PATH`, `default`, ...).
    pub source: String,
}

impl FactsView {
    /// The facts a person reads first, each in words with where it came
    /// from: what `capstan facts show` and the status page print.
    pub fn summary(&self) -> Vec<FactRow> {
        let facts = &self.facts;
        let classes: Vec<String> = facts
            .storage_classes
            .iter()
            .map(|c| match c.is_default {
                true => format!("{} (default)", c.name),
                false => c.name.clone(),
            })
            .collect();
        [
            (
                "system mode",
                "systemMode",
                format!("{:?}", facts.system_mode).to_lowercase(),
            ),
            (
                "controllers",
                "controllerCount",
                facts.controller_count.to_string(),
            ),
            ("workers", "workerCount", facts.worker_count.to_string()),
            (
                "kubernetes",
                "kubernetesVersion",
                facts.kubernetes_version.clone(),
            ),
            (
                "storage backends",
                "storageBackends",
                facts.storage_backends.len().to_string(),
            ),
            (
                "storage classes",
                "storageClasses",
                match classes.is_empty() {
                    true => "none".into(),
                    false => classes.join(", "),
                },
            ),
            (
                "api versions",
                "apiVersions",
                facts.api_versions.len().to_string(),
            ),
        ]
        .into_iter()
        .map(|(label, field, value)| FactRow {
            label,
            field,
            value,
            source: self.source_of(field),
        })
        .collect()
    }

    /// Where the top-level `field` came from; `default` when unrecorded.
    pub fn source_of(&self, field: &str) -> String {
        self.sources
            .get(field)
            .cloned()
            .unwrap_or_else(|| "default".into())
    }
}

/// Where the daemon's facts come from.
pub trait FactsSource: Send + Sync {
    /// The facts in effect now.
    fn current(&self) -> FactsView;

    /// Whether the facts may change while the daemon runs (then
    /// re-evaluation watches them).
    fn changes(&self) -> bool {
        false
    }

    /// Waits up to `timeout` for a generation other than `seen`, and
    /// returns the generation then in effect. A source that never changes
    /// waits the whole time.
    fn wait_change(&self, seen: u64, timeout: Duration) -> u64 {
        let _ = seen;
        std::thread::sleep(timeout);
        self.current().generation
    }

    /// The platform changes made by the generations after `seen`, for
    /// the `evaluate-reapply` triggers apps declare (a node added,
    /// removed or relabelled, a facts section changed). None, the
    /// default, for a source that never changes.
    fn triggers_since(&self, seen: u64) -> Vec<Trigger> {
        let _ = seen;
        Vec::new()
    }
}

/// Facts that never change: from `serve --facts FILE`, or the default.
pub struct StaticFacts(FactsView);

impl StaticFacts {
    /// `facts`, every field from `source` (`file PATH`, `default`).
    pub fn new(facts: Facts, source: &str) -> Self {
        let sources = field_names(&facts)
            .into_iter()
            .map(|field| (field, source.to_string()))
            .collect();
        StaticFacts(FactsView {
            facts,
            sources,
            generation: 0,
            changes: Vec::new(),
            error: None,
        })
    }
}

impl FactsSource for StaticFacts {
    fn current(&self) -> FactsView {
        self.0.clone()
    }
}

/// The top-level field names of `facts` as written (camelCase).
pub fn field_names(facts: &Facts) -> Vec<String> {
    match serde_json::to_value(facts) {
        Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}
