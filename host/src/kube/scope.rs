//! Owns the fixed table of Kubernetes 1.37's built-in kinds and their
//! scopes, keyed by (API group, kind), and the list of built-in API
//! groups, for the places that must know a kind's scope without asking a
//! server: the directory target (which must answer as an API server
//! would, and refuse a CustomResourceDefinition that claims a built-in
//! group), and the plan that puts namespace-less objects in their
//! release's namespace. A cluster asks discovery instead.
//!
//! The table was read off the `k8s.io/api`, `k8s.io/apiextensions-apiserver`
//! and `k8s.io/kube-aggregator` v0.37 sources (`+genclient:nonNamespaced`
//! marks a cluster-scoped kind) and the API server's registry: it lists
//! the kinds a client can create, get or list, not subresource kinds
//! (`Scale`, `Eviction` of `policy`, `TokenRequest`; `Binding` is kept,
//! as the `bindings` resource it also is), option kinds, or payloads the
//! server never stores (`AdmissionReview`, `ConversionReview`).

/// Every built-in kind of Kubernetes 1.37 as `(group, kind, namespaced)`,
/// sorted by group then kind (the core group is `""`).
const BUILTIN: &[(&str, &str, bool)] = &[
    ("", "Binding", true),
    ("", "ComponentStatus", false),
    ("", "ConfigMap", true),
    ("", "Endpoints", true),
    ("", "Event", true),
    ("", "LimitRange", true),
    ("", "Namespace", false),
    ("", "Node", false),
    ("", "PersistentVolume", false),
    ("", "PersistentVolumeClaim", true),
    ("", "Pod", true),
    ("", "PodTemplate", true),
    ("", "ReplicationController", true),
    ("", "ResourceQuota", true),
    ("", "Secret", true),
    ("", "Service", true),
    ("", "ServiceAccount", true),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicy",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicy",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        false,
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition", false),
    ("apiregistration.k8s.io", "APIService", false),
    ("apps", "ControllerRevision", true),
    ("apps", "DaemonSet", true),
    ("apps", "Deployment", true),
    ("apps", "ReplicaSet", true),
    ("apps", "StatefulSet", true),
    ("authentication.k8s.io", "SelfSubjectReview", false),
    ("authentication.k8s.io", "TokenReview", false),
    ("authorization.k8s.io", "LocalSubjectAccessReview", true),
    ("authorization.k8s.io", "SelfSubjectAccessReview", false),
    ("authorization.k8s.io", "SelfSubjectRulesReview", false),
    ("authorization.k8s.io", "SubjectAccessReview", false),
    ("autoscaling", "HorizontalPodAutoscaler", true),
    ("batch", "CronJob", true),
    ("batch", "Job", true),
    ("certificates.k8s.io", "CertificateSigningRequest", false),
    ("certificates.k8s.io", "ClusterTrustBundle", false),
    ("certificates.k8s.io", "PodCertificateRequest", true),
    ("coordination.k8s.io", "Lease", true),
    ("coordination.k8s.io", "LeaseCandidate", true),
    ("discovery.k8s.io", "EndpointSlice", true),
    ("events.k8s.io", "Event", true),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema", false),
    (
        "flowcontrol.apiserver.k8s.io",
        "PriorityLevelConfiguration",
        false,
    ),
    ("internal.apiserver.k8s.io", "StorageVersion", false),
    ("lifecycle.k8s.io", "Eviction", true),
    ("lifecycle.k8s.io", "EvictionRequest", true),
    ("networking.k8s.io", "IPAddress", false),
    ("networking.k8s.io", "Ingress", true),
    ("networking.k8s.io", "IngressClass", false),
    ("networking.k8s.io", "NetworkPolicy", true),
    ("networking.k8s.io", "ServiceCIDR", false),
    ("node.k8s.io", "RuntimeClass", false),
    ("policy", "PodDisruptionBudget", true),
    ("rbac.authorization.k8s.io", "ClusterRole", false),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding", false),
    ("rbac.authorization.k8s.io", "Role", true),
    ("rbac.authorization.k8s.io", "RoleBinding", true),
    ("resource.k8s.io", "DeviceClass", false),
    ("resource.k8s.io", "DeviceTaintRule", false),
    ("resource.k8s.io", "ResourceClaim", true),
    ("resource.k8s.io", "ResourceClaimTemplate", true),
    ("resource.k8s.io", "ResourcePoolStatusRequest", false),
    ("resource.k8s.io", "ResourceSlice", false),
    ("scheduling.k8s.io", "CompositePodGroup", true),
    ("scheduling.k8s.io", "PodGroup", true),
    ("scheduling.k8s.io", "PriorityClass", false),
    ("scheduling.k8s.io", "Workload", true),
    ("storage.k8s.io", "CSIDriver", false),
    ("storage.k8s.io", "CSINode", false),
    ("storage.k8s.io", "CSIStorageCapacity", true),
    ("storage.k8s.io", "StorageClass", false),
    ("storage.k8s.io", "VolumeAttachment", false),
    ("storage.k8s.io", "VolumeAttributesClass", false),
    ("storagemigration.k8s.io", "StorageVersionMigration", false),
];

/// The API groups Kubernetes itself defines, sorted: those of
/// [`BUILTIN`], and those that serve no stored kind but that no
/// CustomResourceDefinition may claim either (`admission.k8s.io` for
/// webhook payloads, `imagepolicy.k8s.io`, `apidiscovery.k8s.io`, the
/// retired `extensions`).
const BUILTIN_GROUPS: &[&str] = &[
    "",
    "admission.k8s.io",
    "admissionregistration.k8s.io",
    "apidiscovery.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "extensions",
    "flowcontrol.apiserver.k8s.io",
    "imagepolicy.k8s.io",
    "internal.apiserver.k8s.io",
    "lifecycle.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// The API group of `api_version`: the part before `/`, or `""` (the core
/// group) for `v1`.
pub fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(group, _)| group)
}

/// The scope of a built-in kind: `Some(true)` when `kind` of `group` lives
/// in a namespace, `Some(false)` when it is cluster-scoped, `None` when
/// Kubernetes 1.37 has no such built-in kind (a custom resource, or a
/// kind its group does not serve).
pub fn builtin_scope(group: &str, kind: &str) -> Option<bool> {
    BUILTIN
        .binary_search_by(|(g, k, _)| (*g, *k).cmp(&(group, kind)))
        .ok()
        .and_then(|index| BUILTIN.get(index))
        .map(|(_, _, namespaced)| *namespaced)
}

/// Whether `group` is one Kubernetes defines itself: its kinds are
/// exactly those of the table, and no CustomResourceDefinition may add
/// to it.
pub fn is_builtin_group(group: &str) -> bool {
    BUILTIN_GROUPS.binary_search(&group).is_ok()
}

/// Whether `kind` lives in a namespace, when only its name is known: false
/// when a built-in kind of that name is cluster-scoped (no built-in kind
/// name is cluster-scoped in one group and namespaced in another), true
/// for every other kind (custom ones included).
pub fn builtin_namespaced(kind: &str) -> bool {
    !BUILTIN
        .iter()
        .any(|(_, name, namespaced)| *name == kind && !namespaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_and_every_kind_is_in_a_builtin_group() {
        let mut sorted = BUILTIN.to_vec();
        sorted.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        sorted.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
        assert_eq!(sorted, BUILTIN, "sorted, no duplicates");
        let mut groups = BUILTIN_GROUPS.to_vec();
        groups.sort_unstable();
        groups.dedup();
        assert_eq!(groups, BUILTIN_GROUPS, "sorted, no duplicates");
        for (group, kind, namespaced) in BUILTIN {
            assert!(is_builtin_group(group), "{group} of {kind}");
            // builtin_namespaced relies on this.
            for (other, _, scope) in BUILTIN.iter().filter(|(_, k, _)| k == kind) {
                assert_eq!(scope, namespaced, "{kind} of {group} and of {other}");
            }
        }
    }

    #[test]
    fn the_newer_cluster_scoped_kinds_are_cluster_scoped() {
        for (group, kind) in [
            ("storage.k8s.io", "VolumeAttributesClass"),
            ("networking.k8s.io", "ServiceCIDR"),
            ("networking.k8s.io", "IPAddress"),
            ("resource.k8s.io", "DeviceClass"),
            ("resource.k8s.io", "ResourceSlice"),
            ("certificates.k8s.io", "ClusterTrustBundle"),
            ("storagemigration.k8s.io", "StorageVersionMigration"),
            ("internal.apiserver.k8s.io", "StorageVersion"),
        ] {
            assert_eq!(builtin_scope(group, kind), Some(false), "{group} {kind}");
            assert!(!builtin_namespaced(kind), "{kind}");
        }
    }

    #[test]
    fn scopes_are_keyed_by_group_and_kind() {
        assert_eq!(builtin_scope("", "Secret"), Some(true));
        assert_eq!(builtin_scope("", "Namespace"), Some(false));
        assert_eq!(builtin_scope("apps", "Deployment"), Some(true));
        assert_eq!(builtin_scope("events.k8s.io", "Event"), Some(true));
        assert_eq!(
            builtin_scope("resource.k8s.io", "ResourceClaim"),
            Some(true)
        );
        assert_eq!(
            builtin_scope("apiextensions.k8s.io", "CustomResourceDefinition"),
            Some(false)
        );
        // The kind exists, but not in this group.
        assert_eq!(builtin_scope("apps", "Secret"), None);
        assert_eq!(builtin_scope("", "Deployment"), None);
        // Subresource kinds and custom kinds are not built-in kinds.
        assert_eq!(builtin_scope("autoscaling", "Scale"), None);
        assert_eq!(
            builtin_scope("monitoring.coreos.com", "ServiceMonitor"),
            None
        );
        assert!(builtin_namespaced("Secret"));
        assert!(builtin_namespaced("ServiceMonitor"));
        assert!(!builtin_namespaced("Node"));
        assert!(!builtin_namespaced("StorageClass"));
    }

    #[test]
    fn builtin_groups() {
        for group in [
            "",
            "apps",
            "networking.k8s.io",
            "resource.k8s.io",
            "extensions",
        ] {
            assert!(is_builtin_group(group), "{group:?}");
        }
        for group in ["example.com", "monitoring.coreos.com", "k8s.io", "v1"] {
            assert!(!is_builtin_group(group), "{group:?}");
        }
        assert_eq!(group_of("v1"), "");
        assert_eq!(group_of("apps/v1"), "apps");
    }

    /// Every kind the old kind-name list held is still cluster-scoped.
    #[test]
    fn the_former_list_is_kept() {
        for kind in [
            "APIService",
            "CSIDriver",
            "CSINode",
            "CertificateSigningRequest",
            "ClusterRole",
            "ClusterRoleBinding",
            "ComponentStatus",
            "CustomResourceDefinition",
            "FlowSchema",
            "IngressClass",
            "MutatingAdmissionPolicy",
            "MutatingAdmissionPolicyBinding",
            "MutatingWebhookConfiguration",
            "Namespace",
            "Node",
            "PersistentVolume",
            "PriorityClass",
            "PriorityLevelConfiguration",
            "RuntimeClass",
            "StorageClass",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            "ValidatingWebhookConfiguration",
            "VolumeAttachment",
        ] {
            assert!(!builtin_namespaced(kind), "{kind}");
        }
    }
}
