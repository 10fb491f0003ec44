//! The cluster store (issue 26) on the real control plane: every `Store`
//! method answers as the SQLite store does, with the state in App objects
//! that `kubectl` shows; a write from a daemon that did not see another's
//! write is refused by the API server (optimistic concurrency); a
//! document over the limit trims history, then refuses.

use capstan::kube::Connect;
use capstan::model::AppName;
use capstan::store::cluster::ClusterStore;
use capstan::store::{AppState, Error, Finish, Operation, OverrideLayer, Store, VersionRecord};
use serde_json::json;

use crate::control_plane::{ControlPlane, control_plane};

const NAMESPACE: &str = "capstan-store-test";

fn store(cp: &ControlPlane) -> ClusterStore {
    ClusterStore::connect(
        &Connect::Kubeconfig {
            path: cp.capstan_kubeconfig(),
            context: None,
        },
        NAMESPACE,
    )
    .expect("connecting the cluster store")
}

fn namespace(cp: &ControlPlane) {
    let _ = cp.kubectl(&["create", "namespace", NAMESPACE]);
}

fn upload(store: &dyn Store, app: &str) -> AppName {
    let name = AppName::new(app).unwrap();
    let id = store
        .begin_upload(&VersionRecord {
            app: name.clone(),
            version: "1.0".into(),
            bundle_dir: "/state/bundles/x".into(),
            bundle_digest: "d".into(),
            signer: "k".into(),
            metadata: json!({"name": app}),
            uploaded_at: 0,
            source: None,
        })
        .unwrap();
    store
        .finish_operation(id, &Finish::succeeded(AppState::Uploaded))
        .unwrap();
    name
}

/// The conformance script is built with the test hooks only.
#[cfg(feature = "test-hooks")]
mod conformance {
    use capstan::store::SqliteStore;
    use capstan::store::conformance::script;

    use super::{NAMESPACE, control_plane, namespace, store};

    #[test]
    fn every_method_answers_as_the_sqlite_store_does_and_kubectl_shows_the_apps() {
        let Some(cp) = control_plane() else { return };
        namespace(&cp);
        for app in ["s1-a", "s1-b"] {
            let _ = cp.kubectl(&[
                "delete",
                "apps.capstan.dev",
                app,
                "-n",
                NAMESPACE,
                "--ignore-not-found",
            ]);
        }
        let _ = cp.kubectl(&[
            "delete",
            "volumes.capstan.dev",
            "s1-data",
            "-n",
            NAMESPACE,
            "--ignore-not-found",
        ]);
        let sqlite = SqliteStore::open_in_memory().unwrap();
        let expected = script(&sqlite, "s1-");
        let cluster = store(&cp);
        let actual = script(&cluster, "s1-");
        for (want, got) in expected.iter().zip(&actual) {
            assert_eq!(got, want);
        }
        assert_eq!(actual.len(), expected.len());
        // The script ends with b reconciled to apply-failed, a deleted.
        let table = cp.kubectl_ok(&["get", "apps.capstan.dev", "-n", NAMESPACE]);
        let header = table.lines().next().unwrap_or_default();
        for column in ["NAME", "VERSION", "STATE", "AGE"] {
            assert!(header.contains(column), "{table}");
        }
        let b = table
            .lines()
            .find(|l| l.starts_with("s1-b "))
            .unwrap_or_else(|| panic!("{table}"));
        assert!(b.contains("1.0") && b.contains("apply-failed"), "{table}");
        assert!(!table.contains("s1-a "), "a was deleted: {table}");
        // The short name and the category reach the same objects.
        assert!(
            cp.kubectl_ok(&["get", "capp", "-n", NAMESPACE])
                .contains("s1-b")
        );
        let object = cp
            .object("apps.capstan.dev", Some(NAMESPACE), "s1-b")
            .unwrap();
        assert_eq!(object["status"]["state"], "apply-failed");
        assert_eq!(object["spec"]["versions"][0]["version"], "1.0");
        // Its upload and the apply reconciliation closed as interrupted.
        let history = object["status"]["history"].as_array().unwrap();
        assert_eq!(history.len(), 2, "{object}");
        assert_eq!(history[1]["outcome"], "interrupted");
    }
}

#[test]
fn a_deposed_writer_is_refused_by_the_api_server_and_changes_nothing() {
    let Some(cp) = control_plane() else { return };
    namespace(&cp);
    let _ = cp.kubectl(&[
        "delete",
        "apps.capstan.dev",
        "fence-a",
        "-n",
        NAMESPACE,
        "--ignore-not-found",
    ]);
    let old = store(&cp);
    let new = store(&cp);
    let app = upload(&old, "fence-a");
    old.set_override(&app, "web", &OverrideLayer::User, &json!({"by": "old"}))
        .unwrap();
    // The new leader takes over: it reconciles (reads everything afresh)
    // and changes the app.
    new.reconcile_after_restart().unwrap();
    let id = new
        .begin_operation(
            &app,
            Operation::Apply,
            &[AppState::Uploaded],
            AppState::Applying,
        )
        .unwrap();
    new.finish_operation(id, &Finish::succeeded(AppState::Applied))
        .unwrap();
    let before = cp
        .object("apps.capstan.dev", Some(NAMESPACE), "fence-a")
        .unwrap();
    // The old leader wakes up and writes what it thought was current.
    let err = old
        .set_override(&app, "web", &OverrideLayer::User, &json!({"by": "stale"}))
        .unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    let err = old
        .begin_operation(
            &app,
            Operation::Remove,
            &[AppState::Uploaded, AppState::Applied],
            AppState::Removing,
        )
        .unwrap_err();
    assert!(
        matches!(err, Error::Fenced),
        "fenced after the refusal: {err}"
    );
    assert!(old.is_fenced());
    let after = cp
        .object("apps.capstan.dev", Some(NAMESPACE), "fence-a")
        .unwrap();
    assert_eq!(
        before["metadata"]["resourceVersion"], after["metadata"]["resourceVersion"],
        "nothing was written"
    );
    assert_eq!(after["status"]["state"], "applied");
    assert_eq!(
        new.override_layer(&app, "web", &OverrideLayer::User)
            .unwrap()
            .unwrap()
            .values,
        json!({"by": "old"})
    );
    // Deleting is guarded too, by the resourceVersion itself: a third
    // daemon that read the app before the new leader wrote it.
    let stale = store(&cp);
    stale.reconcile_after_restart().unwrap();
    let _ = stale.app(&app).unwrap();
    new.set_override(&app, "web", &OverrideLayer::User, &json!({"by": "new"}))
        .unwrap();
    let err = stale.delete_app(&app, &[AppState::Applied]).unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert!(
        cp.object("apps.capstan.dev", Some(NAMESPACE), "fence-a")
            .is_some()
    );
    new.delete_app(&app, &[AppState::Applied]).unwrap();
    assert!(
        cp.object("apps.capstan.dev", Some(NAMESPACE), "fence-a")
            .is_none()
    );
}

#[test]
fn an_override_too_large_for_one_object_is_refused_with_a_clear_error() {
    let Some(cp) = control_plane() else { return };
    namespace(&cp);
    let _ = cp.kubectl(&[
        "delete",
        "apps.capstan.dev",
        "big-a",
        "-n",
        NAMESPACE,
        "--ignore-not-found",
    ]);
    let store = store(&cp);
    let app = upload(&store, "big-a");
    let huge = json!({"blob": "x".repeat(1_200_000)});
    let err = store
        .set_override(&app, "web", &OverrideLayer::User, &huge)
        .unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("over the store's limit of 1048576 bytes"),
        "{err}"
    );
    // Just under the limit is stored, and read back whole.
    let fits = json!({"blob": "y".repeat(900_000)});
    store
        .set_override(&app, "web", &OverrideLayer::User, &fits)
        .unwrap();
    let fresh = self::store(&cp);
    assert_eq!(
        fresh
            .override_layer(&app, "web", &OverrideLayer::User)
            .unwrap()
            .unwrap()
            .values,
        fits
    );
    store.delete_app(&app, &[AppState::Uploaded]).unwrap();
}

/// `capstan store export` of a daemon's SQLite store, `import` into the
/// cluster store and back into a new SQLite store: every app, version,
/// override, decision and history entry survives both moves.
#[test]
fn export_and_import_move_a_store_into_the_cluster_and_back() {
    let Some(cp) = control_plane() else { return };
    // A namespace of its own: the store's daemon key is one per
    // namespace, and an import into a store holding another is refused.
    const MOVED: &str = "capstan-store-move";
    cp.delete_namespace(MOVED);
    cp.kubectl_ok(&["create", "namespace", MOVED]);
    let app = "moved-shop";
    let mut d = crate::daemon::Daemon::start("store-move");
    let bundle = d.shop_bundle("1.0.0", |dir| {
        crate::daemon::edit(
            &dir.join("capstan.yaml"),
            "name: shop\n",
            &format!("name: {app}\n"),
        )
    });
    d.ok(&["app", "upload", bundle.to_str().unwrap()]);
    d.ok(&["app", "apply", app]);
    d.ok(&["override", "set", app, "web", "--set", "replicaCount=4"]);
    d.ok(&["app", "apply", app]);
    d.kill();
    let kubeconfig = cp.capstan_kubeconfig();
    let kube = [
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--store-namespace",
        MOVED,
    ];
    let first = d.dir.join("first.json");
    d.ok(&["store", "export", first.to_str().unwrap()]);
    let mut args = vec!["store", "import", first.to_str().unwrap()];
    args.extend(kube);
    d.ok(&args);
    let row = cp.kubectl_ok(&["get", "apps.capstan.dev", app, "-n", MOVED]);
    assert!(row.contains("applied") && row.contains("1.0.0"), "{row}");
    // Importing again is refused and changes nothing.
    let out = d.cli(&args);
    assert!(!out.status.success());
    assert!(crate::daemon::text(&out.stderr).contains("already exists"));
    let second = d.dir.join("second.json");
    let mut args = vec!["store", "export", second.to_str().unwrap()];
    args.extend(kube);
    d.ok(&args);
    let read = |path: &std::path::Path| -> serde_json::Value {
        let mut dump: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        // Only this test's app (the namespace is shared).
        dump["apps"] = serde_json::Value::Array(
            dump["apps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|a| a["name"] == app)
                .cloned()
                .collect(),
        );
        dump["volumes"] = serde_json::json!([]);
        dump
    };
    let one = read(&first);
    assert_eq!(one["apps"].as_array().unwrap().len(), 1);
    let history = one["apps"][0]["status"]["history"].as_array().unwrap();
    assert_eq!(history.len(), 3, "upload and two applies: {one:#}");
    assert!(
        one["apps"][0]["spec"]["overrides"]
            .to_string()
            .contains("replicaCount")
    );
    assert!(
        !one["apps"][0]["spec"]["decisions"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(
        !one["apps"][0]["status"]["releases"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(read(&second), one, "the cluster store kept everything");
    // Back into a new SQLite folder: the same, bundle folders aside.
    let state = d.dir.join("state-back");
    let back = d.dir.join("back.json");
    let mut trimmed = read(&second);
    trimmed["apps"][0]["spec"]["versions"][0]["bundle_dir"] = serde_json::Value::Null;
    std::fs::write(&second, serde_json::to_string(&read(&second)).unwrap()).unwrap();
    d.ok(&[
        "store",
        "import",
        second.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ]);
    d.ok(&[
        "store",
        "export",
        back.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
    ]);
    let mut again = read(&back);
    let dir = again["apps"][0]["spec"]["versions"][0]["bundle_dir"].take();
    assert_eq!(
        dir.as_str().unwrap(),
        state
            .join("bundles")
            .join(app)
            .join("1.0.0")
            .to_str()
            .unwrap()
    );
    assert_eq!(again, trimmed);
    assert!(
        again["daemon_key"].as_str().is_some_and(|k| k.len() == 44),
        "the daemon key moves with the store"
    );
    cp.delete_namespace(MOVED);
}
