//! Owns what a connected render reads from the target for one chart of
//! one app: `lookup` under the operator's [`LookupPolicy`], answered once
//! per object per render ([`TargetLookup`]), and `.Capabilities` from what
//! the target serves, with the API versions that CRDs planned by earlier
//! chart groups will add ([`capabilities`]).
//!
//! The apply, update, rollback, recover and diff paths render connected;
//! `capstan template` and `bundle lint` never reach this module and stay
//! offline, as `helm template` does.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use crate::kube::{ClusterView, Resource};
use crate::model::{LookupPolicy, LookupQuery, Served};
use crate::render::{self, Capabilities, Lookup};

/// `lookup` through the target, for one render: the policy checked
/// before every read, each answer kept for the rest of the render.
pub struct TargetLookup {
    target: Arc<dyn ClusterView>,
    policy: LookupPolicy,
    /// The namespaces the app's charts are released into.
    own: BTreeSet<String>,
    answers: Mutex<HashMap<LookupQuery, Result<serde_json::Value, String>>>,
}

impl TargetLookup {
    /// An answerer for one render of an app whose charts are released
    /// into `own` namespaces.
    pub fn new(target: Arc<dyn ClusterView>, policy: LookupPolicy, own: BTreeSet<String>) -> Self {
        TargetLookup {
            target,
            policy,
            own,
            answers: Mutex::new(HashMap::new()),
        }
    }

    /// Refuses what the policy does not allow, naming the rule.
    fn check(&self, query: &LookupQuery) -> Result<(), String> {
        if query.api_version.is_empty() || query.kind.is_empty() {
            return Err(format!(
                "lookup of {query}: the apiVersion and kind must not be empty"
            ));
        }
        for part in [&query.namespace, &query.name] {
            if matches!(part.as_str(), "." | "..") || part.contains('/') {
                return Err(format!("lookup of {query}: {part:?} is not an object name"));
            }
        }
        let namespaced = match self.target.kind_scope(&query.api_version, &query.kind) {
            Ok(Some(namespaced)) => namespaced,
            Ok(None) => {
                return Err(format!(
                    "lookup of {query}: the target serves no kind {} in {}",
                    query.kind, query.api_version
                ));
            }
            Err(e) => return Err(format!("lookup of {query}: {}", one_line(&e))),
        };
        let own = self.own.iter().cloned().collect::<Vec<_>>().join(", ");
        let rule = format!(
            "this app may read its own namespaces ({own}){}{}; capstan serve --lookup-namespace and --lookup-cluster-scoped set the policy",
            match self.policy.namespaces.is_empty() {
                true => String::new(),
                false => format!(
                    ", the namespaces {}",
                    self.policy
                        .namespaces
                        .iter()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
            match self.policy.cluster_scoped {
                true => " and cluster-scoped kinds",
                false => "",
            },
        );
        let allowed = match namespaced {
            false => self.policy.cluster_scoped,
            true if query.namespace.is_empty() => self.policy.any_namespace(),
            true => {
                self.policy.any_namespace()
                    || self.own.contains(&query.namespace)
                    || self.policy.namespaces.contains(&query.namespace)
            }
        };
        match allowed {
            true => Ok(()),
            false => Err(format!(
                "lookup of {query} is outside the lookup policy: {rule}"
            )),
        }
    }
}

impl Lookup for TargetLookup {
    fn lookup(&self, query: &LookupQuery) -> Result<serde_json::Value, String> {
        if let Some(answer) = self.answers().get(query) {
            return answer.clone();
        }
        let answer = self.check(query).and_then(|()| {
            self.target
                .read_live(query)
                .map_err(|e| format!("lookup of {query}: {}", one_line(&e)))
        });
        self.answers().insert(query.clone(), answer.clone());
        answer
    }
}

impl TargetLookup {
    fn answers(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<LookupQuery, Result<serde_json::Value, String>>> {
        self.answers.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An error and its causes on one line.
pub(super) fn one_line(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `.Capabilities` of a connected render: the server's version and API
/// versions, plus `planned` (what CRDs of earlier chart groups add), when
/// the target is a server; else the offline capabilities at
/// `kube_version` (the facts' version).
///
/// # Errors
/// [`render::Error::KubeVersion`] for a version that does not parse.
pub fn capabilities(
    served: Option<&Served>,
    planned: &BTreeSet<String>,
    kube_version: &str,
) -> Result<Capabilities, render::Error> {
    let Some(served) = served else {
        return Capabilities::new(Some(kube_version), &[]);
    };
    let version = match served.version.is_empty() {
        true => kube_version,
        false => &served.version,
    };
    let mut caps = Capabilities::new(Some(version), &[])?;
    let mut all: BTreeSet<String> = served.api_versions.iter().cloned().collect();
    all.extend(planned.iter().cloned());
    caps.api_versions = all.into_iter().collect();
    Ok(caps)
}

/// The group-versions and group-version/kinds the served
/// CustomResourceDefinitions among `objects` add once applied.
pub fn crd_api_versions(objects: &[Resource]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for crd in objects
        .iter()
        .filter(|r| r.id().kind == "CustomResourceDefinition")
    {
        let spec = crd.object().get("spec");
        let group = spec
            .and_then(|s| s.get("group"))
            .and_then(serde_json::Value::as_str);
        let kind = spec
            .and_then(|s| s.pointer("/names/kind"))
            .and_then(serde_json::Value::as_str);
        let (Some(group), Some(kind)) = (group, kind) else {
            continue;
        };
        let versions = spec
            .and_then(|s| s.get("versions"))
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter(|v| v.get("served").and_then(serde_json::Value::as_bool) != Some(false))
            .filter_map(|v| v.get("name").and_then(serde_json::Value::as_str));
        for version in versions {
            out.insert(format!("{group}/{version}"));
            out.insert(format!("{group}/{version}/{kind}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::DirTarget;

    fn query(kind: &str, namespace: &str, name: &str) -> LookupQuery {
        LookupQuery::new("v1", kind, namespace, name)
    }

    fn answerer(policy: LookupPolicy) -> TargetLookup {
        let dir = std::env::temp_dir().join("capstan-lookup-policy-none");
        TargetLookup::new(
            Arc::new(DirTarget::new(dir)),
            policy,
            ["shop".to_string()].into_iter().collect(),
        )
    }

    #[test]
    fn the_default_policy_reads_the_apps_namespaces_and_cluster_scoped_kinds() {
        let lookup = answerer(LookupPolicy::default());
        assert_eq!(
            lookup.lookup(&query("Secret", "shop", "db")),
            Ok(serde_json::json!({}))
        );
        assert!(lookup.lookup(&query("Node", "", "worker-1")).is_ok());
        let denied = lookup.lookup(&query("Secret", "kube-system", "token"));
        assert_eq!(
            denied,
            Err(
                "lookup of v1/Secret kube-system/token is outside the lookup policy: this app may \
                 read its own namespaces (shop) and cluster-scoped kinds; capstan serve \
                 --lookup-namespace and --lookup-cluster-scoped set the policy"
                    .into()
            )
        );
        let across = lookup.lookup(&query("Secret", "", ""));
        assert!(
            across
                .as_ref()
                .is_err_and(|e| e.starts_with("lookup of v1/Secret * is outside")),
            "{across:?}"
        );
    }

    #[test]
    fn the_operator_widens_or_narrows_the_policy() {
        let wider = answerer(LookupPolicy {
            namespaces: ["kube-system".to_string()].into_iter().collect(),
            cluster_scoped: false,
        });
        assert!(
            wider
                .lookup(&query("Secret", "kube-system", "token"))
                .is_ok()
        );
        let node = wider.lookup(&query("Node", "", "worker-1"));
        assert!(node.is_err_and(|e| e.contains("outside the lookup policy")));
        let every = answerer(LookupPolicy {
            namespaces: ["*".to_string()].into_iter().collect(),
            cluster_scoped: true,
        });
        let list = every.lookup(&query("Secret", "", ""));
        assert_eq!(
            list.ok().and_then(|l| l.get("kind").cloned()),
            Some(serde_json::json!("SecretList"))
        );
    }

    #[test]
    fn names_that_are_paths_are_refused() {
        let lookup = answerer(LookupPolicy::default());
        for (namespace, name) in [("shop", ".."), ("..", "x"), ("shop", "a/b")] {
            let got = lookup.lookup(&query("Secret", namespace, name));
            assert!(got.is_err_and(|e| e.contains("is not an object name")));
        }
    }

    #[test]
    fn crds_add_their_served_versions() {
        let crd = Resource::from_value(
            serde_json::json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
                "spec": {"group": "monitoring.coreos.com", "names": {"kind": "ServiceMonitor"},
                         "versions": [{"name": "v1", "served": true}, {"name": "v0", "served": false}]}}),
            "test",
        );
        let Ok(crd) = crd else {
            panic!("not a resource")
        };
        let got: Vec<String> = crd_api_versions(&[crd]).into_iter().collect();
        assert_eq!(
            got,
            [
                "monitoring.coreos.com/v1",
                "monitoring.coreos.com/v1/ServiceMonitor"
            ]
        );
        let served = Served {
            version: "v1.37.2".into(),
            api_versions: vec!["v1".into()],
        };
        let caps = capabilities(Some(&served), &got.into_iter().collect(), "1.30.0");
        let Ok(caps) = caps else { panic!("{caps:?}") };
        assert_eq!(caps.kube_version, "v1.37.2");
        assert_eq!(caps.api_versions.len(), 3);
        let offline = capabilities(None, &BTreeSet::new(), "1.30.0");
        assert!(offline.is_ok_and(|c| c.kube_version == "v1.30.0" && c.api_versions.len() > 3));
    }
}
