//! Owns discovery: turning an `apiVersion` and `kind` into the resource's
//! plural and scope, as the API server lists them (`GET /api/v1`,
//! `GET /apis/GROUP/VERSION`). Plurals are never guessed from the kind.
//!
//! Cached per group-version: the first object of a group-version costs
//! one request, later ones none. A kind missing from the cached list
//! refetches that group-version, so a kind whose CRD was applied a moment
//! ago resolves (the caller waits and asks again while the server's
//! discovery lags behind the CRD's `Established`, Helm #32615). A
//! group-version the server does not serve (404) is an empty list.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

use super::client::Cluster;
use super::error::Error;

/// One resource kind as discovery lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    /// `apiVersion` (`apps/v1`, `v1`).
    pub api_version: String,
    /// `kind` (`Deployment`).
    pub kind: String,
    /// The resource's plural (`deployments`), as the server names it.
    pub plural: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
}

impl Kind {
    /// A built-in kind capstan reads for diagnostics (Pods, Events),
    /// whose plural is fixed by the core API.
    pub fn core(kind: &str, plural: &str) -> Kind {
        Kind {
            api_version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced: true,
        }
    }

    /// The collection's path: `/api/v1/namespaces/NS/pods`,
    /// `/apis/apps/v1/deployments`. `namespace` is ignored for a
    /// cluster-scoped kind.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let mut path = group_version_path(&self.api_version);
        if let (true, Some(namespace)) = (self.namespaced, namespace) {
            path.push_str("/namespaces/");
            path.push_str(namespace);
        }
        path.push('/');
        path.push_str(&self.plural);
        path
    }
}

/// `/api/v1` for the core group, `/apis/GROUP/VERSION` otherwise.
pub fn group_version_path(api_version: &str) -> String {
    match api_version.contains('/') {
        true => format!("/apis/{api_version}"),
        false => format!("/api/{api_version}"),
    }
}

/// The kinds of an `APIResourceList`, subresources (`deployments/scale`)
/// left out.
pub fn parse_resource_list(api_version: &str, list: &Value) -> Vec<Kind> {
    list.get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|resource| {
            let name = resource.get("name").and_then(Value::as_str)?;
            if name.contains('/') {
                return None;
            }
            Some(Kind {
                api_version: api_version.to_string(),
                kind: resource.get("kind").and_then(Value::as_str)?.to_string(),
                plural: name.to_string(),
                namespaced: resource
                    .get("namespaced")
                    .and_then(Value::as_bool)
                    .unwrap_or(true),
            })
        })
        .collect()
}

/// The cache of discovered group-versions.
#[derive(Debug, Default)]
pub struct Discovery {
    lists: Mutex<HashMap<String, Vec<Kind>>>,
    fetches: std::sync::atomic::AtomicUsize,
}

impl Discovery {
    /// Resolves `kind` in `api_version`, from the cache or by fetching
    /// its group-version (again, if the cached list lacks the kind).
    ///
    /// # Errors
    /// [`Error::UnknownKind`] when the server does not list it; the
    /// request's errors when discovery itself fails.
    pub async fn resolve(
        &self,
        cluster: &Cluster,
        api_version: &str,
        kind: &str,
    ) -> Result<Kind, Error> {
        if let Some(found) = self.cached(api_version, kind) {
            return Ok(found);
        }
        let list = cluster
            .get_path(&group_version_path(api_version))
            .await?
            .map(|list| parse_resource_list(api_version, &list))
            .unwrap_or_default();
        self.fetches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.store(api_version, list);
        self.cached(api_version, kind)
            .ok_or_else(|| Error::UnknownKind {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            })
    }

    /// How many discovery documents were fetched (for the bench and tests).
    pub fn fetches(&self) -> usize {
        self.fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn cached(&self, api_version: &str, kind: &str) -> Option<Kind> {
        let lists = self.lists.lock().unwrap_or_else(|p| p.into_inner());
        lists
            .get(api_version)?
            .iter()
            .find(|k| k.kind == kind)
            .cloned()
    }

    fn store(&self, api_version: &str, list: Vec<Kind>) {
        let mut lists = self.lists.lock().unwrap_or_else(|p| p.into_inner());
        lists.insert(api_version.to_string(), list);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resource_lists_give_plurals_and_scopes() {
        let list = json!({
            "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
            "resources": [
                {"name": "deployments", "singularName": "deployment", "namespaced": true,
                 "kind": "Deployment", "verbs": ["create", "get", "patch"]},
                {"name": "deployments/scale", "namespaced": true, "kind": "Scale", "group": "autoscaling"},
                {"name": "controllerrevisions", "namespaced": true, "kind": "ControllerRevision"}
            ]
        });
        let kinds = parse_resource_list("apps/v1", &list);
        assert_eq!(kinds.len(), 2);
        assert_eq!(kinds[0].plural, "deployments");
        assert_eq!(
            kinds[0].collection_path(Some("shop")),
            "/apis/apps/v1/namespaces/shop/deployments"
        );
        let namespace = Kind {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            plural: "namespaces".into(),
            namespaced: false,
        };
        assert_eq!(namespace.collection_path(Some("x")), "/api/v1/namespaces");
        assert_eq!(
            Kind::core("Pod", "pods").collection_path(Some("a")),
            "/api/v1/namespaces/a/pods"
        );
    }
}
