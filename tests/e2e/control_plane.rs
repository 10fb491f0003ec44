//! The real control plane the cluster tests run on: kube-apiserver, etcd,
//! kube-controller-manager, kube-scheduler and kwok, built from the Go
//! modules in `test-support/control-plane/` and started by `cargo xtask cluster
//! up` (`cargo xtask test` starts it before the tests and stops it after).
//!
//! The tests share one control plane, so each keeps to its own namespace
//! and app name ([`ControlPlane::shop`]). When none is up, a test says why
//! and skips locally; under CI (`CI=true`) it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::daemon::{Daemon, edit, text};
use crate::support::target_dir;

/// A running control plane: its folder under `<target>/cluster`.
pub struct ControlPlane {
    dir: PathBuf,
}

/// The control plane, or `None` (after saying why) where none is up and
/// this is not CI.
///
/// # Panics
///
/// Under CI when no control plane answers.
pub fn control_plane() -> Option<ControlPlane> {
    let dir = std::env::var_os("CAPSTAN_CONTROL_PLANE")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("cluster"));
    let cp = ControlPlane { dir };
    let why = if !cp.admin_kubeconfig().exists() {
        Some(format!(
            "no control plane at {} (`cargo xtask test` starts one where Go is installed; or `cargo xtask cluster up`)",
            cp.dir.display()
        ))
    } else {
        match cp.kubectl(&["get", "--raw", "/readyz"]) {
            out if out.status.success() => None,
            out => Some(format!(
                "the control plane at {} does not answer: {}",
                cp.dir.display(),
                text(&out.stderr).trim()
            )),
        }
    };
    match why {
        None => Some(cp),
        Some(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{why}; under CI the cluster tests must run")
        }
        Some(why) => {
            eprintln!("control plane: {why}; skipped");
            None
        }
    }
}

impl ControlPlane {
    /// The admin kubeconfig (`system:masters`), for the tests' own checks.
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// The daemon's kubeconfig: the `capstan` ServiceAccount's token,
    /// bound to `deploy/clusterrole.yaml`.
    pub fn capstan_kubeconfig(&self) -> PathBuf {
        self.dir.join("capstan.kubeconfig")
    }

    /// The kubectl built with the control plane, as the admin.
    pub fn kubectl_command(&self) -> Command {
        let mut command = Command::new(self.dir.join("bin/kubectl"));
        command
            .arg("--kubeconfig")
            .arg(self.admin_kubeconfig())
            .stdin(Stdio::null());
        command
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_command()
            .args(args)
            .output()
            .expect("running kubectl")
    }

    /// kubectl that must succeed; its stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {}: {}",
            args.join(" "),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// kubectl with `input` on stdin.
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> Output {
        use std::io::Write as _;
        let mut child = self
            .kubectl_command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting kubectl");
        child
            .stdin
            .take()
            .expect("kubectl's stdin")
            .write_all(input.as_bytes())
            .expect("writing to kubectl");
        child.wait_with_output().expect("kubectl")
    }

    /// One object as JSON, or `None` when the server has none.
    pub fn object(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let mut args = vec![
            "get",
            kind,
            name,
            "-o",
            "json",
            "--ignore-not-found",
            "--show-managed-fields",
        ];
        if let Some(ns) = namespace {
            args.extend(["-n", ns]);
        }
        let out = self.kubectl_ok(&args);
        if out.trim().is_empty() {
            None
        } else {
            Some(serde_json::from_str(&out).expect("kubectl -o json"))
        }
    }

    /// Every object of `kinds` (comma separated, as kubectl takes them) in
    /// `namespace`.
    pub fn list(&self, kinds: &str, namespace: &str) -> Vec<Value> {
        let out = self.kubectl_ok(&["get", kinds, "-n", namespace, "-o", "json"]);
        let list: Value = serde_json::from_str(&out).expect("kubectl -o json");
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// Waits up to `timeout` for `check` to hold, then asserts it with
    /// `what`.
    pub fn eventually(&self, what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
        let started = Instant::now();
        while !check() {
            assert!(
                started.elapsed() < timeout,
                "not within {timeout:?}: {what}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// A daemon whose target is this control plane, as the `capstan`
    /// ServiceAccount.
    pub fn daemon(&self, name: &str) -> Daemon {
        Daemon::start_with_target(
            name,
            vec![
                "--kubeconfig".into(),
                self.capstan_kubeconfig().display().to_string(),
            ],
        )
    }

    /// Deletes a namespace a test used, and waits for the namespace
    /// controller to finish it.
    pub fn delete_namespace(&self, namespace: &str) {
        let _ = self.kubectl(&[
            "delete",
            "namespace",
            namespace,
            "--ignore-not-found",
            "--wait=true",
            "--timeout=60s",
        ]);
    }
}

/// The example shop app made the test's own: the app and its namespace are
/// both named `app` (the tests share one control plane), then `tweak`.
pub fn own_shop(app_dir: &Path, app: &str) {
    let meta = app_dir.join("capstan.yaml");
    edit(&meta, "name: shop\n", &format!("name: {app}\n"));
    let text = std::fs::read_to_string(&meta).expect("reading capstan.yaml");
    std::fs::write(
        &meta,
        text.replace("namespace: shop,", &format!("namespace: {app},")),
    )
    .expect("writing capstan.yaml");
}
