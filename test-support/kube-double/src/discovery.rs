//! Which resources the double serves, and the discovery documents that tell
//! clients so: `/api`, `/api/v1`, `/apis`, `/apis/{group}` and
//! `/apis/{group}/{version}`. Owns the table of built-in kinds; the kinds of
//! custom resources come from the stored CustomResourceDefinitions (see
//! [`crd_resources`]). Serves plain discovery, and aggregated discovery
//! (`apidiscovery.k8s.io/v2`) to clients that ask for it in `Accept`.

use serde_json::{Value, json};
use std::sync::OnceLock;

/// One resource a group-version serves.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    /// API group, empty for the core group.
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Plural resource name used in paths.
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// The kind of the objects.
    pub kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// kubectl short names.
    pub short_names: Vec<String>,
    /// Whether it is a custom resource (not validated strictly).
    pub custom: bool,
    /// Whether the resource has a `/status` subresource.
    pub status_subresource: bool,
}

impl ResourceInfo {
    /// `apps/v1`, or `v1` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// One built-in kind: (group, version, plural, kind, namespaced, short names).
type Builtin = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
);

/// The built-in kinds.
const BUILTIN: &[Builtin] = &[
    ("", "v1", "namespaces", "Namespace", false, &["ns"]),
    ("", "v1", "configmaps", "ConfigMap", true, &["cm"]),
    ("", "v1", "secrets", "Secret", true, &[]),
    ("", "v1", "services", "Service", true, &["svc"]),
    ("", "v1", "serviceaccounts", "ServiceAccount", true, &["sa"]),
    ("", "v1", "pods", "Pod", true, &["po"]),
    (
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
    ),
    (
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        false,
        &["pv"],
    ),
    ("", "v1", "events", "Event", true, &["ev"]),
    ("", "v1", "endpoints", "Endpoints", true, &["ep"]),
    ("", "v1", "nodes", "Node", false, &["no"]),
    ("apps", "v1", "deployments", "Deployment", true, &["deploy"]),
    ("apps", "v1", "statefulsets", "StatefulSet", true, &["sts"]),
    ("apps", "v1", "daemonsets", "DaemonSet", true, &["ds"]),
    ("apps", "v1", "replicasets", "ReplicaSet", true, &["rs"]),
    ("batch", "v1", "jobs", "Job", true, &[]),
    ("batch", "v1", "cronjobs", "CronJob", true, &["cj"]),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        true,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
        &[],
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        &[],
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
    ),
    (
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        true,
        &["ing"],
    ),
    (
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
        &["netpol"],
    ),
    (
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        false,
        &[],
    ),
    (
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
        &["pdb"],
    ),
    (
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        false,
        &["sc"],
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        false,
        &["pc"],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        false,
        &[],
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        false,
        &[],
    ),
    (
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
        &["hpa"],
    ),
];

/// Kinds whose status the real server serves as a subresource.
const WITHOUT_STATUS: &[&str] = &[
    "ConfigMap",
    "Secret",
    "ServiceAccount",
    "Event",
    "Endpoints",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "IngressClass",
    "StorageClass",
    "PriorityClass",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
];

/// Built-in kinds in the `all` category (`kubectl get all`).
const IN_ALL: &[&str] = &[
    "Pod",
    "Service",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Job",
    "CronJob",
    "HorizontalPodAutoscaler",
];

impl ResourceInfo {
    /// Whether the resource has a `/scale` subresource.
    pub fn has_scale(&self) -> bool {
        !self.custom
            && self.group == "apps"
            && matches!(
                self.kind.as_str(),
                "Deployment" | "StatefulSet" | "ReplicaSet"
            )
    }

    fn categories(&self) -> Vec<&'static str> {
        if !self.custom && IN_ALL.contains(&self.kind.as_str()) {
            vec!["all"]
        } else {
            Vec::new()
        }
    }
}

/// The built-in resources, built once.
pub fn builtins() -> &'static [ResourceInfo] {
    static TABLE: OnceLock<Vec<ResourceInfo>> = OnceLock::new();
    TABLE.get_or_init(|| {
        BUILTIN
            .iter()
            .map(
                |(group, version, plural, kind, namespaced, short)| ResourceInfo {
                    group: group.to_string(),
                    version: version.to_string(),
                    plural: plural.to_string(),
                    singular: kind.to_lowercase(),
                    kind: kind.to_string(),
                    namespaced: *namespaced,
                    short_names: short.iter().map(|s| s.to_string()).collect(),
                    custom: false,
                    status_subresource: !WITHOUT_STATUS.contains(kind),
                },
            )
            .collect()
    })
}

/// The resources a stored CustomResourceDefinition serves (one per served version).
pub fn crd_resources(crd: &Value) -> Vec<ResourceInfo> {
    let spec = &crd["spec"];
    let (Some(group), Some(plural), Some(kind)) = (
        spec["group"].as_str(),
        spec["names"]["plural"].as_str(),
        spec["names"]["kind"].as_str(),
    ) else {
        return Vec::new();
    };
    let singular = spec["names"]["singular"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let short_names: Vec<String> = spec["names"]["shortNames"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    spec["versions"]
        .as_array()
        .map(|versions| {
            versions
                .iter()
                .filter(|v| v["served"].as_bool().unwrap_or(true))
                .filter_map(|v| v["name"].as_str())
                .map(|version| ResourceInfo {
                    group: group.to_string(),
                    version: version.to_string(),
                    plural: plural.to_string(),
                    singular: singular.clone(),
                    kind: kind.to_string(),
                    namespaced,
                    short_names: short_names.clone(),
                    custom: true,
                    status_subresource: versions.iter().any(|v| {
                        v["name"].as_str() == Some(version)
                            && v["subresources"]["status"].is_object()
                    }),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `GET /api`.
pub fn api_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    })
}

/// Groups (except core) with their versions, in first-seen order.
fn groups(all: &[ResourceInfo]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for r in all.iter().filter(|r| !r.group.is_empty()) {
        match out.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) => {
                if !versions.contains(&r.version) {
                    versions.push(r.version.clone());
                }
            }
            None => out.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    out
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

/// `GET /apis`.
pub fn api_group_list(all: &[ResourceInfo]) -> Value {
    let groups: Vec<Value> = groups(all).iter().map(|(g, v)| group_json(g, v)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/{group}`, or `None` for an unknown group.
pub fn api_group(all: &[ResourceInfo], group: &str) -> Option<Value> {
    let (g, v) = groups(all).into_iter().find(|(g, _)| g == group)?;
    let mut doc = group_json(&g, &v);
    if let Some(map) = doc.as_object_mut() {
        map.insert("kind".into(), json!("APIGroup"));
        map.insert("apiVersion".into(), json!("v1"));
    }
    Some(doc)
}

/// `GET /api/v1` or `/apis/{group}/{version}`, or `None` if nothing is served there.
pub fn api_resource_list(all: &[ResourceInfo], group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for r in all
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let mut entry = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": VERBS,
        });
        if let Some(map) = entry.as_object_mut() {
            if !r.short_names.is_empty() {
                map.insert("shortNames".into(), json!(r.short_names));
            }
            if !r.categories().is_empty() {
                map.insert("categories".into(), json!(r.categories()));
            }
        }
        resources.push(entry);
        if r.has_scale() {
            resources.push(json!({
                "name": format!("{}/scale", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
        if r.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

/// The media type of aggregated discovery v2, as the response `Content-Type`.
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` header asks for aggregated discovery v2.
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        params.contains(&"g=apidiscovery.k8s.io")
            && params.contains(&"v=v2")
            && params.contains(&"as=APIGroupDiscoveryList")
    })
}

/// `GET /api` (`core` true) or `/apis` as an aggregated `APIGroupDiscoveryList`.
pub fn aggregated(all: &[ResourceInfo], core: bool) -> Value {
    let mut order: Vec<(String, Vec<String>)> = Vec::new();
    for r in all.iter().filter(|r| r.group.is_empty() == core) {
        match order.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, vs)) => {
                if !vs.contains(&r.version) {
                    vs.push(r.version.clone());
                }
            }
            None => order.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    let items: Vec<Value> = order
        .iter()
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|version| {
                    let resources: Vec<Value> = all
                        .iter()
                        .filter(|r| r.group == *group && r.version == *version)
                        .map(|r| {
                            let kind =
                                json!({"group": r.group, "version": r.version, "kind": r.kind});
                            let mut entry = json!({
                                "resource": r.plural,
                                "responseKind": kind,
                                "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
                                "singularResource": r.singular,
                                "verbs": VERBS,
                            });
                            if let Some(m) = entry.as_object_mut() {
                                if !r.short_names.is_empty() {
                                    m.insert("shortNames".into(), json!(r.short_names));
                                }
                                if !r.categories().is_empty() {
                                    m.insert("categories".into(), json!(r.categories()));
                                }
                                let mut subs = Vec::new();
                                if r.status_subresource {
                                    subs.push(json!({
                                        "subresource": "status",
                                        "responseKind": kind,
                                        "verbs": ["get", "patch", "update"],
                                    }));
                                }
                                if r.has_scale() {
                                    subs.push(json!({
                                        "subresource": "scale",
                                        "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                                        "verbs": ["get", "patch", "update"],
                                    }));
                                }
                                if !subs.is_empty() {
                                    m.insert("subresources".into(), json!(subs));
                                }
                            }
                            entry
                        })
                        .collect();
                    json!({"version": version, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": group}, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

/// `GET /version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": "v1.33.0",
        "gitCommit": "kube-double",
        "gitTreeState": "clean",
        "buildDate": "2025-04-23T00:00:00Z",
        "goVersion": "go1.24.2",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apps_v1_lists_deployments_and_their_status() {
        let doc = api_resource_list(builtins(), "apps", "v1").unwrap_or_default();
        let names: Vec<&str> = doc["resources"]
            .as_array()
            .map(|a| a.iter().filter_map(|r| r["name"].as_str()).collect())
            .unwrap_or_default();
        assert!(names.contains(&"deployments"));
        assert!(names.contains(&"deployments/status"));
        assert!(api_resource_list(builtins(), "apps", "v2").is_none());
    }

    #[test]
    fn crd_serves_its_versions() {
        let crd = json!({"spec": {"group": "example.com", "scope": "Cluster",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true}, {"name": "v0", "served": false}]}});
        let r = crd_resources(&crd);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].plural, "widgets");
        assert!(!r[0].namespaced);
    }
}
