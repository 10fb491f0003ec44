//! The vocabulary of reading a target while rendering: one `lookup`
//! call ([`LookupQuery`]), the operator's rule for what a chart may read
//! ([`LookupPolicy`]), and what an API server serves ([`Served`]) for
//! `.Capabilities`.

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
