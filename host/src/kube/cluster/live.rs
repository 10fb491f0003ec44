//! Owns the cluster's answers to a connected render: the live objects
//! and lists `lookup` reads, and what the server serves for
//! `.Capabilities` (its version from `GET /version`, its API versions from
//! discovery, in the form Helm's `GetVersionSet` gives them).
//!
//! Reads only, never a write. A list is read in pages of 500 and bounded
//! ([`MAX_LIST_ITEMS`]) so that a chart cannot make the daemon hold a
//! whole cluster in memory. Discovery asks for the aggregated document
//! (`apidiscovery.k8s.io/v2`, two requests) and falls back to one request
//! per group-version on a server without it.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::client::Cluster;
use super::discovery::{Kind, group_version_path};
use super::error::{Error, Verb};
use crate::model::Served;

/// The most objects one `lookup` of a list returns; a longer list is an
/// error naming the query rather than a daemon that holds it all.
pub const MAX_LIST_ITEMS: usize = 10_000;

/// Objects asked for per page of a list.
const PAGE: usize = 500;

/// Aggregated discovery first, the plain documents as a fallback.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// The live object `name` of `kind` (an empty object when there is none),
/// or, for an empty `name`, the list of them in `namespace` (every
/// namespace when it is empty), each item with its `apiVersion` and
/// `kind` as client-go's unstructured lists give them.
///
/// # Errors
/// [`Error::LookupTooLarge`] past [`MAX_LIST_ITEMS`]; the request's errors.
pub async fn read(
    cluster: &Cluster,
    kind: &Kind,
    namespace: &str,
    name: &str,
) -> Result<Value, Error> {
    let namespace = (!namespace.is_empty()).then(|| encode(namespace));
    let base = kind.collection_path(namespace.as_deref());
    if !name.is_empty() {
        let path = format!("{base}/{}", encode(name));
        let found = cluster
            .get_raw(Verb::Get, &path, "application/json")
            .await?;
        return Ok(found.unwrap_or_else(|| Value::Object(Map::new())));
    }
    let mut items: Vec<Value> = Vec::new();
    let mut list: Option<Value> = None;
    let mut next: Option<String> = None;
    loop {
        let mut path = format!("{base}?limit={PAGE}");
        if let Some(token) = &next {
            path.push_str("&continue=");
            path.push_str(&encode(token));
        }
        let Some(mut page) = cluster
            .get_raw(Verb::List, &path, "application/json")
            .await?
        else {
            break;
        };
        if let Some(Value::Array(page_items)) = page.get_mut("items").map(Value::take) {
            items.extend(page_items);
        }
        if items.len() > MAX_LIST_ITEMS {
            return Err(Error::LookupTooLarge {
                target: base,
                limit: MAX_LIST_ITEMS,
            });
        }
        next = page
            .pointer("/metadata/continue")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        list.get_or_insert(page);
        if next.is_none() {
            break;
        }
    }
    let mut list = match list {
        Some(Value::Object(map)) => map,
        _ => {
            let mut map = Map::new();
            map.insert("apiVersion".into(), kind.api_version.clone().into());
            map.insert("kind".into(), format!("{}List", kind.kind).into());
            map.insert("metadata".into(), Value::Object(Map::new()));
            map
        }
    };
    if let Some(Value::Object(metadata)) = list.get_mut("metadata") {
        metadata.remove("continue");
        metadata.remove("remainingItemCount");
    }
    for item in &mut items {
        if let Value::Object(item) = item {
            item.entry("apiVersion")
                .or_insert_with(|| kind.api_version.clone().into());
            item.entry("kind")
                .or_insert_with(|| kind.kind.clone().into());
        }
    }
    list.insert("items".into(), Value::Array(items));
    Ok(Value::Object(list))
}

/// The server's version and served API versions.
///
/// # Errors
/// The requests' errors.
pub async fn served(cluster: &Cluster) -> Result<Served, Error> {
    let version = cluster
        .get_raw(Verb::Get, "/version", "application/json")
        .await?
        .and_then(|v| {
            v.get("gitVersion")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_default();
    let mut set = BTreeSet::new();
    for root in ["/api", "/apis"] {
        let Some(doc) = cluster.get_raw(Verb::Discover, root, AGGREGATED).await? else {
            continue;
        };
        if doc.get("kind").and_then(Value::as_str) == Some("APIGroupDiscoveryList") {
            aggregated(&doc, &mut set);
            continue;
        }
        for group_version in group_versions(&doc) {
            set.insert(group_version.clone());
            let path = group_version_path(&group_version);
            if let Some(list) = cluster.get_path(&path).await? {
                resource_kinds(&group_version, &list, &mut set);
            }
        }
    }
    Ok(Served {
        version,
        api_versions: set.into_iter().collect(),
    })
}

/// The entries of an aggregated discovery document.
fn aggregated(doc: &Value, set: &mut BTreeSet<String>) {
    for group in array(doc, "items") {
        let name = group
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        for version in array(group, "versions") {
            let Some(v) = version.get("version").and_then(Value::as_str) else {
                continue;
            };
            let group_version = match name {
                "" => v.to_string(),
                _ => format!("{name}/{v}"),
            };
            for resource in array(version, "resources") {
                let kinds = std::iter::once(resource).chain(array(resource, "subresources"));
                for kind in
                    kinds.filter_map(|r| r.pointer("/responseKind/kind").and_then(Value::as_str))
                {
                    if !kind.is_empty() {
                        set.insert(format!("{group_version}/{kind}"));
                    }
                }
            }
            set.insert(group_version);
        }
    }
}

/// The group-versions of an `APIVersions` (`/api`) or `APIGroupList`
/// (`/apis`) document.
fn group_versions(doc: &Value) -> Vec<String> {
    let core = array(doc, "versions")
        .filter_map(Value::as_str)
        .map(str::to_string);
    let groups = array(doc, "groups")
        .flat_map(|g| array(g, "versions"))
        .filter_map(|v| v.get("groupVersion").and_then(Value::as_str))
        .map(str::to_string);
    core.chain(groups).collect()
}

/// `GV/Kind` for every resource of an `APIResourceList`, subresources
/// included, as Helm lists them.
fn resource_kinds(group_version: &str, list: &Value, set: &mut BTreeSet<String>) {
    for kind in array(list, "resources").filter_map(|r| r.get("kind").and_then(Value::as_str)) {
        if !kind.is_empty() {
            set.insert(format!("{group_version}/{kind}"));
        }
    }
}

fn array<'v>(value: &'v Value, key: &str) -> impl Iterator<Item = &'v Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter())
        .into_iter()
        .flatten()
}

/// A path segment or query value, percent-encoded but for the characters
/// Kubernetes names use.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b':' => {
                out.push(char::from(b));
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aggregated_discovery_lists_versions_and_kinds_as_helm_does() {
        let doc = json!({"kind": "APIGroupDiscoveryList", "items": [
            {"metadata": {"name": ""}, "versions": [{"version": "v1", "resources": [
                {"resource": "pods", "responseKind": {"kind": "Pod"},
                 "subresources": [{"subresource": "eviction", "responseKind": {"kind": "Eviction"}}]}]}]},
            {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "resources": [
                {"resource": "deployments", "responseKind": {"kind": "Deployment"},
                 "subresources": [{"subresource": "scale", "responseKind": {"group": "autoscaling", "kind": "Scale"}},
                                  {"subresource": "status"}]}]}]}
        ]});
        let mut set = BTreeSet::new();
        aggregated(&doc, &mut set);
        let got: Vec<&str> = set.iter().map(String::as_str).collect();
        assert_eq!(
            got,
            [
                "apps/v1",
                "apps/v1/Deployment",
                "apps/v1/Scale",
                "v1",
                "v1/Eviction",
                "v1/Pod"
            ]
        );
    }

    #[test]
    fn plain_discovery_documents_give_group_versions_and_kinds() {
        let core = json!({"kind": "APIVersions", "versions": ["v1"]});
        let groups = json!({"kind": "APIGroupList", "groups": [
            {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}]},
            {"name": "batch", "versions": [{"groupVersion": "batch/v1"}, {"groupVersion": "batch/v1beta1"}]}]});
        assert_eq!(group_versions(&core), ["v1"]);
        assert_eq!(
            group_versions(&groups),
            ["apps/v1", "batch/v1", "batch/v1beta1"]
        );
        let mut set = BTreeSet::new();
        resource_kinds(
            "apps/v1",
            &json!({"resources": [{"name": "deployments", "kind": "Deployment"},
                                  {"name": "deployments/scale", "kind": "Scale"}]}),
            &mut set,
        );
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn names_are_encoded_as_path_segments() {
        assert_eq!(encode("system:node-1.a"), "system:node-1.a");
        assert_eq!(encode("a/../b c"), "a%2F..%2Fb%20c");
        assert_eq!(encode("x?y&z=1"), "x%3Fy%26z%3D1");
    }
}
