//! Helm hooks, the pure part: which rendered objects are hooks of which
//! event, their delete policies, and the order Helm runs them in. A target
//! runs them ([`super::ApplyTarget::run_hooks`]); the directory target
//! does not.
//!
//! A hook is an object annotated `helm.sh/hook` with a comma-separated
//! list of events (trimmed, any case). Helm 4's order
//! (`pkg/action/hooks.go`'s `hookByWeight`, a stable sort over hooks
//! already sorted by kind): `helm.sh/hook-weight` (an integer, 0 when
//! absent or not one), then name, then kind in [`super::INSTALL_ORDER`]
//! (unknown kinds after, alphabetically), then the rendered order.
//! `helm.sh/hook-delete-policy` lists `before-hook-creation`,
//! `hook-succeeded` and `hook-failed`; without it, `before-hook-creation`
//! applies. `test` hooks (and Helm 2's `test-success`/`test-failure`) are
//! never run by apply, update or remove.
//!
//! Hook objects are not part of a release's inventory (as in Helm): they
//! are not pruned or removed with the release, and a hook object left in
//! place (no `hook-succeeded` policy) stays until its next run replaces it.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::manifest::Resource;
use super::plan::INSTALL_ORDER;

/// Annotation listing a hook's events.
pub const HOOK_ANNOTATION: &str = "helm.sh/hook";
/// Annotation with a hook's weight (an integer as a string).
pub const HOOK_WEIGHT_ANNOTATION: &str = "helm.sh/hook-weight";
/// Annotation listing a hook's delete policies.
pub const HOOK_DELETE_POLICY_ANNOTATION: &str = "helm.sh/hook-delete-policy";

/// When a hook runs, as Helm spells it in `helm.sh/hook`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// `pre-install`: before the first apply of a release's objects.
    PreInstall,
    /// `post-install`: after the first apply is ready.
    PostInstall,
    /// `pre-upgrade`: before a later apply.
    PreUpgrade,
    /// `post-upgrade`: after a later apply is ready.
    PostUpgrade,
    /// `pre-delete`: before a remove deletes anything.
    PreDelete,
    /// `post-delete`: after a remove is done.
    PostDelete,
}

impl HookEvent {
    /// Every event, in lifecycle order.
    pub const ALL: [HookEvent; 6] = [
        HookEvent::PreInstall,
        HookEvent::PostInstall,
        HookEvent::PreUpgrade,
        HookEvent::PostUpgrade,
        HookEvent::PreDelete,
        HookEvent::PostDelete,
    ];

    /// The name as in `helm.sh/hook` (`pre-install`).
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreInstall => "pre-install",
            HookEvent::PostInstall => "post-install",
            HookEvent::PreUpgrade => "pre-upgrade",
            HookEvent::PostUpgrade => "post-upgrade",
            HookEvent::PreDelete => "pre-delete",
            HookEvent::PostDelete => "post-delete",
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for HookEvent {
    type Err = String;

    /// Parses a name as Helm spells it; anything else (including `test`)
    /// is an error holding the text.
    fn from_str(text: &str) -> Result<Self, String> {
        HookEvent::ALL
            .into_iter()
            .find(|e| e.as_str() == text)
            .ok_or_else(|| text.to_string())
    }
}

/// What to do with a hook object around its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeletePolicy {
    /// Delete a previous object of the same name (and wait until it is
    /// gone) before creating the hook. The default when no policy is
    /// given.
    pub before_creation: bool,
    /// Delete the hook object once it succeeded.
    pub succeeded: bool,
    /// Delete the hook object when it failed.
    pub failed: bool,
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// Whether `resource` is a Helm hook of any kind (`test` included).
pub fn is_hook(resource: &Resource) -> bool {
    annotation(resource.object(), HOOK_ANNOTATION).is_some_and(|h| !h.trim().is_empty())
}

/// The events `resource` is a hook of (unknown names and `test` left
/// out).
pub fn hook_events(resource: &Resource) -> Vec<HookEvent> {
    annotation(resource.object(), HOOK_ANNOTATION)
        .into_iter()
        .flat_map(|h| h.split(','))
        .filter_map(|e| e.trim().to_ascii_lowercase().parse().ok())
        .collect()
}

/// `helm.sh/hook-weight`, 0 when absent or not an integer (as Helm's
/// `strconv.Atoi`: a sign is allowed, spaces are not).
pub fn hook_weight(resource: &Resource) -> i64 {
    annotation(resource.object(), HOOK_WEIGHT_ANNOTATION)
        .and_then(|w| w.parse().ok())
        .unwrap_or(0)
}

/// `helm.sh/hook-delete-policy`; `before-hook-creation` alone when the
/// annotation is absent or empty.
pub fn delete_policy(resource: &Resource) -> DeletePolicy {
    let mut policy = DeletePolicy::default();
    let mut any = false;
    for word in annotation(resource.object(), HOOK_DELETE_POLICY_ANNOTATION)
        .into_iter()
        .flat_map(|p| p.split(','))
        .map(|w| w.trim().to_ascii_lowercase())
    {
        match word.as_str() {
            "before-hook-creation" => policy.before_creation = true,
            "hook-succeeded" => policy.succeeded = true,
            "hook-failed" => policy.failed = true,
            _ => continue,
        }
        any = true;
    }
    if !any {
        policy.before_creation = true;
    }
    policy
}

/// The hooks of `event` among `hooks`, in Helm's order: weight, then
/// name, then kind ([`INSTALL_ORDER`], unknown kinds after,
/// alphabetically), then their order in `hooks`.
pub fn hooks_for(hooks: &[Resource], event: HookEvent) -> Vec<&Resource> {
    let mut chosen: Vec<&Resource> = hooks
        .iter()
        .filter(|r| hook_events(r).contains(&event))
        .collect();
    chosen.sort_by(|a, b| {
        let key = |r: &Resource| {
            let kind = r.id().kind.as_str();
            let rank = INSTALL_ORDER
                .iter()
                .position(|k| *k == kind)
                .unwrap_or(INSTALL_ORDER.len());
            (hook_weight(r), r.id().name.clone(), rank, kind.to_string())
        };
        key(a).cmp(&key(b))
    });
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::parse_manifests;

    fn hooks() -> Vec<Resource> {
        parse_manifests(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: b, annotations: {helm.sh/hook: 'pre-install,pre-upgrade', helm.sh/hook-weight: '5'}}\n---\n\
             apiVersion: batch/v1\nkind: Job\nmetadata: {name: a, annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: '5'}}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {name: z, annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: '5'}}\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata: {name: first, annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: '-3', helm.sh/hook-delete-policy: 'hook-succeeded, hook-failed'}}\n---\n\
             apiVersion: v1\nkind: Pod\nmetadata: {name: t, annotations: {helm.sh/hook: test}}\n",
        )
        .unwrap()
    }

    #[test]
    fn hooks_go_by_weight_then_name_then_kind() {
        let hooks = hooks();
        let names: Vec<&str> = hooks_for(&hooks, HookEvent::PreInstall)
            .iter()
            .map(|r| r.id().name.as_str())
            .collect();
        assert_eq!(names, ["first", "a", "b", "z"]);
        // ingress-nginx's admission hooks: one name for the ServiceAccount,
        // its RBAC and (weight 1) the Job; kind breaks the tie.
        let chain = parse_manifests(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: adm-create, annotations: {helm.sh/hook: PRE-INSTALL, helm.sh/hook-weight: '1'}}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: adm, annotations: {helm.sh/hook: ' pre-install'}}\n---\n\
             apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: adm, annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: ' 2'}}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: adm, annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: '+0'}}\n",
        )
        .unwrap();
        let order: Vec<String> = hooks_for(&chain, HookEvent::PreInstall)
            .iter()
            .map(|r| format!("{}/{}", r.id().kind, r.id().name))
            .collect();
        // ' 2' is not a number to Go's Atoi: weight 0.
        assert_eq!(
            order,
            [
                "ServiceAccount/adm",
                "ClusterRole/adm",
                "RoleBinding/adm",
                "Job/adm-create"
            ]
        );
        let names: Vec<&str> = hooks_for(&hooks, HookEvent::PreUpgrade)
            .iter()
            .map(|r| r.id().name.as_str())
            .collect();
        assert_eq!(names, ["b"]);
        assert!(hooks_for(&hooks, HookEvent::PostDelete).is_empty());
        // A test hook is a hook, but of no event capstan runs.
        assert!(is_hook(&hooks[4]));
        assert!(hook_events(&hooks[4]).is_empty());
    }

    #[test]
    fn the_default_delete_policy_is_before_hook_creation() {
        let hooks = hooks();
        assert_eq!(
            delete_policy(&hooks[0]),
            DeletePolicy {
                before_creation: true,
                succeeded: false,
                failed: false
            }
        );
        assert_eq!(
            delete_policy(&hooks[3]),
            DeletePolicy {
                before_creation: false,
                succeeded: true,
                failed: true
            }
        );
        assert_eq!(hook_weight(&hooks[3]), -3);
        assert_eq!("post-delete".parse(), Ok(HookEvent::PostDelete));
        assert_eq!("test".parse::<HookEvent>(), Err("test".to_string()));
    }
}
