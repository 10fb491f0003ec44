//! Unit-test a 0.2 plugin natively, without building wasm or running a host.
//!
//! The call helpers ([`overrides`], [`lifecycle`], [`workload_kind`]) do what
//! the host does around a call, short of the sandbox:
//!
//! - they hand the plugin only the fact sections its [`Info`] declares
//!   ([`Facts::projected`]), so a test fails the way the host would when a
//!   declaration is missing;
//! - they check the answer as the glue does before it reaches the host (an
//!   `ensure` object without identity, a patch that is not an object, state
//!   past its limit), and return that error;
//! - the plugin's [`v0_2::log`](crate::v0_2::log) lines are kept per thread for
//!   [`take_logs`].
//!
//! The fact builders ([`simplex`], [`duplex`], [`standard`]) give every
//! section, healthy and ready; change them with [`Facts`]' `with_*` builders
//! and the constructors of [`Host`], [`Network`] and [`StorageBackend`].
//!
//! ```
//! use capstan_plugin_sdk::v0_2::{Facts, PluginError, Section, StorageKind, testing};
//! let facts = testing::standard(2, 3).with_storage(testing::ceph_backend("ceph-store", 2));
//! assert_eq!(facts.ready_controllers(), Ok(2));
//! assert_eq!(facts.storage_backends_of(StorageKind::Ceph).map(|b| b.len()), Ok(1));
//! assert_eq!(facts.network("oam").and_then(|n| n.floating_url_host()), Ok("10.10.10.2".into()));
//! ```

use crate::v0_1::{App, Component};
use crate::v0_1::{PluginError, WorkloadKind};
use crate::v0_2::answer::Answer;
use crate::v0_2::calls::{ChartCall, Hook, HookCall};
use crate::v0_2::facts::Facts;
use crate::v0_2::glue;
use crate::v0_2::hook_answer::HookAnswer;
use crate::v0_2::plugin::{Info, Plugin};
use crate::v0_2::sections::{
    AddressFamily, ClusterFacts, Host, HostAddress, Monitor, Network, Personality, StorageBackend,
    StorageClass, StorageKind, StorageTier, SystemFacts, SystemMode,
};

pub use crate::v0_1::testing::{take_logs, test_app};

/// The namespace [`chart_call`] installs charts in: `test-app`, the test
/// app's name.
pub const TEST_NAMESPACE: &str = "test-app";

// ------------------------------------------------------------------ calls

/// A call for `chart` of [`test_app`] in [`TEST_NAMESPACE`], with no user
/// overrides (add some with [`ChartCall::with_user_overrides`]).
pub fn chart_call(chart: &str) -> ChartCall {
    ChartCall::new(test_app(), chart, TEST_NAMESPACE)
}

/// A manual call of `hook` for [`test_app`]; see [`HookCall::new`] and its
/// builders.
pub fn hook_call(hook: Hook) -> HookCall {
    HookCall::new(hook, test_app())
}

/// Calls `P::overrides` as the host would: with the facts projected on the
/// sections `P::info()` declares, and the answer checked.
///
/// # Errors
/// The plugin's own error, or the error the glue would report for a
/// malformed answer.
pub fn overrides<P: Plugin>(call: &ChartCall, facts: &Facts) -> Result<Answer, PluginError> {
    let facts = declared_facts::<P>(facts);
    let answer = P::overrides(call, &facts)?;
    glue::answer_to_wit(answer.clone())?;
    Ok(answer)
}

/// Calls `P::workload_kind` for `component` of [`test_app`], with the facts
/// projected on the declared sections.
///
/// # Errors
/// The plugin's own error, as [`Plugin::workload_kind`] returns it.
pub fn workload_kind<P: Plugin>(
    facts: &Facts,
    component: &Component,
) -> Result<WorkloadKind, PluginError> {
    P::workload_kind(&test_app(), &declared_facts::<P>(facts), component)
}

/// Calls `P::lifecycle` as the host would: with the facts projected on the
/// declared sections, and the answer checked. It does not check that
/// `P::info()` declares the hook; see [`serves_hook`].
///
/// # Errors
/// The plugin's own error, or the error the glue would report for a
/// malformed answer.
pub fn lifecycle<P: Plugin>(call: &HookCall, facts: &Facts) -> Result<HookAnswer, PluginError> {
    let facts = declared_facts::<P>(facts);
    let answer = P::lifecycle(call, &facts)?;
    glue::hook_answer_to_wit(answer.clone())?;
    Ok(answer)
}

/// `facts` as `P` is handed them: only the sections `P::info()` declares.
pub fn declared_facts<P: Plugin>(facts: &Facts) -> Facts {
    facts.clone().projected(&P::info().sections)
}

/// True when `P::info()` declares `hook`: the host calls only those.
pub fn serves_hook<P: Plugin>(hook: Hook) -> bool {
    P::info().hooks.contains(&hook)
}

/// `P::info()`, for tests that check the declaration itself.
pub fn info<P: Plugin>() -> Info {
    P::info()
}

// ------------------------------------------------------------------ facts

/// One all-in-one controller, `controller-0`, ready; see [`with_hosts`] for
/// the sections every builder fills.
pub fn simplex() -> Facts {
    with_hosts(SystemMode::Simplex, vec![aio_controller("controller-0")])
}

/// Two all-in-one controllers, `controller-0` and `controller-1`, ready.
pub fn duplex() -> Facts {
    with_hosts(
        SystemMode::Duplex,
        vec![
            aio_controller("controller-0"),
            aio_controller("controller-1"),
        ],
    )
}

/// `controllers` dedicated controllers (`controller-N`) and `workers`
/// workers (`worker-N`), all ready.
pub fn standard(controllers: u32, workers: u32) -> Facts {
    let mut hosts: Vec<Host> = (0..controllers)
        .map(|i| {
            Host::new(&format!("controller-{i}"), [Personality::Controller])
                .with_label("node-role.kubernetes.io/control-plane", "")
        })
        .collect();
    hosts.extend((0..workers).map(|i| Host::new(&format!("worker-{i}"), [Personality::Worker])));
    with_hosts(SystemMode::Standard, hosts)
}

fn aio_controller(name: &str) -> Host {
    Host::new(name, [Personality::Controller, Personality::Worker])
        .with_label("node-role.kubernetes.io/control-plane", "")
}

/// Facts with every section present: the system in `mode`; `hosts`; the
/// networks `oam` (10.10.10.0/24, floating 10.10.10.2), `mgmt`
/// (192.168.204.0/24, floating 192.168.204.2) and `cluster-host`
/// (192.168.206.0/24, floating 192.168.206.2), each with an address per host;
/// no storage backend and no service parameter; a Kubernetes 1.30.0 cluster
/// serving the core APIs; no local volume and an empty `extra`.
pub fn with_hosts(mode: SystemMode, hosts: Vec<Host>) -> Facts {
    let networks = [
        ("oam", "10.10.10", 3),
        ("mgmt", "192.168.204", 3),
        ("cluster-host", "192.168.206", 3),
    ]
    .into_iter()
    .map(|(name, prefix, first)| {
        let mut network = Network::new(
            name,
            AddressFamily::Ipv4,
            &format!("{prefix}.0/24"),
            &format!("{prefix}.2"),
        );
        network.gateway = (name == "oam").then(|| format!("{prefix}.1"));
        network.host_addresses = hosts
            .iter()
            .zip(first..)
            .map(|(h, n)| HostAddress {
                host: h.name.clone(),
                address: format!("{prefix}.{n}"),
            })
            .collect();
        network
    })
    .collect();
    Facts {
        system: Some(SystemFacts::new(mode)),
        hosts: Some(hosts),
        networks: Some(networks),
        storage: Some(Vec::new()),
        service_parameters: Some(Vec::new()),
        cluster: Some(ClusterFacts {
            kubernetes_version: "1.30.0".into(),
            api_versions: ["v1", "apps/v1", "batch/v1", "storage.k8s.io/v1"]
                .into_iter()
                .map(String::from)
                .collect(),
            storage_classes: Vec::new(),
        }),
        local_volumes: Vec::new(),
        extra: serde_json::Value::Object(Default::default()),
    }
}

/// A healthy Ceph backend named `name` keeping `replication` copies: cluster
/// id `8d6b7f52-0000-4000-8000-000000000001`, monitors `ceph-mon-0..2` on
/// 192.168.204.2..4:6789, pool `kube-rbd`, tier `storage` with rule
/// `storage_tier_ruleset`, services `rbd` and `cephfs`, the default backend.
pub fn ceph_backend(name: &str, replication: u32) -> StorageBackend {
    let mut backend = StorageBackend::new(name, StorageKind::Ceph, replication);
    backend.cluster_id = "8d6b7f52-0000-4000-8000-000000000001".into();
    backend.monitors = (0..3)
        .map(|i| Monitor {
            name: format!("ceph-mon-{i}"),
            address: format!("192.168.204.{}:6789", i + 2),
        })
        .collect();
    backend.pools = vec!["kube-rbd".into()];
    backend.tiers = vec![StorageTier {
        name: "storage".into(),
        rule: "storage_tier_ruleset".into(),
    }];
    backend.services = vec!["rbd".into(), "cephfs".into()];
    backend.is_default = true;
    backend
}

/// A StorageClass `name` provisioned by `provisioner`, for
/// [`ClusterFacts::storage_classes`].
pub fn storage_class(name: &str, provisioner: &str, is_default: bool) -> StorageClass {
    StorageClass {
        name: name.into(),
        provisioner: provisioner.into(),
        is_default,
    }
}

/// An app other than [`test_app`], for calls about a given version.
pub fn app(name: &str, version: &str) -> App {
    App::new(name, version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v0_2::plugin::Section;
    use crate::v0_2::{Charset, Shape, Values, key};
    use serde_json::json;

    struct Declares;
    impl Plugin for Declares {
        fn info() -> Info {
            Info::new("declares", "1.0.0")
                .serving_charts(["c"])
                .with_hooks([Hook::PreApply, Hook::Status])
                .reading([Section::Hosts])
        }
        fn overrides(call: &ChartCall, facts: &Facts) -> Result<Answer, PluginError> {
            crate::v0_2::log::info(&format!("chart {}", call.chart));
            let values = Values::new().set("replicas", facts.ready_controllers()?);
            let simplex = facts.is_simplex()?; // not declared: fails
            Ok(Answer::new(values.set("simplex", simplex)))
        }
        fn lifecycle(call: &HookCall, _facts: &Facts) -> Result<HookAnswer, PluginError> {
            Ok(match call.hook {
                Hook::PreApply => HookAnswer::proceed().ensure(json!({"kind": "ConfigMap"})),
                _ => HookAnswer::proceed().with_state(vec![0; crate::v0_2::MAX_STATE_BYTES + 1]),
            })
        }
    }

    #[test]
    fn undeclared_sections_are_not_handed() {
        let err = overrides::<Declares>(&chart_call("c"), &simplex()).unwrap_err();
        assert_eq!(
            err,
            PluginError::InvalidFacts("facts section system was not declared in info()".into())
        );
        assert_eq!(take_logs().len(), 1);
        assert!(serves_hook::<Declares>(Hook::Status));
        assert!(!serves_hook::<Declares>(Hook::PostApply));
    }

    #[test]
    fn malformed_hook_answers_fail_as_the_glue_would() {
        let err = lifecycle::<Declares>(&hook_call(Hook::PreApply), &simplex()).unwrap_err();
        assert_eq!(
            err,
            PluginError::Failed("ensure (action 1): the object has no apiVersion".into())
        );
        let err = lifecycle::<Declares>(&hook_call(Hook::Status), &simplex()).unwrap_err();
        assert!(
            err.to_string().contains("past the 65536-byte limit"),
            "{err}"
        );
    }

    #[test]
    fn builders_give_ready_platforms() {
        assert_eq!(simplex().ready_controllers(), Ok(1));
        assert_eq!(simplex().is_simplex(), Ok(true));
        assert_eq!(duplex().ready_controllers(), Ok(2));
        assert_eq!(
            standard(3, 4)
                .hosts_with(Personality::Worker)
                .map(|w| w.len()),
            Ok(4)
        );
        let facts = duplex();
        let oam = facts.network("oam").unwrap();
        assert_eq!(oam.address_of("controller-1"), Some("10.10.10.4"));
        let ceph = ceph_backend("ceph-store", 2);
        assert_eq!(ceph.monitor_addresses().len(), 3);
        assert_eq!(ceph.min_replication, 1);
        let _ = Answer::new(Values::new()).generate("k", Shape::password(8, Charset::Hex));
        let _ = key::PASSWORD;
    }
}
