//! Connected rendering against the real control plane: `lookup` reads the
//! live objects (so generated secrets survive re-applies and updates, as
//! with `helm upgrade`), `.Capabilities` says what the server serves, and
//! the lookup policy refuses reads outside the app's namespaces naming
//! the object, and Helm 4's `upgrade` and capstan's re-apply of the same
//! chart leave the same objects. Real Bitnami charts come from `../shared/helm-conformance`
//! (kept outside the project).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::control_plane::{ControlPlane, control_plane, own_shop};
use crate::daemon::{Daemon, text};
use crate::real_cluster::shop;

/// A Secret generated once, as Bitnami's `common.secrets.passwords.manage`
/// does: the live value when the Secret exists, a random one otherwise.
const GENERATED: &str = r#"{{- $live := lookup "v1" "Secret" .Release.Namespace "shop-generated" }}
apiVersion: v1
kind: Secret
metadata:
  name: shop-generated
data:
  {{- if $live }}
  password: {{ index $live.data "password" }}
  {{- else }}
  password: {{ randAlphaNum 24 | b64enc }}
  {{- end }}
  upgrade: {{ .Release.IsUpgrade | toString | b64enc }}
"#;

/// A ServiceMonitor only where the server serves the kind, as
/// prometheus-community's and Bitnami's charts gate theirs.
const MONITOR: &str = r#"{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: shop-config
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: config
  endpoints:
    - port: http
{{- end }}
"#;

const MONITOR_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"#;

fn add_template(app: &Path, name: &str, body: &str) {
    std::fs::write(app.join("charts/config/templates").join(name), body).unwrap();
}

fn secret_value(cp: &ControlPlane, namespace: &str, name: &str, key: &str) -> String {
    cp.object("secret", Some(namespace), name)
        .and_then(|s| s["data"][key].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The daemon's writes to `namespace` since audit line `since` (dry runs
/// left out).
fn writes_since(cp: &ControlPlane, namespace: &str, since: usize) -> Vec<String> {
    crate::real_cluster::writes(cp, namespace, since)
}

fn audit_len(cp: &ControlPlane) -> usize {
    crate::real_cluster::audit_events(cp).len()
}

/// A generated password is kept by every later render that reads it back:
/// a re-apply writes nothing and `app diff --detailed-exitcode` exits 0;
/// an update to a new app version keeps it; `.Release.IsUpgrade` is true
/// after the install.
#[test]
fn generated_secrets_survive_reapply_and_update() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-lookup";
    let d = shop(&cp, app, |a| add_template(a, "generated.yaml", GENERATED));
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    let password = secret_value(&cp, app, "shop-generated", "password");
    assert_eq!(
        password.len(),
        32,
        "24 random characters, base64: {password}"
    );
    assert_eq!(
        secret_value(&cp, app, "shop-generated", "upgrade"),
        "ZmFsc2U=",
        "false at install"
    );

    let diff = d.cli(&["app", "diff", app, "--detailed-exitcode"]);
    assert_eq!(
        diff.status.code(),
        Some(2),
        "IsUpgrade turns true on the next render: {}",
        text(&diff.stdout)
    );
    d.ok(&["app", "apply", app]);
    assert_eq!(
        secret_value(&cp, app, "shop-generated", "password"),
        password
    );
    let since = audit_len(&cp);
    let diff = d.cli(&["app", "diff", app, "--detailed-exitcode"]);
    assert_eq!(
        diff.status.code(),
        Some(0),
        "right after an apply, nothing to change: {}{}",
        text(&diff.stdout),
        text(&diff.stderr)
    );
    d.ok(&["app", "apply", app]);
    assert_eq!(
        writes_since(&cp, app, since),
        Vec::<String>::new(),
        "a re-apply writes nothing"
    );

    let v2 = d.shop_bundle("1.1.0", |a| {
        own_shop(a, app);
        add_template(a, "generated.yaml", GENERATED);
    });
    d.ok(&["app", "update", v2.to_str().unwrap_or_default()]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert_eq!(
        secret_value(&cp, app, "shop-generated", "password"),
        password,
        "the update kept the generated password"
    );
    d.ok(&["app", "remove", app]);
    cp.delete_namespace(app);
}

/// A template that reads a Secret of another namespace fails the apply,
/// naming the object and the rule; nothing of the app is written.
#[test]
fn a_lookup_outside_the_policy_fails_naming_the_object() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-lookup-denied";
    let d = shop(&cp, app, |a| {
        add_template(
            a,
            "peek.yaml",
            "{{- $t := lookup \"v1\" \"Secret\" \"kube-system\" \"bootstrap\" }}\n",
        );
    });
    let out = d.cli(&["app", "apply", app]);
    assert!(!out.status.success());
    let message = d.show(app)["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains(
            "lookup of v1/Secret kube-system/bootstrap is outside the lookup policy: this app may read its own namespaces (cp-lookup-denied)"
        ),
        "{message}"
    );
    assert!(
        cp.object("namespace", None, app).is_none(),
        "nothing was written"
    );
}

/// `.Capabilities.APIVersions` is what the server serves: no
/// ServiceMonitor while its CRD is missing, one after the CRD is there.
/// Within one app, a CRD of an earlier chart group counts as served for
/// the charts after it.
#[test]
fn a_service_monitor_appears_once_its_crd_is_served() {
    let Some(cp) = control_plane() else { return };
    let app = "cp-caps";
    let _ = cp.kubectl(&[
        "delete",
        "crd",
        "servicemonitors.monitoring.coreos.com",
        "--ignore-not-found",
        "--wait=true",
    ]);
    let d = shop(&cp, app, |a| add_template(a, "monitor.yaml", MONITOR));
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert!(
        !d.show(app)["releases"]
            .to_string()
            .contains("ServiceMonitor"),
        "not rendered while the kind is not served (its apply would have failed)"
    );

    let out = cp.kubectl_stdin(&["apply", "-f", "-"], MONITOR_CRD);
    assert!(out.status.success(), "{}", text(&out.stderr));
    cp.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/servicemonitors.monitoring.coreos.com",
        "--timeout=30s",
    ]);
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert!(
        cp.object(
            "servicemonitor.monitoring.coreos.com",
            Some(app),
            "shop-config"
        )
        .is_some(),
        "{}",
        d.log()
    );
    d.ok(&["app", "remove", app]);
    let _ = cp.kubectl(&[
        "delete",
        "crd",
        "servicemonitors.monitoring.coreos.com",
        "--ignore-not-found",
    ]);
    cp.delete_namespace(app);
}

/// `../shared/helm-conformance`, or `CAPSTAN_HELM_CONFORMANCE`.
fn conformance_charts() -> Option<PathBuf> {
    let dir = std::env::var_os("CAPSTAN_HELM_CONFORMANCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/helm-conformance")
        })
        .join("charts");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the helm conformance charts are not at {}",
        dir.display()
    );
    eprintln!("skipped: no helm conformance charts at {}", dir.display());
    None
}

/// An app of one real chart, released as `app` into namespace `app`.
fn chart_app(d: &Daemon, app: &str, chart: &Path, version: &str) -> PathBuf {
    let dir = d.state().with_file_name(format!("{app}-{version}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("charts")).unwrap();
    let copy = std::process::Command::new("cp")
        .arg("-r")
        .arg(chart)
        .arg(dir.join("charts/main"))
        .status()
        .unwrap();
    assert!(copy.success());
    std::fs::write(
        dir.join("capstan.yaml"),
        format!(
            "name: {app}\nversion: {version}\ncharts:\n  - {{name: main, path: charts/main, namespace: {app}, release: {app}, timeout: 120s, overrides: [overrides/main.yaml]}}\n\
             chart_groups:\n  - {{name: all, mode: sequential, charts: [main]}}\n"
        ),
    )
    .unwrap();
    // No load balancer runs on the control plane: a LoadBalancer Service
    // would never be ready.
    std::fs::create_dir_all(dir.join("overrides")).unwrap();
    std::fs::write(
        dir.join("overrides/main.yaml"),
        "service:\n  type: ClusterIP\n",
    )
    .unwrap();
    let out_file = dir.with_extension("tgz");
    let out = d.build(&dir, &out_file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    out_file
}

/// A real Bitnami chart whose passwords `common.secrets.passwords.manage`
/// generates: the second apply renders (no "PASSWORDS ERROR"), keeps the
/// password, writes nothing, and the diff after it is empty; an update
/// keeps the password too.
#[test]
fn a_bitnami_chart_with_generated_passwords_reapplies_without_writes() {
    let Some(cp) = control_plane() else { return };
    let Some(charts) = conformance_charts() else {
        return;
    };
    let app = "cp-jenkins";
    cp.delete_namespace(app);
    let d = cp.daemon(app);
    let bundle = chart_app(&d, app, &charts.join("jenkins"), "1.0.0");
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    // The release name holds the chart's name, so the full name is the release name.
    let secret = app.to_string();
    let password = secret_value(&cp, app, &secret, "jenkins-password");
    assert!(
        !password.is_empty(),
        "{:?}",
        cp.object("secret", Some(app), &secret)
    );

    d.ok(&["app", "apply", app]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert_eq!(
        secret_value(&cp, app, &secret, "jenkins-password"),
        password
    );
    let since = audit_len(&cp);
    let diff = d.cli(&["app", "diff", app, "--detailed-exitcode"]);
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff.stdout));
    d.ok(&["app", "apply", app]);
    assert_eq!(writes_since(&cp, app, since), Vec::<String>::new());

    let v2 = chart_app(&d, app, &charts.join("jenkins"), "1.1.0");
    d.ok(&["app", "update", v2.to_str().unwrap_or_default()]);
    assert_eq!(d.state_of(app), "applied", "{}", d.log());
    assert_eq!(
        secret_value(&cp, app, &secret, "jenkins-password"),
        password
    );
    let pods: Vec<Value> = cp.list("pods", app);
    assert!(!pods.is_empty());
    d.ok(&["app", "remove", app]);
    cp.eventually("the app's pods are gone", Duration::from_secs(60), || {
        cp.list("pods", app).is_empty()
    });
    cp.delete_namespace(app);
}

/// The directory target answers `lookup` from the releases it holds: the
/// generated password is read back and kept, the file is rewritten with
/// the same bytes, and the diff after a re-apply is empty. The same
/// policy holds: another namespace is refused.
#[test]
fn the_directory_target_answers_lookup_from_what_it_holds() {
    let d = Daemon::start("dir-lookup");
    let bundle = d.shop_bundle("1.0.0", |a| add_template(a, "generated.yaml", GENERATED));
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    d.ok(&["app", "apply", "shop"]);
    let file = d.applied().join("shop/config.yaml");
    let first = std::fs::read_to_string(&file).unwrap();
    let password = |text: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix("password: "))
            .map(str::to_owned)
            .unwrap_or_default()
    };
    assert_eq!(password(&first).len(), 32, "{first}");
    d.ok(&["app", "apply", "shop"]);
    let second = std::fs::read_to_string(&file).unwrap();
    assert_eq!(password(&second), password(&first));
    let diff = d.cli(&["app", "diff", "shop", "--detailed-exitcode"]);
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff.stdout));
    d.ok(&["app", "apply", "shop"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), second);

    let peek = d.shop_bundle("1.1.0", |a| {
        add_template(
            a,
            "peek.yaml",
            "{{- $t := lookup \"v1\" \"Secret\" \"other\" \"x\" }}\n",
        );
    });
    let out = d.cli(&["app", "update", peek.to_str().unwrap_or_default()]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("lookup of v1/Secret other/x is outside the lookup policy"),
        "{}",
        text(&out.stderr)
    );
}

/// What a namespace holds of a real chart, in words a comparison can use:
/// each object as `Kind/name` with the release's name put as `RELEASE`,
/// the release records of either tool and what Kubernetes makes in every
/// namespace left out; and each chart Secret's data, by the same key.
fn chart_objects(
    cp: &ControlPlane,
    namespace: &str,
    release: &str,
) -> (Vec<String>, std::collections::BTreeMap<String, Value>) {
    let kinds = "deployments,statefulsets,services,secrets,configmaps,serviceaccounts,\
                 roles,rolebindings,persistentvolumeclaims";
    let mut names = Vec::new();
    let mut secrets = std::collections::BTreeMap::new();
    for item in cp.list(kinds, namespace) {
        let kind = item["kind"].as_str().unwrap_or_default();
        let name = item["metadata"]["name"].as_str().unwrap_or_default();
        let kind_of_secret = item["type"].as_str().unwrap_or_default();
        let made_by_kubernetes =
            name == "kube-root-ca.crt" || (kind == "ServiceAccount" && name == "default");
        let release_record =
            kind_of_secret == "helm.sh/release.v1" || kind_of_secret == "capstan.dev/release.v1";
        if made_by_kubernetes || release_record {
            continue;
        }
        let key = format!("{kind}/{}", name.replace(release, "RELEASE"));
        if kind == "Secret" {
            secrets.insert(key.clone(), item["data"].clone());
        }
        names.push(key);
    }
    names.sort();
    (names, secrets)
}

/// Helm 4 and capstan on the same control plane, the same real Bitnami
/// chart with the same values in two namespaces: after `helm install` and
/// capstan's apply, then `helm upgrade` and capstan's re-apply, both
/// namespaces hold the same objects (by kind and name, the release's name
/// aside) with the same Secret keys, and neither the upgrade nor the
/// re-apply changed a Secret's value (compared by value, before and
/// after): capstan's connected render reads back what Helm's does.
#[test]
fn helm_upgrade_and_a_capstan_reapply_leave_the_same_objects() {
    let Some(cp) = control_plane() else { return };
    let Some(charts) = conformance_charts() else {
        return;
    };
    let Some(helm) =
        crate::support::helm_binary("helm_upgrade_and_a_capstan_reapply_leave_the_same_objects")
    else {
        return;
    };
    let chart = charts.join("jenkins");
    // Release names that hold the chart's name, so the objects' full names
    // are the release names in both namespaces.
    let (by_helm, by_capstan) = ("cp-jenkins-helm", "cp-jenkins-capstan");
    cp.delete_namespace(by_helm);
    cp.delete_namespace(by_capstan);

    let d = cp.daemon(by_capstan);
    let bundle = chart_app(&d, by_capstan, &chart, "1.0.0");
    let values = d.state().with_file_name("helm-values.yaml");
    std::fs::write(&values, "service:\n  type: ClusterIP\n").unwrap();
    let helm_home = d.state().with_file_name("helm-home");
    let run_helm = |verb: &str| {
        let mut command = std::process::Command::new(&helm);
        command
            .args(["--kubeconfig"])
            .arg(cp.admin_kubeconfig())
            .args([verb, by_helm])
            .arg(&chart)
            .args(["-n", by_helm, "--create-namespace", "--server-side=true"])
            .args(["--wait", "--timeout", "180s", "-f"])
            .arg(&values)
            .env("HELM_CACHE_HOME", helm_home.join("cache"))
            .env("HELM_CONFIG_HOME", helm_home.join("config"))
            .env("HELM_DATA_HOME", helm_home.join("data"));
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "helm {verb}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
    };

    run_helm("install");
    d.ok(&["app", "upload", bundle.to_str().unwrap_or_default()]);
    d.ok(&["app", "apply", by_capstan]);
    assert_eq!(d.state_of(by_capstan), "applied", "{}", d.log());
    let (helm_objects, helm_secrets) = chart_objects(&cp, by_helm, by_helm);
    let (capstan_objects, capstan_secrets) = chart_objects(&cp, by_capstan, by_capstan);
    assert!(
        helm_objects.iter().any(|o| o == "Secret/RELEASE"),
        "{helm_objects:?}"
    );
    assert_eq!(capstan_objects, helm_objects);

    run_helm("upgrade");
    d.ok(&["app", "apply", by_capstan]);
    assert_eq!(d.state_of(by_capstan), "applied", "{}", d.log());
    let (helm_after, helm_secrets_after) = chart_objects(&cp, by_helm, by_helm);
    let (capstan_after, capstan_secrets_after) = chart_objects(&cp, by_capstan, by_capstan);
    assert_eq!(helm_after, helm_objects, "helm upgrade changed the objects");
    assert_eq!(capstan_after, helm_after);
    assert_eq!(
        helm_secrets_after, helm_secrets,
        "helm upgrade kept its secrets"
    );
    assert_eq!(
        capstan_secrets_after, capstan_secrets,
        "capstan's re-apply kept its secrets"
    );
    for (name, data) in &helm_secrets_after {
        let keys = |d: &Value| -> Vec<String> {
            d.as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        };
        let theirs = capstan_secrets_after.get(name).map(keys);
        assert_eq!(theirs, Some(keys(data)), "the keys of {name}");
    }

    d.ok(&["app", "remove", by_capstan]);
    cp.delete_namespace(by_helm);
    cp.delete_namespace(by_capstan);
}
