//! Owns waiting for a change to what a reader read: one watch per
//! collection (from the list's `resourceVersion`) or object (by its name,
//! compared with the version read), all at once, ending at the first
//! change, at the timeout, or when the server ends a watch. Used by the
//! facts from the cluster, so that a node relabelled or cordoned is seen
//! at once without a poll every second.
//!
//! Reads only. A watch the server can no longer start from its version
//! (410 Gone, the version compacted away) counts as a change: the caller
//! reads again and watches from the new version, as client-go's
//! reflector relists.

use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::{FutureExt as _, StreamExt as _};
use kube::api::WatchParams;
use kube::core::WatchEvent;

use super::client::Cluster;
use super::discovery::Kind;
use super::error::{Error, Verb};
use crate::model::{WatchEnd, WatchFrom, resource_version};

/// What one watch waits on, resolved.
pub struct Watched<'a> {
    /// The kind, from discovery.
    pub kind: Kind,
    /// Where it starts.
    pub from: &'a WatchFrom,
}

/// The `resourceVersion` of `kind`'s collection in `namespace` (every
/// namespace when empty) now, from a LIST of one item, so that a watch
/// from it sees every later change.
///
/// # Errors
/// The request's errors.
pub async fn collection_version(
    cluster: &Cluster,
    kind: &Kind,
    namespace: &str,
) -> Result<Option<String>, Error> {
    let namespace = (!namespace.is_empty()).then_some(namespace);
    let path = format!("{}?limit=1", kind.collection_path(namespace));
    let list = cluster
        .get_raw(Verb::List, &path, "application/json")
        .await?;
    Ok(list.as_ref().and_then(resource_version))
}

/// Waits for the first change to any of `watched`, at most `timeout`.
///
/// # Errors
/// [`Error::Watch`] when a watch cannot start or breaks off,
/// [`Error::NoVersion`] for a collection read without a version,
/// [`Error::Refused`] for a watch the server refuses (403, or an error
/// event other than 410).
pub async fn first_change(
    cluster: &Cluster,
    watched: &[Watched<'_>],
    timeout: Duration,
) -> Result<WatchEnd, Error> {
    if watched.is_empty() {
        return Ok(WatchEnd::Unsupported);
    }
    let seconds = u32::try_from(timeout.as_secs().max(1)).unwrap_or(u32::MAX);
    let waits: Vec<BoxFuture<'_, Result<WatchEnd, Error>>> = watched
        .iter()
        .map(|w| one(cluster, w, seconds).boxed())
        .collect();
    // The server ends each watch at `timeoutSeconds`; the margin covers a
    // server that does not.
    let all = futures_util::future::select_all(waits);
    match tokio::time::timeout(timeout + Duration::from_secs(5), all).await {
        Ok((result, _, _)) => result,
        Err(_) => Ok(WatchEnd::Quiet),
    }
}

/// One watch, to its first change or its end.
async fn one(cluster: &Cluster, watched: &Watched<'_>, seconds: u32) -> Result<WatchEnd, Error> {
    let query = &watched.from.query;
    let namespace = (!query.namespace.is_empty()).then_some(query.namespace.as_str());
    let path = watched.kind.collection_path(namespace);
    let mut params = WatchParams::default().timeout(seconds);
    // An object is watched by name from now: the server first sends it as
    // it is (ADDED), which is compared with the version read. A
    // collection is watched from the list's version.
    let from = match query.name.is_empty() {
        true => watched
            .from
            .version
            .clone()
            .ok_or_else(|| Error::NoVersion {
                target: path.clone(),
            })?,
        false => {
            params = params.fields(&format!("metadata.name={}", query.name));
            String::new()
        }
    };
    let request = kube::core::Request::new(path.clone())
        .watch(&params, &from)
        .map_err(|source| Error::BuildRequest {
            verb: Verb::Watch,
            target: path.clone(),
            source,
        })?;
    let events = cluster.watch(&path, request).await?;
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let event = event.map_err(|source| Error::Watch {
            target: path.clone(),
            source,
        })?;
        match event {
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Added(object)
                if !query.name.is_empty() && resource_version(&object) == watched.from.version =>
            {
                // The object as it was read: no change yet.
            }
            WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_) => {
                return Ok(WatchEnd::Changed);
            }
            WatchEvent::Error(status) if status.code == 410 => return Ok(WatchEnd::Changed),
            WatchEvent::Error(status) => {
                return Err(Error::Refused {
                    verb: Verb::Watch,
                    target: path,
                    code: status.code,
                    reason: status.reason.clone(),
                    message: status.message.clone(),
                });
            }
        }
    }
    Ok(WatchEnd::Quiet)
}
