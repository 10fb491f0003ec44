//! Facts from the cluster and re-evaluation, on the real control plane:
//! the daemon derives the facts from the Nodes and the server's version,
//! lays the operator's file over them field by field, and when a node is
//! added, relabelled, cordoned or uncordoned plans every applied app
//! again, marking `reapply-needed` only the apps whose plan changes. The
//! change is seen through a watch of the Nodes, not a poll.
//!
//! The test adds a node of its own (`worker-facts`, cordoned while it is
//! not needed) rather than cordoning one that other tests schedule on.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::control_plane::{ControlPlane, control_plane};
use crate::daemon::{Daemon, edit, text};

const NODE: &str = "worker-facts";

fn add_node(cp: &ControlPlane) {
    add_node_named(cp, NODE);
}

fn add_node_named(cp: &ControlPlane, name: &str) {
    let _ = cp.kubectl(&["delete", "node", name, "--ignore-not-found"]);
    let node = format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  annotations:\n    kwok.x-k8s.io/node: fake\n  \
         labels:\n    kubernetes.io/hostname: {name}\n    node-role.kubernetes.io/worker: \"\"\n\
         spec:\n  unschedulable: true\n\
         status:\n  allocatable: {{cpu: \"32\", memory: 128Gi, ephemeral-storage: 500Gi, pods: \"110\"}}\n  \
         capacity: {{cpu: \"32\", memory: 128Gi, ephemeral-storage: 500Gi, pods: \"110\"}}\n"
    );
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &node);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

fn facts(d: &Daemon) -> Value {
    serde_json::from_str(&d.ok(&["facts", "show", "-o", "json"])).expect("facts JSON")
}

fn node_of<'a>(facts: &'a Value, name: &str) -> Option<&'a Value> {
    facts["facts"]["nodes"]
        .as_array()?
        .iter()
        .find(|n| n["name"] == name)
}

fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !check() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not within 30 s: {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// How many re-evaluations the daemon has logged.
fn reevaluations(d: &Daemon) -> usize {
    d.log().matches("re-evaluated").count()
}

#[test]
fn node_changes_reach_the_facts_and_mark_only_the_apps_they_change() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-facts";
    cp.delete_namespace(app);
    add_node(&cp);
    let mut d = cp.daemon(app);
    d.kill();
    let overlay = d.state().with_file_name("site-facts.yaml");
    std::fs::write(&overlay, "extra:\n  site: lab-3\n").unwrap();
    d.spawn_with_facts(&overlay);

    let shown = facts(&d);
    assert_eq!(shown["sources"]["nodes"], "cluster", "{shown}");
    assert_eq!(shown["sources"]["controllerCount"], "cluster");
    assert_eq!(
        shown["sources"]["extra"],
        format!("file {}", overlay.display())
    );
    assert_eq!(shown["facts"]["extra"]["site"], "lab-3");
    assert_eq!(shown["facts"]["controllerCount"], 2);
    assert_eq!(shown["facts"]["systemMode"], "standard");
    assert!(
        shown["facts"]["kubernetesVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("1.37")),
        "{shown}"
    );
    assert_eq!(
        node_of(&shown, NODE).map(|n| n["schedulable"].clone()),
        Some(Value::Bool(false)),
        "a cordoned node is unschedulable"
    );
    // The launcher's StorageClasses (`standard` the default, `general`,
    // `capstan-local`) and
    // what discovery serves, as the 0.2 `cluster` section hands them on.
    assert_eq!(shown["sources"]["storageClasses"], "cluster", "{shown}");
    let classes = &shown["facts"]["storageClasses"];
    let class = |name: &str| {
        classes
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["name"] == name)
            .cloned()
    };
    assert_eq!(
        class("standard").map(|c| c["isDefault"].clone()),
        Some(Value::Bool(true)),
        "{classes}"
    );
    assert_eq!(
        class("general").map(|c| c["isDefault"].clone()),
        Some(Value::Bool(false)),
        "{classes}"
    );
    let served = shown["facts"]["apiVersions"].to_string();
    assert!(
        served.contains("\"apps/v1/Deployment\"") && served.contains("\"storage.k8s.io/v1\""),
        "{served}"
    );
    let table = d.ok(&["facts", "show"]);
    assert!(
        table.contains("(cluster)")
            && table.contains(NODE)
            && table.contains("capstan-local, general, standard (default)"),
        "{table}"
    );

    // The kafka app sizes its brokers from the schedulable workers.
    let bundle = d.app_bundle("kafka", "1.0.0", |a: &Path| {
        let meta = a.join("capstan.yaml");
        edit(&meta, "name: kafka\n", &format!("name: {app}\n"));
        let text = std::fs::read_to_string(&meta).unwrap();
        std::fs::write(
            &meta,
            text.replace("namespace: kafka,", &format!("namespace: {app},")),
        )
        .unwrap();
    });
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());

    // A label nobody reads: the facts change, the app is planned again
    // and not marked.
    let before = reevaluations(&d);
    cp.kubectl_ok(&["label", "node", NODE, "capstan-test/zone=a", "--overwrite"]);
    wait_for("the label in the facts", || {
        node_of(&facts(&d), NODE).is_some_and(|n| n["labels"]["capstan-test/zone"] == "a")
    });
    let shown = facts(&d);
    assert!(
        shown["changes"]
            .to_string()
            .contains(&format!("node {NODE}: label capstan-test/zone=a added")),
        "{shown}"
    );
    wait_for("a re-evaluation", || reevaluations(&d) > before);
    assert!(d.show(app)["reapply_needed"].is_null(), "{}", d.show(app));
    // Seen through the watch, not a poll: the read that found the label
    // followed a watch event, and no watch failed.
    let log = d.log();
    assert!(
        log.lines().any(|l| l.contains("facts changed")
            && l.contains("capstan-test/zone=a")
            && l.contains("a watch event")),
        "{log}"
    );
    assert!(!log.contains("watching the cluster failed"), "{log}");

    // Uncordoned: one more schedulable worker, one more broker.
    cp.kubectl_ok(&["uncordon", NODE]);
    wait_for("the app marked reapply-needed", || {
        d.show(app)["reapply_needed"].is_string()
    });
    let reason = d.show(app)["reapply_needed"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        reason.contains(&format!("node {NODE}: schedulable again")) && reason.contains("broker"),
        "{reason}"
    );
    let list = d.ok(&["app", "list"]);
    assert!(list.contains("applied (reapply-needed)"), "{list}");
    // And a Kubernetes Event on the chart's inventory Secret, where
    // `kubectl get events` shows it.
    let events = cp.kubectl_ok(&[
        "get",
        "events",
        "-n",
        app,
        "--field-selector",
        "reason=ReapplyNeeded",
        "-o",
        "jsonpath={range .items[*]}{.involvedObject.name} {.source.component}: {.message}{\"\\n\"}{end}",
    ]);
    assert!(
        events.contains(&format!(
            "capstan.release.v1.{app}.broker capstan: facts changed"
        )) && events.contains("schedulable again"),
        "{events}"
    );
    let diff = d.cli(&["app", "diff", app, "--detailed-exitcode"]);
    assert_eq!(diff.status.code(), Some(2), "{}", text(&diff.stdout));
    let metrics = d.http("GET", "/metrics", "text/plain", b"").1;
    let counted = metrics
        .lines()
        .find_map(|l| l.strip_prefix("capstan_reapply_needed_total "))
        .and_then(|n| n.trim().parse::<u64>().ok());
    assert!(counted.is_some_and(|n| n >= 1), "{metrics}");
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert!(
        d.show(app)["reapply_needed"].is_null(),
        "an apply clears the mark"
    );

    d.ok(&["app", "remove", app]);
    cp.kubectl_ok(&["cordon", NODE]);
    let _ = cp.kubectl(&["delete", "node", NODE, "--ignore-not-found"]);
    cp.delete_namespace(app);
}

/// `auto_reapply`: when a change of the facts would change the app, the
/// daemon asks its `semantic-check` hook and applies it again on its own;
/// a veto holds it (named in the mark and a Warning Event) and it is
/// tried again once its interval has passed, without another change.
///
/// On the real control plane, for its Events; the facts change through a
/// ConfigMap overlay (`--facts-configmap`, its `extra`), so no node other
/// tests use is touched. The 0.2 fixture plugin answers with the user
/// overrides it was handed (so the stored `vetoCheck` changes the plan
/// that the change of facts has re-evaluated) and vetoes its semantic
/// check while they hold `vetoCheck: true`.
#[test]
fn auto_reapply_applies_on_its_own_and_a_veto_holds_it() {
    let Some(cp) = control_plane() else { return };
    let ns = "cp-auto";
    cp.delete_namespace(ns);
    cp.kubectl_ok(&["create", "namespace", ns]);
    cp.kubectl_ok(&[
        "create",
        "configmap",
        "capstan-facts",
        "-n",
        ns,
        "--from-literal=facts.yaml=extra: {round: 1}",
    ]);
    let d = Daemon::start_with_target(
        "cp_auto_reapply",
        vec![
            "--kubeconfig".into(),
            cp.capstan_kubeconfig().display().to_string(),
            "--facts-configmap".into(),
            format!("{ns}/capstan-facts"),
        ],
    );
    let bundle = crate::contract_v2::cluster_app(
        &d,
        ns,
        "semantic-check, pre-apply, post-apply",
        "auto_reapply: true\nauto_reapply_interval: 1s\n",
    );
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    d.ok(&["app", "apply", "contract"]);
    assert_eq!(d.state_of("contract"), "applied", "{}", d.log());
    let set_user = |values: &str| crate::contract_v2::set_user(&d, values);
    let events = |reason: &str| {
        cp.kubectl_ok(&[
            "get",
            "events",
            "-n",
            ns,
            "--field-selector",
            &format!("reason={reason}"),
            "-o",
            "jsonpath={range .items[*]}{.type} {.involvedObject.name}: {.message}{\"\\n\"}{end}",
        ])
    };
    let mark = || {
        d.show("contract")["reapply_needed"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };

    // Held: the semantic check vetoes; the app stays applied, marked with
    // the veto.
    set_user("vetoCheck: true\n");
    cp.kubectl_ok(&[
        "patch",
        "configmap",
        "capstan-facts",
        "-n",
        ns,
        "--type=merge",
        "-p",
        r#"{"data":{"facts.yaml":"extra: {round: 2}"}}"#,
    ]);
    wait_for("the automatic re-apply held", || {
        mark().contains("automatic re-apply held")
    });
    let held = mark();
    assert!(
        held.contains("facts changed (extra facts changed)")
            && held.contains("vetoed the semantic-check hook: held by vetoCheck (auto)"),
        "{held}"
    );
    assert_eq!(d.state_of("contract"), "applied");
    let warned = events("AutoReapplyHeld");
    assert!(
        warned.contains("Warning capstan.release.v1.contract.web: facts changed"),
        "{warned}"
    );

    // Released: the next try after the interval applies, and says why.
    set_user("vetoCheck: false\n");
    wait_for("the automatic re-apply", || {
        d.show("contract")["reapply_needed"].is_null() && d.state_of("contract") == "applied"
    });
    let history = d.ok(&["app", "history", "contract", "-o", "json"]);
    assert!(
        history.contains("automatic re-apply: facts changed (extra facts changed)"),
        "{history}"
    );
    assert!(
        d.log().contains("automatic re-apply started"),
        "{}",
        d.log()
    );
    let applied = events("AutoReapply");
    assert!(
        applied.contains("Normal capstan.release.v1.contract.web: automatic re-apply"),
        "{applied}"
    );
    let live = cp.kubectl_ok(&[
        "get",
        "configmap",
        "web-values",
        "-n",
        ns,
        "-o",
        "jsonpath={.data.values}",
    ]);
    assert!(
        live.contains("\"vetoCheck\":false"),
        "the re-apply wrote what the plan changed: {live}"
    );

    d.ok(&["app", "remove", "contract"]);
    cp.delete_namespace(ns);
}

/// `reapply_triggers` on the real control plane: an app that declared
/// `node-relabelled` for one label key has its `evaluate-reapply` hook
/// asked when that label of a node changes (and not for another key),
/// handed the node and the label, and is marked when its plugin asks.
#[test]
fn a_relabelled_node_asks_the_apps_that_declared_that_label() {
    let Some(cp) = control_plane() else { return };
    const TRIGGER_NODE: &str = "worker-triggers";
    let ns = "cp-triggers";
    cp.delete_namespace(ns);
    add_node_named(&cp, TRIGGER_NODE);
    let mut d = cp.daemon("cp_triggers");
    // The nodes from the cluster, not from the example facts file.
    d.kill();
    let overlay = d.state().with_file_name("site-facts.yaml");
    std::fs::write(&overlay, "extra: {}\n").unwrap();
    d.spawn_with_facts(&overlay);
    let bundle = crate::contract_v2::cluster_app(
        &d,
        ns,
        "pre-apply, post-apply, evaluate-reapply",
        "reapply_triggers:\n  - {on: node-relabelled, label: capstan-test/rack}\n",
    );
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    crate::contract_v2::set_user(&d, "askReapply: true\n");
    d.ok(&["app", "apply", "contract"]);
    assert_eq!(d.state_of("contract"), "applied", "{}", d.log());

    // Another label: re-evaluated, not asked, not marked.
    let before = reevaluations(&d);
    cp.kubectl_ok(&[
        "label",
        "node",
        TRIGGER_NODE,
        "capstan-test/other=x",
        "--overwrite",
    ]);
    wait_for("a re-evaluation", || reevaluations(&d) > before);
    assert!(
        d.show("contract")["reapply_needed"].is_null(),
        "{}",
        d.show("contract")
    );

    cp.kubectl_ok(&[
        "label",
        "node",
        TRIGGER_NODE,
        "capstan-test/rack=r1",
        "--overwrite",
    ]);
    wait_for("the app marked by its plugin", || {
        d.show("contract")["reapply_needed"].is_string()
    });
    let mark = d.show("contract")["reapply_needed"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        mark.contains(&format!(
            "plugins/v2.wasm asked on node-relabelled (node={TRIGGER_NODE}, label=capstan-test/rack): \
             node-relabelled [node={TRIGGER_NODE} label=capstan-test/rack] auto evaluatereapply"
        )),
        "{mark}"
    );
    d.ok(&["app", "remove", "contract"]);
    let _ = cp.kubectl(&["delete", "node", TRIGGER_NODE, "--ignore-not-found"]);
    cp.delete_namespace(ns);
}
