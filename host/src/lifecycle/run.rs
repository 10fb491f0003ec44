//! The effectful run of an operation: loading plugins and facts, hooks,
//! reading what planning needs, planning each chart ([`super::plan`]),
//! committing decisions and system overrides, and applying through the
//! target, with a progress line and a checkpoint before each step and an
//! abort check between steps (and inside every plugin call, which the
//! abort flag interrupts).
//!
//! Apply is: plan every chart (nothing written), `pre-apply`, commit
//! (decisions and system overrides stored), then the target.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::bundle::{self, GroupMode, Metadata};
use crate::kube::{
    self, ApplyEvent, ApplyOptions, ApplyTarget, HookEvent, LiveChange, LiveDiff, ProgressSink,
    Release, RemoveOptions, Resource,
};
use crate::model::{
    AppName, ChartCall, ComponentSpec, Hook, HookAnswer, HookCall, HookOperation, HookOutcome,
    Layer, Mode, Served,
};
use crate::render::{self, ReleaseInfo};
use crate::sandbox::{self, App, CallContext, ComponentFacts, Facts, Plugin};
use crate::store::{DecisionRecord, OperationId, OverrideLayer, ReleaseRecord, Store};
use crate::values::{self, Map};
use crate::volumes::LocalVolume;
use crate::workload::{DecidedBy, Decision};

use super::Error;
use super::context::Inner;
use super::facts::current_facts;
use super::plan::{self, ChartInput, NewDecision, PluginChoice};
use super::secret_values::ChartSecrets;
use super::stored::{StoredVersion, from_json, from_json_text, to_json};

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
pub(crate) struct ApplyRequest<'a> {
    /// The version to apply.
    pub version: &'a StoredVersion,
    /// Another version whose charts should go if this one lacks them (the
    /// old version of an update, the failed new one of a rollback).
    pub replacing: Option<&'a StoredVersion>,
    /// Which user overrides to use.
    pub user: UserLayer<'a>,
    /// Components whose workload kind is decided again.
    pub rekind: &'a [String],
    /// Take over live objects no release of this app owns yet (`--adopt`).
    pub adopt: bool,
    /// Objects (`Kind/name`) that may be deleted and created again when the
    /// server refuses a change as immutable (`--recreate`).
    pub recreate: &'a [String],
    /// Hooks run before `pre-apply` and after `post-apply` (an update's
    /// `pre-update` and `post-update`).
    pub around: Option<(Hook, Hook)>,
    /// Prefix of checkpoint names (`apply`, `update`, `rollback`, ...).
    pub phase: &'static str,
}

impl<'a> ApplyRequest<'a> {
    /// A request of `version` with the stored user overrides and no
    /// flags, for work that loads the plugins without applying (a hook
    /// called on its own: `semantic-check`, `post-abort`,
    /// `evaluate-reapply`), under checkpoint prefix `phase`.
    pub fn plain(version: &'a StoredVersion, phase: &'static str) -> ApplyRequest<'a> {
        ApplyRequest {
            version,
            replacing: None,
            user: UserLayer::Stored,
            rekind: &[],
            adopt: false,
            recreate: &[],
            around: None,
            phase,
        }
    }
}

/// What an apply would change in one chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ChartDiff {
    /// The chart.
    pub chart: String,
    /// Objects that would be created.
    pub added: usize,
    /// Objects that would change.
    pub changed: usize,
    /// Objects that would be deleted.
    pub removed: usize,
    /// The unified diff, as `kube::Diff` prints it.
    pub text: String,
}

/// One chart planned, ready to apply.
struct RenderedChart {
    name: String,
    release: Release,
    live: Vec<Resource>,
    desired: Vec<Resource>,
    hooks: Vec<Resource>,
    new_decisions: Vec<NewDecision>,
    /// `.Release.Revision` it was rendered with.
    revision: u64,
    timeout: Option<std::time::Duration>,
    /// Whether its LoadBalancer Services wait for an address
    /// ([`ApplyOptions::wait_for_load_balancer`]).
    wait_for_load_balancer: bool,
    adopt: bool,
    recreate: Vec<String>,
    /// The releases of charts this operation lets go of, whose objects
    /// the chart may take over ([`ApplyOptions::take_over`]).
    take_over: Vec<String>,
}

/// A chart group's rendered charts, in order.
struct RenderedGroup {
    name: String,
    mode: GroupMode,
    charts: Vec<RenderedChart>,
}

/// What the plugins answered for every chart: the system overrides, the
/// charts they disabled, and the secret values placed at render.
type SystemAnswers = (
    BTreeMap<String, serde_json::Value>,
    BTreeSet<String>,
    BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
);

/// A loaded plugin and what the bundle says it serves.
pub(crate) struct AppPlugin {
    path: String,
    hooks: Vec<Hook>,
    charts: BTreeSet<String>,
    plugin: Plugin,
}

impl AppPlugin {
    /// Its path in the bundle (`plugins/NAME.wasm`).
    pub(super) fn path(&self) -> &str {
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
pub(super) struct Prepared<'a> {
    pub(super) request: &'a ApplyRequest<'a>,
    plugins: Vec<AppPlugin>,
    facts: Facts,
    system: BTreeMap<String, serde_json::Value>,
    /// What the target serves (`None` for a target that is no server),
    /// asked once per operation.
    served: Option<Served>,
    /// The API versions the CRDs of the charts planned so far add, which
    /// the charts of later groups see in `.Capabilities.APIVersions`.
    planned_api_versions: Mutex<BTreeSet<String>>,
    /// Charts a plugin's answer disabled: not rendered, removed if
    /// installed.
    disabled: BTreeSet<String>,
    /// The secret values of each chart, merged above the system overrides
    /// at render and never stored ([`super::secret_values`]).
    secret_layers: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
    /// The state each plugin's pre hook left for its post hook, by plugin
    /// path (contract 0.2), for this operation only.
    hook_state: Mutex<BTreeMap<String, Vec<u8>>>,
    /// The namespaces of the version's charts, in chart order, each once.
    namespaces: Vec<String>,
    /// What this operation's hooks ensured or mirrored, for the owned
    /// release ([`super::actions`]).
    ensured: Mutex<Vec<Resource>>,
    /// What this operation's hooks asked to observe.
    observed: Mutex<Vec<crate::model::ObjectRef>>,
}

impl Prepared<'_> {
    /// The namespaces of the version's charts.
    pub(super) fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    pub(super) fn ensured(&self) -> std::sync::MutexGuard<'_, Vec<Resource>> {
        self.ensured
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn observed(&self) -> std::sync::MutexGuard<'_, Vec<crate::model::ObjectRef>> {
        self.observed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The plugins that implement `hook`, in bundle order.
    pub(super) fn plugins_with(&self, hook: Hook) -> impl Iterator<Item = &AppPlugin> {
        self.plugins.iter().filter(move |p| p.hooks.contains(&hook))
    }

    /// A call of `hook` with what every hook of this operation is told:
    /// the operation, the versions of an update, the charts' user
    /// overrides and namespaces.
    pub(super) fn hook_call(&self, job: &Job<'_>, hook: Hook) -> Result<HookCall, Error> {
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
            if let Some(values) = job.user_overrides(self, name)? {
                call.user_overrides.push((name.to_string(), values));
            }
        }
        call.namespaces = self.namespaces.clone();
        Ok(call)
    }

    /// Calls `plugin`'s hook, recording the call and naming the plugin in
    /// errors.
    pub(super) fn call_hook(
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

    fn states(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Vec<u8>>> {
        self.hook_state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The operation this apply is part of, as hooks are told.
    fn operation(&self) -> HookOperation {
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

    fn planned(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.planned_api_versions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

impl Job<'_> {
    pub(super) fn store(&self) -> &dyn Store {
        self.inner.store.as_ref()
    }

    pub(super) fn target(&self) -> &dyn ApplyTarget {
        self.inner.target.as_ref()
    }

    /// The target's read-only view ([`crate::kube::ClusterView`]).
    pub(super) fn view(&self) -> &dyn crate::kube::ClusterView {
        self.inner.view.as_ref()
    }

    /// Checks for an abort, records `progress` and passes the checkpoint
    /// `phase:point`.
    pub fn step(&self, phase: &str, point: &str, progress: &str) -> Result<(), Error> {
        if self.abort.load(Ordering::SeqCst) {
            return Err(Error::Aborted);
        }
        if self.inner.handing_over() {
            tracing::info!(target: "capstan::lease", app = %self.app, step = %format!("{phase}:{point}"), "stopping at this checkpoint: the next leader resumes the operation");
            return Err(Error::HandedOver);
        }
        self.store().set_progress(self.op, Some(progress))?;
        self.inner.checkpoints.reach(&format!("{phase}:{point}"));
        Ok(())
    }

    fn warn(&self, warning: String) {
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

    /// Applies one version: the whole pipeline.
    pub fn apply_version(&self, request: &ApplyRequest<'_>) -> Result<(), Error> {
        let phase = request.phase;
        self.charts_begin([request.version], false);
        self.step(phase, "load-plugins", "loading plugins")?;
        let prepared = self.prepare(request)?;
        let groups = self.render_all(&prepared)?;
        self.step(phase, "pre-apply", "pre-apply hook")?;
        self.run_hook(&prepared, Hook::PreApply)?;
        self.step(phase, "commit", "storing decisions and system overrides")?;
        self.commit(&prepared, &groups)?;
        let mut applied = BTreeSet::new();
        for group in &groups {
            self.step(
                phase,
                &format!("group:{}", group.name),
                &format!("group {}: {} chart(s)", group.name, group.charts.len()),
            )?;
            match group.mode {
                GroupMode::Sequential => {
                    for chart in &group.charts {
                        self.apply_chart(phase, &group.name, chart)?;
                    }
                }
                GroupMode::Parallel => self.apply_parallel(phase, &group.name, &group.charts)?,
            }
            if prepared.plugins_with(Hook::Status).next().is_some() {
                for chart in &group.charts {
                    self.step(
                        phase,
                        &format!("status:{}", chart.name),
                        &format!("group {}: chart {}: status hook", group.name, chart.name),
                    )?;
                    self.status_until_ready(
                        &prepared,
                        &chart.name,
                        &chart.release.namespace,
                        chart.timeout,
                    )?;
                }
            }
            applied.extend(group.charts.iter().map(|c| c.name.clone()));
        }
        self.prune_charts(request, &applied)?;
        self.step(phase, "post-apply", "post-apply hook")?;
        self.run_hook(&prepared, Hook::PostApply)?;
        if let Some((_, after)) = request.around {
            self.step(phase, after.as_str(), &format!("{after} hook"))?;
            self.run_hook(&prepared, after)?;
        }
        self.settle_owned(&prepared)?;
        Ok(())
    }

    /// Plans every enabled chart before anything is applied or stored, so a
    /// template error, a workload error or a volume conflict in any chart
    /// stops the apply with the store and the target untouched.
    fn render_all(&self, prepared: &Prepared<'_>) -> Result<Vec<RenderedGroup>, Error> {
        let version = prepared.request.version;
        let take_over = self.let_go(prepared.request);
        let mut groups = Vec::new();
        for group in &version.metadata.chart_groups {
            let mut charts = Vec::new();
            for chart in group
                .charts
                .iter()
                .filter_map(|name| version.metadata.chart(name))
                .filter(|chart| chart.enabled && !prepared.disabled.contains(chart.name.as_str()))
            {
                let name = chart.name.to_string();
                self.step(
                    prepared.request.phase,
                    &format!("render:{name}"),
                    &format!("group {}: chart {name}: rendering", group.name),
                )?;
                let release = version.release(&self.app, chart);
                let live = self
                    .target()
                    .applied(&release)
                    .map_err(|source| Error::Kube {
                        chart: name.clone(),
                        source: Box::new(source),
                    })?;
                let revision = self.next_revision(&release, &live)?;
                let planned = self.plan_chart(prepared, chart, !live.is_empty(), revision)?;
                for warning in planned.warnings {
                    self.warn(warning);
                }
                charts.push(RenderedChart {
                    name,
                    release,
                    live,
                    desired: planned.desired,
                    hooks: planned.hooks,
                    new_decisions: planned.new_decisions,
                    revision,
                    timeout: chart.timeout,
                    wait_for_load_balancer: version.metadata.waits_for_load_balancer(chart),
                    adopt: prepared.request.adopt,
                    recreate: prepared.request.recreate.to_vec(),
                    take_over: take_over.clone(),
                });
            }
            let added: BTreeSet<String> = charts
                .iter()
                .flat_map(|c| super::lookup::crd_api_versions(&c.desired))
                .collect();
            prepared.planned().extend(added);
            groups.push(RenderedGroup {
                name: group.name.clone(),
                mode: group.mode,
                charts,
            });
        }
        Ok(groups)
    }

    /// Removes every chart of `version` (and of a failed update's `target`)
    /// from the target, chart groups in reverse order, between the
    /// `pre-remove` and `post-remove` hooks. With `force`, failures are
    /// collected as warnings and the removal goes on; with `keep_secrets`
    /// the generated secrets stay ([`Job::remove_owned`]).
    pub fn remove_version(
        &self,
        version: &StoredVersion,
        target: Option<&StoredVersion>,
        force: bool,
        keep_secrets: bool,
    ) -> Result<(), Error> {
        let request = ApplyRequest {
            version,
            replacing: target,
            user: UserLayer::Stored,
            rekind: &[],
            adopt: false,
            recreate: &[],
            around: None,
            phase: "remove",
        };
        self.charts_begin([Some(version), target].into_iter().flatten(), true);
        self.step("remove", "load-plugins", "loading plugins")?;
        let mut prepared = self.load(&request)?;
        prepared.system = self.stored_system_layer(version)?;
        self.step("remove", "pre-remove", "pre-remove hook")?;
        self.forced(force, self.run_hook(&prepared, Hook::PreRemove))?;
        let mut charts: Vec<(&StoredVersion, &bundle::Chart)> = Vec::new();
        for v in [Some(version), target].into_iter().flatten() {
            for group in v.metadata.chart_groups.iter().rev() {
                for name in group.charts.iter().rev() {
                    if let Some(chart) = v.metadata.chart(name)
                        && !charts.iter().any(|(_, c)| c.name == chart.name)
                    {
                        charts.push((v, chart));
                    }
                }
            }
        }
        for (v, chart) in charts {
            let board = self.chart_run(chart.name.as_str());
            self.step(
                "remove",
                &format!("remove:{}", chart.name),
                &format!("removing chart {}", chart.name),
            )?;
            let progress = StoreProgress {
                job: self,
                prefix: format!("removing chart {}", chart.name),
            };
            let release = v.release(&self.app, chart);
            let hooks = self.delete_hooks(&prepared, v, chart);
            let options = ApplyOptions {
                timeout: chart.timeout,
                ..ApplyOptions::default()
            };
            let kube_err = |source| Error::Kube {
                chart: chart.name.to_string(),
                source: Box::new(source),
            };
            let before = self
                .target()
                .run_hooks(&release, HookEvent::PreDelete, &hooks, &options, &progress)
                .map_err(kube_err);
            self.forced(force, before.map(drop))?;
            let removed = self
                .target()
                .remove_with(
                    &release,
                    &RemoveOptions {
                        timeout: chart.timeout,
                        ..RemoveOptions::default()
                    },
                    &progress,
                )
                .map_err(kube_err);
            self.release_removed(&release, removed.is_ok())?;
            self.forced(force, removed.map(drop))?;
            let after = self
                .target()
                .run_hooks(&release, HookEvent::PostDelete, &hooks, &options, &progress)
                .map_err(kube_err);
            self.forced(force, after.map(drop))?;
            board.done();
        }
        self.forced(force, self.remove_owned(&prepared, keep_secrets))?;
        self.step("remove", "post-remove", "post-remove hook")?;
        self.forced(force, self.run_hook(&prepared, Hook::PostRemove))
    }

    /// The stored system layer of `version`, by chart: what the last apply
    /// computed, so a remove renders the charts as they were applied.
    fn stored_system_layer(
        &self,
        version: &StoredVersion,
    ) -> Result<BTreeMap<String, serde_json::Value>, Error> {
        let layer = OverrideLayer::System {
            version: version.version.clone(),
        };
        let mut out = BTreeMap::new();
        for chart in &version.metadata.charts {
            let name = chart.name.to_string();
            if let Some(record) = self.store().override_layer(&self.app, &name, &layer)? {
                out.insert(name, record.values);
            }
        }
        Ok(out)
    }

    /// The Helm hook objects a remove runs (`pre-delete`, `post-delete`):
    /// the chart rendered as it was applied. A chart of another version (a
    /// failed update's target) or one that no longer renders runs none;
    /// the latter is said as a warning.
    fn delete_hooks(
        &self,
        prepared: &Prepared<'_>,
        version: &StoredVersion,
        chart: &bundle::Chart,
    ) -> Vec<Resource> {
        if !chart.enabled || version.version != prepared.request.version.version {
            return Vec::new();
        }
        let release = version.release(&self.app, chart);
        let applied_revision = match self.next_revision(&release, &[]) {
            Ok(next) => next.saturating_sub(1).max(1),
            Err(_) => 1,
        };
        match self.plan_chart(prepared, chart, true, applied_revision) {
            Ok(plan) => plan.hooks,
            Err(e) => {
                self.warn(format!(
                    "chart {}: delete hooks not run, the chart does not render: {}",
                    chart.name,
                    e.one_line()
                ));
                Vec::new()
            }
        }
    }

    /// With `force`, an error becomes a warning.
    fn forced(&self, force: bool, result: Result<(), Error>) -> Result<(), Error> {
        match result {
            Err(e) if force && !matches!(e, Error::Aborted | Error::HandedOver) => {
                self.warn(format!("ignored with --force: {}", e.one_line()));
                Ok(())
            }
            other => other,
        }
    }

    /// Loads plugins, builds the facts, runs `semantic-check` and computes
    /// the system overrides (stored only by [`Job::commit`]).
    fn prepare<'r>(&self, request: &'r ApplyRequest<'r>) -> Result<Prepared<'r>, Error> {
        let mut prepared = self.load(request)?;
        check_kubernetes(&self.app, &request.version.metadata, &prepared.facts)?;
        self.step(request.phase, "semantic-check", "semantic-check hook")?;
        self.run_hook(&prepared, Hook::SemanticCheck)?;
        // An update's pre hook runs before the overrides are computed: the
        // user overrides it patches are the ones this update renders with.
        if let Some((before, _)) = request.around {
            self.step(request.phase, before.as_str(), &format!("{before} hook"))?;
            self.run_hook(&prepared, before)?;
        }
        self.step(
            request.phase,
            "system-overrides",
            "computing system overrides",
        )?;
        let (system, disabled, secret_layers) = self.system_overrides(&prepared)?;
        prepared.system = system;
        prepared.disabled = disabled;
        prepared.secret_layers = secret_layers;
        Ok(prepared)
    }

    /// Stores what planning decided: the version's system overrides and
    /// the workload decisions made now. Runs only after `pre-apply` has
    /// not vetoed.
    fn commit(&self, prepared: &Prepared<'_>, groups: &[RenderedGroup]) -> Result<(), Error> {
        let layer = OverrideLayer::System {
            version: prepared.request.version.version.clone(),
        };
        let charts: Vec<(String, serde_json::Value)> = prepared
            .system
            .iter()
            .map(|(c, v)| (c.clone(), v.clone()))
            .collect();
        self.store().replace_layer(&self.app, &layer, &charts)?;
        for made in groups
            .iter()
            .flat_map(|g| &g.charts)
            .flat_map(|c| &c.new_decisions)
        {
            self.store().record_decision(&DecisionRecord {
                app: self.app.clone(),
                component: made.component.to_string(),
                kind: made.decision.kind,
                decided_by: made.decided_by.clone(),
                traits_digest: made.decision.traits_digest.clone(),
                decided_at: 0,
            })?;
        }
        Ok(())
    }

    /// The version's plugins and the current facts; no system overrides yet.
    pub(super) fn load<'r>(&self, request: &'r ApplyRequest<'r>) -> Result<Prepared<'r>, Error> {
        Ok(Prepared {
            request,
            plugins: self.load_plugins(request.version)?,
            facts: current_facts(
                &self.inner.facts.current().facts,
                self.store(),
                &request.version.metadata,
            )?,
            system: BTreeMap::new(),
            served: self.view().served().map_err(|source| Error::Kube {
                chart: "(discovery)".into(),
                source: Box::new(source),
            })?,
            planned_api_versions: Mutex::new(BTreeSet::new()),
            disabled: BTreeSet::new(),
            secret_layers: BTreeMap::new(),
            hook_state: Mutex::new(BTreeMap::new()),
            namespaces: {
                let mut namespaces: Vec<String> = Vec::new();
                for chart in &request.version.metadata.charts {
                    let namespace = chart.namespace.to_string();
                    if !namespaces.contains(&namespace) {
                        namespaces.push(namespace);
                    }
                }
                namespaces
            },
            ensured: Mutex::new(Vec::new()),
            observed: Mutex::new(Vec::new()),
        })
    }

    fn apply_parallel(
        &self,
        phase: &str,
        group: &str,
        charts: &[RenderedChart],
    ) -> Result<(), Error> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = charts
                .iter()
                .map(|chart| scope.spawn(move || self.apply_chart(phase, group, chart)))
                .collect();
            let mut first_error = None;
            for handle in handles {
                let result = handle.join().unwrap_or_else(|_| {
                    Err(Error::WorkerPanicked {
                        what: format!("applying a chart of group {group}"),
                    })
                });
                if let Err(e) = result {
                    first_error.get_or_insert(e);
                }
            }
            first_error.map_or(Ok(()), Err)
        })
    }

    fn apply_chart(&self, phase: &str, group: &str, chart: &RenderedChart) -> Result<(), Error> {
        let name = &chart.name;
        let board = self.chart_run(name);
        let kube_err = |source| Error::Kube {
            chart: name.clone(),
            source: Box::new(source),
        };
        let plan = kube::plan_apply(&chart.live, &chart.desired).map_err(kube_err)?;
        self.step(
            phase,
            &format!("apply:{name}"),
            &format!(
                "group {group}: chart {name}: applying {} object(s), pruning {}",
                plan.to_apply().len(),
                plan.to_prune().len()
            ),
        )?;
        let options = ApplyOptions {
            adopt: chart.adopt,
            timeout: chart.timeout,
            wait_for_load_balancer: chart.wait_for_load_balancer,
            recreate: chart.recreate.clone(),
            take_over: chart.take_over.clone(),
            revision: Some(chart.revision),
            ..ApplyOptions::default()
        };
        let progress = StoreProgress {
            job: self,
            prefix: format!("group {group}: chart {name}"),
        };
        let (before, after) = if chart.live.is_empty() {
            (HookEvent::PreInstall, HookEvent::PostInstall)
        } else {
            (HookEvent::PreUpgrade, HookEvent::PostUpgrade)
        };
        self.target()
            .run_hooks(&chart.release, before, &chart.hooks, &options, &progress)
            .map_err(kube_err)?;
        let outcome = self
            .target()
            .apply_with(&chart.release, &plan, &options, &progress);
        match outcome {
            Ok(applied) => {
                let changed =
                    applied.applied.len() > applied.unchanged || !applied.pruned.is_empty();
                self.record_release(&chart.release, changed.then_some(chart.revision))?;
            }
            Err(source) => {
                self.record_release_after_failure(&chart.release, Some(chart.revision));
                return Err(kube_err(source));
            }
        }
        self.target()
            .run_hooks(&chart.release, after, &chart.hooks, &options, &progress)
            .map_err(kube_err)?;
        self.inner
            .checkpoints
            .reach(&format!("{phase}:applied:{name}"));
        board.done();
        Ok(())
    }

    /// Lists the charts of `versions` on the board, all pending, each
    /// once: the enabled ones in apply order, or for a remove (`reverse`)
    /// every one, chart groups in reverse order, as the remove runs them.
    fn charts_begin<'v>(
        &self,
        versions: impl IntoIterator<Item = &'v StoredVersion>,
        reverse: bool,
    ) {
        let mut listed: Vec<(String, String)> = Vec::new();
        for version in versions {
            let groups: Vec<_> = if reverse {
                version.metadata.chart_groups.iter().rev().collect()
            } else {
                version.metadata.chart_groups.iter().collect()
            };
            for group in groups {
                let names: Vec<_> = if reverse {
                    group.charts.iter().rev().collect()
                } else {
                    group.charts.iter().collect()
                };
                for chart in names.into_iter().filter_map(|n| version.metadata.chart(n)) {
                    let name = chart.name.to_string();
                    if (reverse || chart.enabled) && !listed.iter().any(|(_, c)| *c == name) {
                        listed.push((group.name.clone(), name));
                    }
                }
            }
        }
        self.inner.charts.begin(self.app.as_str(), self.op, listed);
    }

    /// Marks `chart` running on the board until the returned guard is
    /// done (done) or dropped (failed).
    fn chart_run<'c>(&'c self, chart: &'c str) -> super::progress::ChartRun<'c> {
        super::progress::ChartRun::start(&self.inner.charts, self.app.as_str(), self.op, chart)
    }

    /// The releases (`APP/CHART`) of the charts the version `request`
    /// replaces and does not have itself: [`Job::prune_charts`] removes
    /// them after the apply, so the charts of this version may take
    /// their objects over (a renamed chart's).
    fn let_go(&self, request: &ApplyRequest<'_>) -> Vec<String> {
        let Some(replacing) = request.replacing else {
            return Vec::new();
        };
        replacing
            .metadata
            .charts
            .iter()
            .filter(|old| request.version.metadata.chart(&old.name).is_none())
            .map(|old| replacing.release(&self.app, old).to_string())
            .collect()
    }

    /// Removes the releases of charts that were (or may have been) applied
    /// but are not part of this apply: charts of the replaced version this
    /// one lacks, and this version's disabled charts.
    fn prune_charts(
        &self,
        request: &ApplyRequest<'_>,
        applied: &BTreeSet<String>,
    ) -> Result<(), Error> {
        let mut candidates: Vec<(&StoredVersion, &bundle::Chart)> = Vec::new();
        for version in [Some(request.version), request.replacing]
            .into_iter()
            .flatten()
        {
            for chart in &version.metadata.charts {
                if !applied.contains(chart.name.as_str())
                    && !candidates.iter().any(|(_, c)| c.name == chart.name)
                {
                    candidates.push((version, chart));
                }
            }
        }
        for (version, chart) in candidates {
            let release = version.release(&self.app, chart);
            self.step(
                request.phase,
                &format!("prune:{}", chart.name),
                &format!("removing chart {} (not in this version)", chart.name),
            )?;
            let removed = self.target().remove(&release);
            self.release_removed(&release, removed.is_ok())?;
            removed.map_err(|source| Error::Kube {
                chart: chart.name.to_string(),
                source: Box::new(source),
            })?;
        }
        Ok(())
    }

    /// Whether the `semantic-check` hook would veto applying `version`
    /// now: each plugin's hook is called as an apply calls it, but its
    /// actions are not taken (the apply that follows calls it again).
    /// The veto's reason, naming the plugin, when one vetoes.
    pub fn semantic_veto(&self, version: &StoredVersion) -> Result<Option<String>, Error> {
        let request = ApplyRequest::plain(version, "apply");
        let prepared = self.load(&request)?;
        let call = prepared.hook_call(self, Hook::SemanticCheck)?;
        for p in prepared.plugins_with(Hook::SemanticCheck) {
            let answer = prepared.call_hook(self, p, &call)?;
            if let HookOutcome::Veto(reason) = answer.verdict {
                return Ok(Some(format!(
                    "plugin {} vetoed the semantic-check hook: {reason}",
                    p.plugin.name()
                )));
            }
        }
        Ok(None)
    }

    /// Every chart's desired objects and what they change against the
    /// target, without applying or storing anything; the charts of
    /// `replacing` that `version` lacks show as removed.
    pub fn diff(
        &self,
        version: &StoredVersion,
        replacing: Option<&StoredVersion>,
    ) -> Result<Vec<ChartDiff>, Error> {
        let request = ApplyRequest {
            version,
            replacing,
            user: UserLayer::Stored,
            rekind: &[],
            adopt: false,
            recreate: &[],
            around: None,
            phase: "diff",
        };
        let mut prepared = self.load(&request)?;
        let (system, disabled, secret_layers) = self.system_overrides(&prepared)?;
        prepared.system = system;
        prepared.disabled = disabled;
        prepared.secret_layers = secret_layers;
        let mut diffs = Vec::new();
        for chart in &version.metadata.charts {
            let name = chart.name.to_string();
            let release = version.release(&self.app, chart);
            let kube_err = |source| Error::Kube {
                chart: name.clone(),
                source: Box::new(source),
            };
            let live = self.target().applied(&release).map_err(kube_err)?;
            let desired = if chart.enabled {
                let revision = self.next_revision(&release, &live)?;
                let desired = self
                    .plan_chart(&prepared, chart, !live.is_empty(), revision)?
                    .desired;
                prepared
                    .planned()
                    .extend(super::lookup::crd_api_versions(&desired));
                desired
            } else {
                Vec::new()
            };
            if let Some(live_diffs) = self
                .target()
                .diff_live(&release, &desired)
                .map_err(kube_err)?
            {
                let mut chart_diff = chart_diff_of(name, &live_diffs);
                chart_diff.text = self.redact(&chart_diff.text);
                diffs.push(chart_diff);
                continue;
            }
            let diff = kube::diff(&live, &desired).map_err(kube_err)?;
            diffs.push(ChartDiff {
                chart: name,
                added: diff.added.len(),
                changed: diff.changed.len(),
                removed: diff.removed.len(),
                text: self.redact(&diff.to_string()),
            });
        }
        for old in replacing.into_iter() {
            for chart in &old.metadata.charts {
                if version.metadata.chart(&chart.name).is_some() {
                    continue;
                }
                let name = chart.name.to_string();
                let release = old.release(&self.app, chart);
                let kube_err = |source| Error::Kube {
                    chart: name.clone(),
                    source: Box::new(source),
                };
                let live = self.target().applied(&release).map_err(kube_err)?;
                let diff = kube::diff(&live, &[]).map_err(kube_err)?;
                diffs.push(ChartDiff {
                    chart: name,
                    added: diff.added.len(),
                    changed: diff.changed.len(),
                    removed: diff.removed.len(),
                    text: self.redact(&diff.to_string()),
                });
            }
        }
        Ok(diffs)
    }

    /// Reads what planning a chart needs (its files, its layers, the
    /// stored decisions, the plugins' answers for components decided now,
    /// the local volumes) and plans it. Writes nothing.
    fn plan_chart(
        &self,
        prepared: &Prepared<'_>,
        chart: &bundle::Chart,
        is_upgrade: bool,
        revision: u64,
    ) -> Result<plan::ChartPlan, Error> {
        let name = chart.name.to_string();
        let version = prepared.request.version;
        let overrides = self.merged_overrides(prepared, &name)?;
        let render_err = |source| Error::Render {
            chart: name.clone(),
            source: Box::new(source),
        };
        let loaded = render::chart::load(&version.dir.join(&chart.path)).map_err(render_err)?;
        let release = ReleaseInfo {
            name: chart.release.to_string(),
            namespace: chart.namespace.to_string(),
            revision: i64::try_from(revision).unwrap_or(i64::MAX),
            is_upgrade,
        };
        let kube_version = format!("v{}", prepared.facts.kubernetes_version);
        let capabilities = super::lookup::capabilities(
            prepared.served.as_ref(),
            &prepared.planned(),
            &kube_version,
        )
        .map_err(render_err)?;
        let own_namespaces = version
            .metadata
            .charts
            .iter()
            .map(|c| c.namespace.to_string())
            .collect();
        let lookup = Arc::new(super::lookup::TargetLookup::new(
            self.inner.view.clone(),
            self.inner.lookup_policy.clone(),
            own_namespaces,
        ));
        let components: Vec<ComponentSpec> = version
            .metadata
            .components
            .iter()
            .filter(|c| c.chart == chart.name)
            .cloned()
            .collect();
        let stored = self.stored_decisions(&components)?;
        let rekind: BTreeSet<String> = prepared.request.rekind.iter().cloned().collect();
        let mut plugin_choices = BTreeMap::new();
        for component in &components {
            if plan::needs_decision(component, &stored, &rekind)
                && let Some(choice) = self.ask_workload_kind(prepared, component)?
            {
                plugin_choices.insert(component.name.to_string(), choice);
            }
        }
        let local_volumes = self.local_volumes(&components, &release.namespace)?;
        plan::plan_chart(&ChartInput {
            name: &name,
            chart: &loaded,
            overrides: &overrides,
            release: &release,
            capabilities: &capabilities,
            components: &components,
            stored: &stored,
            plugin_choices: &plugin_choices,
            rekind: &rekind,
            local_volumes: &local_volumes,
            lookup,
        })
    }

    /// The revision the next apply of `release` renders as
    /// (`.Release.Revision`): one more than the target's record says (the
    /// release Secret on a cluster), or than the store's copy where the
    /// target keeps none; 1 for an install. A release with objects but no
    /// revision anywhere (applied before revisions were recorded) has had
    /// one.
    fn next_revision(&self, release: &Release, live: &[Resource]) -> Result<u64, Error> {
        let recorded = match self
            .target()
            .revision(release)
            .map_err(|source| Error::Kube {
                chart: release.chart.clone(),
                source: Box::new(source),
            })? {
            Some(revision) => revision,
            None => self
                .store()
                .release(&self.app, &release.chart)?
                .map_or(0, |r| r.revision),
        };
        let recorded = if recorded == 0 && !live.is_empty() {
            1
        } else {
            recorded
        };
        Ok(recorded.saturating_add(1))
    }

    /// Writes the store's copy of `release`'s inventory from what the
    /// target recorded after an apply: its objects, and the revision the
    /// target keeps, else `changed_revision` when the apply changed
    /// something, else the stored one. So the store and the release Secret
    /// agree after every attempt.
    fn record_release(
        &self,
        release: &Release,
        changed_revision: Option<u64>,
    ) -> Result<(), Error> {
        let kube_err = |source| Error::Kube {
            chart: release.chart.clone(),
            source: Box::new(source),
        };
        let objects = self
            .target()
            .applied(release)
            .map_err(kube_err)?
            .iter()
            .map(|resource| resource.id().clone())
            .collect();
        let stored = self.store().release(&self.app, &release.chart)?;
        let revision = match self.target().revision(release).map_err(kube_err)? {
            Some(revision) => revision,
            None => changed_revision
                .or(stored.as_ref().map(|r| r.revision))
                .unwrap_or(0),
        };
        self.store().record_release(&ReleaseRecord {
            app: self.app.clone(),
            chart: release.chart.clone(),
            namespace: release.namespace.clone(),
            release_name: release.release_name.clone(),
            method: self.target().apply_method().to_owned(),
            revision,
            objects,
            updated_at: 0,
        })?;
        Ok(())
    }

    /// [`Job::record_release`] after a failed step: the failure is what
    /// the operation reports, so a failure to record is a warning (the
    /// next operation records again from the target).
    fn record_release_after_failure(&self, release: &Release, revision: Option<u64>) {
        if let Err(e) = self.record_release(release, revision) {
            self.warn(format!(
                "release {release}: could not record its inventory: {}",
                e.one_line()
            ));
        }
    }

    /// After a remove of `release`: forgets the store's copy when the
    /// remove succeeded, else records what the target still holds.
    fn release_removed(&self, release: &Release, succeeded: bool) -> Result<(), Error> {
        if succeeded {
            self.store().delete_release(&self.app, &release.chart)?;
        } else {
            self.record_release_after_failure(release, None);
        }
        Ok(())
    }

    /// The stored decisions of `components`, by component name.
    fn stored_decisions(
        &self,
        components: &[ComponentSpec],
    ) -> Result<BTreeMap<String, Decision>, Error> {
        let mut out = BTreeMap::new();
        for component in components {
            if let Some(record) = self.store().decision(&self.app, component.name.as_str())? {
                out.insert(component.name.to_string(), decision_of(&record));
            }
        }
        Ok(out)
    }

    /// static < system < user for one chart, merged as Helm merges `-f`
    /// files (the chart's defaults are coalesced under them by the renderer).
    fn merged_overrides(&self, prepared: &Prepared<'_>, chart: &str) -> Result<Map, Error> {
        let version = &prepared.request.version.version;
        let mut layers = Vec::new();
        let stat = OverrideLayer::Static {
            version: version.clone(),
        };
        if let Some(unstored) = &prepared.request.version.unstored_static {
            if let Some(values) = unstored.get(chart) {
                layers.push((Layer::Static, from_json(values)?));
            }
        } else if let Some(record) = self.store().override_layer(&self.app, chart, &stat)? {
            layers.push((Layer::Static, from_json(&record.values)?));
        }
        if let Some(system) = prepared.system.get(chart) {
            layers.push((Layer::System, from_json(system)?));
        }
        if let Some(secrets) = prepared.secret_layers.get(chart) {
            layers.push((
                Layer::System,
                from_json(&serde_json::Value::Object(secrets.clone()))?,
            ));
        }
        if let Some(user) = self.user_overrides(prepared, chart)? {
            layers.push((Layer::User, from_json(&user)?));
        }
        Ok(values::merge_override_layers(&layers))
    }

    /// The user overrides this apply uses for `chart`, if any.
    pub(super) fn user_overrides(
        &self,
        prepared: &Prepared<'_>,
        chart: &str,
    ) -> Result<Option<serde_json::Value>, Error> {
        Ok(match prepared.request.user {
            UserLayer::Stored => self
                .store()
                .override_layer(&self.app, chart, &OverrideLayer::User)?
                .map(|record| record.values),
            UserLayer::Given(charts) => charts
                .iter()
                .find(|(name, _)| name == chart)
                .map(|(_, values)| values.clone()),
            UserLayer::Dropped => None,
        })
    }

    /// The local volumes the components mount, checked to exist and to
    /// have their claims in the chart's namespace.
    fn local_volumes(
        &self,
        components: &[ComponentSpec],
        namespace: &str,
    ) -> Result<BTreeMap<String, LocalVolume>, Error> {
        let mut out = BTreeMap::new();
        for mount in components.iter().flat_map(|c| &c.traits.local_volumes) {
            let record =
                self.store()
                    .volume(&mount.volume)?
                    .ok_or_else(|| Error::UnknownVolume {
                        name: mount.volume.clone(),
                    })?;
            if record.namespace != namespace {
                return Err(Error::Volume {
                    name: record.name.clone(),
                    reason: format!(
                        "its claim is in namespace {} but the chart runs in {namespace}",
                        record.namespace
                    ),
                });
            }
            out.insert(record.name.clone(), super::volumes::local_volume(&record)?);
        }
        Ok(out)
    }

    /// Asks the plugins serving the component's chart, in bundle order; the
    /// first that decides wins.
    fn ask_workload_kind(
        &self,
        prepared: &Prepared<'_>,
        component: &ComponentSpec,
    ) -> Result<Option<PluginChoice>, Error> {
        let facts = ComponentFacts {
            name: component.name.to_string(),
            chart: component.chart.to_string(),
            workload: format!("{}/{}", component.workload.kind, component.workload.name),
            volumes: component
                .traits
                .volumes
                .iter()
                .map(|v| sandbox::VolumeRequest {
                    container: u32::try_from(v.container).unwrap_or(u32::MAX),
                    storage_class_name: v.storage_class_name.clone(),
                    size: v.size.to_string(),
                    path: v.path.clone(),
                })
                .collect(),
            local_volumes: component
                .traits
                .local_volumes
                .iter()
                .map(|v| v.volume.clone())
                .collect(),
        };
        let app = self.plugin_app(prepared);
        for p in prepared
            .plugins
            .iter()
            .filter(|p| p.charts.contains(component.chart.as_str()))
        {
            let ctx = self.call_context("workload-kind");
            let started = Instant::now();
            let answer = p.plugin.workload_kind(&ctx, &app, &prepared.facts, &facts);
            let answer = self.observe(p, "workload-kind", started, answer)?;
            if let Some(kind) = answer {
                return Ok(Some(PluginChoice {
                    kind,
                    plugin: p.plugin.name().to_owned(),
                }));
            }
        }
        Ok(None)
    }

    /// Each enabled chart served by a plugin: the plugins' overrides merged
    /// in bundle order, and the charts a plugin disabled. A plugin is only
    /// ever asked about the charts its own bundle lists for it, and is
    /// handed the chart's namespace and user overrides (read-only).
    fn system_overrides(&self, prepared: &Prepared<'_>) -> Result<SystemAnswers, Error> {
        let version = prepared.request.version;
        let mut out: BTreeMap<String, Map> = BTreeMap::new();
        let mut disabled = BTreeSet::new();
        let mut asked: BTreeMap<String, BTreeMap<String, ChartSecrets>> = BTreeMap::new();
        for chart in version.enabled_charts() {
            let serving: Vec<&AppPlugin> = prepared
                .plugins
                .iter()
                .filter(|p| p.charts.contains(&chart))
                .collect();
            if serving.is_empty() {
                continue;
            }
            let call = ChartCall {
                app: self.app.to_string(),
                version: version.version.clone(),
                chart: chart.clone(),
                namespace: version
                    .metadata
                    .charts
                    .iter()
                    .find(|c| c.name.as_str() == chart)
                    .map(|c| c.namespace.to_string())
                    .unwrap_or_default(),
                user_overrides: self
                    .user_overrides(prepared, &chart)?
                    .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new())),
            };
            for p in serving {
                let ctx = self.call_context("overrides");
                let started = Instant::now();
                let answer = p.plugin.answer(&ctx, &call, &prepared.facts);
                let answer = self.observe(p, "overrides", started, answer)?;
                if !answer.secret_values.is_empty() || !answer.generate.is_empty() {
                    let wanted = asked
                        .entry(p.path.clone())
                        .or_default()
                        .entry(chart.clone())
                        .or_default();
                    wanted.namespace.clone_from(&call.namespace);
                    wanted.values.extend(answer.secret_values);
                    wanted.generate.extend(answer.generate);
                }
                if answer.disabled {
                    tracing::info!(app = %self.app, plugin = %p.path, chart, "chart disabled by the plugin");
                    disabled.insert(chart.clone());
                }
                let value = from_json_text(answer.values.as_str())?;
                if let values::Value::Map(map) = value {
                    let merged = out.entry(chart.clone()).or_default();
                    *merged = values::merge_maps(merged, &map);
                }
            }
        }
        let system = out
            .into_iter()
            .map(|(chart, map)| Ok((chart, to_json(&values::Value::Map(map))?)))
            .collect::<Result<_, Error>>()?;
        let mut secret_layers: BTreeMap<String, serde_json::Map<String, serde_json::Value>> =
            BTreeMap::new();
        for (plugin, charts) in &asked {
            for (chart, layer) in self.resolve_secrets(prepared, plugin, charts)? {
                let merged = secret_layers.entry(chart).or_default();
                for (key, value) in layer {
                    merged.insert(key, value);
                }
            }
        }
        Ok((system, disabled, secret_layers))
    }

    fn run_hook(&self, prepared: &Prepared<'_>, hook: Hook) -> Result<(), Error> {
        let mut call = prepared.hook_call(self, hook)?;
        for p in prepared.plugins_with(hook) {
            // Keyed by the plugin and the pair (pre-apply and post-apply,
            // pre-update and post-update, ...): an update's pre-update,
            // pre-apply, post-apply and post-update each hand on their own.
            let key = format!("{}#{}", p.path, pair_of(hook));
            call.state = if is_post(hook) {
                prepared.states().remove(&key)
            } else {
                None
            };
            let answer = prepared.call_hook(self, p, &call)?;
            if let HookOutcome::Veto(reason) = &answer.verdict {
                return Err(Error::Vetoed {
                    plugin: p.plugin.name().to_owned(),
                    hook,
                    reason: reason.clone(),
                });
            }
            self.take_actions(prepared, &p.path, hook, &answer)?;
            if let Some(state) = answer.state
                && !is_post(hook)
            {
                prepared.states().insert(key, state);
            }
        }
        Ok(())
    }

    /// The `post-abort` hook of `version`'s plugins, after the operation
    /// was aborted: each is called (told `operation: abort`) and its
    /// actions are taken under the policy, as any hook's are. The abort
    /// flag must be lowered first, or the calls would be interrupted.
    ///
    /// # Errors
    /// A plugin's failure or a denied action; a veto (there is nothing
    /// left to veto) is an error too, naming the plugin.
    pub fn post_abort(&self, version: &StoredVersion) -> Result<(), Error> {
        let request = ApplyRequest::plain(version, "abort");
        let prepared = self.load(&request)?;
        self.run_hook(&prepared, Hook::PostAbort)
    }

    /// Records `text` in the operation's history note (with its warnings)
    /// and the log.
    pub(super) fn note(&self, text: String) {
        tracing::info!(target: "capstan::audit", app = %self.app, "{text}");
        if let Ok(mut w) = self.warnings.lock() {
            w.push(text);
        }
    }

    /// Shows `text` as the operation's progress line.
    pub(super) fn progress_note(&self, text: &str) {
        let _ = self.store().set_progress(self.op, Some(text));
    }

    /// The reason a hook asked for another apply, if one did.
    pub(super) fn requested_reapply(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.requested_reapply
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a call's duration and fault, and names the plugin in errors.
    pub(super) fn observe<T>(
        &self,
        plugin: &AppPlugin,
        step: &str,
        started: Instant,
        answer: Result<T, sandbox::Error>,
    ) -> Result<T, Error> {
        self.inner.metrics.plugin_call(step, started.elapsed());
        answer.map_err(|source| self.plugin_failed(&plugin.path, step, source))
    }

    /// A plugin call's error as the operation's: an abort that interrupted
    /// the call ends the operation as aborted, any other fault names the
    /// plugin and the step.
    fn plugin_failed(&self, path: &str, step: &str, source: sandbox::Error) -> Error {
        self.inner.metrics.plugin_fault(source.kind());
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

    fn plugin_app(&self, prepared: &Prepared<'_>) -> App {
        App {
            name: self.app.to_string(),
            version: prepared.request.version.version.clone(),
        }
    }

    pub(super) fn call_context(&self, _function: &str) -> CallContext {
        CallContext::new(self.inner.app_secret(&self.app)).abort_on(Arc::clone(self.abort))
    }

    /// Loads this version's plugins from its own bundle folder: plugins are
    /// keyed by app and version, so an update never runs stale code and one
    /// app's plugins never serve another's charts.
    fn load_plugins(&self, version: &StoredVersion) -> Result<Vec<AppPlugin>, Error> {
        version
            .metadata
            .plugins
            .iter()
            .map(|p| {
                let path = version.dir.join(&p.path);
                let wasm = std::fs::read(&path).map_err(|e| Error::StoredBundle {
                    app: self.app.to_string(),
                    version: version.version.clone(),
                    source: Box::new(e),
                })?;
                let plugin = self
                    .inner
                    .sandbox
                    .load_for(
                        &self.call_context("info"),
                        self.app.as_str(),
                        &plugin_name(&p.path),
                        &wasm,
                    )
                    .map_err(|source| self.plugin_failed(&p.path, "load", source))?;
                Ok(AppPlugin {
                    path: p.path.clone(),
                    hooks: p.hooks.clone(),
                    charts: p.charts.iter().map(ToString::to_string).collect(),
                    plugin,
                })
            })
            .collect()
    }
}

/// Refuses a platform whose Kubernetes version is outside the bundle's
/// `kubernetes` range. A version the facts spell in a way that does not
/// parse is refused too: the range cannot be checked.
/// Whether `hook` comes after its operation's work (and is handed the
/// state its pre hook left).
fn is_post(hook: Hook) -> bool {
    matches!(
        hook,
        Hook::PostApply | Hook::PostRemove | Hook::PostUpdate | Hook::PostRecover | Hook::PostAbort
    )
}

/// The pair a pre or post hook belongs to, for the state one hands the
/// other.
fn pair_of(hook: Hook) -> &'static str {
    match hook {
        Hook::PreApply | Hook::PostApply => "apply",
        Hook::PreUpdate | Hook::PostUpdate => "update",
        Hook::PreRemove | Hook::PostRemove => "remove",
        Hook::PreRecover | Hook::PostRecover => "recover",
        other => other.as_str(),
    }
}

fn check_kubernetes(app: &AppName, metadata: &Metadata, facts: &Facts) -> Result<(), Error> {
    let Some(range) = &metadata.kubernetes else {
        return Ok(());
    };
    let shown = |v: &Option<bundle::KubeVersion>| v.map_or("any".to_owned(), |v| v.to_string());
    let unsupported = || Error::KubernetesUnsupported {
        app: app.to_string(),
        range: format!("{} to {}", shown(&range.min), shown(&range.max)),
        version: facts.kubernetes_version.clone(),
    };
    let version = bundle::KubeVersion::parse(facts.kubernetes_version.trim_start_matches('v'))
        .map_err(|_| unsupported())?;
    if range.contains(version) {
        Ok(())
    } else {
        Err(unsupported())
    }
}

/// `plugins/storage.wasm` -> `storage`.
fn plugin_name(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_owned())
}

/// Writes what a target reports while it applies or removes into the
/// operation's progress line, so `app show` and the CLI's wait say which
/// object is still pending and why.
struct StoreProgress<'j, 'a> {
    job: &'j Job<'a>,
    prefix: String,
}

impl ProgressSink for StoreProgress<'_, '_> {
    fn event(&self, event: &ApplyEvent<'_>) {
        let line = match event {
            ApplyEvent::Stage { stage, objects } => {
                format!("{}: stage {stage}: {objects} object(s)", self.prefix)
            }
            ApplyEvent::Waiting { pending } => match pending.first() {
                Some((object, why)) if pending.len() == 1 => {
                    format!("{}: waiting for {object}: {why}", self.prefix)
                }
                Some((object, why)) => format!(
                    "{}: waiting for {} object(s), {object}: {why}",
                    self.prefix,
                    pending.len()
                ),
                None => return,
            },
            _ => return,
        };
        if let Err(e) = self.job.inner.store.set_progress(self.job.op, Some(&line)) {
            tracing::warn!(error = %e, "could not record progress");
        }
    }
}

/// A chart's diff from a target's live (dry-run) comparison.
fn chart_diff_of(chart: String, live: &[LiveDiff]) -> ChartDiff {
    let count = |change: LiveChange| live.iter().filter(|d| d.change == change).count();
    let text = live
        .iter()
        .map(|d| format!("--- {}\n{}", d.object, d.text))
        .collect();
    ChartDiff {
        chart,
        added: count(LiveChange::Create),
        changed: count(LiveChange::Update),
        removed: count(LiveChange::Prune),
        text,
    }
}

fn decision_of(record: &DecisionRecord) -> Decision {
    let kind = record.kind;
    let decided_by = match record.decided_by.as_str() {
        "default-rule" => DecidedBy::DefaultRule,
        "rekind" | "operator" => DecidedBy::Rekind,
        _ => DecidedBy::Plugin,
    };
    Decision {
        kind,
        decided_by,
        traits_digest: record.traits_digest.clone(),
    }
}
