//! One operation's context: the [`Job`] (the daemon's services, the
//! app, the operation and what it gathers as it runs: warnings, the
//! redactor, a plugin's request to re-apply), the apply's options
//! ([`Apply`]) and what loading a version prepared for its steps
//! ([`Prepared`]: plugins, facts, hook state). Every step of an apply,
//! an action or a hook is a function over these; none is a method here.

use crate::kube::{ApplyTarget, Resource};
use crate::lifecycle::Error;
use crate::lifecycle::context::Inner;
use crate::lifecycle::stored::StoredVersion;
use crate::model::ApplyRequest;
use crate::model::Facts;
use crate::model::{AppName, Hook, HookAnswer, HookCall, HookOperation, Mode, Served};
use crate::sandbox::{self, CallContext, Plugin};
use crate::secrets::Redactor;
use crate::store::OverrideLayer;
use crate::store::{OperationId, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which user overrides an apply uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UserLayer<'a> {
    /// The stored user layer.
    Stored,
    /// None (an update that does not keep user overrides; the stored layer
    /// is cleared only once the update succeeded).
    Dropped,
    /// These, by chart (a rollback's saved overrides; the stored layer is
    /// replaced by them only once the rollback succeeded).
    Given(&'a [(String, serde_json::Value)]),
}

/// What an apply of one version is asked to do.
pub(crate) struct Apply<'a> {
    /// The version to apply.
    pub version: &'a StoredVersion,
    /// Another version whose charts should go if this one lacks them (the
    /// old version of an update, the failed new one of a rollback).
    pub replacing: Option<&'a StoredVersion>,
    /// Which user overrides to use.
    pub user: UserLayer<'a>,
    /// The operator's flags (`--rekind`, `--adopt`, `--recreate`).
    pub flags: &'a ApplyRequest,
    /// Hooks run before `pre-apply` and after `post-apply` (an update's
    /// `pre-update` and `post-update`).
    pub around: Option<(Hook, Hook)>,
    /// Prefix of checkpoint names (`apply`, `update`, `rollback`, ...).
    pub phase: &'static str,
}

impl<'a> Apply<'a> {
    /// A request of `version` with the stored user overrides and no
    /// flags, for work that loads the plugins without applying (a hook
    /// called on its own: `semantic-check`, `post-abort`,
    /// `evaluate-reapply`), under checkpoint prefix `phase`.
    pub fn plain(version: &'a StoredVersion, phase: &'static str) -> Apply<'a> {
        Apply {
            version,
            replacing: None,
            user: UserLayer::Stored,
            flags: &NO_FLAGS,
            around: None,
            phase,
        }
    }
}

/// No flags: what every operation but an operator's apply runs with.
pub(crate) static NO_FLAGS: ApplyRequest = ApplyRequest {
    rekind: Vec::new(),
    adopt: false,
    recreate: Vec::new(),
    force_conflicts: false,
};

/// A loaded plugin and what the bundle says it serves.
pub(crate) struct AppPlugin {
    pub(crate) path: String,
    pub(crate) hooks: Vec<Hook>,
    pub(crate) charts: BTreeSet<String>,
    pub(crate) plugin: Plugin,
}

impl AppPlugin {
    /// Its path in the bundle (`plugins/NAME.wasm`).
    pub(crate) fn path(&self) -> &str {
        &self.path
    }
}

/// One running operation's view of the daemon.
pub(crate) struct Job<'a> {
    pub inner: &'a Inner,
    pub app: AppName,
    pub op: OperationId,
    /// Raised by `app abort`; checked between steps, and by every plugin
    /// call at each epoch tick.
    pub abort: &'a Arc<AtomicBool>,
    pub warnings: Mutex<Vec<String>>,
    /// Set when a plugin's hook asked for another apply (contract 0.2's
    /// `request-reapply`): the app is marked once the operation ends.
    pub requested_reapply: Mutex<Option<String>>,
    /// Every secret value this operation placed, hidden from its messages
    /// and diffs.
    pub redactor: Mutex<crate::secrets::Redactor>,
    /// Set when no person started the work (an automatic re-apply and the
    /// semantic check before it): hooks are told `mode: auto`.
    pub automatic: AtomicBool,
}

/// Everything the charts of one apply share.
pub(crate) struct Prepared<'a> {
    pub(crate) request: &'a Apply<'a>,
    pub(crate) plugins: Vec<AppPlugin>,
    pub(crate) facts: Facts,
    pub(crate) system: BTreeMap<String, serde_json::Value>,
    /// What the target serves (`None` for a target that is no server),
    /// asked once per operation.
    pub(crate) served: Option<Served>,
    /// The API versions the CRDs of the charts planned so far add, which
    /// the charts of later groups see in `.Capabilities.APIVersions`.
    pub(crate) planned_api_versions: Mutex<BTreeSet<String>>,
    /// Charts a plugin's answer disabled: not rendered, removed if
    /// installed.
    pub(crate) disabled: BTreeSet<String>,
    /// The secret values of each chart, merged above the system overrides
    /// at render and never stored ([`super::apply::secret_values`]).
    pub(crate) secret_layers: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
    /// The state each plugin's pre hook left for its post hook, by plugin
    /// path (contract 0.2), for this operation only.
    pub(crate) hook_state: Mutex<BTreeMap<String, Vec<u8>>>,
    /// The namespaces of the version's charts, in chart order, each once.
    pub(crate) namespaces: Vec<String>,
    /// What this operation's hooks ensured or mirrored, for the owned
    /// release ([`super::owned`]).
    pub(crate) ensured: Mutex<Vec<Resource>>,
    /// What this operation's hooks asked to observe.
    pub(crate) observed: Mutex<Vec<crate::model::ObjectRef>>,
}

impl Prepared<'_> {
    /// The namespaces of the version's charts.
    pub(crate) fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    pub(crate) fn ensured(&self) -> std::sync::MutexGuard<'_, Vec<Resource>> {
        self.ensured
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn observed(&self) -> std::sync::MutexGuard<'_, Vec<crate::model::ObjectRef>> {
        self.observed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The plugins that implement `hook`, in bundle order.
    pub(crate) fn plugins_with(&self, hook: Hook) -> impl Iterator<Item = &AppPlugin> {
        self.plugins.iter().filter(move |p| p.hooks.contains(&hook))
    }

    /// A call of `hook` with what every hook of this operation is told:
    /// the operation, the versions of an update, the charts' user
    /// overrides and namespaces.
    pub(crate) fn hook_call(&self, job: &Job<'_>, hook: Hook) -> Result<HookCall, Error> {
        let version = self.request.version;
        let mut call = HookCall::new(hook, self.operation(), job.app.as_str(), &version.version);
        if job.automatic.load(Ordering::SeqCst) {
            call.mode = Mode::Auto;
        }
        if let Some(from) = self.request.replacing
            && self.request.around.is_some()
        {
            call.from_version = Some(from.version.clone());
            call.to_version = Some(version.version.clone());
        }
        // The charts of the version, then those only the version it
        // replaces has (an update's renamed chart keeps its overrides
        // until a hook moves them).
        let charts = [Some(version), self.request.replacing]
            .into_iter()
            .flatten()
            .flat_map(|v| &v.metadata.charts);
        for chart in charts {
            let name = chart.name.as_str();
            if call.user_overrides.iter().any(|(c, _)| c == name) {
                continue;
            }
            if let Some(values) = user_overrides(job, self, name)? {
                call.user_overrides.push((name.to_string(), values));
            }
        }
        call.namespaces = self.namespaces.clone();
        Ok(call)
    }

    /// Calls `plugin`'s hook, recording the call and naming the plugin in
    /// errors.
    pub(crate) fn call_hook(
        &self,
        job: &Job<'_>,
        plugin: &AppPlugin,
        call: &HookCall,
    ) -> Result<HookAnswer, Error> {
        let ctx = job.call_context(call.hook.as_str());
        let started = Instant::now();
        let answer = plugin.plugin.hook(&ctx, call, &self.facts);
        job.observe(plugin, call.hook.as_str(), started, answer)
    }

    pub(crate) fn states(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Vec<u8>>> {
        self.hook_state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The operation this apply is part of, as hooks are told.
    pub(crate) fn operation(&self) -> HookOperation {
        match self.request.phase {
            "remove" => HookOperation::Remove,
            "recover" => HookOperation::Recover,
            "abort" => HookOperation::Abort,
            "evaluate-reapply" => HookOperation::EvaluateReapply,
            "update" | "rollback" | "rollback-to" | "rollback-undo" => HookOperation::Update,
            _ if self.request.around.is_some() => HookOperation::Update,
            _ => HookOperation::Apply,
        }
    }

    pub(crate) fn planned(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.planned_api_versions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

/// Refuses a platform whose Kubernetes version is outside the bundle's
/// `kubernetes` range. A version the facts spell in a way that does not
/// parse is refused too: the range cannot be checked.
/// Whether `hook` comes after its operation's work (and is handed the
/// state its pre hook left).
pub(crate) fn is_post(hook: Hook) -> bool {
    matches!(
        hook,
        Hook::PostApply | Hook::PostRemove | Hook::PostUpdate | Hook::PostRecover | Hook::PostAbort
    )
}

/// The pair a pre or post hook belongs to, for the state one hands the
/// other.
pub(crate) fn pair_of(hook: Hook) -> &'static str {
    match hook {
        Hook::PreApply | Hook::PostApply => "apply",
        Hook::PreUpdate | Hook::PostUpdate => "update",
        Hook::PreRemove | Hook::PostRemove => "remove",
        Hook::PreRecover | Hook::PostRecover => "recover",
        other => other.as_str(),
    }
}

/// `plugins/storage.wasm` -> `storage`.
pub(crate) fn plugin_name(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_owned())
}

impl Job<'_> {
    pub(crate) fn store(&self) -> &dyn Store {
        self.inner.services.store.as_ref()
    }

    pub(crate) fn target(&self) -> &dyn ApplyTarget {
        self.inner.services.target.as_ref()
    }

    /// The target's read-only view ([`crate::kube::ClusterView`]).
    pub(crate) fn view(&self) -> &dyn crate::kube::ClusterView {
        self.inner.services.view.as_ref()
    }

    /// Checks for an abort, records `progress` and passes the checkpoint
    /// `phase:point`.
    pub fn step(&self, phase: &str, point: &str, progress: &str) -> Result<(), Error> {
        if self.abort.load(Ordering::SeqCst) {
            return Err(Error::Aborted);
        }
        if self.inner.cluster.handing_over() {
            tracing::info!(target: "capstan::lease", app = %self.app, step = %format!("{phase}:{point}"), "stopping at this checkpoint: the next leader resumes the operation");
            return Err(Error::HandedOver);
        }
        self.store().set_progress(self.op, Some(progress))?;
        self.inner
            .work
            .checkpoints
            .reach(&format!("{phase}:{point}"));
        Ok(())
    }

    pub(crate) fn warn(&self, warning: String) {
        tracing::warn!(app = %self.app, "{warning}");
        if let Ok(mut w) = self.warnings.lock() {
            w.push(warning);
        }
    }

    /// The warnings collected so far, joined for a message.
    pub fn warnings_note(&self) -> Option<String> {
        let w = self.warnings.lock().ok()?;
        (!w.is_empty()).then(|| format!("warnings: {}", w.join("; ")))
    }

    /// Records `text` in the operation's history note (with its warnings)
    /// and the log.
    pub(crate) fn note(&self, text: String) {
        tracing::info!(target: "capstan::audit", app = %self.app, "{text}");
        if let Ok(mut w) = self.warnings.lock() {
            w.push(text);
        }
    }

    /// Shows `text` as the operation's progress line.
    pub(crate) fn progress_note(&self, text: &str) {
        let _ = self.store().set_progress(self.op, Some(text));
    }

    /// The reason a hook asked for another apply, if one did.
    pub(crate) fn requested_reapply(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.requested_reapply
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a call's duration and fault, and names the plugin in errors.
    pub(crate) fn observe<T>(
        &self,
        plugin: &AppPlugin,
        step: &str,
        started: Instant,
        answer: Result<T, sandbox::Error>,
    ) -> Result<T, Error> {
        self.inner.work.metrics.plugin_call(step, started.elapsed());
        answer.map_err(|source| self.plugin_failed(&plugin.path, step, source))
    }

    /// A plugin call's error as the operation's: an abort that interrupted
    /// the call ends the operation as aborted, any other fault names the
    /// plugin and the step.
    pub(crate) fn plugin_failed(&self, path: &str, step: &str, source: sandbox::Error) -> Error {
        self.inner.work.metrics.plugin_fault(source.kind());
        if matches!(source.fault(), Some(sandbox::Fault::Aborted)) {
            tracing::info!(app = %self.app, plugin = path, step, "plugin call interrupted by the abort");
            return Error::Aborted;
        }
        Error::Plugin {
            plugin: path.to_owned(),
            step: step.to_owned(),
            source: Box::new(source),
        }
    }

    pub(crate) fn call_context(&self, _function: &str) -> CallContext {
        CallContext::new(self.inner.app_secret(&self.app)).abort_on(Arc::clone(self.abort))
    }

    /// Waits `wait`, ending early with [`Error::Aborted`] when the
    /// operation is aborted.
    pub(crate) fn sleep_abortable(&self, wait: Duration) -> Result<(), Error> {
        let until = Instant::now() + wait;
        while Instant::now() < until {
            if self.abort.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(Error::Aborted);
            }
            std::thread::sleep(Duration::from_millis(50).min(until - Instant::now()));
        }
        Ok(())
    }

    /// The operation's redactor.
    pub(crate) fn redactor(&self) -> std::sync::MutexGuard<'_, Redactor> {
        self.redactor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `text` with every secret value this operation placed replaced.
    pub fn redact(&self, text: &str) -> String {
        self.redactor().redact(text).into_owned()
    }
}

/// The user overrides this apply uses for `chart`, if any.
pub(crate) fn user_overrides(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    chart: &str,
) -> Result<Option<serde_json::Value>, Error> {
    Ok(match prepared.request.user {
        UserLayer::Stored => job
            .store()
            .override_layer(&job.app, chart, &OverrideLayer::User)?
            .map(|record| record.values),
        UserLayer::Given(charts) => charts
            .iter()
            .find(|(name, _)| name == chart)
            .map(|(_, values)| values.clone()),
        UserLayer::Dropped => None,
    })
}
