//! The pure plan of an apply: in which order objects go in and come out,
//! which objects changed, and which to prune. No I/O; a target carries the
//! plan out.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::fmt;

use super::Error;
use super::manifest::Resource;
use crate::model::{ObjectKey, ObjectRef};

/// Helm's install order by kind (`InstallOrder` in Helm 4's
/// `pkg/release/util/kind_sorter.go`). Kinds not listed go after these,
/// alphabetically; objects of one kind keep their rendered order.
pub const INSTALL_ORDER: [&str; 38] = [
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Helm's uninstall order by kind (`UninstallOrder`, same file). It is not
/// quite [`INSTALL_ORDER`] reversed: Services go before the workloads
/// behind them, and validating webhooks before mutating ones.
///
/// Unlike Helm, which removes unknown kinds last, capstan removes them
/// first (the reverse of installing them last): custom resources go while
/// their definitions, namespaces and operators are still there to process
/// their finalizers.
pub const UNINSTALL_ORDER: [&str; 38] = [
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "APIService",
    "Ingress",
    "IngressClass",
    "Service",
    "CronJob",
    "Job",
    "StatefulSet",
    "HorizontalPodAutoscaler",
    "Deployment",
    "ReplicaSet",
    "ReplicationController",
    "Pod",
    "DaemonSet",
    "RoleBindingList",
    "RoleBinding",
    "RoleList",
    "Role",
    "ClusterRoleBindingList",
    "ClusterRoleBinding",
    "ClusterRoleList",
    "ClusterRole",
    "CustomResourceDefinition",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "ConfigMap",
    "SecretList",
    "Secret",
    "ServiceAccount",
    "PodDisruptionBudget",
    "PodSecurityPolicy",
    "LimitRange",
    "ResourceQuota",
    "NetworkPolicy",
    "Namespace",
    "PriorityClass",
];

/// What applying a release's desired objects over what it applied last
/// means. Only [`plan_apply`] makes one, so a plan never holds the same
/// object twice.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyPlan {
    to_apply: Vec<Resource>,
    to_prune: Vec<ObjectRef>,
    unchanged: usize,
}

impl ApplyPlan {
    /// Every desired object, in install order. Unchanged ones are
    /// included: server-side apply of an unchanged object is a no-op on the
    /// server and repairs drift, and the directory target writes the whole
    /// set.
    pub fn to_apply(&self) -> &[Resource] {
        &self.to_apply
    }

    /// Objects applied last time and no longer desired, in removal order.
    pub fn to_prune(&self) -> &[ObjectRef] {
        &self.to_prune
    }

    /// How many of [`ApplyPlan::to_apply`] are identical (same API version
    /// and content) to what was applied last.
    pub fn unchanged(&self) -> usize {
        self.unchanged
    }

    /// Whether the apply would change nothing that was last applied.
    pub fn is_noop(&self) -> bool {
        self.to_prune.is_empty() && self.unchanged == self.to_apply.len()
    }
}

/// Plans applying `objects` into a release and pruning `prune` from it,
/// leaving every other object it holds as it is: for a target whose
/// record of a release outlives a plan that does not name an object (the
/// cluster's inventory), never for one that writes a release whole.
///
/// # Errors
/// [`Error::Duplicate`] when `objects` holds one object twice.
pub fn plan_partial(objects: &[Resource], prune: &[ObjectRef]) -> Result<ApplyPlan, Error> {
    let matched = match_desired(&[], objects)?;
    Ok(ApplyPlan {
        to_apply: matched.into_iter().map(|(new, _)| new.clone()).collect(),
        to_prune: removal_order(prune.iter()),
        unchanged: 0,
    })
}

/// Plans applying `desired` over `applied` (what the target applied last
/// for the same release): `desired` in install order, the applied objects
/// that `desired` no longer holds as the prune set, in removal order.
///
/// Objects are matched by [`ObjectKey`], so an object whose API version
/// moved (`apps/v1beta2` to `apps/v1`) is changed, never pruned. Several
/// applied objects with one key (a target record written by hand) are
/// pruned once. An applied object that may be a desired one placed in
/// the release's namespace implicitly (one of the two names no namespace)
/// is never pruned.
///
/// # Errors
/// [`Error::Duplicate`] when `desired` holds one object twice, naming the
/// sources of both.
pub fn plan_apply(applied: &[Resource], desired: &[Resource]) -> Result<ApplyPlan, Error> {
    let matched = match_desired(applied, desired)?;
    let unchanged = matched
        .iter()
        .filter(|(new, old)| old.is_some_and(|old| same_content(old, new)))
        .count();
    Ok(ApplyPlan {
        to_apply: matched.into_iter().map(|(new, _)| new.clone()).collect(),
        to_prune: prune_set(applied, desired),
        unchanged,
    })
}

/// The objects of `applied` in removal order (see [`UNINSTALL_ORDER`]);
/// objects of one kind come out in the reverse of their applied order. An
/// object listed twice appears once.
pub fn plan_remove(applied: &[Resource]) -> Vec<ObjectRef> {
    removal_order(applied.iter().map(Resource::id))
}

/// What an apply of `desired` would change against `applied`, for
/// `capstan app diff`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Diff {
    /// Desired objects not applied, in install order.
    pub added: Vec<ObjectRef>,
    /// Objects applied and desired with different content, in install order.
    pub changed: Vec<Changed>,
    /// Applied objects no longer desired, in removal order.
    pub removed: Vec<ObjectRef>,
}

/// One changed object and a line diff of its YAML.
#[derive(Debug, Clone, PartialEq)]
pub struct Changed {
    /// The object as desired.
    pub object: ObjectRef,
    /// Hunks in the shape of a unified diff (`@@ -a,b +c,d @@`, then lines
    /// starting with ` `, `-` or `+`), applied first, desired second; three
    /// lines of context. Ends with a newline.
    pub text: String,
}

impl Diff {
    /// Whether nothing would change.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty()
    }
}

impl fmt::Display for Diff {
    /// One line per object (`+ added`, `~ changed` followed by its hunks,
    /// `- removed`); nothing when the diff is empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for object in &self.added {
            writeln!(f, "+ {object}")?;
        }
        for changed in &self.changed {
            writeln!(f, "~ {}", changed.object)?;
            write!(f, "{}", changed.text)?;
        }
        for object in &self.removed {
            writeln!(f, "- {object}")?;
        }
        Ok(())
    }
}

/// Compares what is applied with what is desired (see [`plan_apply`] for
/// how objects are matched).
///
/// # Errors
/// [`Error::Duplicate`] when `desired` holds one object twice;
/// [`Error::Serialize`] if a changed object cannot be written as YAML.
pub fn diff(applied: &[Resource], desired: &[Resource]) -> Result<Diff, Error> {
    let mut result = Diff {
        removed: prune_set(applied, desired),
        ..Diff::default()
    };
    for (new, old) in match_desired(applied, desired)? {
        match old {
            None => result.added.push(new.id().clone()),
            Some(old) if !same_content(old, new) => result.changed.push(Changed {
                object: new.id().clone(),
                text: unified_diff(&old.to_yaml()?, &new.to_yaml()?),
            }),
            Some(_) => {}
        }
    }
    Ok(result)
}

/// `desired` in install order, each with the applied object of its key.
fn match_desired<'a>(
    applied: &'a [Resource],
    desired: &'a [Resource],
) -> Result<Vec<(&'a Resource, Option<&'a Resource>)>, Error> {
    check_unique(desired)?;
    let mut by_key: HashMap<ObjectKey, &Resource> = HashMap::new();
    for old in applied {
        by_key.entry(old.id().key()).or_insert(old);
    }
    Ok(install_order(desired)
        .into_iter()
        .map(|new| (new, by_key.get(&new.id().key()).copied()))
        .collect())
}

fn check_unique(desired: &[Resource]) -> Result<(), Error> {
    let mut seen: HashMap<ObjectKey, &Resource> = HashMap::new();
    for resource in desired {
        if let Some(first) = seen.insert(resource.id().key(), resource) {
            return Err(Error::Duplicate {
                object: Box::new(resource.id().clone()),
                first: first.source().to_string(),
                second: resource.source().to_string(),
            });
        }
    }
    Ok(())
}

fn same_content(old: &Resource, new: &Resource) -> bool {
    old.id() == new.id() && old.object() == new.object()
}

/// The applied objects no desired object may be, in removal order.
///
/// An object is kept when a desired one has its group, kind and name and
/// either the same namespace or no namespace on one side: an unset
/// namespace becomes the release's on a cluster, which the plan cannot
/// see, and pruning an object that is in fact still desired would delete
/// what the same apply just wrote. The cost is a leftover object when a
/// chart really moves one between namespaces that way.
fn prune_set(applied: &[Resource], desired: &[Resource]) -> Vec<ObjectRef> {
    let mut wanted: HashMap<(String, &str, &str), Vec<Option<&str>>> = HashMap::new();
    for id in desired.iter().map(Resource::id) {
        let namespaces = wanted.entry(unscoped(id)).or_default();
        namespaces.push(id.namespace.as_deref());
    }
    let may_be_desired = |id: &ObjectRef| {
        wanted.get(&unscoped(id)).is_some_and(|namespaces| {
            namespaces
                .iter()
                .any(|ns| ns.is_none() || id.namespace.is_none() || *ns == id.namespace.as_deref())
        })
    };
    removal_order(
        applied
            .iter()
            .map(Resource::id)
            .filter(|id| !may_be_desired(id)),
    )
}

/// Group, kind and name.
fn unscoped(id: &ObjectRef) -> (String, &str, &str) {
    (id.group().to_string(), &id.kind, &id.name)
}

/// Stable sort by install rank: known kinds by [`INSTALL_ORDER`], then
/// unknown kinds alphabetically.
fn install_order(resources: &[Resource]) -> Vec<&Resource> {
    let mut sorted: Vec<&Resource> = resources.iter().collect();
    sorted.sort_by_key(|r| install_rank(&r.id().kind));
    sorted
}

fn install_rank(kind: &str) -> (usize, &str) {
    match INSTALL_ORDER.iter().position(|k| *k == kind) {
        Some(rank) => (rank, ""),
        None => (INSTALL_ORDER.len(), kind),
    }
}

/// Unknown kinds first (reverse alphabetical), then [`UNINSTALL_ORDER`];
/// within a kind, the reverse of the given order; each key once.
fn removal_order<'a>(refs: impl Iterator<Item = &'a ObjectRef>) -> Vec<ObjectRef> {
    let mut seen = std::collections::HashSet::new();
    let mut unique: Vec<&ObjectRef> = refs.filter(|id| seen.insert(id.key())).collect();
    unique.reverse();
    unique.sort_by_key(|id| removal_rank(&id.kind));
    unique.into_iter().cloned().collect()
}

fn removal_rank(kind: &str) -> (usize, Reverse<&str>) {
    match UNINSTALL_ORDER.iter().position(|k| *k == kind) {
        Some(rank) => (rank + 1, Reverse("")),
        None => (0, Reverse(kind)),
    }
}

/// Above this many cells the line diff skips the common-subsequence table
/// and shows the differing middle as removed then added.
const MAX_DIFF_CELLS: usize = 4_000_000;
/// Unchanged lines shown around each change.
const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Edit {
    Keep,
    Remove,
    Add,
}

/// A line diff of `old` and `new` in hunks (see [`Changed::text`]); empty
/// when they are equal.
pub(super) fn unified_diff(old: &str, new: &str) -> String {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let edits = line_edits(&old, &new);
    let mut out = String::new();
    for (start, end) in hunk_ranges(&edits) {
        write_hunk(&mut out, &edits[start..end], &edits[..start]);
    }
    out
}

/// The edit script turning `old` into `new`: common prefix and suffix
/// kept, the middle by longest common subsequence (removals before
/// additions), or replaced whole when it is too large for the table.
fn line_edits<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<(Edit, &'a str)> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (a, b) = (
        &old[prefix..old.len() - suffix],
        &new[prefix..new.len() - suffix],
    );
    let mut edits: Vec<(Edit, &str)> = old[..prefix].iter().map(|l| (Edit::Keep, *l)).collect();
    if (a.len() + 1).saturating_mul(b.len() + 1) > MAX_DIFF_CELLS {
        edits.extend(a.iter().map(|l| (Edit::Remove, *l)));
        edits.extend(b.iter().map(|l| (Edit::Add, *l)));
    } else {
        edits.extend(lcs_edits(a, b));
    }
    edits.extend(old[old.len() - suffix..].iter().map(|l| (Edit::Keep, *l)));
    edits
}

fn lcs_edits<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<(Edit, &'a str)> {
    let width = b.len() + 1;
    // table[i * width + j]: length of the longest common subsequence of a[i..] and b[j..].
    let mut table = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            table[i * width + j] = if a[i] == b[j] {
                table[(i + 1) * width + j + 1] + 1
            } else {
                table[(i + 1) * width + j].max(table[i * width + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut edits = Vec::with_capacity(a.len() + b.len());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            edits.push((Edit::Keep, a[i]));
            (i, j) = (i + 1, j + 1);
        } else if j == b.len()
            || (i < a.len() && table[(i + 1) * width + j] >= table[i * width + j + 1])
        {
            edits.push((Edit::Remove, a[i]));
            i += 1;
        } else {
            edits.push((Edit::Add, b[j]));
            j += 1;
        }
    }
    edits
}

/// Ranges of `edits` to print: each change with [`CONTEXT`] lines around
/// it, ranges that touch merged.
fn hunk_ranges(edits: &[(Edit, &str)]) -> Vec<(usize, usize)> {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for (index, _) in edits.iter().enumerate().filter(|(_, e)| e.0 != Edit::Keep) {
        let start = index.saturating_sub(CONTEXT);
        let end = (index + 1 + CONTEXT).min(edits.len());
        match ranges.last_mut() {
            Some(last) if start <= last.1 => last.1 = end,
            _ => ranges.push((start, end)),
        }
    }
    ranges
}

fn write_hunk(out: &mut String, hunk: &[(Edit, &str)], before: &[(Edit, &str)]) {
    let count = |edits: &[(Edit, &str)], skip: Edit| edits.iter().filter(|e| e.0 != skip).count();
    let old_start = count(before, Edit::Add) + 1;
    let new_start = count(before, Edit::Remove) + 1;
    out.push_str(&format!(
        "@@ -{old_start},{} +{new_start},{} @@\n",
        count(hunk, Edit::Add),
        count(hunk, Edit::Remove)
    ));
    for (edit, line) in hunk {
        let mark = match edit {
            Edit::Keep => ' ',
            Edit::Remove => '-',
            Edit::Add => '+',
        };
        out.push(mark);
        out.push_str(line);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::parse_manifests;

    /// A chart as `helm template` prints it, in file order (not install
    /// order), with one custom resource.
    const CHART: &str = "---
# Source: shop/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 1}
---
# Source: shop/templates/ingress.yaml
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
---
# Source: shop/templates/monitor.yaml
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: web}
---
# Source: shop/templates/service.yaml
apiVersion: v1
kind: Service
metadata: {name: web}
---
# Source: shop/templates/config.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: web-a}
data: {k: v}
---
# Source: shop/templates/config.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: web-b}
---
# Source: shop/templates/sa.yaml
apiVersion: v1
kind: ServiceAccount
metadata: {name: web}
---
# Source: shop/templates/namespace.yaml
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
# Source: shop/templates/alert.yaml
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: web}
";

    fn chart() -> Vec<Resource> {
        parse_manifests(CHART).unwrap()
    }

    fn names(refs: &[ObjectRef]) -> Vec<String> {
        refs.iter()
            .map(|r| format!("{}/{}", r.kind, r.name))
            .collect()
    }

    fn applied_names(plan: &ApplyPlan) -> Vec<String> {
        let refs: Vec<ObjectRef> = plan.to_apply().iter().map(|r| r.id().clone()).collect();
        names(&refs)
    }

    #[test]
    fn install_order_follows_helm_then_unknown_kinds_alphabetically() {
        let plan = plan_apply(&[], &chart()).unwrap();
        assert_eq!(
            applied_names(&plan),
            [
                "Namespace/shop",
                "ServiceAccount/web",
                "ConfigMap/web-a",
                "ConfigMap/web-b",
                "Service/web",
                "Deployment/web",
                "Ingress/web",
                "PrometheusRule/web",
                "ServiceMonitor/web",
            ]
        );
        assert!(plan.to_prune().is_empty());
        assert_eq!(plan.unchanged(), 0);
        assert!(!plan.is_noop());
    }

    /// Real `helm template` output: shuffled, the plan puts it back in
    /// Helm's install order. `helm template` prints `crds/` first, outside
    /// that order; the plan sorts a CRD among the kinds (the basics hook
    /// Job likewise, before the custom Widget).
    #[test]
    fn real_rendered_charts_come_back_in_helms_order() {
        let deps =
            parse_manifests(include_str!("../../../tests/charts/deps/expected.yaml")).unwrap();
        let mut shuffled = deps.clone();
        shuffled.reverse();
        let plan = plan_apply(&[], &shuffled).unwrap();
        assert_eq!(
            applied_names(&plan),
            [
                "Secret/one-red",
                "ConfigMap/rel-parent-lib",
                "CustomResourceDefinition/widgets.example.com",
                "Service/rel-child",
            ]
        );
        assert_eq!(plan.to_apply()[3], deps[3]);

        let basics =
            parse_manifests(include_str!("../../../tests/charts/basics/expected.yaml")).unwrap();
        let mut shuffled = basics.clone();
        shuffled.rotate_left(3);
        let plan = plan_apply(&[], &shuffled).unwrap();
        assert_eq!(
            applied_names(&plan),
            [
                "ServiceAccount/rel-basics",
                "ConfigMap/glued",
                "Service/svc",
                "Deployment/rel-basics",
                "Job/migrate",
                "Widget/widget",
            ]
        );
        assert_eq!(plan.to_apply()[3].id().namespace.as_deref(), Some("prod"));
    }

    #[test]
    fn removal_order_is_helms_uninstall_order_with_unknown_kinds_first() {
        let order = plan_remove(&chart());
        assert_eq!(
            names(&order),
            [
                "ServiceMonitor/web",
                "PrometheusRule/web",
                "Ingress/web",
                "Service/web",
                "Deployment/web",
                "ConfigMap/web-b",
                "ConfigMap/web-a",
                "ServiceAccount/web",
                "Namespace/shop",
            ]
        );
    }

    #[test]
    fn reapplying_the_same_set_is_a_noop() {
        let plan = plan_apply(&chart(), &chart()).unwrap();
        assert_eq!(plan.unchanged(), 9);
        assert!(plan.is_noop());
    }

    #[test]
    fn dropped_objects_are_pruned_in_removal_order() {
        let desired: Vec<Resource> = chart()
            .into_iter()
            .filter(|r| {
                !matches!(
                    r.id().kind.as_str(),
                    "Service" | "ConfigMap" | "ServiceMonitor"
                )
            })
            .collect();
        let plan = plan_apply(&chart(), &desired).unwrap();
        assert_eq!(
            names(plan.to_prune()),
            [
                "ServiceMonitor/web",
                "Service/web",
                "ConfigMap/web-b",
                "ConfigMap/web-a"
            ]
        );
        assert_eq!(plan.to_apply().len(), 5);
        assert_eq!(plan.unchanged(), 5);
        assert!(!plan.is_noop());
    }

    #[test]
    fn a_new_api_version_is_a_change_not_a_prune() {
        let old =
            parse_manifests("apiVersion: apps/v1beta2\nkind: Deployment\nmetadata: {name: a}\n")
                .unwrap();
        let new = parse_manifests("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n")
            .unwrap();
        let plan = plan_apply(&old, &new).unwrap();
        assert!(plan.to_prune().is_empty());
        assert_eq!(plan.unchanged(), 0);
        let diff = diff(&old, &new).unwrap();
        assert_eq!(diff.changed.len(), 1);
        assert!(
            diff.changed[0]
                .text
                .contains("-apiVersion: apps/v1beta2\n+apiVersion: apps/v1\n")
        );
    }

    #[test]
    fn duplicates_name_both_sources() {
        let text = "# Source: c/templates/a.yaml\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n---\n# Source: c/templates/b.yaml\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n";
        let desired = parse_manifests(text).unwrap();
        let err = plan_apply(&[], &desired).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Secret s (v1) is rendered twice, by document 1 (c/templates/a.yaml) and by document 2 (c/templates/b.yaml)"
        );
        assert!(matches!(diff(&[], &desired), Err(Error::Duplicate { .. })));
    }

    #[test]
    fn an_object_that_only_gains_or_loses_its_namespace_is_not_pruned() {
        let implicit = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n";
        let explicit = "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: shop}\n";
        let other = "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: other}\n";
        let [implicit, explicit, other] =
            [implicit, explicit, other].map(|text| parse_manifests(text).unwrap());
        assert!(
            plan_apply(&implicit, &explicit)
                .unwrap()
                .to_prune()
                .is_empty()
        );
        assert!(
            plan_apply(&explicit, &implicit)
                .unwrap()
                .to_prune()
                .is_empty()
        );
        let moved = plan_apply(&other, &explicit).unwrap();
        assert_eq!(moved.to_prune(), [other[0].id().clone()]);
    }

    #[test]
    fn same_name_in_other_namespaces_is_not_a_duplicate() {
        let text = "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: a}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: b}\n";
        let plan = plan_apply(&[], &parse_manifests(text).unwrap()).unwrap();
        assert_eq!(plan.to_apply().len(), 2);
    }

    #[test]
    fn diff_reports_added_changed_and_removed() {
        let applied = chart();
        let mut desired: Vec<Resource> = chart()
            .into_iter()
            .filter(|r| r.id().name != "web-b")
            .collect();
        let extra = "apiVersion: v1\nkind: Secret\nmetadata: {name: token}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n";
        let mut extra = parse_manifests(extra).unwrap();
        desired.retain(|r| r.id().kind != "Deployment");
        desired.append(&mut extra);

        let diff = diff(&applied, &desired).unwrap();
        assert_eq!(names(&diff.added), ["Secret/token"]);
        assert_eq!(names(&diff.removed), ["ConfigMap/web-b"]);
        assert_eq!(diff.changed.len(), 1);
        assert_eq!(
            diff.changed[0].text,
            "@@ -3,4 +3,4 @@\n metadata:\n   name: web\n spec:\n-  replicas: 1\n+  replicas: 3\n"
        );
        let shown = diff.to_string();
        assert!(shown.starts_with("+ Secret token (v1)\n~ Deployment web (apps/v1)\n@@"));
        assert!(shown.ends_with("- ConfigMap web-b (v1)\n"));
        assert!(!diff.is_empty());
        assert!(super::diff(&applied, &applied).unwrap().is_empty());
    }

    #[test]
    fn line_diff_keeps_three_lines_of_context_and_splits_hunks() {
        let old: String = (1..=20).map(|n| format!("line {n}\n")).collect();
        let new = old
            .replace("line 2\n", "line two\n")
            .replace("line 18\n", "");
        let text = unified_diff(&old, &new);
        assert_eq!(
            text,
            "@@ -1,5 +1,5 @@\n line 1\n-line 2\n+line two\n line 3\n line 4\n line 5\n\
             @@ -15,6 +15,5 @@\n line 15\n line 16\n line 17\n-line 18\n line 19\n line 20\n"
        );
        assert_eq!(unified_diff(&old, &old), "");
    }

    #[test]
    fn oversized_middles_are_replaced_whole() {
        let old: Vec<String> = (0..2100).map(|n| format!("a{n}")).collect();
        let new: Vec<String> = (0..2100).map(|n| format!("b{n}")).collect();
        let old: Vec<&str> = old.iter().map(String::as_str).collect();
        let new: Vec<&str> = new.iter().map(String::as_str).collect();
        let edits = line_edits(&old, &new);
        assert_eq!(edits.len(), 4200);
        assert!(edits[..2100].iter().all(|e| e.0 == Edit::Remove));
        assert!(edits[2100..].iter().all(|e| e.0 == Edit::Add));
    }
}
