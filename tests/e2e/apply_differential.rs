//! Helm 4 as a differential oracle for apply semantics, on the real
//! control plane: each chart of a corpus goes through the same four steps
//! with the real Helm (v4.3.2, built from `test-support/control-plane/helm`) and
//! with capstan, one after the other in the same namespace under the same
//! release name, and what each step leaves is compared.
//!
//! | step | Helm 4 | capstan |
//! |---|---|---|
//! | install | `helm install --wait --wait-for-jobs` | `app upload` + `app apply` |
//! | same | `helm upgrade` with nothing changed | `app apply` again |
//! | changed | `helm upgrade -f changed.yaml` | `override set -f changed.yaml` + `app apply` |
//! | uninstall | `helm uninstall --wait` | `app remove` |
//!
//! Helm runs as the admin, capstan as its ServiceAccount
//! (`deploy/clusterrole.yaml`); both apply server-side. After each step
//! the test compares:
//!
//! - the outcome: success, or failure naming the same object (a case's
//!   `fails` in `case.json`);
//! - the live objects of every kind the chart renders (hooks and CRDs
//!   included) and the claims its StatefulSets make, in the release's
//!   namespace and the namespaces the chart names, by kind, namespace and
//!   name; cluster-scoped ones by the names the chart renders;
//! - each object's content after the server's defaulting, masked by
//!   [`mask`]: what the server or a controller generates (uids, versions,
//!   times, managed fields, status, cluster IPs, node ports, a claim's
//!   volume, a Job's controller-uid labels), what each tool stamps on for
//!   itself (Helm's `meta.helm.sh/*` annotations and
//!   `app.kubernetes.io/managed-by` label, capstan's `capstan.dev/*` and
//!   `app.capstan.dev/*` ones), and the values of Secrets and `checksum/*`
//!   annotations (random passwords differ between the two runs; a case's
//!   `stable` keys are checked to keep their value across upgrades on each
//!   side instead).
//!
//! Every difference is either a failure or listed in
//! [`DELIBERATE_DIFFERENCES`] with its reason, and each listed difference
//! must still occur (so the list only holds real ones) and must stand in
//! the book's table (`docs/src/apps/charts.md`), which is checked against
//! this list.
//!
//! The corpus: `tests/apply-charts/` (charts written for the patterns
//! that matter, and the example apps' charts), and the charts of
//! `../shared/helm-conformance` when it is there (every chart with its
//! default values, `commonLabels` changed for the third step).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::control_plane::{ControlPlane, control_plane};
use crate::daemon::{Daemon, text};
use crate::support::{self, fresh_dir, workspace_root};

/// The steps, in order.
const STEPS: [&str; 4] = ["install", "same", "changed", "uninstall"];

/// Differences between what Helm 4 and capstan leave, each deliberate:
/// (case or `*`, step or `*`, the difference as [`diff`] words it, a
/// trailing `*` matching any end, the reason). A row of one case must
/// occur in that case; a `*` row at least once in each run. The book's table (`docs/src/apps/charts.md`) lists the same
/// differences; the test checks that it does.
pub const DELIBERATE_DIFFERENCES: &[(&str, &str, &str, &str)] = &[
    (
        "*",
        "uninstall",
        "only capstan left PersistentVolumeClaim/*",
        "a remove keeps the claims a chart rendered unless `--purge-volumes`: the data outlives the app until the operator says otherwise",
    ),
    (
        "pruning",
        "changed",
        "only capstan left Namespace/pruning-extra",
        "an upgrade never deletes a Namespace the chart stopped rendering: deleting one deletes everything in it, whoever made it; `app remove --purge` or kubectl does",
    ),
    (
        "pruning",
        "changed",
        "only capstan left CustomResourceDefinition/things.pruning.capstan.test",
        "an upgrade never deletes a CustomResourceDefinition the chart stopped rendering: deleting one deletes every resource of it, in every namespace",
    ),
    (
        "pruning",
        "uninstall",
        "only capstan left Namespace/pruning-extra",
        "what an upgrade kept (above) has left the release, so a remove leaves it too",
    ),
    (
        "pruning",
        "uninstall",
        "only capstan left CustomResourceDefinition/things.pruning.capstan.test",
        "what an upgrade kept (above) has left the release, so a remove leaves it too",
    ),
];

/// A chart to put through the steps.
struct Case {
    /// The release name and the app's (also the namespace, prefixed).
    name: String,
    chart: PathBuf,
    /// The values of the third step.
    changed: PathBuf,
    /// The object both must fail at on install (`Kind/name`), if any.
    fails: Option<String>,
    /// Secret keys (`Kind/name:key`) that keep their value across steps.
    stable: Vec<String>,
}

impl Case {
    fn namespace(&self) -> String {
        format!("ad-{}", self.name)
    }
}

/// The cases under `tests/apply-charts/`.
fn local_cases() -> Vec<Case> {
    let root = workspace_root().join("tests/apply-charts");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/apply-charts exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("chart").exists())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let chart = dir.join("chart");
            let chart = if chart.is_dir() {
                chart
            } else {
                let rel = std::fs::read_to_string(&chart).expect("reading a case's chart file");
                dir.join(rel.trim())
            };
            let spec: Value = std::fs::read_to_string(dir.join("case.json"))
                .ok()
                .map(|t| serde_json::from_str(&t).expect("case.json is JSON"))
                .unwrap_or(Value::Null);
            Case {
                name,
                chart,
                changed: dir.join("changed.yaml"),
                fails: spec["fails"].as_str().map(str::to_owned),
                stable: spec["stable"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
            }
        })
        .collect()
}

/// The charts of `../shared/helm-conformance` (when present), each with
/// its default values; the third step changes `commonLabels`, which every
/// Bitnami chart puts on every object.
fn conformance_cases(dir: &Path) -> Vec<Case> {
    let root = dir.join("charts");
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let changed = fresh_dir("apply-diff-conformance-values").join("changed.yaml");
    std::fs::write(&changed, "commonLabels:\n  capstan-diff: changed\n").expect("writing values");
    let mut charts: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("Chart.yaml").is_file())
        .collect();
    charts.sort();
    charts
        .into_iter()
        .map(|chart| Case {
            name: format!(
                "bn-{}",
                chart
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ),
            chart,
            changed: changed.clone(),
            fails: None,
            stable: Vec::new(),
        })
        .collect()
}

/// What one side left after one step.
#[derive(Debug)]
struct Observed {
    /// `Ok` or the failure's text.
    outcome: Result<(), String>,
    /// Masked objects by `Kind/namespace/name` (`Kind/name` when
    /// cluster-scoped).
    objects: BTreeMap<String, Value>,
    /// The `stable` Secret values, by key.
    stable: BTreeMap<String, String>,
}

/// Helm, with its own config, cache and data folders, as the admin.
struct Helm {
    binary: PathBuf,
    home: PathBuf,
    kubeconfig: PathBuf,
}

impl Helm {
    fn run(&self, args: &[&str]) -> Output {
        Command::new(&self.binary)
            .args(args)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .env("HELM_CACHE_HOME", self.home.join("cache"))
            .env("HELM_CONFIG_HOME", self.home.join("config"))
            .env("HELM_DATA_HOME", self.home.join("data"))
            .output()
            .expect("running helm")
    }

    fn step(&self, case: &Case, step: &str) -> Result<(), String> {
        let ns = case.namespace();
        let chart = case.chart.display().to_string();
        let changed = case.changed.display().to_string();
        let wait = ["--wait", "--wait-for-jobs", "--timeout", "90s"];
        let mut args: Vec<&str> = match step {
            "install" => vec![
                "install",
                &case.name,
                &chart,
                "-n",
                &ns,
                "--create-namespace",
            ],
            "same" => vec!["upgrade", &case.name, &chart, "-n", &ns],
            "changed" => vec!["upgrade", &case.name, &chart, "-n", &ns, "-f", &changed],
            _ => vec![
                "uninstall",
                &case.name,
                "-n",
                &ns,
                "--wait",
                "--timeout",
                "90s",
            ],
        };
        if step != "uninstall" {
            args.extend(wait);
        }
        outcome(&self.run(&args))
    }
}

fn outcome(out: &Output) -> Result<(), String> {
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{}{}", text(&out.stderr), text(&out.stdout)))
    }
}

/// The app folder for `case`: `capstan.yaml` with one chart, released as
/// Helm releases it.
fn app_folder(dir: &Path, case: &Case) -> PathBuf {
    let app = dir.join(format!("app-{}", case.name));
    let _ = std::fs::remove_dir_all(&app);
    let charts = app.join("charts");
    std::fs::create_dir_all(&charts).expect("creating the app folder");
    support::copy_dir(&case.chart, &charts.join("main"));
    let meta = format!(
        "name: {name}\nversion: 1.0.0\ncharts:\n  - name: main\n    path: charts/main\n    \
         namespace: {ns}\n    release: {name}\n    timeout: 90s\nchart_groups:\n  - name: all\n    \
         mode: sequential\n    charts: [main]\n",
        name = case.name,
        ns = case.namespace()
    );
    std::fs::write(app.join("capstan.yaml"), meta).expect("writing capstan.yaml");
    app
}

fn capstan_step(d: &Daemon, case: &Case, step: &str) -> Result<(), String> {
    let name = case.name.as_str();
    let changed = case.changed.display().to_string();
    match step {
        "install" => outcome(&d.cli(&["app", "apply", name])),
        "same" => outcome(&d.cli(&["app", "apply", name])),
        "changed" => {
            outcome(&d.cli(&["override", "set", name, "main", "-f", &changed]))?;
            outcome(&d.cli(&["app", "apply", name]))
        }
        _ => outcome(&d.cli(&["app", "remove", name])),
    }
}

/// What the chart renders: `(apiVersion, kind, namespace or "", name)`,
/// hooks and CRDs included, from `helm template` with the case's values.
fn rendered(helm: &Helm, case: &Case) -> Vec<(String, String, String, String)> {
    let ns = case.namespace();
    let chart = case.chart.display().to_string();
    let changed = case.changed.display().to_string();
    let mut out = Vec::new();
    for extra in [None, Some(changed.as_str())] {
        let mut args = vec![
            "template",
            &case.name,
            &chart,
            "-n",
            &ns,
            "--include-crds",
            "--kube-version",
            "1.37.2",
        ];
        if let Some(file) = extra {
            args.extend(["-f", file]);
        }
        let o = helm.run(&args);
        assert!(
            o.status.success(),
            "helm template {}: {}",
            case.name,
            text(&o.stderr)
        );
        for doc in text(&o.stdout).split("\n---") {
            let Ok(v) = serde_yaml_ng::from_str::<Value>(doc) else {
                continue;
            };
            let s = |p: &str| {
                v.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            if s("/kind").is_empty() {
                continue;
            }
            let entry = (
                s("/apiVersion"),
                s("/kind"),
                s("/metadata/namespace"),
                s("/metadata/name"),
            );
            if !out.contains(&entry) {
                out.push(entry);
            }
        }
    }
    out
}

/// What the cluster holds of `case` now (see the module doc), masked.
fn observe(
    cp: &ControlPlane,
    case: &Case,
    render: &[(String, String, String, String)],
) -> BTreeMap<String, Value> {
    let release_ns = case.namespace();
    let mut namespaces: BTreeSet<String> = BTreeSet::from([release_ns.clone()]);
    for (_, kind, ns, name) in render {
        if kind == "Namespace" {
            namespaces.insert(name.clone());
        } else if !ns.is_empty() {
            namespaces.insert(ns.clone());
        }
    }
    let mut kinds: BTreeSet<String> = render
        .iter()
        .map(|(api, kind, _, _)| resource_arg(api, kind))
        .collect();
    if render.iter().any(|(_, kind, _, _)| kind == "StatefulSet") {
        kinds.insert(resource_arg("v1", "PersistentVolumeClaim"));
    }
    let mut objects = BTreeMap::new();
    for kind in &kinds {
        let out = cp.kubectl(&[
            "get",
            kind,
            "-A",
            "-o",
            "json",
            "--show-managed-fields=false",
        ]);
        if !out.status.success() {
            // A kind the chart's own CRD serves, not (or no longer) there.
            continue;
        }
        let list: Value = serde_json::from_slice(&out.stdout).expect("kubectl -o json");
        for item in list["items"].as_array().into_iter().flatten() {
            let s = |p: &str| {
                item.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            let (k, ns, name) = (s("/kind"), s("/metadata/namespace"), s("/metadata/name"));
            let ours = if ns.is_empty() {
                // Cluster-scoped: only what the chart renders (a Namespace
                // the chart renders too, never the release's own).
                render.iter().any(|(_, rk, _, rn)| *rk == k && *rn == name)
            } else {
                namespaces.contains(&ns)
            };
            // Being deleted counts as gone: Helm's upgrade does not wait
            // for the deletions of what it prunes.
            let deleting = item
                .pointer("/metadata/deletionTimestamp")
                .is_some_and(|t| !t.is_null());
            if !ours || deleting || is_ambient(item) {
                continue;
            }
            let key = if ns.is_empty() {
                format!("{k}/{name}")
            } else {
                format!("{k}/{ns}/{name}")
            };
            objects.insert(key, mask(item));
        }
    }
    objects
}

/// `kubectl get` argument for a kind: `Kind.group` (`Kind` for the core
/// group), so that same-named kinds of two groups stay apart.
fn resource_arg(api_version: &str, kind: &str) -> String {
    match api_version.rsplit_once('/') {
        Some((group, _)) => format!("{kind}.{group}"),
        None => kind.to_string(),
    }
}

/// Objects the cluster makes in every namespace, or each tool keeps for
/// itself: never part of the comparison.
fn is_ambient(item: &Value) -> bool {
    let s = |p: &str| item.pointer(p).and_then(Value::as_str).unwrap_or("");
    matches!(
        (s("/kind"), s("/metadata/name")),
        ("ConfigMap", "kube-root-ca.crt") | ("ServiceAccount", "default")
    ) || matches!(s("/type"), "helm.sh/release.v1" | "capstan.dev/release.v1")
        || (s("/kind") == "Event")
}

/// The labels the Job controller's admission puts on a Job's Pods.
const JOB_LABELS: [&str; 4] = [
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
];

/// Label and annotation keys each tool stamps on for itself.
fn own_key(key: &str) -> bool {
    key.starts_with("meta.helm.sh/")
        || key.starts_with("capstan.dev/")
        || key.starts_with("app.capstan.dev/")
        || key == "app.kubernetes.io/managed-by"
}

/// An object with what differs by nature between two runs masked (see
/// the module doc for the rules).
pub fn mask(item: &Value) -> Value {
    let mut v = item.clone();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
            "selfLink",
        ] {
            meta.remove(key);
        }
        for field in ["labels", "annotations"] {
            if let Some(map) = meta.get_mut(field).and_then(Value::as_object_mut) {
                map.retain(|k, _| !own_key(k));
                mask_generated_keys(map);
                if map.is_empty() {
                    meta.remove(field);
                }
            }
        }
    }
    if let Some(obj) = v.as_object_mut() {
        obj.remove("status");
    }
    let kind = item.get("kind").and_then(Value::as_str).unwrap_or("");
    let masked = Value::String("<generated>".into());
    match kind {
        "Service" => {
            if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
                for key in ["clusterIP", "clusterIPs", "healthCheckNodePort"] {
                    if spec.contains_key(key) {
                        spec.insert(key.into(), masked.clone());
                    }
                }
                for port in spec
                    .get_mut("ports")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    if let Some(p) = port.as_object_mut()
                        && p.contains_key("nodePort")
                    {
                        p.insert("nodePort".into(), masked.clone());
                    }
                }
            }
        }
        "Secret" => {
            for field in ["data", "stringData"] {
                if let Some(map) = v.get_mut(field).and_then(Value::as_object_mut) {
                    for value in map.values_mut() {
                        *value = masked.clone();
                    }
                }
            }
        }
        "PersistentVolumeClaim" => {
            if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut)
                && spec.contains_key("volumeName")
            {
                spec.insert("volumeName".into(), masked.clone());
            }
        }
        "Job" => {
            // The server copies the template's labels (the Job
            // controller's uid and name among them) to a Job that has no
            // labels of its own; capstan's always has its own.
            if let Some(labels) = v
                .pointer_mut("/metadata/labels")
                .and_then(Value::as_object_mut)
            {
                labels.retain(|k, _| !JOB_LABELS.contains(&k.as_str()));
                if labels.is_empty()
                    && let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut)
                {
                    meta.remove("labels");
                }
            }
            for pointer in [
                "/spec/selector/matchLabels",
                "/spec/template/metadata/labels",
            ] {
                if let Some(map) = v.pointer_mut(pointer).and_then(Value::as_object_mut) {
                    mask_generated_keys(map);
                }
            }
        }
        "ServiceAccount" => {
            if let Some(obj) = v.as_object_mut() {
                obj.remove("secrets");
            }
        }
        _ => {}
    }
    for pointer in ["/spec/template/metadata/annotations"] {
        if let Some(map) = v.pointer_mut(pointer).and_then(Value::as_object_mut) {
            mask_generated_keys(map);
        }
    }
    for hook in v
        .get_mut("webhooks")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(config) = hook.get_mut("clientConfig").and_then(Value::as_object_mut)
            && config.contains_key("caBundle")
        {
            config.insert("caBundle".into(), masked.clone());
        }
    }
    v
}

/// Masks the values of keys generated per run: a Job's controller-uid
/// labels, `checksum/*` annotations of random values, the PV binder's
/// annotations.
fn mask_generated_keys(map: &mut serde_json::Map<String, Value>) {
    for (key, value) in map.iter_mut() {
        if key.ends_with("controller-uid")
            || key.starts_with("checksum/")
            || key.starts_with("pv.kubernetes.io/")
            || key.starts_with("volume.kubernetes.io/")
            || key.starts_with("volume.beta.kubernetes.io/")
        {
            *value = Value::String("<generated>".into());
        }
    }
}

/// The `stable` Secret values of `case` now.
fn stable_values(cp: &ControlPlane, case: &Case) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for entry in &case.stable {
        let Some((object, key)) = entry.split_once(':') else {
            continue;
        };
        let Some((_, name)) = object.split_once('/') else {
            continue;
        };
        if let Some(secret) = cp.object("secret", Some(&case.namespace()), name) {
            let value = secret["data"][key].as_str().unwrap_or_default().to_owned();
            out.insert(entry.clone(), value);
        }
    }
    out
}

/// The differences between Helm's and capstan's observations of one step,
/// each as one line.
fn diff(helm: &Observed, capstan: &Observed, fails: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    match (&helm.outcome, &capstan.outcome) {
        (Ok(()), Ok(())) => {}
        (Err(h), Err(c)) => {
            if let Some(object) = fails {
                let name = object.split_once('/').map_or(object, |(_, n)| n);
                for (who, message) in [("Helm", h), ("capstan", c)] {
                    if !message.contains(name) {
                        out.push(format!(
                            "{who} failed without naming {object}: {}",
                            failure_line(message)
                        ));
                    }
                }
            }
        }
        (Ok(()), Err(c)) => out.push(format!("only capstan failed: {}", failure_line(c))),
        (Err(h), Ok(())) => out.push(format!("only Helm failed: {}", failure_line(h))),
    }
    for (key, h) in &helm.objects {
        match capstan.objects.get(key) {
            None => out.push(format!("only Helm left {key}")),
            Some(c) if c != h => out.push(format!("{key} differs: {}", first_difference(h, c, ""))),
            Some(_) => {}
        }
    }
    for key in capstan.objects.keys() {
        if !helm.objects.contains_key(key) {
            out.push(format!("only capstan left {key}"));
        }
    }
    out
}

/// The line of a failure that says what failed: the one that starts
/// with `error`, else the last one (capstan prints its progress before).
fn failure_line(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let line = lines
        .iter()
        .find(|l| l.to_ascii_lowercase().starts_with("error"))
        .or(lines.last())
        .copied()
        .unwrap_or("");
    line.chars().take(300).collect()
}

/// Where two values first differ: `PATH: helm=… capstan=…`.
fn first_difference(h: &Value, c: &Value, path: &str) -> String {
    match (h, c) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let (x, y) = (
                    a.get(k).unwrap_or(&Value::Null),
                    b.get(k).unwrap_or(&Value::Null),
                );
                if x != y {
                    return first_difference(x, y, &format!("{path}/{k}"));
                }
            }
            format!("{path}: equal")
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if x != y {
                    return first_difference(x, y, &format!("{path}/{i}"));
                }
            }
            format!("{path}: equal")
        }
        _ => format!("{path}: helm={h} capstan={c}"),
    }
}

/// Deletes what a side left: the case's namespaces and the cluster-scoped
/// objects the chart renders (CRDs included), as the admin.
fn clean(cp: &ControlPlane, case: &Case, render: &[(String, String, String, String)]) {
    for (api, kind, ns, name) in render {
        if ns.is_empty() && kind != "Namespace" {
            let _ = cp.kubectl(&[
                "delete",
                &resource_arg(api, kind),
                name,
                "--ignore-not-found",
                "--wait=true",
                "--timeout=60s",
            ]);
        }
    }
    let mut namespaces = vec![case.namespace()];
    namespaces.extend(
        render
            .iter()
            .filter(|(_, kind, _, _)| kind == "Namespace")
            .map(|(_, _, _, name)| name.clone()),
    );
    for ns in namespaces {
        cp.delete_namespace(&ns);
    }
}

/// Runs `cases` through both sides; returns every difference not listed
/// and every listed one that did not occur (and prints each case's time).
/// `CAPSTAN_APPLY_DIFF_CASES=a,b` runs only the cases named (a developer's
/// filter; the rows of the cases left out are then not checked).
fn run_cases(test: &str, cases: &[Case]) -> Vec<String> {
    let only: Option<Vec<String>> = std::env::var("CAPSTAN_APPLY_DIFF_CASES")
        .ok()
        .map(|v| v.split(',').map(str::to_owned).collect());
    let cases: Vec<&Case> = cases
        .iter()
        .filter(|c| only.as_ref().is_none_or(|o| o.contains(&c.name)))
        .collect();
    let Some(cp) = control_plane() else {
        return Vec::new();
    };
    let Some(binary) = support::helm_binary(test) else {
        return Vec::new();
    };
    let dir = fresh_dir(test);
    let helm = Helm {
        binary,
        home: dir.join("helm"),
        kubeconfig: cp.admin_kubeconfig(),
    };
    let d = cp.daemon(test);
    let mut problems = Vec::new();
    let mut wildcards_seen = BTreeSet::new();
    for case in cases.iter().copied() {
        let started = std::time::Instant::now();
        let render = rendered(&helm, case);
        clean(&cp, case, &render);
        // A case that fails on install is uninstalled after it, no upgrade.
        let steps: Vec<&str> = STEPS
            .iter()
            .copied()
            .filter(|s| case.fails.is_none() || !matches!(*s, "same" | "changed"))
            .collect();
        let mut sides: Vec<Vec<Observed>> = Vec::new();
        for side in ["helm", "capstan"] {
            if side == "capstan" {
                let app = app_folder(&dir, case);
                let bundle = dir.join(format!("{}.tgz", case.name));
                let built = d.build(&app, &bundle);
                assert!(
                    built.status.success(),
                    "bundle build {}: {}",
                    case.name,
                    text(&built.stderr)
                );
                d.ok(&["app", "upload", &bundle.display().to_string()]);
            }
            let mut seen = Vec::new();
            for &step in &steps {
                let outcome = match side {
                    "helm" => helm.step(case, step),
                    _ => capstan_step(&d, case, step),
                };
                seen.push(Observed {
                    outcome,
                    objects: observe(&cp, case, &render),
                    stable: stable_values(&cp, case),
                });
            }
            if side == "capstan" {
                let _ = d.cli(&["app", "delete", &case.name]);
            }
            clean(&cp, case, &render);
            sides.push(seen);
        }
        let mut found = BTreeSet::new();
        for (i, step) in steps.iter().enumerate() {
            for line in diff(&sides[0][i], &sides[1][i], case.fails.as_deref()) {
                let listed = DELIBERATE_DIFFERENCES.iter().find(|(c, s, d, _)| {
                    (*c == "*" || *c == case.name)
                        && (*s == "*" || s == step)
                        && match d.strip_suffix('*') {
                            Some(prefix) => line.starts_with(prefix),
                            None => *d == line,
                        }
                });
                if let Some((c, s, d, _)) = listed {
                    if *c == "*" {
                        wildcards_seen.insert((s.to_string(), d.to_string()));
                    }
                    found.insert((step.to_string(), line));
                } else {
                    problems.push(format!("{} {step}: {line}", case.name));
                }
            }
        }
        for (c, s, d, _) in DELIBERATE_DIFFERENCES {
            if *c == case.name && !found.contains(&(s.to_string(), d.to_string())) {
                problems.push(format!("{} {s}: listed but did not occur: {d}", case.name));
            }
        }
        for (who, seen) in ["Helm", "capstan"].iter().zip(&sides) {
            for key in &case.stable {
                let values: BTreeSet<&String> = seen
                    .iter()
                    .take_while(|o| o.outcome.is_ok())
                    .filter_map(|o| o.stable.get(key))
                    .collect();
                if values.len() != 1 {
                    problems.push(format!(
                        "{} {who}: {key} did not keep one value: {values:?}",
                        case.name
                    ));
                }
            }
        }
        eprintln!(
            "apply differential: {} in {:.1?}",
            case.name,
            started.elapsed()
        );
    }
    for (c, s, d, _) in DELIBERATE_DIFFERENCES {
        if *c == "*" && only.is_none() && !wildcards_seen.contains(&(s.to_string(), d.to_string()))
        {
            problems.push(format!(
                "{s}: listed for every case but occurred in none: {d}"
            ));
        }
    }
    problems
}

/// Every chart of `tests/apply-charts/` goes through Helm 4 and capstan
/// alike (see the module doc).
#[test]
fn charts_install_upgrade_and_uninstall_as_helm_does() {
    assert_agree("apply-diff-local", &local_cases());
}

/// Runs `cases` ([`run_cases`]) and fails with every problem found.
fn assert_agree(test: &str, cases: &[Case]) {
    let problems = run_cases(test, cases);
    assert!(
        problems.is_empty(),
        "{} difference(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The charts of `../shared/helm-conformance` with their default values
/// (`CAPSTAN_HELM_CONFORMANCE` names another place). A missing set is a
/// failure, as in `render_conformance`, unless
/// `CAPSTAN_HELM_CONFORMANCE=off`.
#[test]
fn conformance_charts_install_upgrade_and_uninstall_as_helm_does() {
    let setting = std::env::var_os("CAPSTAN_HELM_CONFORMANCE");
    if setting.as_deref() == Some(std::ffi::OsStr::new("off")) {
        eprintln!("CAPSTAN_HELM_CONFORMANCE=off: skipped");
        return;
    }
    let dir = setting
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared/helm-conformance"));
    let cases = conformance_cases(&dir);
    assert!(
        !cases.is_empty(),
        "no helm conformance charts at {} (CAPSTAN_HELM_CONFORMANCE=off skips this test)",
        dir.display()
    );
    assert_agree("apply-diff-conformance", &cases);
}

/// The book's table of deliberate differences is this test's list.
#[test]
fn the_books_table_lists_every_deliberate_difference() {
    let page = std::fs::read_to_string(workspace_root().join("docs/src/apps/charts.md"))
        .expect("reading docs/src/apps/charts.md");
    for (case, step, difference, reason) in DELIBERATE_DIFFERENCES {
        let row = format!("| `{case}` | {step} | {difference} | {reason} |");
        assert!(
            page.contains(&row),
            "docs/src/apps/charts.md lacks the row:\n{row}"
        );
    }
}
