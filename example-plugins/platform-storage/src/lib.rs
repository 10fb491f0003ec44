//! Platform storage plugin (contract 0.2): values for a Ceph RBD CSI chart,
//! `csi-rbd`, from the platform's storage section, and the hooks that keep
//! it safe to apply and to update.
//!
//! Modelled on what StarlingX's platform app does for its RBD provisioner,
//! without shelling out: the host hands the Ceph cluster id, the monitors
//! and each backend's health as facts.
//!
//! - Overrides: one storage class per Ceph backend (on the hosts or run by
//!   Rook), with the backend's cluster id, pool and replication; the
//!   provisioner runs one replica per ready controller, at most 2, and
//!   elects a leader except on a simplex system; the CSI config lists the
//!   primary backend's monitors.
//! - `pre-apply` vetoes when there is no Ceph backend or one reports health
//!   `error`.
//! - `pre-update` asks the host to delete the chart's CSIDriver object,
//!   whose spec is immutable, so the update can create it anew.
//!
//! It reads the sections `system`, `hosts` and `storage`.

use capstan_plugin_sdk::v0_2::export_plugin;
use capstan_plugin_sdk::v0_2::{
    Answer, ChartCall, Facts, Hook, HookAnswer, HookCall, Info, ObjectRef, Plugin, PluginError,
    Section, StorageBackend, StorageHealth, Values, log,
};
use serde_json::{Value, json};

/// The chart this plugin computes values for.
pub const CHART: &str = "csi-rbd";

/// The name of the chart's CSIDriver object (cluster-scoped).
pub const CSI_DRIVER: &str = "rbd.csi.example.dev";

/// The most provisioner replicas: one leader and one standby.
pub const MAX_PROVISIONER_REPLICAS: u32 = 2;

/// The storage class name of the default backend.
pub const DEFAULT_CLASS: &str = "general";

/// The platform storage plugin.
pub struct PlatformStorage;

impl Plugin for PlatformStorage {
    fn info() -> Info {
        Info::new("platform-storage", env!("CARGO_PKG_VERSION"))
            .serving_charts([CHART])
            .with_hooks([Hook::PreApply, Hook::PreUpdate])
            .reading([Section::System, Section::Hosts, Section::Storage])
    }

    fn overrides(call: &ChartCall, facts: &Facts) -> Result<Answer, PluginError> {
        if call.chart != CHART {
            return Err(PluginError::Unsupported(format!("chart {}", call.chart)));
        }
        let backends = facts.ceph_backends()?;
        let primary = primary(&backends).ok_or_else(|| {
            PluginError::InvalidFacts("the platform has no ceph storage backend".into())
        })?;
        let classes = backends
            .iter()
            .map(|b| storage_class(b))
            .collect::<Result<Vec<_>, _>>()?;
        let replicas = facts.ready_controllers()?.min(MAX_PROVISIONER_REPLICAS);
        let simplex = facts.is_simplex()?;
        log::info(&format!(
            "{} storage class(es); {replicas} provisioner replica(s); monitors of {}",
            classes.len(),
            primary.name
        ));
        Ok(Answer::new(
            Values::new()
                .set("storageClasses", classes)
                .set("provisioner.replicaCount", replicas)
                .set("provisioner.leaderElection.enabled", !simplex)
                .set("csiConfig.clusterID", primary.cluster_id.clone())
                .set("csiConfig.monitors", primary.monitor_addresses()),
        ))
    }

    fn lifecycle(call: &HookCall, facts: &Facts) -> Result<HookAnswer, PluginError> {
        match call.hook {
            Hook::PreApply => pre_apply(facts),
            Hook::PreUpdate => Ok(HookAnswer::proceed().delete(csi_driver())),
            _ => Ok(HookAnswer::proceed()),
        }
    }
}

export_plugin!(PlatformStorage);

/// The CSIDriver the chart installs: its spec is immutable, so an update
/// deletes it and the new release creates it again.
pub fn csi_driver() -> ObjectRef {
    ObjectRef::cluster_scoped("storage.k8s.io/v1", "CSIDriver", CSI_DRIVER)
}

/// The backend whose monitors the CSI config lists: the default one, else
/// the first.
fn primary<'a>(backends: &[&'a StorageBackend]) -> Option<&'a StorageBackend> {
    backends
        .iter()
        .find(|b| b.is_default)
        .or(backends.first())
        .copied()
}

/// One storage class for a Ceph backend.
fn storage_class(backend: &StorageBackend) -> Result<Value, PluginError> {
    let pool = backend
        .pools
        .iter()
        .find(|p| p.contains("rbd"))
        .or(backend.pools.first())
        .ok_or_else(|| {
            PluginError::InvalidFacts(format!("storage backend {} offers no pool", backend.name))
        })?;
    if backend.cluster_id.is_empty() {
        return Err(PluginError::InvalidFacts(format!(
            "storage backend {} has no cluster id",
            backend.name
        )));
    }
    let name = if backend.is_default {
        DEFAULT_CLASS
    } else {
        backend.name.as_str()
    };
    let mut class = json!({
        "name": name,
        "clusterID": backend.cluster_id,
        "pool": pool,
        "replication": backend.replication,
        "isDefault": backend.is_default,
    });
    if let (Some(tier), Some(map)) = (backend.tiers.first(), class.as_object_mut()) {
        map.insert("crushRuleName".into(), json!(tier.rule));
    }
    Ok(class)
}

/// Vetoes an apply without a Ceph backend, or with one in error.
fn pre_apply(facts: &Facts) -> Result<HookAnswer, PluginError> {
    let backends = facts.ceph_backends()?;
    if backends.is_empty() {
        return Ok(HookAnswer::veto(
            "this app needs a ceph storage backend and the platform has none",
        ));
    }
    for backend in &backends {
        match backend.health {
            StorageHealth::Error => {
                return Ok(HookAnswer::veto(format!(
                    "storage backend {} reports health error",
                    backend.name
                )));
            }
            StorageHealth::Warn | StorageHealth::Unknown => log::warn(&format!(
                "storage backend {} reports health {}",
                backend.name, backend.health
            )),
            StorageHealth::Ok => {}
        }
    }
    Ok(HookAnswer::proceed())
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_plugin_sdk::v0_2::{
        Action, AdministrativeState, AvailabilityState, Host, OperationalState, Personality,
        StorageKind, testing,
    };

    fn values(facts: &Facts) -> Values {
        testing::overrides::<PlatformStorage>(&testing::chart_call(CHART), facts)
            .unwrap()
            .values
    }

    fn with_ceph(facts: Facts) -> Facts {
        facts.with_storage(testing::ceph_backend("ceph-store", 2))
    }

    #[test]
    fn simplex_runs_one_replica_without_leader_election() {
        let v = values(&with_ceph(testing::simplex()));
        assert_eq!(v.get("provisioner.replicaCount"), Some(&json!(1)));
        assert_eq!(
            v.get("provisioner.leaderElection.enabled"),
            Some(&json!(false))
        );
    }

    #[test]
    fn duplex_elects_a_leader_among_two_replicas() {
        let v = values(&with_ceph(testing::duplex()));
        assert_eq!(v.get("provisioner.replicaCount"), Some(&json!(2)));
        assert_eq!(
            v.get("provisioner.leaderElection.enabled"),
            Some(&json!(true))
        );
    }

    #[test]
    fn replicas_follow_ready_controllers_up_to_two() {
        let three = with_ceph(testing::standard(3, 2));
        assert_eq!(
            values(&three).get("provisioner.replicaCount"),
            Some(&json!(2))
        );

        let one_ready = three
            .with_host(
                Host::new("controller-1", [Personality::Controller]).in_state(
                    AdministrativeState::Locked,
                    OperationalState::Disabled,
                    AvailabilityState::Online,
                ),
            )
            .with_host(
                Host::new("controller-2", [Personality::Controller]).in_state(
                    AdministrativeState::Unlocked,
                    OperationalState::Enabled,
                    AvailabilityState::Degraded,
                ),
            );
        assert_eq!(
            values(&one_ready).get("provisioner.replicaCount"),
            Some(&json!(1))
        );
    }

    #[test]
    fn storage_classes_come_from_every_ceph_backend() {
        let mut rook = StorageBackend::new("ceph-rook-store", StorageKind::CephRook, 3);
        rook.cluster_id = "rook-fsid".into();
        rook.pools = vec!["rook-data".into(), "rook-rbd".into()];
        let lvm = StorageBackend::new("lvm-store", StorageKind::Lvm, 1);
        let facts = with_ceph(testing::duplex())
            .with_storage(rook)
            .with_storage(lvm);
        let v = values(&facts);
        assert_eq!(
            v.get("storageClasses"),
            Some(&json!([
                {"name": "general", "clusterID": "8d6b7f52-0000-4000-8000-000000000001",
                 "pool": "kube-rbd", "replication": 2, "isDefault": true,
                 "crushRuleName": "storage_tier_ruleset"},
                {"name": "ceph-rook-store", "clusterID": "rook-fsid",
                 "pool": "rook-rbd", "replication": 3, "isDefault": false},
            ]))
        );
        assert_eq!(
            v.get("csiConfig.monitors"),
            Some(&json!([
                "192.168.204.2:6789",
                "192.168.204.3:6789",
                "192.168.204.4:6789"
            ]))
        );
        assert_eq!(
            v.get("csiConfig.clusterID"),
            Some(&json!("8d6b7f52-0000-4000-8000-000000000001"))
        );
    }

    #[test]
    fn no_ceph_backend_is_invalid_facts_and_a_pre_apply_veto() {
        let facts = testing::simplex();
        assert!(matches!(
            testing::overrides::<PlatformStorage>(&testing::chart_call(CHART), &facts),
            Err(PluginError::InvalidFacts(_))
        ));
        let answer =
            testing::lifecycle::<PlatformStorage>(&testing::hook_call(Hook::PreApply), &facts)
                .unwrap();
        assert!(answer.is_veto());
    }

    #[test]
    fn a_backend_in_error_vetoes_pre_apply() {
        let mut sick = testing::ceph_backend("ceph-store", 2);
        sick.health = StorageHealth::Error;
        let facts = testing::simplex().with_storage(sick);
        let answer =
            testing::lifecycle::<PlatformStorage>(&testing::hook_call(Hook::PreApply), &facts)
                .unwrap();
        assert_eq!(
            answer.veto_reason(),
            Some("storage backend ceph-store reports health error")
        );
    }

    #[test]
    fn a_backend_with_warnings_proceeds_and_says_so() {
        let mut warned = testing::ceph_backend("ceph-store", 2);
        warned.health = StorageHealth::Warn;
        let facts = testing::simplex().with_storage(warned);
        testing::take_logs();
        let answer =
            testing::lifecycle::<PlatformStorage>(&testing::hook_call(Hook::PreApply), &facts)
                .unwrap();
        assert!(!answer.is_veto());
        assert!(
            testing::take_logs()
                .iter()
                .any(|(_, line)| line == "storage backend ceph-store reports health warn")
        );
    }

    #[test]
    fn pre_update_deletes_the_immutable_csi_driver() {
        let call = testing::hook_call(Hook::PreUpdate).with_versions("1.0.0", "1.1.0");
        let answer =
            testing::lifecycle::<PlatformStorage>(&call, &with_ceph(testing::duplex())).unwrap();
        assert!(!answer.is_veto());
        assert_eq!(
            answer.actions,
            vec![Action::Delete(ObjectRef {
                api_version: "storage.k8s.io/v1".into(),
                kind: "CSIDriver".into(),
                namespace: None,
                name: "rbd.csi.example.dev".into(),
            })]
        );
    }

    #[test]
    fn declares_what_it_reads_and_serves() {
        let info = testing::info::<PlatformStorage>();
        assert_eq!(
            info.sections,
            vec![Section::System, Section::Hosts, Section::Storage]
        );
        assert_eq!(info.charts, vec![CHART.to_string()]);
        assert!(testing::serves_hook::<PlatformStorage>(Hook::PreUpdate));
        assert!(matches!(
            testing::overrides::<PlatformStorage>(
                &testing::chart_call("nginx"),
                &testing::simplex()
            ),
            Err(PluginError::Unsupported(_))
        ));
    }
}
