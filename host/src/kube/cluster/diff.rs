//! Owns the diff against the cluster (`capstan app diff` on a cluster
//! target): each desired object is dry-run applied on the server (field
//! manager `capstan`, with `force`, so an object another manager drifted
//! shows what a re-apply would take back instead of failing on the
//! conflict) and the answer compared with the live object, ignoring
//! `status`, server-set metadata ([`super::apply::comparable`]) and the
//! app's ignored fields, exactly as an apply decides whether to write.
//! Each changed field another manager holds is named with that manager,
//! its operation and time ([`crate::kube::managed::drifted`]). The
//! objects the apply would prune (from the inventory, the protected ones
//! left out) are listed too. Secret values are masked
//! ([`crate::kube::live_diff`]). Sends no write.

use serde_json::Value;

use super::apply::{Record, comparable, place};
use super::client::{Cluster, FIELD_MANAGER};
use super::error::Error;
use super::fields::{comparable_without, with_policy};
use super::prune::{prune_protection, resolve_recorded};
use crate::kube::live_diff::live_diff;
use crate::kube::managed::drifted;
use crate::kube::target::Purge;
use crate::kube::{ApplyPlan, LiveDiff, ObjectRef, Release};
use crate::model::FieldPolicy;

/// What applying `plan` (made against the release's inventory) would
/// change on the cluster, in install order then removal order.
///
/// # Errors
/// A request's error; a dry run the server refuses (an immutable field,
/// a validation error) is that error, as the apply would meet it.
pub async fn diff_live(
    cluster: &Cluster,
    release: &Release,
    plan: &ApplyPlan,
    policy: &FieldPolicy,
) -> Result<Vec<LiveDiff>, Error> {
    let mut diffs = Vec::new();
    for resource in plan.to_apply() {
        let id = resource.id();
        let kind = match cluster
            .discovery
            .resolve(cluster, &id.api_version, &id.kind)
            .await
        {
            Ok(kind) => kind,
            // A kind whose CRD the apply would create: shown as created.
            Err(Error::UnknownKind { .. }) => {
                let body = super::inventory::with_ownership(resource.object().clone(), release);
                diffs.extend(live_diff(id.clone(), None, Some(&comparable(&body))));
                continue;
            }
            Err(err) => return Err(err),
        };
        let p = place(release, resource, kind);
        let namespace = p.id.namespace.as_deref();
        let Some(live) = cluster.get(&p.kind, namespace, &p.id).await? else {
            diffs.extend(live_diff(p.id.clone(), None, Some(&comparable(&p.body))));
            continue;
        };
        let (sent, ignored) = with_policy(&p, Some(&live), policy);
        let dry = cluster
            .apply(&p.kind, namespace, &p.id, &sent.body, true, true)
            .await?;
        let (before, after) = (
            comparable_without(&live, &ignored),
            comparable_without(&dry, &ignored),
        );
        if let Some(mut diff) = live_diff(p.id.clone(), Some(&before), Some(&after)) {
            diff.drift = drifted(&live, &before, &after, FIELD_MANAGER);
            diffs.push(diff);
        }
    }
    for id in plan.to_prune() {
        if let Some(diff) = prune_diff(cluster, release, id).await? {
            diffs.push(diff);
        }
    }
    Ok(diffs)
}

async fn prune_diff(
    cluster: &Cluster,
    release: &Release,
    id: &ObjectRef,
) -> Result<Option<LiveDiff>, Error> {
    let Some(kind) = resolve_recorded(cluster, id).await? else {
        return Ok(None);
    };
    let scoped = ObjectRef {
        namespace: kind.namespaced.then(|| {
            id.namespace
                .clone()
                .unwrap_or_else(|| release.namespace.clone())
        }),
        ..id.clone()
    };
    let live: Option<Value> = cluster
        .get(&kind, scoped.namespace.as_deref(), &scoped)
        .await?;
    Ok(live
        .filter(|live| prune_protection(&scoped, live, Purge::default()).is_none())
        .and_then(|live| live_diff(scoped, Some(&comparable(&live)), None)))
}

/// The inventory of `release`, for planning the diff.
///
/// # Errors
/// As [`Record::load`].
pub async fn recorded(
    cluster: &Cluster,
    release: &Release,
) -> Result<Vec<crate::kube::Resource>, Error> {
    Ok(Record::load(cluster, release).await?.inventory.resources())
}
