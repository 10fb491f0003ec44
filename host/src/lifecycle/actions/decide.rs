//! Deciding an answer's actions: each resolved through the target (the
//! kind's scope, the release holding the object, a mirror's source)
//! then judged by the pure policy ([`crate::policy::actions`]), the
//! owned bounds and the target's own refusals, all before any write.

use crate::kube::{self, Resource};
use crate::lifecycle::Error;
use crate::lifecycle::job::{Job, Prepared, UserLayer};
use crate::lifecycle::merge_patch;
use crate::lifecycle::owned::owned_error;
use crate::lifecycle::owned::owned_release;
use crate::lifecycle::owned::owning_release;
use crate::model::{Action, ActionPolicy, Hook, HookAnswer, LookupQuery, Mirror, MirrorKind};
use crate::policy;
use crate::store::OverrideLayer;
use std::collections::BTreeMap;

/// The annotation a mirror's copy carries: where it was copied from.
pub const MIRRORED_FROM: &str = "capstan.dev/mirrored-from";

/// Why a mirror's copy could not be made.
pub(crate) enum MirrorError {
    /// The policy's refusal (the source does not exist).
    Refused(policy::Refusal),
    /// The target's failure to read it.
    Target(Error),
}

/// A request the policy refused.
pub(crate) fn denied(
    plugin: &str,
    hook: Hook,
    action: &Action,
    rule: &'static str,
    reason: String,
) -> Error {
    Error::ActionDenied {
        plugin: plugin.to_string(),
        hook,
        action: describe(action),
        rule,
        reason,
    }
}

/// One line naming an action and its object.
pub(crate) fn describe(action: &Action) -> String {
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

pub(crate) fn policy<'a>(job: &'a Job<'_>) -> &'a ActionPolicy {
    job.inner.policies.actions.for_app(job.app.as_str())
}

/// Every check of `answer` that can refuse it, before anything is
/// written: each action's policy decision, the owned objects' bounds,
/// and the target's refusals of the objects to apply and the
/// workloads to restart. The objects to apply, in answer order.
pub(crate) fn check_answer(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    plugin: &str,
    hook: Hook,
    answer: &HookAnswer,
) -> Result<Vec<Resource>, Error> {
    let read_policy = &job.inner.policies.lookup;
    let scope = policy::Scope {
        app: job.app.as_str(),
        namespaces: prepared.namespaces(),
        policy: policy(job),
        read: read_policy,
    };
    let mut ensured = Vec::new();
    let mut patched: BTreeMap<&str, serde_json::Value> = BTreeMap::new();
    for action in &answer.actions {
        let deny =
            |refusal: policy::Refusal| denied(plugin, hook, action, refusal.rule, refusal.reason);
        let resolved = resolve(job, prepared, action, &mut patched)?;
        let admitted = policy::actions::check(action, &resolved, &scope).map_err(deny)?;
        let object = match (action, admitted) {
            (_, policy::Admitted::Ensure(object)) => Some(object),
            (Action::Mirror(m), _) => Some(mirror_copy(job, m).map_err(|e| match e {
                MirrorError::Refused(r) => deny(r),
                MirrorError::Target(e) => e,
            })?),
            (Action::Restart(object), _) => {
                job.target().admit_restart(object).map_err(|e| {
                    deny(policy::Refusal {
                        rule: "target",
                        reason: crate::lifecycle::lookup::one_line(&e),
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
        policy::actions::check_owned(policy(job), objects, bytes, answer.actions.len())
            .map_err(|r| denied(plugin, hook, first, r.rule, r.reason))?;
    }
    if !ensured.is_empty() {
        let release = owned_release(job, prepared);
        let resources: Vec<Resource> = ensured.iter().map(|(_, r)| r.clone()).collect();
        let options = kube::ApplyOptions::default();
        if let Err(e) = job.target().admit(&release, &resources, &options) {
            // The refused object, found one by one (a refusal only).
            let culprit = ensured
                .iter()
                .find(|(_, r)| {
                    job.target()
                        .admit(&release, std::slice::from_ref(r), &options)
                        .is_err()
                })
                .or(ensured.first());
            let Some((action, _)) = culprit else {
                return Err(owned_error(e));
            };
            let reason = crate::lifecycle::lookup::one_line(&e);
            return Err(denied(plugin, hook, action, "target", reason));
        }
    }
    Ok(ensured.into_iter().map(|(_, r)| r).collect())
}

/// What the policy's decision on `action` needs read from the target
/// or the store: the kind's scope, the release holding an object, the
/// overrides a patch leaves (after the answer's earlier patches, kept
/// in `patched`).
pub(crate) fn resolve<'a>(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    action: &'a Action,
    patched: &mut BTreeMap<&'a str, serde_json::Value>,
) -> Result<policy::Resolved, Error> {
    Ok(match action {
        Action::Ensure(object) => {
            let text = |p: &str| object.pointer(p).and_then(serde_json::Value::as_str);
            match (text("/apiVersion"), text("/kind")) {
                (Some(api_version), Some(kind)) => policy::Resolved::Kind(
                    job.view()
                        .kind_scope(api_version, kind)
                        .map_err(owned_error)?,
                ),
                _ => policy::Resolved::Nothing,
            }
        }
        Action::Observe(object) => policy::Resolved::Kind(
            job.view()
                .kind_scope(&object.api_version, &object.kind)
                .map_err(owned_error)?,
        ),
        Action::Delete(object) | Action::Restart(object) => {
            policy::Resolved::Holder(owning_release(job, prepared, object)?.map(|r| r.to_string()))
        }
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
                    None => job
                        .store()
                        .override_layer(&job.app, chart, &OverrideLayer::User)?
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
pub(crate) fn mirror_copy(job: &Job<'_>, m: &Mirror) -> Result<serde_json::Value, MirrorError> {
    let query = LookupQuery {
        api_version: "v1".into(),
        kind: m.kind.kind().into(),
        namespace: m.from_namespace.clone(),
        name: m.from_name.clone(),
    };
    let source = job
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
