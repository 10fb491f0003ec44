//! The engine, the loaded plugins and their typed calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use wasmtime::component::{Component, Linker};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolConcurrencyLimitError,
    PoolingAllocationConfig, Store, UpdateDeadline,
};

use super::cache::ComponentCache;
use super::call::{CallContext, HostState};
use super::contract::{
    self, Contract, PreparedFacts, RawAction, RawAnswer, RawHookAnswer, json_bytes,
};
use super::facts::{AppRef, LastFacts};
use super::policy::{EPOCH_TICK, Policy};
use super::slots::{Refused, Slots};
use super::{Error, Fault, PluginError, Stream, wasi};
use crate::model::{App, ComponentFacts, Facts};

/// The pooling allocator's per-memory ceiling, above any sane policy cap.
const POOL_MEMORY_CEILING: usize = 1 << 30;

/// How much of a slot's linear memory a call may leave resident for the
/// next call in that slot: the pages it wrote are put back to the
/// component's image in place (found with Linux's `PAGEMAP_SCAN`) instead
/// of handed back to the kernel and faulted in again. A Rust plugin's whole
/// working set fits; a Python plugin's first pages do.
const KEEP_RESIDENT_MEMORY: usize = 1 << 20;

/// The same for a slot's tables (their function references).
const KEEP_RESIDENT_TABLES: usize = 64 << 10;

/// Wasm frames kept in a trap's backtrace.
const BACKTRACE_FRAMES: usize = 32;

/// Compiled components kept in memory, by the sha256 of their bytes. Apps
/// that ship the same plugin share its compiled code (each call still gets
/// a fresh instance), and concurrent loads of one component compile it
/// once.
const MAX_LOADED_COMPONENTS: usize = 64;

/// Most charts one plugin may declare it serves.
const MAX_DECLARED_CHARTS: usize = 256;

/// Longest plugin name or version string accepted from `info`.
const MAX_NAME_BYTES: usize = 128;

/// Most bytes of hook state a pre hook may leave for its post hook.
pub const MAX_HOOK_STATE_BYTES: usize = 64 * 1024;

/// Longest `retry-after` a `status` answer may ask for, in seconds.
pub const MAX_RETRY_AFTER_SECONDS: u32 = 300;

use crate::model::{
    Action, ChartAnswer, ChartCall, ContractVersion, FactsSection, Hook, HookAnswer, HookCall,
    HookOperation, HookOutcome, Overrides, ReleaseStatus, SecretShape, WorkloadKind,
};
use crate::policy::bounds;

/// What a plugin declares about itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginInfo {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Charts it computes overrides for.
    pub charts: Vec<String>,
    /// Hooks it implements.
    pub hooks: Vec<Hook>,
    /// Whether it decides workload kinds.
    pub decides_workloads: bool,
    /// The fact sections it reads (contract 0.2; none for 0.1.0).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<FactsSection>,
    /// The contract version its component was built against (serialized
    /// as its text, `0.1.0` or `0.2.0`).
    pub contract: ContractVersion,
}

/// The wasmtime engine every plugin runs on, with its epoch ticker.
///
/// One per process. Cheap to clone; the ticker thread stops when the last
/// clone is dropped.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    linker: Linker<HostState>,
    policy: Policy,
    cache: Option<ComponentCache>,
    loaded: Mutex<HashMap<[u8; 32], Component>>,
    slots: Slots,
    _ticker: Ticker,
}

impl Sandbox {
    /// A sandbox enforcing `policy`, compiling components on every load.
    ///
    /// # Errors
    ///
    /// [`Error::Engine`] when wasmtime cannot be configured, for example when
    /// the OS refuses the pooling allocator's address-space reservation.
    pub fn new(policy: Policy) -> Result<Sandbox, Error> {
        Sandbox::build(policy, None)
    }

    /// A sandbox that keeps compiled components in `cache`.
    ///
    /// # Errors
    ///
    /// As [`Sandbox::new`].
    pub fn with_cache(policy: Policy, cache: ComponentCache) -> Result<Sandbox, Error> {
        Sandbox::build(policy, Some(cache))
    }

    fn build(policy: Policy, cache: Option<ComponentCache>) -> Result<Sandbox, Error> {
        let engine = Engine::new(&engine_config(&policy)).map_err(Error::Engine)?;
        let mut linker = Linker::new(&engine);
        wasi::add_to_linker(&mut linker).map_err(Error::Engine)?;
        contract::add_to_linker(&mut linker).map_err(Error::Engine)?;
        let ticker = Ticker::start(engine.clone()).map_err(Error::Ticker)?;
        let slots = Slots::new(policy.get_pool_size(), policy.get_app_slots());
        Ok(Sandbox {
            inner: Arc::new(Inner {
                engine,
                linker,
                policy,
                cache,
                loaded: Mutex::new(HashMap::new()),
                slots,
                _ticker: ticker,
            }),
        })
    }

    /// The policy every call runs under.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// The engine, for benchmarks and cache tooling.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// How many calls hold a slot of the instance pool now.
    pub fn slots_in_use(&self) -> usize {
        self.inner.slots.in_use()
    }

    /// Compiles (or loads from the cache) and links a plugin, then asks it
    /// for its [`PluginInfo`]. `name` is how errors name the plugin until it
    /// has told its own name.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidComponent`] when the bytes are not a component,
    /// [`Error::Link`] when it imports what the sandbox does not provide or
    /// does not export the capstan world, [`Error::Fault`] when `info`
    /// misbehaves, [`Error::Cache`] when the cache cannot be written.
    pub fn load(&self, name: &str, wasm: &[u8]) -> Result<Plugin, Error> {
        self.load_for(&CallContext::new([0; 32]), "", name, wasm)
    }

    /// [`Sandbox::load`] for `app`: its `info` call is charged to the app's
    /// share of the instance pool, and ends early when `ctx`'s abort flag is
    /// raised (only the flag and the deadline of `ctx` are used).
    ///
    /// # Errors
    ///
    /// As [`Sandbox::load`].
    pub fn load_for(
        &self,
        ctx: &CallContext,
        app: &str,
        name: &str,
        wasm: &[u8],
    ) -> Result<Plugin, Error> {
        let component = self.component(name, wasm)?;
        let pre = self
            .inner
            .linker
            .instantiate_pre(&component)
            .map_err(|e| link_error(name, &e))?;
        let contract = contract::bind(&component, pre).map_err(|e| link_error(name, &e))?;
        let mut plugin = Plugin {
            name: name.into(),
            info: PluginInfo {
                name: name.to_string(),
                version: String::new(),
                charts: Vec::new(),
                hooks: Vec::new(),
                decides_workloads: false,
                facts: Vec::new(),
                contract: contract.version(),
            },
            contract,
            sandbox: self.clone(),
            last_facts: Arc::default(),
        };
        plugin.info = plugin.call_info(&ctx.bare(), app)?;
        plugin.name = plugin.info.name.as_str().into();
        Ok(plugin)
    }
}

impl Sandbox {
    /// The compiled component of `wasm`: from memory, else from the disk
    /// cache, else compiled. The lock is held while compiling, so a
    /// component asked for by many operations at once is compiled once.
    pub(super) fn component(&self, name: &str, wasm: &[u8]) -> Result<Component, Error> {
        use sha2::{Digest, Sha256};
        let digest: [u8; 32] = Sha256::digest(wasm).into();
        let mut loaded = self
            .inner
            .loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(component) = loaded.get(&digest) {
            return Ok(component.clone());
        }
        let component = match &self.inner.cache {
            Some(cache) => cache.load_or_compile_digest(&self.inner.engine, name, wasm, &digest)?,
            None => compile(&self.inner.engine, name, wasm)?,
        };
        if loaded.len() >= MAX_LOADED_COMPONENTS
            && let Some(evict) = loaded.keys().next().copied()
        {
            loaded.remove(&evict);
        }
        loaded.insert(digest, component.clone());
        Ok(component)
    }
}

/// The pooling allocator configuration of every sandbox engine under
/// `policy`: instance, memory and table counts, and the per-memory
/// ceiling. Public so that the benchmarks' bare-wasmtime floor allocates
/// instances exactly as the sandbox does.
pub fn pooling_config(policy: &Policy) -> PoolingAllocationConfig {
    // Every call holds one slot (see `slots`) and one component instance;
    // the pool has room for as many instances as there are slots.
    let instances = u32::try_from(policy.get_pool_size()).unwrap_or(u32::MAX);
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(instances)
        .total_core_instances(instances.saturating_mul(8))
        .total_memories(instances.saturating_mul(2))
        .total_tables(instances.saturating_mul(8))
        // The resource limiter enforces the policy's cap and records that it
        // did; the pool's own ceiling sits above it as a backstop, so that
        // the limiter is the one that refuses.
        .max_memory_size(policy.memory_bytes.max(POOL_MEMORY_CEILING))
        // A slot's memory and tables are reset in place, up to these sizes,
        // rather than given back and faulted in again at the next call
        // (53 against 26 µs a Rust call here; see the performance chapter).
        // Where the kernel has no `PAGEMAP_SCAN` (before Linux 6.7) wasmtime
        // resets the first bytes by `memset` and the rest as before.
        .linear_memory_keep_resident(KEEP_RESIDENT_MEMORY)
        .table_keep_resident(KEEP_RESIDENT_TABLES)
        .pagemap_scan(Enabled::Auto);
    pool
}

fn engine_config(policy: &Policy) -> Config {
    let mut config = Config::new();
    config
        .epoch_interruption(true)
        .wasm_component_model(true)
        .wasm_backtrace_max_frames(std::num::NonZeroUsize::new(BACKTRACE_FRAMES))
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pooling_config(policy)));
    config
}

fn compile(engine: &Engine, name: &str, wasm: &[u8]) -> Result<Component, Error> {
    Component::new(engine, wasm).map_err(|e| Error::InvalidComponent {
        plugin: name.to_string(),
        reason: first_line(&e),
    })
}

pub(crate) fn first_line(error: &wasmtime::Error) -> String {
    let text = format!("{error:#}");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn link_error(name: &str, error: &wasmtime::Error) -> Error {
    Error::Link {
        plugin: name.to_string(),
        reason: first_line(error),
    }
}

/// A loaded plugin, ready to call. Each call instantiates it afresh from
/// its pre-instantiated component into a new store, so no state survives
/// from one call (or app) to the next.
#[derive(Clone)]
pub struct Plugin {
    /// Shared with each call's store (its log lines and faults name it).
    name: Arc<str>,
    info: PluginInfo,
    contract: Arc<dyn Contract>,
    sandbox: Sandbox,
    /// The facts of the last call and what the contract prepared of
    /// them: an apply asks every chart of an app with the same facts, so
    /// they are serialized and converted once, not once a call (see
    /// `prepared`).
    last_facts: Arc<LastFacts<PreparedFacts>>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin").field("info", &self.info).finish()
    }
}

impl Plugin {
    /// What the plugin declared when it was loaded.
    pub fn info(&self) -> &PluginInfo {
        &self.info
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Computes the system overrides for `chart`: a JSON object. (The
    /// values of [`Plugin::answer`] for a chart with no user overrides and
    /// no namespace, for tools that run a plugin outside an app.)
    ///
    /// # Errors
    ///
    /// [`Error::Fault`] with the fault that ended the call.
    pub fn overrides(
        &self,
        ctx: &CallContext,
        app: &App,
        facts: &Facts,
        chart: &str,
    ) -> Result<Overrides, Error> {
        let call = ChartCall {
            app: app.name.clone(),
            version: app.version.clone(),
            chart: chart.to_string(),
            namespace: String::new(),
            user_overrides: serde_json::Value::Object(serde_json::Map::new()),
        };
        Ok(self.answer(ctx, &call, facts)?.values)
    }

    /// Asks for one chart's answer: its system overrides and, from a 0.2
    /// plugin, secret values, secrets to generate and whether the chart is
    /// disabled.
    ///
    /// # Errors
    ///
    /// [`Error::Fault`] with the fault that ended the call.
    pub fn answer(
        &self,
        ctx: &CallContext,
        call: &ChartCall,
        facts: &Facts,
    ) -> Result<ChartAnswer, Error> {
        let facts = self.prepared(facts);
        let mut inputs = Vec::with_capacity(5);
        inputs.extend([
            json_bytes(&AppRef::new(&call.app, &call.version)).into(),
            Arc::clone(&facts.json),
            call.chart.as_bytes().into(),
        ]);
        if self.info.contract.tells_call_context() {
            inputs.extend([
                call.namespace.as_bytes().into(),
                json_bytes(&call.user_overrides).into(),
            ]);
        }
        let contract = Arc::clone(&self.contract);
        let answer = self.call(ctx, &call.app, "overrides", inputs, |store| {
            contract.overrides(store, call, &facts.wit)
        })?;
        let answer = answer.map_err(|e| self.plugin_error(e))?;
        self.check_answer(answer)
    }

    /// Decides the workload kind of `component`, or `None` when the plugin
    /// does not decide workloads (it answered `unsupported`).
    ///
    /// # Errors
    ///
    /// [`Error::Fault`] with the fault that ended the call.
    pub fn workload_kind(
        &self,
        ctx: &CallContext,
        app: &App,
        facts: &Facts,
        component: &ComponentFacts,
    ) -> Result<Option<WorkloadKind>, Error> {
        let facts = self.prepared(facts);
        let inputs = vec![
            json_bytes(app).into(),
            Arc::clone(&facts.json),
            json_bytes(component).into(),
        ];
        let contract = Arc::clone(&self.contract);
        let answer = self.call(ctx, &app.name, "workload-kind", inputs, |store| {
            contract.workload_kind(store, app, &facts.wit, component)
        })?;
        answer.map_err(|e| self.plugin_error(e))
    }

    /// Runs a lifecycle hook, told only which hook (for tools that run a
    /// plugin outside an app): the verdict of [`Plugin::hook`].
    ///
    /// # Errors
    ///
    /// [`Error::Fault`] with the fault that ended the call.
    pub fn lifecycle(
        &self,
        ctx: &CallContext,
        hook: Hook,
        app: &App,
        facts: &Facts,
    ) -> Result<HookOutcome, Error> {
        let call = HookCall::new(hook, HookOperation::of(hook), &app.name, &app.version);
        Ok(self.hook(ctx, &call, facts)?.verdict)
    }

    /// Runs a lifecycle hook with everything the call is told, and checks
    /// the answer's shape (the actions are checked against the operator's
    /// policy by the lifecycle, before any is taken).
    ///
    /// # Errors
    ///
    /// [`Error::Fault`] with the fault that ended the call.
    pub fn hook(
        &self,
        ctx: &CallContext,
        call: &HookCall,
        facts: &Facts,
    ) -> Result<HookAnswer, Error> {
        let facts = self.prepared(facts);
        let mut inputs = vec![
            call.hook.as_str().as_bytes().into(),
            json_bytes(&AppRef::new(&call.app, &call.version)).into(),
            Arc::clone(&facts.json),
        ];
        if self.info.contract.tells_call_context() {
            let state = call.state.as_deref().unwrap_or_default();
            inputs.extend([json_bytes(call).into(), state.into()]);
        }
        let contract = Arc::clone(&self.contract);
        let answer = self.call(ctx, &call.app, "lifecycle", inputs, |store| {
            contract.lifecycle(store, call, &facts.wit)
        })?;
        let answer = answer.map_err(|e| self.plugin_error(e))?;
        self.check_hook_answer(answer)
    }

    fn call_info(&self, ctx: &CallContext, app: &str) -> Result<PluginInfo, Error> {
        let contract = Arc::clone(&self.contract);
        let info = self.call(ctx, app, "info", Vec::new(), |store| contract.info(store))?;
        if info.name.is_empty()
            || info.name.len() > MAX_NAME_BYTES
            || info.version.len() > MAX_NAME_BYTES
            || info.name.chars().any(char::is_control)
        {
            return Err(self.fault(Fault::InvalidOutput {
                reason: format!(
                    "info names the plugin {:?}, which is empty, over {MAX_NAME_BYTES} bytes or has control characters",
                    info.name.chars().take(MAX_NAME_BYTES).collect::<String>()
                ),
            }));
        }
        if info.charts.len() > MAX_DECLARED_CHARTS {
            return Err(self.fault(Fault::InvalidOutput {
                reason: format!(
                    "info declares {} charts, more than {MAX_DECLARED_CHARTS}",
                    info.charts.len()
                ),
            }));
        }
        let mut facts = info.facts;
        facts.sort();
        facts.dedup();
        Ok(PluginInfo {
            name: info.name,
            version: info.version,
            charts: info.charts,
            hooks: info.hooks,
            decides_workloads: info.decides_workloads,
            facts,
            contract: self.contract.version(),
        })
    }

    /// A chart answer within the output cap (its values and other parts
    /// together), its values one JSON object, and its other parts within
    /// the contract's bounds.
    fn check_answer(&self, raw: RawAnswer) -> Result<ChartAnswer, Error> {
        let mut strings = Vec::new();
        for value in &raw.secret_values {
            strings.extend(bounds::secret_value_strings(value));
        }
        for secret in &raw.generate {
            strings.extend(bounds::generated_strings(secret));
        }
        let parts = raw.secret_values.len() + raw.generate.len();
        let size = raw.values.len()
            + parts * bounds::ACTION_OVERHEAD_BYTES
            + strings.iter().map(|(_, text, _)| text.len()).sum::<usize>();
        self.check_size(size)?;
        self.check_strings(&strings)?;
        let values = Overrides::parse(raw.values).map_err(|reason| self.invalid(reason))?;
        for value in &raw.secret_values {
            if value.path.is_empty() {
                return Err(self.invalid("a secret value has an empty path".into()));
            }
        }
        for secret in &raw.generate {
            if let Err(e) = crate::model::SecretName::parse(&secret.name) {
                return Err(self.invalid(e.to_string()));
            }
            match &secret.shape {
                SecretShape::Password { length, .. } if !(8..=256).contains(length) => {
                    return Err(self.invalid(format!(
                        "generated secret {}: a password of {length} characters (8 to 256)",
                        secret.name
                    )));
                }
                SecretShape::Certificate { validity_days, .. }
                    if !(1..=3650).contains(validity_days) =>
                {
                    return Err(self.invalid(format!(
                        "generated secret {}: a certificate valid {validity_days} days (1 to 3650)",
                        secret.name
                    )));
                }
                _ => {}
            }
        }
        Ok(ChartAnswer {
            values,
            secret_values: raw.secret_values,
            generate: raw.generate,
            disabled: raw.disabled,
        })
    }

    /// A hook answer's JSON parsed and its bounds checked.
    fn check_hook_answer(&self, raw: RawHookAnswer) -> Result<HookAnswer, Error> {
        let mut strings = Vec::new();
        if let HookOutcome::Veto(reason) = &raw.verdict {
            strings.push(("the veto's reason", reason.as_str(), bounds::Kind::Reason));
        }
        if let Some(ReleaseStatus::Failed(reason)) = &raw.status {
            strings.push((
                "the status failure's reason",
                reason.as_str(),
                bounds::Kind::Reason,
            ));
        }
        let mut size = raw.state.as_ref().map_or(0, Vec::len)
            + raw.actions.len() * bounds::ACTION_OVERHEAD_BYTES;
        for action in &raw.actions {
            match action {
                RawAction::Ensure(text) => size += text.len(),
                RawAction::PatchOverrides { chart, patch } => {
                    size += patch.len();
                    strings.push(("the patch's chart", chart.as_str(), bounds::Kind::Label));
                }
                RawAction::Plain(action) => strings.extend(bounds::action_strings(action)),
            }
        }
        size += strings.iter().map(|(_, text, _)| text.len()).sum::<usize>();
        self.check_size(size)?;
        self.check_strings(&strings)?;
        if let Some(state) = &raw.state
            && state.len() > MAX_HOOK_STATE_BYTES
        {
            return Err(self.invalid(format!(
                "hook state of {} bytes, more than {} KiB",
                state.len(),
                MAX_HOOK_STATE_BYTES >> 10
            )));
        }
        if let Some(ReleaseStatus::RetryAfter(seconds)) = &raw.status
            && !(1..=MAX_RETRY_AFTER_SECONDS).contains(seconds)
        {
            return Err(self.invalid(format!(
                "status asks to retry after {seconds} s (1 to {MAX_RETRY_AFTER_SECONDS})"
            )));
        }
        let mut actions = Vec::with_capacity(raw.actions.len());
        for action in raw.actions {
            actions.push(match action {
                RawAction::Plain(action) => action,
                RawAction::Ensure(text) => match serde_json::from_str(&text) {
                    Ok(object @ serde_json::Value::Object(_)) => Action::Ensure(object),
                    Ok(other) => {
                        return Err(self.invalid(format!(
                            "ensure: the object must be a JSON object, got {}",
                            json_kind(&other)
                        )));
                    }
                    Err(e) => {
                        return Err(
                            self.invalid(format!("ensure: the object is not valid JSON: {e}"))
                        );
                    }
                },
                RawAction::PatchOverrides { chart, patch } => match serde_json::from_str(&patch) {
                    Ok(patch @ serde_json::Value::Object(_)) => {
                        Action::PatchOverrides { chart, patch }
                    }
                    Ok(other) => {
                        return Err(self.invalid(format!(
                            "patch-overrides {chart}: the patch must be a JSON object, got {}",
                            json_kind(&other)
                        )));
                    }
                    Err(e) => {
                        return Err(self.invalid(format!(
                            "patch-overrides {chart}: the patch is not valid JSON: {e}"
                        )));
                    }
                },
            });
        }
        Ok(HookAnswer {
            verdict: raw.verdict,
            actions,
            state: raw.state,
            status: raw.status,
        })
    }

    /// The facts as the contract's calls take them (their seed text and
    /// WIT record). What was made of the last facts is kept: comparing
    /// facts costs a fraction of serializing and converting them.
    fn prepared(&self, facts: &Facts) -> PreparedFacts {
        self.last_facts.get(facts, |facts| {
            self.contract.prepare(facts, &self.info.facts)
        })
    }

    fn invalid(&self, reason: String) -> Error {
        self.fault(Fault::InvalidOutput { reason })
    }

    /// Runs one export in a fresh store under the policy's limits, in a
    /// slot of the instance pool charged to `app`.
    ///
    /// The deadline runs from here: waiting for a slot counts. At each epoch
    /// tick the store's callback ends the call if its abort flag is raised
    /// or the wall clock is past the deadline.
    fn call<R>(
        &self,
        ctx: &CallContext,
        app: &str,
        function: &'static str,
        inputs: Vec<Arc<[u8]>>,
        invoke: impl FnOnce(&mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, Error> {
        let started = Instant::now();
        let inner = &self.sandbox.inner;
        let policy = &inner.policy;
        let deadline = ctx.deadline_under(policy);
        let until = started + deadline;
        let abort = ctx.abort_flag().cloned();
        let slot = match inner.slots.acquire(app, until, abort.as_deref()) {
            Ok(slot) => slot,
            Err(Refused::Aborted) => return Err(self.fault(Fault::Aborted)),
            Err(Refused::Exhausted) => return Err(self.fault(self.pool_exhausted(started))),
        };
        let state = HostState::new(
            Arc::clone(&self.name),
            policy,
            ctx.seed_source(function, inputs),
        );
        let mut store = Store::new(&inner.engine, state);
        store.limiter(|state| state);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |mut store| {
            if abort
                .as_ref()
                .is_some_and(|flag| flag.load(Ordering::SeqCst))
            {
                store.data_mut().aborted = true;
                return Ok(UpdateDeadline::Interrupt);
            }
            if Instant::now() >= until {
                return Ok(UpdateDeadline::Interrupt);
            }
            Ok(UpdateDeadline::Continue(1))
        });
        let span = tracing::debug_span!("plugin call", plugin = %self.name, function);
        let _entered = span.enter();
        let result = invoke(&mut store);
        store.data().forward_stdio();
        let result = match result {
            // A call that returned may still have hit a limit it then
            // survived (Python catches `MemoryError`): the limit decides.
            Ok(answer) => match store.data().limit_hit() {
                Some(fault) => Err(self.fault(fault)),
                None => Ok(answer),
            },
            Err(error) if error.downcast_ref::<PoolConcurrencyLimitError>().is_some() => {
                // A backstop: the slots keep calls under the pool's size.
                Err(self.fault(self.pool_exhausted(started)))
            }
            Err(error) => Err(self.fault(store.data().classify(&error, deadline))),
        };
        // The instance goes back to the pool before the slot does.
        drop(store);
        drop(slot);
        result
    }

    fn pool_exhausted(&self, started: Instant) -> Fault {
        let policy = &self.sandbox.inner.policy;
        Fault::PoolExhausted {
            slots: policy.get_pool_size(),
            per_app: policy.get_app_slots(),
            waited: started.elapsed(),
        }
    }

    fn check_size(&self, len: usize) -> Result<(), Error> {
        let limit = self.sandbox.inner.policy.output_bytes;
        if len > limit {
            return Err(self.fault(Fault::OutputTooLarge {
                stream: Stream::Output,
                limit,
            }));
        }
        Ok(())
    }

    /// Every string of an answer within its bound ([`bounds`]).
    fn check_strings(&self, strings: &[(&str, &str, bounds::Kind)]) -> Result<(), Error> {
        for (what, text, kind) in strings {
            bounds::check(what, text, *kind).map_err(|reason| self.invalid(reason))?;
        }
        Ok(())
    }

    /// The plugin's own error, its message cut to
    /// [`bounds::MAX_REASON_BYTES`] (the call failed either way; what is
    /// logged and stored stays bounded).
    fn plugin_error(&self, error: PluginError) -> Error {
        let capped = |m: String| match bounds::cap(&m, bounds::MAX_REASON_BYTES) {
            std::borrow::Cow::Borrowed(_) => m,
            std::borrow::Cow::Owned(cut) => cut,
        };
        if let Err(too_large) = self.check_size(match &error {
            PluginError::InvalidFacts(m) | PluginError::Unsupported(m) | PluginError::Failed(m) => {
                m.len()
            }
        }) {
            return too_large;
        }
        let error = match error {
            PluginError::InvalidFacts(m) => PluginError::InvalidFacts(capped(m)),
            PluginError::Unsupported(m) => PluginError::Unsupported(capped(m)),
            PluginError::Failed(m) => PluginError::Failed(capped(m)),
        };
        self.fault(Fault::PluginError(error))
    }

    fn fault(&self, fault: Fault) -> Error {
        Error::Fault {
            plugin: self.name.to_string(),
            fault,
        }
    }
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until dropped.
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    fn start(engine: Engine) -> std::io::Result<Ticker> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("capstan-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })?;
        Ok(Ticker {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
