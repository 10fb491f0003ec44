//! The vocabulary of reading a target while rendering: one `lookup`
//! call ([`LookupQuery`]), the operator's rule for what a chart may read
//! ([`LookupPolicy`]), what an API server serves ([`Served`]) for
//! `.Capabilities`, and where a wait for a change to what was read starts
//! ([`WatchFrom`]) and how it ends ([`WatchEnd`]).

use std::collections::BTreeSet;

/// One `lookup API KIND NAMESPACE NAME` call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LookupQuery {
    /// `apiVersion` (`v1`, `apps/v1`).
    pub api_version: String,
    /// `kind` (`Secret`).
    pub kind: String,
    /// The namespace; empty for a cluster-scoped kind or a list across
    /// every namespace.
    pub namespace: String,
    /// The object's name; empty for a list.
    pub name: String,
}

impl LookupQuery {
    /// The object `name` of `kind` in `api_version` and `namespace`; an
    /// empty `name` for the list (every namespace when `namespace` is
    /// empty too).
    pub fn new(api_version: &str, kind: &str, namespace: &str, name: &str) -> LookupQuery {
        LookupQuery {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

impl std::fmt::Display for LookupQuery {
    /// `v1/Secret shop/db`, `v1/Secret shop/*` for a list,
    /// `v1/Namespace shop` for a cluster-scoped object.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = if self.name.is_empty() {
            "*"
        } else {
            &self.name
        };
        write!(f, "{}/{} ", self.api_version, self.kind)?;
        match self.namespace.is_empty() {
            true => write!(f, "{name}"),
            false => write!(f, "{}/{name}", self.namespace),
        }
    }
}

/// What a connected render may read with `lookup`.
///
/// By default an app reads the namespaces its own charts are released
/// into and cluster-scoped kinds; the operator may add namespaces (or
/// `*`, every namespace) and may forbid cluster-scoped reads
/// (`capstan serve --lookup-namespace`, `--lookup-cluster-scoped`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupPolicy {
    /// Namespaces every app may read besides its own; `*` is every one.
    pub namespaces: BTreeSet<String>,
    /// Whether cluster-scoped kinds (Nodes, Namespaces, StorageClasses,
    /// CRDs) may be read.
    pub cluster_scoped: bool,
}

impl Default for LookupPolicy {
    fn default() -> Self {
        LookupPolicy {
            namespaces: BTreeSet::new(),
            cluster_scoped: true,
        }
    }
}

impl LookupPolicy {
    /// Whether every namespace may be read.
    pub fn any_namespace(&self) -> bool {
        self.namespaces.contains("*")
    }
}

/// Where a watch starts: what was read, as of which resource version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchFrom {
    /// The collection read (an empty name) or the one object read.
    pub query: LookupQuery,
    /// A collection's list `resourceVersion`; an object's own
    /// `resourceVersion`, `None` when it was absent.
    pub version: Option<String>,
}

impl WatchFrom {
    /// A watch of `query` from what reading it returned: the list's or
    /// the object's `metadata.resourceVersion` (an absent object has
    /// none).
    pub fn of(query: LookupQuery, read: &serde_json::Value) -> WatchFrom {
        WatchFrom {
            query,
            version: resource_version(read),
        }
    }
}

/// `metadata.resourceVersion` of an object or a list, when it has one.
pub fn resource_version(value: &serde_json::Value) -> Option<String> {
    value
        .pointer("/metadata/resourceVersion")
        .and_then(serde_json::Value::as_str)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// How a wait for a change to what was read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchEnd {
    /// Something read has changed since, or may have (the server no
    /// longer keeps the version watched from): read again.
    Changed,
    /// Nothing changed before the wait's timeout.
    Quiet,
    /// The target cannot watch; the caller polls.
    Unsupported,
}

/// What an API server serves, for a connected render's `.Capabilities`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Served {
    /// `gitVersion` of `GET /version` (`v1.37.2`).
    pub version: String,
    /// Every served group-version (`apps/v1`, `v1`) and
    /// group-version/kind (`apps/v1/Deployment`, subresources' kinds
    /// too), sorted, as Helm's `GetVersionSet` lists them.
    pub api_versions: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_watch_starts_from_the_version_read() {
        let query = LookupQuery::new("v1", "Node", "", "");
        let list = json!({"metadata": {"resourceVersion": "42"}, "items": []});
        assert_eq!(
            WatchFrom::of(query.clone(), &list).version.as_deref(),
            Some("42")
        );
        assert_eq!(
            resource_version(&json!({"metadata": {"resourceVersion": ""}})),
            None
        );
        // An absent object (a lookup's empty map) has no version.
        assert_eq!(WatchFrom::of(query, &json!({})).version, None);
    }
}
