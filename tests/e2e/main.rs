//! End-to-end tests: one test binary, one module per concern. Each test that
//! runs the real `capstan` binary gets a fresh folder named after it.
//!
//! The plugin components these tests use (the examples and the hostile
//! fixtures under `test-support/plugins/`) are built from source by the suite
//! itself, once per run, for `wasm32-wasip2`.

mod support;

/// The crate's layout rules (issue 44): file sizes in lifecycle/, kube/
/// and api/, no import circle among lifecycle's files.
mod layout;

/// The sandbox against hostile plugins: every fault is typed, bounded in
/// time, and leaves the host able to run the next plugin.
mod sandbox;

/// Contract 0.2 beside 0.1 (issue 25): the sections a plugin declared,
/// the chart's namespace and user overrides, hook context and state.
mod contract_v2;

/// Plugins that try to escape (issue 43): generated secrets bound to
/// their app, `observe` under the read policy, bounded and
/// all-or-nothing answers, a strict directory target, the Pod rule.
mod plugin_escapes;

/// Plugins in Python (issue 28): pytest, the shared vectors through both
/// components, a hostile Python plugin against every grant and cap.
mod python_plugins;

/// `capstan plugin run` through the real binary: output, exit codes and
/// error lines.
mod plugin_cli;

/// Signed bundles: the hostile-bundle corpus, each rejection typed, nothing
/// left behind.
mod hostile_bundles;

/// `capstan keygen` and `capstan bundle` through the real binary.
mod bundle_cli;

/// `capstan template` against real `helm template` output (the shared Helm
/// conformance set, when present) and the charts under `tests/charts/`.
mod render_conformance;

/// `capstan template` against the real `helm template` (Helm 4 built from
/// `test-support/control-plane/helm`) as a differential oracle: every chart of
/// the repository and of the shared set, and generated templates.
mod render_differential;

/// Hostile charts against the render limits: each ends in its typed error,
/// within the deadline plus a margin, with bounded peak memory.
mod render_limits;

/// The daemon through the real binary: lifecycle, overrides, bad input,
/// authentication.
mod daemon;

/// The daemon under load and abuse (issue 29): streamed uploads within
/// bounded memory, body, header and idle timeouts, the upload and
/// connection caps, failed authentication slowed per peer.
mod api_limits;

/// SIGKILL at named steps of every operation and inside store writes:
/// the exact state after restart, and the target against a clean run.
mod crash;

/// A full disk and a read-only state folder on a tmpfs the test mounts.
mod disk;

/// Bundles through a real OCI registry (Debian's docker-registry):
/// push, pull, upload and update from it, tampering, auth.
mod registry;

/// The registry token service the bearer-token tests run on loopback.
mod token_server;

/// TLS on the TCP listener with certificates the test generates.
mod tls;

/// Workload kinds and local volumes through the daemon.
mod workloads;

/// The daemon against the Kubernetes API-server double, for the faults a
/// real server cannot be made to produce: 5xx, 429 with Retry-After,
/// dropped connections, a held request for the crash tests.
mod cluster;

/// The real control plane the cluster tests run on (`cargo xtask cluster
/// up`): finding it, kubectl, the audit log.
mod control_plane;

/// The daemon against the real control plane: server-side apply, real
/// controllers' readiness, RBAC, the garbage collector, conflicts and
/// immutable fields as the real server decides them.
mod real_cluster;

// Day two on the real control plane: hand edits, other managers and
// autoscalers; what `app diff` shows and what an apply takes back.
mod drift;

// Issue 45's failure policy on the real control plane: an app's pause
// holds its drift correction until resumed.
mod failure_policy;

/// Helm 4 as a differential oracle for install, upgrade and uninstall on
/// the real control plane: the same charts through `helm` and capstan,
/// what each step leaves compared (issue 42).
mod apply_differential;

/// Helm's semantics the differential cannot show by what is left: a hook
/// Job's failure, the load-balancer opt-in, a remove raced by a re-create.
mod helm_semantics;

/// Connected rendering on the real control plane: `lookup` of live
/// objects under the lookup policy, `.Capabilities` from the server.
mod connected;

/// The cluster store: state in App objects, guarded writes (issue 26).
mod cluster_store;
/// Two daemons in cluster mode: a leader, a follower, failover (issue 26).
mod ha;
/// Leader election on a Lease, on the real control plane (issue 26).
mod lease;
/// Facts from the cluster and re-evaluation on the real control plane.
mod live_facts;
/// Apps applied as the ServiceAccount the operator names (issue 26).
mod tenancy;

/// Issue 13: private state, token rules, damaged stored bundles as state
/// errors, concurrent operations.
mod hardening;

/// Issue 13: what `bundle build` signs passes upload, and upload refuses
/// what apply would (charts, subchart archives, sizes, plugins).
mod admission;
/// The operator's verbs (issue 12): rollback, forced update, scriptable
/// output, re-attaching with `app wait`, completions.
mod operator;
/// Issue 13: hostile plugins inside `capstan serve`: abort interrupts a
/// call, the API answers while a plugin spins, memory bombs at once, and
/// each app's plugins see only its own volumes.
mod serve_plugins;

/// Issue 30: the README and the book: every shell example runs as
/// written, every internal link resolves, the CLI reference is generated.
mod docs;
/// The status page (issue 15) in headless Chromium over WebDriver: the
/// token gate, the app list, layers, escaping, live progress.
mod status_page;
