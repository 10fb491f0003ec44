//! Owns the facts derived from the cluster the daemon applies to: it reads
//! the Nodes, the StorageClasses and what the server serves (its version
//! and API versions) through the target, derives the typed facts (nodes
//! with their roles, labels and schedulability, controller and worker
//! counts, the system mode, the Kubernetes version), and lays over them
//! what the cluster cannot know (storage backends, `extra`, or any field
//! the operator sets) from `serve --facts FILE` or a ConfigMap
//! (`--facts-configmap NS/NAME`, key `facts.yaml`). A change bumps the
//! generation and says what changed; re-evaluation waits on it.
//!
//! When to read again: the thread watches what it read (the Nodes and
//! StorageClasses from their lists' versions, the ConfigMap by name, and
//! the CRDs and APIServices discovery follows), and reads again at the
//! first change, or after [`RESYNC`] without one (the server's version
//! has no watch). A target that cannot watch, or a watch that fails, is
//! polled every [`POLL_INTERVAL`] instead.
//!
//! Reads only, through [`ClusterView::read_live`],
//! [`ClusterView::served`] and the watches; a failed read keeps the facts
//! before it and is shown in [`FactsView::error`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;

use super::facts_source::{FactsSource, FactsView, field_names};
use crate::kube::ClusterView;
use crate::model::{
    AdministrativeState, AvailabilityState, Facts, Node, NodeRole, OperationalState, StorageClass,
    SystemMode,
};
use crate::model::{LookupQuery, Trigger, TriggerKind, WatchEnd, WatchFrom};

/// How often the cluster is read when it cannot be watched.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// How long a watch waits for a change before everything is read again
/// (the server's version, which no watch covers, is seen this late).
pub const RESYNC: Duration = Duration::from_secs(30);

/// The kinds whose objects change what discovery serves: a CRD or an
/// aggregated API installed is watched for, so the API versions follow
/// at once.
const DISCOVERY_KINDS: [(&str, &str); 2] = [
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("apiregistration.k8s.io/v1", "APIService"),
];

/// The kind whose objects become the `storageClasses` facts, listed only
/// when the server says it serves it (an API server may not).
const STORAGE_CLASS_KIND: &str = "storage.k8s.io/v1/StorageClass";

/// The annotation that makes a StorageClass the cluster's default, and
/// its beta form, which Kubernetes still honours.
const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// What the cluster cannot know, and where it is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    /// `serve --facts FILE`: read once at start.
    File(PathBuf),
    /// `serve --facts-configmap NS/NAME`: its `facts.yaml`, read at every
    /// poll.
    ConfigMap {
        /// The ConfigMap's namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

/// How the cluster's facts are derived.
#[derive(Debug, Clone, Default)]
pub struct ClusterFactsOptions {
    /// Facts laid over the derived ones, field by field.
    pub overlays: Vec<Overlay>,
    /// A node label whose value names the node's roles
    /// (`controller`, `worker`, `storage`, comma-separated), besides
    /// `node-role.kubernetes.io/*`.
    pub role_label: Option<String>,
}

/// Facts read from the cluster, kept fresh by a poller thread.
pub struct ClusterFacts {
    state: Mutex<FactsView>,
    changed: Condvar,
    target: Arc<dyn ClusterView>,
    options: ClusterFactsOptions,
    /// The file overlay's fields, read once.
    file: Option<(String, serde_json::Map<String, Value>)>,
    /// The triggers of the latest changes, with their generations (at
    /// most [`MAX_TRIGGERS`]).
    triggers: Mutex<VecDeque<(u64, Trigger)>>,
}

/// One read of the facts: what they are, where each field came from,
/// and where a watch for the next change starts.
struct Reading {
    facts: Facts,
    sources: BTreeMap<String, String>,
    watch: Vec<WatchFrom>,
}

/// The most triggers kept for re-evaluation to read; older ones go
/// first (re-evaluation reads them within a second of their change).
const MAX_TRIGGERS: usize = 1024;

impl ClusterFacts {
    /// Reads the facts once (failing when the cluster cannot be read),
    /// then keeps reading them on a thread of its own, which ends when
    /// the returned source is dropped.
    ///
    /// # Errors
    /// The first read's error, or an overlay file that cannot be read or
    /// is not a facts mapping.
    pub fn start(
        target: Arc<dyn ClusterView>,
        options: ClusterFactsOptions,
    ) -> Result<Arc<ClusterFacts>, String> {
        let mut file = None;
        for overlay in &options.overlays {
            if let Overlay::File(path) = overlay {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("reading facts {}: {e}", path.display()))?;
                let fields =
                    overlay_fields(&text).map_err(|e| format!("facts {}: {e}", path.display()))?;
                file = Some((format!("file {}", path.display()), fields));
            }
        }
        let source = ClusterFacts {
            state: Mutex::new(FactsView {
                facts: super::default_facts(),
                sources: BTreeMap::new(),
                generation: 0,
                changes: Vec::new(),
                error: None,
            }),
            changed: Condvar::new(),
            target,
            options,
            file,
            triggers: Mutex::new(VecDeque::new()),
        };
        let Reading {
            facts,
            sources,
            watch: from,
        } = source.read()?;
        {
            let mut state = source.lock();
            state.facts = facts;
            state.sources = sources;
        }
        let source = Arc::new(source);
        let weak = Arc::downgrade(&source);
        std::thread::Builder::new()
            .name("capstan-facts".into())
            .spawn(move || poll(weak, from))
            .map_err(|e| format!("starting the facts poller: {e}"))?;
        Ok(source)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FactsView> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The facts as the cluster and the overlays say now, their sources,
    /// and where a watch for the next change starts.
    fn read(&self) -> Result<Reading, String> {
        // Taken before discovery is read, so a CRD installed in between
        // is a change the watch sees.
        let mut watch: Vec<WatchFrom> = DISCOVERY_KINDS
            .iter()
            .filter_map(|(api_version, kind)| {
                let query = LookupQuery::new(api_version, kind, "", "");
                // A server without the kind, or a target that cannot
                // watch, has nothing to watch here.
                let version = self.target.collection_version(&query).ok()??;
                Some(WatchFrom {
                    query,
                    version: Some(version),
                })
            })
            .collect();
        let nodes_query = LookupQuery::new("v1", "Node", "", "");
        let nodes = self
            .target
            .read_live(&nodes_query)
            .map_err(|e| format!("listing nodes: {}", super::lookup::one_line(&e)))?;
        watch.push(WatchFrom::of(nodes_query, &nodes));
        let served = self
            .target
            .served()
            .map_err(|e| {
                format!(
                    "reading the server's version: {}",
                    super::lookup::one_line(&e)
                )
            })?
            .unwrap_or_default();
        let items = |list: &Value| {
            list.get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let classes = match served.api_versions.iter().any(|v| v == STORAGE_CLASS_KIND) {
            true => {
                let query = LookupQuery::new("storage.k8s.io/v1", "StorageClass", "", "");
                let list = self.target.read_live(&query).map_err(|e| {
                    format!("listing StorageClasses: {}", super::lookup::one_line(&e))
                })?;
                watch.push(WatchFrom::of(query, &list));
                list
            }
            false => Value::Null,
        };
        let mut derived = derive(
            &items(&nodes),
            &served.version,
            self.options.role_label.as_deref(),
        );
        derived.api_versions = served.api_versions;
        derived.storage_classes = storage_classes(&items(&classes));
        let mut sources: BTreeMap<String, String> = field_names(&derived)
            .into_iter()
            .map(|f| (f, "cluster".to_string()))
            .collect();
        for field in ["storageBackends", "localVolumes", "extra"] {
            sources.insert(field.into(), "default".into());
        }
        let mut layers = Vec::new();
        if let Some((source, fields)) = &self.file {
            layers.push((source.clone(), fields.clone()));
        }
        for overlay in &self.options.overlays {
            if let Overlay::ConfigMap { namespace, name } = overlay {
                let query = LookupQuery::new("v1", "ConfigMap", namespace, name);
                let map = self.target.read_live(&query).map_err(|e| {
                    format!(
                        "reading ConfigMap {namespace}/{name}: {}",
                        super::lookup::one_line(&e)
                    )
                })?;
                watch.push(WatchFrom::of(query, &map));
                let text = map.pointer("/data/facts.yaml").and_then(Value::as_str);
                if let Some(text) = text {
                    let fields = overlay_fields(text)
                        .map_err(|e| format!("ConfigMap {namespace}/{name} facts.yaml: {e}"))?;
                    layers.push((format!("configmap {namespace}/{name}"), fields));
                }
            }
        }
        let mut facts = derived;
        for (source, fields) in layers {
            facts = lay_over(&facts, &fields).map_err(|e| format!("{source}: {e}"))?;
            for field in fields.keys() {
                sources.insert(field.clone(), source.clone());
            }
        }
        Ok(Reading {
            facts,
            sources,
            watch,
        })
    }

    /// One read, and if the facts changed, a new generation (logged with
    /// what led to the read, `after`). Returns where to watch from, or
    /// `None` when the read failed.
    fn refresh(&self, after: &str) -> Option<Vec<WatchFrom>> {
        let read = self.read();
        let mut state = self.lock();
        match read {
            Ok(Reading {
                facts,
                sources,
                watch,
            }) => {
                state.error = None;
                if facts != state.facts {
                    state.changes = changes(&state.facts, &facts);
                    let generation = state.generation.saturating_add(1);
                    let mut kept = self
                        .triggers
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    for trigger in triggers(&state.facts, &facts) {
                        if kept.len() == MAX_TRIGGERS {
                            kept.pop_front();
                        }
                        kept.push_back((generation, trigger));
                    }
                    drop(kept);
                    state.facts = facts;
                    state.generation = generation;
                    tracing::info!(target: "capstan::facts",
                        generation = state.generation,
                        changes = %state.changes.join("; "),
                        after,
                        "facts changed"
                    );
                    self.changed.notify_all();
                }
                state.sources = sources;
                Some(watch)
            }
            Err(e) => {
                if state.error.as_deref() != Some(e.as_str()) {
                    tracing::warn!(target: "capstan::facts", error = %e, "reading the facts failed; the last facts stay in effect");
                }
                state.error = Some(e);
                None
            }
        }
    }
}

impl FactsSource for ClusterFacts {
    fn current(&self) -> FactsView {
        self.lock().clone()
    }

    fn changes(&self) -> bool {
        true
    }

    fn triggers_since(&self, seen: u64) -> Vec<Trigger> {
        self.triggers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|(generation, _)| *generation > seen)
            .map(|(_, trigger)| trigger.clone())
            .collect()
    }

    fn wait_change(&self, seen: u64, timeout: Duration) -> u64 {
        let state = self.lock();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, timeout, |s| s.generation == seen)
            .unwrap_or_else(|p| p.into_inner());
        state.generation
    }
}

/// Waits for a change and reads again, until the source is dropped: a
/// watch where the target can, a poll every [`POLL_INTERVAL`] where it
/// cannot or a watch fails (logged once per distinct failure).
fn poll(source: Weak<ClusterFacts>, mut from: Vec<WatchFrom>) {
    let mut failed: Option<String> = None;
    loop {
        let Some(target) = source.upgrade().map(|s| Arc::clone(&s.target)) else {
            return;
        };
        // The source is not held while waiting, so dropping it ends the
        // thread after this wait at the latest.
        let after = match target.wait_for_change(&from, RESYNC) {
            Ok(WatchEnd::Changed) => {
                failed = None;
                "a watch event"
            }
            Ok(WatchEnd::Quiet) => {
                failed = None;
                "a quiet resync"
            }
            Ok(WatchEnd::Unsupported) => {
                std::thread::sleep(POLL_INTERVAL);
                "a poll"
            }
            Err(e) => {
                let e = super::lookup::one_line(&e);
                if failed.as_deref() != Some(e.as_str()) {
                    tracing::warn!(target: "capstan::facts", error = %e, "watching the cluster failed; polling every second until a watch works");
                }
                failed = Some(e);
                std::thread::sleep(POLL_INTERVAL);
                "a poll"
            }
        };
        drop(target);
        let Some(source) = source.upgrade() else {
            return;
        };
        if let Some(next) = source.refresh(after) {
            from = next;
        }
    }
}

/// The top-level fields of a facts overlay (YAML or JSON), checked by
/// reading them over the default facts.
fn overlay_fields(text: &str) -> Result<serde_json::Map<String, Value>, String> {
    let value: Value = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
    let Value::Object(fields) = value else {
        return Err("not a mapping of facts".into());
    };
    lay_over(&super::default_facts(), &fields)?;
    Ok(fields)
}

/// `base` with each field of `fields` in place of its own.
fn lay_over(base: &Facts, fields: &serde_json::Map<String, Value>) -> Result<Facts, String> {
    let mut value = serde_json::to_value(base).map_err(|e| e.to_string())?;
    if let Value::Object(map) = &mut value {
        for (key, field) in fields {
            map.insert(key.clone(), field.clone());
        }
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// A node's operational and availability states from its conditions:
/// `Ready` true is enabled, and available unless a pressure condition
/// (memory, disk, PID) is true, then degraded; `Ready` false or unknown,
/// or no `Ready` condition, is disabled and offline.
fn node_states(node: &Value) -> (OperationalState, AvailabilityState) {
    let conditions = node
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let is_true = |kind: &str| {
        conditions.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(kind)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
    };
    if !is_true("Ready") {
        return (OperationalState::Disabled, AvailabilityState::Offline);
    }
    let pressure = ["MemoryPressure", "DiskPressure", "PIDPressure"]
        .into_iter()
        .any(is_true);
    let availability = if pressure {
        AvailabilityState::Degraded
    } else {
        AvailabilityState::Available
    };
    (OperationalState::Enabled, availability)
}

/// The facts the Nodes and the server's version say.
pub fn derive(nodes: &[Value], version: &str, role_label: Option<&str>) -> Facts {
    let mut out: Vec<Node> = nodes
        .iter()
        .filter_map(|node| {
            let name = node.pointer("/metadata/name")?.as_str()?.to_string();
            let labels: BTreeMap<String, String> = node
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect();
            let roles = roles_of(&labels, role_label);
            let cordoned = node
                .pointer("/spec/unschedulable")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let tainted = node
                .pointer("/spec/taints")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|t| {
                    matches!(
                        t.get("effect").and_then(Value::as_str),
                        Some("NoSchedule" | "NoExecute")
                    )
                });
            let (operational, availability) = node_states(node);
            Some(Node {
                labels,
                schedulable: !cordoned && !tainted,
                administrative: Some(if cordoned {
                    AdministrativeState::Locked
                } else {
                    AdministrativeState::Unlocked
                }),
                operational: Some(operational),
                availability: Some(availability),
                ..Node::new(&name, roles)
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    let count = |role| {
        u32::try_from(out.iter().filter(|n| n.roles.contains(&role)).count()).unwrap_or(u32::MAX)
    };
    let controllers = count(NodeRole::Controller);
    let workers = count(NodeRole::Worker);
    let worker_only = out
        .iter()
        .any(|n| n.roles.contains(&NodeRole::Worker) && !n.roles.contains(&NodeRole::Controller));
    let system_mode = match (worker_only, controllers) {
        (true, _) => SystemMode::Standard,
        (false, 0 | 1) => SystemMode::Simplex,
        (false, _) => SystemMode::Duplex,
    };
    let trimmed = version.trim_start_matches('v');
    let bare = trimmed
        .split(['-', '+'])
        .next()
        .unwrap_or(trimmed)
        .to_string();
    let mut facts = super::default_facts();
    facts.system_mode = system_mode;
    facts.controller_count = controllers;
    facts.worker_count = workers;
    facts.nodes = out;
    if !bare.is_empty() {
        facts.kubernetes_version = bare;
    }
    facts
}

/// The StorageClasses of a list's items, sorted by name; the default is
/// the one annotated `is-default-class: "true"`, as the API server's
/// DefaultStorageClass admission reads it.
pub fn storage_classes(items: &[Value]) -> Vec<StorageClass> {
    let mut classes: Vec<StorageClass> = items
        .iter()
        .filter_map(|item| {
            let name = item.pointer("/metadata/name")?.as_str()?.to_string();
            let annotations = item.pointer("/metadata/annotations");
            let is_default = DEFAULT_CLASS_ANNOTATIONS.iter().any(|key| {
                annotations
                    .and_then(|a| a.get(*key))
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.eq_ignore_ascii_case("true"))
            });
            Some(StorageClass {
                name,
                provisioner: item
                    .get("provisioner")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                is_default,
            })
        })
        .collect();
    classes.sort_by(|a, b| a.name.cmp(&b.name));
    classes
}

/// A node's roles: `node-role.kubernetes.io/ROLE` labels
/// (`control-plane`, `master` and `controller` make a controller), and
/// the operator's role label; a node with none is a worker.
fn roles_of(labels: &BTreeMap<String, String>, role_label: Option<&str>) -> Vec<NodeRole> {
    let mut roles = BTreeSet::new();
    let mut add = |name: &str| match name.trim() {
        "control-plane" | "master" | "controller" => {
            roles.insert(0u8);
        }
        "worker" => {
            roles.insert(1);
        }
        "storage" => {
            roles.insert(2);
        }
        _ => {}
    };
    for key in labels.keys() {
        if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
            add(role);
        }
    }
    if let Some(value) = role_label.and_then(|key| labels.get(key)) {
        value.split(',').for_each(&mut add);
    }
    if roles.is_empty() {
        roles.insert(1);
    }
    roles
        .into_iter()
        .map(|r| match r {
            0 => NodeRole::Controller,
            1 => NodeRole::Worker,
            _ => NodeRole::Storage,
        })
        .collect()
}

/// The platform changes from `old` to `new` as `evaluate-reapply`
/// triggers: each node added or removed, each label of a node added,
/// changed or removed, and each top-level field of the facts that
/// differs.
pub fn triggers(old: &Facts, new: &Facts) -> Vec<Trigger> {
    let mut out = Vec::new();
    let before: BTreeMap<&str, &Node> = old.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let after: BTreeMap<&str, &Node> = new.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    for (name, node) in &after {
        let Some(was) = before.get(name) else {
            out.push(Trigger::new(TriggerKind::NodeAdded, &[("node", name)]));
            continue;
        };
        let keys: BTreeSet<&String> = node.labels.keys().chain(was.labels.keys()).collect();
        for key in keys {
            if node.labels.get(key) != was.labels.get(key) {
                out.push(Trigger::new(
                    TriggerKind::NodeRelabelled,
                    &[("node", name), ("label", key)],
                ));
            }
        }
    }
    for name in before.keys().filter(|n| !after.contains_key(*n)) {
        out.push(Trigger::new(TriggerKind::NodeRemoved, &[("node", name)]));
    }
    let fields = |facts: &Facts| match serde_json::to_value(facts) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let (was, now) = (fields(old), fields(new));
    let keys: BTreeSet<&String> = was.keys().chain(now.keys()).collect();
    for key in keys {
        if was.get(key) != now.get(key) {
            out.push(Trigger::new(TriggerKind::FactsChanged, &[("section", key)]));
        }
    }
    out
}

/// What changed from `old` to `new`, one line each.
pub fn changes(old: &Facts, new: &Facts) -> Vec<String> {
    let mut out = Vec::new();
    let before: BTreeMap<&str, &Node> = old.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let after: BTreeMap<&str, &Node> = new.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    for (name, node) in &after {
        let Some(was) = before.get(name) else {
            out.push(format!("node {name} added"));
            continue;
        };
        for (key, value) in &node.labels {
            match was.labels.get(key) {
                None => out.push(format!("node {name}: label {key}={value} added")),
                Some(old) if old != value => out.push(format!(
                    "node {name}: label {key} changed from {old} to {value}"
                )),
                Some(_) => {}
            }
        }
        for key in was.labels.keys().filter(|k| !node.labels.contains_key(*k)) {
            out.push(format!("node {name}: label {key} removed"));
        }
        if was.schedulable != node.schedulable {
            out.push(format!(
                "node {name}: {}",
                if node.schedulable {
                    "schedulable again"
                } else {
                    "unschedulable"
                }
            ));
        }
        if was.roles != node.roles {
            out.push(format!("node {name}: roles changed to {:?}", node.roles));
        }
        let state = |n: &Node| (n.administrative, n.operational, n.availability);
        if state(was) != state(node) {
            out.push(format!(
                "node {name}: now {}",
                node_state_words(node).join(", ")
            ));
        }
    }
    for name in before.keys().filter(|n| !after.contains_key(*n)) {
        out.push(format!("node {name} removed"));
    }
    if old.system_mode != new.system_mode {
        out.push(format!("system mode changed to {:?}", new.system_mode));
    }
    if old.kubernetes_version != new.kubernetes_version {
        out.push(format!(
            "Kubernetes version changed from {} to {}",
            old.kubernetes_version, new.kubernetes_version
        ));
    }
    if old.storage_backends != new.storage_backends {
        out.push("storage backends changed".into());
    }
    if old.extra != new.extra {
        out.push("extra facts changed".into());
    }
    let names = |classes: &[StorageClass]| -> BTreeMap<String, StorageClass> {
        classes
            .iter()
            .map(|c| (c.name.clone(), c.clone()))
            .collect()
    };
    let (was, now) = (names(&old.storage_classes), names(&new.storage_classes));
    for (name, class) in &now {
        match was.get(name) {
            None => out.push(format!("StorageClass {name} added")),
            Some(before) if before != class => out.push(format!(
                "StorageClass {name} changed{}",
                if class.is_default && !before.is_default {
                    " (now the default)"
                } else {
                    ""
                }
            )),
            Some(_) => {}
        }
    }
    for name in was.keys().filter(|n| !now.contains_key(*n)) {
        out.push(format!("StorageClass {name} removed"));
    }
    let (was, now): (BTreeSet<&String>, BTreeSet<&String>) = (
        old.api_versions.iter().collect(),
        new.api_versions.iter().collect(),
    );
    let added: Vec<&str> = now.difference(&was).map(|s| s.as_str()).collect();
    let removed: Vec<&str> = was.difference(&now).map(|s| s.as_str()).collect();
    for (words, list) in [("served", added), ("no longer served", removed)] {
        if !list.is_empty() {
            out.push(format!("{words}: {}", abridged(&list)));
        }
    }
    out
}

/// A node's administrative, operational and availability states, as
/// StarlingX words them (`unlocked`, `enabled`, `available`).
fn node_state_words(node: &Node) -> Vec<String> {
    let word = |v: serde_json::Result<Value>| {
        v.ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "unknown".into())
    };
    vec![
        word(serde_json::to_value(node.administrative)),
        word(serde_json::to_value(node.operational)),
        word(serde_json::to_value(node.availability)),
    ]
}

/// At most five API versions, then how many more.
fn abridged(list: &[&str]) -> String {
    let shown = list.iter().take(5).copied().collect::<Vec<_>>().join(", ");
    match list.len().saturating_sub(5) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, labels: Value, spec: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "spec": spec})
    }

    #[test]
    fn nodes_give_roles_counts_mode_and_schedulability() {
        let nodes = [
            node(
                "controller-0",
                json!({"node-role.kubernetes.io/control-plane": ""}),
                json!({}),
            ),
            node(
                "controller-1",
                json!({"node-role.kubernetes.io/control-plane": ""}),
                json!({}),
            ),
            node(
                "worker-0",
                json!({"zone": "a"}),
                json!({"unschedulable": true}),
            ),
            node(
                "worker-1",
                json!({}),
                json!({"taints": [{"key": "k", "effect": "NoSchedule"}]}),
            ),
            node(
                "worker-2",
                json!({"personality": "worker,storage"}),
                json!({"taints": [{"key": "k", "effect": "PreferNoSchedule"}]}),
            ),
        ];
        let facts = derive(&nodes, "v1.37.2-gke.1", Some("personality"));
        assert_eq!(facts.controller_count, 2);
        assert_eq!(facts.worker_count, 3);
        assert_eq!(facts.system_mode, SystemMode::Standard);
        assert_eq!(facts.kubernetes_version, "1.37.2");
        let schedulable: Vec<bool> = facts.nodes.iter().map(|n| n.schedulable).collect();
        assert_eq!(schedulable, [true, true, false, false, true]);
        assert_eq!(facts.nodes[4].roles, [NodeRole::Worker, NodeRole::Storage]);
        let duplex = derive(&nodes[..2], "v1.37.2", None);
        assert_eq!(duplex.system_mode, SystemMode::Duplex);
        let simplex = derive(&nodes[..1], "v1.37.2", None);
        assert_eq!(simplex.system_mode, SystemMode::Simplex);
    }

    #[test]
    fn changes_name_the_node_and_the_label() {
        let before = derive(
            &[node("worker-0", json!({"zone": "a"}), json!({}))],
            "v1.37.2",
            None,
        );
        let after = derive(
            &[node(
                "worker-0",
                json!({"zone": "b", "gpu": "yes"}),
                json!({"unschedulable": true}),
            )],
            "v1.37.2",
            None,
        );
        assert_eq!(
            changes(&before, &after),
            [
                "node worker-0: label gpu=yes added",
                "node worker-0: label zone changed from a to b",
                "node worker-0: unschedulable",
                "node worker-0: now locked, disabled, offline"
            ]
        );
    }

    #[test]
    fn storage_classes_name_provisioner_and_default() {
        let items = [
            json!({"metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner"}),
            json!({"metadata": {"name": "general", "annotations": {
                "storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "rancher.io/local-path"}),
            json!({"metadata": {"name": "old", "annotations": {
                "storageclass.beta.kubernetes.io/is-default-class": "TRUE"}}}),
            json!({"metadata": {"name": "no", "annotations": {
                "storageclass.kubernetes.io/is-default-class": "false"}}}),
            json!({"metadata": {}}),
        ];
        let classes = storage_classes(&items);
        let seen: Vec<(&str, &str, bool)> = classes
            .iter()
            .map(|c| (c.name.as_str(), c.provisioner.as_str(), c.is_default))
            .collect();
        assert_eq!(
            seen,
            [
                ("general", "rancher.io/local-path", true),
                ("local", "kubernetes.io/no-provisioner", false),
                ("no", "", false),
                ("old", "", true),
            ]
        );
    }

    #[test]
    fn changes_name_classes_api_versions_and_node_states() {
        let ready = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        let mut before = derive(
            &[json!({"metadata": {"name": "worker-0"}, "status": ready})],
            "v1.37.2",
            None,
        );
        before.api_versions = vec!["v1".into(), "apps/v1".into()];
        before.storage_classes = storage_classes(&[json!({"metadata": {"name": "a"}})]);
        let mut after = derive(&[node("worker-0", json!({}), json!({}))], "v1.37.2", None);
        after.api_versions = (0..7)
            .map(|i| format!("example.com/v{i}"))
            .chain(["v1".to_string()])
            .collect();
        after.storage_classes = storage_classes(&[json!({"metadata": {"name": "b"}})]);
        assert_eq!(
            changes(&before, &after),
            [
                "node worker-0: now unlocked, disabled, offline",
                "StorageClass b added",
                "StorageClass a removed",
                "served: example.com/v0, example.com/v1, example.com/v2, example.com/v3, \
                 example.com/v4 and 2 more",
                "no longer served: apps/v1",
            ]
        );
    }

    #[test]
    fn overlays_replace_fields_and_are_checked() {
        let fields = overlay_fields("systemMode: duplex\nextra: {site: lab}\n");
        let Ok(fields) = fields else {
            panic!("{fields:?}")
        };
        let facts = lay_over(&derive(&[], "v1.37.2", None), &fields);
        let Ok(facts) = facts else {
            panic!("{facts:?}")
        };
        assert_eq!(facts.system_mode, SystemMode::Duplex);
        assert_eq!(facts.extra, json!({"site": "lab"}));
        assert!(overlay_fields("nodez: []\n").is_err());
        assert!(overlay_fields("- a\n").is_err());
    }
}
