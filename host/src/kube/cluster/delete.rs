//! Owns removing a release and waiting for deletions to finish.
//!
//! A remove deletes the inventory's objects in removal order
//! ([`crate::kube::plan_remove`]: custom resources first, then Helm's
//! uninstall order, Namespaces last), one kind at a time, and waits for
//! each kind's objects to be gone before the next, so custom resources
//! are gone while their CRDs and controllers still run their finalizers.
//! An object leaves the inventory only once a GET gives 404 or an object
//! of another uid (another client created one of the same name meanwhile:
//! the deleted one is gone, as kubectl's delete judges with a uid
//! precondition); one still there at the deadline is reported with the
//! finalizers holding it. The inventory Secret itself goes last.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::apply::{Record, Settings};
use super::client::Cluster;
use super::error::{Error, Held};
use super::prune::{remove_protection, start_deleting};
use super::wait::{Awaited, is_same};
use crate::kube::target::{ApplyEvent, ProgressSink, RemoveOptions};
use crate::kube::{ObjectRef, Release, plan_remove};

/// An object whose delete was sent: its inventory entry and where it is.
#[derive(Debug, Clone)]
pub struct Doomed {
    /// The inventory's id (what to forget).
    pub recorded: ObjectRef,
    /// The object with its real namespace, its kind and the uid of the
    /// object deleted (a live object of another uid is a new object, and
    /// the deleted one is gone).
    pub awaited: Awaited,
}

/// The finalizers of `live`.
pub fn finalizers(live: &Value) -> Vec<String> {
    live.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// Polls `doomed` until every one is gone (404), forgetting each from the
/// inventory as it goes. The caller saves the inventory after; at the
/// deadline this saves it (best effort) before failing.
///
/// # Errors
/// [`Error::DeletionBlocked`] at the deadline, naming every object still
/// there with its finalizers; a request's error.
pub async fn until_gone(
    cluster: &Cluster,
    release: &Release,
    doomed: &[Doomed],
    record: &mut Record,
    (deadline, timeout, poll): (Instant, Duration, Duration),
    progress: &dyn ProgressSink,
) -> Result<(), Error> {
    let mut pending: Vec<&Doomed> = doomed.iter().collect();
    loop {
        let mut still = Vec::new();
        let mut held = Vec::new();
        for d in pending {
            let at = &d.awaited;
            match cluster
                .get(&at.kind, at.id.namespace.as_deref(), &at.id)
                .await?
                .filter(|live| is_same(live, &at.uid))
            {
                None => {
                    record.inventory.forget(&d.recorded);
                    progress.event(&ApplyEvent::Deleted { object: &at.id });
                }
                Some(live) => {
                    held.push(Held {
                        object: at.id.clone(),
                        finalizers: finalizers(&live),
                    });
                    still.push(d);
                }
            }
        }
        if still.is_empty() {
            return Ok(());
        }
        let now = Instant::now();
        if now >= deadline {
            if let Err(save) = record.save(cluster, release).await {
                tracing::warn!(%release, "recording the inventory: {save}");
            }
            return Err(Error::DeletionBlocked { timeout, held });
        }
        tokio::time::sleep(poll.min(deadline - now)).await;
        pending = still;
    }
}

/// Deletes one object outside the inventory's bookkeeping (a hook, a
/// recreate, a kind change) and polls until a GET gives 404 or an object
/// of another uid (created anew by someone else). `orphan`
/// deletes with `propagationPolicy: Orphan` (dependents such as a
/// StatefulSet's Pods stay), else Background. Returns whether there was
/// anything to delete.
///
/// # Errors
/// A request's error, or [`Error::DeletionBlocked`] at the deadline,
/// naming the object and its finalizers.
pub async fn delete_until_gone(
    cluster: &Cluster,
    awaited: &Awaited,
    orphan: bool,
    (deadline, timeout, poll): (Instant, Duration, Duration),
) -> Result<bool, Error> {
    let (kind, namespace, id) = (&awaited.kind, awaited.id.namespace.as_deref(), &awaited.id);
    let Some(uid) = cluster.delete(kind, namespace, id, orphan).await? else {
        return Ok(false);
    };
    loop {
        let Some(live) = cluster
            .get(kind, namespace, id)
            .await?
            .filter(|live| is_same(live, &uid))
        else {
            return Ok(true);
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::DeletionBlocked {
                timeout,
                held: vec![Held {
                    object: id.clone(),
                    finalizers: finalizers(&live),
                }],
            });
        }
        tokio::time::sleep(poll.min(deadline - now)).await;
    }
}

/// Removes everything `release`'s inventory holds (see the module doc);
/// returns what was deleted, in order. No inventory: nothing to do.
///
/// # Errors
/// A request's error, or [`Error::DeletionBlocked`]; the inventory then
/// keeps what is not gone, so the remove can be repeated.
pub async fn remove_release(
    cluster: &Cluster,
    settings: &Settings,
    release: &Release,
    options: &RemoveOptions,
    progress: &dyn ProgressSink,
) -> Result<Vec<ObjectRef>, Error> {
    let mut record = Record::load(cluster, release).await?;
    if !record.exists() {
        return Ok(Vec::new());
    }
    let timeout = options.timeout.unwrap_or(settings.timeout);
    let deadline = Instant::now() + timeout;
    let order = plan_remove(&record.inventory.resources());
    let mut removed = Vec::new();
    for group in order.chunk_by(|a, b| a.kind == b.kind && a.group() == b.group()) {
        let mut doomed = Vec::new();
        for id in group {
            let install_only = record.inventory.is_install_only(id);
            let protection = |id: &ObjectRef, live: &Value| {
                remove_protection(id, live, install_only, options.purge)
            };
            if let Some(d) =
                start_deleting(cluster, release, id, &mut record, protection, progress).await?
            {
                doomed.push(d);
            }
        }
        record.save(cluster, release).await?;
        until_gone(
            cluster,
            release,
            &doomed,
            &mut record,
            (deadline, timeout, settings.poll),
            progress,
        )
        .await?;
        let namespace_gone = doomed.iter().any(|d| {
            d.awaited.id.kind == "Namespace"
                && d.awaited.id.group().is_empty()
                && d.awaited.id.name == release.namespace
        });
        removed.extend(doomed.into_iter().map(|d| d.awaited.id));
        if namespace_gone {
            // The inventory Secret went with its namespace.
            return Ok(removed);
        }
        record.save(cluster, release).await?;
    }
    record.delete(cluster, release).await?;
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finalizers_are_read() {
        let live = json!({"metadata": {"finalizers": ["example.com/hold", "kubernetes"]}});
        assert_eq!(finalizers(&live), ["example.com/hold", "kubernetes"]);
        assert!(finalizers(&json!({})).is_empty());
    }
}
