//! Storage plugin: values for the Ceph RBD and CephFS provisioner charts,
//! computed from the platform's storage backends.
//!
//! Modelled on StarlingX's platform override plugins for its RBD and CephFS
//! provisioners: the monitors, pool and replication come from the Ceph
//! backend; on a one-controller (simplex) system leader election is off and
//! one provisioner replica runs; elsewhere two replicas elect a leader and
//! run on controllers only. The `semantic-check` hook vetoes an apply on a
//! platform with no Ceph backend.

use capstan_plugin_sdk::v0_1::{
    App, Facts, Hook, HookOutcome, Info, Plugin, PluginError, StorageBackend, StorageKind, Values,
    export_plugin, log,
};
use serde_json::json;

/// The charts this plugin serves.
pub const RBD_CHART: &str = "rbd-provisioner";
/// The CephFS provisioner chart.
pub const CEPHFS_CHART: &str = "cephfs-provisioner";

/// The storage plugin.
pub struct Storage;

impl Plugin for Storage {
    fn info() -> Info {
        Info::new("storage", env!("CARGO_PKG_VERSION"))
            .serving_charts([RBD_CHART, CEPHFS_CHART])
            .serving_hooks([Hook::SemanticCheck])
    }

    fn overrides(_app: &App, facts: &Facts, chart: &str) -> Result<Values, PluginError> {
        let ceph = ceph_backend(facts)?;
        log::info(&format!(
            "ceph backend {} with {} monitor(s), replication {}",
            ceph.name,
            ceph.monitors.len(),
            ceph.replication
        ));
        let common = provisioner_values(facts, ceph);
        match chart {
            RBD_CHART => Ok(common.merge("", rbd_values(ceph)?)),
            CEPHFS_CHART => Ok(common.merge("", cephfs_values(ceph))),
            other => Err(PluginError::Unsupported(format!("chart {other}"))),
        }
    }

    fn lifecycle(hook: Hook, _app: &App, facts: &Facts) -> Result<HookOutcome, PluginError> {
        if hook != Hook::SemanticCheck {
            return Ok(HookOutcome::Proceed);
        }
        Ok(match ceph_backend(facts) {
            Ok(_) => HookOutcome::Proceed,
            Err(_) => HookOutcome::Veto(
                "this app needs a Ceph storage backend and the platform has none".into(),
            ),
        })
    }
}

export_plugin!(Storage);

fn ceph_backend(facts: &Facts) -> Result<&StorageBackend, PluginError> {
    facts
        .backend(StorageKind::Ceph)
        .or_else(|| facts.backend(StorageKind::CephRook))
        .ok_or_else(|| PluginError::InvalidFacts("no ceph storage backend".into()))
}

/// Replica count, leader election and placement shared by both provisioners.
fn provisioner_values(facts: &Facts, ceph: &StorageBackend) -> Values {
    let simplex = facts.is_simplex() || facts.controller_count < 2;
    let replicas = if simplex { 1 } else { 2 };
    Values::new()
        .set("provisioner.replicaCount", replicas)
        .set("provisioner.leaderElection.enabled", !simplex)
        .set(
            "provisioner.nodeSelector",
            json!({"node-role.kubernetes.io/control-plane": ""}),
        )
        .set(
            "provisioner.tolerations",
            json!([{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}]),
        )
        .set("csiConfig.monitors", ceph.monitors.clone())
        .set("csiConfig.clusterID", ceph.name.clone())
}

fn rbd_values(ceph: &StorageBackend) -> Result<serde_json::Value, PluginError> {
    let pool = ceph
        .pools
        .iter()
        .find(|p| p.contains("rbd"))
        .or(ceph.pools.first())
        .ok_or_else(|| PluginError::InvalidFacts(format!("backend {} has no pool", ceph.name)))?;
    // Small placement-group chunks on a single-replica system keep OSD memory low.
    let chunk_size = if ceph.replication < 2 { 8 } else { 64 };
    Ok(json!({
        "storageClass": {
            "name": "general",
            "isDefault": ceph.is_default,
            "pool": pool,
            "replication": ceph.replication,
            "chunkSize": chunk_size,
            "adminSecretName": "ceph-admin",
            "userSecretName": format!("ceph-pool-{pool}"),
        }
    }))
}

fn cephfs_values(ceph: &StorageBackend) -> serde_json::Value {
    json!({
        "storageClass": {
            "name": "cephfs",
            "isDefault": false,
            "fsName": "kube-cephfs",
            "dataPool": "kube-cephfs-data",
            "metadataPool": "kube-cephfs-metadata",
            "replication": ceph.replication,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_plugin_sdk::v0_1::testing;

    /// Every vector of `tests/fixtures/vectors/storage/` (`FACTS.CHART.json`,
    /// the values as serde_json's pretty text): the Python twin
    /// (`example-plugins/python/storage`) and both components under
    /// `capstan plugin run` must give the same bytes.
    #[test]
    fn matches_the_shared_vectors() {
        let vectors =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/vectors");
        let mut checked = 0;
        for entry in std::fs::read_dir(vectors.join("storage")).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_str().unwrap();
            let (facts, chart) = file.trim_end_matches(".json").split_once('.').unwrap();
            let facts_text =
                std::fs::read_to_string(vectors.join("facts").join(format!("{facts}.json")))
                    .unwrap();
            let facts: Facts = serde_json::from_str(&facts_text).unwrap();
            let values = testing::overrides::<Storage>(&facts, chart).unwrap();
            let text = serde_json::to_string_pretty(&values.into_json_value()).unwrap() + "\n";
            assert_eq!(text, std::fs::read_to_string(&path).unwrap(), "{file}");
            checked += 1;
        }
        assert!(checked >= 4, "only {checked} vectors");
    }

    fn ceph(replication: u32) -> StorageBackend {
        StorageBackend {
            name: "ceph-store".into(),
            kind: StorageKind::Ceph,
            replication,
            monitors: vec!["192.168.204.2:6789".into()],
            pools: vec!["kube-rbd".into()],
            is_default: true,
        }
    }

    #[test]
    fn simplex_turns_leader_election_off_and_runs_one_replica() {
        let facts = Facts::simplex().with_backend(ceph(1));
        let v = testing::overrides::<Storage>(&facts, RBD_CHART).unwrap();
        assert_eq!(
            v.get("provisioner.leaderElection.enabled"),
            Some(&json!(false))
        );
        assert_eq!(v.get("provisioner.replicaCount"), Some(&json!(1)));
        assert_eq!(v.get("storageClass.chunkSize"), Some(&json!(8)));
        assert_eq!(v.get("storageClass.pool"), Some(&json!("kube-rbd")));
    }

    #[test]
    fn standard_elects_a_leader_among_two_replicas() {
        let facts = Facts::standard(2, 3).with_backend(ceph(2));
        let v = testing::overrides::<Storage>(&facts, RBD_CHART).unwrap();
        assert_eq!(
            v.get("provisioner.leaderElection.enabled"),
            Some(&json!(true))
        );
        assert_eq!(v.get("provisioner.replicaCount"), Some(&json!(2)));
        assert_eq!(
            v.get("csiConfig.monitors"),
            Some(&json!(["192.168.204.2:6789"]))
        );
        assert!(
            testing::take_logs()
                .iter()
                .any(|(_, l)| l.contains("ceph-store"))
        );
    }

    #[test]
    fn no_ceph_backend_is_invalid_facts_and_a_veto() {
        let facts = Facts::simplex();
        assert!(matches!(
            testing::overrides::<Storage>(&facts, RBD_CHART),
            Err(PluginError::InvalidFacts(_))
        ));
        assert!(matches!(
            testing::lifecycle::<Storage>(Hook::SemanticCheck, &facts),
            Ok(HookOutcome::Veto(_))
        ));
    }

    #[test]
    fn unknown_chart_is_unsupported() {
        let facts = Facts::simplex().with_backend(ceph(1));
        assert!(matches!(
            testing::overrides::<Storage>(&facts, "nginx"),
            Err(PluginError::Unsupported(_))
        ));
    }
}
