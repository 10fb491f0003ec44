//! Applying the stored decisions to an app's rendered manifests.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{
    ComponentSpec, Decision, Error, Warning, WorkloadKind, to_stateful_set, with_local_volumes,
    with_standalone_claims,
};
use crate::volumes::LocalVolume;

/// The manifests after [`apply_decisions`], and what each component's
/// transform reported.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The rendered manifests with each component's workload replaced and
    /// its companions (headless Service, claims) placed right before it.
    pub manifests: Vec<Value>,
    /// One report per component, in the order of the components.
    pub reports: Vec<ComponentReport>,
}

/// What the transform of one component reported.
#[derive(Debug, Clone, PartialEq)]
pub struct ComponentReport {
    /// The component.
    pub component: String,
    /// The kind its workload now has.
    pub kind: WorkloadKind,
    /// Dotted paths of Deployment fields left out (see [`to_stateful_set`]).
    pub dropped: Vec<String>,
    /// Warnings from the transform.
    pub warnings: Vec<Warning>,
}

/// Applies each component's decision to the rendered manifests.
///
/// For each component, finds its rendered workload (kind and
/// `metadata.name` from [`ComponentSpec::workload`]), then replaces it with
/// [`to_stateful_set`] or [`with_standalone_claims`] by the decided kind,
/// and inserts the companions (Service, claims) just before it. Manifests
/// that belong to no component pass through untouched and in order.
///
/// Named local volumes are not handled here; see [`super::with_local_volumes`].
///
/// # Errors
///
/// [`Error::MissingDecision`] when a component has no decision;
/// [`Error::UnsupportedSource`] when a component names a rendered
/// StatefulSet; [`Error::MissingWorkload`] when no manifest matches,
/// [`Error::AmbiguousWorkload`] when several do (e.g. in two namespaces),
/// [`Error::SharedWorkload`] when two components name the same one;
/// [`Error::GeneratedClash`] when a generated object has the kind,
/// namespace and name of a rendered one; any error of the transforms.
pub fn apply_decisions(
    manifests: Vec<Value>,
    components: &[ComponentSpec],
    decisions: &BTreeMap<String, Decision>,
) -> Result<Applied, Error> {
    let existing: BTreeSet<ObjectKey> = manifests.iter().map(ObjectKey::of).collect();
    let mut replacements: BTreeMap<usize, (&str, Vec<Value>)> = BTreeMap::new();
    let mut reports = Vec::new();
    for component in components {
        let decision =
            decisions
                .get(component.name.as_str())
                .ok_or_else(|| Error::MissingDecision {
                    component: component.name.to_string(),
                })?;
        if component.workload.kind != WorkloadKind::Deployment {
            return Err(Error::UnsupportedSource {
                component: component.name.to_string(),
                kind: component.workload.kind,
            });
        }
        let index = find_workload(&manifests, component)?;
        if let Some((other, _)) = replacements.get(&index) {
            return Err(Error::SharedWorkload {
                workload: component.workload.name.clone(),
                first: (*other).to_owned(),
                second: component.name.to_string(),
            });
        }
        let source = &manifests[index];
        let transformed = match decision.kind {
            WorkloadKind::StatefulSet => to_stateful_set(source, component)?,
            WorkloadKind::Deployment => with_standalone_claims(source, component)?,
        };
        if let Some(clash) = transformed
            .companions
            .iter()
            .map(ObjectKey::of)
            .find(|key| existing.contains(key))
        {
            return Err(Error::GeneratedClash {
                component: component.name.to_string(),
                object: clash.to_string(),
            });
        }
        let mut replacement = transformed.companions;
        replacement.push(transformed.workload);
        replacements.insert(index, (component.name.as_str(), replacement));
        reports.push(ComponentReport {
            component: component.name.to_string(),
            kind: decision.kind,
            dropped: transformed.dropped,
            warnings: transformed.warnings,
        });
    }
    let manifests = manifests
        .into_iter()
        .enumerate()
        .flat_map(|(index, manifest)| match replacements.remove(&index) {
            Some((_, replacement)) => replacement,
            None => vec![manifest],
        })
        .collect();
    Ok(Applied { manifests, reports })
}

/// The index of the one rendered manifest that is the component's workload.
fn find_workload(manifests: &[Value], component: &ComponentSpec) -> Result<usize, Error> {
    find_named(manifests, component, &[component.workload.kind])
}

/// The index of the one manifest of one of `kinds` named as the
/// component's workload.
fn find_named(
    manifests: &[Value],
    component: &ComponentSpec,
    kinds: &[WorkloadKind],
) -> Result<usize, Error> {
    let wanted = &component.workload;
    let matches: Vec<usize> = manifests
        .iter()
        .enumerate()
        .filter(|(_, object)| {
            let kind = object.get("kind").and_then(Value::as_str);
            kinds.iter().any(|k| kind == Some(k.as_str()))
                && object.pointer("/metadata/name").and_then(Value::as_str)
                    == Some(wanted.name.as_str())
        })
        .map(|(index, _)| index)
        .collect();
    match matches[..] {
        [index] => Ok(index),
        [] => Err(Error::MissingWorkload {
            component: component.name.to_string(),
            kind: wanted.kind,
            name: wanted.name.clone(),
        }),
        _ => Err(Error::AmbiguousWorkload {
            component: component.name.to_string(),
            kind: wanted.kind,
            name: wanted.name.clone(),
            count: matches.len(),
        }),
    }
}

/// Mounts each component's named local volumes into its workload (after
/// [`apply_decisions`], so as a Deployment or a StatefulSet) and pins it to
/// the volumes' node; see [`with_local_volumes`].
///
/// Checks every component before changing anything, so on error the
/// manifests are as they were and nothing should be applied. Returns the
/// node of each component that uses local volumes.
///
/// # Errors
///
/// [`Error::MissingWorkload`] or [`Error::AmbiguousWorkload`] when a
/// component that uses local volumes has not exactly one workload of its
/// name; the errors of [`with_local_volumes`], among them
/// [`Error::Placement`] naming both nodes of a conflict.
pub fn apply_local_volumes(
    manifests: &mut [Value],
    components: &[ComponentSpec],
    volumes: &BTreeMap<String, LocalVolume>,
) -> Result<BTreeMap<String, String>, Error> {
    let kinds = [WorkloadKind::Deployment, WorkloadKind::StatefulSet];
    let mut updates = Vec::new();
    let mut nodes = BTreeMap::new();
    for component in components {
        if component.traits.local_volumes.is_empty() {
            continue;
        }
        let index = find_named(manifests, component, &kinds)?;
        let mut workload = manifests[index].clone();
        if let Some(node) = with_local_volumes(&mut workload, component, volumes)? {
            nodes.insert(component.name.to_string(), node);
        }
        updates.push((index, workload));
    }
    for (index, workload) in updates {
        manifests[index] = workload;
    }
    Ok(nodes)
}

/// What identifies an object in a namespace: kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ObjectKey {
    kind: String,
    namespace: String,
    name: String,
}

impl ObjectKey {
    fn of(object: &Value) -> Self {
        let field = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Self {
            kind: field("/kind"),
            namespace: field("/metadata/namespace"),
            name: field("/metadata/name"),
        }
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {:?}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{APP, RECREATE, ROLLING, broker, documents, manifest, zookeeper};
    use super::super::{DecidedBy, Traits, decide};
    use super::*;

    fn rendered() -> Vec<Value> {
        let mut manifests = documents(APP);
        manifests.insert(2, manifest(ROLLING));
        manifests.push(manifest(RECREATE));
        manifests
    }

    fn decided(kind: WorkloadKind) -> Decision {
        Decision {
            kind,
            decided_by: DecidedBy::Plugin,
            traits_digest: String::new(),
        }
    }

    fn kinds_and_names(manifests: &[Value]) -> Vec<String> {
        manifests
            .iter()
            .map(|m| {
                format!(
                    "{}/{}",
                    m["kind"].as_str().unwrap_or("?"),
                    m["metadata"]["name"].as_str().unwrap_or("?")
                )
            })
            .collect()
    }

    #[test]
    fn replaces_each_workload_in_place_with_its_companions_first() {
        let components = [broker(), zookeeper()];
        let decisions = BTreeMap::from([
            (
                "broker".to_owned(),
                decide(None, None, &components[0].traits, false).0,
            ),
            ("zookeeper".to_owned(), decided(WorkloadKind::Deployment)),
        ]);
        let applied =
            apply_decisions(rendered(), &components, &decisions).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            kinds_and_names(&applied.manifests),
            [
                "ConfigMap/kafka-broker-config",
                "Service/kafka-broker",
                "Service/kafka-broker-headless",
                "StatefulSet/kafka-broker",
                "Deployment/web",
                "PersistentVolumeClaim/zookeeper-data",
                "Deployment/zookeeper",
            ]
        );
        assert_eq!(applied.manifests[4], documents(APP)[2], "untouched");
        let kinds: Vec<_> = applied
            .reports
            .iter()
            .map(|r| (r.component.as_str(), r.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("broker", WorkloadKind::StatefulSet),
                ("zookeeper", WorkloadKind::Deployment)
            ]
        );
        assert!(
            applied.reports[0]
                .dropped
                .contains(&"spec.progressDeadlineSeconds".to_owned())
        );
    }

    #[test]
    fn every_object_of_both_kinds_is_typed() {
        use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
        use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};

        use super::super::fixtures::assert_typed;

        let components = [broker(), zookeeper()];
        for kind in [WorkloadKind::StatefulSet, WorkloadKind::Deployment] {
            let decisions = BTreeMap::from([
                ("broker".to_owned(), decided(kind)),
                ("zookeeper".to_owned(), decided(kind)),
            ]);
            let applied = apply_decisions(rendered(), &components, &decisions)
                .unwrap_or_else(|e| panic!("{e}"));
            for object in &applied.manifests {
                match object["kind"].as_str() {
                    Some("StatefulSet") => {
                        assert_typed::<StatefulSet>(object);
                    }
                    Some("Deployment") => {
                        assert_typed::<Deployment>(object);
                    }
                    Some("Service") => {
                        assert_typed::<Service>(object);
                    }
                    Some("PersistentVolumeClaim") => {
                        assert_typed::<PersistentVolumeClaim>(object);
                    }
                    Some("ConfigMap") => {
                        assert_typed::<ConfigMap>(object);
                    }
                    other => panic!("unexpected kind {other:?}"),
                }
            }
        }
    }

    #[test]
    fn missing_and_ambiguous_workloads_name_the_component() {
        let decisions = BTreeMap::from([("broker".to_owned(), decided(WorkloadKind::StatefulSet))]);
        let err = apply_decisions(documents(APP), &[broker()], &decisions).unwrap_err();
        assert_eq!(
            err.to_string(),
            "component \"broker\" names Deployment \"kafka-broker\", which its chart does not render"
        );
        let mut twice = rendered();
        let mut other_namespace = manifest(ROLLING);
        other_namespace["metadata"]["namespace"] = "kafka-2".into();
        twice.push(other_namespace);
        let err = apply_decisions(twice, &[broker()], &decisions).unwrap_err();
        assert!(
            matches!(err, Error::AmbiguousWorkload { count: 2, .. }),
            "{err}"
        );
        let err = apply_decisions(rendered(), &[broker()], &BTreeMap::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "component \"broker\" has no workload kind decision"
        );
    }

    #[test]
    fn two_components_cannot_share_a_workload() {
        let mut second = broker();
        second.name = crate::model::ComponentName::parse("broker-again").unwrap();
        let decisions = BTreeMap::from([
            ("broker".to_owned(), decided(WorkloadKind::StatefulSet)),
            ("broker-again".to_owned(), decided(WorkloadKind::Deployment)),
        ]);
        let err = apply_decisions(rendered(), &[broker(), second], &decisions).unwrap_err();
        assert_eq!(
            err.to_string(),
            "components \"broker\" and \"broker-again\" both name workload \"kafka-broker\""
        );
    }

    #[test]
    fn generated_objects_must_not_clash_with_rendered_ones() {
        let mut manifests = rendered();
        manifests.push(serde_json::json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kafka-broker-headless", "namespace": "kafka"},
        }));
        let decisions = BTreeMap::from([("broker".to_owned(), decided(WorkloadKind::StatefulSet))]);
        let err = apply_decisions(manifests, &[broker()], &decisions).unwrap_err();
        assert_eq!(
            err.to_string(),
            "component \"broker\" generates Service kafka/kafka-broker-headless, which the chart already renders"
        );
    }

    fn zk_data(node: &str) -> BTreeMap<String, LocalVolume> {
        let volume = LocalVolume::new("zk-data", node, "/srv/zk", "10Gi", None)
            .unwrap_or_else(|e| panic!("{e}"));
        BTreeMap::from([("zk-data".to_owned(), volume)])
    }

    fn with_local(mut component: ComponentSpec) -> ComponentSpec {
        component.traits.local_volumes = vec![super::super::LocalVolumeMount {
            volume: "zk-data".to_owned(),
            container: 0,
            path: "/zk".to_owned(),
        }];
        component
    }

    #[test]
    fn local_volumes_follow_the_decided_kind() {
        let components = [with_local(broker()), zookeeper()];
        let decisions = BTreeMap::from([
            ("broker".to_owned(), decided(WorkloadKind::StatefulSet)),
            ("zookeeper".to_owned(), decided(WorkloadKind::StatefulSet)),
        ]);
        let mut applied =
            apply_decisions(rendered(), &components, &decisions).unwrap_or_else(|e| panic!("{e}"));
        let nodes = apply_local_volumes(&mut applied.manifests, &components, &zk_data("worker-1"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            nodes,
            BTreeMap::from([("broker".to_owned(), "worker-1".to_owned())])
        );
        let broker = &applied.manifests[3];
        assert_eq!(broker["kind"], "StatefulSet");
        assert_eq!(
            broker["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/hostname"],
            "worker-1"
        );
        let zookeeper = applied.manifests.last().unwrap_or_else(|| panic!("empty"));
        assert!(
            zookeeper["spec"]["template"]["spec"]
                .get("nodeSelector")
                .is_none()
        );
    }

    #[test]
    fn local_volume_conflicts_change_nothing() {
        let mut pinned = manifest(RECREATE);
        pinned["spec"]["template"]["spec"]["nodeName"] = "worker-2".into();
        let mut manifests = vec![manifest(ROLLING), pinned];
        let before = manifests.clone();
        let components = [with_local(broker()), with_local(zookeeper())];
        let err =
            apply_local_volumes(&mut manifests, &components, &zk_data("worker-1")).unwrap_err();
        assert_eq!(err.to_string(), "component \"zookeeper\" cannot be placed");
        assert_eq!(manifests, before);
    }

    #[test]
    fn rendered_stateful_sets_are_not_sources() {
        let mut component = broker();
        component.workload.kind = WorkloadKind::StatefulSet;
        component.traits = Traits::default();
        let decisions = BTreeMap::from([("broker".to_owned(), decided(WorkloadKind::StatefulSet))]);
        let err = apply_decisions(rendered(), &[component], &decisions).unwrap_err();
        assert!(matches!(err, Error::UnsupportedSource { .. }), "{err}");
    }
}
