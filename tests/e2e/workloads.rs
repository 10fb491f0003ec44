//! Workload polymorphism and local volumes through the daemon with the
//! directory target: the sticky decision, `--rekind`, volume create, list
//! and remove, and the two-node conflict; every generated object
//! deserializes into its `k8s-openapi` type.

use std::path::Path;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Service};

use crate::daemon::{Daemon, edit, text};

/// Every object of an applied release file, by kind.
fn objects(file: &Path) -> Vec<serde_json::Value> {
    let content =
        std::fs::read_to_string(file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    content
        .split("\n---")
        .map(|doc| doc.trim_start_matches("---"))
        .filter(|doc| doc.lines().any(|l| l.starts_with("kind:")))
        .map(|doc| serde_yaml_ng::from_str(doc).unwrap())
        .collect()
}

fn of_kind<'a>(objects: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

/// Deserializes every object into its k8s-openapi type.
fn check_typed(objects: &[serde_json::Value]) {
    for object in objects {
        let result = match object["kind"].as_str().unwrap_or_default() {
            "StatefulSet" => serde_json::from_value::<StatefulSet>(object.clone()).map(drop),
            "Deployment" => serde_json::from_value::<Deployment>(object.clone()).map(drop),
            "Service" => serde_json::from_value::<Service>(object.clone()).map(drop),
            "PersistentVolume" => {
                serde_json::from_value::<PersistentVolume>(object.clone()).map(drop)
            }
            "PersistentVolumeClaim" => {
                serde_json::from_value::<PersistentVolumeClaim>(object.clone()).map(drop)
            }
            _ => Ok(()),
        };
        result.unwrap_or_else(|e| panic!("{} does not deserialize: {e}", object["kind"]));
    }
}

fn decision(d: &Daemon, app: &str, component: &str) -> serde_json::Value {
    let shown = d.show(app);
    shown["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["component"] == component)
        .cloned()
        .unwrap_or_else(|| panic!("no decision for {component}: {shown}"))
}

#[test]
fn the_kind_is_decided_once_kept_when_traits_change_and_rekind_decides_again() {
    let d = Daemon::start("workloads_sticky");
    let v1 = d.app_bundle("kafka", "1.0.0", |_| {});
    d.ok(&["app", "upload", v1.to_str().unwrap()]);
    d.ok(&["app", "apply", "kafka"]);
    let broker = objects(&d.applied().join("kafka/broker.yaml"));
    check_typed(&broker);
    let sts = of_kind(&broker, "StatefulSet");
    assert_eq!(sts.len(), 1, "the volume trait makes a StatefulSet");
    assert_eq!(
        sts[0]["metadata"]["labels"]["app.capstan.dev/child-resource"],
        "StatefulSet"
    );
    assert_eq!(sts[0]["spec"]["podManagementPolicy"], "Parallel");
    let claim = &sts[0]["spec"]["volumeClaimTemplates"][0];
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "8Gi");
    let service = sts[0]["spec"]["serviceName"].as_str().unwrap();
    let headless = of_kind(&broker, "Service");
    assert!(
        headless
            .iter()
            .any(|s| s["metadata"]["name"] == service && s["spec"]["clusterIP"] == "None")
    );
    assert!(of_kind(&broker, "Deployment").is_empty());
    assert_eq!(
        decision(&d, "kafka", "broker")["decided_by"],
        "kafka-placement"
    );
    assert_eq!(
        sts[0]["spec"]["replicas"], 2,
        "the plugin runs a broker per worker of the duplex facts"
    );

    // 1.1.0 drops the volume trait and the plugin: the decision stays,
    // with a warning.
    let v11 = d.app_bundle("kafka", "1.1.0", |app| {
        let meta = app.join("capstan.yaml");
        edit(
            &meta,
            "      volumes:\n        - {container: 0, storageClassName: general, size: 8Gi, path: /var/lib/kafka}\n",
            "      volumes: []\n",
        );
        let text = std::fs::read_to_string(&meta).unwrap();
        let start = text.find("plugins:").unwrap();
        let end = text.find("components:").unwrap();
        std::fs::write(&meta, format!("{}{}", &text[..start], &text[end..])).unwrap();
        std::fs::remove_file(app.join("plugins/kafka-placement.wasm")).unwrap();
    });
    d.ok(&["app", "update", v11.to_str().unwrap()]);
    let shown = d.show("kafka");
    assert_eq!(shown["active_version"], "1.1.0");
    assert!(
        shown["message"]
            .as_str()
            .unwrap()
            .contains("traits changed"),
        "{shown}"
    );
    assert_eq!(
        of_kind(
            &objects(&d.applied().join("kafka/broker.yaml")),
            "StatefulSet"
        )
        .len(),
        1
    );

    // --rekind decides again: with no plugin and no volume trait the
    // default rule says Deployment, and the StatefulSet is replaced.
    let out = d.cli(&["app", "apply", "kafka", "--rekind", "broker"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let broker = objects(&d.applied().join("kafka/broker.yaml"));
    check_typed(&broker);
    assert!(of_kind(&broker, "StatefulSet").is_empty());
    let deployments = of_kind(&broker, "Deployment");
    assert_eq!(deployments.len(), 1);
    assert_eq!(
        deployments[0]["metadata"]["labels"]["app.capstan.dev/child-resource"],
        "Deployment"
    );
    let decided = decision(&d, "kafka", "broker");
    assert_eq!(decided["kind"], "Deployment");
    assert_eq!(decided["decided_by"], "rekind");
    let unknown = d.cli(&["app", "apply", "kafka", "--rekind", "nope"]);
    assert!(!unknown.status.success());
    assert!(
        text(&unknown.stderr).contains("no component"),
        "{}",
        text(&unknown.stderr)
    );
}

#[test]
fn local_volumes_are_created_mounted_pinned_and_outlive_the_app() {
    let d = Daemon::start("workloads_volumes");
    for (name, path, size) in [
        ("zk-data", "/srv/zk", "5Gi"),
        ("broker-data", "/srv/kafka", "20Gi"),
    ] {
        d.ok(&[
            "volume", "create", name, "--node", "worker-1", "--path", path, "--size", size, "-n",
            "kafka",
        ]);
        let objects = objects(&d.applied().join(format!("capstan-volumes/{name}.yaml")));
        check_typed(&objects);
        assert_eq!(of_kind(&objects, "PersistentVolume").len(), 1);
        assert_eq!(
            of_kind(&objects, "PersistentVolumeClaim")[0]["metadata"]["namespace"],
            "kafka"
        );
    }
    let dup = d.cli(&[
        "volume", "create", "zk-data", "--node", "worker-1", "--path", "/x", "--size", "1Gi",
    ]);
    assert!(!dup.status.success());
    assert!(
        text(&dup.stderr).contains("already exists"),
        "{}",
        text(&dup.stderr)
    );
    let bad = d.cli(&[
        "volume", "create", "v", "--node", "worker-1", "--path", "relative", "--size", "1Gi",
    ]);
    assert!(!bad.status.success());

    let v1 = d.app_bundle("kafka-local", "1.0.0", |_| {});
    d.ok(&["app", "upload", v1.to_str().unwrap()]);
    d.ok(&["app", "apply", "kafka-local"]);
    let zk = objects(&d.applied().join("kafka-local/zookeeper.yaml"));
    check_typed(&zk);
    let deployment = of_kind(&zk, "Deployment")[0];
    let pod = &deployment["spec"]["template"]["spec"];
    // The plugin saw the volume in its facts and placed ZooKeeper on its
    // node; the transform pins it there too.
    assert_eq!(pod["nodeSelector"]["kubernetes.io/hostname"], "worker-1");
    assert_eq!(
        pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "zk-data"
    );
    assert_eq!(
        pod["containers"][0]["volumeMounts"][0]["mountPath"],
        "/var/lib/zookeeper"
    );

    let list: serde_json::Value =
        serde_json::from_str(&d.ok(&["volume", "list", "-o", "json"])).unwrap();
    let zk_view = list
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "zk-data")
        .unwrap();
    assert_eq!(
        zk_view["used_by"],
        serde_json::json!(["kafka-local/zookeeper"])
    );
    assert_eq!(zk_view["node"], "worker-1");
    let table = d.ok(&["volume", "list"]);
    assert!(
        table.contains("IN USE BY") && table.contains("kafka-local/zookeeper"),
        "{table}"
    );

    let in_use = d.cli(&["volume", "remove", "zk-data"]);
    assert!(!in_use.status.success());
    assert!(
        text(&in_use.stderr).contains("in use by kafka-local/zookeeper"),
        "{}",
        text(&in_use.stderr)
    );
    d.ok(&["app", "remove", "kafka-local"]);
    assert!(
        d.applied().join("capstan-volumes/zk-data.yaml").exists(),
        "volumes outlive the app"
    );
    d.ok(&["volume", "remove", "zk-data"]);
    assert!(!d.applied().join("capstan-volumes/zk-data.yaml").exists());
    let missing = d.cli(&["volume", "remove", "zk-data"]);
    assert!(!missing.status.success());
}

#[test]
fn volumes_on_two_nodes_for_one_workload_fail_before_anything_is_applied() {
    let d = Daemon::start("workloads_two_nodes");
    d.ok(&[
        "volume", "create", "zk-data", "--node", "worker-1", "--path", "/srv/zk", "--size", "5Gi",
        "-n", "kafka",
    ]);
    d.ok(&[
        "volume",
        "create",
        "broker-data",
        "--node",
        "worker-2",
        "--path",
        "/srv/kafka",
        "--size",
        "5Gi",
        "-n",
        "kafka",
    ]);
    let v1 = d.app_bundle("kafka-local", "1.0.0", |app| {
        edit(
            &app.join("capstan.yaml"),
            "        - {volume: broker-data, container: 0, path: /var/lib/kafka}\n",
            "        - {volume: broker-data, container: 0, path: /var/lib/kafka}\n        - {volume: zk-data, container: 0, path: /var/lib/zk}\n",
        );
    });
    d.ok(&["app", "upload", v1.to_str().unwrap()]);
    let out = d.cli(&["app", "apply", "kafka-local"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("worker-1") && stderr.contains("worker-2"),
        "{stderr}"
    );
    assert_eq!(d.state_of("kafka-local"), "apply-failed");
    assert!(
        !d.applied().join("kafka-local").exists(),
        "nothing was applied: {stderr}"
    );
}

#[test]
fn the_kafka_plugin_vetoes_a_platform_without_schedulable_workers() {
    let mut d = Daemon::start("workloads_kafka_veto");
    let facts = d.dir.join("no-workers.yaml");
    std::fs::write(
        &facts,
        "systemMode: simplex\ncontrollerCount: 1\nworkerCount: 0\nkubernetesVersion: 1.30.2\nnodes:\n  - {name: controller-0, roles: [controller], schedulable: false}\n",
    )
    .unwrap();
    d.kill();
    d.spawn_with_facts(&facts);
    let v1 = d.app_bundle("kafka", "1.0.0", |_| {});
    d.ok(&["app", "upload", v1.to_str().unwrap()]);
    let out = d.cli(&["app", "apply", "kafka"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("at least one schedulable worker"),
        "{stderr}"
    );
    assert_eq!(d.state_of("kafka"), "apply-failed");
}
