//! `kube-double`: a **test double** of the Kubernetes API server. It is not
//! an API server and stores nothing durably; it speaks enough of the real
//! wire protocol, over plain HTTP on loopback, that kube-rs and `kubectl`
//! talk to it as they would to a cluster.
//!
//! What it simulates:
//! - discovery (`/api`, `/apis`, per group-version resource lists, `/version`;
//!   aggregated discovery v2 when asked for),
//!   with the built-in kinds capstan applies and the kinds of applied
//!   CustomResourceDefinitions;
//! - get, list (label and field selectors, `limit`/`continue`, a minimal
//!   Table for `kubectl get`), watch (newline-delimited events), create,
//!   replace, JSON patch, merge and strategic-merge patch (strategic treated
//!   as merge),
//!   delete (finalizers, propagation, garbage collection by owner uid);
//! - server-side apply with `managedFields` per manager, conflicts between
//!   managers worded as the real server words them, `force`, `dryRun=All`
//!   and `fieldValidation`;
//! - server-set metadata (uid, one global resourceVersion, generation,
//!   creationTimestamp), the immutable-field checks an applier runs into,
//!   `Status` errors with the real codes and reasons, a bearer token;
//! - controllers that make workloads ready after a delay (see [`Options`]),
//!   and injected faults ([`Fault`]).
//!
//! What it does not: TLS, protobuf, aggregated discovery v2beta1,
//! admission webhooks, OpenAPI schemas (only the v3 index kubectl
//! reads to learn that the server validates fields), schema validation beyond unknown top-level and
//! `metadata` fields of built-in kinds, defaulting (except a Service's
//! clusterIP and a Secret's `stringData`), RBAC, real Pods or scheduling, field ownership of `status`, and the structured-merge-diff
//! rules for lists beyond keying maps by `name` (see [`apply`]).
//!
//! ```no_run
//! use kube_double::{KubeDouble, Options};
//! let double = KubeDouble::start(Options::default())?;
//! double.write_kubeconfig(std::path::Path::new("/tmp/kubeconfig"))?;
//! println!("serving on {}", double.url());
//! # Ok::<(), std::io::Error>(())
//! ```

pub mod apply;
pub mod controllers;
pub mod discovery;
pub mod faults;
pub mod openapi;
pub mod patch;
pub mod selectors;
pub mod server;
pub mod status;
pub mod store;
pub mod util;
pub mod validation;

pub use faults::{Fault, FaultKind};
pub use server::RecordedRequest;

use serde_json::{Value, json};
use server::{Shared, lock};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use store::{ObjKey, Store};

/// The default delay before simulated controllers report an object ready.
pub const DEFAULT_READY_AFTER: Duration = Duration::from_millis(150);
/// How often the simulated controllers run.
pub const CONTROLLER_TICK: Duration = Duration::from_millis(50);

/// How a double behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// Whether controllers are simulated (workloads become ready, CRDs
    /// established). Default: true.
    pub simulate_controllers: bool,
    /// How long after an object's last spec change the controllers report it
    /// ready. Default: [`DEFAULT_READY_AFTER`].
    pub ready_after: Duration,
    /// The bearer token every request must carry, if any. Default: none.
    pub token: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            simulate_controllers: true,
            ready_after: DEFAULT_READY_AFTER,
            token: None,
        }
    }
}

/// A running double. It serves on its own thread with its own tokio
/// runtime (so synchronous tests can use it) and stops when dropped.
pub struct KubeDouble {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

const SEED_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

impl KubeDouble {
    /// Starts a double on `127.0.0.1` and a free port.
    ///
    /// # Errors
    /// When the socket cannot be bound or the runtime not built.
    pub fn start(options: Options) -> std::io::Result<KubeDouble> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), options)
    }

    /// Starts a double on the given address.
    ///
    /// # Errors
    /// When the socket cannot be bound or the runtime not built.
    pub fn start_on(addr: SocketAddr, options: Options) -> std::io::Result<KubeDouble> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (notify, changes) = tokio::sync::watch::channel(0u64);
        let shared = Arc::new(Shared {
            store: std::sync::Mutex::new(Store::new(notify)),
            requests: std::sync::Mutex::new(std::collections::VecDeque::new()),
            faults: std::sync::Mutex::new(Vec::new()),
            simulate: AtomicBool::new(options.simulate_controllers),
            token: options.token.clone(),
            changes,
        });
        let mut double = KubeDouble {
            addr,
            shared: shared.clone(),
            shutdown: None,
            thread: None,
        };
        for ns in SEED_NAMESPACES {
            double.put_object(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
                "kube-apiserver",
            );
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let ready_after = options.ready_after;
        let thread = std::thread::Builder::new()
            .name(format!("kube-double-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("kube-double: cannot serve on {addr}: {e}");
                            return;
                        }
                    };
                    let controller_state = shared.clone();
                    tokio::spawn(async move {
                        let mut interval = tokio::time::interval(CONTROLLER_TICK);
                        loop {
                            interval.tick().await;
                            if controller_state.simulate.load(Ordering::SeqCst) {
                                controllers::tick(&mut lock(&controller_state.store), ready_after);
                            }
                        }
                    });
                    server::serve(listener, shared, rx).await;
                });
            })?;
        double.shutdown = Some(tx);
        double.thread = Some(thread);
        Ok(double)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Writes a kubeconfig with cluster, user and context `double` (the
    /// token as the user's credential, if set) and namespace `default`.
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        let user = match &self.shared.token {
            Some(t) => format!(
                "    token: {}\n",
                serde_json::to_string(t).unwrap_or_default()
            ),
            None => "    {}\n".to_string(),
        };
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: double\n  cluster:\n    server: {}\nusers:\n- name: double\n  user:\n{user}contexts:\n- name: double\n  context:\n    cluster: double\n    user: double\n    namespace: default\ncurrent-context: double\npreferences: {{}}\n",
            self.url()
        );
        std::fs::write(path, text)
    }

    /// Every request received, in order (including faulted and refused
    /// ones); the oldest go past [`server::MAX_RECORDED_REQUESTS`].
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).iter().cloned().collect()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        lock(&self.shared.requests).clear();
    }

    fn key(
        &self,
        store: &Store,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<(discovery::ResourceInfo, ObjKey)> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let r = store
            .resources(false)
            .into_iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)?;
        let key = ObjKey::new(&r, namespace.unwrap_or("default"), name);
        Some((r, key))
    }

    /// A stored object (as a client would get it), if present.
    pub fn object(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let store = lock(&self.shared.store);
        let (r, key) = self.key(&store, api_version, kind, namespace, name)?;
        let mut o = store.get(&key)?;
        if let Some(m) = o.as_object_mut() {
            m.insert("apiVersion".into(), json!(r.api_version()));
            m.insert("kind".into(), json!(r.kind));
        }
        Some(o)
    }

    /// Every stored object, each with `apiVersion` and `kind`.
    pub fn objects(&self) -> Vec<Value> {
        let store = lock(&self.shared.store);
        store.objects.values().map(Store::render).collect()
    }

    /// Creates or replaces an object directly, as `manager` (an object
    /// someone else made). Needs `apiVersion`, `kind` and `metadata.name`;
    /// a namespaced object without a namespace goes to `default`. The namespace
    /// need not exist (unlike through the API). An object
    /// of an unknown kind is refused with a line on stderr.
    pub fn put_object(&self, object: Value, manager: &str) {
        let mut store = lock(&self.shared.store);
        let (Some(api_version), Some(kind), Some(name)) = (
            object["apiVersion"].as_str().map(str::to_string),
            object["kind"].as_str().map(str::to_string),
            object["metadata"]["name"].as_str().map(str::to_string),
        ) else {
            eprintln!("kube-double: put_object needs apiVersion, kind and metadata.name");
            return;
        };
        let namespace = object["metadata"]["namespace"].as_str().map(str::to_string);
        let Some((r, key)) = self.key(&store, &api_version, &kind, namespace.as_deref(), &name)
        else {
            eprintln!("kube-double: put_object: no resource serves {api_version} {kind}");
            return;
        };
        let existing = store.objects.get(&key).cloned();
        let mut object = object;
        let seq = store.resource_version();
        validation::normalize(&r, &mut object, existing.as_ref().map(|s| &s.object), seq);
        let spec_changed = store.prepare(&key, &mut object, existing.as_ref().map(|s| &s.object));
        let mut managers = existing
            .as_ref()
            .map(|s| s.managers.clone())
            .unwrap_or_default();
        apply::record_update(
            existing.as_ref().map(|s| &s.object),
            &object,
            &mut managers,
            manager,
            &api_version,
            &util::now_rfc3339(),
        );
        store.commit(key, object, managers, spec_changed);
    }

    /// Sets an object's status; from then on the simulated controllers leave
    /// that object alone. Returns false if there is no such object.
    pub fn set_status(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        status: Value,
    ) -> bool {
        let mut store = lock(&self.shared.store);
        let Some((_, key)) = self.key(&store, api_version, kind, namespace, name) else {
            return false;
        };
        store.write_status(&key, status, true)
    }

    /// Removes an object's finalizers (as their controllers would); an
    /// object marked for deletion then goes. Returns false if absent.
    pub fn remove_finalizers(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> bool {
        let mut store = lock(&self.shared.store);
        let Some((_, key)) = self.key(&store, api_version, kind, namespace, name) else {
            return false;
        };
        let Some(stored) = store.objects.get(&key).cloned() else {
            return false;
        };
        let mut object = stored.object.clone();
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("finalizers");
        }
        let mut managers = stored.managers.clone();
        for e in &mut managers {
            e.fields.retain(|p| {
                !(p.first().is_some_and(|f| f == "f:metadata")
                    && p.get(1).is_some_and(|f| f == "f:finalizers"))
            });
        }
        managers.retain(|e| !e.fields.is_empty());
        store.commit(key, object, managers, false);
        true
    }

    /// Adds a fault for the next matching requests.
    pub fn inject_fault(&self, fault: Fault) {
        lock(&self.shared.faults).push(fault);
    }

    /// Turns the controller simulation on or off.
    pub fn set_simulate_controllers(&self, on: bool) {
        self.shared.simulate.store(on, Ordering::SeqCst);
    }
}

impl Drop for KubeDouble {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
