//! Kubernetes Pod Security Standards (PSS) as a pure check over an object.
//!
//! This module owns the three PSS levels — `privileged`, `baseline` and
//! `restricted` — as defined by `k8s.io/pod-security-admission` for policy
//! version `latest` (Kubernetes 1.37), and evaluates them against an object
//! given as a [`serde_json::Value`]. It does no I/O and keeps no state.
//!
//! Which pod specs are read, by kind (the apiVersion group must match too):
//!
//! | kind                                                        | group   | pod spec                              |
//! |-------------------------------------------------------------|---------|---------------------------------------|
//! | `Pod`                                                       | core    | `spec`                                |
//! | `ReplicationController`                                     | core    | `spec.template.spec`                  |
//! | `PodTemplate`                                               | core    | `template.spec`                       |
//! | `Deployment`, `StatefulSet`, `DaemonSet`, `ReplicaSet`      | `apps`  | `spec.template.spec`                  |
//! | `Job`                                                       | `batch` | `spec.template.spec`                  |
//! | `CronJob`                                                   | `batch` | `spec.jobTemplate.spec.template.spec` |
//!
//! (`Deployment`, `DaemonSet` and `ReplicaSet` of the long-removed
//! `extensions` group are read as well, to fail closed.) The pod metadata next
//! to each spec (`metadata` for a Pod, `….template.metadata` otherwise) is read
//! for the AppArmor annotations. Every other kind carries no pod spec and
//! always passes.
//!
//! The object may come from a hostile source: any JSON shape is accepted
//! without panicking. JSON `null` is treated as an absent field (as the
//! Kubernetes decoder does). A security field holding a value that is neither
//! absent nor an understood safe value — including one of the wrong JSON type,
//! such as `privileged: "yes"` — is a violation; a structure that must be an
//! object or array but is not (a pod spec, `containers`, a `securityContext`)
//! is reported under the check name `"malformed"`.
//!
//! Differences from pod-security-admission, all in the stricter direction: the
//! baseline `capabilities`, `seccompProfile` and `hostPathVolumes` checks keep
//! applying at `restricted` (PSA replaces them by their restricted variants,
//! which skip Windows pods and let a volume that names an allowed source pass
//! even if it also names `hostPath`).

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

/// The levels, as the action policy's `podSecurity` names them.
pub use crate::model::PodSecurity as Level;

/// The error of parsing a [`Level`] from a string that names none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseLevelError {
    input: String,
}

impl fmt::Display for ParseLevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown Pod Security level {}: expected one of \"privileged\", \"baseline\", \"restricted\"",
            quote(&self.input)
        )
    }
}

impl std::error::Error for ParseLevelError {}

impl FromStr for Level {
    type Err = ParseLevelError;

    /// Parses exactly `"privileged"`, `"baseline"` or `"restricted"`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "privileged" => Ok(Level::Privileged),
            "baseline" => Ok(Level::Baseline),
            "restricted" => Ok(Level::Restricted),
            _ => Err(ParseLevelError {
                input: s.to_owned(),
            }),
        }
    }
}

/// One broken check: which check (the PSS / pod-security-admission name, e.g.
/// `"hostNamespaces"`, `"privileged"`, `"capabilities"`, `"hostPathVolumes"`,
/// `"hostPorts"`, `"runAsNonRoot"`, or `"malformed"` for a structure of the
/// wrong shape), where (a path like
/// `spec.template.spec.containers[app].securityContext.privileged`), and what
/// was found there (at most [`MAX_FOUND`] bytes).
///
/// Displays as `check: path is found`, e.g. `hostNamespaces: spec.hostPID is true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The name of the broken check.
    pub check: &'static str,
    /// Where in the object the offending field is.
    pub path: String,
    /// What was found there (a JSON rendering or a short description).
    pub found: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} is {}", self.check, self.path, self.found)
    }
}

/// The longest [`Violation::found`] text, in bytes; longer text is cut on a
/// char boundary and ends with `…`.
pub const MAX_FOUND: usize = 100;

/// The most violations [`check`] returns for one object; past it the list is
/// a prefix of all violations (still non-empty, so still a failure).
pub const MAX_VIOLATIONS: usize = 256;

/// The pod specs `object` carries, by its kind, each with the path prefix of
/// the spec: Pod (`spec`), Deployment/StatefulSet/DaemonSet/ReplicaSet (group
/// `apps`), ReplicationController (core), Job (`batch`):
/// `spec.template.spec`; CronJob (`batch`): `spec.jobTemplate.spec.template.spec`;
/// PodTemplate (core): `template.spec`. Other kinds, or these kinds in another
/// group, carry none. A spec that is absent (or `null`) is not listed; one of
/// the wrong type is listed as it is.
pub fn pod_specs(object: &Value) -> Vec<(String, &Value)> {
    templates(object)
        .into_iter()
        .filter_map(|t| t.spec.map(|spec| (t.spec_path, spec)))
        .collect()
}

/// Every violation of `level` in `object`'s pod specs: empty when it meets the
/// level, and always empty for [`Level::Privileged`] and for objects that carry
/// no pod spec (see [`pod_specs`]). All containers, initContainers and
/// ephemeralContainers are checked. A workload kind whose pod spec is missing
/// or not an object fails with a `"malformed"` violation. At most
/// [`MAX_VIOLATIONS`] are returned.
pub fn check(object: &Value, level: Level) -> Vec<Violation> {
    let mut sink = Sink::default();
    if level == Level::Privileged {
        return sink.out;
    }
    for t in templates(object) {
        if sink.full() {
            break;
        }
        match t.spec.and_then(Value::as_object) {
            Some(spec) => check_pod(spec, &t.spec_path, t.meta, &t.meta_path, level, &mut sink),
            None => sink.push(
                "malformed",
                t.spec_path,
                t.spec.map_or_else(|| "unset".to_owned(), describe),
            ),
        }
    }
    sink.out
}

// ---------------------------------------------------------------------------
// Lists from k8s.io/pod-security-admission (policy version 1.37 / latest).

/// Capabilities baseline allows in `capabilities.add` (the container
/// runtime's default set).
const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Sysctls baseline allows (namespaced and isolated per pod).
const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
];

/// SELinux types baseline allows (besides unset / empty).
const SELINUX_TYPES: &[&str] = &[
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// Volume sources restricted allows.
const RESTRICTED_VOLUME_SOURCES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// Seccomp and AppArmor profile types baseline allows when set (restricted
/// requires one of these seccomp types to be set).
const PROFILE_TYPES: &[&str] = &["RuntimeDefault", "Localhost"];

const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

// ---------------------------------------------------------------------------
// Locating pod specs.

/// One pod template found in an object: its spec and metadata, with paths.
struct Template<'a> {
    spec_path: String,
    spec: Option<&'a Value>,
    meta_path: String,
    meta: Option<&'a Value>,
}

/// The pod templates of `object` (at most one), by kind and group.
fn templates(object: &Value) -> Vec<Template<'_>> {
    let Some(kind) = object.get("kind").and_then(Value::as_str) else {
        return Vec::new();
    };
    let Some(api_version) = object.get("apiVersion").and_then(Value::as_str) else {
        return Vec::new();
    };
    // "v1" is the core group; "apps/v1" is group "apps".
    let group = api_version.split_once('/').map_or("", |(g, _)| g);
    let prefix: &[&str] = match (group, kind) {
        ("", "Pod") => &[],
        ("", "PodTemplate") => &["template"],
        ("", "ReplicationController")
        | ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("extensions", "Deployment" | "DaemonSet" | "ReplicaSet")
        | ("batch", "Job") => &["spec", "template"],
        ("batch", "CronJob") => &["spec", "jobTemplate", "spec", "template"],
        _ => return Vec::new(),
    };
    let template = lookup(object, prefix);
    let join = |last: &str| {
        let mut parts = prefix.to_vec();
        parts.push(last);
        parts.join(".")
    };
    vec![Template {
        spec_path: join("spec"),
        spec: template.and_then(|t| field(t, "spec")),
        meta_path: join("metadata"),
        meta: template.and_then(|t| field(t, "metadata")),
    }]
}

// ---------------------------------------------------------------------------
// JSON helpers.

/// `v[key]` when `v` is an object and the field is present and not null.
fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v.get(key) {
        None | Some(Value::Null) => None,
        some => some,
    }
}

/// `v[k0][k1]…`, each step as in [`field`].
fn lookup<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(v, |v, k| field(v, k))
}

/// `m[key]`, absent when null.
fn get<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    match m.get(key) {
        None | Some(Value::Null) => None,
        some => some,
    }
}

/// Whether `v` is absent or exactly `false` (the only safe values of a
/// forbidden boolean).
fn unset_or_false(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Bool(false)))
}

/// Whether `v` is absent or the empty string.
fn unset_or_empty(v: Option<&Value>) -> bool {
    match v {
        None => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    }
}

/// Whether `v` is a string in `allowed`.
fn is_one_of(v: Option<&Value>, allowed: &[&str]) -> bool {
    v.and_then(Value::as_str)
        .is_some_and(|s| allowed.contains(&s))
}

/// The integer value of a JSON number that is an integer.
fn as_integer(v: &Value) -> Option<i128> {
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
}

/// `s` cut to at most `max` bytes on a char boundary.
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

/// `s` cut to [`MAX_FOUND`] bytes, ending with `…` when cut.
fn bound(s: String) -> String {
    if s.len() <= MAX_FOUND {
        return s;
    }
    let ellipsis = "…";
    let mut out = truncate(&s, MAX_FOUND - ellipsis.len()).to_owned();
    out.push_str(ellipsis);
    out
}

/// `s` quoted and escaped, bounded.
fn quote(s: &str) -> String {
    let cut = truncate(s, MAX_FOUND);
    let mut q = format!("{cut:?}");
    if cut.len() < s.len() {
        q.push('…');
    }
    bound(q)
}

/// A short rendering of any JSON value: scalars as JSON, containers by shape.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => bound(n.to_string()),
        Value::String(s) => quote(s),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// The label of a list item in a path: its `name` when that is a plausible
/// Kubernetes name (a DNS label, not all digits), else its index.
fn item_label(item: &Value, index: usize) -> String {
    match item.get("name").and_then(Value::as_str) {
        Some(n)
            if !n.is_empty()
                && n.len() <= 63
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !n.bytes().all(|b| b.is_ascii_digit()) =>
        {
            n.to_owned()
        }
        _ => index.to_string(),
    }
}

/// Collects violations up to [`MAX_VIOLATIONS`].
#[derive(Default)]
struct Sink {
    out: Vec<Violation>,
}

impl Sink {
    fn full(&self) -> bool {
        self.out.len() >= MAX_VIOLATIONS
    }

    fn push(&mut self, check: &'static str, path: String, found: String) {
        if !self.full() {
            self.out.push(Violation {
                check,
                path,
                found: bound(found),
            });
        }
    }

    /// Reports `path.key` as `check` unless `ok(value)`.
    fn require(
        &mut self,
        check: &'static str,
        parent: &str,
        key: &str,
        value: Option<&Value>,
        ok: impl FnOnce(Option<&Value>) -> bool,
    ) {
        if !ok(value) {
            let found = value.map_or_else(|| "unset".to_owned(), describe);
            self.push(check, format!("{parent}.{key}"), found);
        }
    }
}

// ---------------------------------------------------------------------------
// The checks.

/// What container checks need to know about the pod.
struct PodContext {
    level: Level,
    /// `spec.os.name` is `"windows"`: restricted skips Linux-only checks.
    windows: bool,
    /// `spec.hostUsers` is `false`: the pod has its own user namespace.
    user_namespace: bool,
    /// `spec.securityContext.seccompProfile.type` is an allowed type.
    pod_seccomp: bool,
    /// `spec.securityContext.runAsNonRoot` is `true`.
    pod_run_as_non_root: bool,
}

impl PodContext {
    fn restricted(&self) -> bool {
        self.level >= Level::Restricted
    }

    /// Restricted checks that pod-security-admission skips for Windows pods.
    fn restricted_linux(&self) -> bool {
        self.restricted() && !self.windows
    }

    /// Restricted checks that user-namespaced pods are exempt from.
    fn restricted_host_users(&self) -> bool {
        self.restricted() && !self.user_namespace
    }
}

fn check_pod(
    spec: &Map<String, Value>,
    path: &str,
    meta: Option<&Value>,
    meta_path: &str,
    level: Level,
    sink: &mut Sink,
) {
    let pod_sc = get(spec, "securityContext");
    let sc_path = format!("{path}.securityContext");
    let ctx = PodContext {
        level,
        windows: lookup_map(spec, &["os", "name"]).and_then(Value::as_str) == Some("windows"),
        user_namespace: matches!(get(spec, "hostUsers"), Some(Value::Bool(false))),
        pod_seccomp: pod_sc
            .and_then(|sc| lookup(sc, &["seccompProfile", "type"]))
            .is_some_and(|t| is_one_of(Some(t), PROFILE_TYPES)),
        pod_run_as_non_root: matches!(
            pod_sc.and_then(|sc| field(sc, "runAsNonRoot")),
            Some(Value::Bool(true))
        ),
    };

    // hostNamespaces
    for key in ["hostNetwork", "hostPID", "hostIPC"] {
        sink.require("hostNamespaces", path, key, get(spec, key), unset_or_false);
    }

    check_volumes(spec, path, &ctx, sink);

    // Pod-level securityContext.
    match pod_sc {
        None => {}
        Some(Value::Object(sc)) => {
            check_security_context_common(sc, &sc_path, &ctx, sink);
            check_sysctls(sc, &sc_path, sink);
            if ctx.restricted_host_users() {
                let v = get(sc, "runAsNonRoot");
                if v.is_some() {
                    sink.require("runAsNonRoot", &sc_path, "runAsNonRoot", v, |v| {
                        matches!(v, Some(Value::Bool(true)))
                    });
                }
            }
        }
        Some(other) => sink.push("malformed", sc_path, describe(other)),
    }

    check_annotations(meta, meta_path, sink);

    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let list_path = format!("{path}.{list}");
        match get(spec, list) {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    if sink.full() {
                        return;
                    }
                    let item_path = format!("{list_path}[{}]", item_label(item, i));
                    match item {
                        Value::Object(c) => check_container(c, &item_path, &ctx, sink),
                        other => sink.push("malformed", item_path, describe(other)),
                    }
                }
            }
            Some(other) => sink.push("malformed", list_path, describe(other)),
        }
    }
}

fn lookup_map<'a>(m: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    let (first, rest) = keys.split_first()?;
    lookup(get(m, first)?, rest)
}

/// hostPathVolumes (baseline) and restrictedVolumes (restricted).
fn check_volumes(spec: &Map<String, Value>, path: &str, ctx: &PodContext, sink: &mut Sink) {
    let list_path = format!("{path}.volumes");
    let volumes = match get(spec, "volumes") {
        None => return,
        Some(Value::Array(volumes)) => volumes,
        Some(other) => return sink.push("hostPathVolumes", list_path, describe(other)),
    };
    for (i, volume) in volumes.iter().enumerate() {
        if sink.full() {
            return;
        }
        let volume_path = format!("{list_path}[{}]", item_label(volume, i));
        let Value::Object(volume) = volume else {
            sink.push("hostPathVolumes", volume_path, describe(volume));
            continue;
        };
        if let Some(host_path) = get(volume, "hostPath") {
            let found = match field(host_path, "path").and_then(Value::as_str) {
                Some(p) => quote(p),
                None => describe(host_path),
            };
            sink.push("hostPathVolumes", format!("{volume_path}.hostPath"), found);
        }
        if ctx.restricted() {
            // A volume with no source at all is defaulted to emptyDir by the
            // API server. hostPath is reported above.
            for (key, value) in volume {
                if key == "name"
                    || key == "hostPath"
                    || value.is_null()
                    || RESTRICTED_VOLUME_SOURCES.contains(&key.as_str())
                {
                    continue;
                }
                sink.push(
                    "restrictedVolumes",
                    volume_path.clone(),
                    format!("of type {}", quote(truncate(key, 60))),
                );
            }
        }
    }
}

/// sysctls (baseline), pod level only.
fn check_sysctls(sc: &Map<String, Value>, sc_path: &str, sink: &mut Sink) {
    let list_path = format!("{sc_path}.sysctls");
    let sysctls = match get(sc, "sysctls") {
        None => return,
        Some(Value::Array(sysctls)) => sysctls,
        Some(other) => return sink.push("sysctls", list_path, describe(other)),
    };
    for (i, sysctl) in sysctls.iter().enumerate() {
        if sink.full() {
            return;
        }
        let item_path = format!("{list_path}[{i}]");
        match sysctl {
            Value::Object(s) => sink.require("sysctls", &item_path, "name", get(s, "name"), |v| {
                is_one_of(v, SAFE_SYSCTLS)
            }),
            other => sink.push("sysctls", item_path, describe(other)),
        }
    }
}

/// appArmorProfile (baseline): the deprecated per-container annotations.
fn check_annotations(meta: Option<&Value>, meta_path: &str, sink: &mut Sink) {
    let annotations = match meta {
        None => return,
        Some(Value::Object(m)) => match get(m, "annotations") {
            None => return,
            Some(Value::Object(a)) => a,
            Some(other) => {
                let path = format!("{meta_path}.annotations");
                return sink.push("appArmorProfile", path, describe(other));
            }
        },
        Some(other) => return sink.push("appArmorProfile", meta_path.to_owned(), describe(other)),
    };
    for (key, value) in annotations {
        if sink.full() {
            return;
        }
        if !key.starts_with(APPARMOR_ANNOTATION_PREFIX) {
            continue;
        }
        let ok = match value {
            Value::String(v) => {
                v.is_empty() || v == "runtime/default" || v.starts_with("localhost/")
            }
            _ => false,
        };
        if !ok {
            let path = format!(
                "{meta_path}.annotations[{}]",
                truncate(key, 120).escape_debug()
            );
            sink.push("appArmorProfile", path, describe(value));
        }
    }
}

/// The securityContext checks shared by pod and containers: windowsHostProcess,
/// seLinuxOptions, seccompProfile (values), appArmorProfile, runAsUser.
fn check_security_context_common(
    sc: &Map<String, Value>,
    sc_path: &str,
    ctx: &PodContext,
    sink: &mut Sink,
) {
    // windowsHostProcess
    match get(sc, "windowsOptions") {
        None => {}
        Some(Value::Object(w)) => sink.require(
            "windowsHostProcess",
            &format!("{sc_path}.windowsOptions"),
            "hostProcess",
            get(w, "hostProcess"),
            unset_or_false,
        ),
        Some(other) => sink.push(
            "windowsHostProcess",
            format!("{sc_path}.windowsOptions"),
            describe(other),
        ),
    }

    // seLinuxOptions
    match get(sc, "seLinuxOptions") {
        None => {}
        Some(Value::Object(se)) => {
            let se_path = format!("{sc_path}.seLinuxOptions");
            sink.require("seLinuxOptions", &se_path, "type", get(se, "type"), |v| {
                unset_or_empty(v) || is_one_of(v, SELINUX_TYPES)
            });
            for key in ["user", "role"] {
                sink.require(
                    "seLinuxOptions",
                    &se_path,
                    key,
                    get(se, key),
                    unset_or_empty,
                );
            }
        }
        Some(other) => sink.push(
            "seLinuxOptions",
            format!("{sc_path}.seLinuxOptions"),
            describe(other),
        ),
    }

    // seccompProfile (the value; restricted's requirement is per container)
    // and appArmorProfile: when set, the type must be RuntimeDefault or Localhost.
    for (check, key) in [
        ("seccompProfile", "seccompProfile"),
        ("appArmorProfile", "appArmorProfile"),
    ] {
        match get(sc, key) {
            None => {}
            Some(Value::Object(p)) => sink.require(
                check,
                &format!("{sc_path}.{key}"),
                "type",
                get(p, "type"),
                |v| is_one_of(v, PROFILE_TYPES),
            ),
            Some(other) => sink.push(check, format!("{sc_path}.{key}"), describe(other)),
        }
    }

    // runAsUser (restricted): must not be 0.
    if ctx.restricted_host_users() {
        sink.require(
            "runAsUser",
            sc_path,
            "runAsUser",
            get(sc, "runAsUser"),
            |v| v.is_none_or(|v| as_integer(v).is_some_and(|n| n != 0)),
        );
    }
}

/// All container-level checks for one container, init container or
/// ephemeral container.
fn check_container(c: &Map<String, Value>, path: &str, ctx: &PodContext, sink: &mut Sink) {
    let sc_path = format!("{path}.securityContext");
    let empty = Map::new();
    let sc = match get(c, "securityContext") {
        None => &empty,
        Some(Value::Object(sc)) => sc,
        Some(other) => {
            sink.push("malformed", sc_path.clone(), describe(other));
            &empty
        }
    };

    // privileged (baseline)
    sink.require(
        "privileged",
        &sc_path,
        "privileged",
        get(sc, "privileged"),
        unset_or_false,
    );

    check_capabilities(sc, &sc_path, ctx, sink);

    // procMount: baseline relaxes it for user-namespaced pods, restricted does not.
    if ctx.restricted() || !ctx.user_namespace {
        sink.require(
            "procMount",
            &sc_path,
            "procMount",
            get(sc, "procMount"),
            |v| v.is_none() || is_one_of(v, &["Default"]),
        );
    }

    check_security_context_common(sc, &sc_path, ctx, sink);

    // seccompProfile (restricted): set here or validly at pod level.
    if ctx.restricted_linux() && get(sc, "seccompProfile").is_none() && !ctx.pod_seccomp {
        sink.push(
            "seccompProfile",
            format!("{sc_path}.seccompProfile"),
            "unset (and not set at pod level)".to_owned(),
        );
    }

    // allowPrivilegeEscalation (restricted): must be false.
    if ctx.restricted_linux() {
        sink.require(
            "allowPrivilegeEscalation",
            &sc_path,
            "allowPrivilegeEscalation",
            get(sc, "allowPrivilegeEscalation"),
            |v| matches!(v, Some(Value::Bool(false))),
        );
    }

    // runAsNonRoot (restricted): true here, or unset here and true at pod level.
    if ctx.restricted_host_users() {
        match get(sc, "runAsNonRoot") {
            Some(Value::Bool(true)) => {}
            None if ctx.pod_run_as_non_root => {}
            None => sink.push(
                "runAsNonRoot",
                format!("{sc_path}.runAsNonRoot"),
                "unset (and not true at pod level)".to_owned(),
            ),
            Some(other) => sink.push(
                "runAsNonRoot",
                format!("{sc_path}.runAsNonRoot"),
                describe(other),
            ),
        }
    }

    check_ports(c, path, sink);
    check_probes(c, path, sink);
}

/// capabilities: baseline allows adding only the default set; restricted
/// (except Windows pods) requires dropping ALL and adding at most
/// NET_BIND_SERVICE.
fn check_capabilities(sc: &Map<String, Value>, sc_path: &str, ctx: &PodContext, sink: &mut Sink) {
    let caps_path = format!("{sc_path}.capabilities");
    let caps = match get(sc, "capabilities") {
        None => {
            if ctx.restricted_linux() {
                sink.push(
                    "capabilities",
                    format!("{caps_path}.drop"),
                    "unset".to_owned(),
                );
            }
            return;
        }
        Some(Value::Object(caps)) => caps,
        Some(other) => return sink.push("capabilities", caps_path, describe(other)),
    };
    let allowed: &[&str] = if ctx.restricted_linux() {
        &["NET_BIND_SERVICE"]
    } else {
        BASELINE_CAPABILITIES
    };
    match get(caps, "add") {
        None => {}
        Some(Value::Array(add)) => {
            for (i, cap) in add.iter().enumerate() {
                if sink.full() {
                    return;
                }
                if !is_one_of(Some(cap), allowed) {
                    sink.push(
                        "capabilities",
                        format!("{caps_path}.add[{i}]"),
                        describe(cap),
                    );
                }
            }
        }
        Some(other) => sink.push("capabilities", format!("{caps_path}.add"), describe(other)),
    }
    if ctx.restricted_linux() {
        match get(caps, "drop") {
            Some(Value::Array(drop)) if drop.iter().any(|d| d.as_str() == Some("ALL")) => {}
            Some(Value::Array(_)) => sink.push(
                "capabilities",
                format!("{caps_path}.drop"),
                "an array without \"ALL\"".to_owned(),
            ),
            other => sink.require("capabilities", &caps_path, "drop", other, |_| false),
        }
    }
}

/// hostPorts (baseline): every hostPort absent or 0.
fn check_ports(c: &Map<String, Value>, path: &str, sink: &mut Sink) {
    let list_path = format!("{path}.ports");
    let ports = match get(c, "ports") {
        None => return,
        Some(Value::Array(ports)) => ports,
        Some(other) => return sink.push("hostPorts", list_path, describe(other)),
    };
    for (i, port) in ports.iter().enumerate() {
        if sink.full() {
            return;
        }
        let port_path = format!("{list_path}[{i}]");
        match port {
            Value::Object(p) => sink.require(
                "hostPorts",
                &port_path,
                "hostPort",
                get(p, "hostPort"),
                |v| v.is_none_or(|v| as_integer(v) == Some(0)),
            ),
            other => sink.push("hostPorts", port_path, describe(other)),
        }
    }
}

/// hostProbesAndHostLifecycle (baseline): no `host` in probes' and lifecycle
/// handlers' httpGet / tcpSocket.
fn check_probes(c: &Map<String, Value>, path: &str, sink: &mut Sink) {
    const CHECK: &str = "hostProbesAndHostLifecycle";
    let mut handlers: Vec<(String, &Value)> = Vec::new();
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(h) = get(c, probe) {
            handlers.push((format!("{path}.{probe}"), h));
        }
    }
    match get(c, "lifecycle") {
        None => {}
        Some(Value::Object(lifecycle)) => {
            for hook in ["postStart", "preStop"] {
                if let Some(h) = get(lifecycle, hook) {
                    handlers.push((format!("{path}.lifecycle.{hook}"), h));
                }
            }
        }
        Some(other) => sink.push(CHECK, format!("{path}.lifecycle"), describe(other)),
    }
    for (handler_path, handler) in handlers {
        let Value::Object(handler) = handler else {
            sink.push(CHECK, handler_path, describe(handler));
            continue;
        };
        for action in ["httpGet", "tcpSocket"] {
            match get(handler, action) {
                None => {}
                Some(Value::Object(a)) => sink.require(
                    CHECK,
                    &format!("{handler_path}.{action}"),
                    "host",
                    get(a, "host"),
                    unset_or_empty,
                ),
                Some(other) => {
                    sink.push(CHECK, format!("{handler_path}.{action}"), describe(other))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A Pod meeting restricted.
    fn compliant_pod() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "securityContext": {
                    "runAsNonRoot": true,
                    "seccompProfile": {"type": "RuntimeDefault"}
                },
                "containers": [{
                    "name": "app",
                    "image": "example/app:1",
                    "ports": [{"containerPort": 8080}],
                    "securityContext": {
                        "allowPrivilegeEscalation": false,
                        "capabilities": {"drop": ["ALL"]}
                    }
                }],
                "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}]
            }
        })
    }

    /// Sets the field at JSON pointer `pointer` (creating objects on the way).
    fn set(v: &mut Value, pointer: &str, new: Value) {
        let mut cur = v;
        for key in pointer.trim_start_matches('/').split('/') {
            let key = key.replace("~1", "/").replace("~0", "~");
            if let Value::Array(a) = cur {
                cur = &mut a[key.parse::<usize>().unwrap()];
            } else {
                if !cur.is_object() {
                    *cur = json!({});
                }
                cur = cur
                    .as_object_mut()
                    .unwrap()
                    .entry(key)
                    .or_insert(Value::Null);
            }
        }
        *cur = new;
    }

    fn with(pointer: &str, new: Value) -> Value {
        let mut v = compliant_pod();
        set(&mut v, pointer, new);
        v
    }

    fn names(v: &Value, level: Level) -> Vec<&'static str> {
        let mut n: Vec<_> = check(v, level).into_iter().map(|v| v.check).collect();
        n.dedup();
        n
    }

    /// `v` fails `level` with exactly `check_name`, and passes the level below.
    fn fails_only_at(v: &Value, level: Level, check_name: &str) {
        let found = check(v, level);
        assert!(!found.is_empty(), "expected {check_name} at {level}");
        assert!(
            found.iter().all(|f| f.check == check_name),
            "expected only {check_name} at {level}, got {found:?}"
        );
        let below = match level {
            Level::Restricted => Level::Baseline,
            _ => Level::Privileged,
        };
        assert_eq!(check(v, below), vec![], "should pass {below}");
    }

    #[test]
    fn level_parse_display_order_default_serde() {
        for l in [Level::Privileged, Level::Baseline, Level::Restricted] {
            assert_eq!(l.as_str().parse::<Level>(), Ok(l));
            assert_eq!(l.to_string(), l.as_str());
            assert_eq!(serde_json::to_value(l).unwrap(), json!(l.as_str()));
            assert_eq!(
                serde_json::from_value::<Level>(json!(l.as_str())).unwrap(),
                l
            );
        }
        assert!(Level::Privileged < Level::Baseline && Level::Baseline < Level::Restricted);
        assert_eq!(Level::default(), Level::Baseline);
        let err = "Restricted".parse::<Level>().unwrap_err().to_string();
        for name in ["privileged", "baseline", "restricted", "Restricted"] {
            assert!(err.contains(name), "{err}");
        }
        let long = "x".repeat(10_000).parse::<Level>().unwrap_err().to_string();
        assert!(long.len() < 300);
    }

    #[test]
    fn violation_display() {
        let v = with("/spec/hostPID", json!(true));
        let found = check(&v, Level::Baseline);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].to_string(), "hostNamespaces: spec.hostPID is true");
    }

    #[test]
    fn compliant_pod_passes_every_level() {
        for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
            assert_eq!(check(&compliant_pod(), level), vec![]);
        }
    }

    #[test]
    fn minimal_restricted_deployment_passes_restricted() {
        let d = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "securityContext": {
                            "runAsNonRoot": true,
                            "seccompProfile": {"type": "RuntimeDefault"}
                        },
                        "containers": [{
                            "name": "web",
                            "image": "example/web:1",
                            "securityContext": {
                                "allowPrivilegeEscalation": false,
                                "capabilities": {"drop": ["ALL"]}
                            }
                        }]
                    }
                }
            }
        });
        assert_eq!(check(&d, Level::Restricted), vec![]);
        // And an empty securityContext fails restricted, naming where.
        let mut bare = d.clone();
        set(&mut bare, "/spec/template/spec/securityContext", json!({}));
        set(
            &mut bare,
            "/spec/template/spec/containers/0/securityContext",
            json!({}),
        );
        assert_eq!(
            names(&bare, Level::Restricted),
            vec![
                "capabilities",
                "seccompProfile",
                "allowPrivilegeEscalation",
                "runAsNonRoot"
            ]
        );
        assert!(check(&bare, Level::Restricted).iter().all(|v| {
            v.path
                .starts_with("spec.template.spec.containers[web].securityContext.")
        }));
        assert_eq!(check(&bare, Level::Baseline), vec![]);
    }

    #[test]
    fn privileged_pod_fails_baseline_with_all_four_named() {
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "root"},
            "spec": {
                "hostPID": true,
                "hostNetwork": true,
                "containers": [{
                    "name": "shell",
                    "image": "busybox",
                    "securityContext": {"privileged": true},
                    "volumeMounts": [{"name": "host", "mountPath": "/host"}]
                }],
                "volumes": [{"name": "host", "hostPath": {"path": "/"}}]
            }
        });
        let found: Vec<String> = check(&pod, Level::Baseline)
            .iter()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(
            found,
            vec![
                "hostNamespaces: spec.hostNetwork is true",
                "hostNamespaces: spec.hostPID is true",
                "hostPathVolumes: spec.volumes[host].hostPath is \"/\"",
                "privileged: spec.containers[shell].securityContext.privileged is true",
            ]
        );
        assert_eq!(check(&pod, Level::Privileged), vec![]);
        let restricted = names(&pod, Level::Restricted);
        for name in [
            "hostNamespaces",
            "hostPathVolumes",
            "privileged",
            "runAsNonRoot",
        ] {
            assert!(restricted.contains(&name), "{restricted:?}");
        }
        // hostPath is reported once, not also as a restricted volume type.
        assert!(!restricted.contains(&"restrictedVolumes"));
    }

    #[test]
    fn host_namespaces() {
        for key in ["hostNetwork", "hostPID", "hostIPC"] {
            let v = with(&format!("/spec/{key}"), json!(true));
            fails_only_at(&v, Level::Baseline, "hostNamespaces");
            assert_eq!(
                check(
                    &with(&format!("/spec/{key}"), json!(false)),
                    Level::Restricted
                ),
                vec![]
            );
        }
    }

    #[test]
    fn privileged_container() {
        let v = with("/spec/containers/0/securityContext/privileged", json!(true));
        fails_only_at(&v, Level::Baseline, "privileged");
        let v = with(
            "/spec/containers/0/securityContext/privileged",
            json!(false),
        );
        assert_eq!(check(&v, Level::Restricted), vec![]);
    }

    #[test]
    fn capabilities_baseline() {
        for cap in ["SYS_ADMIN", "NET_RAW", "ALL"] {
            let v = with(
                "/spec/containers/0/securityContext/capabilities/add",
                json!([cap]),
            );
            fails_only_at(&v, Level::Baseline, "capabilities");
        }
        // A default capability passes baseline but not restricted.
        let v = with(
            "/spec/containers/0/securityContext/capabilities/add",
            json!(["CHOWN"]),
        );
        fails_only_at(&v, Level::Restricted, "capabilities");
        let found = check(&v, Level::Restricted);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].path,
            "spec.containers[app].securityContext.capabilities.add[0]"
        );
        // NET_BIND_SERVICE is fine everywhere.
        let v = with(
            "/spec/containers/0/securityContext/capabilities/add",
            json!(["NET_BIND_SERVICE"]),
        );
        assert_eq!(check(&v, Level::Restricted), vec![]);
    }

    #[test]
    fn capabilities_restricted_drop_all() {
        for drop in [json!(["NET_RAW"]), json!([]), json!("ALL"), json!(["all"])] {
            let v = with("/spec/containers/0/securityContext/capabilities/drop", drop);
            fails_only_at(&v, Level::Restricted, "capabilities");
        }
        let v = with(
            "/spec/containers/0/securityContext/capabilities",
            Value::Null,
        );
        fails_only_at(&v, Level::Restricted, "capabilities");
    }

    #[test]
    fn host_path_volumes() {
        let v = with(
            "/spec/volumes/0",
            json!({"name": "h", "hostPath": {"path": "/var/run"}}),
        );
        fails_only_at(&v, Level::Baseline, "hostPathVolumes");
        // Even alongside an allowed source.
        let v = with("/spec/volumes/0/hostPath", json!({"path": "/"}));
        assert_eq!(names(&v, Level::Restricted), vec!["hostPathVolumes"]);
    }

    #[test]
    fn restricted_volumes() {
        for source in ["nfs", "gitRepo", "awsElasticBlockStore", "somethingNew"] {
            let v = with("/spec/volumes/0", json!({"name": "d", source: {"x": 1}}));
            fails_only_at(&v, Level::Restricted, "restrictedVolumes");
        }
        for source in RESTRICTED_VOLUME_SOURCES {
            let v = with("/spec/volumes/0", json!({"name": "d", *source: {}}));
            assert_eq!(check(&v, Level::Restricted), vec![], "{source}");
        }
        // No source: defaulted to emptyDir.
        let v = with("/spec/volumes/0", json!({"name": "d"}));
        assert_eq!(check(&v, Level::Restricted), vec![]);
        let v = with("/spec/volumes/0", json!({"name": "d", "nfs": {}}));
        assert_eq!(
            check(&v, Level::Restricted)[0].to_string(),
            "restrictedVolumes: spec.volumes[d] is of type \"nfs\""
        );
    }

    #[test]
    fn host_ports() {
        let v = with("/spec/containers/0/ports/0/hostPort", json!(8080));
        fails_only_at(&v, Level::Baseline, "hostPorts");
        assert_eq!(check(&v, Level::Baseline)[0].found, "8080");
        let v = with("/spec/containers/0/ports/0/hostPort", json!(0));
        assert_eq!(check(&v, Level::Restricted), vec![]);
    }

    #[test]
    fn host_probes_and_lifecycle() {
        for (pointer, host) in [
            ("/spec/containers/0/livenessProbe/httpGet", "10.0.0.1"),
            (
                "/spec/containers/0/readinessProbe/tcpSocket",
                "metadata.internal",
            ),
            ("/spec/containers/0/startupProbe/httpGet", "localhost"),
            ("/spec/containers/0/lifecycle/postStart/httpGet", "1.2.3.4"),
            ("/spec/containers/0/lifecycle/preStop/tcpSocket", "1.2.3.4"),
        ] {
            let v = with(pointer, json!({"port": 80, "host": host}));
            fails_only_at(&v, Level::Baseline, "hostProbesAndHostLifecycle");
            let v = with(pointer, json!({"port": 80, "host": ""}));
            assert_eq!(check(&v, Level::Restricted), vec![]);
        }
    }

    #[test]
    fn app_armor_profile() {
        for pointer in [
            "/spec/securityContext/appArmorProfile",
            "/spec/containers/0/securityContext/appArmorProfile",
        ] {
            let v = with(pointer, json!({"type": "Unconfined"}));
            fails_only_at(&v, Level::Baseline, "appArmorProfile");
            let v = with(pointer, json!({}));
            fails_only_at(&v, Level::Baseline, "appArmorProfile");
            let v = with(
                pointer,
                json!({"type": "Localhost", "localhostProfile": "p"}),
            );
            assert_eq!(check(&v, Level::Restricted), vec![]);
        }
        let key = "container.apparmor.security.beta.kubernetes.io~1app";
        let v = with(&format!("/metadata/annotations/{key}"), json!("unconfined"));
        fails_only_at(&v, Level::Baseline, "appArmorProfile");
        assert_eq!(
            check(&v, Level::Baseline)[0].path,
            "metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]"
        );
        for ok in ["runtime/default", "localhost/mine", ""] {
            let v = with(&format!("/metadata/annotations/{key}"), json!(ok));
            assert_eq!(check(&v, Level::Restricted), vec![], "{ok}");
        }
    }

    #[test]
    fn se_linux_options() {
        for pointer in [
            "/spec/securityContext/seLinuxOptions",
            "/spec/containers/0/securityContext/seLinuxOptions",
        ] {
            for bad in [
                json!({"type": "spc_t"}),
                json!({"user": "system_u"}),
                json!({"role": "sysadm_r"}),
            ] {
                fails_only_at(&with(pointer, bad), Level::Baseline, "seLinuxOptions");
            }
            for ok in [
                json!({"type": "container_engine_t", "level": "s0:c1,c2"}),
                json!({"type": "", "user": ""}),
                json!({}),
            ] {
                assert_eq!(check(&with(pointer, ok), Level::Restricted), vec![]);
            }
        }
    }

    #[test]
    fn proc_mount() {
        let v = with(
            "/spec/containers/0/securityContext/procMount",
            json!("Unmasked"),
        );
        fails_only_at(&v, Level::Baseline, "procMount");
        // In a user namespace baseline allows it, restricted does not.
        let mut v = v;
        set(&mut v, "/spec/hostUsers", json!(false));
        fails_only_at(&v, Level::Restricted, "procMount");
        let v = with(
            "/spec/containers/0/securityContext/procMount",
            json!("Default"),
        );
        assert_eq!(check(&v, Level::Restricted), vec![]);
    }

    #[test]
    fn seccomp_profile() {
        for pointer in [
            "/spec/securityContext/seccompProfile",
            "/spec/containers/0/securityContext/seccompProfile",
        ] {
            let v = with(pointer, json!({"type": "Unconfined"}));
            fails_only_at(&v, Level::Baseline, "seccompProfile");
        }
        // Restricted requires it set, at pod or container level.
        let v = with("/spec/securityContext/seccompProfile", Value::Null);
        fails_only_at(&v, Level::Restricted, "seccompProfile");
        let mut v = v;
        set(
            &mut v,
            "/spec/containers/0/securityContext/seccompProfile",
            json!({"type": "Localhost", "localhostProfile": "p.json"}),
        );
        assert_eq!(check(&v, Level::Restricted), vec![]);
    }

    #[test]
    fn sysctls() {
        let v = with(
            "/spec/securityContext/sysctls",
            json!([{"name": "net.ipv4.tcp_notsent_lowat", "value": "1"}, {"name": "kernel.msgmax", "value": "1"}]),
        );
        fails_only_at(&v, Level::Baseline, "sysctls");
        let found = check(&v, Level::Baseline);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "spec.securityContext.sysctls[1].name");
        for name in SAFE_SYSCTLS {
            let v = with(
                "/spec/securityContext/sysctls",
                json!([{"name": name, "value": "1"}]),
            );
            assert_eq!(check(&v, Level::Restricted), vec![]);
        }
    }

    #[test]
    fn windows_host_process() {
        for pointer in [
            "/spec/securityContext/windowsOptions/hostProcess",
            "/spec/containers/0/securityContext/windowsOptions/hostProcess",
        ] {
            fails_only_at(
                &with(pointer, json!(true)),
                Level::Baseline,
                "windowsHostProcess",
            );
            assert_eq!(
                check(&with(pointer, json!(false)), Level::Restricted),
                vec![]
            );
        }
    }

    #[test]
    fn allow_privilege_escalation() {
        let p = "/spec/containers/0/securityContext/allowPrivilegeEscalation";
        fails_only_at(
            &with(p, json!(true)),
            Level::Restricted,
            "allowPrivilegeEscalation",
        );
        fails_only_at(
            &with(p, Value::Null),
            Level::Restricted,
            "allowPrivilegeEscalation",
        );
    }

    #[test]
    fn run_as_non_root() {
        let p = "/spec/containers/0/securityContext/runAsNonRoot";
        fails_only_at(&with(p, json!(false)), Level::Restricted, "runAsNonRoot");
        fails_only_at(
            &with("/spec/securityContext/runAsNonRoot", json!(false)),
            Level::Restricted,
            "runAsNonRoot",
        );
        let v = with("/spec/securityContext/runAsNonRoot", Value::Null);
        fails_only_at(&v, Level::Restricted, "runAsNonRoot");
        // Set per container instead of per pod.
        let mut ok = v.clone();
        set(&mut ok, p, json!(true));
        assert_eq!(check(&ok, Level::Restricted), vec![]);
        // User-namespaced pods are exempt.
        let mut userns = v;
        set(&mut userns, "/spec/hostUsers", json!(false));
        assert_eq!(check(&userns, Level::Restricted), vec![]);
    }

    #[test]
    fn run_as_user() {
        for p in [
            "/spec/securityContext/runAsUser",
            "/spec/containers/0/securityContext/runAsUser",
        ] {
            fails_only_at(&with(p, json!(0)), Level::Restricted, "runAsUser");
            assert_eq!(check(&with(p, json!(1000)), Level::Restricted), vec![]);
        }
        let mut v = with("/spec/securityContext/runAsUser", json!(0));
        set(&mut v, "/spec/hostUsers", json!(false));
        assert_eq!(check(&v, Level::Restricted), vec![]);
    }

    #[test]
    fn windows_pod_skips_linux_only_restricted_checks() {
        let v = json!({
            "apiVersion": "v1", "kind": "Pod",
            "spec": {
                "os": {"name": "windows"},
                "securityContext": {"runAsNonRoot": true},
                "containers": [{"name": "win", "image": "w"}]
            }
        });
        assert_eq!(check(&v, Level::Restricted), vec![]);
        // Baseline's capability list still applies.
        let mut v = v;
        set(
            &mut v,
            "/spec/containers/0/securityContext/capabilities/add",
            json!(["SYS_ADMIN"]),
        );
        assert_eq!(names(&v, Level::Restricted), vec!["capabilities"]);
    }

    #[test]
    fn cron_job_is_reached() {
        let cj = json!({
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
                "metadata": {"annotations": {
                    "container.apparmor.security.beta.kubernetes.io/job": "unconfined"
                }},
                "spec": {
                    "restartPolicy": "Never",
                    "hostIPC": true,
                    "containers": [{"name": "job", "image": "j"}]
                }
            }}}}
        });
        let found: Vec<String> = check(&cj, Level::Baseline)
            .iter()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(
            found,
            vec![
                "hostNamespaces: spec.jobTemplate.spec.template.spec.hostIPC is true",
                "appArmorProfile: spec.jobTemplate.spec.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/job] is \"unconfined\"",
            ]
        );
    }

    #[test]
    fn init_and_ephemeral_containers_are_reached() {
        for list in ["initContainers", "ephemeralContainers"] {
            let mut v = compliant_pod();
            let mut extra = v["spec"]["containers"][0].clone();
            extra["name"] = json!("extra");
            extra["securityContext"]["privileged"] = json!(true);
            set(&mut v, &format!("/spec/{list}"), json!([extra]));
            let found = check(&v, Level::Baseline);
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!(
                found[0].path,
                format!("spec.{list}[extra].securityContext.privileged")
            );
            // And restricted fields are required there too.
            set(
                &mut v,
                &format!("/spec/{list}/0/securityContext"),
                json!({}),
            );
            assert!(
                check(&v, Level::Restricted)
                    .iter()
                    .any(|f| f.check == "allowPrivilegeEscalation"
                        && f.path.starts_with(&format!("spec.{list}[extra]")))
            );
        }
    }

    #[test]
    fn pod_specs_by_kind_and_group() {
        let spec = json!({"containers": []});
        let cases = [
            ("v1", "Pod", json!({"spec": spec}), Some("spec")),
            (
                "v1",
                "PodTemplate",
                json!({"template": {"spec": spec}}),
                Some("template.spec"),
            ),
            (
                "v1",
                "ReplicationController",
                json!({"spec": {"template": {"spec": spec}}}),
                Some("spec.template.spec"),
            ),
            (
                "apps/v1",
                "Deployment",
                json!({"spec": {"template": {"spec": spec}}}),
                Some("spec.template.spec"),
            ),
            (
                "apps/v1",
                "StatefulSet",
                json!({"spec": {"template": {"spec": spec}}}),
                Some("spec.template.spec"),
            ),
            (
                "apps/v1",
                "DaemonSet",
                json!({"spec": {"template": {"spec": spec}}}),
                Some("spec.template.spec"),
            ),
            (
                "apps/v1",
                "ReplicaSet",
                json!({"spec": {"template": {"spec": spec}}}),
                Some("spec.template.spec"),
            ),
            (
                "batch/v1",
                "Job",
                json!({"spec": {"template": {"spec": spec}}}),
                Some("spec.template.spec"),
            ),
            (
                "batch/v1",
                "CronJob",
                json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": spec}}}}}),
                Some("spec.jobTemplate.spec.template.spec"),
            ),
            // Same kind, other group: not a workload we know.
            (
                "example.com/v1",
                "Deployment",
                json!({"spec": {"template": {"spec": spec}}}),
                None,
            ),
            ("apps/v1", "Pod", json!({"spec": spec}), None),
            (
                "batch/v1",
                "Deployment",
                json!({"spec": {"template": {"spec": spec}}}),
                None,
            ),
            ("v1", "ConfigMap", json!({"data": {"spec": "x"}}), None),
        ];
        for (api_version, kind, mut object, expected) in cases {
            object["apiVersion"] = json!(api_version);
            object["kind"] = json!(kind);
            let got: Vec<(String, &Value)> = pod_specs(&object);
            match expected {
                Some(path) => assert_eq!(got, vec![(path.to_owned(), &spec)], "{kind}"),
                None => assert!(got.is_empty(), "{api_version} {kind}"),
            }
        }
    }

    #[test]
    fn config_map_has_no_pod_specs() {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"},
            "spec": {"hostPID": true, "containers": [{"securityContext": {"privileged": true}}]}
        });
        assert!(pod_specs(&cm).is_empty());
        assert_eq!(check(&cm, Level::Restricted), vec![]);
    }

    #[test]
    fn wrong_typed_security_fields_fail() {
        let cases = [
            (
                "/spec/hostPID",
                json!("true"),
                Level::Baseline,
                "hostNamespaces",
            ),
            (
                "/spec/hostNetwork",
                json!(1),
                Level::Baseline,
                "hostNamespaces",
            ),
            (
                "/spec/containers/0/securityContext/privileged",
                json!("yes"),
                Level::Baseline,
                "privileged",
            ),
            (
                "/spec/containers/0/securityContext/privileged",
                json!("false"),
                Level::Baseline,
                "privileged",
            ),
            (
                "/spec/containers/0/securityContext/capabilities",
                json!("ALL"),
                Level::Baseline,
                "capabilities",
            ),
            (
                "/spec/containers/0/securityContext/capabilities/add",
                json!("SYS_ADMIN"),
                Level::Baseline,
                "capabilities",
            ),
            (
                "/spec/containers/0/securityContext/capabilities/add",
                json!([7]),
                Level::Baseline,
                "capabilities",
            ),
            (
                "/spec/containers/0/ports/0/hostPort",
                json!("80"),
                Level::Baseline,
                "hostPorts",
            ),
            (
                "/spec/containers/0/ports/0/hostPort",
                json!(0.5),
                Level::Baseline,
                "hostPorts",
            ),
            (
                "/spec/containers/0/ports",
                json!({"hostPort": 80}),
                Level::Baseline,
                "hostPorts",
            ),
            (
                "/spec/volumes",
                json!({"hostPath": {}}),
                Level::Baseline,
                "hostPathVolumes",
            ),
            (
                "/spec/volumes/0",
                json!("hostPath"),
                Level::Baseline,
                "hostPathVolumes",
            ),
            (
                "/spec/securityContext/sysctls",
                json!("kernel.msgmax"),
                Level::Baseline,
                "sysctls",
            ),
            (
                "/spec/securityContext/sysctls/0",
                json!({"name": 5}),
                Level::Baseline,
                "sysctls",
            ),
            (
                "/spec/securityContext/seLinuxOptions",
                json!("spc_t"),
                Level::Baseline,
                "seLinuxOptions",
            ),
            (
                "/spec/securityContext/seccompProfile",
                json!("RuntimeDefault"),
                Level::Baseline,
                "seccompProfile",
            ),
            (
                "/spec/securityContext/windowsOptions/hostProcess",
                json!("no"),
                Level::Baseline,
                "windowsHostProcess",
            ),
            (
                "/spec/containers/0/securityContext/procMount",
                json!(0),
                Level::Baseline,
                "procMount",
            ),
            (
                "/spec/containers/0/livenessProbe",
                json!("x"),
                Level::Baseline,
                "hostProbesAndHostLifecycle",
            ),
            (
                "/metadata/annotations",
                json!("x"),
                Level::Baseline,
                "appArmorProfile",
            ),
            (
                "/spec/containers",
                json!({"name": "app"}),
                Level::Baseline,
                "malformed",
            ),
            (
                "/spec/containers/0/securityContext",
                json!("privileged"),
                Level::Baseline,
                "malformed",
            ),
            (
                "/spec/securityContext",
                json!([]),
                Level::Baseline,
                "malformed",
            ),
            ("/spec", json!("pod"), Level::Baseline, "malformed"),
            ("/spec", Value::Null, Level::Baseline, "malformed"),
            (
                "/spec/containers/0/securityContext/allowPrivilegeEscalation",
                json!("false"),
                Level::Restricted,
                "allowPrivilegeEscalation",
            ),
            (
                "/spec/containers/0/securityContext/runAsNonRoot",
                json!("true"),
                Level::Restricted,
                "runAsNonRoot",
            ),
            (
                "/spec/securityContext/runAsUser",
                json!("1000"),
                Level::Restricted,
                "runAsUser",
            ),
            (
                "/spec/securityContext/runAsUser",
                json!(0.0),
                Level::Restricted,
                "runAsUser",
            ),
        ];
        for (pointer, value, level, name) in cases {
            let v = with(pointer, value.clone());
            let found = names(&v, level);
            assert!(found.contains(&name), "{pointer}={value}: {found:?}");
            assert_eq!(check(&v, Level::Privileged), vec![]);
        }
        // Wrong-typed fields that only relax a rule do not relax it.
        let v = with("/spec/hostUsers", json!("false"));
        let mut v = v;
        set(
            &mut v,
            "/spec/containers/0/securityContext/runAsUser",
            json!(0),
        );
        assert_eq!(names(&v, Level::Restricted), vec!["runAsUser"]);
    }

    #[test]
    fn hostile_shapes_do_not_panic() {
        let weird = [
            Value::Null,
            json!(true),
            json!(-1),
            json!(1.5e300),
            json!(u64::MAX),
            json!("é".repeat(500)),
            json!([null, 1, "x", [], {}]),
            json!({"": {"": null}}),
        ];
        let pointers = [
            "",
            "/apiVersion",
            "/kind",
            "/metadata",
            "/metadata/annotations/container.apparmor.security.beta.kubernetes.io~1app",
            "/spec",
            "/spec/os",
            "/spec/os/name",
            "/spec/hostUsers",
            "/spec/volumes",
            "/spec/volumes/0",
            "/spec/volumes/0/hostPath",
            "/spec/securityContext",
            "/spec/securityContext/sysctls",
            "/spec/securityContext/seccompProfile",
            "/spec/securityContext/seccompProfile/type",
            "/spec/containers",
            "/spec/containers/0",
            "/spec/containers/0/name",
            "/spec/containers/0/ports",
            "/spec/containers/0/ports/0",
            "/spec/containers/0/lifecycle",
            "/spec/containers/0/lifecycle/preStop/httpGet",
            "/spec/containers/0/readinessProbe/tcpSocket/host",
            "/spec/containers/0/securityContext",
            "/spec/containers/0/securityContext/capabilities",
            "/spec/containers/0/securityContext/capabilities/drop",
            "/spec/containers/0/securityContext/seLinuxOptions/type",
            "/spec/containers/0/securityContext/windowsOptions",
            "/spec/containers/0/securityContext/appArmorProfile",
        ];
        for pointer in pointers {
            for value in &weird {
                let v = if pointer.is_empty() {
                    value.clone()
                } else {
                    with(pointer, value.clone())
                };
                for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
                    for f in check(&v, level) {
                        assert!(f.found.len() <= MAX_FOUND, "{f:?}");
                        assert!(f.path.len() <= 300, "{f:?}");
                    }
                }
                let _ = pod_specs(&v);
            }
        }
    }

    #[test]
    fn found_and_path_are_bounded() {
        let long = "ü".repeat(10_000);
        let v = with("/spec/securityContext/sysctls", json!([{"name": long}]));
        let found = check(&v, Level::Baseline);
        assert_eq!(found.len(), 1);
        assert!(found[0].found.len() <= MAX_FOUND);
        assert!(found[0].found.ends_with('…'));
        // A container name that is no Kubernetes name is shown by index.
        let v = with("/spec/containers/0/name", json!(format!("a]{long}")));
        let mut v = v;
        set(
            &mut v,
            "/spec/containers/0/securityContext/privileged",
            json!(true),
        );
        assert_eq!(
            check(&v, Level::Baseline)[0].path,
            "spec.containers[0].securityContext.privileged"
        );
    }

    #[test]
    fn violations_are_capped() {
        let container = json!({"name": "c", "securityContext": {"privileged": true}});
        let v = with("/spec/containers", Value::Array(vec![container; 100_000]));
        let found = check(&v, Level::Restricted);
        assert_eq!(found.len(), MAX_VIOLATIONS);
    }
}
