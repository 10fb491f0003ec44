//! The identity of a Kubernetes object: what a cluster needs to find it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which object a manifest describes.
///
/// `namespace` is what the manifest says; `None` when it names none (a
/// cluster-scoped kind, or a namespaced one that takes the release's
/// namespace). Two refs that differ only there are different refs: the
/// plan does not guess scopes.
///
/// Serialized as Kubernetes spells the fields (`apiVersion`, `kind`,
/// `namespace` when set, `name`): the shape the store's inventory copy
/// and the cluster's release Secret share.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// `apiVersion`, e.g. `apps/v1` or `v1`.
    pub api_version: String,
    /// `kind`, e.g. `Deployment`.
    pub kind: String,
    /// `metadata.namespace`, if the manifest sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
}

/// An object's identity without its API version: the same object served
/// at `apps/v1beta2` and at `apps/v1` has one key. The plan matches applied
/// and desired objects by key, so a chart that moves an object to a newer
/// API version updates it rather than deleting and recreating it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The API group (`apps`; empty for the core group of `v1`).
    pub group: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.namespace`, if set.
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
}

impl ObjectRef {
    /// The API group: the part of `apiVersion` before `/`, or empty for
    /// the core group (`v1`).
    pub fn group(&self) -> &str {
        match self.api_version.split_once('/') {
            Some((group, _)) => group,
            None => "",
        }
    }

    /// The identity without the version (see [`ObjectKey`]).
    pub fn key(&self) -> ObjectKey {
        ObjectKey {
            group: self.group().to_string(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ", self.kind)?;
        if let Some(namespace) = &self.namespace {
            write!(f, "{namespace}/")?;
        }
        write!(f, "{} ({})", self.name, self.api_version)
    }
}
