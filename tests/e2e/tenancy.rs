//! Tenancy (issue 26) on the real control plane: apps applied as the
//! ServiceAccount the operator names (`serve --service-account
//! APP=NAMESPACE/NAME`), by impersonation. The daemon may impersonate
//! exactly that account (a Role with `resourceNames`); the account is
//! `admin` in its own namespace and may read namespaces. An app in that
//! namespace applies; an app whose chart holds a ClusterRoleBinding fails
//! with the API server's forbidden error naming the object and the
//! account, until the right is granted; an app that writes into another
//! namespace is refused.

use std::path::Path;

use crate::control_plane::{ControlPlane, control_plane};
use crate::daemon::{Daemon, edit, text};

const TENANT: &str = "tenant-a";
const OTHER: &str = "tenant-b";
const ACCOUNT: &str = "system:serviceaccount:tenant-a:deployer";

fn setup(cp: &ControlPlane) {
    for ns in [TENANT, OTHER] {
        cp.delete_namespace(ns);
        cp.kubectl_ok(&["create", "namespace", ns]);
    }
    let _ = cp.kubectl(&[
        "delete",
        "clusterrolebinding",
        "tenant-a-deployer-admin",
        "ten-crb-escalate",
        "--ignore-not-found",
    ]);
    // The example as shipped: the account, its rights, and the daemon's
    // right to impersonate it.
    let rbac = std::fs::read_to_string(
        crate::support::workspace_root().join("deploy/tenancy-example.yaml"),
    )
    .unwrap();
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], &rbac);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// The shop app as `name`, released into `namespace`, after `tweak`.
fn shop(d: &Daemon, name: &str, namespace: &str, tweak: impl FnOnce(&Path)) -> String {
    let bundle = d.shop_bundle("1.0.0", |dir| {
        let meta = dir.join("capstan.yaml");
        edit(&meta, "name: shop\n", &format!("name: {name}\n"));
        let text = std::fs::read_to_string(&meta).unwrap();
        std::fs::write(
            &meta,
            text.replace("namespace: shop,", &format!("namespace: {namespace},")),
        )
        .unwrap();
        tweak(dir);
    });
    bundle.to_str().unwrap().to_string()
}

#[test]
fn each_app_is_applied_with_its_service_accounts_rights() {
    let Some(cp) = control_plane() else { return };
    setup(&cp);
    let account = format!("{TENANT}/deployer");
    let d = Daemon::start_with_target(
        "tenancy",
        vec![
            "--kubeconfig".into(),
            cp.capstan_kubeconfig().display().to_string(),
            "--service-account".into(),
            format!("ten-hello={account}"),
            "--service-account".into(),
            format!("ten-crb={account}"),
            "--service-account".into(),
            format!("ten-other={account}"),
        ],
    );
    // In its own namespace, the account's rights suffice.
    d.ok(&["app", "upload", &shop(&d, "ten-hello", TENANT, |_| {})]);
    d.ok(&["app", "apply", "ten-hello"]);
    assert_eq!(d.state_of("ten-hello"), "applied", "{}", d.log());
    let deployment = cp
        .object("deployment", Some(TENANT), "web")
        .expect("applied");
    let managers = deployment["metadata"]["managedFields"].to_string();
    assert!(managers.contains("capstan"), "{managers}");

    // A ClusterRoleBinding to cluster-admin: the API server refuses the
    // account, and says which object and which account.
    let crb = shop(&d, "ten-crb", TENANT, |dir| {
        std::fs::write(
            dir.join("charts/config/templates/escalate.yaml"),
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n\
             metadata: {name: ten-crb-escalate}\n\
             roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n\
             subjects: [{kind: ServiceAccount, name: default, namespace: tenant-a}]\n",
        )
        .unwrap();
    });
    d.ok(&["app", "upload", &crb]);
    let out = d.cli(&["app", "apply", "ten-crb"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("forbidden") || err.contains("Forbidden"),
        "{err}"
    );
    assert!(
        err.contains("ten-crb-escalate") && err.contains(ACCOUNT),
        "{err}"
    );
    assert!(
        cp.object("clusterrolebinding", None, "ten-crb-escalate")
            .is_none(),
        "nothing escalated"
    );

    // Another namespace is not the account's.
    d.ok(&["app", "upload", &shop(&d, "ten-other", OTHER, |_| {})]);
    let out = d.cli(&["app", "apply", "ten-other"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains(ACCOUNT) && err.contains(OTHER), "{err}");
    assert!(cp.object("configmap", Some(OTHER), "shop-config").is_none());

    // Removing goes as the account too.
    d.ok(&["app", "remove", "ten-hello"]);
    assert!(cp.object("deployment", Some(TENANT), "web").is_none());

    // With the right granted to the account, the binding applies.
    cp.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "tenant-a-deployer-admin",
        "--clusterrole=cluster-admin",
        &format!("--serviceaccount={TENANT}:deployer"),
    ]);
    d.ok(&["app", "recover", "ten-crb"]);
    assert_eq!(d.state_of("ten-crb"), "applied", "{}", d.log());
    assert!(
        cp.object("clusterrolebinding", None, "ten-crb-escalate")
            .is_some()
    );
    d.ok(&["app", "remove", "ten-crb"]);
    assert!(
        cp.object("clusterrolebinding", None, "ten-crb-escalate")
            .is_none()
    );
    let _ = cp.kubectl(&["delete", "clusterrolebinding", "tenant-a-deployer-admin"]);
}
