//! Claims for a Deployment that stays a Deployment, and named local volumes.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::pod::{
    add_mount, add_pod_volume, companion_metadata, describe, malformed, pod_spec_mut, set_label,
};
use super::{
    CHILD_RESOURCE_LABEL, ComponentSpec, Error, Transformed, VolumeTrait, Warning, WorkloadKind,
    check_source,
};
use crate::volumes::{self, LocalVolume};

/// The spec of a claim for a volume trait: `ReadWriteOnce`, the trait's
/// storage class and size.
pub(super) fn claim_spec(volume: &VolumeTrait) -> Value {
    json!({
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": volume.storage_class_name,
        "resources": { "requests": { "storage": volume.size.as_str() } },
    })
}

/// The name of the standalone claim of volume `volume` of `workload`:
/// `<workload>-<volume>`.
pub fn standalone_claim_name(workload: &str, volume: &str) -> String {
    format!("{workload}-{volume}")
}

/// Gives a Deployment that stays a Deployment the volumes of its volume
/// trait as standalone claims.
///
/// For each volume: a PersistentVolumeClaim named
/// [`standalone_claim_name`] (`ReadWriteOnce`, the trait's storage class
/// and size, the Deployment's namespace and labels), returned in
/// [`Transformed::companions`]; a pod volume of the volume's name that
/// refers to it; a mount in the trait's container. Existing volumes and
/// mounts are kept. The Deployment is labelled
/// `app.capstan.dev/child-resource: Deployment`; nothing is dropped.
///
/// All replicas share the claims, so with more than one replica they must
/// run on one node ([`Warning::SharedClaim`]); a rolling update that places
/// the new pod on another node waits until the old pod lets go.
///
/// # Errors
///
/// [`Error::NotADeployment`] when `deployment` is another kind;
/// [`Error::InvalidTrait`] and the clash errors of [`ComponentSpec::validate`];
/// [`Error::InvalidTrait`] when a claim name is too long;
/// [`Error::ContainerOutOfRange`], [`Error::VolumeNameTaken`] and
/// [`Error::MountTaken`] when the trait does not fit the pod template;
/// [`Error::Malformed`] for a missing or mistyped field.
pub fn with_standalone_claims(
    deployment: &Value,
    component: &ComponentSpec,
) -> Result<Transformed, Error> {
    check_source(deployment, component)?;
    let mut workload = deployment.clone();
    let who = describe(&workload);
    let name = workload
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed(deployment, "/metadata/name", "a string"))?
        .to_owned();
    let mut claims = Vec::new();
    for volume in &component.traits.volumes {
        let volume_name = volume.volume_name(component.name.as_str())?;
        let claim_name = standalone_claim_name(&name, &volume_name);
        volumes::validate_subdomain("claim name", &claim_name).map_err(|source| {
            Error::InvalidTrait {
                component: component.name.to_string(),
                source,
            }
        })?;
        let pod = pod_spec_mut(&mut workload)?;
        add_pod_volume(
            pod,
            &who,
            json!({ "name": volume_name, "persistentVolumeClaim": { "claimName": claim_name } }),
        )?;
        add_mount(pod, &who, volume.container, &volume_name, &volume.path)?;
        claims.push(standalone_claim(deployment, &claim_name, volume));
    }
    set_label(
        &mut workload,
        CHILD_RESOURCE_LABEL,
        WorkloadKind::Deployment.as_str(),
    )?;
    let mut warnings = Vec::new();
    let replicas = deployment
        .pointer("/spec/replicas")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    if !claims.is_empty() && replicas > 1 {
        warnings.push(Warning::SharedClaim {
            workload: name,
            replicas,
        });
    }
    Ok(Transformed {
        workload,
        companions: claims,
        dropped: Vec::new(),
        warnings,
    })
}

fn standalone_claim(deployment: &Value, name: &str, volume: &VolumeTrait) -> Value {
    let metadata = companion_metadata(deployment, name);
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": claim_spec(volume),
    })
}

/// Mounts the component's named local volumes into `workload` (a
/// Deployment or StatefulSet) and pins its pods to the volumes' node.
///
/// Each volume gets one pod volume (named after it, referring to its claim
/// by [`LocalVolume::claim_name`]) and a mount per reference. The claims
/// themselves are not made here: they belong to the volumes (made by
/// `capstan volume create`) and outlive the app, so they must not be in the
/// app's manifests, where removing the app would delete them.
///
/// Returns the node the workload is pinned to, `None` when the component
/// uses no local volume. On error, and for `None`, `workload` is unchanged.
///
/// # Errors
///
/// The errors of [`ComponentSpec::validate`];
/// [`Error::UnknownLocalVolume`] for a reference to a volume not in
/// `volumes`; [`Error::Placement`] naming the component when the volumes
/// live on two nodes or the workload is pinned elsewhere (the source names
/// both nodes); [`Error::ContainerOutOfRange`], [`Error::VolumeNameTaken`],
/// [`Error::MountTaken`] and [`Error::Malformed`] as for the volume trait.
pub fn with_local_volumes(
    workload: &mut Value,
    component: &ComponentSpec,
    volumes: &BTreeMap<String, LocalVolume>,
) -> Result<Option<String>, Error> {
    component.validate()?;
    let mut used: Vec<&LocalVolume> = Vec::new();
    for reference in &component.traits.local_volumes {
        let volume = volumes
            .get(&reference.volume)
            .ok_or_else(|| Error::UnknownLocalVolume {
                component: component.name.to_string(),
                volume: reference.volume.clone(),
            })?;
        if !used.iter().any(|v| v.name() == volume.name()) {
            used.push(volume);
        }
    }
    let placement = |source| Error::Placement {
        component: component.name.to_string(),
        source,
    };
    let pinned = volumes::pinned_node(workload).map_err(placement)?;
    let Some(node) = volumes::place(&used, pinned.as_deref()).map_err(placement)? else {
        return Ok(None);
    };
    let mut updated = workload.clone();
    volumes::pin_to_node(&mut updated, &node).map_err(placement)?;
    let who = describe(&updated);
    let pod = pod_spec_mut(&mut updated)?;
    for volume in &used {
        let source = json!({ "name": volume.name(), "persistentVolumeClaim": { "claimName": volume.claim_name() } });
        add_pod_volume(pod, &who, source)?;
    }
    for reference in &component.traits.local_volumes {
        add_mount(
            pod,
            &who,
            reference.container,
            &reference.volume,
            &reference.path,
        )?;
    }
    *workload = updated;
    Ok(Some(node))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;

    use super::super::fixtures::{
        RECREATE, ROLLING, assert_typed, broker, component, manifest, ok, zookeeper,
    };
    use super::*;

    #[test]
    fn deployment_gets_standalone_claims_volumes_and_mounts() {
        let deployment = manifest(ROLLING);
        let out = ok(with_standalone_claims(&deployment, &broker()));
        let typed: Deployment = assert_typed(&out.workload);
        assert_eq!(
            typed.metadata.labels.unwrap()[CHILD_RESOURCE_LABEL],
            "Deployment"
        );
        let pod = typed.spec.unwrap().template.spec.unwrap();
        let volumes: Vec<_> = pod
            .volumes
            .unwrap()
            .into_iter()
            .map(|v| (v.name, v.persistent_volume_claim.map(|c| c.claim_name)))
            .collect();
        assert_eq!(
            volumes,
            [
                ("config".to_owned(), None),
                ("tmp".to_owned(), None),
                (
                    "var-lib-kafka".to_owned(),
                    Some("kafka-broker-var-lib-kafka".to_owned())
                ),
                (
                    "jmx-logs".to_owned(),
                    Some("kafka-broker-jmx-logs".to_owned())
                ),
            ]
        );
        let last_mount = |i: usize| {
            let mounts = pod.containers[i].volume_mounts.clone().unwrap();
            mounts
                .last()
                .map(|m| (m.name.clone(), m.mount_path.clone()))
        };
        assert_eq!(
            last_mount(0),
            Some(("var-lib-kafka".to_owned(), "/var/lib/kafka".to_owned()))
        );
        assert_eq!(
            last_mount(1),
            Some(("jmx-logs".to_owned(), "/var/log/jmx".to_owned()))
        );
        assert_eq!(
            out.workload["spec"]["strategy"],
            deployment["spec"]["strategy"]
        );
        assert!(out.dropped.is_empty());
    }

    #[test]
    fn standalone_claims_are_typed_and_namespaced() {
        let out = ok(with_standalone_claims(&manifest(ROLLING), &broker()));
        assert_eq!(out.companions.len(), 2);
        let claim: PersistentVolumeClaim = assert_typed(&out.companions[0]);
        assert_eq!(
            claim.metadata.name.as_deref(),
            Some("kafka-broker-var-lib-kafka")
        );
        assert_eq!(claim.metadata.namespace.as_deref(), Some("kafka"));
        let spec = claim.spec.unwrap();
        assert_eq!(spec.storage_class_name.as_deref(), Some("fast-ssd"));
        assert_eq!(
            spec.resources.unwrap().requests.unwrap()["storage"].0,
            "20Gi"
        );
        let logs: PersistentVolumeClaim = assert_typed(&out.companions[1]);
        assert_eq!(
            logs.spec.unwrap().storage_class_name.as_deref(),
            Some("standard")
        );
    }

    #[test]
    fn shared_claims_across_replicas_warn() {
        let out = ok(with_standalone_claims(&manifest(ROLLING), &broker()));
        assert_eq!(
            out.warnings,
            [Warning::SharedClaim {
                workload: "kafka-broker".to_owned(),
                replicas: 3
            }]
        );
        let single = ok(with_standalone_claims(&manifest(RECREATE), &zookeeper()));
        assert!(single.warnings.is_empty());
    }

    #[test]
    fn null_volumes_list_is_filled() {
        let out = ok(with_standalone_claims(&manifest(RECREATE), &zookeeper()));
        let typed: Deployment = assert_typed(&out.workload);
        let pod = typed.spec.unwrap().template.spec.unwrap();
        assert_eq!(pod.volumes.unwrap()[0].name, "data");
    }

    #[test]
    fn without_volume_trait_only_the_label_changes() {
        let deployment = manifest(ROLLING);
        let mut plain = broker();
        plain.traits.volumes.clear();
        let out = ok(with_standalone_claims(&deployment, &plain));
        assert!(out.companions.is_empty());
        let mut expected = deployment;
        expected["metadata"]["labels"][CHILD_RESOURCE_LABEL] = "Deployment".into();
        assert_eq!(out.workload, expected);
    }

    #[test]
    fn clashes_with_existing_volumes_are_errors() {
        let mut clash = broker();
        clash.traits.volumes[1].name = Some("tmp".to_owned());
        assert_eq!(
            with_standalone_claims(&manifest(ROLLING), &clash)
                .unwrap_err()
                .to_string(),
            "Deployment \"kafka-broker\" already has a volume named \"tmp\""
        );
        let mut mount = broker();
        mount.traits.volumes[1].path = "/etc/jmx".to_owned();
        assert_eq!(
            with_standalone_claims(&manifest(ROLLING), &mount)
                .unwrap_err()
                .to_string(),
            "container \"metrics\" of Deployment \"kafka-broker\" already mounts a volume at \"/etc/jmx\" or by its name"
        );
    }

    fn local(name: &str, node: &str) -> (String, LocalVolume) {
        let volume = LocalVolume::new(name, node, &format!("/srv/{name}"), "10Gi", None)
            .unwrap_or_else(|e| panic!("{e}"));
        (name.to_owned(), volume)
    }

    fn zk_with_locals(refs: &str) -> ComponentSpec {
        component(&format!(
            "
name: zookeeper
chart: zookeeper
workload: {{ kind: Deployment, name: zookeeper }}
traits:
  localVolumes: {refs}
"
        ))
    }

    #[test]
    fn local_volumes_are_mounted_and_pin_the_pods() {
        let volumes = BTreeMap::from([local("zk-data", "worker-1"), local("zk-log", "worker-1")]);
        let component = zk_with_locals(
            "[{volume: zk-data, container: 0, path: /data}, {volume: zk-log, container: 0, path: /datalog}, \
             {volume: zk-data, container: 0, path: /backup}]",
        );
        let mut workload = ok(with_standalone_claims(&manifest(RECREATE), &component)).workload;
        let node = with_local_volumes(&mut workload, &component, &volumes);
        assert!(
            matches!(node, Err(Error::MountTaken { .. })),
            "one volume twice in one container"
        );
        let component = zk_with_locals(
            "[{volume: zk-data, container: 0, path: /data}, {volume: zk-log, container: 0, path: /datalog}]",
        );
        let node = with_local_volumes(&mut workload, &component, &volumes)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(node.as_deref(), Some("worker-1"));
        let typed: Deployment = assert_typed(&workload);
        let pod = typed.spec.unwrap().template.spec.unwrap();
        assert_eq!(
            pod.node_selector.unwrap()["kubernetes.io/hostname"],
            "worker-1"
        );
        let claims: Vec<_> = pod
            .volumes
            .unwrap()
            .into_iter()
            .filter_map(|v| v.persistent_volume_claim.map(|c| c.claim_name))
            .collect();
        assert_eq!(claims, ["zk-data", "zk-log"]);
        let mounts: Vec<_> = pod.containers[0]
            .volume_mounts
            .clone()
            .unwrap()
            .into_iter()
            .map(|m| m.mount_path)
            .collect();
        assert_eq!(mounts, ["/data", "/datalog"]);
    }

    #[test]
    fn local_volumes_on_two_nodes_are_refused_naming_both() {
        let volumes = BTreeMap::from([local("zk-data", "worker-1"), local("zk-log", "worker-2")]);
        let component = zk_with_locals(
            "[{volume: zk-data, container: 0, path: /data}, {volume: zk-log, container: 0, path: /datalog}]",
        );
        let mut workload = manifest(RECREATE);
        let before = workload.clone();
        let err = with_local_volumes(&mut workload, &component, &volumes).unwrap_err();
        assert_eq!(err.to_string(), "component \"zookeeper\" cannot be placed");
        let cause = std::error::Error::source(&err).map(ToString::to_string);
        assert_eq!(
            cause.as_deref(),
            Some(
                "volume \"zk-data\" is on node \"worker-1\" but volume \"zk-log\" is on node \"worker-2\""
            )
        );
        assert_eq!(workload, before, "unchanged on error");
    }

    #[test]
    fn local_volume_on_another_node_than_the_pin_is_refused() {
        let volumes = BTreeMap::from([local("zk-data", "worker-1")]);
        let component = zk_with_locals("[{volume: zk-data, container: 0, path: /data}]");
        let mut workload = manifest(RECREATE);
        workload["spec"]["template"]["spec"]["nodeSelector"] =
            serde_json::json!({"kubernetes.io/hostname": "worker-3"});
        let err = with_local_volumes(&mut workload, &component, &volumes).unwrap_err();
        let cause = std::error::Error::source(&err).map(ToString::to_string);
        assert_eq!(
            cause.as_deref(),
            Some(
                "volume \"zk-data\" is on node \"worker-1\" but the workload is pinned to node \"worker-3\""
            )
        );
        let missing = zk_with_locals("[{volume: nope, container: 0, path: /data}]");
        assert_eq!(
            with_local_volumes(&mut workload, &missing, &volumes)
                .unwrap_err()
                .to_string(),
            "component \"zookeeper\" uses local volume \"nope\", which does not exist"
        );
        let none = zk_with_locals("[]");
        assert_eq!(
            with_local_volumes(&mut workload, &none, &volumes).ok(),
            Some(None)
        );
    }
}
