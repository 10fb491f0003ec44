//! What every operation of the daemon shares: the store, the target, the
//! sandbox, the facts, metrics, checkpoints and the state folder. Both the
//! operations ([`super::engine`]) and the steps they run ([`super::run`])
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

/// What every operation shares.
pub(crate) struct Inner {
    pub store: Arc<dyn Store>,
    pub target: Arc<dyn ApplyTarget>,
    /// The target's read-only view ([`ApplyTarget::view`]), taken once.
    pub view: Arc<dyn crate::kube::ClusterView>,
    pub sandbox: Sandbox,
    pub facts: Arc<dyn FactsSource>,
    /// Applied apps whose plan would change, with the reason, as the last
    /// re-evaluation found them (cleared by the app's next operation).
    pub reapply: Mutex<BTreeMap<String, String>>,
    /// When each app was last re-applied on its own (`auto_reapply`), so
    /// that two are at least its interval apart; kept in memory only.
    pub auto_reapplied: Mutex<HashMap<String, Instant>>,
    /// What a connected render's `lookup` may read.
    pub lookup_policy: LookupPolicy,
    /// What plugins' hook actions may do, per app (contract 0.2).
    pub action_policies: crate::model::ActionPolicies,
    pub metrics: Metrics,
    pub checkpoints: Checkpoints,
    pub paths: StatePaths,
    pub trust: TrustStore,
    pub limits: Limits,
    /// How many versions of an app are kept (the active one included).
    pub keep_versions: usize,
    pub secret: [u8; 32],
    /// The store's daemon key, read at its first use
    /// ([`Inner::daemon_key`]).
    pub daemon_key: std::sync::OnceLock<crate::store::DaemonKey>,
    pub running: Mutex<HashMap<String, (OperationId, Arc<AtomicBool>)>>,
    /// Where each chart of each app's latest operation stands.
    pub charts: super::progress::ChartBoard,
    /// The bound on operations running at once, across apps.
    pub slots: super::slots::Slots,
    /// The election this daemon takes part in (cluster mode); `None`
    /// for the only daemon on its state.
    pub leadership: Option<super::leading::Leadership>,
    /// Where archives are kept for other replicas (cluster mode).
    pub bundle_home: Option<Arc<dyn super::BundleHome>>,
    /// Held while a missing bundle folder is fetched and unpacked.
    pub restoring: Mutex<()>,
    pub _lock: File,
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
        let key = self.store.daemon_key()?;
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
