//! Reading and extending a rendered workload's pod template as JSON,
//! keeping every field this code does not know.

use serde_json::{Map, Value, json};

use super::Error;

pub(super) use crate::volumes::describe_workload as describe;

/// Metadata for an object generated for `source`: `name`, and the source's
/// namespace and labels when it has them.
pub(super) fn companion_metadata(source: &Value, name: &str) -> Value {
    let mut metadata = json!({ "name": name });
    for key in ["namespace", "labels"] {
        if let Some(value) = source["metadata"].get(key).filter(|v| !v.is_null()) {
            metadata[key] = value.clone();
        }
    }
    metadata
}

/// The object at `pointer`, which must exist.
///
/// # Errors
///
/// [`Error::Malformed`] when it is missing or not an object.
pub(super) fn object_at<'a>(
    object: &'a Value,
    pointer: &'static str,
) -> Result<&'a Map<String, Value>, Error> {
    object
        .pointer(pointer)
        .and_then(Value::as_object)
        .ok_or_else(|| malformed(object, pointer, "an object"))
}

/// The pod spec (`spec.template.spec`) of a workload, to change.
///
/// # Errors
///
/// [`Error::Malformed`] when it is missing or not an object.
pub(super) fn pod_spec_mut(workload: &mut Value) -> Result<&mut Map<String, Value>, Error> {
    let error = malformed(workload, "/spec/template/spec", "an object");
    workload
        .pointer_mut("/spec/template/spec")
        .and_then(Value::as_object_mut)
        .ok_or(error)
}

/// The `Error::Malformed` for `pointer` in `object`.
pub(super) fn malformed(object: &Value, pointer: &str, expected: &'static str) -> Error {
    Error::Malformed {
        workload: describe(object),
        field: pointer.trim_start_matches('/').replace('/', "."),
        expected,
    }
}

/// The value at `key`, set to `empty` when absent or null (as Helm renders
/// an empty `volumes:`).
fn entry_or<'a>(map: &'a mut Map<String, Value>, key: &str, empty: Value) -> &'a mut Value {
    let slot = map.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = empty;
    }
    slot
}

/// The list at `key`, created empty when absent or null.
fn list_mut<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
    workload: &str,
) -> Result<&'a mut Vec<Value>, Error> {
    entry_or(map, key, Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| Error::Malformed {
            workload: workload.to_owned(),
            field: key.to_owned(),
            expected: "a list",
        })
}

fn has_name(list: &[Value], name: &str) -> bool {
    list.iter()
        .any(|entry| entry.get("name").and_then(Value::as_str) == Some(name))
}

/// Adds a pod volume (`{"name": .., <source>}`).
///
/// # Errors
///
/// [`Error::VolumeNameTaken`] when the pod already has a volume of that
/// name; [`Error::Malformed`] when `volumes` is not a list.
pub(super) fn add_pod_volume(
    pod: &mut Map<String, Value>,
    workload: &str,
    volume: Value,
) -> Result<(), Error> {
    let name = volume
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let volumes = list_mut(pod, "volumes", workload)?;
    if has_name(volumes, name) {
        return Err(volume_name_taken(workload, name));
    }
    volumes.push(volume);
    Ok(())
}

/// Whether the pod already has a volume named `name`.
pub(super) fn has_pod_volume(pod: &Map<String, Value>, name: &str) -> bool {
    pod.get("volumes")
        .and_then(Value::as_array)
        .is_some_and(|volumes| has_name(volumes, name))
}

/// The `Error::VolumeNameTaken` for `name`.
pub(super) fn volume_name_taken(workload: &str, name: &str) -> Error {
    Error::VolumeNameTaken {
        workload: workload.to_owned(),
        volume: name.to_owned(),
    }
}

/// Mounts volume `name` at `path` in container number `index`.
///
/// # Errors
///
/// [`Error::ContainerOutOfRange`] when there is no such container,
/// [`Error::MountTaken`] when the container already mounts something at
/// `path` or under the name, [`Error::Malformed`] for a non-list
/// `containers` or `volumeMounts`.
pub(super) fn add_mount(
    pod: &mut Map<String, Value>,
    workload: &str,
    index: usize,
    name: &str,
    path: &str,
) -> Result<(), Error> {
    let containers = list_mut(pod, "containers", workload)?;
    let count = containers.len();
    let container = containers
        .get_mut(index)
        .and_then(Value::as_object_mut)
        .ok_or_else(|| Error::ContainerOutOfRange {
            workload: workload.to_owned(),
            index,
            count,
        })?;
    let container_name = container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    let mounts = list_mut(container, "volumeMounts", workload)?;
    let taken = mounts.iter().any(|mount| {
        mount.get("mountPath").and_then(Value::as_str) == Some(path)
            || mount.get("name").and_then(Value::as_str) == Some(name)
    });
    if taken {
        return Err(Error::MountTaken {
            workload: workload.to_owned(),
            container: container_name,
            path: path.to_owned(),
        });
    }
    mounts.push(json!({ "name": name, "mountPath": path }));
    Ok(())
}

/// Sets `metadata.labels[key] = value`, creating the labels map.
///
/// # Errors
///
/// [`Error::Malformed`] when `metadata` or `metadata.labels` is not an object.
pub(super) fn set_label(object: &mut Value, key: &str, value: &str) -> Result<(), Error> {
    let error = malformed(object, "/metadata/labels", "an object");
    let labels = object
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .map(|metadata| entry_or(metadata, "labels", Value::Object(Map::new())))
        .and_then(Value::as_object_mut)
        .ok_or(error)?;
    labels.insert(key.to_owned(), Value::from(value));
    Ok(())
}
