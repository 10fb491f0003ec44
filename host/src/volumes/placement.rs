//! Which node a workload using local volumes must run on.

use serde_json::{Map, Value};

use super::{Error, HOSTNAME_LABEL, LocalVolume};

/// The node a workload must run on to reach `component_volumes`.
///
/// Returns `None` when there are no volumes (no constraint to add), else
/// the one node every volume lives on. `pinned_node` is the node the
/// workload already asks for (see [`pinned_node`]).
///
/// # Errors
///
/// [`Error::VolumesOnTwoNodes`] when two volumes live on different nodes,
/// [`Error::PinnedElsewhere`] when the workload is pinned to another node
/// than its volumes; both name the two nodes.
pub fn place(
    component_volumes: &[&LocalVolume],
    pinned_node: Option<&str>,
) -> Result<Option<String>, Error> {
    let Some((first, rest)) = component_volumes.split_first() else {
        return Ok(None);
    };
    if let Some(other) = rest.iter().find(|v| v.node() != first.node()) {
        return Err(Error::VolumesOnTwoNodes {
            first: first.name().to_owned(),
            first_node: first.node().to_owned(),
            second: other.name().to_owned(),
            second_node: other.node().to_owned(),
        });
    }
    match pinned_node {
        Some(pinned) if pinned != first.node() => Err(Error::PinnedElsewhere {
            volume: first.name().to_owned(),
            volume_node: first.node().to_owned(),
            pinned_node: pinned.to_owned(),
        }),
        _ => Ok(Some(first.node().to_owned())),
    }
}

/// The node a workload's pod template is pinned to, by `nodeName` or by a
/// `nodeSelector` on `kubernetes.io/hostname`; `None` when neither is set.
///
/// Node affinity is not read: it can name several nodes, and the scheduler
/// already intersects it with the volume's own node affinity.
///
/// # Errors
///
/// [`Error::NoPodTemplate`] when `workload` has no `spec.template.spec`
/// object; [`Error::ConflictingPins`] when `nodeName` and the selector name
/// different nodes.
pub fn pinned_node(workload: &Value) -> Result<Option<String>, Error> {
    let pod = workload
        .pointer("/spec/template/spec")
        .and_then(Value::as_object)
        .ok_or_else(|| no_pod_template(workload))?;
    let node_name = pod.get("nodeName").and_then(Value::as_str);
    let selected = pod
        .get("nodeSelector")
        .and_then(|s| s.get(HOSTNAME_LABEL))
        .and_then(Value::as_str);
    match (node_name, selected) {
        (Some(a), Some(b)) if a != b => Err(Error::ConflictingPins {
            node_name: a.to_owned(),
            node_selector: b.to_owned(),
        }),
        (a, b) => Ok(a.or(b).map(str::to_owned)),
    }
}

/// Adds a `nodeSelector` on `kubernetes.io/hostname` for `node` to the
/// workload's pod template, keeping other selector entries.
///
/// Does not check that the node exists.
///
/// # Errors
///
/// [`Error::NoPodTemplate`] when `workload` has no `spec.template.spec`
/// object or its `nodeSelector` is not an object; [`Error::AlreadyPinned`]
/// when it is already pinned to another node; the errors of [`pinned_node`].
pub fn pin_to_node(workload: &mut Value, node: &str) -> Result<(), Error> {
    if let Some(pinned) = pinned_node(workload)?.filter(|pinned| pinned != node) {
        return Err(Error::AlreadyPinned {
            workload: describe_workload(workload),
            pinned_node: pinned,
            node: node.to_owned(),
        });
    }
    let missing = no_pod_template(workload);
    let selector = workload
        .pointer_mut("/spec/template/spec")
        .and_then(Value::as_object_mut)
        .map(|pod| {
            let selector = pod.entry("nodeSelector").or_insert(Value::Null);
            if selector.is_null() {
                *selector = Value::Object(Map::new());
            }
            selector
        })
        .and_then(Value::as_object_mut)
        .ok_or(missing)?;
    selector.insert(HOSTNAME_LABEL.to_owned(), Value::from(node));
    Ok(())
}

fn no_pod_template(workload: &Value) -> Error {
    Error::NoPodTemplate {
        workload: describe_workload(workload),
    }
}

/// Names a workload the way errors do: `Deployment "broker"` (`?` for a
/// missing kind or name).
pub fn describe_workload(workload: &Value) -> String {
    let field = |pointer: &str| {
        workload
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("?")
    };
    format!("{} {:?}", field("/kind"), field("/metadata/name"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn volume(name: &str, node: &str) -> LocalVolume {
        match LocalVolume::new(name, node, "/data", "1Gi", None) {
            Ok(volume) => volume,
            Err(err) => panic!("{err}"),
        }
    }

    fn deployment(pod: Value) -> Value {
        json!({"kind": "Deployment", "metadata": {"name": "broker"},
               "spec": {"template": {"spec": pod}}})
    }

    #[test]
    fn volumes_on_one_node_place_the_workload_there() {
        let (a, b) = (volume("a", "n1"), volume("b", "n1"));
        assert_eq!(place(&[&a, &b], None).unwrap(), Some("n1".to_owned()));
        assert_eq!(place(&[&a], Some("n1")).unwrap(), Some("n1".to_owned()));
        assert_eq!(place(&[], Some("n2")).unwrap(), None);
    }

    #[test]
    fn volumes_on_two_nodes_name_both() {
        let (a, b, c) = (volume("a", "n1"), volume("b", "n1"), volume("c", "n2"));
        let err = place(&[&a, &b, &c], None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "volume \"a\" is on node \"n1\" but volume \"c\" is on node \"n2\""
        );
    }

    #[test]
    fn pinning_elsewhere_names_both_nodes() {
        let a = volume("a", "n1");
        let err = place(&[&a], Some("n2")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "volume \"a\" is on node \"n1\" but the workload is pinned to node \"n2\""
        );
    }

    #[test]
    fn reads_pins_from_node_name_or_selector() {
        let by_name = deployment(json!({"nodeName": "n1"}));
        assert_eq!(pinned_node(&by_name).unwrap(), Some("n1".to_owned()));
        let by_selector =
            deployment(json!({"nodeSelector": {HOSTNAME_LABEL: "n2", "disk": "ssd"}}));
        assert_eq!(pinned_node(&by_selector).unwrap(), Some("n2".to_owned()));
        let other_selector = deployment(json!({"nodeSelector": {"disk": "ssd"}}));
        assert_eq!(pinned_node(&other_selector).unwrap(), None);
        let both = deployment(json!({"nodeName": "n1", "nodeSelector": {HOSTNAME_LABEL: "n2"}}));
        assert!(matches!(
            pinned_node(&both),
            Err(Error::ConflictingPins { .. })
        ));
        let no_template = json!({"kind": "Deployment", "metadata": {"name": "x"}, "spec": {}});
        assert_eq!(
            pinned_node(&no_template).unwrap_err().to_string(),
            "Deployment \"x\" has no pod template"
        );
    }

    #[test]
    fn pin_adds_a_selector_and_keeps_others() {
        let mut workload = deployment(json!({"nodeSelector": {"disk": "ssd"}, "containers": []}));
        pin_to_node(&mut workload, "n1").unwrap();
        assert_eq!(
            workload["spec"]["template"]["spec"]["nodeSelector"],
            json!({"disk": "ssd", HOSTNAME_LABEL: "n1"})
        );
        pin_to_node(&mut workload, "n1").unwrap();
        assert_eq!(
            pin_to_node(&mut workload, "n2").unwrap_err().to_string(),
            "Deployment \"broker\" is pinned to node \"n1\", not \"n2\""
        );
        let mut bare = deployment(json!({"containers": []}));
        pin_to_node(&mut bare, "n3").unwrap();
        assert_eq!(pinned_node(&bare).unwrap(), Some("n3".to_owned()));
    }
}
