//! Owns the apply cache: the live objects the drift watches
//! ([`super::drift`]) see, what capstan's last apply of each left (a
//! digest of its inputs and the object's signature), and which
//! watches are in step with the server. With it a re-apply knows,
//! without a request, that an object is as capstan left it: the same
//! inputs, the same uid, and capstan's own `managedFields` entry exactly
//! as its last write (or comparison) saw it; every other object is read
//! and dry-run as before.
//!
//! Why capstan's entry and not the `resourceVersion`: a controller's
//! status update changes the version of every Deployment it runs, but
//! not what capstan's apply would do. Whoever changes a field capstan
//! set (an `Update` by kubectl or a controller, another manager's forced
//! apply) takes that field out of capstan's entry, so the entry changes;
//! a field no manager of capstan's holds is not capstan's to compare.
//!
//! Conservative by construction: an answer is given only for an object
//! whose watch has listed and is running and whose inputs hash the same.
//! An edit of capstan's fields, a delete, a watch that broke, a daemon
//! restart or another replica's write all make it miss, and the object
//! is read. The one window it cannot close is an edit the watch has not
//! yet delivered (milliseconds); the drift watch reports it when it
//! comes.
//!
//! Holds only objects of watched kinds and namespaces that carry the app
//! label (capstan's own), so its size is that of what capstan applied.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

use super::client::FIELD_MANAGER;
use super::discovery::Kind;
use super::inventory::Inventory;
use crate::kube::ObjectKey;
use crate::model::Pointer;

/// One watch: a kind in a namespace (none for a cluster-scoped kind).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct WatchKey {
    pub(super) api_version: String,
    pub(super) kind: String,
    pub(super) namespace: Option<String>,
}

impl WatchKey {
    pub(super) fn new(kind: &Kind, namespace: Option<&str>) -> WatchKey {
        WatchKey {
            api_version: kind.api_version.clone(),
            kind: kind.kind.clone(),
            namespace: namespace.map(str::to_string),
        }
    }

    fn of(key: &ObjectKey, api_version: &str) -> WatchKey {
        WatchKey {
            api_version: api_version.to_string(),
            kind: key.kind.clone(),
            namespace: key.namespace.clone(),
        }
    }
}

/// What capstan's last apply of an object left.
struct Mark {
    /// [`digest`] of the inputs it was applied from.
    digest: u64,
    /// The [`signature`] its answer (or the live object it was compared
    /// with) carried.
    signature: String,
}

#[derive(Default)]
struct State {
    /// The last object each running watch delivered, by key, with the
    /// `apiVersion` it was watched as.
    live: HashMap<ObjectKey, (String, Value)>,
    marks: HashMap<ObjectKey, Mark>,
    /// Watches that listed and are watching.
    synced: HashSet<WatchKey>,
    /// The inventory each release's last apply in this process left,
    /// taken by the follow that comes after it.
    inventories: HashMap<String, Inventory>,
    /// The `resourceVersion` of each inventory Secret as this process
    /// last read or wrote it.
    records: HashMap<ObjectKey, String>,
}

/// The apply cache of one cluster connection (see the module doc).
#[derive(Default)]
pub struct LiveCache {
    state: Mutex<State>,
}

/// What of `object` says whether capstan's apply of it still stands: its
/// uid and capstan's own `Apply` entry in `managedFields` (the fields it
/// holds and when it last wrote them); `None` without such an entry.
pub(super) fn signature(object: &Value) -> Option<String> {
    let uid = object.pointer("/metadata/uid").and_then(Value::as_str)?;
    let entry = object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)?
        .iter()
        .find(|e| {
            let text = |k: &str| e.get(k).and_then(Value::as_str);
            text("manager") == Some(FIELD_MANAGER)
                && text("operation") == Some("Apply")
                && text("subresource").is_none_or(str::is_empty)
        })?;
    Some(format!("{uid} {entry}"))
}

/// A digest of what an apply of one object starts from: the body capstan
/// would send before its field policy, the fields that policy leaves out,
/// and whether the apply forces. The same digest and the same live
/// object give the same write.
pub(super) fn digest(body: &Value, ignored: &[Pointer], force: bool) -> u64 {
    let mut hasher = DefaultHasher::new();
    body.to_string().hash(&mut hasher);
    for pointer in ignored {
        pointer.to_string().hash(&mut hasher);
    }
    force.hash(&mut hasher);
    hasher.finish()
}

impl LiveCache {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A watch delivered `object` (keyed `key`, watched as
    /// `api_version`). A list's items carry no `apiVersion` and `kind`:
    /// they are filled in, so readiness reads the object as its kind.
    pub(super) fn observe(&self, key: ObjectKey, api_version: &str, object: &Value) {
        let mut object = object.clone();
        if let Some(map) = object.as_object_mut() {
            map.entry("apiVersion")
                .or_insert_with(|| Value::String(api_version.to_string()));
            map.entry("kind")
                .or_insert_with(|| Value::String(key.kind.clone()));
        }
        self.lock()
            .live
            .insert(key, (api_version.to_string(), object));
    }

    /// The object `key` is gone.
    pub(super) fn gone(&self, key: &ObjectKey) {
        let mut state = self.lock();
        state.live.remove(key);
        state.marks.remove(key);
    }

    /// The watch `watch` listed and runs (`true`), or broke off and will
    /// list again (`false`: nothing it holds is trusted until then).
    pub(super) fn set_synced(&self, watch: &WatchKey, synced: bool) {
        let mut state = self.lock();
        match synced {
            true => {
                state.synced.insert(watch.clone());
            }
            false => {
                state.synced.remove(watch);
            }
        }
    }

    /// The watch `watch` stopped: forgets what it delivered.
    pub(super) fn dropped(&self, watch: &WatchKey) {
        let mut state = self.lock();
        state.synced.remove(watch);
        state
            .live
            .retain(|key, (api_version, _)| WatchKey::of(key, api_version) != *watch);
    }

    /// Capstan's apply of `key` from inputs `digest` left `object` (the
    /// write's answer, or the live object found as desired).
    pub(super) fn mark(&self, key: ObjectKey, digest: u64, object: &Value) {
        let mut state = self.lock();
        match signature(object) {
            Some(signature) => {
                state.marks.insert(key, Mark { digest, signature });
            }
            None => {
                state.marks.remove(&key);
            }
        }
    }

    /// The live object `key` (of `kind` in `namespace`) when it is
    /// exactly as capstan's last apply from the same inputs left it and
    /// its watch is in step; `None` otherwise (read it).
    pub(super) fn unchanged(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        key: &ObjectKey,
        digest: u64,
    ) -> Option<Value> {
        let state = self.lock();
        if !state.synced.contains(&WatchKey::new(kind, namespace)) {
            return None;
        }
        let mark = state.marks.get(key)?;
        let (_, live) = state.live.get(key)?;
        (mark.digest == digest && signature(live).as_deref() == Some(&mark.signature))
            .then(|| live.clone())
    }

    /// Whether an in-step watch shows a live object in `namespace` (so
    /// the namespace exists).
    pub(super) fn holds_namespace(&self, namespace: &str) -> bool {
        let state = self.lock();
        state.live.iter().any(|(key, (api_version, _))| {
            key.namespace.as_deref() == Some(namespace)
                && state.synced.contains(&WatchKey::of(key, api_version))
        })
    }

    /// This process read or wrote the inventory Secret `key` as `secret`.
    pub(super) fn record_seen(&self, key: ObjectKey, secret: &Value) {
        let mut state = self.lock();
        match crate::model::resource_version(secret) {
            Some(version) => {
                state.records.insert(key, version);
            }
            None => {
                state.records.remove(&key);
            }
        }
    }

    /// The inventory Secret `key` (in `namespace`) from its watch, when
    /// the watch is in step and shows exactly the version this process
    /// last read or wrote (no other replica wrote it since, and the
    /// watch is not behind this process's own write); `None`: read it.
    pub(super) fn record(&self, namespace: &str, key: &ObjectKey) -> Option<Value> {
        let state = self.lock();
        let secrets = Kind::core("Secret", "secrets");
        if !state
            .synced
            .contains(&WatchKey::new(&secrets, Some(namespace)))
        {
            return None;
        }
        let known = state.records.get(key)?;
        let (_, live) = state.live.get(key)?;
        (crate::model::resource_version(live).as_deref() == Some(known)).then(|| live.clone())
    }

    /// Keeps the inventory `release`'s apply left for the follow after it.
    pub(super) fn keep_inventory(&self, release: String, inventory: Inventory) {
        self.lock().inventories.insert(release, inventory);
    }

    /// Takes the inventory [`LiveCache::keep_inventory`] kept.
    pub(super) fn take_inventory(&self, release: &str) -> Option<Inventory> {
        self.lock().inventories.remove(release)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn configmaps() -> Kind {
        Kind::core("ConfigMap", "configmaps")
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: Some("shop".into()),
            name: name.into(),
        }
    }

    /// The object as capstan's apply left it at `time`, with `status`.
    fn object(time: &str, status: &str) -> Value {
        json!({"metadata": {"name": "a", "namespace": "shop", "uid": "u1",
                            "managedFields": [
                                {"manager": "capstan", "operation": "Apply", "time": time,
                                 "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
                                {"manager": "kube-controller-manager", "operation": "Update",
                                 "subresource": "status", "time": time,
                                 "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}}]},
               "status": status})
    }

    /// `object` after `kubectl edit` took `data.a`.
    fn edited() -> Value {
        json!({"metadata": {"name": "a", "namespace": "shop", "uid": "u1",
                            "managedFields": [
                                {"manager": "capstan", "operation": "Apply", "time": "t1",
                                 "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}},
                                {"manager": "kubectl-edit", "operation": "Update", "time": "t2",
                                 "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]}})
    }

    #[test]
    fn only_an_object_as_capstan_left_it_under_an_in_step_watch_is_answered() {
        let cache = LiveCache::default();
        let kind = configmaps();
        let watch = WatchKey::new(&kind, Some("shop"));
        let d = digest(&json!({"data": {"a": "1"}}), &[], true);
        cache.mark(key("a"), d, &object("t1", "new"));
        cache.observe(key("a"), "v1", &object("t1", "new"));
        // Not in step yet: read it.
        assert!(cache.unchanged(&kind, Some("shop"), &key("a"), d).is_none());
        cache.set_synced(&watch, true);
        let answered = cache.unchanged(&kind, Some("shop"), &key("a"), d);
        // A list item's kind is filled in, for readiness.
        assert_eq!(
            answered
                .as_ref()
                .map(|o| (o["apiVersion"].clone(), o["kind"].clone())),
            Some((json!("v1"), json!("ConfigMap")))
        );
        assert!(cache.holds_namespace("shop"));
        assert!(!cache.holds_namespace("other"));
        // A controller's status update changes nothing of capstan's.
        cache.observe(key("a"), "v1", &object("t1", "ready"));
        assert!(cache.unchanged(&kind, Some("shop"), &key("a"), d).is_some());
        // Other inputs: read it.
        let other = digest(&json!({"data": {"a": "2"}}), &[], true);
        assert!(
            cache
                .unchanged(&kind, Some("shop"), &key("a"), other)
                .is_none()
        );
        // An edit took a field of capstan's: read it.
        cache.observe(key("a"), "v1", &edited());
        assert!(cache.unchanged(&kind, Some("shop"), &key("a"), d).is_none());
        // Written again: answered again.
        cache.mark(key("a"), d, &object("t3", "new"));
        cache.observe(key("a"), "v1", &object("t3", "new"));
        assert!(cache.unchanged(&kind, Some("shop"), &key("a"), d).is_some());
        // A broken watch: nothing is trusted.
        cache.set_synced(&watch, false);
        assert!(cache.unchanged(&kind, Some("shop"), &key("a"), d).is_none());
        cache.set_synced(&watch, true);
        // Deleted: read it.
        cache.gone(&key("a"));
        assert!(cache.unchanged(&kind, Some("shop"), &key("a"), d).is_none());
        // A stopped watch forgets what it delivered.
        cache.observe(key("a"), "v1", &object("t4", "new"));
        cache.mark(key("a"), d, &object("t4", "new"));
        cache.dropped(&watch);
        cache.set_synced(&watch, true);
        assert!(cache.unchanged(&kind, Some("shop"), &key("a"), d).is_none());
    }

    #[test]
    fn recreated_by_someone_else_is_not_what_capstan_left() {
        let before = object("t1", "new");
        let mut after = before.clone();
        after["metadata"]["uid"] = json!("u2");
        assert_ne!(signature(&before), signature(&after));
        assert!(signature(&json!({"metadata": {"uid": "u1"}})).is_none());
    }

    #[test]
    fn the_digest_covers_the_body_the_ignored_fields_and_force() {
        let body = json!({"spec": {"replicas": 2}});
        let replicas = Pointer::parse("/spec/replicas").ok();
        let ignored: Vec<Pointer> = replicas.into_iter().collect();
        let d = digest(&body, &[], true);
        assert_eq!(d, digest(&body, &[], true));
        assert_ne!(d, digest(&body, &ignored, true));
        assert_ne!(d, digest(&body, &[], false));
        assert_ne!(d, digest(&json!({"spec": {"replicas": 3}}), &[], true));
    }
}
