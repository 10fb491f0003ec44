//! Deployment to StatefulSet, with its headless Service and claim templates.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::pod::{
    add_mount, companion_metadata, describe, has_pod_volume, malformed, object_at, pod_spec_mut,
    set_label, volume_name_taken,
};
use super::{CHILD_RESOURCE_LABEL, ComponentSpec, Error, Transformed, WorkloadKind, check_source};

/// Deployment spec fields copied to the StatefulSet as they are.
const CARRIED_SPEC_FIELDS: [&str; 5] = [
    "replicas",
    "selector",
    "template",
    "minReadySeconds",
    "revisionHistoryLimit",
];

/// The suffix of the generated headless Service's name.
const HEADLESS_SUFFIX: &str = "-headless";
/// The longest Service name (a DNS-1035 label).
const MAX_SERVICE_NAME_LEN: usize = 63;

/// Turns a rendered Deployment into a StatefulSet for `component`.
///
/// The StatefulSet keeps the Deployment's metadata (labels, annotations,
/// namespace and any field this code does not know), `replicas`,
/// `selector`, `template`, `minReadySeconds` and `revisionHistoryLimit`,
/// and gets:
/// - `serviceName`: a generated headless Service, returned in
///   [`Transformed::companions`], named `<name>-headless` (the name cut to
///   fit 63 characters), with `clusterIP: None`, the pod template's labels
///   as selector, a port per distinct container port (named by the
///   container port's name, else `<protocol>-<port>`), and
///   `publishNotReadyAddresses: true` so peers (ZooKeeper, Kafka) can find
///   each other before they are ready;
/// - `podManagementPolicy: Parallel`;
/// - `volumeClaimTemplates` from the volume trait (`ReadWriteOnce`, the
///   trait's storage class and size), mounted in the trait's container;
///   claims then follow the StatefulSet's default retention (kept when it
///   is deleted or scaled down);
/// - `updateStrategy` mapped from `strategy`:
///   - `RollingUpdate` stays `RollingUpdate`. Its `maxUnavailable` is
///     carried when it is a positive number or percentage: StatefulSets
///     accept it behind the `MaxUnavailableStatefulSet` feature gate (alpha
///     since 1.24, beta and on by default since 1.35); where the gate is off
///     the API server clears it and pods are replaced one at a time. A
///     `maxUnavailable` of 0, valid for a Deployment that surges, is not
///     valid here and is dropped. `maxSurge` has no counterpart (a
///     StatefulSet never runs two pods of one ordinal) and is dropped.
///   - `Recreate` becomes `RollingUpdate`, and is reported dropped. Recreate
///     exists so two pods never hold one volume at once; a StatefulSet
///     already deletes each pod before creating its replacement, and each
///     pod has its own claims. `OnDelete` was rejected: it would stop
///     updates from rolling out at all until someone deletes pods by hand.
///   - no `strategy` gives `RollingUpdate`, the StatefulSet default.
/// - the label `app.capstan.dev/child-resource: StatefulSet`.
///
/// Fields with no StatefulSet counterpart (`progressDeadlineSeconds`,
/// `paused`, `strategy.rollingUpdate.maxSurge`, unknown spec fields,
/// top-level fields other than `apiVersion`, `kind`, `metadata`, `spec`)
/// are left out and listed in [`Transformed::dropped`] as dotted paths.
///
/// # Errors
///
/// [`Error::NotADeployment`] when `deployment` is another kind;
/// [`Error::InvalidTrait`] and the clash errors of [`ComponentSpec::validate`];
/// [`Error::Malformed`] for a missing or mistyped field the transform needs
/// (`metadata`, `spec`, `spec.template.metadata.labels`, pod spec lists);
/// [`Error::UnknownStrategy`] for a strategy type other than
/// `RollingUpdate` or `Recreate`; [`Error::ContainerOutOfRange`],
/// [`Error::VolumeNameTaken`] and [`Error::MountTaken`] when the volume
/// trait does not fit the pod template; [`Error::ServiceName`] when no
/// valid Service name can be made from the workload's name.
pub fn to_stateful_set(
    deployment: &Value,
    component: &ComponentSpec,
) -> Result<Transformed, Error> {
    check_source(deployment, component)?;
    let mut dropped = Vec::new();
    for key in deployment.as_object().into_iter().flat_map(Map::keys) {
        if !matches!(
            key.as_str(),
            "apiVersion" | "kind" | "metadata" | "spec" | "status"
        ) {
            dropped.push(key.clone());
        }
    }
    let name = deployment
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed(deployment, "/metadata/name", "a string"))?;
    let service = headless_service(deployment, name)?;
    let service_name = service["metadata"]["name"].clone();
    let mut spec = Map::new();
    for (key, value) in object_at(deployment, "/spec")? {
        if CARRIED_SPEC_FIELDS.contains(&key.as_str()) {
            spec.insert(key.clone(), value.clone());
        } else if key != "strategy" {
            dropped.push(format!("spec.{key}"));
        }
    }
    let strategy = deployment.pointer("/spec/strategy");
    let update_strategy = update_strategy(deployment, strategy, &mut dropped)?;
    spec.insert("updateStrategy".to_owned(), update_strategy);
    spec.insert("serviceName".to_owned(), service_name);
    spec.insert("podManagementPolicy".to_owned(), Value::from("Parallel"));
    let mut stateful_set = json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": object_at(deployment, "/metadata")?.clone(),
        "spec": spec,
    });
    add_claim_templates(&mut stateful_set, component, &describe(deployment))?;
    set_label(
        &mut stateful_set,
        CHILD_RESOURCE_LABEL,
        WorkloadKind::StatefulSet.as_str(),
    )?;
    Ok(Transformed {
        workload: stateful_set,
        companions: vec![service],
        dropped,
        warnings: Vec::new(),
    })
}

/// Maps a Deployment `strategy` to a StatefulSet `updateStrategy`; see
/// [`to_stateful_set`] for the rules.
fn update_strategy(
    deployment: &Value,
    strategy: Option<&Value>,
    dropped: &mut Vec<String>,
) -> Result<Value, Error> {
    let rolling = json!({ "type": "RollingUpdate" });
    let Some(strategy) = strategy.filter(|s| !s.is_null()) else {
        return Ok(rolling);
    };
    let strategy = strategy
        .as_object()
        .ok_or_else(|| malformed(deployment, "/spec/strategy", "an object"))?;
    for key in strategy
        .keys()
        .filter(|k| !matches!(k.as_str(), "type" | "rollingUpdate"))
    {
        dropped.push(format!("spec.strategy.{key}"));
    }
    match strategy.get("type").and_then(Value::as_str) {
        None | Some("RollingUpdate") => {}
        Some("Recreate") => {
            dropped.push("spec.strategy.type=Recreate".to_owned());
            return Ok(rolling);
        }
        Some(other) => {
            return Err(Error::UnknownStrategy {
                workload: describe(deployment),
                strategy: other.to_owned(),
            });
        }
    }
    let Some(params) = strategy.get("rollingUpdate").filter(|p| !p.is_null()) else {
        return Ok(rolling);
    };
    let params = params
        .as_object()
        .ok_or_else(|| malformed(deployment, "/spec/strategy/rollingUpdate", "an object"))?;
    let mut carried = Map::new();
    for (key, value) in params {
        let path = format!("spec.strategy.rollingUpdate.{key}");
        if key != "maxUnavailable" {
            dropped.push(path);
            continue;
        }
        match int_or_percent(value) {
            Some(0) => dropped.push(format!("{path}=0")),
            Some(_) => {
                carried.insert(key.clone(), value.clone());
            }
            None => {
                return Err(malformed(
                    deployment,
                    "/spec/strategy/rollingUpdate/maxUnavailable",
                    "a number or a percentage up to 100%",
                ));
            }
        }
    }
    if carried.is_empty() {
        return Ok(rolling);
    }
    Ok(json!({ "type": "RollingUpdate", "rollingUpdate": carried }))
}

/// The number in an int-or-percent value (`2`, `25%`); `None` for anything
/// else, including percentages above 100.
fn int_or_percent(value: &Value) -> Option<u64> {
    match value {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => text
            .strip_suffix('%')?
            .parse()
            .ok()
            .filter(|percent| *percent <= 100),
        _ => None,
    }
}

/// Adds a claim template and a mount for each volume of the trait; errors
/// name the workload as `who` (the source Deployment, as the operator knows it).
fn add_claim_templates(
    stateful_set: &mut Value,
    component: &ComponentSpec,
    who: &str,
) -> Result<(), Error> {
    let mut templates = Vec::new();
    for volume in &component.traits.volumes {
        let name = volume.volume_name(component.name.as_str())?;
        let pod = pod_spec_mut(stateful_set)?;
        if has_pod_volume(pod, &name) {
            return Err(volume_name_taken(who, &name));
        }
        add_mount(pod, who, volume.container, &name, &volume.path)?;
        templates.push(json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": { "name": name },
            "spec": super::claim_spec(volume),
        }));
    }
    if !templates.is_empty() {
        stateful_set["spec"]["volumeClaimTemplates"] = Value::Array(templates);
    }
    Ok(())
}

/// The headless Service that governs the StatefulSet's pod names.
fn headless_service(deployment: &Value, name: &str) -> Result<Value, Error> {
    let selector = object_at(deployment, "/spec/template/metadata/labels")?;
    if selector.is_empty() {
        return Err(malformed(
            deployment,
            "/spec/template/metadata/labels",
            "a non-empty object",
        ));
    }
    let metadata = companion_metadata(deployment, &service_name(name)?);
    let mut spec = json!({
        "clusterIP": "None",
        "selector": selector,
        "publishNotReadyAddresses": true,
    });
    let ports = service_ports(deployment)?;
    if !ports.is_empty() {
        spec["ports"] = Value::Array(ports);
    }
    Ok(json!({ "apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec }))
}

/// `<name>-headless`, with `name` cut so the whole fits in 63 characters.
fn service_name(name: &str) -> Result<String, Error> {
    let keep = MAX_SERVICE_NAME_LEN - HEADLESS_SUFFIX.len();
    let stem: String = name.chars().take(keep).collect();
    let stem = stem.trim_end_matches(['-', '.']).replace('.', "-");
    let service = format!("{stem}{HEADLESS_SUFFIX}");
    if stem.starts_with(|c: char| c.is_ascii_lowercase()) {
        Ok(service)
    } else {
        Err(Error::ServiceName {
            workload: name.to_owned(),
            service,
        })
    }
}

/// One Service port per distinct (port, protocol) among the containers and
/// the sidecar init containers (`restartPolicy: Always`).
fn service_ports(deployment: &Value) -> Result<Vec<Value>, Error> {
    let pod = object_at(deployment, "/spec/template/spec")?;
    let sidecars = pod
        .get("initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"));
    let containers = pod
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    let mut seen = BTreeSet::new();
    let mut names = BTreeSet::new();
    let mut ports = Vec::new();
    for port in containers.chain(sidecars).flat_map(container_ports) {
        let number = port
            .get("containerPort")
            .and_then(Value::as_u64)
            .ok_or_else(|| {
                malformed(
                    deployment,
                    "/spec/template/spec/containers/ports",
                    "ports with a containerPort",
                )
            })?;
        let protocol = port
            .get("protocol")
            .and_then(Value::as_str)
            .unwrap_or("TCP");
        if !seen.insert((number, protocol.to_owned())) {
            continue;
        }
        let given = port.get("name").and_then(Value::as_str);
        let name = match given.filter(|n| !names.contains(*n)) {
            Some(name) => name.to_owned(),
            None => unique_port_name(&names, protocol, number),
        };
        names.insert(name.clone());
        ports.push(json!({
            "name": name,
            "port": number,
            "targetPort": number,
            "protocol": protocol,
        }));
    }
    Ok(ports)
}

fn container_ports(container: &Value) -> impl Iterator<Item = &Value> {
    container
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn unique_port_name(taken: &BTreeSet<String>, protocol: &str, number: u64) -> String {
    let base = format!("{}-{number}", protocol.to_ascii_lowercase());
    let mut name = base.clone();
    let mut n = 1;
    while taken.contains(&name) {
        name = format!("{base}-{n}");
        n += 1;
    }
    name
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::StatefulSet;
    use k8s_openapi::api::core::v1::Service;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::super::fixtures::{
        RECREATE, ROLLING, assert_typed, broker, manifest, ok, zookeeper,
    };
    use super::*;

    fn pod_of(stateful_set: &StatefulSet) -> k8s_openapi::api::core::v1::PodSpec {
        let template = stateful_set.spec.as_ref().map(|s| s.template.clone());
        template
            .and_then(|t| t.spec)
            .unwrap_or_else(|| panic!("no pod spec"))
    }

    #[test]
    fn rolling_deployment_becomes_a_typed_stateful_set() {
        let deployment = manifest(ROLLING);
        let out = ok(to_stateful_set(&deployment, &broker()));
        let typed: StatefulSet = assert_typed(&out.workload);
        let spec = typed.spec.clone().unwrap();
        assert_eq!(spec.service_name.as_deref(), Some("kafka-broker-headless"));
        assert_eq!(spec.pod_management_policy.as_deref(), Some("Parallel"));
        assert_eq!(spec.replicas, Some(3));
        assert_eq!(spec.revision_history_limit, Some(5));
        assert_eq!(spec.min_ready_seconds, Some(10));
        assert_eq!(
            out.workload["spec"]["selector"],
            deployment["spec"]["selector"]
        );
        let update = spec.update_strategy.unwrap();
        assert_eq!(update.type_.as_deref(), Some("RollingUpdate"));
        let max = update.rolling_update.unwrap().max_unavailable;
        assert_eq!(max, Some(IntOrString::String("25%".to_owned())));
        assert_eq!(
            out.dropped,
            vec![
                "spec.progressDeadlineSeconds",
                "spec.strategy.rollingUpdate.maxSurge"
            ]
        );
        assert_eq!(typed.metadata.namespace.as_deref(), Some("kafka"));
        assert_eq!(
            out.workload["metadata"]["annotations"],
            deployment["metadata"]["annotations"]
        );
        let labels = typed.metadata.labels.unwrap();
        assert_eq!(labels[CHILD_RESOURCE_LABEL], "StatefulSet");
        assert_eq!(labels["helm.sh/chart"], "kafka-3.1.0");
    }

    #[test]
    fn claim_templates_and_mounts_follow_the_trait() {
        let out = ok(to_stateful_set(&manifest(ROLLING), &broker()));
        let typed: StatefulSet = assert_typed(&out.workload);
        let templates = typed.spec.clone().unwrap().volume_claim_templates.unwrap();
        let names: Vec<_> = templates
            .iter()
            .map(|t| t.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["var-lib-kafka", "jmx-logs"]);
        let data = templates[0].spec.clone().unwrap();
        assert_eq!(data.storage_class_name.as_deref(), Some("fast-ssd"));
        assert_eq!(data.access_modes, Some(vec!["ReadWriteOnce".to_owned()]));
        assert_eq!(
            data.resources.unwrap().requests.unwrap()["storage"].0,
            "20Gi"
        );
        let pod = pod_of(&typed);
        let mounts = |i: usize| -> Vec<(String, String)> {
            pod.containers[i]
                .volume_mounts
                .iter()
                .flatten()
                .map(|m| (m.name.clone(), m.mount_path.clone()))
                .collect()
        };
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            mounts(0),
            [
                pair("config", "/opt/kafka/config"),
                pair("tmp", "/tmp"),
                pair("var-lib-kafka", "/var/lib/kafka")
            ]
        );
        assert_eq!(
            mounts(1),
            [pair("config", "/etc/jmx"), pair("jmx-logs", "/var/log/jmx")]
        );
        let volumes: Vec<_> = pod.volumes.unwrap().into_iter().map(|v| v.name).collect();
        assert_eq!(volumes, ["config", "tmp"], "claims are not pod volumes");
        assert_eq!(pod.init_containers.unwrap().len(), 1);
        assert!(pod.containers[0].readiness_probe.is_some());
        assert!(pod.containers[0].liveness_probe.is_some());
    }

    #[test]
    fn headless_service_selects_the_pods_and_exposes_their_ports() {
        let deployment = manifest(ROLLING);
        let out = ok(to_stateful_set(&deployment, &broker()));
        assert_eq!(out.companions.len(), 1);
        let service: Service = assert_typed(&out.companions[0]);
        assert_eq!(
            service.metadata.name.as_deref(),
            Some("kafka-broker-headless")
        );
        assert_eq!(service.metadata.namespace.as_deref(), Some("kafka"));
        let spec = service.spec.unwrap();
        assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
        assert_eq!(spec.publish_not_ready_addresses, Some(true));
        assert_eq!(
            out.companions[0]["spec"]["selector"],
            deployment["spec"]["template"]["metadata"]["labels"]
        );
        let ports: Vec<_> = spec
            .ports
            .unwrap()
            .into_iter()
            .map(|p| (p.name.unwrap(), p.port, p.protocol.unwrap()))
            .collect();
        let port = |n: &str, p: i32| (n.to_owned(), p, "TCP".to_owned());
        assert_eq!(
            ports,
            [
                port("kafka", 9092),
                port("jmx", 9999),
                port("metrics", 5556)
            ]
        );
    }

    #[test]
    fn recreate_becomes_rolling_update_and_is_reported() {
        let out = ok(to_stateful_set(&manifest(RECREATE), &zookeeper()));
        let typed: StatefulSet = assert_typed(&out.workload);
        let update = typed.spec.clone().unwrap().update_strategy.unwrap();
        assert_eq!(update.type_.as_deref(), Some("RollingUpdate"));
        assert!(update.rolling_update.is_none());
        assert_eq!(
            out.dropped,
            [
                "spec.paused",
                "spec.progressDeadlineSeconds",
                "spec.strategy.type=Recreate"
            ]
        );
        assert!(typed.metadata.namespace.is_none());
        let pod = pod_of(&typed);
        assert_eq!(pod.init_containers.unwrap().len(), 2);
        assert!(
            pod.volumes.is_none(),
            "an empty `volumes:` stays as rendered"
        );
    }

    #[test]
    fn sidecar_ports_count_and_repeated_ports_are_named_by_protocol() {
        let out = ok(to_stateful_set(&manifest(RECREATE), &zookeeper()));
        let service: Service = assert_typed(&out.companions[0]);
        let ports: Vec<_> = service
            .spec
            .unwrap()
            .ports
            .unwrap()
            .into_iter()
            .map(|p| (p.name.unwrap(), p.port, p.protocol.unwrap()))
            .collect();
        let port = |n: &str, p: i32, proto: &str| (n.to_owned(), p, proto.to_owned());
        assert_eq!(
            ports,
            [
                port("client", 2181, "TCP"),
                port("follower", 2888, "TCP"),
                port("election", 3888, "TCP"),
                port("udp-2181", 2181, "UDP"),
                port("http", 2020, "TCP"),
            ]
        );
    }

    #[test]
    fn strategy_mapping_edges() {
        let with_strategy = |strategy: Value| {
            let mut deployment = manifest(ROLLING);
            deployment["spec"]["strategy"] = strategy;
            to_stateful_set(&deployment, &broker())
        };
        let zero = ok(with_strategy(
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}),
        ));
        assert_eq!(
            zero.workload["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate"})
        );
        assert!(
            zero.dropped
                .contains(&"spec.strategy.rollingUpdate.maxUnavailable=0".to_owned())
        );
        let two = ok(with_strategy(
            json!({"rollingUpdate": {"maxUnavailable": 2}}),
        ));
        assert_eq!(
            two.workload["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}})
        );
        assert_typed::<StatefulSet>(&two.workload);
        let none = ok(with_strategy(Value::Null));
        assert_eq!(
            none.workload["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate"})
        );
        let unknown = with_strategy(json!({"type": "BlueGreen"})).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "Deployment \"kafka-broker\" has unknown strategy type \"BlueGreen\""
        );
        for bad in [json!("two"), json!("150%"), json!(-1), json!("3")] {
            let err = with_strategy(json!({"rollingUpdate": {"maxUnavailable": bad}})).unwrap_err();
            assert!(matches!(err, Error::Malformed { .. }), "{err}");
        }
        let zero_percent = ok(with_strategy(
            json!({"rollingUpdate": {"maxUnavailable": "0%"}}),
        ));
        assert_eq!(
            zero_percent.workload["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate"})
        );
    }

    #[test]
    fn unknown_spec_and_top_level_fields_are_dropped_not_copied() {
        let mut deployment = manifest(ROLLING);
        deployment["spec"]["futureField"] = json!(true);
        deployment["extra"] = json!({});
        deployment["spec"]["template"]["spec"]["futurePodField"] = json!("kept");
        let out = ok(to_stateful_set(&deployment, &broker()));
        assert!(out.dropped.contains(&"spec.futureField".to_owned()));
        assert!(out.dropped.contains(&"extra".to_owned()));
        assert!(out.workload["spec"].get("futureField").is_none());
        assert_eq!(
            out.workload["spec"]["template"]["spec"]["futurePodField"],
            "kept"
        );
    }

    #[test]
    fn volume_trait_must_fit_the_pod_template() {
        let deployment = manifest(ROLLING);
        let mut out_of_range = broker();
        out_of_range.traits.volumes[1].container = 2;
        assert_eq!(
            to_stateful_set(&deployment, &out_of_range)
                .unwrap_err()
                .to_string(),
            "Deployment \"kafka-broker\" has 2 containers, no container 2"
        );
        let mut name_clash = broker();
        name_clash.traits.volumes[0].name = Some("config".to_owned());
        assert_eq!(
            to_stateful_set(&deployment, &name_clash)
                .unwrap_err()
                .to_string(),
            "Deployment \"kafka-broker\" already has a volume named \"config\""
        );
        let mut path_clash = broker();
        path_clash.traits.volumes[0].path = "/tmp".to_owned();
        path_clash.traits.volumes[0].name = Some("scratch".to_owned());
        assert!(matches!(
            to_stateful_set(&deployment, &path_clash),
            Err(Error::MountTaken { .. })
        ));
    }

    #[test]
    fn refuses_what_is_not_a_deployment_or_lacks_pod_labels() {
        let mut service = manifest(ROLLING);
        service["kind"] = json!("DaemonSet");
        assert_eq!(
            to_stateful_set(&service, &broker())
                .unwrap_err()
                .to_string(),
            "component \"broker\" expects a Deployment, not \"DaemonSet\""
        );
        let mut unlabelled = manifest(ROLLING);
        unlabelled["spec"]["template"]["metadata"] = json!({});
        assert_eq!(
            to_stateful_set(&unlabelled, &broker())
                .unwrap_err()
                .to_string(),
            "Deployment \"kafka-broker\": spec.template.metadata.labels is not an object"
        );
    }

    #[test]
    fn service_names_fit_in_63_characters() {
        assert_eq!(service_name("zk").unwrap(), "zk-headless");
        let long = format!("{}-x", "a".repeat(53));
        let name = service_name(&long).unwrap();
        assert_eq!(name, format!("{}-headless", "a".repeat(53)));
        assert!(name.len() <= 63);
        assert_eq!(service_name("zk.eu").unwrap(), "zk-eu-headless");
        assert!(service_name("1zk").is_err());
    }

    #[test]
    fn stateful_set_without_volume_trait_has_no_claim_templates() {
        let mut plain = zookeeper();
        plain.traits.volumes.clear();
        let out = ok(to_stateful_set(&manifest(RECREATE), &plain));
        assert!(out.workload["spec"].get("volumeClaimTemplates").is_none());
        assert_typed::<StatefulSet>(&out.workload);
    }
}
