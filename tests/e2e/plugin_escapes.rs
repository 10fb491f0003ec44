//! Issue 43: a contract-0.2 plugin that asks for whatever its chart's
//! user overrides say (`test-support/plugins/contract-v0.2`, the hostile plugin
//! these tests select the behaviour of), against apps that share a
//! namespace, on the directory target and on the real control plane.
//! Each class of escape the issue found is held here: generated secrets
//! bound to their app, `observe` under the read policy, every string of
//! an answer bounded, an answer all-or-nothing, the directory target as
//! strict as a cluster, and the Pod Security rule.

use std::path::PathBuf;

use crate::daemon::Daemon;

/// The hostile app `app`: chart `web` in namespace `ns`, the plugin with
/// `hooks`, built and uploaded.
fn upload(d: &Daemon, app: &str, ns: &str, hooks: &str) -> PathBuf {
    let dir = d.dir.join(format!("app-{app}"));
    // contract_v2's app, made this app's: its own name, namespace and
    // release (so two apps in one namespace render distinct objects),
    // without the Secret it keeps in another namespace.
    crate::contract_v2::write_app(&dir);
    let _ = std::fs::remove_file(dir.join("charts/web/templates/ca.yaml"));
    std::fs::write(
        dir.join("capstan.yaml"),
        format!(
            "name: {app}\nversion: 1.0.0\n\
             charts:\n  - {{name: web, path: charts/web, namespace: {ns}, release: {app}}}\n\
             chart_groups:\n  - {{name: all, mode: sequential, charts: [web]}}\n\
             plugins:\n  - {{path: plugins/v2.wasm, hooks: [{hooks}], charts: [web]}}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("charts/web/templates/values.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-values\n\
         data:\n  values: {{ toJson .Values | quote }}\n",
    )
    .unwrap();
    let bundle = d.dir.join(format!("{app}.tgz"));
    let built = d.build(&dir, &bundle);
    assert!(
        built.status.success(),
        "{}",
        crate::daemon::text(&built.stderr)
    );
    d.ok(&["app", "upload", bundle.to_str().unwrap()]);
    bundle
}

fn set_user(d: &Daemon, app: &str, values: &str) {
    let file = d.dir.join(format!("user-{app}.yaml"));
    std::fs::write(&file, values).unwrap();
    d.ok(&["override", "set", app, "web", "-f", file.to_str().unwrap()]);
}

/// Applies `app` with `values`, which must be refused by `rule`; the
/// message, bounded, names the plugin, the hook and the rule.
fn refused(d: &Daemon, app: &str, values: &str, rule: &str) -> String {
    set_user(d, app, values);
    let out = d.cli(&["app", "apply", app]);
    assert!(!out.status.success(), "{values}: applied");
    let shown = d.show(app);
    let message = shown["message"].as_str().unwrap_or_default().to_string();
    assert!(
        message.contains(&format!("denied by rule {rule}:")),
        "{rule}: {message}"
    );
    assert!(message.contains("plugins/v2.wasm"), "{message}");
    assert!(message.len() < 4096, "{} bytes", message.len());
    message
}

/// The password the chart of `app` got (its values ConfigMap on the
/// directory target).
fn rendered_password(d: &Daemon, app: &str) -> String {
    let text = std::fs::read_to_string(d.applied().join(format!("{app}/web.yaml"))).unwrap();
    let start = text.find(r#""password":""#).expect("no password") + 12;
    text[start..].chars().take_while(|c| *c != '"').collect()
}

fn config_map(namespace: &str, name: &str) -> String {
    format!(
        "{{apiVersion: v1, kind: ConfigMap, metadata: {{name: {name}, namespace: {namespace}}}, data: {{k: v}}}}"
    )
}

fn privileged_pod(namespace: &str) -> String {
    format!(
        "{{apiVersion: v1, kind: Pod, metadata: {{name: root, namespace: {namespace}}}, spec: {{hostPID: true, hostNetwork: true, \
         volumes: [{{name: host, hostPath: {{path: /}}}}], \
         containers: [{{name: c, image: registry.k8s.io/pause:3.10, securityContext: {{privileged: true}}, volumeMounts: [{{name: host, mountPath: /host}}]}}]}}}}"
    )
}

fn owned(d: &Daemon, app: &str) -> String {
    std::fs::read_to_string(d.applied().join(format!("{app}/capstan-owned.yaml")))
        .unwrap_or_default()
}

fn start(name: &str, policy: &str) -> Daemon {
    let dir = crate::support::fresh_dir(&format!("{name}_policy"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("policy.yaml");
    std::fs::write(&file, policy).unwrap();
    // The daemon's own folder (made anew by the start), as `applied()`.
    let applied = crate::support::fresh_dir(name).join("applied");
    Daemon::start_with_target(
        name,
        vec![
            "--target".into(),
            format!("dir:{}", applied.display()),
            "--action-policy".into(),
            file.display().to_string(),
        ],
    )
}

/// Item 1: app `a` generating `b-c` and app `a-b` generating `c` in one
/// namespace get two Secrets and two passwords; removing `a` leaves
/// `a-b`'s; an app cannot plant another app's generated secret.
#[test]
fn generated_secrets_are_bound_to_their_app() {
    let d = start("escape_secrets", "default:\n  namespaces: [shared]\n");
    upload(&d, "a", "shared", "pre-apply");
    upload(&d, "a-b", "shared", "pre-apply");
    set_user(&d, "a", "askSecret: true\ngenerateName: b-c\n");
    set_user(&d, "a-b", "askSecret: true\ngenerateName: c\n");
    d.ok(&["app", "apply", "a"]);
    d.ok(&["app", "apply", "a-b"]);
    let (pa, pab) = (rendered_password(&d, "a"), rendered_password(&d, "a-b"));
    assert_eq!((pa.len(), pab.len()), (24, 24));
    assert_ne!(pa, pab, "two apps share one generated secret");
    assert!(owned(&d, "a").contains("name: a.b-c"), "{}", owned(&d, "a"));
    assert!(owned(&d, "a-b").contains("name: a-b.c"));
    assert!(owned(&d, "a").contains("capstan.dev/generated-mac"));
    d.ok(&["app", "remove", "a"]);
    d.ok(&["app", "apply", "a-b"]);
    assert_eq!(rendered_password(&d, "a-b"), pab, "a-b's password changed");

    // No ensure may carry the host's marks.
    upload(&d, "x", "shared", "pre-apply");
    let planted = "{apiVersion: v1, kind: Secret, metadata: {name: p.db, namespace: shared, \
                   labels: {capstan.dev/generated-secret: db}, annotations: {capstan.dev/generated-shape: x}}, \
                   stringData: {password: chosen-by-the-attacker}}";
    refused(
        &d,
        "x",
        &format!("ensure: [{planted}]\n"),
        "reserved-metadata",
    );
    for key in [
        "app.capstan.dev/release",
        "capstan.dev/mirrored-from",
        "meta.helm.sh/release-name",
    ] {
        refused(
            &d,
            "x",
            &format!(
                "ensure: [{{apiVersion: v1, kind: ConfigMap, metadata: {{name: m, namespace: shared, annotations: {{{key}: y}}}}}}]\n"
            ),
            "reserved-metadata",
        );
    }
    // Planted without the marks, under the name app p will use: p's
    // apply refuses it rather than render the attacker's password.
    let bare = "{apiVersion: v1, kind: Secret, metadata: {name: p.db, namespace: shared}, \
                stringData: {password: chosen-by-the-attacker}}";
    set_user(&d, "x", &format!("ensure: [{bare}]\n"));
    d.ok(&["app", "apply", "x"]);
    upload(&d, "p", "shared", "pre-apply");
    set_user(&d, "p", "askSecret: true\n");
    let out = d.cli(&["app", "apply", "p"]);
    assert!(!out.status.success());
    let message = d.show("p")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("is not the generated secret db capstan made for app p"),
        "{message}"
    );
    let values = std::fs::read_to_string(d.applied().join("p/web.yaml")).unwrap_or_default();
    assert!(!values.contains("chosen-by-the-attacker"), "{values}");
}

/// Item 2: `observe` reads only what `lookup` may.
#[test]
fn observe_is_under_the_read_policy() {
    let d = start("escape_observe", "default: {}\n");
    upload(&d, "o", "o-ns", "pre-apply");
    let message = refused(
        &d,
        "o",
        "observe: [{apiVersion: v1, kind: Secret, namespace: kube-system, name: bootstrap-token}]\n",
        "read-policy",
    );
    assert!(message.contains("namespace kube-system"), "{message}");
    refused(
        &d,
        "o",
        "observe: [{apiVersion: v1, kind: Secret, name: no-namespace}]\n",
        "read-policy",
    );
    refused(
        &d,
        "o",
        "observe: [{apiVersion: v1, kind: NoSuchKind, namespace: o-ns, name: x}]\n",
        "read-policy",
    );
    set_user(
        &d,
        "o",
        "observe: [{apiVersion: v1, kind: ConfigMap, namespace: o-ns, name: o-values}]\n",
    );
    d.ok(&["app", "apply", "o"]);
}

/// Item 3: every string a plugin hands the host is bounded; what is refused is
/// stored and logged only as a bounded preview.
#[test]
fn every_string_of_an_answer_is_bounded() {
    let d = start("escape_bounds", "default: {}\n");
    upload(&d, "s", "s-ns", "pre-apply, status");
    for (values, needle) in [
        ("reasonBytes: 2000\n", "is 2000 bytes, more than 1024"),
        ("reasonBytes: 20000000\n", "exceeded 1024 KiB"),
        (
            &*format!(
                "mirror: [{{kind: configmap, from: s-ns/a, to: s-ns/{}}}]\n",
                "n".repeat(300)
            ),
            "the copy's name",
        ),
        (
            &*format!(
                "delete: [{{apiVersion: v1, kind: ConfigMap, namespace: s-ns, name: {}}}]\n",
                "n".repeat(100_000)
            ),
            "more than 253",
        ),
        ("statusFailedBytes: 5000\n", "is 5000 bytes, more than 1024"),
    ] {
        set_user(&d, "s", values);
        let out = d.cli(&["app", "apply", "s"]);
        assert!(!out.status.success(), "{values:.80}");
        let shown = d.ok(&["app", "show", "s", "-o", "json"]);
        assert!(shown.contains(needle), "{values:.80}: {shown:.2000}");
        assert!(shown.len() < 16 << 10, "app show is {} bytes", shown.len());
        let history = d.ok(&["app", "history", "s", "-o", "json"]);
        assert!(
            !history.contains(&"r".repeat(1100)),
            "the history keeps it whole"
        );
        assert!(!history.contains(&"n".repeat(300)));
    }
    assert!(
        !d.log().contains(&"r".repeat(1100)),
        "the log keeps it whole"
    );
    // Within the bounds, the reason is kept.
    set_user(&d, "s", "requestReapply: the CA changed\n");
    d.ok(&["app", "apply", "s"]);
    assert!(
        d.show("s")["reapply_needed"]
            .as_str()
            .is_some_and(|r| r.contains("the CA changed"))
    );
}

/// Item 4: an answer is all-or-nothing: a refusal by the target or by a later
/// action's size leaves the earlier actions undone.
#[test]
fn a_refused_answer_writes_nothing() {
    let d = start(
        "escape_atomic",
        "default: {}\napps:\n  tiny:\n    maxOwnedBytes: 150\n",
    );
    upload(&d, "t", "t-ns", "pre-apply");
    let worker = "{apiVersion: apps/v1, kind: Deployment, metadata: {name: worker, namespace: t-ns}, \
                  spec: {replicas: 1, selector: {matchLabels: {app: worker}}, \
                  template: {metadata: {labels: {app: worker}}, \
                  spec: {containers: [{name: w, image: registry.k8s.io/pause:3.10}]}}}}";
    set_user(&d, "t", &format!("ensure: [{worker}]\n"));
    d.ok(&["app", "apply", "t"]);
    // The directory target runs nothing, so cannot restart: refused
    // before the ConfigMap is written.
    refused(
        &d,
        "t",
        &format!(
            "ensure: [{worker}, {}]\nrestart: [{{kind: Deployment, namespace: t-ns, name: worker}}]\n",
            config_map("t-ns", "first")
        ),
        "target",
    );
    assert!(
        !owned(&d, "t").contains("name: first"),
        "{}",
        owned(&d, "t")
    );
    // The user overrides hold 600 KB, the patch adds 600 KB: the
    // overrides it would leave are over 1 MiB, so the ensure before it is
    // not applied either.
    let pad = "p".repeat(600_000);
    refused(
        &d,
        "t",
        &format!(
            "pad: {pad}\nensure: [{}]\npatchBytes: 600000\n",
            config_map("t-ns", "second")
        ),
        "override-size",
    );
    assert!(!owned(&d, "t").contains("name: second"));
    let stored = d.ok(&["override", "show", "t", "web"]);
    assert!(!stored.contains("big"), "the patch was stored");
    // The owned objects' bytes are bounded as their number is.
    upload(&d, "tiny", "tiny-ns", "pre-apply");
    let message = refused(
        &d,
        "tiny",
        &format!(
            "ensure: [{}, {}]\n",
            config_map("tiny-ns", "one"),
            config_map("tiny-ns", "two")
        ),
        "max-owned",
    );
    assert!(message.contains("maxOwnedBytes 150"), "{message}");
    assert_eq!(owned(&d, "tiny"), "");
}

/// Item 5: the directory target refuses what a cluster refuses.
#[test]
fn the_directory_target_is_as_strict_as_a_cluster() {
    let d = start(
        "escape_dir",
        "default:\n  clusterScoped: true\n  namespaces: [shared]\n",
    );
    upload(&d, "v", "shared", "pre-apply");
    upload(&d, "w", "shared", "pre-apply");
    d.ok(&["app", "apply", "v"]);
    // A CRD may not define a built-in kind.
    refused(
        &d,
        "w",
        "ensure: [{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: secrets.}, \
         spec: {group: '', names: {kind: Secret, plural: secrets}, scope: Cluster, versions: [{name: v1, served: true, storage: true}]}}]\n",
        "target",
    );
    // List kinds are not objects.
    for list in ["List", "ConfigMapList", "SecretList"] {
        refused(
            &d,
            "w",
            &format!(
                "ensure: [{{apiVersion: v1, kind: {list}, metadata: {{name: l}}, items: [{}]}}]\n",
                config_map("kube-system", "in-kube-system")
            ),
            "object",
        );
    }
    // An object another app's release holds.
    refused(
        &d,
        "w",
        &format!("ensure: [{}]\n", config_map("shared", "v-values")),
        "target",
    );
    // What could not be read back.
    refused(&d, "w", "ensureDeep: 120\n", "target");
    // Nothing of it was written; the folder still reads for both apps.
    assert_eq!(owned(&d, "w"), "");
    d.ok(&["app", "apply", "v"]);
    d.ok(&["app", "remove", "v"]);
}

/// Item 5: the cluster-scoped kinds the table lacked are cluster-scoped.
#[test]
fn newer_cluster_scoped_kinds_are_not_put_in_a_namespace() {
    let d = start("escape_scope", "default: {}\n");
    upload(&d, "k", "k-ns", "pre-apply");
    for (api_version, kind) in [
        ("storage.k8s.io/v1", "VolumeAttributesClass"),
        ("networking.k8s.io/v1", "ServiceCIDR"),
        ("networking.k8s.io/v1", "IPAddress"),
        ("resource.k8s.io/v1", "DeviceClass"),
        ("certificates.k8s.io/v1beta1", "ClusterTrustBundle"),
        ("storagemigration.k8s.io/v1beta1", "StorageVersionMigration"),
    ] {
        refused(
            &d,
            "k",
            &format!(
                "ensure: [{{apiVersion: {api_version}, kind: {kind}, metadata: {{name: x}}}}]\n"
            ),
            "no-cluster-scoped",
        );
    }
}

/// Item 7: Pods and Pod templates an app ensures meet the policy's Pod
/// Security Standards level (baseline by default).
#[test]
fn ensured_pods_meet_the_pod_security_level() {
    let d = start(
        "escape_pss",
        "default: {}\napps:\n  root:\n    podSecurity: privileged\n",
    );
    upload(&d, "q", "q-ns", "pre-apply");
    let message = refused(
        &d,
        "q",
        &format!("ensure: [{}]\n", privileged_pod("q-ns")),
        "pod-security",
    );
    assert!(message.contains("baseline"), "{message}");
    assert!(message.contains("hostNamespaces"), "{message}");
    upload(&d, "root", "root-ns", "pre-apply");
    set_user(
        &d,
        "root",
        &format!("ensure: [{}]\n", privileged_pod("root-ns")),
    );
    d.ok(&["app", "apply", "root"]);
    assert!(owned(&d, "root").contains("hostPID: true"));
}

/// The same classes on the real control plane: the generated secret is
/// refused once someone without the daemon key rewrites it, `observe`
/// and the Pod rule hold, and a refused answer creates nothing.
#[test]
fn plugin_escapes_are_held_on_the_real_control_plane() {
    let Some(cp) = crate::control_plane::control_plane() else {
        return;
    };
    let ns = "cp-escapes";
    cp.delete_namespace(ns);
    let d = cp.daemon("cp_escapes");
    upload(&d, "esc", ns, "pre-apply");
    set_user(&d, "esc", "askSecret: true\n");
    d.ok(&["app", "apply", "esc"]);
    let mac = cp.kubectl_ok(&[
        "get",
        "secret",
        "esc.db",
        "-n",
        ns,
        "-o",
        "jsonpath={.metadata.annotations.capstan\\.dev/generated-mac}",
    ]);
    assert!(mac.trim().len() > 40, "{mac:?}");
    // Someone with write access sets a password of their own.
    cp.kubectl_ok(&[
        "patch",
        "secret",
        "esc.db",
        "-n",
        ns,
        "--type=merge",
        "-p",
        r#"{"stringData":{"password":"chosen-by-the-attacker"}}"#,
    ]);
    set_user(&d, "esc", "askSecret: true\ngreeting: again\n");
    let out = d.cli(&["app", "apply", "esc"]);
    assert!(!out.status.success());
    let message = d.show("esc")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("its MAC does not match"), "{message}");
    let values = cp
        .object("configmap", Some(ns), "esc-values")
        .unwrap_or_default();
    assert!(!values.to_string().contains("chosen-by-the-attacker"));
    // Another app in the namespace cannot take the Secret over: the
    // cluster's ownership, checked before anything of its answer is
    // written.
    upload(&d, "esc2", ns, "pre-apply");
    let message = refused(
        &d,
        "esc2",
        &format!(
            "ensure: [{}, {{apiVersion: v1, kind: Secret, metadata: {{name: esc.db, namespace: {ns}}}, stringData: {{password: mine}}}}]\n",
            config_map(ns, "esc2-first")
        ),
        "target",
    );
    assert!(message.contains("esc.db"), "{message}");
    assert!(cp.object("configmap", Some(ns), "esc2-first").is_none());

    let message = refused(
        &d,
        "esc",
        "observe: [{apiVersion: v1, kind: Secret, namespace: kube-system, name: anything}]\n",
        "read-policy",
    );
    assert!(message.contains("kube-system"), "{message}");
    refused(
        &d,
        "esc",
        &format!("ensure: [{}]\n", privileged_pod(ns)),
        "pod-security",
    );
    refused(
        &d,
        "esc",
        &format!(
            "ensure: [{}]\nrestart: [{{kind: Deployment, namespace: kube-system, name: coredns}}]\n",
            config_map(ns, "first")
        ),
        "owned-only",
    );
    assert!(cp.object("configmap", Some(ns), "first").is_none());
    let _ = d.cli(&["app", "remove", "esc"]);
    let _ = d.cli(&["app", "remove", "esc2"]);
    cp.delete_namespace(ns);
}
