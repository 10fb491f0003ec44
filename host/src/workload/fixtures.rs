//! Test helpers: the Deployment fixtures under `tests/fixtures/workload/`,
//! components that use them, and the typed round trip through `k8s-openapi`.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ComponentSpec, Transformed};

pub const ROLLING: &str = include_str!("../../../tests/fixtures/workload/rolling.yaml");
pub const RECREATE: &str = include_str!("../../../tests/fixtures/workload/recreate.yaml");
pub const APP: &str = include_str!("../../../tests/fixtures/workload/app.yaml");

/// Every document of a YAML stream, as JSON values.
pub fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|doc| Value::deserialize(doc).unwrap_or_else(|e| panic!("fixture: {e}")))
        .collect()
}

/// The single document of a YAML fixture.
pub fn manifest(yaml: &str) -> Value {
    let mut docs = documents(yaml);
    assert_eq!(docs.len(), 1, "fixture holds one document");
    docs.remove(0)
}

/// A component from YAML, as `capstan.yaml` would hold it.
pub fn component(yaml: &str) -> ComponentSpec {
    serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("component: {e}"))
}

/// The broker with a data volume on its first container and a log volume
/// on its sidecar.
pub fn broker() -> ComponentSpec {
    component(
        "
name: broker
chart: kafka
workload: { kind: Deployment, name: kafka-broker }
traits:
  volumes:
    - { container: 0, storageClassName: fast-ssd, size: 20Gi, path: /var/lib/kafka }
    - { container: 1, storageClassName: standard, size: 1Gi, path: /var/log/jmx, name: jmx-logs }
",
    )
}

/// ZooKeeper with one data volume.
pub fn zookeeper() -> ComponentSpec {
    component(
        "
name: zookeeper
chart: zookeeper
workload: { kind: Deployment, name: zookeeper }
traits:
  volumes:
    - { container: 0, storageClassName: standard, size: 5Gi, path: /data }
",
    )
}

/// Asserts that `object` deserializes into `T` and serializes back to the
/// same JSON (nulls aside, which Kubernetes reads as absent), so every field
/// we wrote is a field of `T` with the right type.
pub fn assert_typed<T: DeserializeOwned + Serialize>(object: &Value) -> T {
    let typed: T = serde_json::from_value(object.clone())
        .unwrap_or_else(|e| panic!("{}: {e}", super::pod::describe(object)));
    let back = serde_json::to_value(&typed).unwrap_or_else(|e| panic!("serialize: {e}"));
    assert_eq!(
        back,
        without_nulls(object),
        "round trip through the typed struct"
    );
    typed
}

fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// Unwraps a transform result with the error's message.
pub fn ok(result: Result<Transformed, super::Error>) -> Transformed {
    result.unwrap_or_else(|e| panic!("{e}"))
}
