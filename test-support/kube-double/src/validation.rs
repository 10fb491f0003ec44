//! What the real server refuses or rewrites on a write, as far as an applier
//! notices: unknown fields under `fieldValidation=Strict`, immutable fields
//! (StatefulSet, Job, Service, PersistentVolumeClaim, immutable ConfigMaps
//! and Secrets), and the few defaults a client sees (Secret `stringData`
//! folded into `data`, a Service's `clusterIP`, a Namespace's phase).
//! Custom resources are not validated.

use crate::discovery::ResourceInfo;
use crate::status::ApiError;
use crate::util;
use serde_json::{Value, json};

const TOP_LEVEL: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "spec",
    "status",
    "data",
    "stringData",
    "binaryData",
    "type",
    "immutable",
    "rules",
    "roleRef",
    "subjects",
    "webhooks",
    "provisioner",
    "parameters",
    "reclaimPolicy",
    "volumeBindingMode",
    "allowVolumeExpansion",
    "value",
    "globalDefault",
    "description",
    "preemptionPolicy",
    "aggregationRule",
    "secrets",
    "imagePullSecrets",
    "automountServiceAccountToken",
    "handler",
    "involvedObject",
    "reason",
    "message",
    "source",
    "count",
    "firstTimestamp",
    "lastTimestamp",
    "eventTime",
    "reportingComponent",
    "reportingInstance",
    "subsets",
    "template",
    "mountOptions",
    "allowedTopologies",
    "series",
    "action",
    "related",
    "overhead",
    "scheduling",
];

const METADATA: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// How the client asked unknown fields to be treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    /// Refuse the request.
    Strict,
    /// Accept, drop the field, and send a `Warning` header.
    Warn,
    /// Accept and drop the field.
    Ignore,
}

impl FieldValidation {
    /// Parses the `fieldValidation` query value; absent means Warn, as on the real server.
    ///
    /// # Errors
    /// A 400 for an unknown value.
    pub fn parse(v: Option<&str>) -> Result<Self, ApiError> {
        match v {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation parameter unsupported: \"{other}\"; supported values: Ignore, Warn, Strict"
            ))),
        }
    }
}

/// Unknown top-level and `metadata` fields of a built-in object, as `.foo`
/// and `.metadata.foo`; removes them from the object.
pub fn take_unknown_fields(r: &ResourceInfo, object: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    if r.custom {
        return unknown;
    }
    if let Some(map) = object.as_object_mut() {
        let bad: Vec<String> = map
            .keys()
            .filter(|k| !TOP_LEVEL.contains(&k.as_str()))
            .cloned()
            .collect();
        for k in bad {
            map.remove(&k);
            unknown.push(format!(".{k}"));
        }
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            let bad: Vec<String> = meta
                .keys()
                .filter(|k| !METADATA.contains(&k.as_str()))
                .cloned()
                .collect();
            for k in bad {
                meta.remove(&k);
                unknown.push(format!(".metadata.{k}"));
            }
        }
    }
    unknown
}

/// Refuses `metadata` fields of the wrong type (any kind, custom or not):
/// the real server cannot decode them either.
///
/// # Errors
/// A 400 naming the field.
pub fn check_metadata(object: &Value) -> Result<(), ApiError> {
    let meta = match object.get("metadata") {
        None => return Ok(()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(ApiError::bad_request(".metadata: expected map")),
    };
    for field in ["name", "namespace", "generateName"] {
        if meta
            .get(field)
            .is_some_and(|v| !v.is_string() && !v.is_null())
        {
            return Err(ApiError::bad_request(format!(
                ".metadata.{field}: expected string"
            )));
        }
    }
    for field in ["labels", "annotations"] {
        match meta.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) if m.values().all(|v| v.is_string()) => {}
            Some(_) => {
                return Err(ApiError::bad_request(format!(
                    ".metadata.{field}: expected map of strings"
                )));
            }
        }
    }
    match meta.get("finalizers") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(a)) if a.iter().all(|v| v.is_string()) => Ok(()),
        Some(_) => Err(ApiError::bad_request(
            ".metadata.finalizers: expected list of strings",
        )),
    }
}

fn forbid(r: &ResourceInfo, name: &str, field: &str, detail: &str) -> ApiError {
    ApiError::invalid(
        &r.group,
        &r.kind,
        name,
        field,
        "FieldValueForbidden",
        &format!("Forbidden: {detail}"),
    )
}

fn immutable(r: &ResourceInfo, name: &str, field: &str, value: &Value) -> ApiError {
    let shown = match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    ApiError::invalid(
        &r.group,
        &r.kind,
        name,
        field,
        "FieldValueInvalid",
        &format!("Invalid value: {shown}: field is immutable"),
    )
}

fn without(v: &Value, fields: &[&str]) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        for f in fields {
            m.remove(*f);
        }
    }
    v
}

/// Refuses changes to immutable fields of an existing object (422 Invalid).
///
/// # Errors
/// The Invalid status the real server gives.
pub fn check_update(r: &ResourceInfo, old: &Value, new: &Value) -> Result<(), ApiError> {
    if r.custom {
        return Ok(());
    }
    let name = new["metadata"]["name"].as_str().unwrap_or_default();
    match (r.group.as_str(), r.kind.as_str()) {
        ("apps", "StatefulSet") => {
            let mutable = [
                "replicas",
                "template",
                "updateStrategy",
                "ordinals",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
                "revisionHistoryLimit",
            ];
            if without(&old["spec"], &mutable) != without(&new["spec"], &mutable) {
                return Err(forbid(
                    r,
                    name,
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                ));
            }
        }
        ("batch", "Job") => {
            for field in ["template", "selector"] {
                if old["spec"][field] != new["spec"][field] {
                    return Err(immutable(
                        r,
                        name,
                        &format!("spec.{field}"),
                        &new["spec"][field],
                    ));
                }
            }
        }
        ("", "Service") => {
            let (o, n) = (&old["spec"]["clusterIP"], &new["spec"]["clusterIP"]);
            if o.as_str().is_some_and(|s| !s.is_empty()) && o != n {
                return Err(immutable(r, name, "spec.clusterIP", n));
            }
        }
        ("", "PersistentVolumeClaim") => {
            let strip = |v: &Value| {
                let mut v = v.clone();
                if let Some(res) = v.get_mut("resources").and_then(Value::as_object_mut) {
                    res.remove("requests");
                    if res.is_empty()
                        && let Some(m) = v.as_object_mut()
                    {
                        m.remove("resources");
                    }
                }
                without(&v, &["volumeName", "volumeAttributesClassName"])
            };
            if strip(&old["spec"]) != strip(&new["spec"]) {
                return Err(forbid(
                    r,
                    name,
                    "spec",
                    "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
                ));
            }
        }
        ("", "ConfigMap") | ("", "Secret") if old["immutable"].as_bool() == Some(true) => {
            if new["immutable"] != old["immutable"] {
                return Err(forbid(
                    r,
                    name,
                    "immutable",
                    "field is immutable when `immutable` is set",
                ));
            }
            for field in ["data", "binaryData"] {
                if old[field] != new[field] {
                    return Err(forbid(
                        r,
                        name,
                        field,
                        "field is immutable when `immutable` is set",
                    ));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Server-side defaults a client sees. `seq` picks a Service's cluster IP.
pub fn normalize(r: &ResourceInfo, object: &mut Value, old: Option<&Value>, seq: u64) {
    if r.custom {
        return;
    }
    match (r.group.as_str(), r.kind.as_str()) {
        ("", "Secret") => {
            let Some(map) = object.as_object_mut() else {
                return;
            };
            if let Some(Value::Object(string_data)) = map.remove("stringData") {
                let data = map.entry("data").or_insert_with(|| json!({}));
                if let Some(data) = data.as_object_mut() {
                    for (k, v) in string_data {
                        let text = v
                            .as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| v.to_string());
                        data.insert(k, json!(util::base64(text.as_bytes())));
                    }
                }
            }
            if !map.contains_key("type") {
                map.insert("type".into(), json!("Opaque"));
            }
        }
        ("", "Service") => {
            let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
                return;
            };
            if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
                return;
            }
            let present = spec
                .get("clusterIP")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty());
            if !present {
                let ip = old
                    .and_then(|o| o["spec"]["clusterIP"].as_str())
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("10.96.{}.{}", (seq / 250) % 250, seq % 250 + 2));
                spec.insert("clusterIP".into(), json!(ip));
                spec.insert("clusterIPs".into(), json!([ip]));
            }
            if !spec.contains_key("type") {
                spec.insert("type".into(), json!("ClusterIP"));
            }
        }
        ("", "Namespace") => {
            let Some(map) = object.as_object_mut() else {
                return;
            };
            let terminating = old.is_some_and(|o| o["status"]["phase"] == "Terminating");
            map.insert(
                "status".into(),
                json!({"phase": if terminating { "Terminating" } else { "Active" }}),
            );
            if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
                let name = meta.get("name").cloned().unwrap_or(Value::Null);
                let labels = meta.entry("labels").or_insert_with(|| json!({}));
                if let Some(labels) = labels.as_object_mut() {
                    labels.insert("kubernetes.io/metadata.name".into(), name);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::builtins;

    fn res(kind: &str) -> ResourceInfo {
        builtins()
            .iter()
            .find(|r| r.kind == kind)
            .cloned()
            .unwrap_or_else(|| builtins()[0].clone())
    }

    #[test]
    fn unknown_fields_are_named_and_dropped() {
        let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "bogus": 1}, "foo": 2});
        let unknown = take_unknown_fields(&res("ConfigMap"), &mut o);
        assert_eq!(unknown, vec![".foo", ".metadata.bogus"]);
        assert!(o.get("foo").is_none());
    }

    #[test]
    fn statefulset_selector_is_immutable_but_replicas_are_not() {
        let r = res("StatefulSet");
        let old = json!({"metadata": {"name": "s"}, "spec": {"replicas": 1, "serviceName": "a"}});
        let ok = json!({"metadata": {"name": "s"}, "spec": {"replicas": 3, "serviceName": "a"}});
        let bad = json!({"metadata": {"name": "s"}, "spec": {"replicas": 1, "serviceName": "b"}});
        assert!(check_update(&r, &old, &ok).is_ok());
        let err = check_update(&r, &old, &bad)
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(
            err.starts_with(
                "StatefulSet.apps \"s\" is invalid: spec: Forbidden: updates to statefulset spec"
            ),
            "{err}"
        );
    }

    #[test]
    fn secret_string_data_becomes_data() {
        let mut o = json!({"metadata": {"name": "s"}, "stringData": {"k": "hello"}});
        normalize(&res("Secret"), &mut o, None, 0);
        assert_eq!(o["data"]["k"], "aGVsbG8=");
        assert!(o.get("stringData").is_none());
    }
}
