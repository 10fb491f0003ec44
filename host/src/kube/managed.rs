//! Reads a live object's `managedFields`: which field manager holds which
//! field, by what operation and when. Pure; the cluster target hands it
//! what the API server answered.
//!
//! Owns three questions: which fields differ between two versions of an
//! object ([`changed_fields`]), who holds one of them ([`holders`], the
//! `FieldsV1` sets walked with the object itself, so `k:{"name":"web"}`
//! keys find their list items), and who drifted an object: the managers
//! other than capstan holding a field a re-apply would change
//! ([`drifted`]). Every string taken from the server is bounded before it
//! is kept.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::model::{DriftedField, Pointer};

/// The fields one manager holds, each as its `FieldsV1` keys from the
/// root (`["f:spec", "f:replicas"]`): what the drift watcher remembers
/// of capstan's apply and compares each later version of the object
/// with ([`lost_fields`]).
pub type FieldSet = BTreeSet<Vec<String>>;

/// The most fields a [`FieldSet`] keeps (a 1,000-key ConfigMap fits).
pub const MAX_SET: usize = 4096;

/// The most drifted fields kept for one object.
pub const MAX_DRIFTED_FIELDS: usize = 64;
/// The longest manager, operation or subresource name kept, in bytes.
const MAX_NAME: usize = 128;
/// The longest field path kept, in bytes.
const MAX_FIELD: usize = 512;

/// One step into an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A map key.
    Key(String),
    /// A list index.
    Index(usize),
}

/// One entry of `metadata.managedFields`.
#[derive(Debug, Clone)]
pub struct Entry<'v> {
    /// The manager (`kubectl`, `capstan`, `horizontal-pod-autoscaler`).
    pub manager: &'v str,
    /// `Apply` or `Update`.
    pub operation: &'v str,
    /// The subresource written through (`scale`, `status`), or empty.
    pub subresource: &'v str,
    /// When it last wrote, as the server says (RFC 3339), or empty.
    pub time: &'v str,
    /// Its `fieldsV1` set.
    pub fields: &'v Value,
}

/// The entries of `object`'s `managedFields` (those with a `FieldsV1`
/// set).
pub fn entries(object: &Value) -> Vec<Entry<'_>> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let field = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("");
            Some(Entry {
                manager: field("manager"),
                operation: field("operation"),
                subresource: field("subresource"),
                time: field("time"),
                fields: entry.get("fieldsV1")?,
            })
        })
        .collect()
}

/// Whether the `FieldsV1` set `fields` holds the field at `path` of
/// `object`. A set holding a field whole (an atomic map or list, shown as
/// `{}` part way down) holds everything under it.
pub fn holds(fields: &Value, object: &Value, path: &[Step]) -> bool {
    let mut node = fields;
    let mut at = Some(object);
    for step in path {
        let Some(map) = node.as_object() else {
            return false;
        };
        if map.is_empty() && !std::ptr::eq(node, fields) {
            return true;
        }
        let child = match step {
            Step::Key(key) => {
                let next = map.get(&format!("f:{key}"));
                at = at.and_then(|a| a.get(key));
                next
            }
            Step::Index(index) => {
                let item = at.and_then(|a| a.get(*index));
                let next = item.and_then(|item| {
                    map.iter()
                        .find(|(key, _)| list_key_matches(key, item, *index))
                        .map(|(_, child)| child)
                });
                at = item;
                next
            }
        };
        match child {
            Some(child) => node = child,
            None => return false,
        }
    }
    true
}

/// Whether a `FieldsV1` list key (`k:{"name":"web"}`, `v:"x"`, `i:0`)
/// names `item` at `index`.
fn list_key_matches(key: &str, item: &Value, index: usize) -> bool {
    if let Some(json) = key.strip_prefix("k:") {
        let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(json) else {
            return false;
        };
        return fields.iter().all(|(k, v)| item.get(k) == Some(v));
    }
    if let Some(json) = key.strip_prefix("v:") {
        return serde_json::from_str::<Value>(json).is_ok_and(|v| &v == item);
    }
    key.strip_prefix("i:")
        .and_then(|i| i.parse::<usize>().ok())
        .is_some_and(|i| i == index)
}

/// The managers holding the field at `path` of `object` (its own
/// `managedFields`), in the order the server lists them.
pub fn holders<'v>(object: &'v Value, path: &[Step]) -> Vec<Entry<'v>> {
    entries(object)
        .into_iter()
        .filter(|entry| holds(entry.fields, object, path))
        .collect()
}

/// Whether any manager but `manager` holds the field `pointer` names in
/// `object`.
pub fn held_by_others(object: &Value, pointer: &Pointer, manager: &str) -> bool {
    let path = steps(object, pointer);
    holders(object, &path)
        .iter()
        .any(|entry| entry.manager != manager)
}

/// `pointer` as steps into `object`: a segment is a list index where the
/// object has a list there.
pub fn steps(object: &Value, pointer: &Pointer) -> Vec<Step> {
    let mut at = Some(object);
    let mut path = Vec::with_capacity(pointer.segments().len());
    for segment in pointer.segments() {
        match at {
            Some(Value::Array(items)) => match segment.parse::<usize>() {
                Ok(index) => {
                    at = items.get(index);
                    path.push(Step::Index(index));
                }
                Err(_) => {
                    at = None;
                    path.push(Step::Key(segment.clone()));
                }
            },
            _ => {
                at = at.and_then(|a| a.get(segment));
                path.push(Step::Key(segment.clone()));
            }
        }
    }
    path
}

/// The fields where `old` and `new` differ, as paths to the deepest
/// differing value (a list whose length changed is one field), at most
/// `limit` of them.
pub fn changed_fields(old: &Value, new: &Value, limit: usize) -> Vec<Vec<Step>> {
    let mut found = Vec::new();
    let mut path = Vec::new();
    walk(Some(old), Some(new), &mut path, &mut found, limit);
    found
}

fn walk(
    old: Option<&Value>,
    new: Option<&Value>,
    path: &mut Vec<Step>,
    found: &mut Vec<Vec<Step>>,
    limit: usize,
) {
    if found.len() >= limit || old == new {
        return;
    }
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                path.push(Step::Key(key.clone()));
                walk(a.get(key), b.get(key), path, found, limit);
                path.pop();
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                path.push(Step::Index(index));
                walk(Some(x), Some(y), path, found, limit);
                path.pop();
            }
        }
        _ => found.push(path.clone()),
    }
}

/// `path` as kubectl and the API server print it:
/// `.spec.template.spec.containers[name="web"].image`; a list item is
/// named by its `name` when it has one, else by its index.
pub fn display(object: &Value, path: &[Step]) -> String {
    let mut text = String::new();
    let mut at = Some(object);
    for step in path {
        match step {
            Step::Key(key) => {
                text.push('.');
                text.push_str(key);
                at = at.and_then(|a| a.get(key));
            }
            Step::Index(index) => {
                let item = at.and_then(|a| a.get(*index));
                match item.and_then(|i| i.get("name")).and_then(Value::as_str) {
                    Some(name) => text.push_str(&format!("[name={name:?}]")),
                    None => text.push_str(&format!("[{index}]")),
                }
                at = item;
            }
        }
    }
    bounded(&text, MAX_FIELD)
}

fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.chars().filter(|c| !c.is_control()).collect();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut shown: String = text[..cut].chars().filter(|c| !c.is_control()).collect();
    shown.push('…');
    shown
}

/// The fields of `live` that a re-apply (`desired`, the server's forced
/// dry run, both without status and server metadata) would change and
/// that a manager other than `manager` holds: who drifted the object,
/// how and when. At most [`MAX_DRIFTED_FIELDS`]. `live_whole` is the
/// live object with its `managedFields`.
pub fn drifted(
    live_whole: &Value,
    live: &Value,
    desired: &Value,
    manager: &str,
) -> Vec<DriftedField> {
    let mut drifted = Vec::new();
    for path in changed_fields(live, desired, MAX_DRIFTED_FIELDS) {
        for entry in holders(live_whole, &path) {
            if entry.manager == manager {
                continue;
            }
            drifted.push(DriftedField {
                field: display(live, &path),
                manager: bounded(entry.manager, MAX_NAME),
                operation: bounded(entry.operation, MAX_NAME),
                subresource: (!entry.subresource.is_empty())
                    .then(|| bounded(entry.subresource, MAX_NAME)),
                time: (!entry.time.is_empty()).then(|| bounded(entry.time, MAX_NAME)),
            });
        }
    }
    drifted.truncate(MAX_DRIFTED_FIELDS);
    drifted
}

/// The fields `manager` holds in `object` by `Apply` on the object
/// itself (not a subresource), at most [`MAX_SET`].
pub fn applied_set(object: &Value, manager: &str) -> FieldSet {
    let mut set = FieldSet::new();
    for entry in entries(object)
        .into_iter()
        .filter(|e| e.manager == manager && e.operation == "Apply" && e.subresource.is_empty())
    {
        let mut path = Vec::new();
        leaves(entry.fields, &mut path, &mut set);
    }
    set
}

fn leaves(node: &Value, path: &mut Vec<String>, set: &mut FieldSet) {
    if set.len() >= MAX_SET || path.len() > 64 {
        return;
    }
    let children: Vec<(&String, &Value)> = node
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, _)| key.as_str() != ".")
        .collect();
    if children.is_empty() {
        if !path.is_empty() {
            set.insert(path.clone());
        }
        return;
    }
    for (key, child) in children {
        path.push(key.clone());
        leaves(child, path, set);
        path.pop();
    }
}

/// Whether the `FieldsV1` set `fields` holds the field at the key path
/// `keys` (or a field above it whole).
fn holds_keys(fields: &Value, keys: &[String]) -> bool {
    let mut node = fields;
    for (depth, key) in keys.iter().enumerate() {
        let Some(map) = node.as_object() else {
            return false;
        };
        if depth > 0 && map.is_empty() {
            return true;
        }
        match map.get(key) {
            Some(child) => node = child,
            None => return false,
        }
    }
    true
}

/// A key path as kubectl prints the field: `f:spec` → `.spec`,
/// `k:{"name":"web"}` → `[name="web"]`, `v:"x"` → `[="x"]`, `i:0` → `[0]`.
pub fn display_keys(keys: &[String]) -> String {
    let mut text = String::new();
    for key in keys {
        if let Some(name) = key.strip_prefix("f:") {
            text.push('.');
            text.push_str(name);
        } else if let Some(json) = key.strip_prefix("k:") {
            let fields: Vec<String> = match serde_json::from_str::<Value>(json) {
                Ok(Value::Object(map)) => map.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                _ => vec![json.to_string()],
            };
            text.push_str(&format!("[{}]", fields.join(",")));
        } else if let Some(value) = key.strip_prefix("v:") {
            text.push_str(&format!("[={value}]"));
        } else if let Some(index) = key.strip_prefix("i:") {
            text.push_str(&format!("[{index}]"));
        } else {
            text.push_str(&format!("[{key}]"));
        }
    }
    bounded(&text, MAX_FIELD)
}

/// Whether the field `shown` (as [`display_keys`] prints it) lies at or
/// under `pointer` (through map keys: a pointer through a list index
/// names no printed field).
fn under(shown: &str, pointer: &Pointer) -> bool {
    let prefix: String = pointer.segments().iter().map(|s| format!(".{s}")).collect();
    shown
        .strip_prefix(&prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
}

/// The fields of `baseline` (what `manager` held after its apply) that it
/// no longer holds in `object`, outside the `ignored` pointers: each
/// with the manager now holding it, or as removed when none does. At
/// most [`MAX_DRIFTED_FIELDS`].
pub fn lost_fields(
    baseline: &FieldSet,
    object: &Value,
    manager: &str,
    ignored: &[Pointer],
) -> Vec<DriftedField> {
    let now = applied_set(object, manager);
    let all = entries(object);
    let mut drifted = Vec::new();
    for keys in baseline.difference(&now) {
        let field = display_keys(keys);
        if ignored.iter().any(|p| under(&field, p)) {
            continue;
        }
        let holders: Vec<&Entry<'_>> = all
            .iter()
            .filter(|e| e.manager != manager && holds_keys(e.fields, keys))
            .collect();
        if holders.is_empty() {
            drifted.push(DriftedField {
                field: field.clone(),
                manager: String::new(),
                operation: "Removed".into(),
                subresource: None,
                time: None,
            });
        }
        for entry in holders {
            drifted.push(DriftedField {
                field: field.clone(),
                manager: bounded(entry.manager, MAX_NAME),
                operation: bounded(entry.operation, MAX_NAME),
                subresource: (!entry.subresource.is_empty())
                    .then(|| bounded(entry.subresource, MAX_NAME)),
                time: (!entry.time.is_empty()).then(|| bounded(entry.time, MAX_NAME)),
            });
        }
        if drifted.len() >= MAX_DRIFTED_FIELDS {
            drifted.truncate(MAX_DRIFTED_FIELDS);
            break;
        }
    }
    drifted
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A Deployment as a real API server answers it after capstan's
    /// apply, `kubectl scale` and `kubectl set image`.
    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "managedFields": [
                {"manager": "capstan", "operation": "Apply", "apiVersion": "apps/v1",
                 "time": "2026-12-07T10:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:selector": {}, "f:template": {"f:spec": {
                     "f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}}}}}}}},
                {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
                 "subresource": "scale", "time": "2026-12-07T10:05:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:replicas": {}}}},
                {"manager": "kubectl-set", "operation": "Update", "apiVersion": "apps/v1",
                 "time": "2026-12-07T10:06:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
                     "k:{\"name\":\"web\"}": {"f:image": {}}}}}}}}
            ]},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"spec": {"containers": [
                         {"name": "sidecar", "image": "s:1"},
                         {"name": "web", "image": "web:2"}]}}}
        })
    }

    #[test]
    fn holders_follow_list_keys_and_subresources() {
        let live = deployment();
        let image = [
            Step::Key("spec".into()),
            Step::Key("template".into()),
            Step::Key("spec".into()),
            Step::Key("containers".into()),
            Step::Index(1),
            Step::Key("image".into()),
        ];
        let who: Vec<&str> = holders(&live, &image).iter().map(|e| e.manager).collect();
        assert_eq!(who, ["kubectl-set"]);
        // The sidecar at index 0 is nobody's.
        let mut sidecar = image.to_vec();
        sidecar[4] = Step::Index(0);
        assert!(holders(&live, &sidecar).is_empty());
        // An atomic field held whole holds what is under it.
        let selector = [
            Step::Key("spec".into()),
            Step::Key("selector".into()),
            Step::Key("matchLabels".into()),
        ];
        let who: Vec<&str> = holders(&live, &selector)
            .iter()
            .map(|e| e.manager)
            .collect();
        assert_eq!(who, ["capstan"]);
        let replicas = Pointer::parse("/spec/replicas").unwrap();
        assert!(held_by_others(&live, &replicas, "capstan"));
        let name = Pointer::parse("/spec/template/spec/containers/1/name").unwrap();
        assert!(!held_by_others(&live, &name, "capstan"));
        assert_eq!(
            display(&live, &image),
            ".spec.template.spec.containers[name=\"web\"].image"
        );
    }

    #[test]
    fn drift_names_the_other_managers_of_each_changed_field() {
        let live = deployment();
        let mut bare = live.clone();
        bare["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        let mut desired = bare.clone();
        desired["spec"]["replicas"] = json!(1);
        desired["spec"]["template"]["spec"]["containers"][1]["image"] = json!("web:1");
        let drift = drifted(&live, &bare, &desired, "capstan");
        assert_eq!(drift.len(), 2, "{drift:?}");
        assert_eq!(drift[0].field, ".spec.replicas");
        assert_eq!(drift[0].manager, "kubectl");
        assert_eq!(drift[0].subresource.as_deref(), Some("scale"));
        assert_eq!(drift[0].time.as_deref(), Some("2026-12-07T10:05:00Z"));
        assert_eq!(
            drift[1].field,
            ".spec.template.spec.containers[name=\"web\"].image"
        );
        assert_eq!(drift[1].manager, "kubectl-set");
        assert_eq!(drift[1].operation, "Update");
        // A change no other manager holds (the chart's own) is no drift.
        let mut chart = bare.clone();
        chart["spec"]["selector"]["matchLabels"]["tier"] = json!("front");
        assert!(drifted(&live, &bare, &chart, "capstan").is_empty());
    }

    #[test]
    fn fields_capstan_lost_since_its_apply_are_drift() {
        let applied = json!({"metadata": {"managedFields": [
            {"manager": "capstan", "operation": "Apply", "fieldsV1": {
                "f:data": {"f:currency": {}, "f:locale": {}},
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"web\"}": {".": {}, "f:image": {}}}}}}}}]}});
        let baseline = applied_set(&applied, "capstan");
        assert_eq!(baseline.len(), 5, "{baseline:?}");
        assert!(lost_fields(&baseline, &applied, "capstan", &[]).is_empty());
        // kubectl patch took a key; kubectl scale took replicas; someone
        // removed the label.
        let edited = json!({"metadata": {"managedFields": [
            {"manager": "capstan", "operation": "Apply", "fieldsV1": {
                "f:data": {"f:locale": {}},
                "f:spec": {"f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"web\"}": {".": {}, "f:image": {}}}}}}}},
            {"manager": "kubectl-patch", "operation": "Update", "time": "2026-12-07T10:00:00Z",
             "fieldsV1": {"f:data": {"f:currency": {}}}},
            {"manager": "kubectl", "operation": "Update", "subresource": "scale",
             "fieldsV1": {"f:spec": {"f:replicas": {}}}}]}});
        let lost = lost_fields(&baseline, &edited, "capstan", &[]);
        let shown: Vec<String> = lost.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                ".data.currency changed by \"kubectl-patch\" (Update at 2026-12-07T10:00:00Z)",
                ".metadata.labels.app removed (no manager holds it now)",
                ".spec.replicas changed by \"kubectl\" (Update through scale)",
            ]
        );
        let replicas = Pointer::parse("/spec/replicas").unwrap();
        let labels = Pointer::parse("/metadata/labels").unwrap();
        assert_eq!(
            lost_fields(&baseline, &edited, "capstan", &[replicas, labels]).len(),
            1
        );
        assert_eq!(
            display_keys(&[
                "f:spec".into(),
                "k:{\"name\":\"web\"}".into(),
                "f:image".into()
            ]),
            ".spec[name=\"web\"].image"
        );
    }

    #[test]
    fn changes_are_bounded_and_hostile_names_cut() {
        let old = json!({"data": (0..500).map(|i| (format!("k{i}"), json!(i))).collect::<serde_json::Map<_, _>>()});
        let new = json!({"data": {}});
        assert_eq!(changed_fields(&old, &new, 64).len(), 64);
        assert_eq!(
            changed_fields(&json!({"a": [1, 2]}), &json!({"a": [1]}), 10),
            vec![vec![Step::Key("a".into())]]
        );
        let long = "m".repeat(10_000);
        assert!(bounded(&long, MAX_NAME).len() <= MAX_NAME + 3);
        assert_eq!(bounded("a\u{1b}[31mb", 100), "a[31mb");
    }
}
