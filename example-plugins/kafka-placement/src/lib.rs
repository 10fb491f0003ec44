//! Kafka placement plugin: sizes ZooKeeper and the brokers from the
//! platform's schedulable workers, runs brokers as StatefulSets (stable
//! identities and a disk each), places a workload on the node of its local
//! volume when the platform has one named after the chart, and vetoes an
//! apply on a platform with no schedulable worker.
//!
//! Modelled on data platforms that run ZooKeeper and Kafka in containers:
//! an odd ZooKeeper ensemble (three when there are three workers, else
//! one), one broker per worker up to three, and the replication factor of
//! internal topics never above the broker count.

use capstan_plugin_sdk::v0_1::{
    App, Component, Facts, Hook, HookOutcome, Info, NodeRole, Plugin, PluginError, Values,
    WorkloadKind, export_plugin,
};

/// The ZooKeeper chart.
pub const ZOOKEEPER: &str = "zookeeper";
/// The broker chart.
pub const BROKER: &str = "broker";
/// Brokers and ZooKeeper nodes never exceed this.
pub const MAX_REPLICAS: u32 = 3;

/// The kafka placement plugin.
pub struct KafkaPlacement;

impl Plugin for KafkaPlacement {
    fn info() -> Info {
        Info::new("kafka-placement", env!("CARGO_PKG_VERSION"))
            .serving_charts([ZOOKEEPER, BROKER])
            .serving_hooks([Hook::SemanticCheck])
            .deciding_workloads()
    }

    fn overrides(_app: &App, facts: &Facts, chart: &str) -> Result<Values, PluginError> {
        let workers = schedulable_workers(facts);
        if workers == 0 {
            return Err(PluginError::InvalidFacts("no schedulable worker".into()));
        }
        let mut values = match chart {
            ZOOKEEPER => {
                let ensemble = if workers >= 3 { 3 } else { 1 };
                Values::new().set("replicaCount", ensemble)
            }
            BROKER => {
                let brokers = workers.min(MAX_REPLICAS);
                Values::new()
                    .set("replicaCount", brokers)
                    .set("env.KAFKA_ZOOKEEPER_CONNECT", "zookeeper:2181")
                    .set("env.KAFKA_DEFAULT_REPLICATION_FACTOR", brokers.to_string())
                    .set(
                        "env.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR",
                        brokers.to_string(),
                    )
            }
            other => return Err(PluginError::Unsupported(format!("chart {other}"))),
        };
        if let Some(node) = volume_node(facts, chart) {
            values = values.set(
                "nodeSelector",
                serde_json::json!({"kubernetes.io/hostname": node}),
            );
        }
        Ok(values)
    }

    fn workload_kind(
        _app: &App,
        _facts: &Facts,
        component: &Component,
    ) -> Result<WorkloadKind, PluginError> {
        if component.chart == BROKER {
            Ok(WorkloadKind::StatefulSet)
        } else {
            Err(PluginError::Unsupported(format!(
                "component {} keeps the default rule",
                component.name
            )))
        }
    }

    fn lifecycle(hook: Hook, _app: &App, facts: &Facts) -> Result<HookOutcome, PluginError> {
        if hook == Hook::SemanticCheck && schedulable_workers(facts) == 0 {
            return Ok(HookOutcome::Veto(
                "kafka needs at least one schedulable worker node".into(),
            ));
        }
        Ok(HookOutcome::Proceed)
    }
}

export_plugin!(KafkaPlacement);

fn schedulable_workers(facts: &Facts) -> u32 {
    facts
        .nodes_with_role(NodeRole::Worker)
        .filter(|n| n.schedulable)
        .count() as u32
}

/// The node of the local volume `CHART-data`, when the platform has one
/// (`zookeeper` uses `zk-data`).
fn volume_node<'f>(facts: &'f Facts, chart: &str) -> Option<&'f str> {
    let wanted = match chart {
        ZOOKEEPER => "zk-data",
        _ => "broker-data",
    };
    facts
        .local_volumes
        .iter()
        .find(|v| v.name == wanted)
        .map(|v| v.node.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_plugin_sdk::v0_1::{LocalVolume, testing};
    use serde_json::json;

    #[test]
    fn one_worker_gets_one_broker_and_one_zookeeper() {
        let facts = Facts::simplex();
        let zk = testing::overrides::<KafkaPlacement>(&facts, ZOOKEEPER).unwrap();
        assert_eq!(zk.get("replicaCount"), Some(&json!(1)));
        let broker = testing::overrides::<KafkaPlacement>(&facts, BROKER).unwrap();
        assert_eq!(broker.get("replicaCount"), Some(&json!(1)));
        assert_eq!(
            broker.get("env.KAFKA_DEFAULT_REPLICATION_FACTOR"),
            Some(&json!("1"))
        );
    }

    #[test]
    fn many_workers_get_an_ensemble_of_three_and_at_most_three_brokers() {
        let facts = Facts::standard(2, 5);
        let zk = testing::overrides::<KafkaPlacement>(&facts, ZOOKEEPER).unwrap();
        assert_eq!(zk.get("replicaCount"), Some(&json!(3)));
        let broker = testing::overrides::<KafkaPlacement>(&facts, BROKER).unwrap();
        assert_eq!(broker.get("replicaCount"), Some(&json!(MAX_REPLICAS)));
    }

    #[test]
    fn a_workload_is_placed_on_the_node_of_its_local_volume() {
        let mut facts = Facts::standard(1, 2);
        facts.local_volumes.push(LocalVolume {
            name: "zk-data".into(),
            node: "worker-1".into(),
            host_path: "/srv/zk".into(),
            size: "5Gi".into(),
            storage_class: "local-storage".into(),
        });
        let zk = testing::overrides::<KafkaPlacement>(&facts, ZOOKEEPER).unwrap();
        assert_eq!(
            zk.get("nodeSelector"),
            Some(&json!({"kubernetes.io/hostname": "worker-1"}))
        );
        let broker = testing::overrides::<KafkaPlacement>(&facts, BROKER).unwrap();
        assert_eq!(broker.get("nodeSelector"), None);
    }

    #[test]
    fn brokers_are_stateful_sets_and_others_keep_the_default_rule() {
        let facts = Facts::simplex();
        let component = |chart: &str| Component {
            name: chart.into(),
            chart: chart.into(),
            workload: format!("Deployment/{chart}"),
            volumes: vec![],
            local_volumes: vec![],
        };
        assert_eq!(
            testing::workload_kind::<KafkaPlacement>(&facts, &component(BROKER)).unwrap(),
            WorkloadKind::StatefulSet
        );
        assert!(matches!(
            testing::workload_kind::<KafkaPlacement>(&facts, &component(ZOOKEEPER)),
            Err(PluginError::Unsupported(_))
        ));
    }

    #[test]
    fn no_schedulable_worker_is_a_veto() {
        let mut facts = Facts::simplex();
        for node in &mut facts.nodes {
            node.schedulable = false;
        }
        let outcome = testing::lifecycle::<KafkaPlacement>(Hook::SemanticCheck, &facts).unwrap();
        assert!(matches!(outcome, HookOutcome::Veto(_)));
        assert!(testing::overrides::<KafkaPlacement>(&facts, BROKER).is_err());
    }
}
