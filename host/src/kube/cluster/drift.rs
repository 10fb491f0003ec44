//! Owns following applied releases' live objects for drift: one watch
//! per kind and namespace that the followed inventories hold, shared by
//! every release that has objects there, started from a list's
//! `resourceVersion`, resumed from the last version seen when the server
//! ends it, listed again only when the version is gone (410), as
//! client-go's reflector does. Never a poll per object.
//!
//! What drift is: a field capstan held by server-side apply after its
//! last apply that it no longer holds (another manager took it: `kubectl
//! edit`, `patch`, `scale`, `label --overwrite`, another applier's
//! forced apply; or someone removed it), outside the fields the app's
//! policy gives away ([`FieldPolicy`]) and the `replicas` of a workload
//! a HorizontalPodAutoscaler of the same release scales; and an object
//! deleted by hand. The baseline is the set of fields capstan's apply
//! answer showed ([`crate::kube::Applied::held`]); a release followed
//! without one (the daemon started, a new leader) reads each object once
//! and starts from what it holds then.
//!
//! Reads only, as the daemon. The watches select capstan's objects by
//! the app label, so an unrelated ConfigMap in a busy namespace costs
//! nothing.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures_util::StreamExt as _;
use kube::api::WatchParams;
use kube::core::WatchEvent;
use serde_json::Value;

use super::cache::{LiveCache, WatchKey};
use super::client::{Cluster, FIELD_MANAGER};
use super::discovery::Kind;
use super::error::Verb;
use super::inventory::APP_LABEL;
use crate::kube::managed::{FieldSet, applied_set, lost_fields};
use crate::kube::{ObjectKey, ObjectRef, Release};
use crate::model::{FieldPolicy, IgnoreRule, ObjectDrift, Pointer, resource_version};

/// How long the server keeps one watch open before the hub resumes it.
const WATCH_SECONDS: u32 = 290;
/// The pause before listing again after a failed list or watch.
const BACKOFF: Duration = Duration::from_secs(2);

/// One followed object.
struct Tracked {
    id: ObjectRef,
    kind: Kind,
    /// The fields capstan held after its apply; `None` until known.
    baseline: Option<FieldSet>,
    /// For a HorizontalPodAutoscaler: the kind and name it scales.
    scales: Option<(String, String)>,
    drift: Option<ObjectDrift>,
}

struct Followed {
    ignore: Vec<IgnoreRule>,
    objects: HashMap<ObjectKey, Tracked>,
    /// The namespace of the release's inventory Secret, watched for the
    /// apply cache ([`LiveCache::record`]), not for drift.
    namespace: String,
}

#[derive(Default)]
struct State {
    generation: u64,
    releases: HashMap<String, Followed>,
    watches: HashMap<WatchKey, tokio::task::AbortHandle>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    cluster: Cluster,
    handle: tokio::runtime::Handle,
    /// What the watches see, for the apply ([`super::cache`]).
    cache: Arc<LiveCache>,
}

/// The drift watcher of one cluster connection (see the module doc).
/// Clones share it.
#[derive(Clone)]
pub struct Hub {
    shared: Arc<Shared>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Ok(state) = self.state.get_mut() {
            for handle in state.watches.values() {
                handle.abort();
            }
        }
    }
}

/// What [`Hub::follow`] is handed for one object: where it lives, its
/// kind, and the fields capstan held after applying it, when known.
pub struct FollowedObject {
    /// The object, with the namespace it really lives in.
    pub id: ObjectRef,
    /// Its kind, from discovery.
    pub kind: Kind,
    /// The fields capstan's apply answer showed it holding.
    pub baseline: Option<FieldSet>,
}

impl Hub {
    /// A hub on `cluster`, its watches run on `handle`.
    pub fn new(cluster: Cluster, handle: tokio::runtime::Handle) -> Hub {
        Hub {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
                cluster,
                handle,
                cache: Arc::default(),
            }),
        }
    }

    /// Follows `release`'s `objects` (replacing what was followed of it,
    /// so a chart's dropped objects stop being followed), with the
    /// ignore rules of `policy`. Starts the watches they need, stops
    /// those nobody needs any more, and reads each object without a
    /// baseline once (in the background).
    pub fn follow(&self, release: &Release, objects: Vec<FollowedObject>, policy: &FieldPolicy) {
        let mut unknown = Vec::new();
        let mut tracked = HashMap::new();
        for object in objects {
            if object.baseline.is_none() {
                unknown.push((object.kind.clone(), object.id.clone()));
            }
            tracked.insert(
                object.id.key(),
                Tracked {
                    id: object.id,
                    kind: object.kind,
                    baseline: object.baseline,
                    scales: None,
                    drift: None,
                },
            );
        }
        {
            let mut state = lock(&self.shared);
            let before = state.releases.insert(
                release.to_string(),
                Followed {
                    ignore: policy.ignore.clone(),
                    objects: tracked,
                    namespace: release.namespace.clone(),
                },
            );
            if before.is_some_and(|b| b.objects.values().any(|t| t.drift.is_some())) {
                bump(&self.shared, &mut state);
            }
            self.reconcile_watches(&mut state);
        }
        for (kind, id) in unknown {
            let weak = Arc::downgrade(&self.shared);
            let cluster = self.shared.cluster.clone();
            self.shared.handle.spawn(async move {
                match cluster.get(&kind, id.namespace.as_deref(), &id).await {
                    Ok(Some(object)) => feed(&weak, &kind, &object),
                    Ok(None) => gone(&weak, &id.key()),
                    Err(e) => tracing::warn!(object = %id, "reading for the drift watch: {e}"),
                }
            });
        }
    }

    /// Stops following `release`.
    pub fn unfollow(&self, release: &Release) {
        let mut state = lock(&self.shared);
        if let Some(before) = state.releases.remove(&release.to_string()) {
            if before.objects.values().any(|t| t.drift.is_some()) {
                bump(&self.shared, &mut state);
            }
            self.reconcile_watches(&mut state);
        }
    }

    /// The drift of `release`'s objects, sorted by object; empty when
    /// none drifted or the release is not followed.
    pub fn drift(&self, release: &Release) -> Vec<ObjectDrift> {
        let state = lock(&self.shared);
        let Some(followed) = state.releases.get(&release.to_string()) else {
            return Vec::new();
        };
        let mut drift: Vec<ObjectDrift> = followed
            .objects
            .values()
            .filter_map(|t| t.drift.clone())
            .collect();
        drift.sort_by(|a, b| a.object.cmp(&b.object));
        drift
    }

    /// Waits until the drift of any followed object changed since
    /// generation `seen`, at most `timeout`; the generation now.
    pub fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        let state = lock(&self.shared);
        match self
            .shared
            .changed
            .wait_timeout_while(state, timeout, |s| s.generation == seen)
        {
            Ok((state, _)) => state.generation,
            Err(poisoned) => poisoned.into_inner().0.generation,
        }
    }

    /// The apply cache the watches fill.
    pub fn cache(&self) -> Arc<LiveCache> {
        self.shared.cache.clone()
    }

    /// How many watches are open (one per kind and namespace followed).
    pub fn watches(&self) -> usize {
        lock(&self.shared).watches.len()
    }

    /// Starts a watch for each kind and namespace a followed object is
    /// in, and stops those no followed object needs.
    fn reconcile_watches(&self, state: &mut State) {
        let secrets = Kind::core("Secret", "secrets");
        let needed: HashMap<WatchKey, Kind> = state
            .releases
            .values()
            .flat_map(|f| f.objects.values())
            .map(|t| {
                (
                    WatchKey::new(&t.kind, t.id.namespace.as_deref()),
                    t.kind.clone(),
                )
            })
            .chain(
                state
                    .releases
                    .values()
                    .map(|f| (WatchKey::new(&secrets, Some(&f.namespace)), secrets.clone())),
            )
            .collect();
        let cache = &self.shared.cache;
        state.watches.retain(|key, handle| {
            let keep = needed.contains_key(key);
            if !keep {
                handle.abort();
                cache.dropped(key);
            }
            keep
        });
        for (key, kind) in needed {
            if state.watches.contains_key(&key) {
                continue;
            }
            let weak = Arc::downgrade(&self.shared);
            let cluster = self.shared.cluster.clone();
            let namespace = key.namespace.clone();
            let task = self
                .shared
                .handle
                .spawn(async move { watch(weak, cluster, kind, namespace).await });
            state.watches.insert(key, task.abort_handle());
        }
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    shared
        .state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn bump(shared: &Shared, state: &mut State) {
    state.generation = state.generation.wrapping_add(1);
    shared.changed.notify_all();
}

/// The key of `object` of `kind` (list items carry no kind).
fn key_of(kind: &Kind, object: &Value) -> Option<ObjectKey> {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str);
    Some(
        ObjectRef {
            api_version: kind.api_version.clone(),
            kind: kind.kind.clone(),
            namespace: text("/metadata/namespace").map(str::to_string),
            name: text("/metadata/name")?.to_string(),
        }
        .key(),
    )
}

/// Takes the object `object` of `kind` as seen now: sets a missing
/// baseline, or works out its drift against the baseline.
fn feed(weak: &Weak<Shared>, kind: &Kind, object: &Value) {
    let Some(shared) = weak.upgrade() else {
        return;
    };
    let Some(key) = key_of(kind, object) else {
        return;
    };
    shared.cache.observe(key.clone(), &kind.api_version, object);
    let mut state = lock(&shared);
    let mut changed = false;
    for followed in state.releases.values_mut() {
        if !followed.objects.contains_key(&key) {
            continue;
        }
        let scaled = scaled_replicas(followed, &key);
        let ignore = followed.ignore.clone();
        let Some(tracked) = followed.objects.get_mut(&key) else {
            continue;
        };
        if kind.kind == "HorizontalPodAutoscaler" {
            let text = |p: &str| {
                object
                    .pointer(p)
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            tracked.scales =
                text("/spec/scaleTargetRef/kind").zip(text("/spec/scaleTargetRef/name"));
        }
        let drift = match &tracked.baseline {
            None => {
                tracked.baseline = Some(applied_set(object, FIELD_MANAGER));
                None
            }
            Some(baseline) => {
                let policy = FieldPolicy {
                    ignore,
                    ..FieldPolicy::default()
                };
                let mut ignored: Vec<Pointer> = policy
                    .ignored(
                        &tracked.id.kind,
                        tracked.id.namespace.as_deref(),
                        &tracked.id.name,
                    )
                    .into_iter()
                    .cloned()
                    .collect();
                ignored.extend(scaled);
                let fields = lost_fields(baseline, object, FIELD_MANAGER, &ignored);
                (!fields.is_empty()).then(|| ObjectDrift {
                    object: tracked.id.to_string(),
                    deleted: false,
                    fields,
                })
            }
        };
        if tracked.drift != drift {
            tracked.drift = drift;
            changed = true;
        }
    }
    if changed {
        bump(&shared, &mut state);
    }
}

/// `/spec/replicas` when a HorizontalPodAutoscaler of the same release
/// scales the object `key`.
fn scaled_replicas(followed: &Followed, key: &ObjectKey) -> Option<Pointer> {
    let scaled = followed.objects.values().any(|t| {
        t.scales
            .as_ref()
            .is_some_and(|(kind, name)| *kind == key.kind && *name == key.name)
            && t.id.namespace == key.namespace
    });
    scaled
        .then(|| Pointer::parse("/spec/replicas").ok())
        .flatten()
}

/// The object `key` is gone.
fn gone(weak: &Weak<Shared>, key: &ObjectKey) {
    let Some(shared) = weak.upgrade() else {
        return;
    };
    shared.cache.gone(key);
    let mut state = lock(&shared);
    let mut changed = false;
    for followed in state.releases.values_mut() {
        if let Some(tracked) = followed.objects.get_mut(key) {
            let drift = Some(ObjectDrift {
                object: tracked.id.to_string(),
                deleted: true,
                fields: Vec::new(),
            });
            if tracked.drift != drift {
                tracked.drift = drift;
                changed = true;
            }
        }
    }
    if changed {
        bump(&shared, &mut state);
    }
}

/// The objects followed in `kind`'s `namespace`.
fn followed_in(weak: &Weak<Shared>, kind: &Kind, namespace: Option<&str>) -> Vec<ObjectRef> {
    let Some(shared) = weak.upgrade() else {
        return Vec::new();
    };
    let state = lock(&shared);
    state
        .releases
        .values()
        .flat_map(|f| f.objects.values())
        .filter(|t| {
            t.kind.api_version == kind.api_version
                && t.kind.kind == kind.kind
                && t.id.namespace.as_deref() == namespace
        })
        .map(|t| t.id.clone())
        .collect()
}

/// One watch, for as long as the hub lives and needs it: list, then
/// watch from the list's version, resuming from the last version seen;
/// list again on 410 or a failure.
async fn watch(weak: Weak<Shared>, cluster: Cluster, kind: Kind, namespace: Option<String>) {
    let collection = kind.collection_path(namespace.as_deref());
    let selector = format!("labelSelector={}", APP_LABEL.replace('/', "%2F"));
    loop {
        if weak.strong_count() == 0 {
            return;
        }
        let list = cluster
            .get_raw(
                Verb::List,
                &format!("{collection}?{selector}"),
                "application/json",
            )
            .await;
        let mut version = match list {
            Ok(Some(list)) => {
                let items = list.get("items").and_then(Value::as_array);
                let mut seen = HashSet::new();
                for item in items.into_iter().flatten() {
                    if let Some(key) = key_of(&kind, item) {
                        seen.insert(key);
                    }
                    feed(&weak, &kind, item);
                }
                for id in followed_in(&weak, &kind, namespace.as_deref()) {
                    if !seen.contains(&id.key()) {
                        confirm_gone(&weak, &cluster, &kind, &id).await;
                    }
                }
                resource_version(&list)
            }
            Ok(None) | Err(_) => None,
        };
        let Some(from) = version.take() else {
            tokio::time::sleep(BACKOFF).await;
            continue;
        };
        let key = WatchKey::new(&kind, namespace.as_deref());
        in_step(&weak, &key, true);
        watch_from(&weak, &cluster, &kind, &collection, from).await;
        in_step(&weak, &key, false);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Watches from `version` until the version is gone (410) or the watch
/// fails; a watch the server ends on time is resumed from the last
/// version seen.
async fn watch_from(
    weak: &Weak<Shared>,
    cluster: &Cluster,
    kind: &Kind,
    collection: &str,
    mut version: String,
) {
    loop {
        let params = WatchParams::default()
            .labels(APP_LABEL)
            .timeout(WATCH_SECONDS);
        let Ok(request) = kube::core::Request::new(collection).watch(&params, &version) else {
            return;
        };
        let events = match cluster.watch(collection, request).await {
            Ok(events) => events,
            Err(e) => {
                tracing::debug!(%collection, "drift watch: {e}");
                tokio::time::sleep(BACKOFF).await;
                return;
            }
        };
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            if weak.strong_count() == 0 {
                return;
            }
            match event {
                Ok(WatchEvent::Added(object) | WatchEvent::Modified(object)) => {
                    version = resource_version(&object).unwrap_or(version);
                    feed(weak, kind, &object);
                }
                Ok(WatchEvent::Deleted(object)) => {
                    version = resource_version(&object).unwrap_or(version);
                    let id = key_of(kind, &object).map(|key| ObjectRef {
                        api_version: kind.api_version.clone(),
                        kind: key.kind,
                        namespace: key.namespace,
                        name: key.name,
                    });
                    if let Some(id) = id {
                        confirm_gone(weak, cluster, kind, &id).await;
                    }
                }
                Ok(WatchEvent::Bookmark(bookmark)) => {
                    version = bookmark.metadata.resource_version;
                }
                Ok(WatchEvent::Error(status)) => {
                    if status.code != 410 {
                        tracing::debug!(%collection, "drift watch: {}", status.message);
                        tokio::time::sleep(BACKOFF).await;
                    }
                    return;
                }
                Err(e) => {
                    tracing::debug!(%collection, "drift watch broke off: {e}");
                    return;
                }
            }
        }
    }
}

/// Tells the apply cache whether the watch `key` is in step.
fn in_step(weak: &Weak<Shared>, key: &WatchKey, synced: bool) {
    if let Some(shared) = weak.upgrade() {
        shared.cache.set_synced(key, synced);
    }
}

/// An object left the watch (deleted, or no longer labelled as an
/// app's): read it to tell which.
async fn confirm_gone(weak: &Weak<Shared>, cluster: &Cluster, kind: &Kind, id: &ObjectRef) {
    match cluster.get(kind, id.namespace.as_deref(), id).await {
        Ok(None) => gone(weak, &id.key()),
        Ok(Some(object)) => feed(weak, kind, &object),
        Err(e) => tracing::debug!(object = %id, "drift watch: {e}"),
    }
}
