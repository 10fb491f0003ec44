//! Owns pruning: deleting what a release applied before and no longer
//! renders, and the rules for what is never pruned by default.
//!
//! Only from the inventory, never by label selector (another owner's
//! objects may carry the same labels). Left in place, and dropped from
//! the inventory, unless [`Purge`] says otherwise: objects annotated
//! `helm.sh/resource-policy: keep`, CustomResourceDefinitions (deleting
//! one deletes every custom resource of its kind), Namespaces (and
//! everything in them) and PersistentVolumeClaims (the data). Deletion
//! uses Background propagation, as Helm does; an entry leaves the
//! inventory only once a GET gives 404 ([`super::delete::until_gone`]).
//! An object whose ownership annotation names another release now (an
//! update's renamed chart took it over) is never deleted: it leaves this
//! release's inventory.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::apply::Record;
use super::client::Cluster;
use super::delete::{Doomed, until_gone};
use super::discovery::Kind;
use super::error::Error;
use super::inventory::{Owner, owner};
use super::wait::{Awaited, uid_of};
use crate::kube::target::{ApplyEvent, ProgressSink, Purge};
use crate::kube::{ObjectRef, Release};

/// Helm's annotation that keeps an object when its release lets go of it.
pub const RESOURCE_POLICY: &str = "helm.sh/resource-policy";

/// Why pruning leaves `live` (the object `id`) in place; `None` when it
/// may be deleted.
pub fn prune_protection(id: &ObjectRef, live: &Value, purge: Purge) -> Option<&'static str> {
    if purge.all {
        return None;
    }
    if keep_annotated(live) {
        return Some("annotated helm.sh/resource-policy: keep");
    }
    match (id.group(), id.kind.as_str()) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            Some("a CustomResourceDefinition (pass --purge to delete it)")
        }
        ("", "Namespace") => Some("a Namespace (pass --purge to delete it)"),
        ("", "PersistentVolumeClaim") if !purge.volumes => {
            Some("a PersistentVolumeClaim (pass --purge-volumes to delete it)")
        }
        _ => None,
    }
}

/// Why a remove leaves `live` in place: `keep`, an install-only object
/// (a CRD of the chart's `crds/` folder, which Helm's uninstall leaves
/// too), and claims, unless purged. A remove deletes the other CRDs and
/// the Namespaces the release applied.
pub fn remove_protection(
    id: &ObjectRef,
    live: &Value,
    install_only: bool,
    purge: Purge,
) -> Option<&'static str> {
    if purge.all {
        return None;
    }
    if install_only {
        return Some(
            "a CustomResourceDefinition from the chart's crds/ folder, which a remove leaves as Helm's uninstall does (pass --purge to delete it)",
        );
    }
    if keep_annotated(live) {
        return Some("annotated helm.sh/resource-policy: keep");
    }
    match (id.group(), id.kind.as_str()) {
        ("", "PersistentVolumeClaim") if !purge.volumes => {
            Some("a PersistentVolumeClaim (pass --purge-volumes to delete it)")
        }
        _ => None,
    }
}

fn keep_annotated(live: &Value) -> bool {
    live.pointer("/metadata/annotations")
        .and_then(|a| a.get(RESOURCE_POLICY))
        .and_then(Value::as_str)
        .is_some_and(|policy| policy.trim() == "keep")
}

/// The kind of a recorded object, or `None` when the server no longer
/// serves it (its CRD is gone, so the object is too).
///
/// # Errors
/// Discovery's or the API server's error, after retries.
pub async fn resolve_recorded(cluster: &Cluster, id: &ObjectRef) -> Result<Option<Kind>, Error> {
    match cluster
        .discovery
        .resolve(cluster, &id.api_version, &id.kind)
        .await
    {
        Ok(kind) => Ok(Some(kind)),
        Err(Error::UnknownKind { .. }) => Ok(None),
        Err(err) => Err(err),
    }
}

/// Deletes one recorded object unless `protection` says why not:
/// returns what to wait for, or `None` when there is nothing to wait
/// for (gone already, protected, no longer served). Protected and absent
/// objects leave the inventory.
///
/// # Errors
/// Discovery's or the API server's error, after retries.
pub async fn start_deleting(
    cluster: &Cluster,
    release: &Release,
    id: &ObjectRef,
    record: &mut Record,
    protection: impl Fn(&ObjectRef, &Value) -> Option<&'static str>,
    progress: &dyn ProgressSink,
) -> Result<Option<Doomed>, Error> {
    let Some(kind) = resolve_recorded(cluster, id).await? else {
        record.inventory.forget(id);
        return Ok(None);
    };
    let namespace = kind.namespaced.then(|| {
        id.namespace
            .clone()
            .unwrap_or_else(|| release.namespace.clone())
    });
    let scoped = ObjectRef {
        namespace,
        ..id.clone()
    };
    let Some(live) = cluster
        .get(&kind, scoped.namespace.as_deref(), &scoped)
        .await?
    else {
        record.inventory.forget(id);
        return Ok(None);
    };
    // Handed over: another release took the object (an update's renamed
    // chart); deleting it would take it from that release.
    let handed_over = match owner(&live) {
        Owner::Release(named) => named != release.to_string(),
        _ => false,
    };
    let protected = if handed_over {
        Some("owned by another release now")
    } else {
        protection(&scoped, &live)
    };
    if let Some(reason) = protected {
        record.inventory.forget(id);
        progress.event(&ApplyEvent::Kept {
            object: &scoped,
            reason,
        });
        return Ok(None);
    }
    record.touch();
    let uid = match cluster
        .delete(&kind, scoped.namespace.as_deref(), &scoped, false)
        .await?
    {
        Some(uid) if !uid.is_empty() => uid,
        // Gone between the GET and the DELETE, or the answer named no
        // uid: the one read is the one deleted.
        _ => uid_of(&live).to_string(),
    };
    Ok(Some(Doomed {
        recorded: id.clone(),
        awaited: Awaited {
            id: scoped,
            kind,
            uid,
        },
    }))
}

/// Prunes `ids` (in removal order) for `release`; returns those deleted
/// and confirmed gone.
///
/// # Errors
/// A request's error, or [`Error::DeletionBlocked`] naming objects
/// still there at the deadline, with their finalizers (they stay in the
/// inventory, so the next apply prunes them again).
pub async fn prune(
    cluster: &Cluster,
    release: &Release,
    ids: &[ObjectRef],
    record: &mut Record,
    purge: Purge,
    (deadline, timeout, poll): (Instant, Duration, Duration),
    progress: &dyn ProgressSink,
) -> Result<Vec<ObjectRef>, Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut doomed = Vec::new();
    for id in ids {
        let protection = |id: &ObjectRef, live: &Value| prune_protection(id, live, purge);
        if let Some(d) = start_deleting(cluster, release, id, record, protection, progress).await? {
            doomed.push(d);
        }
    }
    record.save(cluster, release).await?;
    until_gone(
        cluster,
        release,
        &doomed,
        record,
        (deadline, timeout, poll),
        progress,
    )
    .await?;
    record.save(cluster, release).await?;
    Ok(doomed.into_iter().map(|d| d.awaited.id).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(api_version: &str, kind: &str) -> ObjectRef {
        ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: None,
            name: "x".into(),
        }
    }

    #[test]
    fn keep_crds_namespaces_and_claims_survive_a_prune_unless_purged() {
        let plain = json!({"metadata": {}});
        let keep = json!({"metadata": {"annotations": {RESOURCE_POLICY: "keep"}}});
        let none = Purge::default();
        let volumes = Purge {
            volumes: true,
            all: false,
        };
        let all = Purge {
            volumes: false,
            all: true,
        };
        let cm = id("v1", "ConfigMap");
        let crd = id("apiextensions.k8s.io/v1", "CustomResourceDefinition");
        let ns = id("v1", "Namespace");
        let pvc = id("v1", "PersistentVolumeClaim");
        assert_eq!(prune_protection(&cm, &plain, none), None);
        assert!(prune_protection(&cm, &keep, none).is_some());
        assert!(prune_protection(&cm, &keep, volumes).is_some());
        assert_eq!(prune_protection(&cm, &keep, all), None);
        assert!(prune_protection(&crd, &plain, none).is_some());
        assert!(prune_protection(&ns, &plain, volumes).is_some());
        assert!(prune_protection(&pvc, &plain, none).is_some());
        assert_eq!(prune_protection(&pvc, &plain, volumes), None);
        assert_eq!(prune_protection(&crd, &plain, all), None);
        assert_eq!(
            prune_protection(&id("example.com/v1", "Namespace"), &plain, none),
            None
        );

        assert_eq!(remove_protection(&crd, &plain, false, none), None);
        assert!(remove_protection(&crd, &plain, true, none).is_some());
        assert!(remove_protection(&crd, &plain, true, volumes).is_some());
        assert_eq!(remove_protection(&crd, &plain, true, all), None);
        assert_eq!(remove_protection(&ns, &plain, false, none), None);
        assert!(remove_protection(&pvc, &plain, false, none).is_some());
        assert!(remove_protection(&cm, &keep, false, none).is_some());
        assert_eq!(remove_protection(&cm, &keep, false, all), None);
    }
}
