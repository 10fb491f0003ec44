//! Owns the staged order of one chart's apply: which objects go to the
//! cluster together, and therefore what is waited for before what.
//!
//! Pure, as Flux's `ApplyAllStaged` splits a change set:
//! 1. [`Stage::Definitions`]: CustomResourceDefinitions and Namespaces, so
//!    custom resources resolve and namespaced objects have a home;
//! 2. [`Stage::ClassesAndRbac`]: `*Class` kinds (StorageClass,
//!    IngressClass, PriorityClass, RuntimeClass, and custom ones such as
//!    GatewayClass) and the roles (ClusterRole, Role), which workloads and
//!    bindings refer to;
//! 3. [`Stage::Bindings`]: ClusterRoleBinding and RoleBinding, after their
//!    roles: the API server resolves a binding's role to check that the
//!    binder does not escalate, and answers 404 (even to a dry run) while
//!    the role is missing;
//! 4. [`Stage::Resources`]: everything else, in Helm's install order;
//! 5. [`Stage::Webhooks`]: Mutating/ValidatingWebhookConfigurations, last,
//!    so a webhook never intercepts the apply of the service behind it.
//!
//! Within a stage objects keep the order they are given in, which the
//! plan made Helm's install order ([`crate::kube::INSTALL_ORDER`]).
//! Whether a `*Class` kind is cluster-scoped is not known here (no
//! discovery in a pure function); every kind named `…Class` goes to stage
//! 2, which is the right place for the namespaced ones too.

use std::fmt;

use crate::kube::Resource;

/// One stage of a chart's apply, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// CRDs and Namespaces.
    Definitions,
    /// `*Class` kinds and RBAC roles.
    ClassesAndRbac,
    /// Role bindings.
    Bindings,
    /// Everything else.
    Resources,
    /// Webhook configurations.
    Webhooks,
}

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Stage; 5] = [
        Stage::Definitions,
        Stage::ClassesAndRbac,
        Stage::Bindings,
        Stage::Resources,
        Stage::Webhooks,
    ];

    /// The stage an object of `group` and `kind` belongs to.
    pub fn of(group: &str, kind: &str) -> Stage {
        match (group, kind) {
            ("apiextensions.k8s.io", "CustomResourceDefinition") | ("", "Namespace") => {
                Stage::Definitions
            }
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
            ) => Stage::Webhooks,
            ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => Stage::ClassesAndRbac,
            ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => Stage::Bindings,
            (_, kind) if kind.ends_with("Class") && kind.len() > "Class".len() => {
                Stage::ClassesAndRbac
            }
            _ => Stage::Resources,
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Definitions => "definitions (CRDs, namespaces)",
            Stage::ClassesAndRbac => "classes and roles",
            Stage::Bindings => "role bindings",
            Stage::Resources => "resources",
            Stage::Webhooks => "webhook configurations",
        })
    }
}

/// `resources` split into their stages, in stage order; stages with no
/// object are left out. Objects keep their given order within a stage.
pub fn stages(resources: &[Resource]) -> Vec<(Stage, Vec<&Resource>)> {
    Stage::ALL
        .into_iter()
        .map(|stage| {
            let members: Vec<&Resource> = resources
                .iter()
                .filter(|r| Stage::of(r.id().group(), &r.id().kind) == stage)
                .collect();
            (stage, members)
        })
        .filter(|(_, members)| !members.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::{parse_manifests, plan_apply};

    const CHART: &str = "
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: guard}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: web}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: edge}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: web}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: inject}
---
apiVersion: example.com/v1
kind: Class
metadata: {name: not-a-class-kind}
";

    #[test]
    fn stages_follow_flux_with_helms_order_inside() {
        let plan = plan_apply(&[], &parse_manifests(CHART).unwrap()).unwrap();
        let staged: Vec<(Stage, Vec<String>)> = stages(plan.to_apply())
            .into_iter()
            .map(|(stage, members)| {
                let names = members
                    .iter()
                    .map(|r| format!("{}/{}", r.id().kind, r.id().name))
                    .collect();
                (stage, names)
            })
            .collect();
        let expect = |stage, names: &[&str]| {
            (
                stage,
                names.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            staged,
            [
                expect(
                    Stage::Definitions,
                    &[
                        "Namespace/shop",
                        "CustomResourceDefinition/widgets.example.com"
                    ]
                ),
                expect(
                    Stage::ClassesAndRbac,
                    &["StorageClass/fast", "ClusterRole/web", "GatewayClass/edge"]
                ),
                expect(Stage::Bindings, &["ClusterRoleBinding/web"]),
                expect(
                    Stage::Resources,
                    &[
                        "ConfigMap/cfg",
                        "Deployment/web",
                        "Class/not-a-class-kind",
                        "Widget/w"
                    ]
                ),
                expect(
                    Stage::Webhooks,
                    &[
                        "MutatingWebhookConfiguration/inject",
                        "ValidatingWebhookConfiguration/guard"
                    ]
                ),
            ]
        );
    }

    #[test]
    fn empty_stages_are_left_out() {
        let resources =
            parse_manifests("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n").unwrap();
        let staged = stages(&resources);
        assert_eq!(staged.len(), 1);
        assert_eq!(staged[0].0, Stage::Resources);
        assert!(stages(&[]).is_empty());
    }

    #[test]
    fn a_kind_named_like_a_builtin_in_another_group_is_not_one() {
        assert_eq!(Stage::of("example.com", "Namespace"), Stage::Resources);
        assert_eq!(
            Stage::of("example.com", "CustomResourceDefinition"),
            Stage::Resources
        );
        assert_eq!(Stage::of("", "Namespace"), Stage::Definitions);
    }
}
