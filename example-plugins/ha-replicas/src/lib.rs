//! HA replicas plugin: replica counts, pod anti-affinity and a disruption
//! budget from the number of controllers.
//!
//! Modelled on StarlingX's override plugins that scale platform services with
//! the controller count: one replica on a simplex system, one per controller
//! (at most three) elsewhere, with hard anti-affinity on
//! `kubernetes.io/hostname` so two replicas never share a node, and a
//! PodDisruptionBudget once there is more than one replica.

use capstan_plugin_sdk::v0_1::{
    App, Facts, Info, NodeRole, Plugin, PluginError, Values, export_plugin,
};
use serde_json::json;

/// The charts this plugin serves.
pub const CHARTS: [&str; 2] = ["web", "api"];

/// Replicas never exceed this, whatever the controller count.
pub const MAX_REPLICAS: u32 = 3;

/// The HA replicas plugin.
pub struct HaReplicas;

impl Plugin for HaReplicas {
    fn info() -> Info {
        Info::new("ha-replicas", env!("CARGO_PKG_VERSION")).serving_charts(CHARTS)
    }

    fn overrides(_app: &App, facts: &Facts, chart: &str) -> Result<Values, PluginError> {
        if !CHARTS.contains(&chart) {
            return Err(PluginError::Unsupported(format!("chart {chart}")));
        }
        let controllers = facts.nodes_with_role(NodeRole::Controller).count() as u32;
        if controllers != facts.controller_count {
            return Err(PluginError::InvalidFacts(format!(
                "controller count is {} but {} nodes are controllers",
                facts.controller_count, controllers
            )));
        }
        let replicas = if facts.is_simplex() {
            1
        } else {
            controllers.clamp(1, MAX_REPLICAS)
        };
        let mut values = Values::new().set("replicaCount", replicas);
        if replicas > 1 {
            values = values
                .set("affinity", anti_affinity(chart))
                .set("podDisruptionBudget.enabled", true)
                .set("podDisruptionBudget.minAvailable", replicas - 1);
        } else {
            values = values.set("podDisruptionBudget.enabled", false);
        }
        Ok(values)
    }
}

export_plugin!(HaReplicas);

fn anti_affinity(chart: &str) -> serde_json::Value {
    json!({
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {
                    "matchLabels": {"app.kubernetes.io/name": chart}
                },
                "topologyKey": "kubernetes.io/hostname"
            }]
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_plugin_sdk::v0_1::testing;

    /// Every vector of `tests/fixtures/vectors/ha-replicas/` (`FACTS.CHART.json`,
    /// the values as serde_json's pretty text): the Python twin
    /// (`example-plugins/python/ha-replicas`) and both components under
    /// `capstan plugin run` must give the same bytes.
    #[test]
    fn matches_the_shared_vectors() {
        let vectors =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/vectors");
        let mut checked = 0;
        for entry in std::fs::read_dir(vectors.join("ha-replicas")).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_str().unwrap();
            let (facts, chart) = file.trim_end_matches(".json").split_once('.').unwrap();
            let facts_text =
                std::fs::read_to_string(vectors.join("facts").join(format!("{facts}.json")))
                    .unwrap();
            let facts: Facts = serde_json::from_str(&facts_text).unwrap();
            let values = testing::overrides::<HaReplicas>(&facts, chart).unwrap();
            let text = serde_json::to_string_pretty(&values.into_json_value()).unwrap() + "\n";
            assert_eq!(text, std::fs::read_to_string(&path).unwrap(), "{file}");
            checked += 1;
        }
        assert!(checked >= 4, "only {checked} vectors");
    }

    #[test]
    fn simplex_runs_one_replica_without_a_budget() {
        let v = testing::overrides::<HaReplicas>(&Facts::simplex(), "web").unwrap();
        assert_eq!(v.get("replicaCount"), Some(&json!(1)));
        assert_eq!(v.get("podDisruptionBudget.enabled"), Some(&json!(false)));
        assert_eq!(v.get("affinity"), None);
    }

    #[test]
    fn replicas_follow_controllers_up_to_three() {
        let two = testing::overrides::<HaReplicas>(&Facts::standard(2, 5), "api").unwrap();
        assert_eq!(two.get("replicaCount"), Some(&json!(2)));
        assert_eq!(two.get("podDisruptionBudget.minAvailable"), Some(&json!(1)));
        let topology = &two.get("affinity").unwrap()["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            [0]["topologyKey"];
        assert_eq!(topology, &json!("kubernetes.io/hostname"));

        let five = testing::overrides::<HaReplicas>(&Facts::standard(5, 5), "web").unwrap();
        assert_eq!(five.get("replicaCount"), Some(&json!(MAX_REPLICAS)));
    }

    #[test]
    fn inconsistent_controller_count_is_invalid_facts() {
        let mut facts = Facts::standard(2, 1);
        facts.controller_count = 3;
        assert!(matches!(
            testing::overrides::<HaReplicas>(&facts, "web"),
            Err(PluginError::InvalidFacts(_))
        ));
    }
}
