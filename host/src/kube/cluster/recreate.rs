//! Owns the changes an in-place apply cannot make, each with the rule
//! that keeps data safe:
//!
//! - **Immutable fields, opt-in recreate.** When the server refuses a
//!   change as immutable (a 422, [`Error::Immutable`]) and the operator
//!   named the object in [`ApplyOptions::recreate`] (`--recreate
//!   Kind/name`), the object is deleted, waited for until a GET gives
//!   404, and created again. A StatefulSet is deleted with
//!   `propagationPolicy: Orphan`, so its Pods and claims survive and the
//!   new StatefulSet adopts them; other kinds with Background. Without
//!   the opt-in the error stays, naming the object, the field and the
//!   option. A Service that asks for a fixed `clusterIP` or `nodePort`
//!   may be refused for a moment after the delete ("provided IP is
//!   already allocated"): the API server checks addresses against an
//!   informer's cache of its `IPAddress` objects, which learns of the
//!   release a little after the Service is gone (kubernetes#136475). That
//!   refusal is retried at the poll interval until the deadline, unless
//!   the address's `IPAddress` object names another Service as its
//!   parent: then the address is taken, and the error says by whom at
//!   once rather than after the deadline. Any other refusal is not
//!   retried.
//! - **Kind change (rekind).** When the plan prunes a Deployment and
//!   applies a StatefulSet of the same name and namespace (or the other
//!   way), the old workload is deleted with orphan propagation and waited
//!   for before anything is applied, so the two never fight over the same
//!   Pods' claims; PersistentVolumeClaims are never pruned unless purged,
//!   so the data claims stay for the new workload. Caveat: a Deployment
//!   deleted with orphan propagation leaves its ReplicaSet (and its Pods)
//!   in place; they hold the claims until someone deletes them.
//! - **Released local volumes.** A PersistentVolume in this release's
//!   inventory whose `status.phase` is `Released` (its claim was deleted;
//!   `Retain` volumes stay so) gets `spec.claimRef` cleared by a JSON
//!   merge patch before it is applied again, so a new claim can bind.
//!   Server-side apply cannot do this: the `uid` and `resourceVersion`
//!   in `claimRef` are set, and owned, by the PV controller
//!   (`kube-controller-manager`), and an apply of `claimRef: null` only
//!   gives up capstan's own fields. The apply that follows sets the
//!   chart's `claimRef` (name and namespace, no uid) again, which a real
//!   cluster treats as a volume pre-bound to that claim.

use std::time::Instant;

use serde_json::{Value, json};

use super::apply::Prepared;
use super::client::Cluster;
use super::delete::delete_until_gone;
use super::error::Error;
use super::wait::Awaited;
use crate::kube::target::ApplyOptions;
use crate::kube::{ApplyPlan, ObjectRef, Release};

/// Deadline, timeout (as errors report it) and poll interval.
pub type Times = (std::time::Instant, std::time::Duration, std::time::Duration);

/// Whether `recreate` (entries `Kind/name`, kind compared without regard
/// to case) names `id`.
pub fn wants_recreate(recreate: &[String], id: &ObjectRef) -> bool {
    recreate.iter().any(|entry| {
        entry
            .trim()
            .split_once('/')
            .is_some_and(|(kind, name)| kind.eq_ignore_ascii_case(&id.kind) && name == id.name)
    })
}

/// Whether deleting `id` must orphan its dependents (a StatefulSet's
/// Pods and claims).
pub fn orphans(id: &ObjectRef) -> bool {
    id.group() == "apps" && id.kind == "StatefulSet"
}

/// Deletes `p`'s object (orphaning a StatefulSet's Pods), waits for the
/// 404, and creates it again (retrying while the server still holds the
/// old object's address or port, see the module doc).
///
/// # Errors
/// A request's error, or [`Error::DeletionBlocked`].
pub(super) async fn recreate(
    cluster: &Cluster,
    p: &Prepared,
    force: bool,
    times: Times,
) -> Result<(), Error> {
    let awaited = Awaited::new(p.id.clone(), p.kind.clone());
    delete_until_gone(cluster, &awaited, orphans(&p.id), times).await?;
    let namespace = p.id.namespace.as_deref();
    let (deadline, _, poll) = times;
    loop {
        match cluster
            .apply(&p.kind, namespace, &p.id, &p.body, false, force)
            .await
        {
            Err(error) if still_allocated(&error) && Instant::now() < deadline => {
                if let Some(holder) = other_holder(cluster, p, &error).await {
                    return Err(held_by(error, &holder));
                }
                tracing::debug!(object = %p.id, "created again too soon, retrying: {error}");
                let left = deadline.saturating_duration_since(Instant::now());
                tokio::time::sleep(poll.min(left)).await;
            }
            done => return done.map(|_| ()),
        }
    }
}

/// Whether `error` is the API server refusing an address or port that
/// the deleted object held and its allocator has not yet seen released.
fn still_allocated(error: &Error) -> bool {
    matches!(
        error,
        Error::Refused { code: 422, message, .. }
            if message.contains("provided IP is already allocated")
                || message.contains("provided port is already allocated")
    )
}

/// The cluster IP a `still_allocated` refusal names ("failed to
/// allocate IP 10.0.0.12: provided IP is already allocated").
fn refused_address(error: &Error) -> Option<std::net::IpAddr> {
    let Error::Refused { message, .. } = error else {
        return None;
    };
    let (_, rest) = message.split_once("failed to allocate IP ")?;
    let (address, _) = rest.split_once(": ")?;
    address.trim().parse().ok()
}

/// The object other than `p`'s that holds the cluster IP `error` names,
/// as `Kind namespace/name` from its `IPAddress`'s `spec.parentRef`;
/// `None` when the address is not named, has no such object (its release
/// is still on its way), is `p`'s own, or cannot be read (then the retry
/// decides, as without this check).
async fn other_holder(cluster: &Cluster, p: &Prepared, error: &Error) -> Option<String> {
    let address = refused_address(error)?;
    let path = format!("/apis/networking.k8s.io/v1/ipaddresses/{address}");
    let object = match cluster.get_path(&path).await {
        Ok(object) => object?,
        Err(error) => {
            tracing::debug!(%address, "reading who holds the address: {error}");
            return None;
        }
    };
    let parent = object.pointer("/spec/parentRef")?;
    let field = |name: &str| parent.get(name).and_then(Value::as_str).unwrap_or_default();
    let (resource, namespace, name) = (field("resource"), field("namespace"), field("name"));
    let ours =
        resource == "services" && name == p.id.name && Some(namespace) == p.id.namespace.as_deref();
    if ours || name.is_empty() {
        return None;
    }
    let kind = if resource == "services" {
        "Service"
    } else {
        resource
    };
    Some(if namespace.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {namespace}/{name}")
    })
}

/// `error` with the object that holds its address named.
fn held_by(error: Error, holder: &str) -> Error {
    match error {
        Error::Refused {
            verb,
            target,
            code,
            reason,
            message,
        } => Error::Refused {
            verb,
            target,
            code,
            reason,
            message: format!("{message} (by {holder}, not by the object deleted to recreate it)"),
        },
        other => other,
    }
}

fn workload(id: &ObjectRef) -> bool {
    id.group() == "apps" && matches!(id.kind.as_str(), "Deployment" | "StatefulSet")
}

/// The workloads of `plan`'s prune set whose name the apply set holds as
/// the other workload kind (Deployment and StatefulSet), in the same
/// namespace (an absent namespace is `release`'s).
pub fn rekinds(plan: &ApplyPlan, release: &Release) -> Vec<ObjectRef> {
    let namespace = |id: &ObjectRef| {
        id.namespace
            .clone()
            .unwrap_or_else(|| release.namespace.clone())
    };
    plan.to_prune()
        .iter()
        .filter(|old| workload(old))
        .filter(|old| {
            plan.to_apply().iter().map(|r| r.id()).any(|new| {
                workload(new)
                    && new.kind != old.kind
                    && new.name == old.name
                    && namespace(new) == namespace(old)
            })
        })
        .cloned()
        .collect()
}

/// `options.recreate` for `id`.
pub fn opted_in(options: &ApplyOptions, id: &ObjectRef) -> bool {
    wants_recreate(&options.recreate, id)
}

/// Clears `spec.claimRef` of a `Released` PersistentVolume (see the
/// module doc); returns the object as it is now, or `None` when `live`
/// is not such a volume.
///
/// # Errors
/// The merge patch's error.
pub(super) async fn release_volume(
    cluster: &Cluster,
    p: &Prepared,
    live: &Value,
) -> Result<Option<Value>, Error> {
    let released = p.id.group().is_empty()
        && p.id.kind == "PersistentVolume"
        && live.pointer("/status/phase").and_then(Value::as_str) == Some("Released")
        && live.pointer("/spec/claimRef").is_some_and(|c| !c.is_null());
    if !released {
        return Ok(None);
    }
    let patch = json!({"spec": {"claimRef": null}});
    let now = cluster.merge_patch(&p.kind, None, &p.id, &patch).await?;
    Ok(Some(now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::cluster::error::Verb;
    use crate::kube::{parse_manifests, plan_apply};

    fn refused(code: u16, message: &str) -> Error {
        Error::Refused {
            verb: Verb::Apply,
            target: "Service ns/web (v1)".into(),
            code,
            reason: "Invalid".into(),
            message: message.into(),
        }
    }

    #[test]
    fn only_an_address_or_port_still_held_is_retried() {
        let held = r#"Service "web" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.200"]: failed to allocate IP 10.0.0.200: provided IP is already allocated"#;
        assert!(still_allocated(&refused(422, held)));
        let port = r#"Service "web" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"#;
        assert!(still_allocated(&refused(422, port)));
        let range = r#"Service "web" is invalid: spec.clusterIPs: Invalid value: ["10.9.0.1"]: failed to allocate IP 10.9.0.1: the provided IP (10.9.0.1) is not in the valid range"#;
        assert!(!still_allocated(&refused(422, range)));
        assert!(!still_allocated(&refused(409, held)));
    }

    #[test]
    fn the_address_is_read_from_the_refusal_and_its_holder_named() {
        let held = r#"Service "web" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.200"]: failed to allocate IP 10.0.0.200: provided IP is already allocated"#;
        assert_eq!(
            refused_address(&refused(422, held)),
            Some("10.0.0.200".parse().unwrap())
        );
        let v6 = "failed to allocate IP fd00::c: provided IP is already allocated";
        assert_eq!(
            refused_address(&refused(422, v6)),
            Some("fd00::c".parse().unwrap())
        );
        let port =
            r#"spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"#;
        assert_eq!(refused_address(&refused(422, port)), None);
        let named = held_by(refused(422, held), "Service shop/db").to_string();
        assert!(
            named.ends_with(
                "provided IP is already allocated (by Service shop/db, not by the object deleted to recreate it)"
            ),
            "{named}"
        );
    }

    fn id(kind: &str, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            namespace: Some("shop".into()),
            name: name.into(),
        }
    }

    #[test]
    fn recreate_entries_are_kind_slash_name() {
        let entries = vec!["statefulset/db".to_string(), "Job/migrate".to_string()];
        assert!(wants_recreate(&entries, &id("StatefulSet", "db")));
        assert!(!wants_recreate(&entries, &id("StatefulSet", "web")));
        assert!(!wants_recreate(&entries, &id("Deployment", "db")));
        assert!(!wants_recreate(&["db".into()], &id("StatefulSet", "db")));
        assert!(orphans(&id("StatefulSet", "db")));
        assert!(!orphans(&id("Deployment", "db")));
    }

    #[test]
    fn a_workload_changing_kind_is_found_in_the_plan() {
        let release = Release {
            app: "shop".into(),
            chart: "db".into(),
            namespace: "shop".into(),
            release_name: "db".into(),
        };
        let old = parse_manifests(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: db}\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
        )
        .unwrap();
        let new = parse_manifests(
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: shop}\n",
        )
        .unwrap();
        let plan = plan_apply(&old, &new).unwrap();
        let rekinds = rekinds(&plan, &release);
        let names: Vec<&str> = rekinds.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["db"]);
    }
}
