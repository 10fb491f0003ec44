//! Owns applying one release's plan: stage by stage, each object by
//! server-side apply (field manager `capstan`, `fieldValidation=Strict`),
//! written only when a server-side dry run differs from the live object,
//! with ownership checked and recorded, then the prune.
//!
//! Per object: a GET (the live object, for ownership and the drift
//! check); then, for a new object, the apply; for an existing one, a
//! dry-run apply whose answer is compared with the live object ignoring
//! `status` and server-set metadata ([`comparable`]), and the apply only
//! when they differ. So a first apply costs one write per object and a
//! re-apply where nothing changed costs none.
//!
//! Ownership: a live object that the inventory does not list, that does
//! not carry this release's annotation, and that this apply did not just
//! create as a missing namespace, is a conflict naming its owner, unless
//! [`ApplyOptions::adopt`]; adopting applies with `force` so capstan takes
//! the fields other managers hold. Ownership is checked for the whole
//! stage before anything of it is recorded or written, so a conflict
//! leaves no trace in the inventory; [`admit`] makes the same check for a
//! set of objects before the caller writes anything at all.
//!
//! Concurrency: within a stage, the GETs go out together, and the
//! objects of one kind are applied together, at most [`MAX_IN_FLIGHT`]
//! requests at once; kinds still go one after the other in install order
//! (a ConfigMap before the Deployment that mounts it). When one object of
//! a kind fails, the others of that kind still finish, and no later kind
//! is started.
//!
//! Recording: a stage's objects enter the inventory as `pending` before
//! the first write and become `applied` as their applies succeed; when a
//! stage fails, the objects it did not write (and that were not recorded
//! before) leave again, except those whose outcome is unknown (retries
//! gave up).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cache::LiveCache;
use super::client::{Cluster, FIELD_MANAGER};
use super::delete::delete_until_gone;
use super::discovery::Kind;
use super::error::Error;
use super::fields;
use super::inventory::{Inventory, Owner, owner, secret_name, with_ownership};
use super::present::{Inputs, Known, get_all, get_unknown, inputs, known};
use super::prune;
use super::readiness::{Rules, State as ReadyState, readiness_with};
use super::recreate;
use super::stages::{Stage, stages};
use super::wait::{self, Awaited};
use crate::kube::managed::applied_set;
use crate::kube::target::{ApplyEvent, ApplyOptions, Change, ProgressSink};
use crate::kube::{Applied, ApplyPlan, ObjectKey, ObjectRef, Release, Resource};

/// Target-wide settings (see [`super::ClusterOptions`]).
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Default readiness (and deletion) timeout per chart.
    pub timeout: Duration,
    /// Time between polls.
    pub poll: Duration,
    /// How long a kind whose CRD this release applies may take to appear
    /// in discovery.
    pub discovery_wait: Duration,
}

/// The inventory of a release, whether its Secret exists, and what was
/// last written (so saving an unchanged inventory sends nothing).
pub struct Record {
    /// What is recorded.
    pub inventory: Inventory,
    exists: bool,
    saved: Option<Value>,
    touched: bool,
    /// The revision a touch records ([`ApplyOptions::revision`]); one up
    /// from the Secret's when `None`.
    next_revision: Option<u64>,
    /// The apply cache told of each read and write ([`LiveCache::record`]).
    cache: Option<Arc<LiveCache>>,
}

fn secrets() -> Kind {
    Kind::core("Secret", "secrets")
}

fn secret_ref(release: &Release) -> ObjectRef {
    ObjectRef {
        api_version: "v1".into(),
        kind: "Secret".into(),
        namespace: Some(release.namespace.clone()),
        name: secret_name(release),
    }
}

impl Record {
    /// Reads the release's inventory Secret; an empty inventory when
    /// there is none.
    ///
    /// # Errors
    /// A request's error, or [`Error::Inventory`] for a Secret that is
    /// not a readable inventory.
    pub async fn load(cluster: &Cluster, release: &Release) -> Result<Record, Error> {
        Record::load_with(cluster, release, None).await
    }

    /// [`Record::load`], from the apply cache when it holds the Secret as
    /// this process last read or wrote it.
    ///
    /// # Errors
    /// As [`Record::load`].
    pub async fn load_with(
        cluster: &Cluster,
        release: &Release,
        cache: Option<&Arc<LiveCache>>,
    ) -> Result<Record, Error> {
        let id = secret_ref(release);
        let cached = cache.and_then(|c| c.record(&release.namespace, &id.key()));
        let found = match cached {
            Some(secret) => Some(secret),
            None => {
                let read = cluster
                    .get(&secrets(), id.namespace.as_deref(), &id)
                    .await?;
                if let (Some(cache), Some(secret)) = (cache, &read) {
                    cache.record_seen(id.key(), secret);
                }
                read
            }
        };
        match found {
            None => Ok(Record {
                inventory: Inventory::new(release),
                exists: false,
                saved: None,
                touched: false,
                next_revision: None,
                cache: cache.cloned(),
            }),
            Some(secret) => {
                let inventory =
                    Inventory::from_secret(&secret).map_err(|source| Error::Inventory {
                        namespace: release.namespace.clone(),
                        name: id.name.clone(),
                        source,
                    })?;
                let saved = Some(inventory.to_secret());
                Ok(Record {
                    inventory,
                    exists: true,
                    saved,
                    touched: false,
                    next_revision: None,
                    cache: cache.cloned(),
                })
            }
        }
    }

    /// Whether the Secret exists.
    pub fn exists(&self) -> bool {
        self.exists
    }

    /// Counts this apply as a revision (once per apply): called when it
    /// first writes or deletes something, so an apply that changes
    /// nothing leaves the revision, and the Secret, as they were.
    pub fn touch(&mut self) {
        if !self.touched {
            self.touched = true;
            self.inventory.revision = self
                .next_revision
                .unwrap_or(self.inventory.revision.saturating_add(1));
        }
    }

    /// Writes the inventory Secret (server-side apply, forced: only
    /// capstan writes it), unless it is what was last read or written.
    ///
    /// # Errors
    /// The request's error.
    pub async fn save(&mut self, cluster: &Cluster, release: &Release) -> Result<(), Error> {
        let body = self.inventory.to_secret();
        if self.saved.as_ref() == Some(&body) {
            return Ok(());
        }
        let id = secret_ref(release);
        let written = cluster
            .apply(&secrets(), id.namespace.as_deref(), &id, &body, false, true)
            .await?;
        if let Some(cache) = &self.cache {
            cache.record_seen(id.key(), &written);
        }
        self.exists = true;
        self.saved = Some(body);
        Ok(())
    }

    /// Deletes the inventory Secret (the release is gone).
    ///
    /// # Errors
    /// The request's error.
    pub async fn delete(self, cluster: &Cluster, release: &Release) -> Result<(), Error> {
        let id = secret_ref(release);
        cluster
            .delete(&secrets(), id.namespace.as_deref(), &id, false)
            .await?;
        Ok(())
    }
}

/// An object ready to send: its identity with the namespace it really
/// goes to (none for cluster-scoped kinds), its kind, and the body with
/// ownership metadata.
#[derive(Clone)]
pub(super) struct Prepared {
    pub(super) id: ObjectRef,
    pub(super) kind: Kind,
    pub(super) body: Value,
    /// [`Resource::is_install_only`].
    pub(super) install_only: bool,
}

/// Applies `plan` for `release`: stages in order, each waited for
/// (stage 1 always, for CRDs to resolve; the others unless
/// [`ApplyOptions::no_wait`]), then the prune.
///
/// # Errors
/// The first failing step; the inventory then says what was applied.
pub async fn apply_release(
    cluster: &Cluster,
    settings: &Settings,
    release: &Release,
    plan: &ApplyPlan,
    options: &ApplyOptions,
    progress: &dyn ProgressSink,
    shared_cache: Option<&Arc<LiveCache>>,
) -> Result<Applied, Error> {
    let cache = shared_cache.map(Arc::as_ref);
    let timeout = options.timeout.unwrap_or(settings.timeout);
    let deadline = Instant::now() + timeout;
    let mut record = Record::load_with(cluster, release, shared_cache).await?;
    record.next_revision = options.revision;
    let owned_before: HashSet<ObjectKey> = record
        .inventory
        .objects
        .iter()
        .map(|e| e.id().key())
        .collect();
    let mut namespaces = Namespaces::default();
    namespaces
        .ensure_cached(cluster, &release.namespace, cache)
        .await?;
    let times = (deadline, timeout, settings.poll);
    rekind(cluster, release, plan, &mut record, times, progress).await?;

    let mut result = Applied::default();
    for (stage, members) in stages(plan.to_apply()) {
        let name = stage.to_string();
        progress.event(&ApplyEvent::Stage {
            stage: &name,
            objects: members.len(),
        });
        let mut prepared = Vec::with_capacity(members.len());
        for resource in members {
            prepared.push(prepare(cluster, settings, release, plan, resource, deadline).await?);
        }
        for namespace in prepared.iter().filter_map(|p| p.id.namespace.as_deref()) {
            namespaces.ensure_cached(cluster, namespace, cache).await?;
        }
        let inputs: Vec<Inputs> = prepared
            .iter()
            .map(|p| inputs(p, &owned_before, options))
            .collect();
        let known = known(
            cluster,
            &prepared,
            &inputs,
            &owned_before,
            &namespaces,
            cache,
        )
        .await;
        let fetched = get_unknown(cluster, &prepared, &known).await;
        let mut lives = Vec::with_capacity(prepared.len());
        for (p, live) in prepared.iter().zip(fetched) {
            let mut live = live?;
            if let Some(found) = &live {
                check_owner(release, p, found, &owned_before, &namespaces, options)?;
                if owned_before.contains(&p.id.key())
                    && let Some(now) = recreate::release_volume(cluster, p, found).await?
                {
                    live = Some(now);
                }
            }
            lives.push(live);
        }
        for p in &prepared {
            record.inventory.add_pending(&p.id);
            record.inventory.set_install_only(&p.id, p.install_only);
        }
        record.save(cluster, release).await?;
        let mut uids: std::collections::HashMap<ObjectKey, String> =
            std::collections::HashMap::new();
        let mut observed: std::collections::HashMap<ObjectKey, Value> =
            std::collections::HashMap::new();
        let pairs: Vec<(&Prepared, &Option<Value>)> = prepared.iter().zip(&lives).collect();
        let unchanged: HashSet<ObjectKey> = prepared
            .iter()
            .zip(&known)
            .filter(|(_, k)| matches!(k, Known::Unchanged(_)))
            .map(|(p, _)| p.id.key())
            .collect();
        let digests: std::collections::HashMap<ObjectKey, u64> = prepared
            .iter()
            .zip(&inputs)
            .map(|(p, i)| (p.id.key(), i.digest))
            .collect();
        let mut written = 0;
        for chunk in
            pairs.chunk_by(|(a, _), (b, _)| a.id.kind == b.id.kind && a.id.group() == b.id.group())
        {
            let work: Vec<_> = chunk
                .iter()
                .map(|(p, live)| {
                    let adopting = options.adopt && !owned_before.contains(&p.id.key());
                    let force = fields::forces(&options.fields, adopting);
                    let again = recreate::opted_in(options, &p.id).then_some(times);
                    let (sent, ignored) = fields::with_policy(p, live.as_ref(), &options.fields);
                    let how = How {
                        force,
                        recreate: again,
                        ignored,
                        unchanged: unchanged.contains(&p.id.key()),
                    };
                    (cluster.clone(), sent, (*live).clone(), how)
                })
                .collect();
            let outcomes = in_flight(work, |(cluster, p, live, how)| async move {
                apply_one(&cluster, &p, live.as_ref(), &how).await
            })
            .await;
            let mut failure = None;
            for ((p, _), outcome) in chunk.iter().zip(outcomes) {
                match outcome {
                    Ok((change, object)) => {
                        let uid = object
                            .as_ref()
                            .map(|o| wait::uid_of(o).to_string())
                            .unwrap_or_default();
                        let held = object
                            .as_ref()
                            .map(|o| applied_set(o, FIELD_MANAGER))
                            .unwrap_or_default();
                        if let Some(object) = object {
                            if let (Some(cache), Some(digest)) = (cache, digests.get(&p.id.key())) {
                                cache.mark(p.id.key(), *digest, &object);
                            }
                            observed.insert(p.id.key(), object);
                        }
                        uids.insert(p.id.key(), uid);
                        // A recreated object's answer is not at hand:
                        // the drift watcher reads it itself.
                        if !held.is_empty() {
                            result.held.push((p.id.clone(), held));
                        }
                        record.inventory.mark_applied(&p.id);
                        match change {
                            Change::Unchanged => result.unchanged += 1,
                            Change::Created | Change::Configured => record.touch(),
                        }
                        result.applied.push(p.id.clone());
                        progress.event(&ApplyEvent::Applied {
                            object: &p.id,
                            change,
                        });
                    }
                    Err(err) => {
                        // Outcome unknown when retries gave up: it may exist.
                        let uncertain = matches!(err, Error::GaveUp { .. });
                        if !uncertain && !owned_before.contains(&p.id.key()) {
                            record.inventory.forget(&p.id);
                        }
                        failure.get_or_insert(err);
                    }
                }
            }
            written += chunk.len();
            if let Some(err) = failure {
                for (later, _) in &pairs[written..] {
                    if !owned_before.contains(&later.id.key()) {
                        record.inventory.forget(&later.id);
                    }
                }
                if let Err(save) = record.save(cluster, release).await {
                    tracing::warn!(%release, "recording the inventory after a failure: {save}");
                }
                return Err(err);
            }
        }
        record.save(cluster, release).await?;
        if stage == Stage::Definitions || !options.no_wait {
            let rules = Rules {
                load_balancer_address: options.wait_for_load_balancer,
            };
            let awaited: Vec<Awaited> = prepared
                .into_iter()
                // What the write's answer (or the live object found as
                // desired) already shows Current needs no wait.
                .filter(|p| !already_current(observed.get(&p.id.key()), rules))
                .map(|p| Awaited {
                    uid: uids.remove(&p.id.key()).unwrap_or_default(),
                    id: p.id,
                    kind: p.kind,
                })
                .collect();
            wait::until_current(
                cluster,
                &awaited,
                deadline,
                timeout,
                settings.poll,
                rules,
                progress,
            )
            .await?;
        }
    }
    result.pruned = prune::prune(
        cluster,
        release,
        plan.to_prune(),
        &mut record,
        options.purge,
        (deadline, timeout, settings.poll),
        progress,
    )
    .await?;
    if let Some(cache) = cache {
        cache.keep_inventory(release.to_string(), record.inventory.clone());
    }
    Ok(result)
}

/// Whether `object`, as an apply's answer or the live object found as
/// desired shows it, is Current already.
fn already_current(object: Option<&Value>, rules: Rules) -> bool {
    object.is_some_and(|o| {
        readiness_with(o, std::time::SystemTime::now(), rules).state == ReadyState::Current
    })
}

/// The most requests one stage has in flight at once.
pub const MAX_IN_FLIGHT: usize = 16;

/// Runs `work` on every item, at most [`MAX_IN_FLIGHT`] at once, each as
/// a task on the target's runtime; the results come back in the items'
/// order. Every item runs, whatever the others' outcomes.
pub(super) async fn in_flight<T, R, F, Fut>(items: Vec<T>, work: F) -> Vec<Result<R, Error>>
where
    F: Fn(T) -> Fut,
    Fut: Future<Output = Result<R, Error>> + Send + 'static,
    R: Send + 'static,
{
    let mut results: Vec<Option<Result<R, Error>>> = (0..items.len()).map(|_| None).collect();
    let mut pending = items.into_iter().enumerate();
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        while tasks.len() < MAX_IN_FLIGHT {
            let Some((index, item)) = pending.next() else {
                break;
            };
            let future = work(item);
            tasks.spawn(async move { (index, future.await) });
        }
        match tasks.join_next().await {
            None => break,
            Some(Ok((index, result))) => results[index] = Some(result),
            Some(Err(joined)) if joined.is_panic() => {
                std::panic::resume_unwind(joined.into_panic())
            }
            Some(Err(joined)) => {
                tracing::warn!("a request task ended early: {joined}");
            }
        }
    }
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(Error::Runtime(std::io::Error::other(
                    "the request's task was cancelled",
                )))
            })
        })
        .collect()
}

/// Resolves `resource`'s kind and works out where it goes.
async fn prepare(
    cluster: &Cluster,
    settings: &Settings,
    release: &Release,
    plan: &ApplyPlan,
    resource: &Resource,
    deadline: Instant,
) -> Result<Prepared, Error> {
    let kind = resolve(cluster, settings, plan.to_apply(), resource.id(), deadline).await?;
    Ok(place(release, resource, kind))
}

/// `resource` as it is sent for `release`: in the namespace it really
/// goes to (none for a cluster-scoped `kind`), with ownership metadata.
pub(super) fn place(release: &Release, resource: &Resource, kind: Kind) -> Prepared {
    let id = resource.id();
    let namespace = kind.namespaced.then(|| {
        id.namespace
            .clone()
            .unwrap_or_else(|| release.namespace.clone())
    });
    let mut body = with_ownership(resource.object().clone(), release);
    if let Some(metadata) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        match &namespace {
            Some(namespace) => {
                metadata.insert("namespace".into(), Value::String(namespace.clone()));
            }
            None => {
                metadata.remove("namespace");
            }
        }
    }
    Prepared {
        id: ObjectRef {
            namespace,
            ..id.clone()
        },
        kind,
        body,
        install_only: resource.is_install_only(),
    }
}

/// The kind of `id`; when `desired` holds the CRD defining it, waits
/// (refreshing discovery each poll) until the server lists it.
async fn resolve(
    cluster: &Cluster,
    settings: &Settings,
    desired: &[Resource],
    id: &ObjectRef,
    deadline: Instant,
) -> Result<Kind, Error> {
    let defined_here = defines(desired, id.group(), &id.kind);
    let give_up = deadline.min(Instant::now() + settings.discovery_wait);
    loop {
        match cluster
            .discovery
            .resolve(cluster, &id.api_version, &id.kind)
            .await
        {
            Err(Error::UnknownKind { .. }) if defined_here && Instant::now() < give_up => {
                tokio::time::sleep(settings.poll).await;
            }
            other => return other,
        }
    }
}

/// Whether `desired` holds a CRD defining `kind` in `group`.
pub fn defines(desired: &[Resource], group: &str, kind: &str) -> bool {
    desired.iter().any(|r| {
        let object = r.object();
        r.id().kind == "CustomResourceDefinition"
            && r.id().group() == "apiextensions.k8s.io"
            && object.pointer("/spec/group").and_then(Value::as_str) == Some(group)
            && object.pointer("/spec/names/kind").and_then(Value::as_str) == Some(kind)
    })
}

/// The ownership check of [`apply_release`] for `objects`, made before
/// anything is written ([`crate::kube::ApplyTarget::admit`]): each object
/// is placed as the apply would place it and read; a live object this
/// release's inventory does not list is refused unless it carries this
/// release's annotation or one [`ApplyOptions::take_over`] names (the
/// rules of `check_owner`). With [`ApplyOptions::adopt`] nothing is
/// read. A kind the server does not serve yet (its CRD comes with the
/// objects) has no live object to conflict with. Writes nothing: no
/// namespace is created, so a namespace that an apply would create first
/// is not an exception here.
///
/// # Errors
/// [`Error::Ownership`] for the first conflict, in `objects`' order; the
/// failing request.
pub async fn admit(
    cluster: &Cluster,
    release: &Release,
    objects: &[Resource],
    options: &ApplyOptions,
    cache: Option<&Arc<LiveCache>>,
) -> Result<(), Error> {
    if options.adopt || objects.is_empty() {
        return Ok(());
    }
    let record = Record::load_with(cluster, release, cache).await?;
    let owned_before: HashSet<ObjectKey> = record
        .inventory
        .objects
        .iter()
        .map(|e| e.id().key())
        .collect();
    let mut placed = Vec::with_capacity(objects.len());
    for resource in objects {
        let id = resource.id();
        match cluster
            .discovery
            .resolve(cluster, &id.api_version, &id.kind)
            .await
        {
            Ok(kind) => placed.push(place(release, resource, kind)),
            Err(Error::UnknownKind { .. }) => {}
            Err(other) => return Err(other),
        }
    }
    let fetched = get_all(cluster, &placed).await;
    let namespaces = Namespaces::default();
    for (p, live) in placed.iter().zip(fetched) {
        if let Some(found) = live? {
            check_owner(release, p, &found, &owned_before, &namespaces, options)?;
        }
    }
    Ok(())
}

pub(super) fn check_owner(
    release: &Release,
    p: &Prepared,
    live: &Value,
    owned_before: &HashSet<ObjectKey>,
    namespaces: &Namespaces,
    options: &ApplyOptions,
) -> Result<(), Error> {
    if options.adopt || owned_before.contains(&p.id.key()) {
        return Ok(());
    }
    if p.id.kind == "Namespace" && p.id.group().is_empty() && namespaces.created(&p.id.name) {
        return Ok(());
    }
    match owner(live) {
        Owner::Release(named) if named == release.to_string() => Ok(()),
        // A release of the same app that this operation lets go of (an
        // update's renamed or dropped chart) hands its objects over.
        Owner::Release(named) if options.take_over.contains(&named) => Ok(()),
        owner => Err(Error::Ownership {
            object: Box::new(p.id.clone()),
            owner,
        }),
    }
}

/// How one object is applied.
struct How {
    /// Take fields other managers hold ([`fields::forces`]).
    force: bool,
    /// The operator opted in to recreating it on an immutable change.
    recreate: Option<recreate::Times>,
    /// Fields the comparison skips ([`fields::with_policy`]).
    ignored: Vec<crate::model::Pointer>,
    /// The cache showed it as capstan's last apply from the same inputs
    /// left it ([`Known::Unchanged`]): nothing is sent.
    unchanged: bool,
}

/// Applies one object given its live state: created when absent,
/// written when the dry run differs (outside the ignored fields), else
/// left alone; nothing is sent for an object the cache showed unchanged.
/// With `recreate` (the operator opted in for this object), an
/// immutable-field refusal deletes and creates the object instead
/// ([`recreate::recreate`]); a recreate counts as [`Change::Configured`].
/// The object as the answer (or the live object found as desired) shows
/// it; `None` after a recreate.
async fn apply_one(
    cluster: &Cluster,
    p: &Prepared,
    live: Option<&Value>,
    how: &How,
) -> Result<(Change, Option<Value>), Error> {
    let force = how.force;
    let namespace = p.id.namespace.as_deref();
    let Some(live) = live else {
        let created = cluster
            .apply(&p.kind, namespace, &p.id, &p.body, false, force)
            .await?;
        return Ok((Change::Created, Some(created)));
    };
    if how.unchanged {
        return Ok((Change::Unchanged, Some(live.clone())));
    }
    let written = async {
        let dry = cluster
            .apply(&p.kind, namespace, &p.id, &p.body, true, force)
            .await?;
        if fields::comparable_without(&dry, &how.ignored)
            == fields::comparable_without(live, &how.ignored)
        {
            return Ok((Change::Unchanged, Some(live.clone())));
        }
        let applied = cluster
            .apply(&p.kind, namespace, &p.id, &p.body, false, force)
            .await?;
        Ok((Change::Configured, Some(applied)))
    };
    match (written.await, how.recreate) {
        (Err(Error::Immutable { .. }), Some(times)) => {
            recreate::recreate(cluster, p, force, times).await?;
            Ok((Change::Configured, None))
        }
        (result, _) => result,
    }
}

/// Deletes the old workload of each kind change in `plan`
/// ([`recreate::rekinds`]) with orphan propagation, waits until it is
/// gone, and drops it from the inventory, before anything is applied.
async fn rekind(
    cluster: &Cluster,
    release: &Release,
    plan: &ApplyPlan,
    record: &mut Record,
    times: recreate::Times,
    progress: &dyn ProgressSink,
) -> Result<(), Error> {
    let old = recreate::rekinds(plan, release);
    for id in &old {
        let Some(kind) = prune::resolve_recorded(cluster, id).await? else {
            continue;
        };
        let namespace = kind.namespaced.then(|| {
            id.namespace
                .clone()
                .unwrap_or_else(|| release.namespace.clone())
        });
        let awaited = Awaited::new(
            ObjectRef {
                namespace,
                ..id.clone()
            },
            kind,
        );
        record.touch();
        delete_until_gone(cluster, &awaited, true, times).await?;
        record.inventory.forget(id);
        progress.event(&ApplyEvent::Deleted {
            object: &awaited.id,
        });
    }
    if !old.is_empty() {
        record.save(cluster, release).await?;
    }
    Ok(())
}

/// Metadata the server sets, left out of the drift comparison.
pub const SERVER_METADATA: [&str; 6] = [
    "managedFields",
    "resourceVersion",
    "generation",
    "uid",
    "creationTimestamp",
    "selfLink",
];

/// `object` without `status` and [`SERVER_METADATA`]: what a dry-run
/// answer and the live object are compared on.
pub fn comparable(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
        if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for key in SERVER_METADATA {
                metadata.remove(key);
            }
        }
    }
    object
}

/// Namespaces known to exist during one apply, and those it created.
#[derive(Default)]
pub(super) struct Namespaces {
    known: HashSet<String>,
    created: HashSet<String>,
}

impl Namespaces {
    /// Creates `name` (by server-side apply) unless it exists.
    pub(super) async fn ensure(&mut self, cluster: &Cluster, name: &str) -> Result<(), Error> {
        if self.known.contains(name) {
            return Ok(());
        }
        let kind = cluster
            .discovery
            .resolve(cluster, "v1", "Namespace")
            .await?;
        let id = ObjectRef {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            namespace: None,
            name: name.to_string(),
        };
        if cluster.get(&kind, None, &id).await?.is_none() {
            let body = serde_json::json!({
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
            });
            cluster.apply(&kind, None, &id, &body, false, false).await?;
            self.created.insert(name.to_string());
        }
        self.known.insert(name.to_string());
        Ok(())
    }

    pub(super) fn created(&self, name: &str) -> bool {
        self.created.contains(name)
    }

    /// [`Namespaces::ensure`], taking as existing a namespace in which
    /// the apply cache shows a live object ([`LiveCache::holds_namespace`]).
    async fn ensure_cached(
        &mut self,
        cluster: &Cluster,
        name: &str,
        cache: Option<&LiveCache>,
    ) -> Result<(), Error> {
        if cache.is_some_and(|c| c.holds_namespace(name)) {
            self.known.insert(name.to_string());
        }
        self.ensure(cluster, name).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::parse_manifests;
    use serde_json::json;

    #[test]
    fn comparison_ignores_status_and_server_metadata_only() {
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "uid": "1", "resourceVersion": "7", "generation": 1,
                         "creationTimestamp": "2025-01-01T00:00:00Z",
                         "managedFields": [{"manager": "capstan"}], "labels": {"a": "b"}},
            "data": {"k": "v"}, "status": {"x": 1}});
        let mut dry = live.clone();
        dry["metadata"]["resourceVersion"] = json!("8");
        dry["metadata"]["managedFields"] = json!([]);
        dry.as_object_mut().unwrap().remove("status");
        assert_eq!(comparable(&dry), comparable(&live));
        dry["metadata"]["labels"]["a"] = json!("c");
        assert_ne!(comparable(&dry), comparable(&live));
        let mut dry = live.clone();
        dry["data"]["k"] = json!("w");
        assert_ne!(comparable(&dry), comparable(&live));
    }

    #[test]
    fn a_crd_in_the_release_defines_its_kind() {
        let desired = parse_manifests(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
             metadata: {name: widgets.example.com}\n\
             spec: {group: example.com, names: {kind: Widget, plural: widgets}}\n",
        )
        .unwrap();
        assert!(defines(&desired, "example.com", "Widget"));
        assert!(!defines(&desired, "example.org", "Widget"));
        assert!(!defines(&desired, "example.com", "Gadget"));
    }
}
