//! Owns what an apply knows of each object's live state before it sends
//! a write: known unchanged from the apply cache ([`super::cache`]),
//! known absent (in a namespace this apply created, or missing from one
//! metadata-only list of its kind and namespace), or unknown and read
//! with a GET. A first apply of many objects into an existing namespace
//! so costs one list a kind rather than a read an object.
//!
//! A list is made only for three or more objects of one kind and
//! namespace that capstan does not already own, as `PartialObjectMetadata`
//! (names and metadata, no bodies), in pages of 500, at most
//! [`MAX_LIST_PAGES`] of them; a larger collection, or a failed list,
//! leaves the objects unknown and they are read one by one, as before.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::apply::{Namespaces, Prepared, in_flight};
use super::cache::{self, LiveCache};
use super::client::Cluster;
use super::error::{Error, Verb};
use super::fields;
use crate::kube::ObjectKey;
use crate::kube::target::ApplyOptions;

/// The most pages of 500 one presence list reads.
pub const MAX_LIST_PAGES: usize = 10;

/// The fewest unknown objects of one kind and namespace worth a list.
const LIST_FROM: usize = 3;

/// What a list asks for: the objects' metadata only.
const METADATA_ONLY: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// What an object's apply starts from ([`cache::digest`]).
pub(super) struct Inputs {
    pub(super) digest: u64,
}

/// The inputs of `p`'s apply.
pub(super) fn inputs(
    p: &Prepared,
    owned_before: &HashSet<ObjectKey>,
    options: &ApplyOptions,
) -> Inputs {
    let adopting = options.adopt && !owned_before.contains(&p.id.key());
    let force = fields::forces(&options.fields, adopting);
    let ignored: Vec<crate::model::Pointer> = options
        .fields
        .ignored(&p.id.kind, p.id.namespace.as_deref(), &p.id.name)
        .into_iter()
        .cloned()
        .collect();
    Inputs {
        digest: cache::digest(&p.body, &ignored, force),
    }
}

/// What is known of an object's live state before any read.
pub(super) enum Known {
    /// Nothing: read it.
    Unknown,
    /// Absent: in a namespace this apply created, or not in its list.
    Absent,
    /// As capstan's last apply from the same inputs left it
    /// ([`LiveCache::unchanged`]).
    Unchanged(Value),
}

/// What the cache, this apply's namespaces and the presence lists tell
/// of each object, in `prepared`'s order; a failed list leaves its
/// objects unknown.
pub(super) async fn known(
    cluster: &Cluster,
    prepared: &[Prepared],
    inputs: &[Inputs],
    owned_before: &HashSet<ObjectKey>,
    namespaces: &Namespaces,
    cache: Option<&LiveCache>,
) -> Vec<Known> {
    let mut known: Vec<Known> = prepared
        .iter()
        .zip(inputs)
        .map(|(p, i)| {
            let key = p.id.key();
            if let Some(namespace) = &p.id.namespace
                && namespaces.created(namespace)
            {
                return Known::Absent;
            }
            if !owned_before.contains(&key) {
                return Known::Unknown;
            }
            cache
                .and_then(|c| c.unchanged(&p.kind, p.id.namespace.as_deref(), &key, i.digest))
                .map_or(Known::Unknown, Known::Unchanged)
        })
        .collect();
    // The objects capstan does not own yet, by kind and namespace.
    let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
    for (index, (p, k)) in prepared.iter().zip(&known).enumerate() {
        if matches!(k, Known::Unknown) && !owned_before.contains(&p.id.key()) {
            groups
                .entry(p.kind.collection_path(p.id.namespace.as_deref()))
                .or_default()
                .push(index);
        }
    }
    for (collection, members) in groups {
        if members.len() < LIST_FROM {
            continue;
        }
        let Some(present) = names_in(cluster, &collection).await else {
            continue;
        };
        for index in members {
            if !present.contains(&prepared[index].id.name) {
                known[index] = Known::Absent;
            }
        }
    }
    known
}

/// The names in `collection`, from metadata-only pages; `None` when the
/// list fails or is longer than [`MAX_LIST_PAGES`] pages.
async fn names_in(cluster: &Cluster, collection: &str) -> Option<HashSet<String>> {
    let mut names = HashSet::new();
    let mut next: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let mut path = format!("{collection}?limit=500");
        if let Some(token) = &next {
            path.push_str("&continue=");
            for byte in token.bytes() {
                match byte {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                        path.push(char::from(byte));
                    }
                    other => path.push_str(&format!("%{other:02X}")),
                }
            }
        }
        let page = match cluster.get_raw(Verb::List, &path, METADATA_ONLY).await {
            Ok(Some(page)) => page,
            Ok(None) => return Some(names),
            Err(e) => {
                tracing::debug!(%collection, "presence list: {e}");
                return None;
            }
        };
        for item in page
            .get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = item.pointer("/metadata/name").and_then(Value::as_str) {
                names.insert(name.to_string());
            }
        }
        next = page
            .pointer("/metadata/continue")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        if next.is_none() {
            return Some(names);
        }
    }
    None
}

/// Each object's live state (`None` when absent) in `objects`' order:
/// what `known` holds, the rest read ([`get_all`]).
pub(super) async fn get_unknown(
    cluster: &Cluster,
    objects: &[Prepared],
    known: &[Known],
) -> Vec<Result<Option<Value>, Error>> {
    let unknown: Vec<Prepared> = objects
        .iter()
        .zip(known)
        .filter(|(_, k)| matches!(k, Known::Unknown))
        .map(|(p, _)| p.clone())
        .collect();
    let mut fetched = get_all(cluster, &unknown).await.into_iter();
    known
        .iter()
        .map(|k| match k {
            Known::Absent => Ok(None),
            Known::Unchanged(live) => Ok(Some(live.clone())),
            Known::Unknown => fetched.next().unwrap_or(Ok(None)),
        })
        .collect()
}

/// Each object's live state (`None` when absent), the GETs together
/// ([`in_flight`]), in `objects`' order.
pub(super) async fn get_all(
    cluster: &Cluster,
    objects: &[Prepared],
) -> Vec<Result<Option<Value>, Error>> {
    let gets: Vec<_> = objects
        .iter()
        .map(|p| (cluster.clone(), p.kind.clone(), p.id.clone()))
        .collect();
    in_flight(gets, |(cluster, kind, id)| async move {
        cluster.get(&kind, id.namespace.as_deref(), &id).await
    })
    .await
}
