//! What every operation of the daemon shares: the store, the target, the
//! sandbox, the facts, metrics, checkpoints and the state folder. Both the
//! operations ([`super::engine`]) and the steps they run ([`super::apply`])
//! use it; neither imports the other's internals through it.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::bundle::Limits;
use crate::kube::ApplyTarget;
use crate::model::{AppName, LookupPolicy};
use crate::sandbox::Sandbox;
use crate::store::{OperationId, Store};
use crate::trust::TrustStore;

use super::checkpoint::Checkpoints;
use super::facts_source::FactsSource;
use super::metrics::Metrics;
use super::state_dir::StatePaths;

/// What every operation shares, by what it is: the services it works
/// with, the operator's policies, the work in flight and, in cluster
/// mode, the replicas' shared state; beside them the state folder and
/// the daemon's keys.
pub(crate) struct Inner {
    pub services: Services,
    pub policies: Policies,
    pub work: Work,
    pub cluster: ClusterMode,
    pub paths: StatePaths,
    pub secret: [u8; 32],
    /// The store's daemon key, read at its first use
    /// ([`Inner::daemon_key`]).
    pub daemon_key: std::sync::OnceLock<crate::store::DaemonKey>,
    pub _lock: File,
}

/// What the lifecycle works through: the store, the target, the sandbox
/// and where facts come from.
pub(crate) struct Services {
    pub store: Arc<dyn Store>,
    pub target: Arc<dyn ApplyTarget>,
    /// The target's read-only view ([`ApplyTarget::view`]), taken once.
    pub view: Arc<dyn crate::kube::ClusterView>,
    pub sandbox: Sandbox,
    pub facts: Arc<dyn FactsSource>,
}

/// What the operator allows: what a connected render's `lookup` may read,
/// what plugins' hook actions may do, the bundle limits, whom bundles are
/// trusted from, and how many versions are kept.
pub(crate) struct Policies {
    /// What a connected render's `lookup` may read.
    pub lookup: LookupPolicy,
    /// What plugins' hook actions may do, per app (contract 0.2).
    pub actions: crate::model::ActionPolicies,
    pub limits: Limits,
    pub trust: TrustStore,
    /// How many versions of an app are kept (the active one included).
    pub keep_versions: usize,
    /// Start nothing on its own ([`super::pause`]).
    pub pause_automatic: bool,
}

/// The work in flight: running operations and their slots, where each
/// chart stands, the re-evaluation's marks, metrics and checkpoints.
pub(crate) struct Work {
    /// Applied apps whose plan would change, with the reason, as the last
    /// re-evaluation found them (cleared by the app's next operation).
    pub reapply: Mutex<BTreeMap<String, String>>,
    /// When each app was last re-applied on its own (`auto_reapply`), so
    /// that two are at least its interval apart; kept in memory only.
    pub auto_reapplied: Mutex<HashMap<String, Instant>>,
    pub metrics: Metrics,
    pub checkpoints: Checkpoints,
    pub running: Mutex<HashMap<String, (OperationId, Arc<AtomicBool>)>>,
    /// Where each chart of each app's latest operation stands.
    pub charts: super::progress::ChartBoard,
    /// The bound on operations running at once, across apps.
    pub slots: super::slots::Slots,
    /// What the drift watch last saw of each app ([`super::drift`]).
    pub drift: Mutex<BTreeMap<String, super::drifted::AppDrift>>,
    /// Failed automatic operations waiting for their retry
    /// (module `retry`).
    pub retries: super::retries::Retries,
}

/// Cluster mode: the election this daemon takes part in and where
/// archives are kept for the other replicas. Both `None` for the only
/// daemon on its state.
pub(crate) struct ClusterMode {
    /// The election this daemon takes part in.
    pub leadership: Option<Leadership>,
    /// Where archives are kept for other replicas.
    pub bundle_home: Option<Arc<dyn super::BundleHome>>,
    /// Held while a missing bundle folder is fetched and unpacked.
    pub restoring: Mutex<()>,
}

/// This daemon's part in an election ([`super::leading`]).
pub(crate) struct Leadership {
    pub election: Arc<dyn super::Leading>,
    /// Whether it reconciled after winning and now starts work.
    pub working: AtomicBool,
    /// Set at shutdown: running operations stop at their next checkpoint.
    pub handing_over: AtomicBool,
}

impl Work {
    /// The re-evaluation's marks: applied apps whose plan would change.
    pub fn reapply_marks(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        self.reapply
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ClusterMode {
    /// Whether the daemon is handing its work over (shutting down in
    /// cluster mode).
    pub fn handing_over(&self) -> bool {
        self.leadership
            .as_ref()
            .is_some_and(|l| l.handing_over.load(std::sync::atomic::Ordering::SeqCst))
    }
}

impl Inner {
    /// The store's daemon key (the same for every replica of the store),
    /// read once.
    ///
    /// # Errors
    /// The store's, when it cannot be read.
    pub fn daemon_key(&self) -> Result<crate::store::DaemonKey, crate::store::Error> {
        if let Some(key) = self.daemon_key.get() {
            return Ok(key.clone());
        }
        let key = self.services.store.daemon_key()?;
        Ok(self.daemon_key.get_or_init(|| key).clone())
    }

    /// The seed of an app's plugin randomness: the daemon's secret and the
    /// app's name, so apps cannot predict each other's values.
    pub fn app_secret(&self, app: &AppName) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(self.secret);
        hasher.update(app.as_str().as_bytes());
        hasher.finalize().into()
    }
}
