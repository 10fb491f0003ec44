//! Owns the operator's action policy as one pure decision: [`check`]
//! takes an action a hook asked for, what the host resolved about its
//! object through the target ([`Resolved`]) and the app's [`Scope`], and
//! admits it or names the rule that refuses it. It reads and writes
//! nothing, so every action of an answer is decided before the first
//! write, and the table of rules in the book is this function's.
//!
//! The rules, as errors name them:
//! - `object`: an ensured object has an `apiVersion`, a `kind` and a name
//!   the target serves;
//! - `reserved-metadata`: no ensured object carries capstan's own labels
//!   or annotations (`capstan.dev`, `*.capstan.dev`), Helm's release
//!   annotations (`meta.helm.sh`), or a Secret type of theirs — what
//!   marks ownership, generated secrets and mirrors is the host's alone;
//! - `app-namespaces`: objects are written only in the app's charts'
//!   namespaces and those the policy adds;
//! - `no-cluster-scoped`, `no-rbac`: unless the policy allows them;
//! - `pod-security`: the Pods and Pod templates of ensured objects meet
//!   the policy's Pod Security Standards level (`baseline` by default);
//! - `mirror-source`: a mirror copies from the app's namespaces, or from
//!   a source the policy lists;
//! - `owned-only`: `delete` and `restart` reach only objects one of the
//!   app's releases holds;
//! - `restartable`: `restart` names a Deployment, StatefulSet or
//!   DaemonSet;
//! - `known-chart`, `stored-user-overrides`, `override-size`: an override
//!   patch names a chart of the version (or of the version an update
//!   replaces), in an operation that uses the stored user overrides, and
//!   the patch and the overrides it leaves stay under the size limit;
//! - `read-policy`: `observe` reads only what `lookup` may (the lookup
//!   policy's namespaces and kinds);
//! - `max-owned`: at most the policy's number of owned objects and bytes
//!   ([`check_owned`]);
//! - `reapply-only`: an `evaluate-reapply` answer asks for a re-apply and
//!   nothing else ([`reapply_asked`]).

use crate::model::{Action, ActionPolicy, LookupPolicy, ObjectRef, PodSecurity};

use super::pod_security;

/// The largest user overrides of one chart an override patch may leave.
pub const MAX_PATCHED_OVERRIDES_BYTES: usize = 1 << 20;

/// The kinds a `restart` action may name (in `apps/v1`).
pub const RESTARTABLE: [&str; 3] = ["Deployment", "StatefulSet", "DaemonSet"];

/// The app an answer acts for: its namespaces and the operator's
/// policies.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The app's name.
    pub app: &'a str,
    /// The namespaces of the app's charts, in chart order; an ensured
    /// namespaced object without a namespace goes into the first.
    pub namespaces: &'a [String],
    /// The operator's action policy for the app.
    pub policy: &'a ActionPolicy,
    /// The operator's read (lookup) policy.
    pub read: &'a LookupPolicy,
}

impl Scope<'_> {
    fn own(&self, namespace: &str) -> bool {
        self.namespaces.iter().any(|n| n == namespace)
    }

    fn may_write_in(&self, namespace: &str) -> bool {
        self.own(namespace) || self.policy.may_write_in(namespace)
    }

    fn own_list(&self) -> String {
        self.namespaces.join(", ")
    }
}

/// What the host read about an action's object before the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// Nothing needed reading (a mirror, a `request-reapply`).
    Nothing,
    /// `ensure` and `observe`: whether the target serves the kind
    /// namespaced (`Some(true)`), cluster-scoped (`Some(false)`), or not
    /// at all (`None`).
    Kind(Option<bool>),
    /// `delete` and `restart`: the release of the app that holds the
    /// object (`APP/CHART`), if one does.
    Holder(Option<String>),
    /// `patch-overrides`: whether the chart is one of the version's (or
    /// of the version an update replaces), whether the operation uses
    /// the stored user overrides, and the size of the overrides the
    /// patch leaves (after every earlier patch of the answer).
    Patch {
        /// The chart is known.
        known: bool,
        /// The operation uses the stored user overrides.
        stored_user: bool,
        /// The patched overrides' size as JSON.
        patched_bytes: usize,
    },
}

/// An admitted action, with what the decision settled.
#[derive(Debug, Clone, PartialEq)]
pub enum Admitted {
    /// An `ensure`: the object to apply, its namespace filled in when the
    /// kind is namespaced and the plugin named none.
    Ensure(serde_json::Value),
    /// Any other action, as asked.
    Take,
}

/// A refused action: the rule and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The rule, as the docs and errors name it.
    pub rule: &'static str,
    /// What broke it.
    pub reason: String,
}

fn refuse<T>(rule: &'static str, reason: String) -> Result<T, Refusal> {
    Err(Refusal { rule, reason })
}

/// What an `evaluate-reapply` answer asks: the reason of its first
/// `request-reapply`, or `None`.
///
/// # Errors
/// Rule `reapply-only`, naming the first action that is not a
/// `request-reapply` (with its index): the hook is asked whether to
/// re-apply, never to act.
pub fn reapply_asked(actions: &[Action]) -> Result<Option<&str>, (usize, Refusal)> {
    let mut asked = None;
    for (index, action) in actions.iter().enumerate() {
        match action {
            Action::RequestReapply(reason) => {
                asked.get_or_insert(reason.as_str());
            }
            _ => {
                return Err((
                    index,
                    Refusal {
                        rule: "reapply-only",
                        reason: "evaluate-reapply may only ask for a re-apply".into(),
                    },
                ));
            }
        }
    }
    Ok(asked)
}

/// Decides one action.
///
/// # Errors
/// The [`Refusal`] naming the rule the action breaks.
pub fn check(action: &Action, resolved: &Resolved, scope: &Scope<'_>) -> Result<Admitted, Refusal> {
    match action {
        Action::Ensure(object) => ensure(object, resolved, scope),
        Action::Mirror(m) => {
            if !scope.own(&m.from_namespace)
                && !scope
                    .policy
                    .may_mirror_from(&m.from_namespace, &m.from_name)
            {
                return refuse(
                    "mirror-source",
                    format!(
                        "{}/{} is outside the app's namespaces and not in the policy's mirrorFrom",
                        m.from_namespace, m.from_name
                    ),
                );
            }
            if !scope.may_write_in(&m.to_namespace) {
                return refuse(
                    "app-namespaces",
                    format!(
                        "namespace {} is not one of the app's ({})",
                        m.to_namespace,
                        scope.own_list()
                    ),
                );
            }
            Ok(Admitted::Take)
        }
        Action::Delete(object) => {
            held(object, resolved, scope)?;
            Ok(Admitted::Take)
        }
        Action::Restart(object) => {
            if object.api_version != "apps/v1" || !RESTARTABLE.contains(&object.kind.as_str()) {
                return refuse(
                    "restartable",
                    format!(
                        "only a Deployment, StatefulSet or DaemonSet (apps/v1) restarts, not {} ({})",
                        object.kind, object.api_version
                    ),
                );
            }
            held(object, resolved, scope)?;
            Ok(Admitted::Take)
        }
        Action::PatchOverrides { chart, patch } => {
            let Resolved::Patch {
                known,
                stored_user,
                patched_bytes,
            } = resolved
            else {
                return refuse("known-chart", format!("chart {chart} was not resolved"));
            };
            if !known {
                return refuse("known-chart", format!("the version has no chart {chart}"));
            }
            if !stored_user {
                return refuse(
                    "stored-user-overrides",
                    "this operation does not use the stored user overrides".into(),
                );
            }
            let max = MAX_PATCHED_OVERRIDES_BYTES;
            if patch.to_string().len() > max {
                return refuse(
                    "override-size",
                    format!("the patch is over {} KiB", max >> 10),
                );
            }
            if *patched_bytes > max {
                return refuse(
                    "override-size",
                    format!(
                        "the patched overrides of chart {chart} would be {patched_bytes} bytes, over {} KiB",
                        max >> 10
                    ),
                );
            }
            Ok(Admitted::Take)
        }
        Action::Observe(object) => {
            observe(object, resolved, scope)?;
            Ok(Admitted::Take)
        }
        Action::RequestReapply(_) => Ok(Admitted::Take),
    }
}

/// At most the policy's number of owned objects and bytes once the
/// answer's ensures are added to what the operation already ensured.
///
/// # Errors
/// A `max-owned` refusal saying which bound and by how much.
pub fn check_owned(
    policy: &ActionPolicy,
    objects: usize,
    bytes: usize,
    asked: usize,
) -> Result<(), Refusal> {
    if objects > policy.max_owned {
        return refuse(
            "max-owned",
            format!(
                "{objects} owned objects would pass the policy's {} (the answer asks for {asked})",
                policy.max_owned
            ),
        );
    }
    if bytes > policy.max_owned_bytes {
        return refuse(
            "max-owned",
            format!(
                "the owned objects would hold {bytes} bytes, more than the policy's maxOwnedBytes {}",
                policy.max_owned_bytes
            ),
        );
    }
    Ok(())
}

fn ensure(
    object: &serde_json::Value,
    resolved: &Resolved,
    scope: &Scope<'_>,
) -> Result<Admitted, Refusal> {
    let text = |pointer: &str| object.pointer(pointer).and_then(serde_json::Value::as_str);
    let (Some(api_version), Some(kind)) = (text("/apiVersion"), text("/kind")) else {
        return refuse("object", "the object has no apiVersion or kind".into());
    };
    reserved(object)?;
    if api_version.starts_with("rbac.authorization.k8s.io/") && !scope.policy.rbac {
        return refuse("no-rbac", format!("{kind} is an RBAC object"));
    }
    let mut object = object.clone();
    match resolved {
        Resolved::Kind(None) => {
            return refuse(
                "object",
                format!("the target serves no {kind} in {api_version}"),
            );
        }
        Resolved::Kind(Some(false)) if !scope.policy.cluster_scoped => {
            return refuse("no-cluster-scoped", format!("{kind} is cluster-scoped"));
        }
        Resolved::Kind(Some(true)) => {
            let namespace = match text("/metadata/namespace") {
                Some(ns) => ns.to_string(),
                None => {
                    let ns = scope.namespaces.first().cloned().unwrap_or_default();
                    if let Some(meta) = object
                        .get_mut("metadata")
                        .and_then(serde_json::Value::as_object_mut)
                    {
                        meta.insert("namespace".into(), ns.clone().into());
                    }
                    ns
                }
            };
            if !scope.may_write_in(&namespace) {
                return refuse(
                    "app-namespaces",
                    format!(
                        "namespace {namespace} is not one of the app's ({})",
                        scope.own_list()
                    ),
                );
            }
        }
        _ => {}
    }
    if scope.policy.pod_security != PodSecurity::Privileged {
        let broken = pod_security::check(&object, scope.policy.pod_security);
        if let Some(first) = broken.first() {
            let more = match broken.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            return refuse(
                "pod-security",
                format!(
                    "{kind} breaks the {} Pod Security Standard: {first}{more}",
                    scope.policy.pod_security
                ),
            );
        }
    }
    Ok(Admitted::Ensure(object))
}

/// Whether a label or annotation key is capstan's or Helm's own.
pub fn is_reserved_key(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        return false;
    };
    let prefix = prefix.to_ascii_lowercase();
    prefix == "capstan.dev" || prefix.ends_with(".capstan.dev") || prefix == "meta.helm.sh"
}

fn reserved(object: &serde_json::Value) -> Result<(), Refusal> {
    for field in ["labels", "annotations"] {
        let keys = object
            .pointer(&format!("/metadata/{field}"))
            .and_then(serde_json::Value::as_object);
        if let Some(key) = keys.and_then(|m| m.keys().find(|k| is_reserved_key(k))) {
            return refuse(
                "reserved-metadata",
                format!(
                    "the {} {} is the host's own (ownership, generated secrets and mirrors are marked by capstan alone)",
                    &field[..field.len() - 1],
                    super::bounds::preview(key)
                ),
            );
        }
    }
    let secret_type = object.get("type").and_then(serde_json::Value::as_str);
    if object.get("kind").and_then(serde_json::Value::as_str) == Some("Secret")
        && let Some(t) = secret_type
        && (t.to_ascii_lowercase().starts_with("capstan.dev/")
            || t.to_ascii_lowercase().starts_with("helm.sh/"))
    {
        return refuse(
            "reserved-metadata",
            format!(
                "the Secret type {} is a release record's",
                super::bounds::preview(t)
            ),
        );
    }
    Ok(())
}

fn held(object: &ObjectRef, resolved: &Resolved, scope: &Scope<'_>) -> Result<(), Refusal> {
    match resolved {
        Resolved::Holder(Some(_)) => Ok(()),
        _ => refuse(
            "owned-only",
            format!("no release of app {} holds {object}", scope.app),
        ),
    }
}

fn observe(object: &ObjectRef, resolved: &Resolved, scope: &Scope<'_>) -> Result<(), Refusal> {
    let namespaced = match resolved {
        Resolved::Kind(Some(namespaced)) => *namespaced,
        _ => {
            return refuse(
                "read-policy",
                format!(
                    "the target serves no {} in {}",
                    object.kind, object.api_version
                ),
            );
        }
    };
    let namespace = object.namespace.as_deref().unwrap_or_default();
    let allowed = match namespaced {
        false => scope.read.cluster_scoped,
        true if namespace.is_empty() => false,
        true => {
            scope.read.any_namespace()
                || scope.own(namespace)
                || scope.read.namespaces.contains(namespace)
        }
    };
    if allowed {
        return Ok(());
    }
    let why = match (namespaced, namespace.is_empty()) {
        (false, _) => format!("{} is cluster-scoped", object.kind),
        (true, true) => format!(
            "{} is namespaced and the request names no namespace",
            object.kind
        ),
        (true, false) => format!(
            "namespace {namespace} is not the app's ({})",
            scope.own_list()
        ),
    };
    refuse(
        "read-policy",
        format!(
            "{why}; observe reads what lookup may (capstan serve --lookup-namespace and --lookup-cluster-scoped set the policy)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluate_reapply_may_only_ask_for_a_reapply() {
        let ask = |reason: &str| Action::RequestReapply(reason.to_owned());
        assert_eq!(reapply_asked(&[]), Ok(None));
        assert_eq!(reapply_asked(&[ask("a"), ask("b")]), Ok(Some("a")));
        let restart = Action::Restart(ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("ns".into()),
            name: "web".into(),
        });
        let (index, refusal) = reapply_asked(&[ask("a"), restart]).unwrap_err();
        assert_eq!(index, 1);
        assert_eq!(refusal.rule, "reapply-only");
    }
}
