//! Plain records the store reads and writes. All serialize to JSON so the
//! API can return them as they are. Timestamps are unix milliseconds (UTC).
//! Fields added later must be `Option` with `#[serde(default)]`, so an older
//! reader still accepts the JSON.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::state::{AppState, Operation, Outcome, OverrideLayer};
use crate::model::{AppName, ObjectRef, WorkloadKind};

/// Milliseconds since the unix epoch, UTC.
pub type UnixMillis = i64;

/// Identifies one running (or finished) operation: the id of its history
/// entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
pub struct OperationId(pub i64);

impl std::fmt::Display for OperationId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// One app: its state and which versions it is on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AppRecord {
    /// The app's name.
    #[schema(value_type = String)]
    pub name: AppName,
    /// Where it is in its life.
    pub state: AppState,
    /// The version in effect: the one uploaded, applied, or being
    /// re-applied.
    pub active_version: String,
    /// During an update, the version being moved to; kept after a failed
    /// update until the lifecycle clears it.
    pub target_version: Option<String>,
    /// The running operation's current step, for progress displays.
    pub progress: Option<String>,
    /// Why the app is in its state, e.g. the error of a failed apply or the
    /// note of a rollback.
    pub message: Option<String>,
    /// When the app was first uploaded.
    #[schema(value_type = i64)]
    pub created_at: UnixMillis,
    /// When any field above last changed.
    #[schema(value_type = i64)]
    pub updated_at: UnixMillis,
    /// Set by the daemon's re-evaluation, not stored: why an applied app
    /// would change if applied again now (the facts that changed), until
    /// its next operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reapply_needed: Option<String>,
    /// Set by `app pause`: the daemon starts no operation on its own for
    /// the app (automatic re-apply, drift correction, retries, resuming
    /// a leader's operation) until `app resume`. Absent when not paused
    /// (and in records written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic_pause: Option<AutomaticPause>,
}

/// An operator's pause of one app's automatic operations (`app pause`),
/// as StarlingX's audit of an app can be skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AutomaticPause {
    /// Who paused it (as the API's audit line names the caller).
    pub by: String,
    /// When.
    #[schema(value_type = i64)]
    pub at: UnixMillis,
    /// Why, as the operator gave it (bounded by the API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl std::fmt::Display for AutomaticPause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "paused by {} at {}", self.by, rfc3339(self.at))?;
        if let Some(reason) = &self.reason {
            write!(f, ": {reason}")?;
        }
        Ok(())
    }
}

/// `at` as an RFC 3339 UTC time, to the second.
fn rfc3339(at: UnixMillis) -> String {
    crate::model::clock::utc_text(at, 'T', "Z")
}

/// One stored version of an app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionRecord {
    /// The app the version belongs to.
    pub app: AppName,
    /// The version string from the bundle's metadata.
    pub version: String,
    /// Where the verified bundle was unpacked.
    pub bundle_dir: PathBuf,
    /// Hex sha256 of the bundle archive.
    pub bundle_digest: String,
    /// Key id of the signer that verified it.
    pub signer: String,
    /// The bundle's metadata as JSON.
    pub metadata: Value,
    /// When it was stored; stamped by the store on insert (the value given
    /// to an insert is ignored).
    pub uploaded_at: UnixMillis,
    /// Where the bundle was fetched from, pinned to its manifest digest
    /// (`oci://HOST/REPO@sha256:…`); `None` for a bundle uploaded as a file.
    #[serde(default)]
    pub source: Option<String>,
}

/// The user overrides an app had while one of its versions was active,
/// saved when that version stopped being active (an update or rollback
/// left it), so that a rollback to it re-applies them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserSnapshot {
    /// The version the overrides were in effect with.
    pub version: String,
    /// The user layer of each chart that had one, by chart.
    pub charts: Vec<(String, Value)>,
    /// When the version was left.
    pub saved_at: UnixMillis,
}

/// One override layer of one chart of an app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverrideRecord {
    /// The app.
    pub app: AppName,
    /// The chart the values are for.
    pub chart: String,
    /// Which layer, and for static and system layers which version.
    #[serde(flatten)]
    pub layer: OverrideLayer,
    /// The values, as given; not read by the store.
    pub values: Value,
    /// When they were last set.
    pub updated_at: UnixMillis,
}

/// The sticky workload kind chosen for one component of an app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DecisionRecord {
    /// The app.
    #[schema(value_type = String)]
    pub app: AppName,
    /// The component named in the bundle's metadata.
    pub component: String,
    /// The chosen kind. A stored kind this daemon does not know fails the
    /// read: a decision is never silently defaulted.
    pub kind: WorkloadKind,
    /// Who decided: a plugin's name, `default-rule`, or `operator`.
    pub decided_by: String,
    /// Hex digest of the component's traits when decided, to warn when they
    /// change later.
    pub traits_digest: String,
    /// When it was decided; stamped by the store when recorded (the value
    /// given is ignored).
    #[schema(value_type = i64)]
    pub decided_at: UnixMillis,
}

/// The store's copy of one release's inventory: what the target recorded
/// as applied for one chart of an app after its last apply or remove
/// attempt, and the release's revision. The cluster keeps the same in the
/// release Secret; the lifecycle writes this row from what the target
/// reports after every attempt, success or failure, so the two agree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReleaseRecord {
    /// The app.
    #[schema(value_type = String)]
    pub app: AppName,
    /// The chart within the app.
    pub chart: String,
    /// The release's namespace.
    pub namespace: String,
    /// The Helm release name.
    pub release_name: String,
    /// How the target wrote the objects: `server-side-apply` (a cluster)
    /// or `file` (the directory target).
    pub method: String,
    /// How many applies of the release changed something, the first being
    /// 1; `.Release.Revision` of the next apply is this plus one.
    pub revision: u64,
    /// The objects recorded as applied (or possibly applied, after a
    /// failure), in the order the target recorded them.
    pub objects: Vec<ObjectRef>,
    /// When it was last written; stamped by the store (the value given is
    /// ignored).
    #[schema(value_type = i64)]
    pub updated_at: UnixMillis,
}

/// One operation in an app's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HistoryEntry {
    /// The operation's id.
    pub id: OperationId,
    /// The app.
    #[schema(value_type = String)]
    pub app: AppName,
    /// What was done.
    pub operation: Operation,
    /// The app's state before; `None` for an upload (no app before).
    pub from_state: Option<AppState>,
    /// The transitional state the operation moved the app into.
    pub via_state: AppState,
    /// The state it ended in; `None` while running.
    pub to_state: Option<AppState>,
    /// How it ended.
    pub outcome: Outcome,
    /// The reason of a failure, the note of a rollback, or the reason of a
    /// reconciliation.
    pub message: Option<String>,
    /// When it started.
    #[schema(value_type = i64)]
    pub started_at: UnixMillis,
    /// When it ended; `None` while running.
    #[schema(value_type = Option<i64>)]
    pub finished_at: Option<UnixMillis>,
    /// What the operation was asked to do beyond its name, as the
    /// lifecycle wrote it (JSON: an apply's `rekind`/`adopt`/`recreate`,
    /// a remove's `force`/`keep_secrets`, how many times it was resumed);
    /// absent for a plain one. A new leader resumes an interrupted
    /// operation from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
}

/// A local persistent volume: a host path on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VolumeRecord {
    /// The volume's name (also of its PersistentVolume).
    pub name: String,
    /// The node the host path lives on.
    pub node: String,
    /// The directory on that node.
    #[schema(value_type = String)]
    pub host_path: PathBuf,
    /// The size as the operator gave it, e.g. `10Gi`; not parsed here.
    pub size: String,
    /// The storage class the claim binds by.
    pub storage_class: String,
    /// When it was created; stamped by the store on insert (the value given
    /// to an insert is ignored).
    #[schema(value_type = i64)]
    pub created_at: UnixMillis,
    /// The namespace of its claim; the workloads that mount it run there.
    #[serde(default = "default_namespace")]
    pub namespace: String,
}

fn default_namespace() -> String {
    "default".to_owned()
}

/// What happens to the app's target version when an operation finishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetChange {
    /// Leave versions as they are.
    #[default]
    Keep,
    /// The update succeeded: the target becomes the active version and the
    /// target is cleared.
    Promote,
    /// The update was rolled back: clear the target, keep the active
    /// version.
    Discard,
}

/// How an operation ends: written in one transaction with the app's new
/// state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finish {
    /// The state the app lands in; must not be transitional.
    pub state: AppState,
    /// How the operation ended; must not be [`Outcome::Running`].
    pub outcome: Outcome,
    /// The reason or note, stored on the app and in the history entry.
    pub message: Option<String>,
    /// What to do with the target version.
    pub target: TargetChange,
}

impl Finish {
    /// A successful end in `state`, with no message and versions kept.
    pub fn succeeded(state: AppState) -> Self {
        Finish {
            state,
            outcome: Outcome::Succeeded,
            message: None,
            target: TargetChange::Keep,
        }
    }

    /// A failed end in `state` with the reason.
    pub fn failed(state: AppState, reason: impl Into<String>) -> Self {
        Finish {
            state,
            outcome: Outcome::Failed,
            message: Some(reason.into()),
            target: TargetChange::Keep,
        }
    }

    /// Replaces the outcome (e.g. [`Outcome::Aborted`]).
    #[must_use]
    pub fn with_outcome(mut self, outcome: Outcome) -> Self {
        self.outcome = outcome;
        self
    }

    /// Sets the message.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Sets what happens to the target version.
    #[must_use]
    pub fn with_target(mut self, target: TargetChange) -> Self {
        self.target = target;
        self
    }
}

/// One app moved out of a transitional state by
/// [`Store::reconcile_after_restart`](super::Store::reconcile_after_restart).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reconciled {
    /// The app.
    pub app: AppName,
    /// The transitional state it was found in.
    pub from: AppState,
    /// The failed state it was moved to.
    pub to: AppState,
}

/// The daemon's key ([`super::Store::daemon_key`]): never shown, never
/// logged (its `Debug` says nothing of it).
#[derive(Clone, PartialEq, Eq)]
pub struct DaemonKey(pub [u8; 32]);

impl DaemonKey {
    /// A new random key.
    pub fn random() -> DaemonKey {
        let mut bytes = [0u8; 32];
        rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut bytes);
        DaemonKey(bytes)
    }

    /// The key from stored bytes.
    ///
    /// # Errors
    /// When they are not 32 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<DaemonKey, String> {
        <[u8; 32]>::try_from(bytes)
            .map(DaemonKey)
            .map_err(|_| format!("the stored daemon key is {} bytes, not 32", bytes.len()))
    }
}

impl std::fmt::Debug for DaemonKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DaemonKey(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_reads_with_who_when_and_why() {
        let pause = AutomaticPause {
            by: "uid=0".into(),
            at: 1_796_688_000_000,
            reason: Some("maintenance".into()),
        };
        assert_eq!(
            pause.to_string(),
            "paused by uid=0 at 2026-12-08T00:00:00Z: maintenance"
        );
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_825_600_000), "2000-02-29T12:00:00Z");
    }
}
