//! A plugin built against `capstan:plugin@0.2.0` with wit-bindgen alone (no
//! SDK), for the host's tests: it reports what it is handed, so that a
//! test can see the sections it declared and no others, the chart's
//! namespace and user overrides, and each hook's context and state.
//!
//! - `overrides` for chart `web` answers `{"seen": {...}}` with the call
//!   and the facts it got; the user override `disableWeb: true` disables
//!   the chart; `askSecret: true` asks for a generated password at
//!   `auth.password` (without asking to generate it with `skipGenerate:
//!   true`), and `askExisting: NS/NAME/KEY` for a Secret's key at
//!   `auth.existing`.
//! - every pre hook leaves the state `HOOK VERSION MODE OPERATION`; a post
//!   hook vetoes with what it was handed when the user overrides of `web`
//!   hold `vetoPost: true` (or `vetoPost: HOOK`, that hook only, spelled
//!   `postrecover`); a pre hook asks for a `delete` when they hold
//!   `askDelete: true`.
//! - `post-abort` asks for another apply, with the reason `HOOK VERSION
//!   MODE OPERATION`; `evaluate-reapply` does when the user overrides of
//!   `web` hold `askReapply: true`, with the reason `KIND [K=V ...] MODE
//!   OPERATION` from the trigger it was handed.
//! - `semantic-check` vetoes when the user overrides of `web` hold
//!   `vetoCheck: true`, saying who started the operation (`held by
//!   vetoCheck (auto)`).
//! - `pre-apply` asks for the actions the user overrides of `web` list:
//!   `ensure` (a list of objects), `delete` (a list of `{apiVersion,
//!   kind, namespace, name}`), `restart` (a list of `{kind, namespace,
//!   name}`), `mirror` (a list of `{kind, from, to}`, `NS/NAME`
//!   each), `patch` (`{chart, patch}`), `patchBytes` (a patch of chart
//!   `web` about that many bytes long), `requestReapply` (a reason),
//!   `reasonBytes` (a `request-reapply` reason that many bytes long) and
//!   `observe` (a list of `{apiVersion, kind, namespace, name}`), and
//!   `ensureDeep` (a ConfigMap nested that many objects deep).
//! - `status` answers `failed` with a reason `statusFailedBytes` long when
//!   the user overrides of `web` hold it, else `ready`.
//! - `askSecret` generates the secret `generateName` (default `db`).
//!
//! Together these make it the hostile plugin of the policy's tests: it
//! asks for whatever its chart's user overrides say, from every hook.

// The bindings that `export!` expands here are wit-bindgen's ABI glue
// (`unsafe` and `export_name`); this crate writes no unsafe code itself.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../../wit/v0.2",
    world: "capstan:plugin/override-plugin",
    generate_all,
});

use capstan::plugin::types::*;
use serde_json::{Value, json};

struct ContractV2;

fn flag(user: &str, key: &str) -> bool {
    serde_json::from_str::<Value>(user)
        .ok()
        .and_then(|v| v.get(key).and_then(Value::as_bool))
        .unwrap_or(false)
}

/// The last segment of a wit-bindgen enum's `Debug` (`Hook::PreApply`
/// -> `preapply`), lower case.
fn name(debug: impl std::fmt::Debug) -> String {
    let text = format!("{debug:?}");
    text.rsplit("::").next().unwrap_or(&text).to_lowercase()
}

fn web_overrides(call: &HookCall) -> String {
    call.user_overrides
        .iter()
        .find(|c| c.chart == "web")
        .map(|c| c.values.clone())
        .unwrap_or_else(|| "{}".into())
}

impl Guest for ContractV2 {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "contract-v2".into(),
            version: "0.2.0".into(),
            charts: vec!["web".into()],
            hooks: vec![
                Hook::SemanticCheck,
                Hook::PreApply,
                Hook::PostApply,
                Hook::PreUpdate,
                Hook::PostUpdate,
                Hook::PreRemove,
                Hook::PostRemove,
                Hook::PreRecover,
                Hook::PostRecover,
                Hook::PostAbort,
                Hook::EvaluateReapply,
                Hook::Status,
            ],
            decides_workloads: false,
            facts: vec![
                FactsSection::System,
                FactsSection::Hosts,
                FactsSection::Storage,
            ],
        }
    }

    fn overrides(call: ChartCall, facts: Facts) -> Result<ChartAnswer, PluginError> {
        let user: Value = serde_json::from_str(&call.user_overrides)
            .map_err(|e| PluginError::InvalidFacts(format!("user overrides: {e}")))?;
        let mut sections = Vec::new();
        if facts.system.is_some() {
            sections.push("system");
        }
        if facts.hosts.is_some() {
            sections.push("hosts");
        }
        if facts.networks.is_some() {
            sections.push("networks");
        }
        if facts.storage.is_some() {
            sections.push("storage");
        }
        if facts.service_parameters.is_some() {
            sections.push("service-parameters");
        }
        if facts.cluster.is_some() {
            sections.push("cluster");
        }
        let hosts: Vec<String> = facts
            .hosts
            .iter()
            .flatten()
            .map(|h| {
                format!(
                    "{}:{}/{}/{}",
                    h.name,
                    name(h.administrative),
                    name(h.operational),
                    name(h.availability)
                )
            })
            .collect();
        let storage: Vec<String> = facts
            .storage
            .iter()
            .flatten()
            .map(|b| format!("{}:{}", b.name, name(b.health)))
            .collect();
        let system = facts
            .system
            .as_ref()
            .map(|s| json!({"mode": name(s.mode), "type": name(s.system_type), "name": s.name}));
        let values = json!({
            "seen": {
                "app": call.app.name,
                "version": call.app.version,
                "chart": call.chart,
                "namespace": call.namespace,
                "user": user,
                "sections": sections,
                "system": system,
                "hosts": hosts,
                "storage": storage,
            }
        });
        let mut secret_values = Vec::new();
        let mut generate = Vec::new();
        if user.get("askSecret").and_then(Value::as_bool) == Some(true) {
            let secret = user
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or("db")
                .to_string();
            secret_values.push(SecretValue {
                path: "auth.password".into(),
                source: SecretSource::Generated(GeneratedKey {
                    name: secret.clone(),
                    key: "password".into(),
                }),
            });
            if user.get("skipGenerate").and_then(Value::as_bool) != Some(true) {
                generate.push(GeneratedSecret {
                    name: secret,
                    shape: SecretShape::Password(PasswordShape {
                        length: 24,
                        charset: Charset::Alphanumeric,
                    }),
                });
            }
        }
        if let Some(existing) = user.get("askExisting").and_then(Value::as_str) {
            let mut parts = existing.splitn(3, '/');
            let (namespace, name, key) = (
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
            );
            secret_values.push(SecretValue {
                path: "auth.existing".into(),
                source: SecretSource::Existing(SecretKeyRef {
                    namespace: namespace.into(),
                    name: name.into(),
                    key: key.into(),
                }),
            });
        }
        Ok(ChartAnswer {
            values: values.to_string(),
            secret_values,
            generate,
            disabled: user.get("disableWeb").and_then(Value::as_bool) == Some(true),
        })
    }

    fn workload_kind(_: App, _: Facts, _: Component) -> Result<WorkloadKind, PluginError> {
        Err(PluginError::Unsupported("workload kinds".into()))
    }

    fn lifecycle(call: HookCall, _facts: Facts) -> Result<HookAnswer, PluginError> {
        let user = web_overrides(&call);
        let hook = name(call.hook);
        let pre = matches!(
            call.hook,
            Hook::PreApply | Hook::PreUpdate | Hook::PreRemove | Hook::PreRecover
        );
        let mut answer = HookAnswer {
            verdict: Verdict::Proceed,
            actions: Vec::new(),
            state: None,
            status: None,
        };
        if pre {
            answer.state = Some(
                format!(
                    "{hook} {} {} {}",
                    call.app.version,
                    name(call.mode),
                    name(call.operation)
                )
                .into_bytes(),
            );
            if call.hook == Hook::PreApply {
                answer.actions.extend(actions_from(&user));
            }
            if flag(&user, "askDelete") {
                answer.actions.push(Action::Delete(ObjectRef {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    namespace: Some("default".into()),
                    name: "anything".into(),
                }));
            }
        }
        if call.hook == Hook::Status {
            let failed = serde_json::from_str::<Value>(&user)
                .ok()
                .and_then(|v| v.get("statusFailedBytes").and_then(Value::as_u64));
            answer.status = Some(match failed {
                Some(bytes) => {
                    ReleaseStatus::Failed("r".repeat(usize::try_from(bytes).unwrap_or(usize::MAX)))
                }
                None => ReleaseStatus::Ready,
            });
        }
        if call.hook == Hook::SemanticCheck && flag(&user, "vetoCheck") {
            answer.verdict = Verdict::Veto(format!("held by vetoCheck ({})", name(call.mode)));
        }
        let post = matches!(
            call.hook,
            Hook::PostApply | Hook::PostUpdate | Hook::PostRemove | Hook::PostRecover
        );
        let veto_post = flag(&user, "vetoPost")
            || serde_json::from_str::<Value>(&user)
                .ok()
                .and_then(|v| v.get("vetoPost").and_then(Value::as_str).map(String::from))
                .is_some_and(|only| only == hook);
        if call.hook == Hook::EvaluateReapply && flag(&user, "askReapply") {
            let trigger = call
                .trigger
                .as_ref()
                .map(|t| {
                    let details: Vec<String> =
                        t.details.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    format!("{} [{}]", t.kind, details.join(" "))
                })
                .unwrap_or_default();
            answer.actions.push(Action::RequestReapply(format!(
                "{trigger} {} {}",
                name(call.mode),
                name(call.operation)
            )));
        }
        if call.hook == Hook::PostAbort {
            answer.actions.push(Action::RequestReapply(format!(
                "{hook} {} {} {}",
                call.app.version,
                name(call.mode),
                name(call.operation)
            )));
        }
        if post && veto_post {
            let state = call
                .state
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default()
                .into_owned();
            answer.verdict = Verdict::Veto(format!(
                "{hook} was handed state [{state}] from {:?} to {:?}",
                call.from_version, call.to_version
            ));
        }
        Ok(answer)
    }
}

fn object_ref(v: &Value) -> ObjectRef {
    let text = |key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    ObjectRef {
        api_version: text("apiVersion"),
        kind: text("kind"),
        namespace: v.get("namespace").and_then(Value::as_str).map(String::from),
        name: text("name"),
    }
}

/// The actions the user overrides of `web` ask for (see the crate doc).
fn actions_from(user: &str) -> Vec<Action> {
    let Ok(user) = serde_json::from_str::<Value>(user) else {
        return Vec::new();
    };
    let list = |key: &str| {
        user.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for object in list("ensure") {
        out.push(Action::Ensure(object.to_string()));
    }
    for object in list("delete") {
        out.push(Action::Delete(object_ref(&object)));
    }
    for object in list("restart") {
        let object = object_ref(&object);
        out.push(Action::Restart(WorkloadRef {
            kind: object.kind,
            namespace: object.namespace.unwrap_or_default(),
            name: object.name,
        }));
    }
    for mirror in list("mirror") {
        let split = |key: &str| {
            let text = mirror.get(key).and_then(Value::as_str).unwrap_or_default();
            let (ns, name) = text.split_once('/').unwrap_or(("", text));
            (ns.to_string(), name.to_string())
        };
        let ((from_namespace, from_name), (to_namespace, to_name)) = (split("from"), split("to"));
        out.push(Action::Mirror(Mirror {
            kind: if mirror.get("kind").and_then(Value::as_str) == Some("configmap") {
                MirrorKind::ConfigMap
            } else {
                MirrorKind::Secret
            },
            from_namespace,
            from_name,
            to_namespace,
            to_name,
        }));
    }
    if let Some(patch) = user.get("patch") {
        out.push(Action::PatchOverrides(OverridePatch {
            chart: patch
                .get("chart")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .into(),
            patch: patch
                .get("patch")
                .cloned()
                .unwrap_or(Value::Null)
                .to_string(),
        }));
    }
    if let Some(bytes) = user.get("patchBytes").and_then(Value::as_u64) {
        // An override patch of about `bytes` bytes, however large.
        let size = usize::try_from(bytes).unwrap_or(usize::MAX);
        let mut patch = String::with_capacity(size.saturating_add(16));
        patch.push_str("{\"big\":\"");
        patch.extend(std::iter::repeat_n('x', size));
        patch.push_str("\"}");
        out.push(Action::PatchOverrides(OverridePatch {
            chart: "web".into(),
            patch,
        }));
    }
    if let Some(reason) = user.get("requestReapply").and_then(Value::as_str) {
        out.push(Action::RequestReapply(reason.into()));
    }
    if let Some(bytes) = user.get("reasonBytes").and_then(Value::as_u64) {
        let size = usize::try_from(bytes).unwrap_or(usize::MAX);
        out.push(Action::RequestReapply("r".repeat(size)));
    }
    if let Some(depth) = user.get("ensureDeep").and_then(Value::as_u64) {
        // A ConfigMap whose `deep` field nests `depth` objects.
        let mut deep = String::from("\"x\"");
        for _ in 0..depth.min(10_000) {
            deep = format!("{{\"a\":{deep}}}");
        }
        out.push(Action::Ensure(format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"deep\"}},\"deep\":{deep}}}"
        )));
    }
    for object in list("observe") {
        out.push(Action::Observe(object_ref(&object)));
    }
    out
}

export!(ContractV2);
