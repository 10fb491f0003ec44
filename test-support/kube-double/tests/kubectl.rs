//! The double checked by a client no one here wrote: the real `kubectl`,
//! run against an in-process double through a kubeconfig it wrote. Each
//! test skips (saying so on stderr) only when kubectl is not on PATH.

use kube_double::{KubeDouble, Options};
use std::path::{Path, PathBuf};
use std::process::Command;

struct Kubectl {
    double: KubeDouble,
    dir: PathBuf,
}

/// A fresh directory named after the test, with a double and its kubeconfig; `None` without kubectl.
fn setup(test: &str) -> Option<Kubectl> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("kubectl").is_file()))
        .unwrap_or(false);
    if !found {
        eprintln!("SKIPPED {test}: kubectl is not on PATH");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("kube-double-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    let double = KubeDouble::start(Options::default())
        .unwrap_or_else(|e| panic!("starting the double: {e}"));
    double
        .write_kubeconfig(&dir.join("kubeconfig"))
        .unwrap_or_else(|e| panic!("writing the kubeconfig: {e}"));
    Some(Kubectl { double, dir })
}

impl Kubectl {
    /// Runs kubectl; returns (success, stdout, stderr).
    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(self.dir.join("kubeconfig"))
            .args(["--request-timeout", "20s"])
            // A discovery cache of its own: another double may have had this port.
            .arg("--cache-dir")
            .arg(self.dir.join("cache"))
            .args(args)
            .current_dir(&self.dir)
            .output()
            .unwrap_or_else(|e| panic!("running kubectl {args:?}: {e}"));
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn ok(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args);
        assert!(ok, "kubectl {args:?} failed:\n{stdout}\n{stderr}");
        stdout
    }

    fn file(&self, name: &str, text: &str) -> String {
        let path: &Path = &self.dir.join(name);
        std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {name}: {e}"));
        name.to_string()
    }
}

impl Drop for Kubectl {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const MANIFEST: &str = "\
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: x}
spec:
  replicas: 2
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
  labels: {app: x}
data: {mode: fast}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: unrelated
  namespace: shop
  labels: {app: 'y'}
";

#[test]
fn kubectl_apply_get_list_and_delete() {
    let Some(k) = setup("apply_get_list_delete") else {
        return;
    };
    let f = k.file("manifest.yaml", MANIFEST);
    let out = k.ok(&["apply", "--server-side", "-f", &f]);
    assert!(out.contains("namespace/shop serverside-applied"), "{out}");
    assert!(
        out.contains("deployment.apps/web serverside-applied"),
        "{out}"
    );
    assert!(
        out.contains("configmap/settings serverside-applied"),
        "{out}"
    );
    let stored = k
        .double
        .object("apps/v1", "Deployment", Some("shop"), "web")
        .unwrap_or_default();
    assert_eq!(stored["metadata"]["managedFields"][0]["manager"], "kubectl");

    // Wait for the simulated controller, then read it back as YAML.
    let (ok, _, stderr) = k.run(&[
        "-n",
        "shop",
        "wait",
        "--for=condition=Available",
        "deploy/web",
        "--timeout=10s",
    ]);
    assert!(ok, "kubectl wait: {stderr}");
    let yaml = k.ok(&["-n", "shop", "get", "deploy", "web", "-o", "yaml"]);
    for want in [
        "kind: Deployment",
        "name: web",
        "namespace: shop",
        "replicas: 2",
        "image: nginx:1.27",
        "readyReplicas: 2",
        "uid:",
        "resourceVersion:",
        "generation: 1",
    ] {
        assert!(yaml.contains(want), "missing {want:?} in:\n{yaml}");
    }
    let managed = k.ok(&[
        "-n",
        "shop",
        "get",
        "deploy",
        "web",
        "-o",
        "yaml",
        "--show-managed-fields",
    ]);
    assert!(
        managed.contains("manager: kubectl") && managed.contains("f:replicas: {}"),
        "{managed}"
    );

    let table = k.ok(&["-n", "shop", "get", "cm", "-l", "app=x"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines
            .first()
            .is_some_and(|h| h.starts_with("NAME") && h.contains("AGE")),
        "{table}"
    );
    assert!(
        table.contains("settings") && !table.contains("unrelated"),
        "{table}"
    );
    let names = k.ok(&[
        "-n",
        "shop",
        "get",
        "cm",
        "-l",
        "app in (x,y)",
        "-o",
        "name",
    ]);
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        vec!["configmap/settings", "configmap/unrelated"]
    );

    let all = k.ok(&["-n", "shop", "get", "all"]);
    assert!(all.contains("deployment.apps/web"), "{all}");
    let scaled = k.ok(&["-n", "shop", "scale", "deploy/web", "--replicas=4"]);
    assert!(scaled.contains("deployment.apps/web scaled"), "{scaled}");
    let replicas = k.ok(&[
        "-n",
        "shop",
        "get",
        "deploy",
        "web",
        "-o",
        "jsonpath={.spec.replicas}",
    ]);
    assert_eq!(replicas, "4");

    let out = k.ok(&["-n", "shop", "delete", "cm", "settings"]);
    assert!(out.contains("configmap \"settings\" deleted"), "{out}");
    assert!(
        k.double
            .object("v1", "ConfigMap", Some("shop"), "settings")
            .is_none()
    );
    let (ok, _, stderr) = k.run(&["-n", "shop", "get", "cm", "settings"]);
    assert!(!ok);
    assert!(
        stderr.contains("configmaps \"settings\" not found"),
        "{stderr}"
    );
}

#[test]
fn kubectl_reports_a_conflict_between_field_managers() {
    let Some(k) = setup("conflict") else { return };
    let v1 = k.file(
        "a.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  level: \"1\"\n",
    );
    let v2 = k.file(
        "b.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  level: \"2\"\n",
    );
    k.ok(&["apply", "--server-side", "--field-manager", "a", "-f", &v1]);
    let (ok, _, stderr) = k.run(&["apply", "--server-side", "--field-manager", "b", "-f", &v2]);
    assert!(!ok, "the conflicting apply succeeded");
    assert!(
        stderr.contains("Apply failed with 1 conflict: conflict with \"a\": .data.level"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--force-conflicts"),
        "kubectl's usual advice: {stderr}"
    );
    let stored = k
        .double
        .object("v1", "ConfigMap", Some("default"), "shared")
        .unwrap_or_default();
    assert_eq!(stored["data"]["level"], "1");

    k.ok(&[
        "apply",
        "--server-side",
        "--field-manager",
        "b",
        "--force-conflicts",
        "-f",
        &v2,
    ]);
    let level = k.ok(&["get", "cm", "shared", "-o", "jsonpath={.data.level}"]);
    assert_eq!(level, "2");
    let (ok, _, stderr) = k.run(&["apply", "--server-side", "--field-manager", "a", "-f", &v1]);
    assert!(!ok && stderr.contains("conflict with \"b\""), "{stderr}");
}

#[test]
fn kubectl_sees_strict_validation_and_crds() {
    let Some(k) = setup("strict_and_crds") else {
        return;
    };
    let bad = k.file(
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {a: b}\nbogus: 1\n",
    );
    let (ok, _, stderr) = k.run(&["apply", "--server-side", "-f", &bad]);
    assert!(!ok);
    assert!(
        stderr.contains(".bogus: field not declared in schema"),
        "{stderr}"
    );

    let crd = k.file("crd.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n");
    k.ok(&["apply", "--server-side", "-f", &crd]);
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=10s",
    ]);
    let w = k.file(
        "w.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec: {size: 3}\n",
    );
    k.ok(&["apply", "--server-side", "-f", &w]);
    let listed = k.ok(&["get", "wd", "-o", "name"]);
    assert_eq!(listed.trim(), "widget.example.com/w1");
}
