//! A diff against the live cluster ([`super::ApplyTarget::diff_live`]):
//! what an apply would change, as the server itself would make it (a
//! server-side dry run compared with the live object), with Secret values
//! masked. Pure: the comparison and masking; the cluster target does the
//! requests.

use serde_json::Value;

use super::plan::unified_diff;
use crate::model::ObjectRef;

/// What is shown instead of a Secret value.
pub const MASK: &str = "***";
/// What is shown instead of a Secret value that the apply would change.
pub const MASK_CHANGED: &str = "*** (changed)";

/// What an apply would do to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveChange {
    /// The object does not exist; it would be created.
    Create,
    /// The object exists and the dry run differs from it.
    Update,
    /// The release applied it before and no longer renders it; it would
    /// be pruned (unless protected, see the cluster target's prune rules).
    Prune,
}

/// One object an apply would change (unchanged objects are not listed).
#[derive(Debug, Clone, PartialEq)]
pub struct LiveDiff {
    /// The object, with the namespace it really goes to.
    pub object: ObjectRef,
    /// What would happen to it.
    pub change: LiveChange,
    /// Hunks of a unified diff of the YAML, live first and desired second
    /// (see [`super::Changed::text`]); for a create every line is added,
    /// for a prune removed. Status and server-set metadata are left out;
    /// Secret `data`/`stringData` values read [`MASK`], or
    /// [`MASK_CHANGED`] on the desired side when the value changes.
    pub text: String,
    /// For a Secret: the keys of `data`/`stringData` whose values would
    /// change (added, removed or different), sorted. Empty otherwise.
    pub secret_changes: Vec<String>,
    /// For an update: the fields another manager changed (who, how,
    /// when, from the live object's `managedFields`) that the apply
    /// would take back. Empty when the change is the chart's own.
    pub drift: Vec<crate::model::DriftedField>,
}

fn is_secret(object: &Value) -> bool {
    object.get("kind").and_then(Value::as_str) == Some("Secret")
        && object.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

/// `live` and `desired` (each may be absent) with Secret values masked,
/// and the keys whose values differ. Objects that are not Secrets come
/// back as they are.
pub fn mask_secrets(
    live: Option<&Value>,
    desired: Option<&Value>,
) -> (Option<Value>, Option<Value>, Vec<String>) {
    let secret = live.or(desired).is_some_and(is_secret);
    let (mut live, mut desired) = (live.cloned(), desired.cloned());
    if !secret {
        return (live, desired, Vec::new());
    }
    let mut changed = Vec::new();
    for field in ["data", "stringData"] {
        let old = live.as_ref().and_then(|l| l.get(field)).cloned();
        let new = desired.as_ref().and_then(|d| d.get(field)).cloned();
        let value = |map: &Option<Value>, key: &str| {
            map.as_ref()
                .and_then(|m| m.get(key))
                .cloned()
                .unwrap_or(Value::Null)
        };
        let mut keys: Vec<String> = [&old, &new]
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .flat_map(|m| m.keys().cloned())
            .collect();
        keys.sort();
        keys.dedup();
        for key in &keys {
            let differs = value(&old, key) != value(&new, key);
            if differs && !changed.contains(key) {
                changed.push(key.clone());
            }
            if let Some(slot) = live
                .as_mut()
                .and_then(|l| l.get_mut(field))
                .and_then(|m| m.get_mut(key.as_str()))
            {
                *slot = Value::String(MASK.into());
            }
            if let Some(slot) = desired
                .as_mut()
                .and_then(|d| d.get_mut(field))
                .and_then(|m| m.get_mut(key.as_str()))
            {
                let mask = if differs { MASK_CHANGED } else { MASK };
                *slot = Value::String(mask.into());
            }
        }
    }
    changed.sort();
    (live, desired, changed)
}

/// The [`LiveDiff`] of one object from its live state and what the apply
/// would make of it (both already without status and server metadata);
/// `None` when they are equal.
pub fn live_diff(
    object: ObjectRef,
    live: Option<&Value>,
    desired: Option<&Value>,
) -> Option<LiveDiff> {
    if live == desired {
        return None;
    }
    let change = match (live, desired) {
        (None, _) => LiveChange::Create,
        (Some(_), None) => LiveChange::Prune,
        (Some(_), Some(_)) => LiveChange::Update,
    };
    let (live, desired, secret_changes) = mask_secrets(live, desired);
    let yaml = |v: &Option<Value>| v.as_ref().map(yaml_text).unwrap_or_default();
    Some(LiveDiff {
        object,
        change,
        text: unified_diff(&yaml(&live), &yaml(&desired)),
        secret_changes,
        drift: Vec::new(),
    })
}

/// YAML text of `value` for diffing (keys in the value's order; a value
/// that does not serialize shows as its JSON).
fn yaml_text(value: &Value) -> String {
    let resource = super::Resource::from_value(value.clone(), "live");
    match resource.and_then(|r| r.to_yaml()) {
        Ok(text) => text,
        Err(_) => serde_json::to_string_pretty(value).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret_ref() -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            namespace: Some("shop".into()),
            name: "creds".into(),
        }
    }

    #[test]
    fn secret_values_are_masked_and_changes_named() {
        let live = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
                          "data": {"user": "YWRtaW4=", "password": "b2xk"}});
        let desired = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
                             "data": {"user": "YWRtaW4=", "password": "bmV3", "token": "dA=="}});
        let diff = live_diff(secret_ref(), Some(&live), Some(&desired)).unwrap();
        assert_eq!(diff.change, LiveChange::Update);
        assert_eq!(diff.secret_changes, ["password", "token"]);
        assert!(
            !diff.text.contains("b2xk") && !diff.text.contains("bmV3"),
            "{}",
            diff.text
        );
        assert!(!diff.text.contains("YWRtaW4="), "{}", diff.text);
        assert!(diff.text.contains("-  password: '***'"), "{}", diff.text);
        assert!(
            diff.text.contains("+  password: '*** (changed)'"),
            "{}",
            diff.text
        );
        assert!(
            diff.text.contains("+  token: '*** (changed)'"),
            "{}",
            diff.text
        );
        assert_eq!(live_diff(secret_ref(), Some(&live), Some(&live)), None);
    }

    #[test]
    fn creates_and_prunes_are_whole_objects() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                        "data": {"k": "v"}});
        let id = ObjectRef {
            kind: "ConfigMap".into(),
            name: "c".into(),
            ..secret_ref()
        };
        let create = live_diff(id.clone(), None, Some(&cm)).unwrap();
        assert_eq!(create.change, LiveChange::Create);
        assert!(create.text.lines().skip(1).all(|l| l.starts_with('+')));
        let prune = live_diff(id, Some(&cm), None).unwrap();
        assert_eq!(prune.change, LiveChange::Prune);
        assert!(prune.text.contains("-  k: v"), "{}", prune.text);
        assert!(prune.secret_changes.is_empty());
    }
}
