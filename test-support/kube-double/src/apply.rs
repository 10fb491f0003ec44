//! Server-side apply and managed fields: the field sets each manager owns
//! (`metadata.managedFields`, in the real `FieldsV1` format), conflict
//! detection between managers, and the merge of an applied configuration
//! into the live object.
//!
//! Simplifications against the real structured-merge-diff: lists of maps are
//! keyed by `name` (and `containerPort`/`port`+`protocol` for `ports`,
//! `mountPath` for `volumeMounts`, `type` for `conditions`, `uid` for
//! `ownerReferences`); every other list is atomic; maps are always granular;
//! `status` is never tracked.

use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// A path into an object, one element per step: `f:name` (a map field),
/// `k:{"name":"x"}` (a keyed list item) or `.` (the item itself).
pub type FieldPath = Vec<String>;
/// A set of owned leaf paths.
pub type FieldSet = BTreeSet<FieldPath>;

/// Whether an entry of `managedFields` was written by an apply or an update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, replace or a non-apply patch.
    Update,
}

/// One entry of `metadata.managedFields`.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedEntry {
    /// The field manager.
    pub manager: String,
    /// Apply or Update.
    pub operation: Operation,
    /// The API version the manager wrote with.
    pub api_version: String,
    /// When the manager last wrote.
    pub time: String,
    /// The fields it owns.
    pub fields: FieldSet,
}

/// A field another manager owns whose value the apply would change.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    /// The other manager.
    pub manager: String,
    /// The contested field.
    pub path: FieldPath,
}

const IGNORED_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// The key fields of a list, if its items are merged by key.
fn list_keys(field: &str, items: &[Value]) -> Option<Vec<&'static str>> {
    if items.is_empty() || !items.iter().all(Value::is_object) {
        return None;
    }
    let all_have = |k: &str| items.iter().all(|i| i.get(k).is_some_and(|v| !v.is_null()));
    let keys: Vec<&'static str> = if field == "volumeMounts" && all_have("mountPath") {
        vec!["mountPath"]
    } else if field == "conditions" && all_have("type") {
        vec!["type"]
    } else if field == "ownerReferences" && all_have("uid") {
        vec!["uid"]
    } else if all_have("name") {
        vec!["name"]
    } else if field == "ports" && all_have("containerPort") {
        vec!["containerPort", "protocol"]
    } else if field == "ports" && all_have("port") {
        vec!["port", "protocol"]
    } else {
        return None;
    };
    let mut seen = BTreeSet::new();
    for item in items {
        if !seen.insert(key_element(item, &keys)) {
            return None;
        }
    }
    Some(keys)
}

fn key_map(item: &Value, keys: &[&str]) -> Map<String, Value> {
    let mut m = Map::new();
    for k in keys {
        let v = match item.get(*k) {
            Some(v) if !v.is_null() => v.clone(),
            _ if *k == "protocol" => json!("TCP"),
            _ => Value::Null,
        };
        m.insert((*k).to_string(), v);
    }
    m
}

fn key_element(item: &Value, keys: &[&str]) -> String {
    format!("k:{}", Value::Object(key_map(item, keys)))
}

fn item_matches(item: &Value, key: &Map<String, Value>) -> bool {
    key.iter().all(|(k, want)| match item.get(k) {
        Some(v) if !v.is_null() => v == want,
        _ => k == "protocol" && want == "TCP",
    })
}

/// The leaf paths an object sets, leaving out what the server owns
/// (`apiVersion`, `kind`, `status`, server-set metadata).
pub fn field_set(object: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    if let Some(map) = object.as_object() {
        for (k, v) in map {
            if matches!(k.as_str(), "apiVersion" | "kind" | "status") || v.is_null() {
                continue;
            }
            let mut path = vec![format!("f:{k}")];
            if k == "metadata" {
                if let Some(meta) = v.as_object() {
                    for (mk, mv) in meta {
                        if IGNORED_METADATA.contains(&mk.as_str()) || mv.is_null() {
                            continue;
                        }
                        path.push(format!("f:{mk}"));
                        collect(mv, mk, &mut path, &mut out);
                        path.pop();
                    }
                }
                continue;
            }
            collect(v, k, &mut path, &mut out);
        }
    }
    out
}

fn collect(v: &Value, field: &str, path: &mut FieldPath, out: &mut FieldSet) {
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (k, child) in map {
                if child.is_null() {
                    continue;
                }
                path.push(format!("f:{k}"));
                collect(child, k, path, out);
                path.pop();
            }
        }
        Value::Array(items) => match list_keys(field, items) {
            Some(keys) => {
                for item in items {
                    path.push(key_element(item, &keys));
                    path.push(".".into());
                    out.insert(path.clone());
                    path.pop();
                    collect(item, "", path, out);
                    path.pop();
                }
            }
            None => {
                out.insert(path.clone());
            }
        },
        _ => {
            out.insert(path.clone());
        }
    }
}

/// The value at a path, if present.
pub fn get_path<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut v = object;
    for elem in path {
        v = if let Some(name) = elem.strip_prefix("f:") {
            v.as_object()?.get(name)?
        } else if let Some(key) = elem.strip_prefix("k:") {
            let key: Map<String, Value> = serde_json::from_str(key).ok()?;
            v.as_array()?.iter().find(|i| item_matches(i, &key))?
        } else if elem == "." {
            v
        } else {
            return None;
        };
    }
    Some(v)
}

/// Removes the field (or, for a path ending in `.`, the list item) at a path.
fn remove_path(object: &mut Value, path: &[String]) {
    let (parent_path, last) = match path.last().map(String::as_str) {
        Some(".") => {
            let item_path = &path[..path.len() - 1];
            match item_path.split_last() {
                Some((item, parent)) => (parent, item.as_str()),
                None => return,
            }
        }
        Some(_) => (&path[..path.len() - 1], path[path.len() - 1].as_str()),
        None => return,
    };
    let Some(parent) = get_path_mut(object, parent_path) else {
        return;
    };
    if let Some(name) = last.strip_prefix("f:") {
        if let Some(map) = parent.as_object_mut() {
            map.remove(name);
        }
    } else if let Some(key) = last.strip_prefix("k:")
        && let Ok(key) = serde_json::from_str::<Map<String, Value>>(key)
        && let Some(items) = parent.as_array_mut()
    {
        items.retain(|i| !item_matches(i, &key));
    }
}

fn get_path_mut<'a>(object: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut v = object;
    for elem in path {
        v = if let Some(name) = elem.strip_prefix("f:") {
            v.as_object_mut()?.get_mut(name)?
        } else if let Some(key) = elem.strip_prefix("k:") {
            let key: Map<String, Value> = serde_json::from_str(key).ok()?;
            v.as_array_mut()?
                .iter_mut()
                .find(|i| item_matches(i, &key))?
        } else if elem == "." {
            v
        } else {
            return None;
        };
    }
    Some(v)
}

/// `.spec.template.spec.containers[name="web"].image`, as the API server prints a path.
pub fn path_string(path: &[String]) -> String {
    let mut s = String::new();
    for elem in path {
        if let Some(name) = elem.strip_prefix("f:") {
            s.push('.');
            s.push_str(name);
        } else if let Some(key) = elem.strip_prefix("k:") {
            let parts: Vec<String> = serde_json::from_str::<Map<String, Value>>(key)
                .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
                .unwrap_or_default();
            s.push_str(&format!("[{}]", parts.join(",")));
        }
    }
    s
}

/// A field set in the `FieldsV1` JSON format.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut node = &mut root;
        for elem in path {
            let entry = node.entry(elem.clone()).or_insert_with(|| json!({}));
            match entry.as_object_mut() {
                Some(m) => node = m,
                None => break,
            }
        }
    }
    Value::Object(root)
}

/// `metadata.managedFields` for a set of entries.
pub fn managed_fields_json(entries: &[ManagedEntry]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|e| {
                json!({
                    "manager": e.manager,
                    "operation": match e.operation { Operation::Apply => "Apply", Operation::Update => "Update" },
                    "apiVersion": e.api_version,
                    "time": e.time,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": to_fields_v1(&e.fields),
                })
            })
            .collect(),
    )
}

/// Merges an applied configuration into a live value: maps field by field,
/// keyed lists item by item, anything else replaced; `null` removes a field.
pub fn merge_value(live: &mut Value, applied: &Value, field: &str) {
    match (live, applied) {
        (Value::Object(l), Value::Object(a)) => {
            for (k, av) in a {
                if av.is_null() {
                    l.remove(k);
                    continue;
                }
                match l.get_mut(k) {
                    Some(lv) => merge_value(lv, av, k),
                    None => {
                        l.insert(k.clone(), strip_nulls(av));
                    }
                }
            }
        }
        (Value::Array(l), Value::Array(a)) => {
            let keys = list_keys(field, a).filter(|keys| {
                l.iter().all(|i| i.is_object()) && list_keys(field, l).is_some_and(|k| k == *keys)
            });
            let Some(keys) = keys else {
                *l = a.iter().map(strip_nulls).collect();
                return;
            };
            let mut used = vec![false; l.len()];
            let mut out = Vec::with_capacity(a.len() + l.len());
            for ai in a {
                let key = key_map(ai, &keys);
                match l.iter().position(|li| item_matches(li, &key)) {
                    Some(i) => {
                        let mut li = l[i].clone();
                        merge_value(&mut li, ai, "");
                        used[i] = true;
                        out.push(li);
                    }
                    None => out.push(strip_nulls(ai)),
                }
            }
            for (i, li) in l.iter().enumerate() {
                if !used[i] {
                    out.push(li.clone());
                }
            }
            *l = out;
        }
        (l, a) => *l = strip_nulls(a),
    }
}

fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

fn owns_under(set: &FieldSet, prefix: &[String]) -> bool {
    set.iter()
        .any(|p| p.len() >= prefix.len() && p[..prefix.len()] == *prefix)
}

/// Server-side apply of `applied` by `manager` onto `live` (with its managers).
///
/// Returns the merged object (server metadata untouched) and the new
/// managed-fields entries.
///
/// # Errors
/// The conflicts, when another manager owns a field whose value would change
/// and `force` is false.
pub fn apply(
    live: &Value,
    entries: &[ManagedEntry],
    applied: &Value,
    manager: &str,
    api_version: &str,
    force: bool,
    now: &str,
) -> Result<(Value, Vec<ManagedEntry>), Vec<Conflict>> {
    let new_set = field_set(applied);
    let mut entries = entries.to_vec();
    let mine = |e: &ManagedEntry| e.manager == manager && e.operation == Operation::Apply;
    let old_set = entries
        .iter()
        .find(|e| mine(e))
        .map(|e| e.fields.clone())
        .unwrap_or_default();

    let mut conflicts = Vec::new();
    for path in new_set
        .iter()
        .filter(|p| p.last().is_some_and(|l| l != "."))
    {
        let Some(live_value) = get_path(live, path) else {
            continue;
        };
        if get_path(applied, path) == Some(live_value) {
            continue;
        }
        for e in entries.iter().filter(|e| e.manager != manager) {
            if e.fields.contains(path) {
                let c = Conflict {
                    manager: e.manager.clone(),
                    path: path.clone(),
                };
                if !conflicts.contains(&c) {
                    conflicts.push(c);
                }
            }
        }
    }
    if !conflicts.is_empty() {
        if !force {
            return Err(conflicts);
        }
        for e in entries.iter_mut().filter(|e| e.manager != manager) {
            for c in &conflicts {
                e.fields.remove(&c.path);
            }
        }
    }

    let others: FieldSet = entries
        .iter()
        .filter(|e| !mine(e))
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    let mut removed: Vec<&FieldPath> = old_set.difference(&new_set).collect();
    removed.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let mut object = live.clone();
    for path in &removed {
        let prefix: &[String] = if path.last().is_some_and(|l| l == ".") {
            &path[..path.len() - 1]
        } else {
            path
        };
        if owns_under(&others, prefix) || owns_under(&new_set, prefix) {
            continue;
        }
        remove_path(&mut object, path);
    }
    merge_value(&mut object, applied, "");
    // Maps left empty by a removal go too, unless someone owns them.
    for path in &removed {
        for len in (2..path.len()).rev() {
            let ancestor = &path[..len];
            if !ancestor[len - 1].starts_with("f:")
                || owns_under(&others, ancestor)
                || owns_under(&new_set, ancestor)
            {
                continue;
            }
            if get_path(&object, ancestor).is_some_and(|v| v.as_object().is_some_and(Map::is_empty))
            {
                remove_path(&mut object, ancestor);
            }
        }
    }

    match entries.iter_mut().find(|e| mine(e)) {
        Some(e) => {
            e.fields = new_set;
            e.time = now.to_string();
            e.api_version = api_version.to_string();
        }
        None => entries.push(ManagedEntry {
            manager: manager.to_string(),
            operation: Operation::Apply,
            api_version: api_version.to_string(),
            time: now.to_string(),
            fields: new_set,
        }),
    }
    entries.retain(|e| !e.fields.is_empty());
    Ok((object, entries))
}

/// Records a non-apply write (create, replace, merge patch) by `manager`:
/// it takes the fields it changed, others lose them, and fields that no
/// longer exist leave every set.
pub fn record_update(
    old: Option<&Value>,
    new: &Value,
    entries: &mut Vec<ManagedEntry>,
    manager: &str,
    api_version: &str,
    now: &str,
) {
    let new_set = field_set(new);
    let changed: FieldSet = new_set
        .iter()
        .filter(|p| {
            let old_value = old.and_then(|o| get_path(o, p));
            match p.last().map(String::as_str) {
                Some(".") => old_value.is_none(),
                _ => old_value != get_path(new, p),
            }
        })
        .cloned()
        .collect();
    for e in entries.iter_mut() {
        e.fields
            .retain(|p| new_set.contains(p) || get_path(new, p).is_some());
        if !(e.manager == manager && e.operation == Operation::Update) {
            e.fields.retain(|p| !changed.contains(p));
        }
    }
    if !changed.is_empty() {
        match entries
            .iter_mut()
            .find(|e| e.manager == manager && e.operation == Operation::Update)
        {
            Some(e) => {
                e.fields.extend(changed);
                e.time = now.to_string();
                e.api_version = api_version.to_string();
            }
            None => entries.push(ManagedEntry {
                manager: manager.to_string(),
                operation: Operation::Update,
                api_version: api_version.to_string(),
                time: now.to_string(),
                fields: changed,
            }),
        }
    }
    entries.retain(|e| !e.fields.is_empty());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deploy(replicas: i64, image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "x"}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "web", "image": image, "ports": [{"containerPort": 80}]}]}}}})
    }

    #[test]
    fn fields_v1_has_the_real_shape() {
        let v = to_fields_v1(&field_set(&deploy(1, "a")));
        assert_eq!(v["f:metadata"], json!({"f:labels": {"f:app": {}}}));
        let c = &v["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"];
        assert_eq!(c["."], json!({}));
        assert_eq!(c["f:image"], json!({}));
        assert!(c["f:ports"]["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"].is_object());
    }

    #[test]
    fn conflict_then_force_moves_ownership() {
        let (live, entries) =
            apply(&json!({}), &[], &deploy(1, "a"), "a", "apps/v1", false, "t").unwrap_or_default();
        let err = apply(&live, &entries, &deploy(3, "a"), "b", "apps/v1", false, "t");
        let conflicts = err.err().unwrap_or_default();
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0].manager, "a");
        assert_eq!(path_string(&conflicts[0].path), ".spec.replicas");
        let (obj, entries) =
            apply(&live, &entries, &deploy(3, "a"), "b", "apps/v1", true, "t").unwrap_or_default();
        assert_eq!(obj["spec"]["replicas"], 3);
        let a = entries
            .iter()
            .find(|e| e.manager == "a")
            .map(|e| e.fields.clone())
            .unwrap_or_default();
        assert!(!a.contains(&vec!["f:spec".to_string(), "f:replicas".to_string()]));
    }

    #[test]
    fn a_dropped_field_is_removed_unless_shared() {
        let (live, entries) =
            apply(&json!({}), &[], &deploy(1, "a"), "a", "apps/v1", false, "t").unwrap_or_default();
        let mut less = deploy(1, "a");
        if let Some(m) = less["metadata"].as_object_mut() {
            m.remove("labels");
        }
        let (obj, _) =
            apply(&live, &entries, &less, "a", "apps/v1", false, "t").unwrap_or_default();
        assert!(obj["metadata"].get("labels").is_none(), "{obj}");
        // The same value applied by a second manager keeps it.
        let (live2, entries2) =
            apply(&live, &entries, &deploy(1, "a"), "b", "apps/v1", false, "t").unwrap_or_default();
        let (obj, _) =
            apply(&live2, &entries2, &less, "a", "apps/v1", false, "t").unwrap_or_default();
        assert_eq!(obj["metadata"]["labels"]["app"], "x");
    }

    #[test]
    fn path_string_of_a_keyed_item() {
        let p: FieldPath = ["f:spec", "k:{\"name\":\"web\"}", "f:image"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(path_string(&p), ".spec[name=\"web\"].image");
    }
}
