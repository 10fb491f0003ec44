//! `cargo xtask cluster bench [--dev] [--runs N]`: capstan against its peers
//! on the real control plane, on the same rendered objects: a 200-object
//! app of 4 charts and a 1,500-object app of 30 charts (each chart a
//! Deployment, a Service and ConfigMaps), applied
//!
//! - by capstan (the daemon as the `capstan` ServiceAccount): first apply
//!   (which always waits for readiness), then a re-apply with nothing
//!   changed;
//! - by Helm 4, one release per chart: `install --server-side` without and
//!   with `--wait`, then `upgrade --server-side --wait` with nothing
//!   changed;
//! - by `kubectl apply --server-side` of `helm template`'s output, then
//!   `kubectl wait` for the Deployments.
//!
//! Each in a namespace of its own, emptied between runs. Wall times are
//! medians of N runs; the API requests and writes each tool sent are
//! counted from the API server's audit log (the peers run as the
//! ServiceAccount `capstan-peer`, audited like the daemon). Prints a table
//! for docs/src/developing/performance.md.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{CAPSTAN_NAMESPACE, cluster_dir, kubectl_out};

/// The app sizes: (name, charts, ConfigMaps per chart). Each chart adds a
/// Deployment and a Service, so 4 x (48 + 2) = 200 and 30 x (48 + 2) =
/// 1,500 objects.
const SIZES: &[(&str, usize, usize)] = &[("small", 4, 48), ("large", 30, 48)];

pub fn bench(args: &[String]) -> Result<(), String> {
    let mut runs = 3usize;
    let mut dev = false;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--dev" => dev = true,
            "--runs" => {
                runs = rest
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| (1..=20).contains(n))
                    .ok_or("--runs takes a number from 1 to 20")?;
            }
            other => return Err(format!("cluster bench: unknown argument {other:?}")),
        }
    }
    let mut build = crate::cargo();
    build.args(["build", "-p", "capstan"]);
    if !dev {
        build.arg("--release");
    }
    crate::run(build, "building capstan")?;
    let capstan = crate::target_dir()
        .join(if dev { "debug" } else { "release" })
        .join("capstan");
    if super::for_tests()?.is_none() && !super::status_quiet() {
        return Err("no control plane: Go is needed to build one".into());
    }
    let dir = cluster_dir();
    let work = crate::target_dir().join("cluster-bench");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("creating {}: {e}", work.display()))?;
    let peer_kubeconfig = peer_identity(&dir, &work)?;
    std::fs::create_dir_all(work.join("keys"))
        .map_err(|e| format!("creating the bench keys: {e}"))?;
    run_quiet(
        Command::new(&capstan)
            .args(["keygen", "--name", "bench", "--out"])
            .arg(work.join("keys")),
        "capstan keygen",
    )?;

    let mut table = String::from(
        "| app | tool | step | median wall | requests | writes | writes per object |\n|---|---|---|---:|---:|---:|---:|\n",
    );
    for &(size, charts, configmaps) in SIZES {
        let objects = charts * (configmaps + 2);
        let app_dir = work.join(size);
        write_app(&app_dir, size, charts, configmaps)?;
        let bundle = work.join(format!("{size}.tgz"));
        run_quiet(
            Command::new(&capstan)
                .args(["bundle", "build", "--no-lint"])
                .arg(&app_dir)
                .arg("--key")
                .arg(work.join("keys/bench.key"))
                .arg("--out")
                .arg(&bundle),
            "capstan bundle build",
        )?;
        let mut rows: Vec<Row> = Vec::new();
        for run in 0..runs {
            eprintln!(
                "xtask: bench {size} ({objects} objects), run {} of {runs}",
                run + 1
            );
            let measured = [
                capstan_run(&capstan, &dir, &work, size, &bundle)?,
                helm_run(&dir, &peer_kubeconfig, &app_dir, size, charts)?,
                kubectl_run(&dir, &peer_kubeconfig, &app_dir, &work, size, charts)?,
            ];
            for steps in measured {
                for step in steps {
                    match rows
                        .iter_mut()
                        .find(|r| r.tool == step.tool && r.step == step.step)
                    {
                        Some(row) => row.samples.push(step),
                        None => rows.push(Row {
                            tool: step.tool,
                            step: step.step,
                            samples: vec![step],
                        }),
                    }
                }
            }
        }
        for row in &rows {
            let mut walls: Vec<Duration> = row.samples.iter().map(|s| s.wall).collect();
            walls.sort();
            let median = walls[walls.len() / 2];
            let last = &row.samples[row.samples.len() - 1];
            let _ = writeln!(
                table,
                "| {size} ({objects} objects, {charts} charts) | {} | {} | {:.2} s | {} | {} | {:.2} |",
                row.tool,
                row.step,
                median.as_secs_f64(),
                last.requests,
                last.writes,
                last.writes as f64 / objects as f64
            );
        }
        // The ratios the issue sets targets for.
        let median_of = |tool: &str, step: &str| -> Option<f64> {
            let row = rows.iter().find(|r| r.tool == tool && r.step == step)?;
            let mut walls: Vec<f64> = row.samples.iter().map(|s| s.wall.as_secs_f64()).collect();
            walls.sort_by(f64::total_cmp);
            Some(walls[walls.len() / 2])
        };
        if let (Some(c), Some(h)) = (
            median_of("capstan", "first apply (waits)"),
            median_of("helm", "install --server-side --wait"),
        ) {
            let _ = writeln!(
                table,
                "| {size} | ratio | helm install --wait / capstan first apply | {:.2}x | | | |",
                h / c
            );
        }
        if let (Some(c), Some(h)) = (
            median_of("capstan", "re-apply, nothing changed"),
            median_of("helm", "upgrade --server-side --wait, nothing changed"),
        ) {
            let _ = writeln!(
                table,
                "| {size} | ratio | helm upgrade / capstan re-apply | {:.2}x | | | |",
                h / c
            );
        }
    }
    println!("\n{table}");
    Ok(())
}

struct Step {
    tool: &'static str,
    step: &'static str,
    wall: Duration,
    requests: usize,
    writes: usize,
}

struct Row {
    tool: &'static str,
    step: &'static str,
    samples: Vec<Step>,
}

fn run_quiet(command: &mut Command, what: &str) -> Result<(), String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Times `command`, and counts the audit log's requests and writes of
/// `user` while it ran.
fn timed(
    dir: &Path,
    user: &str,
    tool: &'static str,
    step: &'static str,
    command: &mut Command,
) -> Result<Step, String> {
    let before = audit_len(dir);
    let started = Instant::now();
    run_quiet(command, &format!("{tool} {step}"))?;
    let wall = started.elapsed();
    // The audit backend writes each event as its request ends; give the
    // last ones a moment.
    std::thread::sleep(Duration::from_millis(300));
    let (requests, writes) = audit_counts(dir, user, before);
    Ok(Step {
        tool,
        step,
        wall,
        requests,
        writes,
    })
}

fn audit_len(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("logs/audit.log"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Requests and writes (not dry runs) of `user` after line `from`.
fn audit_counts(dir: &Path, user: &str, from: usize) -> (usize, usize) {
    let text = std::fs::read_to_string(dir.join("logs/audit.log")).unwrap_or_default();
    let mut requests = 0;
    let mut writes = 0;
    for line in text.lines().skip(from) {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if event["user"]["username"] != user || event["stage"] != "ResponseComplete" {
            continue;
        }
        requests += 1;
        let write = matches!(
            event["verb"].as_str(),
            Some("create" | "update" | "patch" | "delete" | "deletecollection")
        ) && !event["requestURI"]
            .as_str()
            .unwrap_or_default()
            .contains("dryRun=All");
        if write {
            writes += 1;
        }
    }
    (requests, writes)
}

const CAPSTAN_USER: &str = "system:serviceaccount:capstan-system:capstan";
const PEER_USER: &str = "system:serviceaccount:capstan-system:capstan-peer";

/// The ServiceAccount the peers run as (cluster-admin, audited) and its
/// kubeconfig.
fn peer_identity(dir: &Path, work: &Path) -> Result<PathBuf, String> {
    kubectl_out(
        dir,
        &["apply", "--server-side", "-f", "-"],
        Some(&format!(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: capstan-peer\n  namespace: {CAPSTAN_NAMESPACE}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: capstan-peer\n\
             roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}\n\
             subjects:\n- {{kind: ServiceAccount, name: capstan-peer, namespace: {CAPSTAN_NAMESPACE}}}\n"
        )),
    )?;
    let token = kubectl_out(
        dir,
        &[
            "create",
            "token",
            "capstan-peer",
            "-n",
            CAPSTAN_NAMESPACE,
            "--duration=24h",
        ],
        None,
    )?;
    let capstan = std::fs::read_to_string(dir.join("capstan.kubeconfig"))
        .map_err(|e| format!("reading capstan.kubeconfig: {e}"))?;
    let text: String = capstan
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("token: ") {
                format!("    token: {}\n", token.trim())
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let path = work.join("peer.kubeconfig");
    std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}

/// The generated app: `charts` charts, each a Deployment, a Service and
/// `configmaps` ConfigMaps, one parallel group.
fn write_app(app: &Path, size: &str, charts: usize, configmaps: usize) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(app);
    let w = |path: PathBuf, text: &str| -> Result<(), String> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    };
    let mut meta = format!(
        "name: bench-{size}\nversion: 1.0.0\ndescription: generated for cargo xtask cluster bench\ncharts:\n"
    );
    let names: Vec<String> = (0..charts).map(|i| format!("c{i:02}")).collect();
    for name in &names {
        let _ = writeln!(
            meta,
            "  - {{name: {name}, path: charts/{name}, namespace: cs-bench-{size}, release: {name}}}"
        );
        let chart = app.join("charts").join(name);
        w(
            chart.join("Chart.yaml"),
            &format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\n"),
        )?;
        w(
            chart.join("values.yaml"),
            &format!(
                "configmaps: {configmaps}\nreplicas: 1\nimage: registry.example.invalid/bench:1.0.0\n"
            ),
        )?;
        w(chart.join("templates/objects.yaml"), TEMPLATE)?;
    }
    let _ = writeln!(
        meta,
        "chart_groups:\n  - {{name: all, mode: parallel, charts: [{}]}}",
        names.join(", ")
    );
    w(app.join("capstan.yaml"), &meta)
}

const TEMPLATE: &str = r#"{{- range $i := until (int .Values.configmaps) }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $.Release.Name }}-config-{{ $i }}
data:
  index: {{ $i | quote }}
  chart: {{ $.Chart.Name }}
---
{{- end }}
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
        - name: app
          image: {{ .Values.image }}
          ports: [{containerPort: 8080}]
"#;

fn delete_namespace(dir: &Path, namespace: &str) -> Result<(), String> {
    kubectl_out(
        dir,
        &[
            "delete",
            "namespace",
            namespace,
            "--ignore-not-found",
            "--wait=true",
            "--timeout=300s",
        ],
        None,
    )
    .map(|_| ())
}

/// capstan: a daemon on a fresh state folder, upload, apply, re-apply.
fn capstan_run(
    capstan: &Path,
    dir: &Path,
    work: &Path,
    size: &str,
    bundle: &Path,
) -> Result<Vec<Step>, String> {
    let namespace = format!("cs-bench-{size}");
    delete_namespace(dir, &namespace)?;
    let state = work.join(format!("state-{size}"));
    let _ = std::fs::remove_dir_all(&state);
    let socket = state.join("capstan.sock");
    let facts = crate::workspace_root().join("example-plugins/ha-replicas/facts/duplex.yaml");
    let log = std::fs::File::create(work.join(format!("daemon-{size}.log")))
        .map_err(|e| format!("creating the daemon log: {e}"))?;
    let mut daemon: Child = Command::new(capstan)
        .arg("serve")
        .arg("--state")
        .arg(&state)
        .arg("--trust")
        .arg(work.join("keys"))
        .arg("--kubeconfig")
        .arg(dir.join("capstan.kubeconfig"))
        .arg("--facts")
        .arg(&facts)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("starting capstan serve: {e}"))?;
    let result = (|| {
        let started = Instant::now();
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            if started.elapsed() > Duration::from_secs(60) {
                return Err("capstan serve did not start".to_owned());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let cli = |args: &[&str]| {
            let mut command = Command::new(capstan);
            command.env("CAPSTAN_STATE", &state).args(args);
            command
        };
        let app = format!("bench-{size}");
        run_quiet(
            &mut cli(&["app", "upload", &bundle.display().to_string()]),
            "capstan app upload",
        )?;
        let first = timed(
            dir,
            CAPSTAN_USER,
            "capstan",
            "first apply (waits)",
            &mut cli(&["app", "apply", &app]),
        )?;
        let again = timed(
            dir,
            CAPSTAN_USER,
            "capstan",
            "re-apply, nothing changed",
            &mut cli(&["app", "apply", &app]),
        )?;
        run_quiet(&mut cli(&["app", "remove", &app]), "capstan app remove")?;
        Ok(vec![first, again])
    })();
    let _ = daemon.kill();
    let _ = daemon.wait();
    delete_namespace(dir, &namespace)?;
    result
}

fn helm(dir: &Path, kubeconfig: &Path) -> Command {
    let mut command = Command::new(dir.join("bin/helm"));
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("HELM_CACHE_HOME", dir.join("helm/cache"))
        .env("HELM_CONFIG_HOME", dir.join("helm/config"))
        .env("HELM_DATA_HOME", dir.join("helm/data"));
    command
}

/// Helm 4, one release per chart, as a platform without capstan would
/// install the same app.
fn helm_run(
    dir: &Path,
    kubeconfig: &Path,
    app: &Path,
    size: &str,
    charts: usize,
) -> Result<Vec<Step>, String> {
    let namespace = format!("helm-bench-{size}");
    let mut steps = Vec::new();
    for (step, wait) in [
        ("install --server-side", false),
        ("install --server-side --wait", true),
    ] {
        delete_namespace(dir, &namespace)?;
        let mut script = String::new();
        for i in 0..charts {
            let _ = writeln!(
                script,
                "\"$HELM\" --kubeconfig \"$KC\" install c{i:02} \"$APP/charts/c{i:02}\" -n {namespace} --create-namespace --server-side=true{} >/dev/null || exit 1",
                if wait { " --wait --timeout 10m" } else { "" }
            );
        }
        steps.push(timed(
            dir,
            PEER_USER,
            "helm",
            step,
            &mut shell(dir, kubeconfig, app, &script),
        )?);
    }
    let mut script = String::new();
    for i in 0..charts {
        let _ = writeln!(
            script,
            "\"$HELM\" --kubeconfig \"$KC\" upgrade c{i:02} \"$APP/charts/c{i:02}\" -n {namespace} --server-side=true --wait --timeout 10m >/dev/null || exit 1"
        );
    }
    steps.push(timed(
        dir,
        PEER_USER,
        "helm",
        "upgrade --server-side --wait, nothing changed",
        &mut shell(dir, kubeconfig, app, &script),
    )?);
    delete_namespace(dir, &namespace)?;
    Ok(steps)
}

/// A bash script with `$HELM`, `$KUBECTL`, `$KC` and `$APP` set.
fn shell(dir: &Path, kubeconfig: &Path, app: &Path, script: &str) -> Command {
    let base = helm(dir, kubeconfig);
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(script)
        .env("HELM", dir.join("bin/helm"))
        .env("KUBECTL", dir.join("bin/kubectl"))
        .env("KC", kubeconfig)
        .env("APP", app);
    for (key, value) in base.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    command
}

/// kubectl apply --server-side of the same charts as `helm template`
/// renders them, then kubectl wait for the Deployments.
fn kubectl_run(
    dir: &Path,
    kubeconfig: &Path,
    app: &Path,
    work: &Path,
    size: &str,
    charts: usize,
) -> Result<Vec<Step>, String> {
    let namespace = format!("kubectl-bench-{size}");
    delete_namespace(dir, &namespace)?;
    let rendered = work.join(format!("{size}-rendered.yaml"));
    let mut script = String::new();
    for i in 0..charts {
        let _ = writeln!(
            script,
            "\"$HELM\" template c{i:02} \"$APP/charts/c{i:02}\" -n {namespace} || exit 1"
        );
    }
    let out = shell(dir, kubeconfig, app, &script)
        .output()
        .map_err(|e| format!("helm template: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "helm template: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::write(&rendered, &out.stdout)
        .map_err(|e| format!("writing {}: {e}", rendered.display()))?;
    let apply = format!(
        "\"$KUBECTL\" --kubeconfig \"$KC\" create namespace {namespace} >/dev/null && \
         \"$KUBECTL\" --kubeconfig \"$KC\" apply --server-side -n {namespace} -f {} >/dev/null && \
         \"$KUBECTL\" --kubeconfig \"$KC\" wait --for=condition=Available deployment --all -n {namespace} --timeout=600s >/dev/null",
        rendered.display()
    );
    let first = timed(
        dir,
        PEER_USER,
        "kubectl",
        "apply --server-side + wait",
        &mut shell(dir, kubeconfig, app, &apply),
    )?;
    let again_script = format!(
        "\"$KUBECTL\" --kubeconfig \"$KC\" apply --server-side -n {namespace} -f {} >/dev/null",
        rendered.display()
    );
    let again = timed(
        dir,
        PEER_USER,
        "kubectl",
        "apply --server-side, nothing changed",
        &mut shell(dir, kubeconfig, app, &again_script),
    )?;
    delete_namespace(dir, &namespace)?;
    Ok(vec![first, again])
}
