//! `cargo xtask cluster build|up|down|env|status|sync`: a real Kubernetes
//! control plane on 127.0.0.1, built from Go modules (see `build`), as the
//! project's test bed.
//!
//! `up` makes certificates, starts etcd, kube-apiserver (RBAC and
//! ServiceAccount admission on), kube-controller-manager and kube-scheduler
//! (`--leader-elect=false`), and kwok managing every node; then creates N
//! nodes shaped like a StarlingX duplex, the StorageClasses, and a
//! ServiceAccount `capstan` bound to `deploy/clusterrole.yaml`, and returns
//! with the control plane running in the background. Everything lives under
//! `<target>/cluster/`: `kubeconfig` (admin, `system:masters`),
//! `capstan.kubeconfig` (the ServiceAccount's token), `logs/`, `state.json`
//! (the processes and ports), `bin/` (links into the build cache).

mod bench;
pub mod build;
mod pki;

use std::fmt::Write as _;
use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The folder of a running control plane.
pub fn cluster_dir() -> PathBuf {
    crate::target_dir().join("cluster")
}

/// The default number of nodes: two controllers and two workers.
const DEFAULT_NODES: usize = 4;

/// The namespace and name of the daemon's ServiceAccount.
pub const CAPSTAN_NAMESPACE: &str = "capstan-system";

pub fn main(args: &[String]) -> Result<(), String> {
    let root = crate::workspace_root();
    match args.first().map(String::as_str) {
        Some("build") => build::build_all(&root, &cluster_dir().join("bin")),
        Some("sync") => build::sync(&root),
        Some("up") => {
            let nodes = match &args[1..] {
                [] => DEFAULT_NODES,
                [flag, n] if flag == "--nodes" => n
                    .parse()
                    .ok()
                    .filter(|n| (2..=64).contains(n))
                    .ok_or(format!("--nodes takes a number from 2 to 64, not {n:?}"))?,
                other => return Err(format!("cluster up: unknown arguments {other:?}")),
            };
            up(&root, nodes)
        }
        Some("down") => down(),
        Some("env") => {
            let kubeconfig = cluster_dir().join("kubeconfig");
            if !kubeconfig.exists() {
                return Err("no control plane is up: run `cargo xtask cluster up`".into());
            }
            println!("KUBECONFIG={}", kubeconfig.display());
            Ok(())
        }
        Some("status") => status(),
        Some("bench") => bench::bench(&args[1..]),
        _ => Err("usage: cargo xtask cluster build | up [--nodes N] | down | env | status | sync | bench [--dev] [--runs N]"
            .into()),
    }
}

/// A control plane `cargo xtask test` started, stopped when the tests end.
pub struct Started;

impl Started {
    pub fn stop(self) {
        if let Err(e) = down() {
            eprintln!("xtask: stopping the control plane: {e}");
        }
    }
}

/// Brings the control plane up for the tests: `None` when one was up
/// already (it stays up) or when Go is missing outside CI (the cluster
/// tests then say why and skip); an error when Go is missing under CI.
pub fn for_tests() -> Result<Option<Started>, String> {
    if let Err(why) = build::go_version() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            return Err(format!("{why}; under CI the cluster tests must run"));
        }
        eprintln!("xtask: {why}; the tests on the real control plane will skip");
        return Ok(None);
    }
    if status_quiet() {
        eprintln!(
            "xtask: using the control plane that is up ({})",
            cluster_dir().display()
        );
        return Ok(None);
    }
    up(&crate::workspace_root(), DEFAULT_NODES)?;
    Ok(Some(Started))
}

/// Whether a control plane is up and every component still runs.
fn status_quiet() -> bool {
    read_state().is_some_and(|state| {
        let components = recorded(&state);
        !components.is_empty() && components.iter().all(|(_, pid)| alive(*pid))
    })
}

/// The components `state.json` records, in start order: `(name, pid)`
/// (pid 0 where the record has none).
fn recorded(state: &serde_json::Value) -> Vec<(String, u32)> {
    state["components"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let name = c["name"].as_str().unwrap_or("?").to_owned();
            let pid = c["pid"]
                .as_u64()
                .and_then(|p| u32::try_from(p).ok())
                .unwrap_or(0);
            (name, pid)
        })
        .collect()
}

/// A started component.
struct Component {
    name: &'static str,
    pid: u32,
}

/// The ports one control plane uses, each picked free at start.
struct Ports {
    etcd_client: u16,
    etcd_peer: u16,
    apiserver: u16,
    kwok: u16,
}

fn free_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("finding a free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("finding a free port: {e}"))
}

/// Starts `bin` with `args` in a process group of its own (so the
/// terminal's Ctrl-C and the end of xtask leave it running), its output in
/// `logs/NAME.log`.
fn spawn(dir: &Path, name: &'static str, bin: &Path, args: &[String]) -> Result<Component, String> {
    let log_path = dir.join("logs").join(format!("{name}.log"));
    let log =
        File::create(&log_path).map_err(|e| format!("creating {}: {e}", log_path.display()))?;
    let err_log = log
        .try_clone()
        .map_err(|e| format!("opening {}: {e}", log_path.display()))?;
    let child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", bin.display()))?;
    Ok(Component {
        name,
        pid: child.id(),
    })
}

fn alive(pid: u32) -> bool {
    // A zombie (our own child that exited) still has /proc/PID; its state
    // letter says so.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z")
        })
        .unwrap_or(false)
}

/// The last lines of a component's log, for an error message.
fn log_tail(dir: &Path, name: &str) -> String {
    let text =
        std::fs::read_to_string(dir.join("logs").join(format!("{name}.log"))).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// Waits until `check` is true, failing with the component's log tail when
/// it exits or the time runs out.
fn wait_for(
    dir: &Path,
    component: &Component,
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> bool,
) -> Result<(), String> {
    let started = Instant::now();
    loop {
        if check() {
            return Ok(());
        }
        if !alive(component.pid) {
            return Err(format!(
                "{} exited before {what}; its log ends:\n{}",
                component.name,
                log_tail(dir, component.name)
            ));
        }
        if started.elapsed() > timeout {
            return Err(format!(
                "{} not {what} after {}s; its log ends:\n{}",
                component.name,
                timeout.as_secs(),
                log_tail(dir, component.name)
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn kubectl(dir: &Path) -> Command {
    let mut command = Command::new(dir.join("bin/kubectl"));
    command
        .arg("--kubeconfig")
        .arg(dir.join("kubeconfig"))
        .stdin(Stdio::null());
    command
}

/// Runs kubectl and returns its stdout, or its stderr as the error.
fn kubectl_out(dir: &Path, args: &[&str], input: Option<&str>) -> Result<String, String> {
    let mut command = kubectl(dir);
    command.args(args);
    let out = if let Some(input) = input {
        use std::io::Write as _;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting kubectl: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(input.as_bytes())
                .map_err(|e| format!("writing to kubectl: {e}"))?;
        }
        child
            .wait_with_output()
            .map_err(|e| format!("kubectl: {e}"))?
    } else {
        command
            .output()
            .map_err(|e| format!("starting kubectl: {e}"))?
    };
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "kubectl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn up(root: &Path, nodes: usize) -> Result<(), String> {
    let started = Instant::now();
    let dir = cluster_dir();
    build::build_all(root, &dir.join("bin"))?;
    // One control plane at a time: a running one is stopped first.
    down()?;
    for sub in ["logs", "etcd"] {
        let path = dir.join(sub);
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    }
    let pki = pki::make(&dir.join("pki"))?;
    let ports = Ports {
        etcd_client: free_port()?,
        etcd_peer: free_port()?,
        apiserver: free_port()?,
        kwok: free_port()?,
    };
    let server = format!("https://127.0.0.1:{}", ports.apiserver);
    write(
        &dir.join("kubeconfig"),
        &pki::kubeconfig(&pki, &server, &pki::User::Admin)?,
    )?;
    let mut components = Vec::new();
    let result = start_all(root, &dir, &pki, &ports, &server, nodes, &mut components);
    // The state is written even when a step failed, so `down` stops what
    // did start.
    write_state(&dir, &components, &ports, &server)?;
    if let Err(e) = result {
        let _ = down();
        return Err(e);
    }
    eprintln!(
        "xtask: control plane up in {:.1} s: {server}, {nodes} nodes; KUBECONFIG={}",
        started.elapsed().as_secs_f64(),
        dir.join("kubeconfig").display()
    );
    Ok(())
}

fn arg(name: &str, value: impl std::fmt::Display) -> String {
    format!("--{name}={value}")
}

fn start_all(
    root: &Path,
    dir: &Path,
    pki: &pki::Pki,
    ports: &Ports,
    server: &str,
    nodes: usize,
    components: &mut Vec<Component>,
) -> Result<(), String> {
    let bin = dir.join("bin");
    let p = |path: PathBuf| path.display().to_string();
    let etcd_url = format!("http://127.0.0.1:{}", ports.etcd_client);
    let peer_url = format!("http://127.0.0.1:{}", ports.etcd_peer);
    let etcd = spawn(
        dir,
        "etcd",
        &bin.join("etcd"),
        &[
            arg("name", "capstan"),
            arg("data-dir", p(dir.join("etcd"))),
            arg("listen-client-urls", &etcd_url),
            arg("advertise-client-urls", &etcd_url),
            arg("listen-peer-urls", &peer_url),
            arg("initial-advertise-peer-urls", &peer_url),
            arg("initial-cluster", format!("capstan={peer_url}")),
            arg("unsafe-no-fsync", true),
            arg("log-level", "warn"),
        ],
    )?;
    let etcd_port = ports.etcd_client;
    wait_for(dir, &etcd, "listening", Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", etcd_port)).is_ok()
    })?;
    components.push(etcd);

    let apiserver = spawn(
        dir,
        "kube-apiserver",
        &bin.join("kube-apiserver"),
        &[
            arg("etcd-servers", &etcd_url),
            arg("bind-address", "127.0.0.1"),
            arg("advertise-address", "127.0.0.1"),
            arg("secure-port", ports.apiserver),
            // An Endpoints object refuses loopback addresses.
            arg("endpoint-reconciler-type", "none"),
            arg("tls-cert-file", p(pki.serving_cert())),
            arg("tls-private-key-file", p(pki.serving_key())),
            arg("client-ca-file", p(pki.ca_cert())),
            arg("service-account-issuer", server),
            arg("service-account-key-file", p(pki.sa_public())),
            arg("service-account-signing-key-file", p(pki.sa_private())),
            arg("service-cluster-ip-range", "10.0.0.0/24"),
            arg("authorization-mode", "RBAC"),
            arg("allow-privileged", true),
            arg("profiling", false),
            // The daemon's own requests, one JSON line each, so that tests
            // and the bench count what capstan sends (a re-apply with
            // nothing changed must write nothing).
            arg("audit-policy-file", p(audit_policy(dir)?)),
            arg("audit-log-path", p(dir.join("logs/audit.log"))),
            arg("audit-log-format", "json"),
            // Not rotated at the default 100 MiB in the middle of a test
            // or a bench step, which would lose the requests it counts
            // (a 1,500-object Helm install's count did).
            arg("audit-log-maxsize", 4096),
        ],
    )?;
    components.push(Component {
        name: apiserver.name,
        pid: apiserver.pid,
    });
    wait_for(dir, &apiserver, "ready", Duration::from_secs(90), || {
        kubectl_out(dir, &["get", "--raw", "/readyz"], None).is_ok_and(|o| o.trim() == "ok")
    })?;

    let kubeconfig = p(dir.join("kubeconfig"));
    let controller_manager = spawn(
        dir,
        "kube-controller-manager",
        &bin.join("kube-controller-manager"),
        &[
            arg("kubeconfig", &kubeconfig),
            arg("authentication-kubeconfig", &kubeconfig),
            arg("authorization-kubeconfig", &kubeconfig),
            arg("leader-elect", false),
            arg("bind-address", "127.0.0.1"),
            arg("secure-port", 0),
            arg("service-account-private-key-file", p(pki.sa_private())),
            arg("root-ca-file", p(pki.ca_cert())),
            arg("cluster-signing-cert-file", p(pki.ca_cert())),
            arg("cluster-signing-key-file", p(pki.ca_key())),
            // The standard and general StorageClasses provision through
            // the controller-manager's own host-path provisioner.
            arg("enable-hostpath-provisioner", true),
        ],
    )?;
    components.push(controller_manager);
    let scheduler = spawn(
        dir,
        "kube-scheduler",
        &bin.join("kube-scheduler"),
        &[
            arg("kubeconfig", &kubeconfig),
            arg("authentication-kubeconfig", &kubeconfig),
            arg("authorization-kubeconfig", &kubeconfig),
            arg("leader-elect", false),
            arg("bind-address", "127.0.0.1"),
            arg("secure-port", 0),
        ],
    )?;
    components.push(scheduler);

    let stages = kwok_stages(root, dir)?;
    let kwok = spawn(
        dir,
        "kwok",
        &bin.join("kwok"),
        &[
            arg("kubeconfig", &kubeconfig),
            arg("config", p(stages)),
            arg("manage-all-nodes", true),
            // Node Leases renewed by kwok: its heartbeat stage writes node
            // status only every ten minutes and counts on the Lease, as a
            // kubelet does; without one the node lifecycle controller
            // marks every node and pod NotReady after its grace period.
            arg("node-lease-duration-seconds", 40),
            arg("server-address", format!("127.0.0.1:{}", ports.kwok)),
            arg("node-port", 0),
            arg("cidr", "10.244.0.0/16"),
            arg("node-ip", "10.96.0.1"),
        ],
    )?;
    components.push(kwok);

    kubectl_out(
        dir,
        &["apply", "--server-side", "-f", "-"],
        Some(&cluster_objects(nodes)),
    )?;
    kubectl_out(
        dir,
        &[
            "apply",
            "--server-side",
            "-f",
            &p(root.join("deploy/clusterrole.yaml")),
        ],
        None,
    )?;
    // Every component must still be running, and every node Ready.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(dead) = components.iter().find(|c| !alive(c.pid)) {
            return Err(format!(
                "{} exited; its log ends:\n{}",
                dead.name,
                log_tail(dir, dead.name)
            ));
        }
        let ready = kubectl_out(
            dir,
            &[
                "get",
                "nodes",
                "-o",
                "jsonpath={range .items[*]}{.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}",
            ],
            None,
        )
        .map(|o| o.lines().filter(|l| l.trim() == "True").count())
        .unwrap_or(0);
        // The default ServiceAccount is the controller-manager's first
        // work; pods cannot be made before it.
        let default_sa = kubectl_out(dir, &["get", "serviceaccount", "default"], None).is_ok();
        if ready == nodes && default_sa {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{ready} of {nodes} nodes Ready after 90s (default ServiceAccount there: {default_sa}); see {}",
                dir.join("logs").display()
            ));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    // The daemon's own identity: a token of the `capstan` ServiceAccount,
    // bound to deploy/clusterrole.yaml, not system:masters.
    let token = kubectl_out(
        dir,
        &[
            "create",
            "token",
            "capstan",
            "-n",
            CAPSTAN_NAMESPACE,
            "--duration=48h",
        ],
        None,
    )?;
    write(
        &dir.join("capstan.kubeconfig"),
        &pki::kubeconfig(pki, server, &pki::User::Token(token.trim().to_owned()))?,
    )?;
    Ok(())
}

/// The audit policy: every request of the `capstan` ServiceAccount (the
/// daemon) and of `capstan-peer` (Helm and kubectl in the bench) at the
/// Metadata level (verb, URI, object, user, status); nothing else.
fn audit_policy(dir: &Path) -> Result<PathBuf, String> {
    let path = dir.join("audit-policy.yaml");
    write(
        &path,
        &format!(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n\
             - level: Metadata\n  users: [\"system:serviceaccount:{CAPSTAN_NAMESPACE}:capstan\", \"system:serviceaccount:{CAPSTAN_NAMESPACE}:capstan-peer\"]\n\
             - level: None\n"
        ),
    )?;
    Ok(path)
}

/// The stages kwok plays: its own node stages and pod deletion, from the
/// kwok module in the module cache, and ours for pods
/// (`test-support/control-plane/kwok/pod-stages.yaml`).
fn kwok_stages(root: &Path, dir: &Path) -> Result<PathBuf, String> {
    let module_dir = build::modules_dir(root).join("kwok");
    let go_mod = std::fs::read_to_string(module_dir.join("go.mod"))
        .map_err(|e| format!("reading the kwok module: {e}"))?;
    let version = go_mod
        .lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("sigs.k8s.io/kwok")).then(|| w.next().map(str::to_owned))?
        })
        .ok_or("test-support/control-plane/kwok/go.mod requires no sigs.k8s.io/kwok")?;
    let out = Command::new("go")
        .current_dir(&module_dir)
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=readonly")
        .args(["mod", "download", "-json"])
        .arg(format!("sigs.k8s.io/kwok@{version}"))
        .output()
        .map_err(|e| format!("go mod download: {e}"))?;
    let info: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("go mod download sigs.k8s.io/kwok printed no JSON: {e}"))?;
    let kwok_dir = PathBuf::from(
        info["Dir"]
            .as_str()
            .ok_or("go mod download named no folder for kwok")?,
    );
    let mut text = String::new();
    for stage in [
        "kustomize/stage/node/fast/node-initialize.yaml",
        "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        "kustomize/stage/pod/fast/pod-delete.yaml",
    ] {
        let path = kwok_dir.join(stage);
        let stage_text = std::fs::read_to_string(&path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let _ = write!(text, "{}\n---\n", stage_text.trim_end());
    }
    let ours = module_dir.join("pod-stages.yaml");
    text.push_str(
        &std::fs::read_to_string(&ours).map_err(|e| format!("reading {}: {e}", ours.display()))?,
    );
    let path = dir.join("kwok.yaml");
    write(&path, &text)?;
    Ok(path)
}

/// The nodes (StarlingX duplex: `controller-0` and `controller-1` with the
/// control-plane role, then `worker-N`), the StorageClasses, and the
/// daemon's namespace and ServiceAccount.
fn cluster_objects(nodes: usize) -> String {
    let mut text = String::new();
    for i in 0..nodes {
        let (name, role) = if i < 2 {
            (format!("controller-{i}"), "control-plane")
        } else {
            (format!("worker-{}", i - 2), "worker")
        };
        let _ = write!(
            text,
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  annotations:\n    \
             kwok.x-k8s.io/node: fake\n    node.alpha.kubernetes.io/ttl: \"0\"\n  labels:\n    \
             kubernetes.io/hostname: {name}\n    kubernetes.io/os: linux\n    \
             kubernetes.io/arch: amd64\n    node-role.kubernetes.io/{role}: \"\"\n\
             status:\n  allocatable: {{cpu: \"32\", memory: 128Gi, ephemeral-storage: 500Gi, pods: \"110\"}}\n  \
             capacity: {{cpu: \"32\", memory: 128Gi, ephemeral-storage: 500Gi, pods: \"110\"}}\n---\n"
        );
    }
    text.push_str(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: standard\n  \
         annotations:\n    storageclass.kubernetes.io/is-default-class: \"true\"\n\
         provisioner: kubernetes.io/host-path\nreclaimPolicy: Delete\nvolumeBindingMode: Immediate\n---\n\
         apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: general\n\
         provisioner: kubernetes.io/host-path\nreclaimPolicy: Delete\nvolumeBindingMode: Immediate\n---\n\
         apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: capstan-local\n\
         provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n---\n",
    );
    let _ = write!(
        text,
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {CAPSTAN_NAMESPACE}\n---\n\
         apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: capstan\n  namespace: {CAPSTAN_NAMESPACE}\n"
    );
    text
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

fn write_state(
    dir: &Path,
    components: &[Component],
    ports: &Ports,
    server: &str,
) -> Result<(), String> {
    let state = serde_json::json!({
        "server": server,
        "ports": {
            "etcd": ports.etcd_client,
            "etcd-peer": ports.etcd_peer,
            "apiserver": ports.apiserver,
            "kwok": ports.kwok,
        },
        "components": components
            .iter()
            .map(|c| serde_json::json!({"name": c.name, "pid": c.pid}))
            .collect::<Vec<_>>(),
    });
    write(&dir.join("state.json"), &format!("{state:#}\n"))
}

fn read_state() -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(cluster_dir().join("state.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Stops every component of the control plane in `state.json`, newest
/// first: SIGTERM, then SIGKILL after ten seconds.
fn down() -> Result<(), String> {
    let Some(state) = read_state() else {
        return Ok(());
    };
    for (name, pid) in recorded(&state).iter().rev() {
        if !alive(*pid) || !is_ours(*pid, name) {
            continue;
        }
        let _ = Command::new("kill").arg(pid.to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(*pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if alive(*pid) {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
    let _ = std::fs::remove_file(cluster_dir().join("state.json"));
    let _ = std::fs::remove_file(cluster_dir().join("kubeconfig"));
    let _ = std::fs::remove_file(cluster_dir().join("capstan.kubeconfig"));
    Ok(())
}

/// Whether the process `pid` is still the component it was (a pid is
/// reused after a reboot).
fn is_ours(pid: u32, name: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| name.starts_with(comm.trim()) || comm.trim().starts_with(name))
}

fn status() -> Result<(), String> {
    let Some(state) = read_state() else {
        return Err("no control plane is up".into());
    };
    let mut down = Vec::new();
    for (name, pid) in recorded(&state) {
        let up = alive(pid);
        println!(
            "{name:<24} pid {pid:<8} {}",
            if up { "running" } else { "exited" }
        );
        if !up {
            down.push(name);
        }
    }
    println!("server {}", state["server"].as_str().unwrap_or("?"));
    if down.is_empty() {
        Ok(())
    } else {
        Err(format!("not running: {}", down.join(", ")))
    }
}
