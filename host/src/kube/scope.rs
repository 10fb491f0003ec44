//! Owns the one list of the built-in kinds that live outside namespaces,
//! for the places that must know a kind's scope without asking a server:
//! the directory target, and the plan that puts namespace-less objects
//! in their release's namespace. A cluster asks discovery instead.

/// The built-in cluster-scoped kinds of Kubernetes 1.37.
const CLUSTER_SCOPED: &[&str] = &[
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
];

/// Whether a built-in `kind` lives in a namespace; any kind not in the
/// list of cluster-scoped built-in kinds is taken for a namespaced one.
pub fn builtin_namespaced(kind: &str) -> bool {
    !CLUSTER_SCOPED.contains(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_scopes() {
        assert!(builtin_namespaced("Secret"));
        assert!(builtin_namespaced("ServiceMonitor"));
        assert!(!builtin_namespaced("Node"));
        assert!(!builtin_namespaced("StorageClass"));
        let mut sorted = CLUSTER_SCOPED.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, CLUSTER_SCOPED, "kept sorted");
    }
}
