//! `capstan serve --store cluster`: the daemon as one of several replicas
//! sharing their state on the API server — the cluster store, the Lease
//! election, and the drain at SIGTERM.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::kube::ClusterTarget;
use crate::kube::cluster::lease::{Election, LeaseConfig};
use crate::lifecycle::{Lifecycle, Options};
use crate::store::cluster::ClusterStore;

use super::serve::ServeArgs;

/// Where a Pod's service account says its namespace is.
const POD_NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// The namespace when neither the flag nor the Pod names one.
pub const DEFAULT_NAMESPACE: &str = "capstan-system";

/// A namespace name (a DNS-1123 label).
pub(super) fn namespace(text: &str) -> Result<String, String> {
    crate::model::Namespace::new(text)
        .map(|n| n.to_string())
        .map_err(|e| e.to_string())
}

/// Joins the replicas: opens the cluster store, starts the election on
/// `target`'s connection, and hands both to the lifecycle, whose store
/// then writes only while this daemon leads.
///
/// # Errors
/// The cluster store's errors (CRDs, namespace), Lease timings that
/// cannot work.
pub(super) fn join(
    args: &ServeArgs,
    target: &ClusterTarget,
    options: &mut Options,
) -> anyhow::Result<Election> {
    let connect = crate::kube::Connect::from_flags(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
        args.in_cluster,
    )
    .unwrap_or(crate::kube::Connect::InCluster);
    let namespace = match &args.store_namespace {
        Some(namespace) => namespace.clone(),
        None => std::fs::read_to_string(POD_NAMESPACE_FILE)
            .ok()
            .map(|text| text.trim().to_string())
            .filter(|text| namespace(text).is_ok())
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string()),
    };
    let store = ClusterStore::connect(&connect, &namespace)
        .map_err(|e| anyhow::anyhow!(super::serve::one_line(&e)))?;
    let identity = args.identity.clone().unwrap_or_else(default_identity);
    let config = LeaseConfig {
        lease_duration: Duration::from_secs_f64(args.lease_duration),
        renew_deadline: Duration::from_secs_f64(args.renew_deadline),
        retry_period: Duration::from_secs_f64(args.retry_period),
        ..LeaseConfig::new(&namespace, &args.lease, &identity)
    };
    let election = target
        .elect(config)
        .map_err(|e| anyhow::anyhow!(super::serve::one_line(&e)))?;
    let leadership = Arc::clone(election.leadership());
    let gate = Arc::clone(&leadership);
    store.set_gate(Box::new(move || gate.is_leader()));
    let paths = crate::lifecycle::StatePaths::new(&options.state);
    store.set_bundle_dirs(Box::new(move |app, version| {
        paths.bundle_dir(app.as_str(), version)
    }));
    tracing::info!(
        namespace = %namespace,
        lease = %args.lease,
        identity = %identity,
        url = store.backend().url(),
        "cluster mode: state in App objects; leading only while holding the Lease"
    );
    options.store = Some(Arc::new(store));
    options.leading = Some(leadership);
    Ok(election)
}

/// `$POD_NAME`, else the host's name and this process's id.
fn default_identity() -> String {
    if let Ok(pod) = std::env::var("POD_NAME")
        && !pod.trim().is_empty()
    {
        return pod.trim().to_string();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "capstan".into());
    format!("{host}-{}", std::process::id())
}

/// After the listener stopped (SIGTERM): running operations stop at their
/// next checkpoint, left running in the store for the next leader to
/// resume ([`Lifecycle::hand_over`]); waits up to `grace` for them to
/// stop (past it, the process ends them as a crash would, with the same
/// outcome), then releases the Lease (so the next leader need not wait
/// for it to expire) and waits briefly for the release.
pub(super) fn drain(lifecycle: &Lifecycle, election: &Election, grace: Duration) {
    let started = Instant::now();
    lifecycle.hand_over();
    loop {
        let running = lifecycle.operation_slots().running;
        if running == 0 {
            break;
        }
        if started.elapsed() >= grace {
            tracing::warn!(
                running,
                "shutdown grace over: the next leader resumes the running operations"
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    election.stop(true);
    let leadership = election.leadership();
    let released = Instant::now();
    while leadership.is_leader() && released.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    tracing::info!(target: "capstan::lease", "left the election");
}
