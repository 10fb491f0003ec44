//! Contract 0.2 (issue 25) beside 0.1: the host links both worlds and
//! calls each plugin through the contract its component was built
//! against. The fixture `test-support/plugins/contract-v0.2` is built with the WIT
//! bindings alone and reports what it is handed: the fact sections it
//! declared and no others, the chart's namespace and user overrides, each
//! hook's context and the state its pre hook left.

use std::path::{Path, PathBuf};

use capstan::model::Facts;
use capstan::model::{
    ChartCall, ContractVersion, FactsSection, Hook, HookCall, HookOperation, HookOutcome,
    SecretSource,
};
use capstan::sandbox::{CallContext, Plugin, Policy, Sandbox};
use serde_json::{Value, json};

use crate::daemon::Daemon;
use crate::support::{example_facts, plugin_bytes, plugin_wasm};

fn load(package: &str) -> Plugin {
    let sandbox = Sandbox::new(Policy::new()).unwrap();
    sandbox.load(package, &plugin_bytes(package)).unwrap()
}

/// The example simplex facts, with what 0.2 added: a second node that is
/// cordoned and not ready, the Ceph backend's health, a network and a
/// service parameter (which the fixture did not declare).
fn facts() -> Facts {
    let text = std::fs::read_to_string(example_facts("storage", "simplex.yaml")).unwrap();
    let mut facts = Facts::from_yaml(&text).unwrap();
    let extra: Facts = Facts::from_yaml(
        "systemMode: simplex\ncontrollerCount: 1\nworkerCount: 1\nkubernetesVersion: 1.30.2\n\
         system: {name: lab, softwareVersion: '26.09'}\n\
         nodes:\n  - {name: worker-9, roles: [worker], schedulable: false, operational: disabled, availability: offline}\n\
         networks:\n  - {name: oam, subnet: 'fd00::/64', floatingAddress: 'fd00::2'}\n\
         serviceParameters:\n  - {service: platform, section: config, name: tls-min-version, value: VersionTLS12}\n",
    )
    .unwrap();
    facts.nodes.extend(extra.nodes);
    facts.system = extra.system;
    facts.networks = extra.networks;
    facts.service_parameters = extra.service_parameters;
    facts.storage_backends[0].health = Some(capstan::model::StorageHealth::Error);
    facts
}

fn chart_call(user: Value) -> ChartCall {
    ChartCall {
        app: "demo".into(),
        version: "1.0.0".into(),
        chart: "web".into(),
        namespace: "web-ns".into(),
        user_overrides: user,
    }
}

fn ctx() -> CallContext {
    CallContext::new([3; 32])
}

#[test]
fn each_plugin_is_called_through_the_contract_it_was_built_against() {
    let v2 = load("capstan-test-contract-v0-2");
    assert_eq!(v2.info().contract, ContractVersion::V0_2);
    assert_eq!(
        v2.info().facts,
        vec![
            FactsSection::System,
            FactsSection::Hosts,
            FactsSection::Storage
        ]
    );
    let v1 = load("capstan-example-storage");
    assert_eq!(v1.info().contract, ContractVersion::V0_1);
    assert!(v1.info().facts.is_empty());
}

#[test]
fn a_chart_call_hands_only_the_declared_sections_and_the_charts_user_overrides() {
    let plugin = load("capstan-test-contract-v0-2");
    let answer = plugin
        .answer(&ctx(), &chart_call(json!({"replicas": 3})), &facts())
        .unwrap();
    let values = answer.values.to_map().unwrap();
    let seen = &values["seen"];
    assert_eq!(seen["namespace"], "web-ns");
    assert_eq!(seen["user"], json!({"replicas": 3}));
    assert_eq!(seen["app"], "demo");
    // Declared: system, hosts, storage; not networks nor service
    // parameters, which the facts hold.
    assert_eq!(seen["sections"], json!(["system", "hosts", "storage"]));
    assert_eq!(seen["system"]["mode"], "simplex");
    assert_eq!(seen["system"]["type"], "allinone");
    assert_eq!(seen["system"]["name"], "lab");
    // A node's states: as given, else derived (a schedulable node is
    // unlocked, enabled and available; a cordoned one locked).
    assert_eq!(
        seen["hosts"],
        json!([
            "controller-0:unlocked/enabled/available",
            "worker-9:locked/disabled/offline"
        ])
    );
    assert_eq!(seen["storage"], json!(["ceph-store:error"]));
    assert!(!answer.disabled);
    assert!(answer.secret_values.is_empty());
}

#[test]
fn a_plugin_may_disable_its_chart_and_ask_for_a_secret_value_by_reference() {
    let plugin = load("capstan-test-contract-v0-2");
    let answer = plugin
        .answer(
            &ctx(),
            &chart_call(json!({"disableWeb": true, "askSecret": true})),
            &facts(),
        )
        .unwrap();
    assert!(answer.disabled);
    assert_eq!(answer.secret_values.len(), 1);
    assert_eq!(answer.secret_values[0].path, "auth.password");
    assert!(matches!(
        &answer.secret_values[0].source,
        SecretSource::Generated(g) if g.name == "db" && g.key == "password"
    ));
    assert_eq!(answer.generate.len(), 1);
    assert_eq!(answer.generate[0].name, "db");
}

#[test]
fn a_pre_hook_leaves_state_that_its_post_hook_is_handed() {
    let plugin = load("capstan-test-contract-v0-2");
    let mut pre = HookCall::new(Hook::PreUpdate, HookOperation::Update, "demo", "2.0.0");
    pre.from_version = Some("1.0.0".into());
    pre.to_version = Some("2.0.0".into());
    let answer = plugin.hook(&ctx(), &pre, &facts()).unwrap();
    assert_eq!(answer.verdict, HookOutcome::Proceed);
    let state = answer.state.expect("a pre hook leaves state");
    assert_eq!(
        String::from_utf8_lossy(&state),
        "preupdate 2.0.0 manual update"
    );
    let mut post = HookCall {
        hook: Hook::PostUpdate,
        state: Some(state),
        ..pre
    };
    post.user_overrides = vec![("web".into(), json!({"vetoPost": true}))];
    let answer = plugin.hook(&ctx(), &post, &facts()).unwrap();
    assert_eq!(
        answer.verdict,
        HookOutcome::Veto(
            "postupdate was handed state [preupdate 2.0.0 manual update] from Some(\"1.0.0\") to Some(\"2.0.0\")"
                .into()
        )
    );
}

#[test]
fn a_0_1_plugin_is_handed_what_it_was_before_0_2() {
    // The 0.1 storage example answers the same for facts with and without
    // what 0.2 added: it never sees the new fields, nor do its seeds.
    let plugin = load("capstan-example-storage");
    let text = std::fs::read_to_string(example_facts("storage", "simplex.yaml")).unwrap();
    let plain = Facts::from_yaml(&text).unwrap();
    let app = capstan::model::App {
        name: "demo".into(),
        version: "1.0.0".into(),
    };
    let before = plugin
        .overrides(&ctx(), &app, &plain, "rbd-provisioner")
        .unwrap();
    let mut richer = facts();
    richer.nodes.truncate(1);
    let after = plugin
        .overrides(&ctx(), &app, &richer, "rbd-provisioner")
        .unwrap();
    assert_eq!(before, after);
    assert!(!before.to_map().unwrap().is_empty());
}

/// An app of one chart `web` (a ConfigMap of the values it gets) served
/// by the fixture, with all its hooks.
pub(crate) fn write_app(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    let templates = dir.join("charts/web/templates");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    std::fs::copy(
        plugin_wasm("capstan-test-contract-v0-2"),
        dir.join("plugins/v2.wasm"),
    )
    .unwrap();
    std::fs::write(
        dir.join("capstan.yaml"),
        "name: contract\nversion: 1.0.0\n\
         charts:\n  - {name: web, path: charts/web, namespace: web-ns, release: web}\n\
         chart_groups:\n  - {name: all, mode: sequential, charts: [web]}\n\
         plugins:\n  - {path: plugins/v2.wasm, hooks: [semantic-check, pre-apply, post-apply, pre-remove, post-remove, pre-recover, post-recover, post-abort], charts: [web]}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("charts/web/Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(dir.join("charts/web/values.yaml"), "{}\n").unwrap();
    std::fs::write(
        templates.join("values.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-values\n\
         data:\n  values: {{ toJson .Values | quote }}\n",
    )
    .unwrap();
    // A Secret in another namespace, for the mirror tests to copy.
    std::fs::write(
        templates.join("ca.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ca\n  namespace: platform-ca\n\
         type: Opaque\ndata:\n  ca.crt: Y2EtYnl0ZXM=\n",
    )
    .unwrap();
}

/// The contract fixture as app `contract` for a cluster: its chart `web`
/// in namespace `ns` (the Secret it keeps in `platform-ca` left out), its
/// plugin routed with `hooks`, and `extra` added to `capstan.yaml`; built
/// and signed, the bundle's path.
pub(crate) fn cluster_app(d: &Daemon, ns: &str, hooks: &str, extra: &str) -> PathBuf {
    let dir = d.dir.join(format!("app-{ns}"));
    write_app(&dir);
    let _ = std::fs::remove_file(dir.join("charts/web/templates/ca.yaml"));
    std::fs::write(
        dir.join("capstan.yaml"),
        format!(
            "name: contract\nversion: 1.0.0\n\
             charts:\n  - {{name: web, path: charts/web, namespace: {ns}, release: web}}\n\
             chart_groups:\n  - {{name: all, mode: sequential, charts: [web]}}\n\
             plugins:\n  - {{path: plugins/v2.wasm, hooks: [{hooks}], charts: [web]}}\n{extra}"
        ),
    )
    .unwrap();
    let bundle = d.dir.join(format!("{ns}.tgz"));
    let built = d.build(&dir, &bundle);
    assert!(
        built.status.success(),
        "{}",
        crate::daemon::text(&built.stderr)
    );
    bundle
}

fn bundle(d: &Daemon) -> PathBuf {
    let dir = d.dir.join("app-contract");
    write_app(&dir);
    let out = d.dir.join("contract.tgz");
    let built = d.build(&dir, &out);
    assert!(
        built.status.success(),
        "{}",
        crate::daemon::text(&built.stderr)
    );
    out
}

pub(crate) fn set_user(d: &Daemon, values: &str) {
    let file = d.dir.join("user.yaml");
    std::fs::write(&file, values).unwrap();
    d.ok(&[
        "override",
        "set",
        "contract",
        "web",
        "-f",
        file.to_str().unwrap(),
    ]);
}

#[test]
fn through_the_daemon_a_0_2_plugin_sees_its_namespace_and_overrides_disables_and_vetoes() {
    let d = Daemon::start("contract_v2_daemon");
    let bundle = bundle(&d);
    d.ok(&["app", "upload", bundle.to_str().unwrap()]);
    set_user(&d, "greeting: hi\n");
    d.ok(&["app", "apply", "contract"]);
    assert_eq!(d.state_of("contract"), "applied");
    let applied = std::fs::read_to_string(d.applied().join("contract/web.yaml")).unwrap();
    assert!(applied.contains(r#""namespace":"web-ns""#), "{applied}");
    assert!(applied.contains(r#""user":{"greeting":"hi"}"#), "{applied}");

    // The post-apply hook is handed the state its pre-apply hook left.
    set_user(&d, "vetoPost: true\n");
    let out = d.cli(&["app", "apply", "contract"]);
    assert!(!out.status.success());
    let shown = d.show("contract");
    let message = shown["message"].as_str().unwrap_or_default();
    assert!(
        message
            .contains("post-apply hook: postapply was handed state [preapply 1.0.0 manual apply]"),
        "{shown}"
    );

    // A delete of an object no release of the app holds is refused.
    set_user(&d, "askDelete: true\n");
    let out = d.cli(&["app", "apply", "contract"]);
    assert!(!out.status.success());
    let message = d.show("contract")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("plugins/v2.wasm's pre-apply hook asked to delete ConfigMap default/anything (v1): denied by rule owned-only"),
        "{message}"
    );

    // A disabled chart is not applied, and goes when it was.
    set_user(&d, "disableWeb: true\n");
    d.ok(&["app", "apply", "contract"]);
    assert_eq!(d.state_of("contract"), "applied");
    assert!(
        !d.applied().join("contract/web.yaml").exists(),
        "the disabled chart's objects are still applied"
    );
}

/// `app recover` runs `pre-recover` and `post-recover` around its apply
/// (the post hook handed the state the pre hook left), and an aborted
/// operation runs `post-abort` within it: its `request-reapply` marks the
/// app, and the operation stays aborted.
#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the daemon's test hooks: run with --features capstan/test-hooks (cargo xtask test does)"
)]
fn recover_runs_its_pre_and_post_hooks_and_an_abort_its_post_abort_hook() {
    let mut d = Daemon::start("contract_v2_recover");
    let bundle = bundle(&d);
    d.ok(&["app", "upload", bundle.to_str().unwrap()]);
    // A manual apply's semantic check is told so.
    set_user(&d, "vetoCheck: true\n");
    let out = d.cli(&["app", "apply", "contract"]);
    assert!(!out.status.success());
    assert_eq!(d.state_of("contract"), "apply-failed");
    let message = d.show("contract")["message"].to_string();
    assert!(message.contains("held by vetoCheck (manual)"), "{message}");

    set_user(&d, "vetoPost: postrecover\n");
    let out = d.cli(&["app", "recover", "contract"]);
    assert!(
        !out.status.success(),
        "{}",
        crate::daemon::text(&out.stdout)
    );
    let message = d.show("contract")["message"].to_string();
    assert!(
        message.contains("postrecover was handed state [prerecover 1.0.0 manual recover]"),
        "{message}"
    );
    set_user(&d, "greeting: hi\n");
    d.ok(&["app", "recover", "contract"]);
    assert_eq!(d.state_of("contract"), "applied");

    // Aborted while it runs (every step slowed down).
    d.kill();
    d.spawn(&[("CAPSTAN_TEST_STEP_DELAY_MS", "200")]);
    d.ok(&["app", "apply", "contract", "--no-wait"]);
    d.ok(&["app", "abort", "contract"]);
    let started = std::time::Instant::now();
    while d.state_of("contract") == "applying" {
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let shown = d.show("contract");
    assert_eq!(shown["state"], "apply-failed", "{shown}");
    let message = shown["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("aborted") && message.contains("post-abort hook called"),
        "{shown}"
    );
    assert!(
        shown["reapply_needed"]
            .as_str()
            .is_some_and(|r| r.contains("postabort 1.0.0 manual abort")),
        "{shown}"
    );
    let history: Value =
        serde_json::from_str(&d.ok(&["app", "history", "contract", "-o", "json"])).unwrap();
    let last = history["operations"]
        .as_array()
        .and_then(|ops| ops.last())
        .cloned()
        .unwrap_or_default();
    assert_eq!(last["outcome"], "aborted", "{history}");
}

/// `capstan platform event NAME [KEY=VALUE]...`: an applied app that
/// declared a `platform-event` trigger for NAME has its
/// `evaluate-reapply` hook asked (told the trigger, `auto`), and is marked
/// `reapply-needed` when the plugin asks; another event asks nobody; a
/// bad event is refused.
#[test]
fn a_platform_event_asks_the_apps_that_declared_it() {
    let d = Daemon::start("contract_v2_event");
    let dir = d.dir.join("app-contract");
    write_app(&dir);
    let meta = dir.join("capstan.yaml");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(
        &meta,
        text.replace(
            "post-abort], charts: [web]}",
            "post-abort, evaluate-reapply], charts: [web]}",
        ) + "reapply_triggers:\n  - {on: platform-event, name: storage-backend-changed}\n",
    )
    .unwrap();
    let bundle = d.dir.join("event.tgz");
    let built = d.build(&dir, &bundle);
    assert!(
        built.status.success(),
        "{}",
        crate::daemon::text(&built.stderr)
    );
    d.ok(&["app", "upload", bundle.to_str().unwrap()]);
    d.ok(&["app", "apply", "contract"]);

    let event = |args: &[&str]| -> Value {
        let mut all = vec!["platform", "event"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&d.ok(&all)).unwrap()
    };
    let nobody = event(&["other-event"]);
    assert_eq!(nobody["evaluated"], json!([]), "{nobody}");
    // Asked, and the plugin does not ask for a re-apply.
    let asked = event(&["storage-backend-changed", "backend=ceph-store"]);
    assert_eq!(asked["evaluated"], json!(["contract"]), "{asked}");
    assert_eq!(asked["marked"], json!([]), "{asked}");
    assert!(d.show("contract")["reapply_needed"].is_null());

    set_user(&d, "askReapply: true\n");
    let table = d.ok(&[
        "platform",
        "event",
        "storage-backend-changed",
        "backend=ceph-store",
    ]);
    assert!(table.contains("reapply-needed:   contract"), "{table}");
    let mark = d.show("contract")["reapply_needed"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        mark.contains(
            "plugins/v2.wasm asked on platform-event (name=storage-backend-changed, backend=ceph-store): \
             platform-event [name=storage-backend-changed backend=ceph-store] auto evaluatereapply"
        ),
        "{mark}"
    );
    // An apply clears the mark.
    d.ok(&["app", "apply", "contract"]);
    assert!(d.show("contract")["reapply_needed"].is_null());

    for (args, says) in [
        (vec!["platform", "event", "bad name"], "1 to 63"),
        (vec!["platform", "event", "ev", "novalue"], "not KEY=VALUE"),
        (vec!["platform", "event", "ev", "name=x"], "not `name`"),
    ] {
        let out = d.cli(&args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = crate::daemon::text(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// A Deployment `worker` of one Pod in `namespace`, as a hook's `ensure`
/// names it (flow YAML).
fn worker_deployment(namespace: &str) -> String {
    format!(
        "{{apiVersion: apps/v1, kind: Deployment, metadata: {{name: worker, namespace: {namespace}}}, \
         spec: {{replicas: 1, selector: {{matchLabels: {{app: worker}}}}, \
         template: {{metadata: {{labels: {{app: worker}}}}, \
         spec: {{containers: [{{name: w, image: registry.k8s.io/pause:3.10}}]}}}}}}}}"
    )
}

fn config_map(namespace: &str, name: &str) -> String {
    format!(
        "{{apiVersion: v1, kind: ConfigMap, metadata: {{name: {name}, namespace: {namespace}}}, data: {{k: v}}}}"
    )
}

/// Applies with the user overrides `values` and returns the failure
/// message, which must name `rule`.
fn denied_by(d: &Daemon, values: &str, rule: &str) -> String {
    set_user(d, values);
    let out = d.cli(&["app", "apply", "contract"]);
    assert!(!out.status.success(), "{values}: applied");
    let shown = d.show("contract");
    let message = shown["message"].as_str().unwrap_or_default().to_string();
    assert!(
        message.contains(&format!("denied by rule {rule}:")),
        "{values}: {message}"
    );
    assert_eq!(shown["state"], "apply-failed", "{shown}");
    message
}

#[test]
fn hook_actions_outside_the_policy_are_refused_naming_the_rule_and_nothing_is_done() {
    let d = Daemon::start("contract_v2_policy");
    let bundle = bundle(&d);
    d.ok(&["app", "upload", bundle.to_str().unwrap()]);
    d.ok(&["app", "apply", "contract"]);
    let owned = d.applied().join("contract/capstan-owned.yaml");

    // One allowed object and one in another app's namespace: the answer is
    // refused whole, so the allowed one is not applied either.
    let message = denied_by(
        &d,
        &format!(
            "ensure: [{}, {}]\n",
            config_map("web-ns", "fine"),
            config_map("other-app", "intruder")
        ),
        "app-namespaces",
    );
    assert!(message.contains("ensure ConfigMap intruder"), "{message}");
    assert!(!owned.exists(), "a part of a refused answer was applied");
    denied_by(
        &d,
        "ensure: [{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: admin}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}, subjects: []}]\n",
        "no-rbac",
    );
    denied_by(
        &d,
        "ensure: [{apiVersion: v1, kind: Namespace, metadata: {name: mine}}]\n",
        "no-cluster-scoped",
    );
    let many: Vec<String> = (0..101)
        .map(|i| config_map("web-ns", &format!("cm-{i}")))
        .collect();
    denied_by(&d, &format!("ensure: [{}]\n", many.join(", ")), "max-owned");
    denied_by(
        &d,
        "mirror: [{kind: secret, from: platform-ca/ca, to: web-ns/oidc-ca}]\n",
        "mirror-source",
    );
    denied_by(
        &d,
        "mirror: [{kind: configmap, from: web-ns/web-values, to: kube-system/copy}]\n",
        "app-namespaces",
    );
    denied_by(&d, "patch: {chart: nope, patch: {a: 1}}\n", "known-chart");
    assert!(!owned.exists());
    // A 2 MiB override patch cannot leave the plugin (its answer is over
    // the sandbox's 1 MiB output cap), nor a 100 MiB one be made in its
    // 64 MiB of memory: the call fails naming the limit, the app is
    // apply-failed, and the stored overrides are as the user left them.
    for (bytes, limit) in [
        ("2097152", "output exceeded 1024 KiB"),
        ("104857600", "memory"),
    ] {
        set_user(&d, &format!("patchBytes: {bytes}\n"));
        let out = d.cli(&["app", "apply", "contract"]);
        assert!(!out.status.success(), "{bytes}");
        let shown = d.show("contract");
        assert_eq!(shown["state"], "apply-failed", "{shown}");
        let message = shown["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("plugins/v2.wasm failed during pre-apply") && message.contains(limit),
            "{bytes}: {message}"
        );
        let stored = d.ok(&["override", "show", "contract", "web"]);
        assert!(
            stored.contains(&format!("patchBytes: {bytes}")) && !stored.contains("big"),
            "{stored}"
        );
    }
}

#[test]
fn ensured_and_mirrored_objects_live_in_the_owned_release_and_go_with_the_app() {
    let policy = crate::support::fresh_dir("contract_v2_owned_policy").join("policy.yaml");
    std::fs::create_dir_all(policy.parent().unwrap()).unwrap();
    std::fs::write(
        &policy,
        "apps:\n  contract:\n    mirrorFrom: [platform-ca/ca]\n",
    )
    .unwrap();
    let dir = crate::support::fresh_dir("contract_v2_owned");
    let d = Daemon::start_with_target(
        "contract_v2_owned",
        vec![
            "--target".into(),
            format!("dir:{}", dir.join("applied").display()),
            "--action-policy".into(),
            policy.display().to_string(),
        ],
    );
    let bundle = bundle(&d);
    d.ok(&["app", "upload", bundle.to_str().unwrap()]);
    d.ok(&["app", "apply", "contract"]);
    let owned = d.applied().join("contract/capstan-owned.yaml");
    assert!(!owned.exists());

    set_user(
        &d,
        &format!(
            "ensure: [{}]\nmirror: [{{kind: secret, from: platform-ca/ca, to: web-ns/oidc-ca}}]\nrequestReapply: the CA changed\n",
            config_map("web-ns", "extra")
        ),
    );
    d.ok(&["app", "apply", "contract"]);
    assert_eq!(d.state_of("contract"), "applied");
    let text = std::fs::read_to_string(&owned).unwrap();
    assert!(text.contains("name: extra"), "{text}");
    assert!(text.contains("name: oidc-ca"), "{text}");
    assert!(
        text.contains("ca.crt: Y2EtYnl0ZXM="),
        "the copy lacks the data: {text}"
    );
    assert!(
        text.contains("capstan.dev/mirrored-from: platform-ca/ca"),
        "{text}"
    );
    let reason = d.show("contract")["reapply_needed"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(reason.contains("the CA changed"), "{}", d.show("contract"));

    // What no hook asks for any more is pruned at the end of the apply.
    set_user(
        &d,
        &format!("ensure: [{}]\n", config_map("web-ns", "extra")),
    );
    d.ok(&["app", "apply", "contract"]);
    let text = std::fs::read_to_string(&owned).unwrap();
    assert!(
        text.contains("name: extra") && !text.contains("oidc-ca"),
        "{text}"
    );

    // Override patches are merge patches on the stored user overrides.
    set_user(
        &d,
        "patch: {chart: web, patch: {patched: true, patch: null}}\nkeep: 1\n",
    );
    d.ok(&["app", "apply", "contract"]);
    let layers: Value =
        serde_json::from_str(&d.ok(&["override", "show", "contract", "web", "-o", "json"]))
            .unwrap();
    let user = layers["layers"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["layer"] == "user"))
        .cloned()
        .unwrap_or_else(|| panic!("no user layer: {layers}"));
    assert_eq!(
        user["values"],
        json!({"patched": true, "keep": 1}),
        "{layers}"
    );

    // Removing the app removes its owned objects.
    set_user(
        &d,
        &format!("ensure: [{}]\n", config_map("web-ns", "extra")),
    );
    d.ok(&["app", "apply", "contract"]);
    assert!(owned.exists());
    d.ok(&["app", "remove", "contract"]);
    assert!(
        !owned.exists(),
        "the owned release outlived the app's remove"
    );
}

/// The platform-storage example app (issue 25): its values from the
/// storage facts, its `pre-update` delete of the immutable CSIDriver (which
/// the update then creates anew), and its `pre-apply` veto once Ceph
/// reports an error.
#[test]
fn the_platform_storage_example_configures_deletes_its_csi_driver_on_update_and_vetoes() {
    let mut d = Daemon::start("contract_v2_platform_storage");
    let facts = example_facts("platform-storage", "duplex-ceph.yaml");
    d.kill();
    d.spawn_with_facts(&facts);
    let v1 = d.app_bundle("platform-storage", "1.0.0", |_| {});
    d.ok(&["app", "upload", v1.to_str().unwrap()]);
    d.ok(&["app", "apply", "platform-storage"]);
    let file = d.applied().join("platform-storage/csi-rbd.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    for expected in [
        "kind: StorageClass",
        "name: general",
        "clusterID: 6b3e2f4a-0c1d-4c9e-9f7a-2d5b8e1a3c70",
        "replicas: 2",
        "--leader-election=true",
        "192.168.204.3:6789",
        "kind: CSIDriver",
    ] {
        assert!(text.contains(expected), "no {expected:?} in {text}");
    }

    let v11 = d.app_bundle("platform-storage", "1.1.0", |_| {});
    d.ok(&["app", "update", v11.to_str().unwrap()]);
    assert_eq!(d.state_of("platform-storage"), "applied");
    let log = d.log();
    assert!(
        log.contains(
            "deleted CSIDriver rbd.csi.example.dev (storage.k8s.io/v1) at a plugin's request"
        ),
        "no delete of the CSIDriver in the log"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("kind: CSIDriver"),
        "the update did not create it anew: {text}"
    );

    let broken = d.dir.join("ceph-error.yaml");
    std::fs::write(
        &broken,
        std::fs::read_to_string(&facts)
            .unwrap()
            .replace("health: ok", "health: error"),
    )
    .unwrap();
    d.kill();
    d.spawn_with_facts(&broken);
    let out = d.cli(&["app", "apply", "platform-storage"]);
    assert!(!out.status.success());
    let message = d.show("platform-storage")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message
            .contains("vetoed the pre-apply hook: storage backend ceph-store reports health error"),
        "{message}"
    );
}

/// The generated password the owned release keeps for the app.
fn generated_password(d: &Daemon) -> String {
    use base64::Engine as _;
    let text = std::fs::read_to_string(d.applied().join("contract/capstan-owned.yaml")).unwrap();
    let docs: Vec<serde_yaml_ng::Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| serde_yaml_ng::Value::deserialize(doc).unwrap())
        .collect();
    let secret = docs
        .iter()
        .find(|d| d["metadata"]["name"].as_str() == Some("contract.db"))
        .unwrap_or_else(|| panic!("no generated Secret in {text}"));
    let encoded = secret["data"]["password"].as_str().unwrap();
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap(),
    )
    .unwrap()
}

use serde::Deserialize as _;

/// Issue 25: a generated secret is made once, kept in a Secret the app
/// owns, handed out unchanged on every later apply, placed in the chart's
/// values at render, and found in none of the daemon log, history, diffs,
/// `override show`, JSON output, the status page or the metrics; it goes
/// with the app. An existing Secret's key is read only from the app's own
/// namespaces unless the policy allows.
#[test]
fn a_generated_secret_is_made_once_placed_at_render_and_shown_nowhere() {
    let d = Daemon::start("contract_v2_secrets");
    let bundle = bundle(&d);
    d.ok(&["app", "upload", bundle.to_str().unwrap()]);
    set_user(&d, "askSecret: true\n");
    d.ok(&["app", "apply", "contract"]);
    let password = generated_password(&d);
    assert_eq!(password.len(), 24);
    assert!(password.chars().all(|c| c.is_ascii_alphanumeric()));
    let rendered = std::fs::read_to_string(d.applied().join("contract/web.yaml")).unwrap();
    assert!(
        rendered.contains(&format!(r#""password":"{password}""#)),
        "the value is not placed at render: {rendered}"
    );

    // Stable across re-applies.
    set_user(&d, "askSecret: true\ngreeting: again\n");
    let diff = d.ok(&["app", "diff", "contract"]);
    assert!(diff.contains("again"), "{diff}");
    d.ok(&["app", "apply", "contract"]);
    assert_eq!(
        generated_password(&d),
        password,
        "the secret was generated anew"
    );

    // Nowhere a person or a log reads.
    let mut seen = vec![
        ("diff", diff),
        ("log", d.log()),
        (
            "override show",
            d.ok(&["override", "show", "contract", "web", "-o", "json"]),
        ),
        ("app show", d.ok(&["app", "show", "contract", "-o", "json"])),
        (
            "history",
            d.ok(&["app", "history", "contract", "-o", "json"]),
        ),
    ];
    for (path, label) in [
        ("/metrics", "metrics"),
        ("/", "status page"),
        ("/v1/apps/contract", "api"),
    ] {
        let (_, body) = d.http("GET", path, "text/plain", b"");
        seen.push((label, body));
    }
    for (label, text) in &seen {
        assert!(
            !text.contains(&password),
            "the generated secret is in the {label}"
        );
    }

    // A value that names a secret the answer did not ask to generate.
    set_user(&d, "askSecret: true\nskipGenerate: true\n");
    let out = d.cli(&["app", "apply", "contract"]);
    assert!(!out.status.success());
    assert_eq!(generated_password(&d), password);

    // An existing Secret's key: from another namespace, refused by
    // default; from the app's own, placed.
    set_user(&d, "askExisting: platform-ca/ca/ca.crt\n");
    let out = d.cli(&["app", "apply", "contract"]);
    assert!(!out.status.success());
    let message = d.show("contract")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("denied by rule mirror-source"),
        "{message}"
    );

    // `remove --keep-secrets` keeps the Secret that holds the generated
    // one (and nothing else of the owned release): applying again hands
    // out the same password. `app delete` then removes it.
    set_user(
        &d,
        &format!(
            "askSecret: true\nensure: [{}]\n",
            config_map("web-ns", "extra")
        ),
    );
    d.ok(&["app", "apply", "contract"]);
    let owned = d.applied().join("contract/capstan-owned.yaml");
    assert!(
        std::fs::read_to_string(&owned)
            .unwrap()
            .contains("name: extra")
    );
    d.ok(&["app", "remove", "contract", "--keep-secrets"]);
    let kept = std::fs::read_to_string(&owned).unwrap_or_default();
    assert!(
        kept.contains("name: contract.db") && !kept.contains("name: extra"),
        "{kept}"
    );
    assert!(!d.applied().join("contract/web.yaml").exists());
    let message = d.show("contract")["message"].to_string();
    assert!(
        message.contains("kept the generated secrets web-ns/contract.db"),
        "{message}"
    );
    assert!(!message.contains(&password), "{message}");
    d.ok(&["app", "apply", "contract"]);
    assert_eq!(
        generated_password(&d),
        password,
        "a kept secret was made anew"
    );
    d.ok(&["app", "remove", "contract", "--keep-secrets"]);
    d.ok(&["app", "delete", "contract"]);
    assert!(!owned.exists(), "app delete left the kept secrets");

    // A plain remove removes the Secret that kept the generated one.
    d.ok(&["app", "upload", bundle.to_str().unwrap()]);
    set_user(&d, "askSecret: true\n");
    d.ok(&["app", "apply", "contract"]);
    assert_ne!(
        generated_password(&d),
        password,
        "a deleted app's secret came back"
    );
    d.ok(&["app", "remove", "contract"]);
    assert!(!owned.exists());
}

/// The oidc example app (issue 25): values from the OAM network and the
/// TLS service parameters, a client secret generated once and placed at
/// render, the platform CA mirrored in (allowed by the operator's policy),
/// state from pre-apply to post-apply, and version 2's renamed chart
/// taking the user overrides its pre-update hook moves across.
#[test]
fn the_oidc_example_generates_mirrors_and_moves_overrides_to_its_renamed_chart() {
    let policy = crate::support::fresh_dir("contract_v2_oidc_policy").join("policy.yaml");
    std::fs::create_dir_all(policy.parent().unwrap()).unwrap();
    std::fs::write(
        &policy,
        "apps:\n  oidc:\n    mirrorFrom: [platform-ca/ca]\n",
    )
    .unwrap();
    let dir = crate::support::fresh_dir("contract_v2_oidc");
    let mut d = Daemon::start_with_target(
        "contract_v2_oidc",
        vec![
            "--target".into(),
            format!("dir:{}", dir.join("applied").display()),
            "--action-policy".into(),
            policy.display().to_string(),
        ],
    );
    d.kill();
    d.spawn_with_facts(&example_facts("oidc", "duplex-oam.yaml"));

    // The platform's CA, from an app of its own (the contract fixture's
    // chart holds the Secret platform-ca/ca).
    let ca = bundle(&d);
    d.ok(&["app", "upload", ca.to_str().unwrap()]);
    d.ok(&["app", "apply", "contract"]);

    let v1 = d.app_bundle("oidc", "1.0.0", |_| {});
    d.ok(&["app", "upload", v1.to_str().unwrap()]);
    d.ok(&[
        "override",
        "set",
        "oidc",
        "dex",
        "--set",
        "image=registry.example.invalid/dex:2.42",
    ]);
    d.ok(&["app", "apply", "oidc"]);
    assert_eq!(d.state_of("oidc"), "applied", "{}", d.show("oidc"));
    let rendered = std::fs::read_to_string(d.applied().join("oidc/dex.yaml")).unwrap();
    for expected in [
        "issuer: https://[fd00:10::2]:30556/dex",
        "tlsMinVersion: VersionTLS13",
        "TLS_AES_256_GCM_SHA384",
        "replicas: 1",
        "dex:2.42",
    ] {
        assert!(rendered.contains(expected), "no {expected:?} in {rendered}");
    }
    let owned = std::fs::read_to_string(d.applied().join("oidc/capstan-owned.yaml")).unwrap();
    assert!(
        owned.contains("name: oidc-ca") && owned.contains("ca.crt: Y2EtYnl0ZXM="),
        "{owned}"
    );
    assert!(owned.contains("name: oidc.client-secret"), "{owned}");
    let secret = secret_key(&owned, "oidc.client-secret", "password");
    assert_eq!(secret.len(), 32);
    assert!(
        rendered.contains(&format!("secret: \"{secret}\"")),
        "{rendered}"
    );

    let v2 = d.app_bundle("oidc", "2.0.0", oidc_v2);
    d.ok(&["app", "update", v2.to_str().unwrap()]);
    assert_eq!(d.state_of("oidc"), "applied", "{}", d.show("oidc"));
    let rendered = std::fs::read_to_string(d.applied().join("oidc/oidc-dex.yaml")).unwrap();
    assert!(
        rendered.contains("dex:2.42"),
        "the user override did not move: {rendered}"
    );
    assert!(
        rendered.contains(&format!("secret: \"{secret}\"")),
        "the client secret changed"
    );
    assert!(!d.applied().join("oidc/dex.yaml").exists());
    let moved: Value =
        serde_json::from_str(&d.ok(&["override", "show", "oidc", "oidc-dex", "-o", "json"]))
            .unwrap();
    assert_eq!(
        moved["merged"]["image"], "registry.example.invalid/dex:2.42",
        "{moved}"
    );
}

/// The oidc example's version 2 made from its folder: the chart `dex`
/// renamed `oidc-dex` (its release too), updating from 1.x.
fn oidc_v2(app: &Path) {
    std::fs::rename(app.join("charts/dex"), app.join("charts/oidc-dex")).unwrap();
    let chart = app.join("charts/oidc-dex/Chart.yaml");
    let text = std::fs::read_to_string(&chart)
        .unwrap()
        .replace("name: dex", "name: oidc-dex");
    std::fs::write(&chart, text).unwrap();
    let manifest = app.join("capstan.yaml");
    let text = std::fs::read_to_string(&manifest)
        .unwrap()
        .replace(
            "  - name: dex\n    path: charts/dex",
            "  - name: oidc-dex\n    path: charts/oidc-dex",
        )
        .replace("release: dex", "release: oidc-dex")
        .replace("charts: [dex]", "charts: [oidc-dex]")
        .replace(
            "from_versions: [\">=1.0, <2.0\"]",
            "from_versions: [\">=1.0, <3.0\"]",
        );
    std::fs::write(&manifest, text).unwrap();
}

/// A key of the Secret `name` in a YAML stream, decoded.
fn secret_key(stream: &str, name: &str, key: &str) -> String {
    use base64::Engine as _;
    let docs: Vec<serde_yaml_ng::Value> = serde_yaml_ng::Deserializer::from_str(stream)
        .map(|doc| serde_yaml_ng::Value::deserialize(doc).unwrap())
        .collect();
    let secret = docs
        .iter()
        .find(|d| d["metadata"]["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no Secret {name} in {stream}"));
    let encoded = secret["data"][key].as_str().unwrap();
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap(),
    )
    .unwrap()
}

/// `restart`, on the real control plane: a Deployment the app owns gets a
/// new `kubectl.kubernetes.io/restartedAt` on its Pod template, as
/// `kubectl rollout restart` gives it, and its controller rolls a new
/// ReplicaSet; a ConfigMap, or a Deployment no release of the app holds,
/// is refused naming the rule.
#[test]
fn restart_rolls_an_owned_workload_and_nothing_else() {
    let Some(cp) = crate::control_plane::control_plane() else {
        return;
    };
    let ns = "cp-restart";
    cp.delete_namespace(ns);
    let d = cp.daemon("cp_restart");
    let bundle = cluster_app(&d, ns, "pre-apply, post-apply", "");
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    let deployment = worker_deployment(ns);
    set_user(&d, &format!("ensure: [{deployment}]\n"));
    d.ok(&["app", "apply", "contract"]);
    assert_eq!(d.state_of("contract"), "applied", "{}", d.log());
    let restarted_at = || {
        cp.object("deployment", Some(ns), "worker").and_then(|o| {
            o.pointer("/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt")
                .and_then(Value::as_str)
                .map(String::from)
        })
    };
    assert_eq!(restarted_at(), None);

    let target = format!("{{kind: Deployment, namespace: {ns}, name: worker}}");
    set_user(
        &d,
        &format!("ensure: [{deployment}]\nrestart: [{target}]\n"),
    );
    d.ok(&["app", "apply", "contract"]);
    assert_eq!(d.state_of("contract"), "applied", "{}", d.log());
    let message = d.show("contract")["message"].to_string();
    assert!(
        message.contains(&format!(
            "restarted Deployment {ns}/worker (apps/v1) at a plugin's request"
        )),
        "{message}"
    );
    let at = restarted_at().unwrap_or_default();
    assert!(at.ends_with('Z') && at.len() == 20, "{at:?}");
    // The annotation survives the next apply, which does not set it.
    set_user(&d, &format!("ensure: [{deployment}]\n"));
    d.ok(&["app", "apply", "contract"]);
    assert_eq!(restarted_at().as_deref(), Some(at.as_str()));
    // The controller rolled the template: two ReplicaSets now.
    cp.eventually(
        "a second ReplicaSet",
        std::time::Duration::from_secs(30),
        || cp.list("replicasets", ns).len() >= 2,
    );

    let message = denied_by(
        &d,
        &format!(
            "ensure: [{deployment}]\nrestart: [{{kind: ConfigMap, namespace: {ns}, name: web-values}}]\n"
        ),
        "restartable",
    );
    assert!(message.contains("restart"), "{message}");
    denied_by(
        &d,
        &format!(
            "ensure: [{deployment}]\nrestart: [{{kind: Deployment, namespace: {ns}, name: someone-elses}}]\n"
        ),
        "owned-only",
    );
    d.ok(&["app", "remove", "contract"]);
    cp.delete_namespace(ns);
}

/// A minimal CRD of cert-manager's `cert-manager.io/v1` KIND (plural
/// PLURAL): what the certs example asks the host to apply.
fn cert_manager_crd(kind: &str, plural: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
         metadata: {{name: {plural}.cert-manager.io}}\n\
         spec:\n  group: cert-manager.io\n  scope: Namespaced\n  \
         names: {{kind: {kind}, plural: {plural}, singular: {singular}, listKind: {kind}List}}\n  \
         versions:\n    - name: v1\n      served: true\n      storage: true\n      \
         schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}\n",
        singular = kind.to_lowercase()
    )
}

/// The certs example app end to end on the real control plane: its
/// `status` hook asks the host to ensure a self-signed Issuer and a
/// Certificate and to observe the Certificate's Secret, and the release is
/// called ready only once the Secret exists. cert-manager's CRDs are
/// installed and the test stands in for its controller: it writes the
/// Secret once the Certificate appears. Removing the app removes what the
/// hook ensured.
#[test]
fn the_certs_example_is_ready_only_once_its_certificate_is_issued() {
    let Some(cp) = crate::control_plane::control_plane() else {
        return;
    };
    let ns = "certs";
    cp.delete_namespace(ns);
    for (kind, plural) in [("Issuer", "issuers"), ("Certificate", "certificates")] {
        let out = cp.kubectl_stdin(&["apply", "-f", "-"], &cert_manager_crd(kind, plural));
        assert!(out.status.success(), "{}", crate::daemon::text(&out.stderr));
    }
    cp.eventually(
        "cert-manager's kinds served",
        std::time::Duration::from_secs(30),
        || {
            cp.kubectl(&["get", "issuers.cert-manager.io", "-A"])
                .status
                .success()
                && cp
                    .kubectl(&["get", "certificates.cert-manager.io", "-A"])
                    .status
                    .success()
        },
    );
    let d = cp.daemon("cp_certs");
    let bundle = d.app_bundle("certs", "1.0.0", |_| {});
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);

    let issued = std::thread::scope(|s| {
        // cert-manager's stand-in: the Secret once the Certificate exists.
        let controller = s.spawn(|| {
            let started = std::time::Instant::now();
            while started.elapsed() < std::time::Duration::from_secs(90) {
                let found = cp.kubectl(&[
                    "get",
                    "certificates.cert-manager.io",
                    "capstan-test-cert",
                    "-n",
                    ns,
                ]);
                if found.status.success() {
                    let made = cp.kubectl(&[
                        "create",
                        "secret",
                        "generic",
                        "capstan-test-cert-tls",
                        "-n",
                        ns,
                        "--from-literal=tls.crt=issued-by-the-stand-in",
                    ]);
                    return made.status.success();
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            false
        });
        let out = d.cli(&["app", "apply", "certs"]);
        assert!(
            out.status.success(),
            "{}\n{}",
            crate::daemon::text(&out.stderr),
            d.log()
        );
        controller.join().unwrap_or(false)
    });
    assert!(issued, "the Certificate never appeared: {}", d.log());
    assert_eq!(d.state_of("certs"), "applied");
    let issuer = cp
        .object("issuers.cert-manager.io", Some(ns), "capstan-test-issuer")
        .unwrap_or_default();
    assert_eq!(issuer["spec"]["selfSigned"], json!({}), "{issuer}");
    let cert = cp
        .object(
            "certificates.cert-manager.io",
            Some(ns),
            "capstan-test-cert",
        )
        .unwrap_or_default();
    assert_eq!(
        cert["spec"]["secretName"], "capstan-test-cert-tls",
        "{cert}"
    );
    assert_eq!(
        cert["spec"]["dnsNames"],
        json!(["test.example.invalid"]),
        "{cert}"
    );
    // Waited for: the status hook was asked again until the Secret was
    // observed.
    let log = d.log();
    let asked = log.find("asking for issuer capstan-test-issuer and certificate capstan-test-cert");
    let issued = log.find("secret certs/capstan-test-cert-tls issued");
    assert!(
        asked.is_some() && issued.is_some() && asked < issued,
        "the hook did not ask, then see the Secret: {log}"
    );

    d.ok(&["app", "remove", "certs"]);
    assert!(
        cp.object("issuers.cert-manager.io", Some(ns), "capstan-test-issuer")
            .is_none(),
        "the ensured Issuer outlived the app"
    );
    assert!(
        cp.object(
            "certificates.cert-manager.io",
            Some(ns),
            "capstan-test-cert"
        )
        .is_none(),
        "the ensured Certificate outlived the app"
    );
    cp.delete_namespace(ns);
    for plural in ["issuers", "certificates"] {
        let _ = cp.kubectl(&[
            "delete",
            "crd",
            &format!("{plural}.cert-manager.io"),
            "--ignore-not-found",
        ]);
    }
}

/// On the real control plane, whose inventory records identities, not
/// content: a later operation's `ensure` applies only what it ensures
/// (the Deployment an earlier one ensured is not sent again as a bare
/// identity, which the server refuses), what no hook ensures again is
/// pruned, and a `delete` of a chart's object prunes it alone (the chart,
/// applied after, makes it again, whole).
#[test]
fn ensure_and_delete_leave_the_rest_of_a_release_as_it_is() {
    let Some(cp) = crate::control_plane::control_plane() else {
        return;
    };
    let ns = "cp-partial";
    cp.delete_namespace(ns);
    let d = cp.daemon("cp_partial");
    let bundle = cluster_app(&d, ns, "pre-apply, post-apply", "");
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    let deployment = worker_deployment(ns);
    set_user(
        &d,
        &format!("ensure: [{deployment}, {}]\n", config_map(ns, "a")),
    );
    d.ok(&["app", "apply", "contract"]);
    assert!(cp.object("deployment", Some(ns), "worker").is_some());

    set_user(&d, &format!("ensure: [{}]\n", config_map(ns, "b")));
    let out = d.cli(&["app", "apply", "contract"]);
    assert!(out.status.success(), "{}", d.show("contract"));
    assert!(cp.object("configmap", Some(ns), "b").is_some());
    for gone in ["worker", "a"] {
        let kind = if gone == "worker" {
            "deployment"
        } else {
            "configmap"
        };
        cp.eventually(
            &format!("{gone} pruned"),
            std::time::Duration::from_secs(30),
            || cp.object(kind, Some(ns), gone).is_none(),
        );
    }

    set_user(
        &d,
        &format!(
            "ensure: [{}]\ndelete: [{{apiVersion: v1, kind: ConfigMap, namespace: {ns}, name: web-values}}]\n",
            config_map(ns, "b")
        ),
    );
    let out = d.cli(&["app", "apply", "contract"]);
    assert!(out.status.success(), "{}", d.show("contract"));
    let values = cp
        .object("configmap", Some(ns), "web-values")
        .unwrap_or_default();
    assert!(
        values["data"]["values"]
            .as_str()
            .is_some_and(|v| v.contains("web-values")),
        "the chart's ConfigMap is not whole again: {values}"
    );
    d.ok(&["app", "remove", "contract"]);
    cp.delete_namespace(ns);
}

/// A 0.1 component built before contract 0.2 existed (the storage
/// example at commit 42a9c76, kept as a binary in
/// `tests/fixtures/contract-0.1`) still answers through today's host
/// exactly as the shared vectors, which predate 0.2 too, say: every
/// chart's values on every facts vector, byte for byte.
#[test]
fn a_0_1_component_built_before_0_2_answers_the_shared_vectors_byte_for_byte() {
    let root = crate::support::workspace_root();
    let wasm = root.join("tests/fixtures/contract-0.1/storage-42a9c76.wasm");
    let vectors = root.join("tests/fixtures/vectors");
    let inspect = crate::support::capstan()
        .args(["plugin", "inspect"])
        .arg(&wasm)
        .output()
        .unwrap();
    let shown = crate::daemon::text(&inspect.stdout);
    assert!(inspect.status.success() && shown.contains("0.1"), "{shown}");
    let mut checked = 0;
    // The facts the storage vectors are for (simplex and standard: the
    // duplex facts have no Ceph backend, which the plugin refuses).
    for facts in ["simplex", "standard"] {
        let out = crate::support::capstan()
            .args(["plugin", "run"])
            .arg(&wasm)
            .arg("--facts")
            .arg(vectors.join("facts").join(format!("{facts}.json")))
            .args(["-o", "json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", crate::daemon::text(&out.stderr));
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        for entry in std::fs::read_dir(vectors.join("storage")).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let Some((vector_facts, chart)) = file.trim_end_matches(".json").split_once('.') else {
                continue;
            };
            if vector_facts != facts {
                continue;
            }
            let text = serde_json::to_string_pretty(&answer["overrides"][chart]).unwrap() + "\n";
            assert_eq!(
                text,
                std::fs::read_to_string(&path).unwrap(),
                "{}",
                path.display()
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "the storage vectors");
}

/// Secrecy on the real control plane: a generated password lives in its
/// Secret and where the chart puts it, and in none of the daemon log, the
/// live diff (a server-side dry run), `override show`, `app show`, the
/// history, the metrics, the status page, the API or the Kubernetes
/// Events the daemon writes.
#[test]
fn a_generated_secret_is_shown_nowhere_on_the_real_control_plane() {
    use base64::Engine as _;
    let Some(cp) = crate::control_plane::control_plane() else {
        return;
    };
    let ns = "cp-secrecy";
    cp.delete_namespace(ns);
    let d = cp.daemon("cp_secrecy");
    let bundle = cluster_app(&d, ns, "pre-apply, post-apply", "");
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    set_user(&d, "askSecret: true\n");
    d.ok(&["app", "apply", "contract"]);
    let encoded = cp.kubectl_ok(&[
        "get",
        "secret",
        "contract.db",
        "-n",
        ns,
        "-o",
        "jsonpath={.data.password}",
    ]);
    let password = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(password.len(), 24, "{password:?}");
    let values = cp
        .object("configmap", Some(ns), "web-values")
        .unwrap_or_default();
    assert!(
        values["data"]["values"]
            .as_str()
            .is_some_and(|v| v.contains(&password)),
        "the chart does not get the value: {values}"
    );

    // A change, diffed by the server and applied: the diff shows the
    // change and hides the value.
    set_user(&d, "askSecret: true\ngreeting: again\n");
    let diff = d.ok(&["app", "diff", "contract"]);
    assert!(diff.contains("again"), "{diff}");
    d.ok(&["app", "apply", "contract"]);
    let mut seen = vec![
        ("diff", diff),
        ("log", d.log()),
        (
            "override show",
            d.ok(&["override", "show", "contract", "web", "-o", "json"]),
        ),
        ("app show", d.ok(&["app", "show", "contract", "-o", "json"])),
        (
            "history",
            d.ok(&["app", "history", "contract", "-o", "json"]),
        ),
        (
            "events",
            cp.kubectl_ok(&["get", "events", "-n", ns, "-o", "json"]),
        ),
    ];
    for (path, label) in [
        ("/metrics", "metrics"),
        ("/ui", "status page"),
        ("/ui/apps/contract", "app page"),
        ("/v1/apps/contract", "api"),
    ] {
        let (_, body) = d.http("GET", path, "text/plain", b"");
        seen.push((label, body));
    }
    for (label, text) in &seen {
        assert!(
            !text.contains(&password),
            "the generated secret is in the {label}"
        );
    }
    d.ok(&["app", "remove", "contract"]);
    cp.delete_namespace(ns);
}

/// The platform-storage example on the real control plane: its values
/// from the storage facts (laid over the cluster's with `--facts`), and an
/// update whose CSIDriver changes a field the server refuses to change in
/// place (`attachRequired`): the plugin's `pre-update` delete removes the
/// old one and the chart, applied after, creates the new one. Its
/// StorageClass is named after the backend (not the default `general`,
/// which the control plane's own StorageClasses hold).
#[test]
fn the_platform_storage_example_replaces_its_immutable_csi_driver_on_a_real_cluster() {
    let Some(cp) = crate::control_plane::control_plane() else {
        return;
    };
    let ns = "kube-storage";
    cp.delete_namespace(ns);
    let _ = cp.kubectl(&[
        "delete",
        "csidriver",
        "rbd.csi.example.dev",
        "--ignore-not-found",
    ]);
    let _ = cp.kubectl(&["delete", "storageclass", "ceph-store", "--ignore-not-found"]);
    let mut d = cp.daemon("cp_platform_storage");
    d.kill();
    let facts = d.dir.join("ceph-facts.yaml");
    std::fs::write(
        &facts,
        std::fs::read_to_string(example_facts("platform-storage", "duplex-ceph.yaml"))
            .unwrap()
            .replace("isDefault: true", "isDefault: false"),
    )
    .unwrap();
    d.spawn_with_facts(&facts);
    let v1 = d.app_bundle("platform-storage", "1.0.0", |_| {});
    d.ok(&["app", "upload", v1.to_str().unwrap()]);
    d.ok(&["app", "apply", "platform-storage"]);
    assert_eq!(d.state_of("platform-storage"), "applied", "{}", d.log());
    let class = cp
        .object("storageclass", None, "ceph-store")
        .unwrap_or_default();
    assert_eq!(
        class["parameters"]["clusterID"], "6b3e2f4a-0c1d-4c9e-9f7a-2d5b8e1a3c70",
        "{class}"
    );
    let driver = cp
        .object("csidriver", None, "rbd.csi.example.dev")
        .unwrap_or_default();
    assert_eq!(driver["spec"]["attachRequired"], true, "{driver}");
    let uid = driver["metadata"]["uid"].clone();

    let v11 = d.app_bundle("platform-storage", "1.1.0", |app| {
        let file = app.join("charts/csi-rbd/templates/csidriver.yaml");
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(
            &file,
            text.replace("attachRequired: true", "attachRequired: false"),
        )
        .unwrap();
    });
    d.ok(&["app", "update", v11.to_str().unwrap()]);
    assert_eq!(d.state_of("platform-storage"), "applied", "{}", d.log());
    let driver = cp
        .object("csidriver", None, "rbd.csi.example.dev")
        .unwrap_or_default();
    assert_eq!(driver["spec"]["attachRequired"], false, "{driver}");
    assert_ne!(
        driver["metadata"]["uid"], uid,
        "the CSIDriver was not made anew"
    );
    assert!(
        d.log().contains(
            "deleted CSIDriver rbd.csi.example.dev (storage.k8s.io/v1) at a plugin's request"
        ),
        "{}",
        d.log()
    );
    d.ok(&["app", "remove", "platform-storage"]);
    assert!(
        cp.object("csidriver", None, "rbd.csi.example.dev")
            .is_none()
    );
    cp.delete_namespace(ns);
}

/// The oidc example on the real control plane: the platform CA mirrored
/// into its namespace (the operator's policy lists the source), a client
/// secret generated once and placed in the Dex config Secret, and version
/// 2's renamed chart taking the user overrides its `pre-update` hook
/// moves across, with the same client secret and the old release gone.
#[test]
fn the_oidc_example_mirrors_generates_and_moves_overrides_on_a_real_cluster() {
    use base64::Engine as _;
    let Some(cp) = crate::control_plane::control_plane() else {
        return;
    };
    for ns in ["oidc", "platform-ca"] {
        cp.delete_namespace(ns);
    }
    cp.kubectl_ok(&["create", "namespace", "platform-ca"]);
    cp.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "ca",
        "-n",
        "platform-ca",
        "--from-literal=ca.crt=ca-bytes",
    ]);
    let policy = crate::support::fresh_dir("cp_oidc_policy").join("policy.yaml");
    std::fs::create_dir_all(policy.parent().unwrap()).unwrap();
    std::fs::write(
        &policy,
        "apps:\n  oidc:\n    mirrorFrom: [platform-ca/ca]\n",
    )
    .unwrap();
    let mut d = Daemon::start_with_target(
        "cp_oidc",
        vec![
            "--kubeconfig".into(),
            cp.capstan_kubeconfig().display().to_string(),
            "--action-policy".into(),
            policy.display().to_string(),
        ],
    );
    d.kill();
    d.spawn_with_facts(&example_facts("oidc", "duplex-oam.yaml"));
    let v1 = d.app_bundle("oidc", "1.0.0", |_| {});
    d.ok(&["app", "upload", v1.to_str().unwrap()]);
    d.ok(&[
        "override",
        "set",
        "oidc",
        "dex",
        "--set",
        "image=registry.example.invalid/dex:2.42",
    ]);
    d.ok(&["app", "apply", "oidc"]);
    assert_eq!(d.state_of("oidc"), "applied", "{}", d.show("oidc"));
    let decoded = |name: &str, key: &str| -> String {
        let encoded = cp.kubectl_ok(&[
            "get",
            "secret",
            name,
            "-n",
            "oidc",
            "-o",
            &format!("jsonpath={{.data.{}}}", key.replace('.', "\\.")),
        ]);
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .unwrap_or_default(),
        )
        .unwrap_or_default()
    };
    assert_eq!(decoded("oidc-ca", "ca.crt"), "ca-bytes");
    let mirrored = cp
        .object("secret", Some("oidc"), "oidc-ca")
        .unwrap_or_default();
    assert_eq!(
        mirrored["metadata"]["annotations"]["capstan.dev/mirrored-from"], "platform-ca/ca",
        "{mirrored}"
    );
    let secret = decoded("oidc.client-secret", "password");
    assert_eq!(secret.len(), 32, "{secret:?}");
    let config = decoded("dex-config", "config.yaml");
    assert!(
        config.contains("issuer: https://[fd00:10::2]:30556/dex")
            && config.contains(&format!("secret: \"{secret}\"")),
        "{config}"
    );
    let deployment = cp
        .object("deployment", Some("oidc"), "dex")
        .unwrap_or_default();
    assert!(deployment.to_string().contains("dex:2.42"), "{deployment}");

    let v2 = d.app_bundle("oidc", "2.0.0", oidc_v2);
    d.ok(&["app", "update", v2.to_str().unwrap()]);
    assert_eq!(d.state_of("oidc"), "applied", "{}", d.show("oidc"));
    assert_eq!(decoded("oidc.client-secret", "password"), secret);
    // The renamed chart's release took the old one's objects over (same
    // names), and removing the old release left them.
    for (kind, name) in [("secret", "dex-config"), ("deployment", "dex")] {
        let object = cp.object(kind, Some("oidc"), name).unwrap_or_default();
        assert_eq!(
            object["metadata"]["annotations"]["app.capstan.dev/release"], "oidc/oidc-dex",
            "{object}"
        );
    }
    assert!(decoded("dex-config", "config.yaml").contains(&secret));
    let moved: Value =
        serde_json::from_str(&d.ok(&["override", "show", "oidc", "oidc-dex", "-o", "json"]))
            .unwrap();
    assert_eq!(
        moved["merged"]["image"], "registry.example.invalid/dex:2.42",
        "{moved}"
    );
    d.ok(&["app", "remove", "oidc"]);
    assert!(cp.object("secret", Some("oidc"), "oidc-ca").is_none());
    assert!(
        cp.object("secret", Some("oidc"), "oidc.client-secret")
            .is_none()
    );
    for ns in ["oidc", "platform-ca"] {
        cp.delete_namespace(ns);
    }
}
