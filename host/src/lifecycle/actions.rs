//! What contract 0.2 hooks ask the host to do, done by the host: each
//! action checked against the operator's [`ActionPolicy`] first (every
//! action of an answer, before any is taken, so a denied one leaves
//! nothing half-done), then taken in order. Owns the app's *owned
//! release*: the objects hooks ensure or mirror are applied as one more
//! release of the app (chart [`OWNED_CHART`]), with the inventory rules
//! of every release, and removed with the app. Also owns the `status`
//! hook's loop per release.
//!
//! The rules themselves are [`crate::policy::actions`]' pure decision;
//! this module resolves what each needs (the kind's scope on the target,
//! the release holding an object, the overrides a patch leaves), asks it,
//! and adds the target's own refusals (`target`: an object another
//! release owns, a kind or shape the target refuses, a restart the
//! target cannot do) before the first write.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::bundle::Metadata;
use crate::kube::{self, Release, Resource};
use crate::model::{
    Action, ActionPolicy, AppName, Hook, HookAnswer, HookOutcome, LookupQuery, Mirror, MirrorKind,
    ObjectRef, Observed, ReleaseStatus,
};
use crate::policy;
use crate::store::OverrideLayer;

use super::Error;
use super::run::{Job, Prepared, UserLayer};

/// The chart name of an app's owned release (a name no bundle chart may
/// take: chart names are validated against it).
pub const OWNED_CHART: &str = "capstan-owned";

pub use crate::policy::actions::MAX_PATCHED_OVERRIDES_BYTES;

/// The annotation a mirror's copy carries: where it was copied from.
pub const MIRRORED_FROM: &str = "capstan.dev/mirrored-from";

/// Why a mirror's copy could not be made.
enum MirrorError {
    /// The policy's refusal (the source does not exist).
    Refused(policy::Refusal),
    /// The target's failure to read it.
    Target(Error),
}

/// How long the `status` hook may keep answering `retry-after` for one
/// release when the chart sets no timeout.
pub const DEFAULT_STATUS_TIMEOUT: Duration = Duration::from_secs(300);

/// An error of the target reading or writing the owned release.
pub(super) fn owned_error(source: kube::Error) -> Error {
    Error::Kube {
        chart: OWNED_CHART.into(),
        source: Box::new(source),
    }
}

/// A request the policy refused.
fn denied(plugin: &str, hook: Hook, action: &Action, rule: &'static str, reason: String) -> Error {
    Error::ActionDenied {
        plugin: plugin.to_string(),
        hook,
        action: describe(action),
        rule,
        reason,
    }
}

/// One line naming an action and its object.
fn describe(action: &Action) -> String {
    match action {
        Action::Mirror(m) => format!(
            "mirror {} {}/{} to {}/{}",
            m.kind.kind(),
            m.from_namespace,
            m.from_name,
            m.to_namespace,
            m.to_name
        ),
        Action::Ensure(object) => format!(
            "ensure {} {}",
            object
                .get("kind")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("?"),
            object
                .pointer("/metadata/name")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("?")
        ),
        Action::Delete(object) => format!("delete {object}"),
        Action::Restart(object) => format!("restart {object}"),
        Action::PatchOverrides { chart, .. } => format!("patch-overrides {chart}"),
        Action::RequestReapply(reason) => format!("request-reapply ({reason})"),
        Action::Observe(object) => format!("observe {object}"),
    }
}

/// The release that holds what `app`'s hooks ensured and mirrored, and
/// its generated secrets: chart [`OWNED_CHART`], release `APP-owned`, in
/// the namespace of the version's first chart.
pub(super) fn owned_release_of(app: &AppName, metadata: &Metadata) -> Release {
    Release {
        app: app.to_string(),
        chart: OWNED_CHART.to_string(),
        namespace: metadata
            .charts
            .first()
            .map(|c| c.namespace.to_string())
            .unwrap_or_default(),
        release_name: format!("{app}-owned"),
    }
}

impl Job<'_> {
    /// The release that holds what the app's hooks ensured and mirrored.
    pub(super) fn owned_release(&self, prepared: &Prepared<'_>) -> Release {
        owned_release_of(&self.app, &prepared.request.version.metadata)
    }

    fn policy(&self) -> &ActionPolicy {
        self.inner.action_policies.for_app(self.app.as_str())
    }

    /// Decides every action of `answer` ([`policy::actions::check`] over
    /// what the target says of each object, then the owned bounds and
    /// the target's own refusals), then takes them in order: a refused
    /// answer leaves nothing written.
    pub(super) fn take_actions(
        &self,
        prepared: &Prepared<'_>,
        plugin: &str,
        hook: Hook,
        answer: &HookAnswer,
    ) -> Result<(), Error> {
        let checked = self.check_answer(prepared, plugin, hook, answer)?;
        let mut ensured = checked.into_iter();
        for action in &answer.actions {
            match action {
                Action::Ensure(_) | Action::Mirror(_) => {
                    if let Some(object) = ensured.next() {
                        self.ensure(prepared, object)?;
                    }
                }
                Action::Delete(object) => self.delete_owned(prepared, object)?,
                Action::PatchOverrides { chart, patch } => {
                    self.patch_overrides(plugin, hook, chart, patch)?;
                }
                Action::RequestReapply(reason) => {
                    tracing::info!(target: "capstan::audit", app = %self.app, plugin, %hook, reason, "a plugin asked for another apply");
                    *self.requested_reapply() = Some(format!("plugin {plugin} asked: {reason}"));
                }
                Action::Observe(object) => {
                    let mut observed = prepared.observed();
                    if !observed.contains(object) {
                        observed.push(object.clone());
                    }
                }
                Action::Restart(object) => {
                    self.target().restart(object).map_err(owned_error)?;
                    self.note(format!("restarted {object} at a plugin's request"));
                }
            }
        }
        Ok(())
    }

    /// Every check of `answer` that can refuse it, before anything is
    /// written: each action's policy decision, the owned objects' bounds,
    /// and the target's refusals of the objects to apply and the
    /// workloads to restart. The objects to apply, in answer order.
    fn check_answer(
        &self,
        prepared: &Prepared<'_>,
        plugin: &str,
        hook: Hook,
        answer: &HookAnswer,
    ) -> Result<Vec<Resource>, Error> {
        let read_policy = &self.inner.lookup_policy;
        let scope = policy::Scope {
            app: self.app.as_str(),
            namespaces: prepared.namespaces(),
            policy: self.policy(),
            read: read_policy,
        };
        let mut ensured = Vec::new();
        let mut patched: BTreeMap<&str, serde_json::Value> = BTreeMap::new();
        for action in &answer.actions {
            let deny = |refusal: policy::Refusal| {
                denied(plugin, hook, action, refusal.rule, refusal.reason)
            };
            let resolved = self.resolve(prepared, action, &mut patched)?;
            let admitted = policy::actions::check(action, &resolved, &scope).map_err(deny)?;
            let object = match (action, admitted) {
                (_, policy::Admitted::Ensure(object)) => Some(object),
                (Action::Mirror(m), _) => Some(self.mirror_copy(m).map_err(|e| match e {
                    MirrorError::Refused(r) => deny(r),
                    MirrorError::Target(e) => e,
                })?),
                (Action::Restart(object), _) => {
                    self.target().admit_restart(object).map_err(|e| {
                        deny(policy::Refusal {
                            rule: "target",
                            reason: super::lookup::one_line(&e),
                        })
                    })?;
                    None
                }
                _ => None,
            };
            if let Some(object) = object {
                let resource = Resource::from_value(object, format!("plugin {plugin}"))
                    .map_err(|e| denied(plugin, hook, action, "object", e.to_string()))?;
                ensured.push((action, resource));
            }
        }
        let already = prepared.ensured();
        let replaced = |r: &Resource| ensured.iter().any(|(_, e)| e.id().key() == r.id().key());
        let kept: Vec<&Resource> = already.iter().filter(|r| !replaced(r)).collect();
        let objects = kept.len() + ensured.len();
        let bytes = kept
            .iter()
            .map(|r| r.object().to_string().len())
            .chain(ensured.iter().map(|(_, r)| r.object().to_string().len()))
            .sum();
        drop(already);
        if let Some(first) = answer.actions.first() {
            policy::actions::check_owned(self.policy(), objects, bytes, answer.actions.len())
                .map_err(|r| denied(plugin, hook, first, r.rule, r.reason))?;
        }
        if !ensured.is_empty() {
            let release = self.owned_release(prepared);
            let resources: Vec<Resource> = ensured.iter().map(|(_, r)| r.clone()).collect();
            let options = kube::ApplyOptions::default();
            if let Err(e) = self.target().admit(&release, &resources, &options) {
                // The refused object, found one by one (a refusal only).
                let culprit = ensured
                    .iter()
                    .find(|(_, r)| {
                        self.target()
                            .admit(&release, std::slice::from_ref(r), &options)
                            .is_err()
                    })
                    .or(ensured.first());
                let Some((action, _)) = culprit else {
                    return Err(owned_error(e));
                };
                let reason = super::lookup::one_line(&e);
                return Err(denied(plugin, hook, action, "target", reason));
            }
        }
        Ok(ensured.into_iter().map(|(_, r)| r).collect())
    }

    /// What the policy's decision on `action` needs read from the target
    /// or the store: the kind's scope, the release holding an object, the
    /// overrides a patch leaves (after the answer's earlier patches, kept
    /// in `patched`).
    fn resolve<'a>(
        &self,
        prepared: &Prepared<'_>,
        action: &'a Action,
        patched: &mut BTreeMap<&'a str, serde_json::Value>,
    ) -> Result<policy::Resolved, Error> {
        Ok(match action {
            Action::Ensure(object) => {
                let text = |p: &str| object.pointer(p).and_then(serde_json::Value::as_str);
                match (text("/apiVersion"), text("/kind")) {
                    (Some(api_version), Some(kind)) => policy::Resolved::Kind(
                        self.view()
                            .kind_scope(api_version, kind)
                            .map_err(owned_error)?,
                    ),
                    _ => policy::Resolved::Nothing,
                }
            }
            Action::Observe(object) => policy::Resolved::Kind(
                self.view()
                    .kind_scope(&object.api_version, &object.kind)
                    .map_err(owned_error)?,
            ),
            Action::Delete(object) | Action::Restart(object) => policy::Resolved::Holder(
                self.owning_release(prepared, object)?
                    .map(|r| r.to_string()),
            ),
            Action::PatchOverrides { chart, patch } => {
                let version = prepared.request.version;
                let known = [Some(version), prepared.request.replacing]
                    .into_iter()
                    .flatten()
                    .any(|v| v.metadata.charts.iter().any(|c| c.name.as_str() == chart));
                let stored_user = prepared.request.user == UserLayer::Stored;
                let mut patched_bytes = 0;
                if known && stored_user {
                    let current = match patched.get(chart.as_str()) {
                        Some(value) => value.clone(),
                        None => self
                            .store()
                            .override_layer(&self.app, chart, &OverrideLayer::User)?
                            .map(|record| record.values)
                            .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new())),
                    };
                    let mut after = current;
                    merge_patch(&mut after, patch);
                    patched_bytes = after.to_string().len();
                    patched.insert(chart.as_str(), after);
                }
                policy::Resolved::Patch {
                    known,
                    stored_user,
                    patched_bytes,
                }
            }
            Action::Mirror(_) | Action::RequestReapply(_) => policy::Resolved::Nothing,
        })
    }

    /// The copy a mirror makes, read from its source (which the policy
    /// admitted): its data and type, none of its metadata but the
    /// host's `capstan.dev/mirrored-from`.
    fn mirror_copy(&self, m: &Mirror) -> Result<serde_json::Value, MirrorError> {
        let query = LookupQuery {
            api_version: "v1".into(),
            kind: m.kind.kind().into(),
            namespace: m.from_namespace.clone(),
            name: m.from_name.clone(),
        };
        let source = self
            .view()
            .read_live(&query)
            .map_err(|e| MirrorError::Target(owned_error(e)))?;
        if source.as_object().is_none_or(serde_json::Map::is_empty) {
            return Err(MirrorError::Refused(policy::Refusal {
                rule: "mirror-source",
                reason: format!("{query} does not exist"),
            }));
        }
        let mut copy = serde_json::json!({
            "apiVersion": "v1",
            "kind": m.kind.kind(),
            "metadata": {
                "name": m.to_name,
                "namespace": m.to_namespace,
                "annotations": {
                    MIRRORED_FROM: format!("{}/{}", m.from_namespace, m.from_name),
                },
            },
        });
        let fields: &[&str] = match m.kind {
            MirrorKind::Secret => &["type", "data", "stringData"],
            MirrorKind::ConfigMap => &["data", "binaryData"],
        };
        for field in fields {
            if let Some(value) = source.get(*field) {
                copy[*field] = value.clone();
            }
        }
        // A Secret type that marks a release record is not copied.
        if copy
            .get("type")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|t| {
                let t = t.to_ascii_lowercase();
                t.starts_with("capstan.dev/") || t.starts_with("helm.sh/")
            })
        {
            copy["type"] = "Opaque".into();
        }
        Ok(copy)
    }

    /// The release of this app that holds `object`, if one does.
    fn owning_release(
        &self,
        prepared: &Prepared<'_>,
        object: &ObjectRef,
    ) -> Result<Option<Release>, Error> {
        let version = prepared.request.version;
        let mut releases: Vec<Release> = version
            .metadata
            .charts
            .iter()
            .map(|chart| version.release(&self.app, chart))
            .collect();
        releases.push(self.owned_release(prepared));
        let key = object.key();
        for release in releases {
            let held = self
                .target()
                .applied(&release)
                .map_err(|source| Error::Kube {
                    chart: release.chart.clone(),
                    source: Box::new(source),
                })?;
            if held.iter().any(|r| r.id().key() == key) {
                return Ok(Some(release));
            }
        }
        Ok(None)
    }

    /// Applies `object` in the owned release and counts it among what
    /// this operation ensured; what the release held before stays as it
    /// is (nothing is pruned until [`Job::settle_owned`]).
    fn ensure(&self, prepared: &Prepared<'_>, object: Resource) -> Result<(), Error> {
        let release = self.owned_release(prepared);
        let id = object.id().clone();
        let mut ensured = prepared.ensured();
        ensured.retain(|r| r.id().key() != object.id().key());
        ensured.push(object.clone());
        drop(ensured);
        self.target()
            .apply_some(&release, &[object], &[])
            .map_err(owned_error)?;
        tracing::info!(target: "capstan::audit", app = %self.app, object = %id, "applied at a plugin's request in the owned release");
        Ok(())
    }

    /// Applies `object` in the owned release now (see [`Job::ensure`]).
    pub(super) fn ensure_owned(
        &self,
        prepared: &Prepared<'_>,
        object: Resource,
    ) -> Result<(), Error> {
        self.ensure(prepared, object)
    }

    /// Counts `object`, which the owned release already holds as it is,
    /// among what this operation ensured, so that it is not pruned.
    pub(super) fn keep_owned(&self, prepared: &Prepared<'_>, object: Resource) {
        let mut ensured = prepared.ensured();
        ensured.retain(|r| r.id().key() != object.id().key());
        ensured.push(object);
    }

    /// After a successful apply: the owned release holds exactly what this
    /// operation's hooks ensured (what they no longer ask for is pruned).
    pub(super) fn settle_owned(&self, prepared: &Prepared<'_>) -> Result<(), Error> {
        let release = self.owned_release(prepared);
        let held = self.target().applied(&release).map_err(owned_error)?;
        let ensured = prepared.ensured().clone();
        if held.is_empty() && ensured.is_empty() {
            return Ok(());
        }
        if ensured.is_empty() {
            self.target().remove(&release).map_err(owned_error)?;
            return Ok(());
        }
        let plan = kube::plan_apply(&held, &ensured).map_err(owned_error)?;
        if !plan.to_prune().is_empty() {
            self.target().apply(&release, &plan).map_err(owned_error)?;
        }
        Ok(())
    }

    /// Removes the owned release (with the app); with `keep_secrets`, the
    /// Secrets labelled as generated secrets stay in it and the rest is
    /// pruned.
    pub(super) fn remove_owned(
        &self,
        prepared: &Prepared<'_>,
        keep_secrets: bool,
    ) -> Result<(), Error> {
        let release = self.owned_release(prepared);
        let held = self.target().applied(&release).map_err(owned_error)?;
        let mut kept = Vec::new();
        if keep_secrets {
            for resource in &held {
                let id = resource.id();
                if id.api_version != "v1" || id.kind != "Secret" {
                    continue;
                }
                let live = self
                    .view()
                    .read_live(&LookupQuery::new(
                        "v1",
                        "Secret",
                        id.namespace.as_deref().unwrap_or_default(),
                        &id.name,
                    ))
                    .map_err(owned_error)?;
                let generated = live
                    .pointer("/metadata/labels")
                    .and_then(|labels| labels.get(super::secret_values::GENERATED_LABEL))
                    .is_some();
                if generated {
                    kept.push(id.clone());
                }
            }
        }
        if kept.is_empty() {
            return self
                .target()
                .remove(&release)
                .map(drop)
                .map_err(owned_error);
        }
        let prune: Vec<ObjectRef> = held
            .iter()
            .map(|r| r.id().clone())
            .filter(|id| !kept.iter().any(|k| k.key() == id.key()))
            .collect();
        self.target()
            .apply_some(&release, &[], &prune)
            .map_err(owned_error)?;
        let names: Vec<String> = kept
            .iter()
            .map(|k| format!("{}/{}", k.namespace.as_deref().unwrap_or_default(), k.name))
            .collect();
        self.note(format!(
            "kept the generated secrets {} (`app delete` removes them)",
            names.join(", ")
        ));
        Ok(())
    }

    /// Deletes an object one of the app's releases holds: pruned from
    /// that release, the rest of it left as it is.
    fn delete_owned(&self, prepared: &Prepared<'_>, object: &ObjectRef) -> Result<(), Error> {
        let Some(release) = self.owning_release(prepared, object)? else {
            return Ok(());
        };
        let kube_err = |source| Error::Kube {
            chart: release.chart.clone(),
            source: Box::new(source),
        };
        let key = object.key();
        self.target()
            .apply_some(&release, &[], std::slice::from_ref(object))
            .map_err(kube_err)?;
        prepared.ensured().retain(|r| r.id().key() != key);
        self.note(format!("deleted {object} at a plugin's request"));
        Ok(())
    }

    /// Merges `patch` (RFC 7386) into the stored user overrides of `chart`.
    fn patch_overrides(
        &self,
        plugin: &str,
        hook: Hook,
        chart: &str,
        patch: &serde_json::Value,
    ) -> Result<(), Error> {
        let current = self
            .store()
            .override_layer(&self.app, chart, &OverrideLayer::User)?
            .map(|record| record.values)
            .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new()));
        let mut patched = current;
        merge_patch(&mut patched, patch);
        let empty = patched.as_object().is_none_or(serde_json::Map::is_empty);
        if empty {
            self.store()
                .delete_override(&self.app, chart, &OverrideLayer::User)?;
        } else {
            if patched.to_string().len() > MAX_PATCHED_OVERRIDES_BYTES {
                return Err(denied(
                    plugin,
                    hook,
                    &Action::PatchOverrides {
                        chart: chart.to_string(),
                        patch: patch.clone(),
                    },
                    "override-size",
                    format!(
                        "the patched overrides are over {} KiB",
                        MAX_PATCHED_OVERRIDES_BYTES >> 10
                    ),
                ));
            }
            self.store()
                .set_override(&self.app, chart, &OverrideLayer::User, &patched)?;
        }
        self.note(format!(
            "plugin {plugin} patched the user overrides of chart {chart} in its {hook} hook"
        ));
        Ok(())
    }

    /// Runs the `status` hook of every plugin that has it for `chart`'s
    /// release, until each answers ready, fails, or the chart's timeout
    /// passes.
    pub(super) fn status_until_ready(
        &self,
        prepared: &Prepared<'_>,
        chart: &str,
        namespace: &str,
        timeout: Option<Duration>,
    ) -> Result<(), Error> {
        let started = Instant::now();
        let limit = timeout.unwrap_or(DEFAULT_STATUS_TIMEOUT);
        for p in prepared.plugins_with(Hook::Status) {
            let mut state = None;
            for attempt in 1u32.. {
                let mut call = prepared.hook_call(self, Hook::Status)?;
                call.release = Some(chart.to_string());
                call.release_namespace = Some(namespace.to_string());
                call.attempt = attempt;
                call.state = state.take();
                call.observed = self.observed(prepared)?;
                let answer = prepared.call_hook(self, p, &call)?;
                if let HookOutcome::Veto(reason) = &answer.verdict {
                    return Err(Error::StatusFailed {
                        plugin: p.path().to_string(),
                        release: chart.to_string(),
                        reason: reason.clone(),
                    });
                }
                self.take_actions(prepared, p.path(), Hook::Status, &answer)?;
                state = answer.state.clone();
                match answer.status.unwrap_or(ReleaseStatus::Ready) {
                    ReleaseStatus::Ready => break,
                    ReleaseStatus::Failed(reason) => {
                        return Err(Error::StatusFailed {
                            plugin: p.path().to_string(),
                            release: chart.to_string(),
                            reason,
                        });
                    }
                    ReleaseStatus::RetryAfter(seconds) => {
                        let wait = Duration::from_secs(u64::from(seconds));
                        if started.elapsed() + wait > limit {
                            return Err(Error::StatusFailed {
                                plugin: p.path().to_string(),
                                release: chart.to_string(),
                                reason: format!(
                                    "not ready after {attempt} checks in {} s (the chart's timeout is {} s)",
                                    started.elapsed().as_secs(),
                                    limit.as_secs()
                                ),
                            });
                        }
                        self.progress_note(&format!(
                            "chart {chart}: plugin {} says not ready yet (check {attempt}), again in {seconds} s",
                            p.path()
                        ));
                        self.sleep_abortable(wait)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The objects this operation ensured or asked to observe, as the
    /// target holds them now.
    fn observed(&self, prepared: &Prepared<'_>) -> Result<Vec<Observed>, Error> {
        let mut objects: Vec<ObjectRef> =
            prepared.ensured().iter().map(|r| r.id().clone()).collect();
        for object in prepared.observed().iter() {
            if !objects.contains(object) {
                objects.push(object.clone());
            }
        }
        let mut out = Vec::with_capacity(objects.len());
        let mut seen = BTreeSet::new();
        for object in objects {
            if !seen.insert(object.key()) {
                continue;
            }
            let live = self
                .view()
                .read_live(&LookupQuery {
                    api_version: object.api_version.clone(),
                    kind: object.kind.clone(),
                    namespace: object.namespace.clone().unwrap_or_default(),
                    name: object.name.clone(),
                })
                .map_err(owned_error)?;
            let exists = live.as_object().is_some_and(|m| !m.is_empty());
            out.push(Observed {
                ready: exists && ready(&live),
                object,
                exists,
            });
        }
        Ok(out)
    }

    /// Waits `wait`, ending early with [`Error::Aborted`] when the
    /// operation is aborted.
    fn sleep_abortable(&self, wait: Duration) -> Result<(), Error> {
        let until = Instant::now() + wait;
        while Instant::now() < until {
            if self.abort.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(Error::Aborted);
            }
            std::thread::sleep(Duration::from_millis(50).min(until - Instant::now()));
        }
        Ok(())
    }
}

/// Whether a live object is ready: its `Ready` condition, when it has
/// one, is true (as kstatus reads custom resources); an object with no
/// conditions is ready once it exists.
fn ready(live: &serde_json::Value) -> bool {
    let Some(conditions) = live
        .pointer("/status/conditions")
        .and_then(serde_json::Value::as_array)
    else {
        return true;
    };
    match conditions
        .iter()
        .find(|c| c.get("type").and_then(serde_json::Value::as_str) == Some("Ready"))
    {
        Some(c) => c.get("status").and_then(serde_json::Value::as_str) == Some("True"),
        None => true,
    }
}

/// RFC 7386: a JSON merge patch applied to `target`.
pub fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    let serde_json::Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = serde_json::Value::Object(serde_json::Map::new());
    }
    if let serde_json::Value::Object(map) = target {
        for (key, value) in patch {
            if value.is_null() {
                map.remove(key);
            } else {
                merge_patch(
                    map.entry(key.clone()).or_insert(serde_json::Value::Null),
                    value,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        // The RFC's own example.
        let mut target = json!({"a": "b", "c": {"d": "e", "f": "g"}});
        merge_patch(&mut target, &json!({"a": "z", "c": {"f": null}}));
        assert_eq!(target, json!({"a": "z", "c": {"d": "e"}}));
        let mut target = json!({"a": [1, 2]});
        merge_patch(&mut target, &json!({"a": [3]}));
        assert_eq!(target, json!({"a": [3]}));
        let mut target = json!({"a": "b"});
        merge_patch(&mut target, &json!({"a": {"b": "c"}}));
        assert_eq!(target, json!({"a": {"b": "c"}}));
    }

    #[test]
    fn an_object_is_ready_by_its_ready_condition_or_by_existing() {
        assert!(ready(&json!({"kind": "Secret"})));
        assert!(ready(
            &json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        ));
        assert!(!ready(
            &json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
        ));
    }
}
