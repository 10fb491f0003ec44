//! The double's etcd: stored objects with their managed fields, the global
//! resourceVersion counter, the event log that watches read, server-set
//! metadata (uid, resourceVersion, creationTimestamp, generation), deletion
//! with finalizers and garbage collection by owner uid.
//!
//! Everything here is synchronous and runs under one mutex; callers must not
//! hold it across an await.

use crate::apply::ManagedEntry;
use crate::discovery::{self, ResourceInfo};
use crate::util;
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

/// How many events the log keeps for watches that resume from a resourceVersion.
const EVENT_LOG_LEN: usize = 20_000;

/// Where an object lives: group and plural (so every version shares it), namespace (empty if cluster-scoped), name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjKey {
    /// API group, empty for core.
    pub group: String,
    /// Plural resource name.
    pub plural: String,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjKey {
    /// A key for a resource.
    pub fn new(r: &ResourceInfo, namespace: &str, name: &str) -> Self {
        ObjKey {
            group: r.group.clone(),
            plural: r.plural.clone(),
            namespace: if r.namespaced {
                namespace.to_string()
            } else {
                String::new()
            },
            name: name.to_string(),
        }
    }
}

/// One stored object.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The object, without `metadata.managedFields`.
    pub object: Value,
    /// Its managed-fields entries.
    pub managers: Vec<ManagedEntry>,
    /// When something outside metadata and status last changed.
    pub spec_changed: Instant,
    /// Set once a test overrode the status: controllers leave it alone.
    pub status_pinned: bool,
}

/// One watch event in the log.
#[derive(Debug, Clone)]
pub struct Event {
    /// The resourceVersion the change produced.
    pub rv: u64,
    /// Which object.
    pub key: ObjKey,
    /// ADDED, MODIFIED or DELETED.
    pub kind: &'static str,
    /// The object as clients see it.
    pub object: Value,
}

/// Propagation of a delete to dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Delete dependents in the background.
    Background,
    /// Delete dependents first (done at once here).
    Foreground,
    /// Leave dependents, removing their owner reference.
    Orphan,
}

/// All stored state.
pub struct Store {
    rv: u64,
    uids: u64,
    /// The objects.
    pub objects: BTreeMap<ObjKey, Stored>,
    events: VecDeque<Event>,
    notify: tokio::sync::watch::Sender<u64>,
}

impl Store {
    /// An empty store that signals `notify` on every change.
    pub fn new(notify: tokio::sync::watch::Sender<u64>) -> Self {
        Store {
            rv: 1,
            uids: 0,
            objects: BTreeMap::new(),
            events: VecDeque::new(),
            notify,
        }
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// The oldest resourceVersion a watch can resume from.
    pub fn oldest_event_rv(&self) -> u64 {
        self.events
            .front()
            .map(|e| e.rv.saturating_sub(1))
            .unwrap_or(self.rv)
    }

    /// Events after `rv`, in order.
    pub fn events_after(&self, rv: u64) -> impl Iterator<Item = &Event> {
        self.events.iter().filter(move |e| e.rv > rv)
    }

    /// Every resource served now: built-ins and the kinds of established CRDs.
    pub fn resources(&self, require_established: bool) -> Vec<ResourceInfo> {
        let mut all = discovery::builtins().to_vec();
        for (key, stored) in &self.objects {
            if key.group != "apiextensions.k8s.io" || key.plural != "customresourcedefinitions" {
                continue;
            }
            if stored.object["metadata"].get("deletionTimestamp").is_some() {
                continue;
            }
            if require_established && !condition_true(&stored.object, "Established") {
                continue;
            }
            for r in discovery::crd_resources(&stored.object) {
                if !all
                    .iter()
                    .any(|b| b.group == r.group && b.version == r.version && b.plural == r.plural)
                {
                    all.push(r);
                }
            }
        }
        all
    }

    /// The object as clients see it (with managedFields).
    pub fn render(stored: &Stored) -> Value {
        let mut v = stored.object.clone();
        if !stored.managers.is_empty()
            && let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.insert(
                "managedFields".into(),
                crate::apply::managed_fields_json(&stored.managers),
            );
        }
        v
    }

    /// A stored object rendered, if present.
    pub fn get(&self, key: &ObjKey) -> Option<Value> {
        self.objects.get(key).map(Self::render)
    }

    /// Fills server-set metadata of a new or replaced object, as a write
    /// would, without storing it. Returns whether the spec changed.
    pub fn prepare(&mut self, key: &ObjKey, object: &mut Value, old: Option<&Value>) -> bool {
        if !object.is_object() {
            *object = json!({});
        }
        let Some(map) = object.as_object_mut() else {
            return false;
        };
        let meta = map.entry("metadata").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        let spec_changed = match old {
            None => true,
            Some(old) => strip_meta_status(old) != strip_meta_status(object),
        };
        let next_uid = {
            self.uids += 1;
            util::new_uid(self.uids)
        };
        let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
            return spec_changed;
        };
        meta.remove("managedFields");
        meta.insert("name".into(), json!(key.name));
        if key.namespace.is_empty() {
            meta.remove("namespace");
        } else {
            meta.insert("namespace".into(), json!(key.namespace));
        }
        match old {
            None => {
                meta.insert("uid".into(), json!(next_uid));
                meta.insert("creationTimestamp".into(), json!(util::now_rfc3339()));
                meta.insert("generation".into(), json!(1));
                meta.remove("deletionTimestamp");
            }
            Some(old) => {
                let om = &old["metadata"];
                for field in [
                    "uid",
                    "creationTimestamp",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                ] {
                    match om.get(field) {
                        Some(v) => meta.insert(field.into(), v.clone()),
                        None => meta.remove(field),
                    };
                }
                let generation = om["generation"].as_i64().unwrap_or(1);
                meta.insert(
                    "generation".into(),
                    json!(if spec_changed {
                        generation + 1
                    } else {
                        generation
                    }),
                );
            }
        }
        meta.insert("resourceVersion".into(), json!((self.rv + 1).to_string()));
        spec_changed
    }

    /// Stores an object prepared by [`Store::prepare`]; an object marked for
    /// deletion with no finalizers left goes instead. Returns the object as
    /// clients see it.
    ///
    /// A write that changes nothing (same object, same managed fields but
    /// for their times) is skipped, as on the real server: no new
    /// resourceVersion, no event.
    pub fn commit(
        &mut self,
        key: ObjKey,
        mut object: Value,
        managers: Vec<ManagedEntry>,
        spec_changed: bool,
    ) -> Value {
        let existing = self.objects.get(&key);
        if let Some(old) = existing
            && without_rv(&old.object) == without_rv(&object)
            && same_ownership(&old.managers, &managers)
        {
            return Self::render(old);
        }
        let created = existing.is_none();
        let since = match existing {
            Some(s) if !spec_changed => s.spec_changed,
            _ => Instant::now(),
        };
        let pinned = existing.is_some_and(|s| s.status_pinned);
        self.rv += 1;
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(self.rv.to_string()));
        }
        let stored = Stored {
            object,
            managers,
            spec_changed: since,
            status_pinned: pinned,
        };
        let rendered = Self::render(&stored);
        let deleting = stored.object["metadata"].get("deletionTimestamp").is_some();
        if deleting && finalizers(&stored.object).is_empty() {
            self.objects.remove(&key);
            self.log(key, "DELETED", rendered.clone());
            return rendered;
        }
        self.objects.insert(key.clone(), stored);
        self.log(
            key,
            if created { "ADDED" } else { "MODIFIED" },
            rendered.clone(),
        );
        rendered
    }

    /// Replaces the status of a stored object (a controller or a test writing
    /// it); `pin` marks it as overridden by a test.
    pub fn write_status(&mut self, key: &ObjKey, status: Value, pin: bool) -> bool {
        let Some(stored) = self.objects.get_mut(key) else {
            return false;
        };
        if let Some(map) = stored.object.as_object_mut() {
            map.insert("status".into(), status);
        }
        if pin {
            stored.status_pinned = true;
        }
        self.rv += 1;
        let rv = self.rv;
        if let Some(meta) = stored
            .object
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
        {
            meta.insert("resourceVersion".into(), json!(rv.to_string()));
        }
        let rendered = Self::render(stored);
        self.log(key.clone(), "MODIFIED", rendered);
        true
    }

    fn log(&mut self, key: ObjKey, kind: &'static str, object: Value) {
        self.events.push_back(Event {
            rv: self.rv,
            key,
            kind,
            object,
        });
        while self.events.len() > EVENT_LOG_LEN {
            self.events.pop_front();
        }
        self.notify.send_replace(self.rv);
    }

    /// Deletes an object: with finalizers it is only marked (and returned);
    /// otherwise it goes. Dependents are deleted or orphaned per `propagation`;
    /// a Namespace takes everything in it along. Returns the final object, or
    /// `None` if absent.
    pub fn delete(&mut self, key: &ObjKey, propagation: Propagation) -> Option<Value> {
        let stored = self.objects.get(key)?.clone();
        let uid = stored.object["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        self.handle_dependents(&uid, propagation);
        if key.group.is_empty() && key.plural == "namespaces" {
            let inside: Vec<ObjKey> = self
                .objects
                .keys()
                .filter(|k| k.namespace == key.name)
                .cloned()
                .collect();
            for k in inside {
                self.delete(&k, Propagation::Background);
            }
        }
        if key.group == "apiextensions.k8s.io" && key.plural == "customresourcedefinitions" {
            // The custom resources go with their definition.
            let spec = &stored.object["spec"];
            let (group, plural) = (
                spec["group"].as_str().unwrap_or_default(),
                spec["names"]["plural"].as_str().unwrap_or_default(),
            );
            let instances: Vec<ObjKey> = self
                .objects
                .keys()
                .filter(|k| k.group == group && k.plural == plural)
                .cloned()
                .collect();
            for k in instances {
                self.objects.remove(&k);
            }
        }
        if !finalizers(&stored.object).is_empty() {
            if stored.object["metadata"].get("deletionTimestamp").is_some() {
                return Some(Self::render(&stored));
            }
            let mut object = stored.object.clone();
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("deletionTimestamp".into(), json!(util::now_rfc3339()));
                meta.insert("deletionGracePeriodSeconds".into(), json!(0));
            }
            if key.group.is_empty()
                && key.plural == "namespaces"
                && let Some(map) = object.as_object_mut()
            {
                map.insert("status".into(), json!({"phase": "Terminating"}));
            }
            return Some(self.commit(key.clone(), object, stored.managers, false));
        }
        let mut rendered = Self::render(&stored);
        self.objects.remove(key);
        self.rv += 1;
        if let Some(meta) = rendered.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(self.rv.to_string()));
        }
        self.log(key.clone(), "DELETED", rendered.clone());
        Some(rendered)
    }

    fn handle_dependents(&mut self, uid: &str, propagation: Propagation) {
        if uid.is_empty() {
            return;
        }
        let dependents: Vec<ObjKey> = self
            .objects
            .iter()
            .filter(|(_, s)| owner_uids(&s.object).iter().any(|u| u == uid))
            .map(|(k, _)| k.clone())
            .collect();
        for dep in dependents {
            match propagation {
                Propagation::Orphan => {
                    let Some(stored) = self.objects.get(&dep).cloned() else {
                        continue;
                    };
                    let mut object = stored.object.clone();
                    if let Some(refs) = object["metadata"]
                        .get_mut("ownerReferences")
                        .and_then(Value::as_array_mut)
                    {
                        refs.retain(|r| r["uid"].as_str() != Some(uid));
                        if refs.is_empty()
                            && let Some(meta) = object["metadata"].as_object_mut()
                        {
                            meta.remove("ownerReferences");
                        }
                    }
                    self.commit(dep, object, stored.managers, false);
                }
                Propagation::Background | Propagation::Foreground => {
                    self.delete(&dep, Propagation::Background);
                }
            }
        }
    }
}

fn without_rv(object: &Value) -> Value {
    let mut v = object.clone();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    v
}

fn same_ownership(a: &[ManagedEntry], b: &[ManagedEntry]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.manager == y.manager
                && x.operation == y.operation
                && x.api_version == y.api_version
                && x.fields == y.fields
        })
}

/// Shows a dry-run result as the real server does: the stored
/// resourceVersion (none for a create), since nothing was written.
pub fn dry_run_view(mut object: Value, old: Option<&Value>) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        match old.and_then(|o| o["metadata"].get("resourceVersion")) {
            Some(rv) => meta.insert("resourceVersion".into(), rv.clone()),
            None => meta.remove("resourceVersion"),
        };
    }
    object
}

/// `metadata.finalizers` as strings.
pub fn finalizers(object: &Value) -> Vec<String> {
    object["metadata"]["finalizers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn owner_uids(object: &Value) -> Vec<String> {
    object["metadata"]["ownerReferences"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r["uid"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `status.conditions[type=T].status` is `"True"`.
pub fn condition_true(object: &Value, condition: &str) -> bool {
    object["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"].as_str() == Some(condition) && c["status"].as_str() == Some("True"))
    })
}

/// The object without metadata and status: what `generation` tracks.
fn strip_meta_status(object: &Value) -> Value {
    let mut v = object.clone();
    if let Some(map) = v.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
        map.remove("apiVersion");
        map.remove("kind");
    }
    v
}
