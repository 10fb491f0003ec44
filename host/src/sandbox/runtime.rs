//! The engine, the loaded plugins and their typed calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use wasmtime::component::{Component, Linker};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolConcurrencyLimitError, PoolingAllocationConfig,
    Store, UpdateDeadline,
};

use super::bindings::capstan::plugin::types as wit;
use super::bindings::{OverridePlugin, OverridePluginPre};
use super::cache::ComponentCache;
use super::call::{CallContext, HostState};
use super::facts::{App, ComponentFacts, Facts};
use super::policy::{EPOCH_TICK, Policy};
use super::slots::{Refused, Slots};
use super::{Error, Fault, PluginError, Stream, wasi};

/// The pooling allocator's per-memory ceiling, above any sane policy cap.
const POOL_MEMORY_CEILING: usize = 1 << 30;

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

use crate::model::{Hook, HookOutcome, WorkloadKind};

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
        OverridePlugin::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(
            &mut linker,
            |state| state,
        )
        .map_err(Error::Engine)?;
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
        let pre = OverridePluginPre::new(pre).map_err(|e| link_error(name, &e))?;
        let mut plugin = Plugin {
            name: name.to_string(),
            info: PluginInfo {
                name: name.to_string(),
                version: String::new(),
                charts: Vec::new(),
                hooks: Vec::new(),
                decides_workloads: false,
            },
            pre,
            sandbox: self.clone(),
        };
        plugin.info = plugin.call_info(&ctx.bare(), app)?;
        plugin.name = plugin.info.name.clone();
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
        .max_memory_size(policy.memory_bytes.max(POOL_MEMORY_CEILING));
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
    name: String,
    info: PluginInfo,
    pre: OverridePluginPre<HostState>,
    sandbox: Sandbox,
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

    /// Computes the system overrides for `chart`: a JSON object.
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
    ) -> Result<serde_json::Map<String, serde_json::Value>, Error> {
        let inputs = [
            &json_bytes(app)[..],
            &json_bytes(facts)[..],
            chart.as_bytes(),
        ];
        let (wit_app, wit_facts) = (app.to_wit(), facts.to_wit());
        let text = self.call(ctx, &app.name, "overrides", &inputs, |plugin, store| {
            plugin.call_overrides(store, &wit_app, &wit_facts, chart)
        })?;
        let text = text.map_err(|e| self.plugin_error(e))?;
        self.parse_overrides(&text)
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
        let inputs = [
            &json_bytes(app)[..],
            &json_bytes(facts)[..],
            &json_bytes(component)[..],
        ];
        let (wit_app, wit_facts, wit_component) =
            (app.to_wit(), facts.to_wit(), component.to_wit());
        let answer = self.call(ctx, &app.name, "workload-kind", &inputs, |plugin, store| {
            plugin.call_workload_kind(store, &wit_app, &wit_facts, &wit_component)
        })?;
        match answer {
            Ok(wit::WorkloadKind::Deployment) => Ok(Some(WorkloadKind::Deployment)),
            Ok(wit::WorkloadKind::StatefulSet) => Ok(Some(WorkloadKind::StatefulSet)),
            Err(wit::PluginError::Unsupported(_)) => Ok(None),
            Err(e) => Err(self.plugin_error(e)),
        }
    }

    /// Runs a lifecycle hook.
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
        let inputs = [
            hook.as_str().as_bytes(),
            &json_bytes(app)[..],
            &json_bytes(facts)[..],
        ];
        let (wit_app, wit_facts) = (app.to_wit(), facts.to_wit());
        let outcome = self.call(ctx, &app.name, "lifecycle", &inputs, |plugin, store| {
            plugin.call_lifecycle(store, hook_to_wit(hook), &wit_app, &wit_facts)
        })?;
        match outcome.map_err(|e| self.plugin_error(e))? {
            wit::HookOutcome::Proceed => Ok(HookOutcome::Proceed),
            wit::HookOutcome::Veto(reason) => {
                self.check_size(reason.len())?;
                Ok(HookOutcome::Veto(reason))
            }
        }
    }

    fn call_info(&self, ctx: &CallContext, app: &str) -> Result<PluginInfo, Error> {
        let info = self.call(ctx, app, "info", &[], |plugin, store| {
            plugin.call_info(store)
        })?;
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
        Ok(PluginInfo {
            name: info.name,
            version: info.version,
            charts: info.charts,
            hooks: info.hooks.into_iter().map(hook_from_wit).collect(),
            decides_workloads: info.decides_workloads,
        })
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
        function: &str,
        inputs: &[&[u8]],
        invoke: impl FnOnce(&OverridePlugin, &mut Store<HostState>) -> wasmtime::Result<R>,
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
        let seed = ctx.seed(function, inputs);
        let state = HostState::new(&self.name, policy, ctx.now(), seed);
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
        let result = self
            .pre
            .instantiate(&mut store)
            .and_then(|plugin| invoke(&plugin, &mut store));
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

    fn parse_overrides(
        &self,
        text: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>, Error> {
        self.check_size(text.len())?;
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(map)) => Ok(map),
            Ok(other) => Err(self.fault(Fault::InvalidOutput {
                reason: format!("overrides must be a JSON object, got {}", json_kind(&other)),
            })),
            Err(e) => Err(self.fault(Fault::InvalidOutput {
                reason: format!("overrides are not valid JSON: {e}"),
            })),
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

    fn plugin_error(&self, error: wit::PluginError) -> Error {
        let (make, message): (fn(String) -> PluginError, String) = match error {
            wit::PluginError::InvalidFacts(m) => (PluginError::InvalidFacts, m),
            wit::PluginError::Unsupported(m) => (PluginError::Unsupported, m),
            wit::PluginError::Failed(m) => (PluginError::Failed, m),
        };
        if let Err(too_large) = self.check_size(message.len()) {
            return too_large;
        }
        self.fault(Fault::PluginError(make(message)))
    }

    fn fault(&self, fault: Fault) -> Error {
        Error::Fault {
            plugin: self.name.clone(),
            fault,
        }
    }
}

fn json_bytes(value: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
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

fn hook_to_wit(hook: Hook) -> wit::Hook {
    match hook {
        Hook::SemanticCheck => wit::Hook::SemanticCheck,
        Hook::PreApply => wit::Hook::PreApply,
        Hook::PostApply => wit::Hook::PostApply,
        Hook::PreRemove => wit::Hook::PreRemove,
        Hook::PostRemove => wit::Hook::PostRemove,
        Hook::PreUpdate => wit::Hook::PreUpdate,
        Hook::PostUpdate => wit::Hook::PostUpdate,
    }
}

fn hook_from_wit(hook: wit::Hook) -> Hook {
    match hook {
        wit::Hook::SemanticCheck => Hook::SemanticCheck,
        wit::Hook::PreApply => Hook::PreApply,
        wit::Hook::PostApply => Hook::PostApply,
        wit::Hook::PreRemove => Hook::PreRemove,
        wit::Hook::PostRemove => Hook::PostRemove,
        wit::Hook::PreUpdate => Hook::PreUpdate,
        wit::Hook::PostUpdate => Hook::PostUpdate,
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
