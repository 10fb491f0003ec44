//! What a plugin is asked and what it answers beyond values and vetoes
//! (contract 0.2), in the host's terms: the fact sections a plugin reads,
//! a chart call with its user overrides, a chart answer with secret values,
//! generated secrets and "disabled", a hook call with its context, and a
//! hook answer with the actions it asks the host to take.
//!
//! The sandbox converts these to and from each contract version's WIT
//! types (a 0.1.0 plugin gets the parts 0.1.0 has and answers without the
//! rest); the lifecycle checks the actions against the operator's policy
//! and takes them.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::hook::Hook;
use super::object::ObjectRef;

/// A section of the facts (contract 0.2): a plugin declares the ones it
/// reads, and is handed only those.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum FactsSection {
    /// The platform as a whole.
    System,
    /// The hosts and their states.
    Hosts,
    /// Each host's hardware inventory (implies `hosts`).
    Inventory,
    /// The platform networks.
    Networks,
    /// The storage backends, with health.
    Storage,
    /// The platform's service parameters.
    ServiceParameters,
    /// The cluster: version, served API versions, StorageClasses.
    Cluster,
}

impl FactsSection {
    /// Every section.
    pub const ALL: [FactsSection; 7] = [
        FactsSection::System,
        FactsSection::Hosts,
        FactsSection::Inventory,
        FactsSection::Networks,
        FactsSection::Storage,
        FactsSection::ServiceParameters,
        FactsSection::Cluster,
    ];

    /// The section's name as the WIT contract spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            FactsSection::System => "system",
            FactsSection::Hosts => "hosts",
            FactsSection::Inventory => "inventory",
            FactsSection::Networks => "networks",
            FactsSection::Storage => "storage",
            FactsSection::ServiceParameters => "service-parameters",
            FactsSection::Cluster => "cluster",
        }
    }
}

impl fmt::Display for FactsSection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One chart of an app, as a plugin is asked about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartCall {
    /// The app's name.
    pub app: String,
    /// The app's version.
    pub version: String,
    /// The chart.
    pub chart: String,
    /// The namespace the chart is installed in.
    pub namespace: String,
    /// The chart's user overrides (read-only): a JSON object.
    pub user_overrides: serde_json::Value,
}

/// A key of a Secret in the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// The Secret's namespace.
    pub namespace: String,
    /// The Secret's name.
    pub name: String,
    /// The key within its data.
    pub key: String,
}

/// A key of a secret the host generated for the app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeneratedKey {
    /// The generated secret's name.
    pub name: String,
    /// The key (`password`, `private-key`, `tls.crt`, ...).
    pub key: String,
}

/// Where a secret value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum SecretSource {
    /// A key of an existing Secret.
    Existing(SecretKeyRef),
    /// A key of a generated secret.
    Generated(GeneratedKey),
}

impl fmt::Display for SecretSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretSource::Existing(r) => {
                write!(f, "Secret {}/{} key {}", r.namespace, r.name, r.key)
            }
            SecretSource::Generated(g) => write!(f, "generated secret {} key {}", g.name, g.key),
        }
    }
}

/// A Helm value filled in from a secret at render: only the reference is
/// ever stored, logged or shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretValue {
    /// The value's dot-separated path.
    pub path: String,
    /// Where its value comes from.
    pub source: SecretSource,
}

/// The characters of a generated password.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Charset {
    /// `A-Z a-z 0-9`.
    Alphanumeric,
    /// `0-9 a-f`.
    Hex,
    /// Printable ASCII but space, quotes and backslash.
    Printable,
}

/// What a generated secret is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum SecretShape {
    /// A random password.
    Password {
        /// Its length.
        length: u32,
        /// Its characters.
        charset: Charset,
    },
    /// An Ed25519 key pair.
    Ed25519Key,
    /// A self-signed certificate with an ECDSA P-256 key.
    #[serde(rename_all = "camelCase")]
    Certificate {
        /// Its common name.
        common_name: String,
        /// Its DNS subject alternative names.
        dns_names: Vec<String>,
        /// Days it is valid.
        validity_days: u32,
    },
}

impl SecretShape {
    /// The keys a secret of this shape holds.
    pub fn keys(&self) -> &'static [&'static str] {
        match self {
            SecretShape::Password { .. } => &["password"],
            SecretShape::Ed25519Key => &["private-key", "public-key"],
            SecretShape::Certificate { .. } => &["tls.crt", "tls.key", "ca.crt"],
        }
    }
}

/// A secret the host generates once for the app and keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeneratedSecret {
    /// Its name within the app.
    pub name: String,
    /// What to generate.
    pub shape: SecretShape,
}

/// A plugin's answer for one chart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChartAnswer {
    /// The chart's system overrides.
    pub values: Overrides,
    /// Values filled in from secrets at render.
    pub secret_values: Vec<SecretValue>,
    /// Secrets to generate for the app.
    pub generate: Vec<GeneratedSecret>,
    /// Leave the chart out of the apply.
    pub disabled: bool,
}

/// Who started an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The operator.
    Manual,
    /// The host on its own.
    Auto,
}

/// The operation a hook is part of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HookOperation {
    /// An apply.
    Apply,
    /// A remove.
    Remove,
    /// An update or a rollback.
    Update,
    /// A recovery.
    Recover,
    /// An abort.
    Abort,
    /// A re-evaluation after the platform changed.
    EvaluateReapply,
}

impl HookOperation {
    /// The operation a hook is part of when nothing else says: `apply`
    /// for the apply hooks and `semantic-check`, and the hook's own
    /// operation for the others.
    pub fn of(hook: Hook) -> HookOperation {
        match hook {
            Hook::SemanticCheck | Hook::PreApply | Hook::PostApply | Hook::Status => {
                HookOperation::Apply
            }
            Hook::PreRemove | Hook::PostRemove => HookOperation::Remove,
            Hook::PreUpdate | Hook::PostUpdate => HookOperation::Update,
            Hook::EvaluateReapply => HookOperation::EvaluateReapply,
            Hook::PostAbort => HookOperation::Abort,
            Hook::PreRecover | Hook::PostRecover => HookOperation::Recover,
        }
    }
}

/// What changed on the platform, for `evaluate-reapply`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Trigger {
    /// `node-added`, `node-removed`, `node-relabelled`, `facts-changed` or
    /// `platform-event`.
    pub kind: String,
    /// Its details, `KEY=VALUE`.
    pub details: Vec<(String, String)>,
}

impl Trigger {
    /// A trigger of `kind` with `details`.
    pub fn new(kind: TriggerKind, details: &[(&str, &str)]) -> Trigger {
        Trigger {
            kind: kind.as_str().to_string(),
            details: details
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
        }
    }

    /// The value of detail `key`, if it has one.
    pub fn detail(&self, key: &str) -> Option<&str> {
        self.details
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Display for Trigger {
    /// `node-relabelled (node=worker-1, label=zone)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.kind)?;
        if !self.details.is_empty() {
            let details: Vec<String> = self
                .details
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            write!(f, " ({})", details.join(", "))?;
        }
        Ok(())
    }
}

/// The kinds of platform change an app may ask `evaluate-reapply` about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TriggerKind {
    /// A node joined the cluster (detail `node`).
    NodeAdded,
    /// A node left it (detail `node`).
    NodeRemoved,
    /// A node's label was added, changed or removed (details `node`,
    /// `label`).
    NodeRelabelled,
    /// A top-level field of the facts changed (detail `section`, the
    /// field's name: `storageBackends`, `nodes`, ...).
    FactsChanged,
    /// `capstan platform event NAME [KEY=VALUE]...` was posted (detail
    /// `name`, then the event's own).
    PlatformEvent,
}

impl TriggerKind {
    /// The kind as `capstan.yaml` and the hook call spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            TriggerKind::NodeAdded => "node-added",
            TriggerKind::NodeRemoved => "node-removed",
            TriggerKind::NodeRelabelled => "node-relabelled",
            TriggerKind::FactsChanged => "facts-changed",
            TriggerKind::PlatformEvent => "platform-event",
        }
    }
}

/// One entry of `reapply_triggers` in `capstan.yaml`: a kind of platform
/// change the app's `evaluate-reapply` hook is asked about, narrowed by
/// a filter.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerSpec {
    /// The kind of change.
    pub on: TriggerKind,
    /// For `node-relabelled`: only a change of this label key.
    #[serde(default)]
    pub label: Option<String>,
    /// For `facts-changed`: only a change of this top-level field.
    #[serde(default)]
    pub section: Option<String>,
    /// For `platform-event`: the event's name (required).
    #[serde(default)]
    pub name: Option<String>,
}

impl TriggerSpec {
    /// Whether `trigger` is one this entry asks about.
    pub fn matches(&self, trigger: &Trigger) -> bool {
        if trigger.kind != self.on.as_str() {
            return false;
        }
        let wanted = |filter: &Option<String>, key: &str| {
            filter
                .as_deref()
                .is_none_or(|want| trigger.detail(key) == Some(want))
        };
        wanted(&self.label, "label")
            && wanted(&self.section, "section")
            && wanted(&self.name, "name")
    }

    /// Why the entry is inconsistent (a filter on the wrong kind, an
    /// event without a name), if it is.
    pub fn problem(&self) -> Option<String> {
        let only = |filter: &Option<String>, field: &str, kind: TriggerKind| {
            (filter.is_some() && self.on != kind)
                .then(|| format!("{field} filters only {} triggers", kind.as_str()))
        };
        only(&self.label, "label", TriggerKind::NodeRelabelled)
            .or_else(|| only(&self.section, "section", TriggerKind::FactsChanged))
            .or_else(|| only(&self.name, "name", TriggerKind::PlatformEvent))
            .or_else(|| {
                (self.on == TriggerKind::PlatformEvent && self.name.is_none())
                    .then(|| "a platform-event trigger needs the event's name".to_string())
            })
    }
}

/// An object as the host read it for a `status` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Observed {
    /// The object.
    pub object: ObjectRef,
    /// Whether it exists.
    pub exists: bool,
    /// Whether it is ready by kstatus's rules.
    pub ready: bool,
}

/// Everything a hook call is told.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookCall {
    /// The hook.
    pub hook: Hook,
    /// The app's name.
    pub app: String,
    /// The app's version the hook belongs to.
    pub version: String,
    /// Who started the operation.
    pub mode: Mode,
    /// The operation.
    pub operation: HookOperation,
    /// For updates: the version left.
    pub from_version: Option<String>,
    /// For updates: the version gone to.
    pub to_version: Option<String>,
    /// For `status`: the release asked about.
    pub release: Option<String>,
    /// For `status`: its namespace.
    pub release_namespace: Option<String>,
    /// For `status`: 1, 2, ... at each call for the release; else 1.
    pub attempt: u32,
    /// The namespaces of the app's charts, each once.
    pub namespaces: Vec<String>,
    /// For `evaluate-reapply`: what changed.
    pub trigger: Option<Trigger>,
    /// For post hooks: the state the plugin's pre hook left.
    #[serde(skip)]
    pub state: Option<Vec<u8>>,
    /// Every chart's user overrides.
    pub user_overrides: Vec<(String, serde_json::Value)>,
    /// For `status`: the objects observed.
    pub observed: Vec<Observed>,
}

impl HookCall {
    /// A call of `hook` for `app` at `version`, manual, with nothing else.
    pub fn new(hook: Hook, operation: HookOperation, app: &str, version: &str) -> HookCall {
        HookCall {
            hook,
            app: app.to_string(),
            version: version.to_string(),
            mode: Mode::Manual,
            operation,
            from_version: None,
            to_version: None,
            release: None,
            release_namespace: None,
            attempt: 1,
            namespaces: Vec::new(),
            trigger: None,
            state: None,
            user_overrides: Vec::new(),
            observed: Vec::new(),
        }
    }
}

/// A release's status as the `status` hook answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseStatus {
    /// Ready.
    Ready,
    /// Ask again after this many seconds.
    RetryAfter(u32),
    /// Will not become ready.
    Failed(String),
}

/// What kind of object a mirror copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MirrorKind {
    /// A Secret.
    Secret,
    /// A ConfigMap.
    ConfigMap,
}

impl MirrorKind {
    /// The kind as Kubernetes spells it.
    pub fn kind(self) -> &'static str {
        match self {
            MirrorKind::Secret => "Secret",
            MirrorKind::ConfigMap => "ConfigMap",
        }
    }
}

/// Copy an object into one of the app's namespaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Mirror {
    /// What to copy.
    pub kind: MirrorKind,
    /// The source's namespace.
    pub from_namespace: String,
    /// The source's name.
    pub from_name: String,
    /// The copy's namespace.
    pub to_namespace: String,
    /// The copy's name.
    pub to_name: String,
}

/// Something a hook asks the host to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Copy a Secret or ConfigMap into one of the app's namespaces.
    Mirror(Mirror),
    /// Apply this object as owned by the app.
    Ensure(serde_json::Value),
    /// Delete an object the app owns.
    Delete(ObjectRef),
    /// Restart a workload the app owns.
    Restart(ObjectRef),
    /// Patch a chart's user overrides (a JSON merge patch).
    PatchOverrides {
        /// The chart.
        chart: String,
        /// The merge patch.
        patch: serde_json::Value,
    },
    /// Ask for another apply once this operation ends.
    RequestReapply(String),
    /// Read this object before each later `status` call.
    Observe(ObjectRef),
}

impl Action {
    /// The action's name, as errors and history spell it.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Mirror(_) => "mirror",
            Action::Ensure(_) => "ensure",
            Action::Delete(_) => "delete",
            Action::Restart(_) => "restart",
            Action::PatchOverrides { .. } => "patch-overrides",
            Action::RequestReapply(_) => "request-reapply",
            Action::Observe(_) => "observe",
        }
    }
}

/// A hook's whole answer.
#[derive(Debug, Clone, PartialEq)]
pub struct HookAnswer {
    /// Go on, or stop.
    pub verdict: super::HookOutcome,
    /// What the host is to do, in order.
    pub actions: Vec<Action>,
    /// State for the post hook.
    pub state: Option<Vec<u8>>,
    /// For `status`: the release's status.
    pub status: Option<ReleaseStatus>,
}

impl HookAnswer {
    /// Go on, asking nothing.
    pub fn proceed() -> HookAnswer {
        HookAnswer {
            verdict: super::HookOutcome::Proceed,
            actions: Vec::new(),
            state: None,
            status: None,
        }
    }
}

impl From<super::HookOutcome> for HookAnswer {
    fn from(verdict: super::HookOutcome) -> HookAnswer {
        HookAnswer {
            verdict,
            ..HookAnswer::proceed()
        }
    }
}

/// What the hook actions of one app's plugins may do (contract 0.2): the
/// operator's policy, checked before the host takes any action. The
/// default keeps an app to its own namespaces, with no cluster-scoped or
/// RBAC objects, copies only from its own namespaces, and at most
/// [`DEFAULT_MAX_OWNED`] owned objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionPolicy {
    /// Namespaces the app's actions may write in besides its charts'
    /// own; `*` is every one.
    #[serde(default)]
    pub namespaces: std::collections::BTreeSet<String>,
    /// Whether actions may write cluster-scoped objects.
    #[serde(default)]
    pub cluster_scoped: bool,
    /// Whether actions may write RBAC objects (Roles, ClusterRoles and
    /// their bindings).
    #[serde(default)]
    pub rbac: bool,
    /// Secrets and ConfigMaps outside the app's namespaces that a mirror
    /// may copy: `NS/NAME`, or `NS/*` for every one in `NS`.
    #[serde(default)]
    pub mirror_from: std::collections::BTreeSet<String>,
    /// Most objects the app's actions may own at once.
    #[serde(default = "default_max_owned")]
    pub max_owned: usize,
    /// Most bytes (as JSON) the objects the app's actions own may hold
    /// together.
    #[serde(default = "default_max_owned_bytes")]
    pub max_owned_bytes: usize,
    /// The Pod Security Standards level the Pods and Pod templates of
    /// ensured objects must meet.
    #[serde(default)]
    pub pod_security: PodSecurity,
}

/// The Pod Security Standards' levels
/// (<https://kubernetes.io/docs/concepts/security/pod-security-standards/>),
/// least to most restrictive.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum PodSecurity {
    /// Anything goes.
    Privileged,
    /// No known privilege escalation: no host namespaces, privileged
    /// containers, host paths or ports, added capabilities beyond the
    /// default set.
    #[default]
    Baseline,
    /// Baseline, and hardened: non-root, no privilege escalation, every
    /// capability dropped, a seccomp profile, restricted volume types.
    Restricted,
}

impl PodSecurity {
    /// The level as the policy file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            PodSecurity::Privileged => "privileged",
            PodSecurity::Baseline => "baseline",
            PodSecurity::Restricted => "restricted",
        }
    }
}

impl fmt::Display for PodSecurity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The default bound on the objects one app's actions may own.
pub const DEFAULT_MAX_OWNED: usize = 100;

fn default_max_owned() -> usize {
    DEFAULT_MAX_OWNED
}

/// The default bound on the bytes one app's owned objects may hold.
pub const DEFAULT_MAX_OWNED_BYTES: usize = 8 << 20;

fn default_max_owned_bytes() -> usize {
    DEFAULT_MAX_OWNED_BYTES
}

impl Default for ActionPolicy {
    fn default() -> Self {
        ActionPolicy {
            namespaces: std::collections::BTreeSet::new(),
            cluster_scoped: false,
            rbac: false,
            mirror_from: std::collections::BTreeSet::new(),
            max_owned: DEFAULT_MAX_OWNED,
            max_owned_bytes: DEFAULT_MAX_OWNED_BYTES,
            pod_security: PodSecurity::default(),
        }
    }
}

impl ActionPolicy {
    /// Whether a mirror may copy `namespace/name` from outside the app's
    /// namespaces.
    pub fn may_mirror_from(&self, namespace: &str, name: &str) -> bool {
        self.mirror_from.contains(&format!("{namespace}/{name}"))
            || self.mirror_from.contains(&format!("{namespace}/*"))
    }

    /// Whether actions may write in `namespace` besides the app's own.
    pub fn may_write_in(&self, namespace: &str) -> bool {
        self.namespaces.contains("*") || self.namespaces.contains(namespace)
    }
}

/// The operator's action policies: a default, and per app (each replacing
/// the default whole for its app). Read from `serve --action-policy FILE`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionPolicies {
    /// The policy of apps not named below.
    #[serde(default)]
    pub default: ActionPolicy,
    /// Policies by app name.
    #[serde(default)]
    pub apps: std::collections::BTreeMap<String, ActionPolicy>,
}

impl ActionPolicies {
    /// The policy of `app`.
    pub fn for_app(&self, app: &str) -> &ActionPolicy {
        self.apps.get(app).unwrap_or(&self.default)
    }
}

/// A chart's system overrides as a plugin returned them: its JSON text,
/// checked when the call returned to be one JSON object that parses
/// (numbers in range, nesting within serde_json's limit), without building
/// it. The text is kept: the lifecycle parses it once, straight into the
/// values it merges (`values::parse_json`), and tools that want serde_json's
/// map ask [`Overrides::to_map`] (issue 28: a call no longer builds a map
/// that the lifecycle then printed and parsed again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overrides(String);

impl Default for Overrides {
    /// No overrides: `{}`.
    fn default() -> Self {
        Overrides("{}".to_string())
    }
}

impl Overrides {
    /// `text` if it is one JSON object.
    ///
    /// # Errors
    ///
    /// Why it is not, in one line: not JSON (serde_json's error, with its
    /// line and column), or JSON of another kind ("got a string").
    pub fn parse(text: String) -> Result<Overrides, String> {
        use serde::Deserializer as _;
        let mut de = serde_json::Deserializer::from_str(&text);
        let kind = de
            .deserialize_any(Check)
            .and_then(|kind| de.end().map(|()| kind))
            .map_err(|e| format!("overrides are not valid JSON: {e}"))?;
        if kind != "an object" {
            return Err(format!("overrides must be a JSON object, got {kind}"));
        }
        Ok(Overrides(text))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The object as serde_json's map.
    ///
    /// # Errors
    ///
    /// None for text [`Overrides::parse`] accepted (it checked what this
    /// parse needs); the error is kept rather than assumed away.
    pub fn to_map(&self) -> Result<serde_json::Map<String, serde_json::Value>, serde_json::Error> {
        serde_json::from_str(&self.0)
    }
}

impl fmt::Display for Overrides {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Walks one JSON value as serde_json's own `Value` would be built from it
/// (every number converted, so one out of range is refused) while keeping
/// nothing, and names its kind.
struct Check;

impl<'de> serde::de::Visitor<'de> for Check {
    type Value = &'static str;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok("null")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok("a boolean")
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok("a number")
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok("a number")
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok("a number")
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok("a string")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element_seed(Walk)?.is_some() {}
        Ok("an array")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map
            .next_entry_seed(std::marker::PhantomData::<serde::de::IgnoredAny>, Walk)?
            .is_some()
        {}
        Ok("an object")
    }
}

/// [`Check`] as a seed, for the values inside arrays and objects.
struct Walk;

impl<'de> serde::de::DeserializeSeed<'de> for Walk {
    type Value = &'static str;

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_any(Check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Overrides, String> {
        Overrides::parse(text.to_string())
    }

    #[test]
    fn an_object_is_kept_as_its_text_and_parses_as_serde_json_would() {
        let text = r#" {"a": {"b": [1, 2.5, -3, "x\u00e9", null, true]}, "a2": {}} "#;
        let values = parse(text).unwrap();
        assert_eq!(values.as_str(), text);
        assert_eq!(
            serde_json::Value::Object(values.to_map().unwrap()),
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
        assert_eq!(Overrides::default().to_map().unwrap().len(), 0);
    }

    #[test]
    fn other_kinds_are_named() {
        for (text, kind) in [
            ("[]", "an array"),
            ("\"text\"", "a string"),
            ("12", "a number"),
            ("true", "a boolean"),
            ("null", "null"),
        ] {
            assert_eq!(
                parse(text).unwrap_err(),
                format!("overrides must be a JSON object, got {kind}")
            );
        }
    }

    /// What serde_json refuses when it builds a value is refused without
    /// building one: bad syntax, trailing text, a number out of range,
    /// nesting past its limit; a repeated key it accepts (the last wins).
    #[test]
    fn what_serde_json_refuses_is_refused() {
        for text in [
            "{",
            "{\"a\": 1,}",
            "{} {}",
            "{\"a\": 1e400}",
            "{\"a\": \"\\ud800\"}",
            "",
        ] {
            let error = parse(text).unwrap_err();
            assert!(
                error.starts_with("overrides are not valid JSON: "),
                "{text:?}: {error}"
            );
            assert!(
                serde_json::from_str::<serde_json::Value>(text).is_err(),
                "{text:?}"
            );
        }
        let deep = format!("{{\"a\": {}{}}}", "[".repeat(200), "]".repeat(200));
        assert!(
            parse(&deep)
                .unwrap_err()
                .contains("recursion limit exceeded")
        );
        let repeated = parse(r#"{"a": 1, "a": 2}"#).unwrap();
        assert_eq!(repeated.to_map().unwrap()["a"], 2);
    }
}
