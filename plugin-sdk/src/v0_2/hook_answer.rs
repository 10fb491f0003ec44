//! A hook's [`HookAnswer`]: a verdict, the actions the host is to take (in
//! order), state for the post hook, and for the `status` hook the release's
//! status; with the object references those actions name.
//!
//! The plugin asks, the host does: within the operator's policy, recorded in
//! history, undone on remove. Nothing here touches the cluster.

use std::fmt;

use serde_json::Value;

/// The most state a hook may hand its post hook, in bytes (64 KiB).
pub const MAX_STATE_BYTES: usize = 64 * 1024;

/// The longest wait a `status` answer may ask for, in seconds.
pub const MAX_RETRY_AFTER_SECS: u32 = 300;

/// A Kubernetes object, by identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// Its `apiVersion`, such as `storage.k8s.io/v1`.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace; `None` for a cluster-scoped object.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

impl ObjectRef {
    /// A namespaced object: `ObjectRef::namespaced("v1", "Secret", "certs", "tls")`.
    pub fn namespaced(api_version: &str, kind: &str, namespace: &str, name: &str) -> Self {
        ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// A cluster-scoped object:
    /// `ObjectRef::cluster_scoped("storage.k8s.io/v1", "CSIDriver", "rbd.csi.example.dev")`.
    pub fn cluster_scoped(api_version: &str, kind: &str, name: &str) -> Self {
        ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: None,
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjectRef {
    /// `apiVersion Kind namespace/name`, or `apiVersion Kind name` when
    /// cluster-scoped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {} {ns}/{}", self.api_version, self.kind, self.name),
            None => write!(f, "{} {} {}", self.api_version, self.kind, self.name),
        }
    }
}

/// A kind of object the host may copy between namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MirrorKind {
    /// A Secret.
    Secret,
    /// A ConfigMap.
    ConfigMap,
}

/// Copy an object into one of the app's namespaces, and keep it there until
/// the app is removed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Mirror {
    /// What to copy.
    pub kind: MirrorKind,
    /// The source's namespace.
    pub from_namespace: String,
    /// The source's name.
    pub from_name: String,
    /// The copy's namespace (one of the app's, by default).
    pub to_namespace: String,
    /// The copy's name.
    pub to_name: String,
}

/// The kind of a workload to restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RestartKind {
    /// A Deployment.
    Deployment,
    /// A StatefulSet.
    StatefulSet,
    /// A DaemonSet.
    DaemonSet,
}

impl RestartKind {
    /// The Kubernetes kind (`Deployment`).
    pub fn as_str(self) -> &'static str {
        match self {
            RestartKind::Deployment => "Deployment",
            RestartKind::StatefulSet => "StatefulSet",
            RestartKind::DaemonSet => "DaemonSet",
        }
    }
}

/// A workload to restart (a rolling restart of its pods).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkloadRef {
    /// Its kind.
    pub kind: RestartKind,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// A JSON merge patch (RFC 7386) on one chart's user overrides.
#[derive(Debug, Clone, PartialEq)]
pub struct OverridePatch {
    /// The chart.
    pub chart: String,
    /// The merge patch: a JSON object; `null` deletes a key.
    pub patch: Value,
}

/// Something a hook asks the host to do, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Copy a Secret or ConfigMap into one of the app's namespaces.
    Mirror(Mirror),
    /// Apply this object as owned by the app: server-side applied with the
    /// release's labels, removed with the app. It must be a JSON object with
    /// `apiVersion`, `kind` and `metadata.name`.
    Ensure(Value),
    /// Delete an object the app owns (for example, an immutable one an
    /// update must recreate).
    Delete(ObjectRef),
    /// Restart a workload the app owns.
    Restart(WorkloadRef),
    /// Patch a chart's user overrides (from `pre-update` and `pre-apply`).
    PatchOverrides(OverridePatch),
    /// Ask for another apply of the app once this operation ends, for this
    /// reason.
    RequestReapply(String),
    /// Read this object before each later `status` call of this operation,
    /// and hand it in [`HookCall::observed`](crate::v0_2::HookCall::observed).
    Observe(ObjectRef),
}

/// A hook's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go on with the operation.
    Proceed,
    /// Stop the operation; the reason is shown to the operator.
    Veto(String),
}

/// A release's status, as the `status` hook answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseStatus {
    /// Ready.
    Ready,
    /// Not ready yet: ask again after this many seconds (1 to
    /// [`MAX_RETRY_AFTER_SECS`]).
    RetryAfter(u32),
    /// Will not become ready; the reason is shown to the operator.
    Failed(String),
}

/// A hook's whole answer: a verdict, actions for the host, state for the
/// post hook and, for `status`, the release's status.
///
/// ```
/// use capstan_plugin_sdk::v0_2::{HookAnswer, ObjectRef, RestartKind};
/// let answer = HookAnswer::proceed()
///     .mirror_secret("platform-ca", "ca", "oidc", "oidc-ca")
///     .delete(ObjectRef::cluster_scoped("storage.k8s.io/v1", "CSIDriver", "rbd.csi.example.dev"))
///     .restart(RestartKind::Deployment, "oidc", "dex")
///     .with_state(b"pre-apply-ran");
/// assert_eq!(answer.actions.len(), 3);
/// assert_eq!(HookAnswer::veto("no ceph").veto_reason(), Some("no ceph"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HookAnswer {
    /// Go on, or stop.
    pub verdict: Verdict,
    /// What the host is to do (before going on), in order.
    pub actions: Vec<Action>,
    /// State to hand this plugin's post hook of the same operation (at most
    /// [`MAX_STATE_BYTES`]).
    pub state: Option<Vec<u8>>,
    /// For `status`: the release's status; `None` there means ready.
    pub status: Option<ReleaseStatus>,
}

impl HookAnswer {
    /// Go on with the operation, asking nothing.
    pub fn proceed() -> Self {
        HookAnswer {
            verdict: Verdict::Proceed,
            actions: Vec::new(),
            state: None,
            status: None,
        }
    }

    /// Stop the operation; `reason` is shown to the operator.
    pub fn veto(reason: impl Into<String>) -> Self {
        HookAnswer {
            verdict: Verdict::Veto(reason.into()),
            ..HookAnswer::proceed()
        }
    }

    /// For `status`: the release is ready.
    pub fn ready() -> Self {
        HookAnswer {
            status: Some(ReleaseStatus::Ready),
            ..HookAnswer::proceed()
        }
    }

    /// For `status`: not ready yet, ask again after `secs` seconds (clamped
    /// to 1..=[`MAX_RETRY_AFTER_SECS`], the range the host accepts).
    pub fn retry_after(secs: u32) -> Self {
        HookAnswer {
            status: Some(ReleaseStatus::RetryAfter(
                secs.clamp(1, MAX_RETRY_AFTER_SECS),
            )),
            ..HookAnswer::proceed()
        }
    }

    /// For `status`: the release will not become ready; `reason` is shown
    /// to the operator.
    pub fn failed(reason: impl Into<String>) -> Self {
        HookAnswer {
            status: Some(ReleaseStatus::Failed(reason.into())),
            ..HookAnswer::proceed()
        }
    }

    fn then(mut self, action: Action) -> Self {
        self.actions.push(action);
        self
    }

    /// Copies Secret `from_namespace`/`from_name` to
    /// `to_namespace`/`to_name` (one of the app's namespaces) and keeps it
    /// there until the app is removed.
    pub fn mirror_secret(
        self,
        from_namespace: &str,
        from_name: &str,
        to_namespace: &str,
        to_name: &str,
    ) -> Self {
        self.mirror(
            MirrorKind::Secret,
            from_namespace,
            from_name,
            to_namespace,
            to_name,
        )
    }

    /// Copies ConfigMap `from_namespace`/`from_name` to
    /// `to_namespace`/`to_name`; see [`HookAnswer::mirror_secret`].
    pub fn mirror_config_map(
        self,
        from_namespace: &str,
        from_name: &str,
        to_namespace: &str,
        to_name: &str,
    ) -> Self {
        self.mirror(
            MirrorKind::ConfigMap,
            from_namespace,
            from_name,
            to_namespace,
            to_name,
        )
    }

    fn mirror(
        self,
        kind: MirrorKind,
        from_namespace: &str,
        from_name: &str,
        to_namespace: &str,
        to_name: &str,
    ) -> Self {
        self.then(Action::Mirror(Mirror {
            kind,
            from_namespace: from_namespace.into(),
            from_name: from_name.into(),
            to_namespace: to_namespace.into(),
            to_name: to_name.into(),
        }))
    }

    /// Applies `object` (a whole Kubernetes object with `apiVersion`,
    /// `kind` and `metadata.name`) as owned by the app. An object without
    /// them fails the call when the answer is handed to the host.
    pub fn ensure(self, object: Value) -> Self {
        self.then(Action::Ensure(object))
    }

    /// Deletes `object`, which the app owns.
    pub fn delete(self, object: ObjectRef) -> Self {
        self.then(Action::Delete(object))
    }

    /// Restarts workload `namespace`/`name` of `kind`, which the app owns.
    pub fn restart(self, kind: RestartKind, namespace: &str, name: &str) -> Self {
        self.then(Action::Restart(WorkloadRef {
            kind,
            namespace: namespace.into(),
            name: name.into(),
        }))
    }

    /// Merge-patches `chart`'s user overrides with `patch` (a JSON object;
    /// `null` deletes a key). See [`merge_patch_deleting`] to clear a
    /// chart's overrides.
    pub fn patch_overrides(self, chart: &str, patch: Value) -> Self {
        self.then(Action::PatchOverrides(OverridePatch {
            chart: chart.into(),
            patch,
        }))
    }

    /// Asks for another apply of the app once this operation ends.
    pub fn request_reapply(self, reason: impl Into<String>) -> Self {
        self.then(Action::RequestReapply(reason.into()))
    }

    /// Asks the host to read `object` before each later `status` call of
    /// this operation and hand it in
    /// [`HookCall::observed`](crate::v0_2::HookCall::observed).
    pub fn observe(self, object: ObjectRef) -> Self {
        self.then(Action::Observe(object))
    }

    /// Hands `state` (at most [`MAX_STATE_BYTES`]) to this plugin's post
    /// hook of the same operation.
    pub fn with_state(mut self, state: impl Into<Vec<u8>>) -> Self {
        self.state = Some(state.into());
        self
    }

    /// True when the answer stops the operation.
    pub fn is_veto(&self) -> bool {
        matches!(self.verdict, Verdict::Veto(_))
    }

    /// The veto's reason, when the answer stops the operation.
    pub fn veto_reason(&self) -> Option<&str> {
        match &self.verdict {
            Verdict::Veto(reason) => Some(reason),
            Verdict::Proceed => None,
        }
    }
}

/// A merge patch that deletes every top-level key of `overrides` (each set
/// to `null`): what clears a chart's user overrides, for example after
/// moving them to a renamed chart. Anything but an object gives `{}`.
///
/// ```
/// use capstan_plugin_sdk::v0_2::merge_patch_deleting;
/// use serde_json::json;
/// assert_eq!(
///     merge_patch_deleting(&json!({"replicas": 3, "web": {"tls": true}})),
///     json!({"replicas": null, "web": null})
/// );
/// ```
pub fn merge_patch_deleting(overrides: &Value) -> Value {
    let keys = overrides
        .as_object()
        .map(|map| map.keys().map(|k| (k.clone(), Value::Null)).collect())
        .unwrap_or_default();
    Value::Object(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_clamped_to_what_the_host_accepts() {
        assert_eq!(
            HookAnswer::retry_after(0).status,
            Some(ReleaseStatus::RetryAfter(1))
        );
        assert_eq!(
            HookAnswer::retry_after(10_000).status,
            Some(ReleaseStatus::RetryAfter(MAX_RETRY_AFTER_SECS))
        );
    }

    #[test]
    fn object_refs_display_with_and_without_namespace() {
        assert_eq!(
            ObjectRef::namespaced("v1", "Secret", "certs", "tls").to_string(),
            "v1 Secret certs/tls"
        );
        assert_eq!(
            ObjectRef::cluster_scoped("storage.k8s.io/v1", "CSIDriver", "x").to_string(),
            "storage.k8s.io/v1 CSIDriver x"
        );
    }

    #[test]
    fn status_answers_proceed() {
        for answer in [
            HookAnswer::ready(),
            HookAnswer::retry_after(5),
            HookAnswer::failed("no"),
        ] {
            assert!(!answer.is_veto());
        }
        assert_eq!(
            merge_patch_deleting(&Value::Null),
            Value::Object(serde_json::Map::new())
        );
    }
}
