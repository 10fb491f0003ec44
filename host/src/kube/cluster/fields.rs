//! Owns the app's field policy ([`FieldPolicy`]) as one object meets the
//! server: which fields an apply leaves to other managers and how the
//! drift comparison skips them, and whether it takes conflicting fields
//! back.
//!
//! An ignored field of an object that does not exist yet is sent as the
//! chart has it (the chart's value seeds it: a Deployment's first
//! `replicas`). On a live object it is left out of the body when another
//! manager holds it (so capstan never fights that manager, and never
//! resets it, since it no longer holds it either), and sent with the
//! live value when only capstan holds it (leaving it out would make the
//! server remove the field capstan alone owned, as Kubernetes documents
//! for handing `replicas` to an HPA); so the body never changes the
//! field's value. Ignored fields are left out of both sides of the
//! comparison.

use serde_json::Value;

use super::apply::{Prepared, comparable};
use super::client::FIELD_MANAGER;
use crate::kube::managed::held_by_others;
use crate::model::{Conflicts, FieldPolicy, Pointer};

/// `p` as the policy sends it against `live`, and the pointers its
/// comparison skips.
pub(super) fn with_policy(
    p: &Prepared,
    live: Option<&Value>,
    policy: &FieldPolicy,
) -> (Prepared, Vec<Pointer>) {
    let ignored: Vec<Pointer> = policy
        .ignored(&p.id.kind, p.id.namespace.as_deref(), &p.id.name)
        .into_iter()
        .cloned()
        .collect();
    let mut sent = p.clone();
    if let Some(live) = live {
        for pointer in &ignored {
            match pointer.get(live) {
                Some(_) if held_by_others(live, pointer, FIELD_MANAGER) => {
                    pointer.remove(&mut sent.body);
                }
                Some(value) => pointer.set(&mut sent.body, value.clone()),
                None => {}
            }
        }
    }
    (sent, ignored)
}

/// Whether applying takes conflicting fields back: the policy says
/// `force`, or the operator adopts an object capstan did not hold.
pub(super) fn forces(policy: &FieldPolicy, adopting: bool) -> bool {
    adopting || policy.conflicts == Conflicts::Force
}

/// [`comparable`] without the `ignored` fields.
pub(super) fn comparable_without(object: &Value, ignored: &[Pointer]) -> Value {
    let mut object = comparable(object);
    for pointer in ignored {
        pointer.remove(&mut object);
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::cluster::discovery::Kind;
    use crate::model::{IgnoreRule, ObjectRef};
    use serde_json::json;

    fn prepared() -> Prepared {
        Prepared {
            id: ObjectRef {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("shop".into()),
                name: "web".into(),
            },
            kind: Kind::core("Deployment", "deployments"),
            body: json!({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "web", "namespace": "shop"},
                         "spec": {"replicas": 2, "paused": false}}),
            install_only: false,
        }
    }

    fn policy() -> FieldPolicy {
        FieldPolicy {
            conflicts: Conflicts::Fail,
            ignore: vec![IgnoreRule {
                kind: "Deployment".into(),
                name: Some("w*".into()),
                namespace: None,
                paths: vec![Pointer::parse("/spec/replicas").unwrap()],
            }],
            ..FieldPolicy::default()
        }
    }

    fn live(managers: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "shop", "managedFields": managers},
               "spec": {"replicas": 5, "paused": false}})
    }

    #[test]
    fn an_ignored_field_is_seeded_kept_or_left_to_its_manager() {
        let p = prepared();
        // Absent: the chart's value seeds it.
        let (sent, ignored) = with_policy(&p, None, &policy());
        assert_eq!(sent.body["spec"]["replicas"], 2);
        assert_eq!(ignored.len(), 1);
        // Held by capstan alone: the live value, so nothing is reset.
        let ours = live(json!([{"manager": "capstan", "operation": "Apply",
            "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}}}]));
        let (sent, _) = with_policy(&p, Some(&ours), &policy());
        assert_eq!(sent.body["spec"]["replicas"], 5);
        // Held by the autoscaler: left out, so it stays theirs.
        let theirs = live(json!([
            {"manager": "capstan", "operation": "Apply", "fieldsV1": {"f:spec": {"f:paused": {}}}},
            {"manager": "horizontal-pod-autoscaler", "operation": "Update", "subresource": "scale",
             "fieldsV1": {"f:spec": {"f:replicas": {}}}}]));
        let (sent, ignored) = with_policy(&p, Some(&theirs), &policy());
        assert!(sent.body["spec"].get("replicas").is_none());
        assert_eq!(sent.body["spec"]["paused"], false);
        // Compared without it.
        assert_eq!(
            comparable_without(&theirs, &ignored),
            comparable_without(&p.body, &ignored)
        );
        assert_ne!(comparable(&theirs), comparable(&p.body));
        // Another name is not covered.
        let mut other = p.clone();
        other.id.name = "db".into();
        let (sent, ignored) = with_policy(&other, Some(&theirs), &policy());
        assert_eq!(sent.body["spec"]["replicas"], 2);
        assert!(ignored.is_empty());
    }

    #[test]
    fn conflicts_are_forced_by_policy_or_adoption() {
        let mut policy = policy();
        assert!(!forces(&policy, false));
        assert!(forces(&policy, true));
        policy.conflicts = Conflicts::Force;
        assert!(forces(&policy, false));
    }
}
