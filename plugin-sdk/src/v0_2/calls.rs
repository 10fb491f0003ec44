//! What the host asks a 0.2 plugin: a [`ChartCall`] for one chart's
//! overrides, a [`HookCall`] for a lifecycle hook, and their parts (the
//! [`Hook`], who started the operation, which operation, what changed, what
//! the host observed).
//!
//! JSON the host sends (user overrides) arrives here already parsed; the
//! glue turns text that is not JSON into a [`PluginError`](crate::PluginError)
//! before a plugin is called.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::v0_1::App;
use crate::v0_2::hook_answer::ObjectRef;

/// A point in an app's life where the platform asks its plugins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hook {
    /// Before any operation: may the app be applied on this platform?
    SemanticCheck,
    /// Just before the charts are applied.
    PreApply,
    /// After every chart group was applied.
    PostApply,
    /// Just before the app's resources are removed.
    PreRemove,
    /// After the app's resources were removed.
    PostRemove,
    /// Before an update from one version to another starts.
    PreUpdate,
    /// After an update finished.
    PostUpdate,
    /// After a release was applied and is ready by the host's rules: is it
    /// ready by the app's? Called per release until it answers ready or
    /// failed ([`HookAnswer::ready`](crate::v0_2::HookAnswer::ready) and
    /// friends).
    Status,
    /// The platform changed (the [`Trigger`] says how) and the app declared
    /// it cares: may the host re-apply it? A veto keeps it as it is.
    EvaluateReapply,
    /// After an operation was aborted.
    PostAbort,
    /// Before a failed operation is recovered.
    PreRecover,
    /// After a recovery.
    PostRecover,
}

impl Hook {
    /// The hook's name as the WIT spells it (`pre-apply`).
    pub fn as_str(self) -> &'static str {
        match self {
            Hook::SemanticCheck => "semantic-check",
            Hook::PreApply => "pre-apply",
            Hook::PostApply => "post-apply",
            Hook::PreRemove => "pre-remove",
            Hook::PostRemove => "post-remove",
            Hook::PreUpdate => "pre-update",
            Hook::PostUpdate => "post-update",
            Hook::Status => "status",
            Hook::EvaluateReapply => "evaluate-reapply",
            Hook::PostAbort => "post-abort",
            Hook::PreRecover => "pre-recover",
            Hook::PostRecover => "post-recover",
        }
    }

    /// The operation a hook most often belongs to, used by
    /// [`HookCall::new`].
    fn usual_operation(self) -> Operation {
        match self {
            Hook::SemanticCheck | Hook::PreApply | Hook::PostApply | Hook::Status => {
                Operation::Apply
            }
            Hook::PreRemove | Hook::PostRemove => Operation::Remove,
            Hook::PreUpdate | Hook::PostUpdate => Operation::Update,
            Hook::EvaluateReapply => Operation::EvaluateReapply,
            Hook::PostAbort => Operation::Abort,
            Hook::PreRecover | Hook::PostRecover => Operation::Recover,
        }
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who started the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The operator.
    Manual,
    /// The host on its own (re-evaluation, recovery at start).
    Auto,
}

/// The operation a hook is part of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// An apply (or re-apply).
    Apply,
    /// A remove.
    Remove,
    /// An update to another version (or a rollback).
    Update,
    /// A recovery of a failed operation.
    Recover,
    /// An abort.
    Abort,
    /// A re-evaluation after the platform changed.
    EvaluateReapply,
}

/// What changed on the platform, for [`Hook::EvaluateReapply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    /// `node-added`, `node-removed`, `node-relabelled`, `facts-changed` or
    /// `platform-event`.
    pub kind: String,
    /// The details: `node`, `section`, `event`, and a platform event's own
    /// `KEY=VALUE` pairs, in the order given.
    pub details: Vec<(String, String)>,
}

impl Trigger {
    /// A trigger of `kind` with no details (for tests).
    pub fn new(kind: &str) -> Self {
        Trigger {
            kind: kind.into(),
            details: Vec::new(),
        }
    }

    /// The same trigger with one more detail (builder style, for tests).
    pub fn with_detail(mut self, key: &str, value: &str) -> Self {
        self.details.push((key.into(), value.into()));
        self
    }

    /// The first detail named `key`, if any.
    pub fn detail(&self, key: &str) -> Option<&str> {
        self.details
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// One chart of the app, and what its operator set for it: the input of
/// [`Plugin::overrides`](crate::v0_2::Plugin::overrides).
#[derive(Debug, Clone, PartialEq)]
pub struct ChartCall {
    /// The app.
    pub app: App,
    /// The chart's name.
    pub chart: String,
    /// The namespace it is installed in.
    pub namespace: String,
    /// The chart's user overrides, read-only: a JSON object, `{}` when
    /// there are none.
    pub user_overrides: Value,
}

impl ChartCall {
    /// A call for `chart` of `app` in `namespace`, with no user overrides.
    pub fn new(app: App, chart: &str, namespace: &str) -> Self {
        ChartCall {
            app,
            chart: chart.into(),
            namespace: namespace.into(),
            user_overrides: Value::Object(Default::default()),
        }
    }

    /// The same call with these user overrides (builder style, for tests).
    pub fn with_user_overrides(mut self, overrides: Value) -> Self {
        self.user_overrides = overrides;
        self
    }

    /// The user override at a dotted `path` (`web.tlsMinVersion`), if the
    /// operator set one.
    pub fn user_override(&self, path: &str) -> Option<&Value> {
        lookup(&self.user_overrides, path)
    }
}

fn lookup<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(root, |value, part| value.as_object()?.get(part))
}

/// An object as the host read it for a [`Hook::Status`] call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedObject {
    /// The object.
    pub object: ObjectRef,
    /// Whether it exists.
    pub exists: bool,
    /// Whether it is ready by the host's readiness rules (kstatus); false
    /// when it does not exist.
    pub ready: bool,
}

impl ObservedObject {
    /// `object` as observed existing and ready (for tests).
    pub fn ready(object: ObjectRef) -> Self {
        ObservedObject {
            object,
            exists: true,
            ready: true,
        }
    }

    /// `object` as observed existing but not ready (for tests).
    pub fn not_ready(object: ObjectRef) -> Self {
        ObservedObject {
            object,
            exists: true,
            ready: false,
        }
    }

    /// `object` as observed missing (for tests).
    pub fn missing(object: ObjectRef) -> Self {
        ObservedObject {
            object,
            exists: false,
            ready: false,
        }
    }
}

/// Everything a hook call is told: the input of
/// [`Plugin::lifecycle`](crate::v0_2::Plugin::lifecycle).
#[derive(Debug, Clone, PartialEq)]
pub struct HookCall {
    /// The hook.
    pub hook: Hook,
    /// The app (for updates, the version the hook belongs to).
    pub app: App,
    /// Who started the operation.
    pub mode: Mode,
    /// The operation the hook is part of.
    pub operation: Operation,
    /// For updates and rollbacks: the version left.
    pub from_version: Option<String>,
    /// For updates and rollbacks: the version gone to.
    pub to_version: Option<String>,
    /// For [`Hook::Status`]: the release (chart) asked about.
    pub release: Option<String>,
    /// For [`Hook::Status`]: the namespace of that release.
    pub release_namespace: Option<String>,
    /// For [`Hook::Status`]: 1 at the first call for a release, one more at
    /// each call after a retry; 1 for every other hook.
    pub attempt: u32,
    /// The namespaces of the app's charts, in chart order, each once.
    pub namespaces: Vec<String>,
    /// For [`Hook::EvaluateReapply`]: what changed.
    pub trigger: Option<Trigger>,
    /// For post hooks: the state this plugin's pre hook of the same
    /// operation left, if it left any.
    pub state: Option<Vec<u8>>,
    /// The user overrides of every chart of the app, read-only, by chart
    /// (each a JSON object).
    pub user_overrides: BTreeMap<String, Value>,
    /// For [`Hook::Status`]: the objects this plugin ensured or asked to
    /// observe in this operation, as the host last read them.
    pub observed: Vec<ObservedObject>,
}

impl HookCall {
    /// A manual call of `hook` for `app`, in the operation the hook usually
    /// belongs to (apply for `semantic-check` and `status`), with nothing
    /// else set (for tests; the builders below set the rest).
    pub fn new(hook: Hook, app: App) -> Self {
        HookCall {
            hook,
            app,
            mode: Mode::Manual,
            operation: hook.usual_operation(),
            from_version: None,
            to_version: None,
            release: None,
            release_namespace: None,
            attempt: 1,
            namespaces: Vec::new(),
            trigger: None,
            state: None,
            user_overrides: BTreeMap::new(),
            observed: Vec::new(),
        }
    }

    /// The same call started by the host on its own (builder style).
    pub fn auto(mut self) -> Self {
        self.mode = Mode::Auto;
        self
    }

    /// The same call within `operation` (builder style).
    pub fn in_operation(mut self, operation: Operation) -> Self {
        self.operation = operation;
        self
    }

    /// The same call for an update from `from` to `to` (builder style).
    pub fn with_versions(mut self, from: &str, to: &str) -> Self {
        self.from_version = Some(from.into());
        self.to_version = Some(to.into());
        self
    }

    /// The same call about release `release` (builder style).
    pub fn with_release(mut self, release: &str) -> Self {
        self.release = Some(release.into());
        self
    }

    /// The same call about release `release` in `namespace` (builder
    /// style).
    pub fn with_release_in(mut self, release: &str, namespace: &str) -> Self {
        self.release = Some(release.into());
        self.release_namespace = Some(namespace.into());
        self
    }

    /// The same call at `attempt` (builder style).
    pub fn with_attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt;
        self
    }

    /// The same call for an app whose charts are in `namespaces` (builder
    /// style).
    pub fn with_namespaces<I, S>(mut self, namespaces: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.namespaces = namespaces.into_iter().map(Into::into).collect();
        self
    }

    /// The same call with `trigger` (builder style).
    pub fn with_trigger(mut self, trigger: Trigger) -> Self {
        self.trigger = Some(trigger);
        self
    }

    /// The same call handed `state` (builder style).
    pub fn with_state(mut self, state: impl Into<Vec<u8>>) -> Self {
        self.state = Some(state.into());
        self
    }

    /// The same call with `chart`'s user overrides (builder style).
    pub fn with_user_overrides(mut self, chart: &str, overrides: Value) -> Self {
        self.user_overrides.insert(chart.into(), overrides);
        self
    }

    /// The same call with one more observed object (builder style).
    pub fn with_observed(mut self, observed: ObservedObject) -> Self {
        self.observed.push(observed);
        self
    }

    /// The user overrides of `chart`, if the app has that chart.
    pub fn user_overrides_of(&self, chart: &str) -> Option<&Value> {
        self.user_overrides.get(chart)
    }

    /// How the host last read `object`, if this plugin ensured or observed
    /// it in this operation.
    pub fn observed(&self, object: &ObjectRef) -> Option<&ObservedObject> {
        self.observed.iter().find(|o| &o.object == object)
    }

    /// The major version number of [`HookCall::from_version`] (`1` for
    /// `1.4.2`), when there is one and it starts with a number.
    pub fn from_major(&self) -> Option<u64> {
        self.from_version.as_deref().and_then(major)
    }

    /// The major version number of [`HookCall::to_version`].
    pub fn to_major(&self) -> Option<u64> {
        self.to_version.as_deref().and_then(major)
    }

    /// True when this call is part of an update from major version `from`
    /// to major version `to` (`is_update_between(1, 2)` for 1.x to 2.x).
    pub fn is_update_between(&self, from: u64, to: u64) -> bool {
        self.from_major() == Some(from) && self.to_major() == Some(to)
    }
}

/// The leading number of a version, `v` prefix allowed.
fn major(version: &str) -> Option<u64> {
    let version = version.trim().trim_start_matches('v');
    let digits = version.split(['.', '-', '+']).next()?;
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn majors_parse_leading_numbers() {
        assert_eq!(major("1.4.2"), Some(1));
        assert_eq!(major("v2.0.0-rc.1"), Some(2));
        assert_eq!(major("10"), Some(10));
        assert_eq!(major("x.1"), None);
        assert_eq!(major(""), None);
        let call =
            HookCall::new(Hook::PreUpdate, App::new("a", "2.0.0")).with_versions("1.3.0", "2.0.0");
        assert!(call.is_update_between(1, 2));
        assert!(!call.is_update_between(2, 3));
    }

    #[test]
    fn user_override_reads_dotted_paths() {
        let call = ChartCall::new(App::new("a", "1"), "c", "ns")
            .with_user_overrides(json!({"web": {"tls": {"min": "1.3"}}, "n": 1}));
        assert_eq!(call.user_override("web.tls.min"), Some(&json!("1.3")));
        assert_eq!(call.user_override("n.deeper"), None);
        assert_eq!(call.user_override("absent"), None);
    }

    #[test]
    fn hooks_belong_to_their_usual_operation() {
        let app = App::new("a", "1");
        assert_eq!(
            HookCall::new(Hook::PreUpdate, app.clone()).operation,
            Operation::Update
        );
        assert_eq!(
            HookCall::new(Hook::Status, app.clone()).operation,
            Operation::Apply
        );
        assert_eq!(HookCall::new(Hook::PostAbort, app).auto().mode, Mode::Auto);
    }
}
