//! Owns leader election on a `coordination.k8s.io/v1` Lease, as
//! client-go's `leaderelection` package does it, for the daemon's cluster
//! mode (two replicas, one leading):
//!
//! - a candidate takes the Lease when it is absent, released (no holder),
//!   or not renewed for `lease_duration` as measured on the candidate's
//!   own clock from the moment it last saw the record change (client-go's
//!   observed time: no trust in another machine's clock);
//! - every write is a `PUT` guarded by the `resourceVersion` read, so of
//!   two candidates at most one wins, and a leader that lost the Lease
//!   while it was stopped has its next renewal refused;
//! - the leader renews every `retry_period`; one that has not renewed
//!   for `renew_deadline` stops leading at once, before anyone else may
//!   take over (`renew_deadline` < `lease_duration`);
//! - releasing (on a clean stop) empties the holder and shortens the
//!   duration to one second, so the next leader need not wait.
//!
//! Defaults are client-go's: 15 s, 10 s, 2 s.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::client::Cluster;
use super::discovery::Kind;
use super::error::Error;
use crate::kube::ObjectRef;

/// The Lease's API version.
const API_VERSION: &str = "coordination.k8s.io/v1";

/// Where the Lease is and how long it lasts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseConfig {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
    /// This candidate's identity (the Pod's name, or host and process).
    pub identity: String,
    /// How long a Lease not renewed stays another's (client-go: 15 s).
    pub lease_duration: Duration,
    /// How long a leader may fail to renew before it stops leading
    /// (client-go: 10 s); less than `lease_duration`.
    pub renew_deadline: Duration,
    /// Time between two attempts to take or renew (client-go: 2 s).
    pub retry_period: Duration,
}

impl LeaseConfig {
    /// The Lease `namespace/name` for `identity`, with client-go's
    /// timings.
    pub fn new(namespace: &str, name: &str, identity: &str) -> LeaseConfig {
        LeaseConfig {
            namespace: namespace.to_string(),
            name: name.to_string(),
            identity: identity.to_string(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// Why the timings cannot work, if they cannot: client-go's rules
    /// (`lease_duration` > `renew_deadline` > `retry_period` × 1.2, the
    /// jitter), with every duration at least 100 ms.
    pub fn problem(&self) -> Option<String> {
        let floor = Duration::from_millis(100);
        if self.retry_period < floor || self.renew_deadline < floor {
            return Some("lease timings must be at least 100ms".into());
        }
        if self.lease_duration <= self.renew_deadline {
            return Some(format!(
                "the lease duration ({:?}) must be longer than the renew deadline ({:?})",
                self.lease_duration, self.renew_deadline
            ));
        }
        if self.renew_deadline.as_secs_f64() <= self.retry_period.as_secs_f64() * 1.2 {
            return Some(format!(
                "the renew deadline ({:?}) must be longer than 1.2 times the retry period ({:?})",
                self.renew_deadline, self.retry_period
            ));
        }
        None
    }
}

/// What the Lease says, the part leader election compares.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeaseRecord {
    /// `spec.holderIdentity`; empty when released.
    pub holder: String,
    /// `spec.leaseDurationSeconds`.
    pub duration_seconds: u64,
    /// `spec.renewTime`, as the server holds it.
    pub renew_time: String,
    /// `spec.acquireTime`.
    pub acquire_time: String,
    /// `spec.leaseTransitions`.
    pub transitions: u64,
}

impl LeaseRecord {
    /// The record of a live Lease.
    pub fn of(lease: &Value) -> LeaseRecord {
        let text = |key: &str| {
            lease
                .pointer(&format!("/spec/{key}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let number = |key: &str| {
            lease
                .pointer(&format!("/spec/{key}"))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        LeaseRecord {
            holder: text("holderIdentity"),
            duration_seconds: number("leaseDurationSeconds"),
            renew_time: text("renewTime"),
            acquire_time: text("acquireTime"),
            transitions: number("leaseTransitions"),
        }
    }
}

/// One candidate: the Lease as it last saw it, and when (on its clock).
pub struct Elector {
    cluster: Cluster,
    config: LeaseConfig,
    kind: Kind,
    observed: Option<(LeaseRecord, Instant)>,
}

impl Elector {
    /// A candidate for the Lease of `config`.
    pub fn new(cluster: Cluster, config: LeaseConfig) -> Elector {
        Elector {
            cluster,
            kind: Kind {
                api_version: API_VERSION.into(),
                kind: "Lease".into(),
                plural: "leases".into(),
                namespaced: true,
            },
            config,
            observed: None,
        }
    }

    fn id(&self) -> ObjectRef {
        ObjectRef {
            api_version: API_VERSION.into(),
            kind: "Lease".into(),
            namespace: Some(self.config.namespace.clone()),
            name: self.config.name.clone(),
        }
    }

    /// The holder the Lease named when last read (empty: none).
    pub fn holder(&self) -> Option<&str> {
        self.observed
            .as_ref()
            .map(|(record, _)| record.holder.as_str())
            .filter(|h| !h.is_empty())
    }

    /// Takes the Lease or renews it: `true` when this candidate holds it
    /// now. `false` when another holds it and has renewed it within its
    /// duration (as this candidate observed), or when another candidate's
    /// write came first (a 409).
    ///
    /// # Errors
    /// The API server's errors other than a lost race.
    pub async fn try_acquire_or_renew(&mut self) -> Result<bool, Error> {
        let now = micro_time();
        let id = self.id();
        let namespace = Some(self.config.namespace.as_str());
        let seconds = self.config.lease_duration.as_secs().max(1);
        let Some(live) = self.cluster.get(&self.kind, namespace, &id).await? else {
            let body = json!({
                "apiVersion": API_VERSION,
                "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": {
                    "holderIdentity": self.config.identity,
                    "leaseDurationSeconds": seconds,
                    "acquireTime": now,
                    "renewTime": now,
                    "leaseTransitions": 0,
                },
            });
            return match self.cluster.create(&self.kind, namespace, &id, &body).await {
                Ok(created) => {
                    self.observed = Some((LeaseRecord::of(&created), Instant::now()));
                    Ok(true)
                }
                Err(e) if is_conflict(&e) => Ok(false),
                Err(e) => Err(e),
            };
        };
        let record = LeaseRecord::of(&live);
        let seen_at = match &self.observed {
            Some((seen, at)) if *seen == record => *at,
            _ => Instant::now(),
        };
        self.observed = Some((record.clone(), seen_at));
        let mine = record.holder == self.config.identity;
        let duration = Duration::from_secs(record.duration_seconds);
        if !mine && !record.holder.is_empty() && seen_at.elapsed() < duration {
            return Ok(false);
        }
        let mut updated = live.clone();
        updated["spec"] = json!({
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": seconds,
            "acquireTime": if mine { record.acquire_time.clone() } else { now.clone() },
            "renewTime": now,
            "leaseTransitions": if mine { record.transitions } else { record.transitions + 1 },
        });
        match self
            .cluster
            .replace(&self.kind, namespace, &id, &updated)
            .await
        {
            Ok(written) => {
                self.observed = Some((LeaseRecord::of(&written), Instant::now()));
                Ok(true)
            }
            Err(e) if is_conflict(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the Lease up if this candidate holds it: no holder, and a
    /// one-second duration, so another takes it at its next attempt.
    ///
    /// # Errors
    /// The API server's errors other than a lost race.
    pub async fn release(&mut self) -> Result<(), Error> {
        let id = self.id();
        let namespace = Some(self.config.namespace.as_str());
        let Some(mut live) = self.cluster.get(&self.kind, namespace, &id).await? else {
            return Ok(());
        };
        if LeaseRecord::of(&live).holder != self.config.identity {
            return Ok(());
        }
        let now = micro_time();
        live["spec"]["holderIdentity"] = Value::Null;
        live["spec"]["leaseDurationSeconds"] = json!(1);
        live["spec"]["renewTime"] = json!(now);
        match self
            .cluster
            .replace(&self.kind, namespace, &id, &live)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_conflict(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// A write refused because the object changed or exists (409).
fn is_conflict(error: &Error) -> bool {
    matches!(
        error,
        Error::Refused { code: 409, .. } | Error::FieldConflict { .. }
    )
}

/// Now as a Kubernetes `MicroTime` (`2026-12-04T15:00:00.123456Z`).
fn micro_time() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
        .to_string()
}

/// Whether this daemon leads, as the election loop last found, and who
/// does.
#[derive(Debug, Default)]
pub struct Leadership {
    leading: AtomicBool,
    holder: Mutex<Option<String>>,
}

impl Leadership {
    /// Whether this daemon leads now.
    pub fn is_leader(&self) -> bool {
        self.leading.load(Ordering::SeqCst)
    }

    /// Who holds the Lease, as last read (this daemon's identity when it
    /// leads).
    pub fn holder(&self) -> Option<String> {
        self.holder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set(&self, leading: bool, holder: Option<String>) {
        let was = self.leading.swap(leading, Ordering::SeqCst);
        if was != leading {
            tracing::info!(target: "capstan::lease", leading, holder = holder.as_deref().unwrap_or(""), "leadership changed");
        }
        *self
            .holder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = holder;
    }
}

/// A running election: whether this daemon leads, and the means to
/// stop.
pub struct Election {
    leadership: Arc<Leadership>,
    stop: tokio::sync::watch::Sender<Option<bool>>,
}

impl Election {
    /// Starts [`run`] for `elector` on `runtime`.
    pub fn start(runtime: &tokio::runtime::Handle, elector: Elector) -> Election {
        let leadership = Arc::new(Leadership::default());
        let (stop, stopped) = tokio::sync::watch::channel(None);
        runtime.spawn(run(elector, Arc::clone(&leadership), stopped));
        Election { leadership, stop }
    }

    /// Whether this daemon leads now, and who does.
    pub fn leadership(&self) -> &Arc<Leadership> {
        &self.leadership
    }

    /// Ends the election: the Lease is released when this daemon holds
    /// it and `release` is true (a clean stop); with `release` false it
    /// is left to expire, as after a crash.
    pub fn stop(&self, release: bool) {
        let _ = self.stop.send(Some(release));
    }
}

impl Drop for Election {
    fn drop(&mut self) {
        let _ = self.stop.send(Some(true));
    }
}

/// The election loop: tries every `retry_period` (with client-go's 1.2
/// jitter while following), leads from the first success, stops leading
/// when no renewal has succeeded for `renew_deadline`, and on `stop`
/// releases the Lease if it holds it (unless `release` is false: a
/// crash's stand-in in tests).
pub async fn run(
    mut elector: Elector,
    leadership: Arc<Leadership>,
    mut stop: tokio::sync::watch::Receiver<Option<bool>>,
) {
    let config = elector.config.clone();
    let mut last_renewed: Option<Instant> = None;
    loop {
        let attempt =
            tokio::time::timeout(config.renew_deadline, elector.try_acquire_or_renew()).await;
        let held = match attempt {
            Ok(Ok(held)) => held,
            Ok(Err(e)) => {
                tracing::warn!(target: "capstan::lease", error = %e, "taking or renewing the lease failed");
                false
            }
            Err(_) => false,
        };
        if held {
            last_renewed = Some(Instant::now());
            leadership.set(true, Some(config.identity.clone()));
        } else if leadership.is_leader() {
            // A leader keeps leading until the deadline has passed since
            // its last renewal, then stops at once.
            if last_renewed.is_none_or(|at| at.elapsed() >= config.renew_deadline) {
                leadership.set(false, elector.holder().map(str::to_string));
            }
        } else {
            leadership.set(false, elector.holder().map(str::to_string));
        }
        let pause = if leadership.is_leader() {
            config.retry_period
        } else {
            config
                .retry_period
                .mul_f64(1.0 + 0.2 * f64::from(jitter()) / f64::from(u8::MAX))
        };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            changed = stop.changed() => {
                let release = changed.is_ok() && (*stop.borrow()).unwrap_or(true);
                if release
                    && leadership.is_leader()
                    && let Err(e) = elector.release().await
                {
                    tracing::warn!(target: "capstan::lease", error = %e, "releasing the lease failed");
                }
                leadership.set(false, None);
                return;
            }
        }
    }
}

/// A byte of randomness for the jitter.
fn jitter() -> u8 {
    rand::random::<u8>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_go_timings_are_the_default_and_checked() {
        let config = LeaseConfig::new("capstan-system", "capstan", "a");
        assert_eq!(config.lease_duration, Duration::from_secs(15));
        assert_eq!(config.problem(), None);
        let bad = LeaseConfig {
            renew_deadline: Duration::from_secs(15),
            ..config.clone()
        };
        assert!(
            bad.problem()
                .is_some_and(|p| p.contains("longer than the renew deadline"))
        );
        let bad = LeaseConfig {
            retry_period: Duration::from_secs(9),
            ..config
        };
        assert!(bad.problem().is_some_and(|p| p.contains("1.2 times")));
    }

    #[test]
    fn a_record_reads_the_spec() {
        let lease = json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
            "renewTime": "2026-12-04T15:00:00.000000Z", "acquireTime": "2026-12-04T14:00:00.000000Z",
            "leaseTransitions": 3}});
        let record = LeaseRecord::of(&lease);
        assert_eq!(record.holder, "a");
        assert_eq!(record.duration_seconds, 15);
        assert_eq!(record.transitions, 3);
        assert_eq!(LeaseRecord::of(&json!({})), LeaseRecord::default());
        let stamp = micro_time();
        assert!(stamp.ends_with('Z') && stamp.len() == 27, "{stamp}");
    }
}
