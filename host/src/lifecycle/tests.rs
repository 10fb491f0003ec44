//! The lifecycle in process, with plugin-free bundles built on the fly and
//! the directory target: ordering, pruning, reconciliation and the lock.
//! The daemon as a whole (plugins, HTTP, crashes) is tested end to end in
//! `tests/e2e/daemon.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::bundle;
use crate::kube::DirTarget;
use crate::model::AppName;
use crate::store::{AppState, Operation, Store};
use crate::trust::{SigningKey, TrustStore};

struct Fixture {
    dir: tempfile::TempDir,
    key: SigningKey,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
            key: SigningKey::generate("test").unwrap(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn open(&self) -> Result<Lifecycle, Error> {
        let mut trust = TrustStore::empty();
        trust
            .add_openssh(&self.key.public_key_line().unwrap(), Path::new("test.pub"))
            .unwrap();
        let target = Arc::new(DirTarget::new(self.path("applied")));
        Lifecycle::open(Options::new(self.path("state"), trust, target))
    }

    /// A bundle of app `name` at `version` with one ConfigMap chart per
    /// entry of `charts` (`name` or `name:disabled`).
    fn bundle(&self, name: &str, version: &str, charts: &[&str]) -> std::fs::File {
        self.bundle_with(name, version, charts, "")
    }

    /// [`Fixture::bundle`] with extra `capstan.yaml` lines.
    fn bundle_with(
        &self,
        name: &str,
        version: &str,
        charts: &[&str],
        extra: &str,
    ) -> std::fs::File {
        self.bundle_with_template(name, version, charts, extra, CONFIG_MAP)
    }

    /// [`Fixture::bundle_with`] with each chart's one template given.
    fn bundle_with_template(
        &self,
        name: &str,
        version: &str,
        charts: &[&str],
        extra: &str,
        template: &str,
    ) -> std::fs::File {
        let app = self.path(&format!("src-{name}-{version}"));
        let _ = std::fs::remove_dir_all(&app);
        let mut meta = format!("name: {name}\nversion: {version}\ncharts:\n");
        let mut group = Vec::new();
        for spec in charts {
            let (chart, enabled) = match spec.split_once(':') {
                Some((chart, _)) => (chart, false),
                None => (*spec, true),
            };
            let dir = app.join("charts").join(chart);
            std::fs::create_dir_all(dir.join("templates")).unwrap();
            std::fs::write(
                dir.join("Chart.yaml"),
                format!("apiVersion: v2\nname: {chart}\nversion: 1.0.0\n"),
            )
            .unwrap();
            std::fs::write(dir.join("values.yaml"), "greeting: hi\n").unwrap();
            std::fs::write(dir.join("templates/cm.yaml"), template).unwrap();
            meta.push_str(&format!(
                "  - {{name: {chart}, path: charts/{chart}, namespace: {name}, release: {chart}, enabled: {enabled}}}\n"
            ));
            group.push(chart.to_owned());
        }
        meta.push_str(&format!(
            "chart_groups:\n  - {{name: all, mode: sequential, charts: [{}]}}\n",
            group.join(", ")
        ));
        meta.push_str(extra);
        std::fs::write(app.join("capstan.yaml"), meta).unwrap();
        let out = self.path(&format!("{name}-{version}.tgz"));
        bundle::build(&app, &self.key, &out, &|_, _| Ok(())).unwrap();
        std::fs::File::open(out).unwrap()
    }
}

const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n";

fn name(text: &str) -> AppName {
    AppName::new(text).unwrap()
}

#[test]
fn apply_writes_each_enabled_chart_and_an_update_prunes_what_it_dropped() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = lc
        .upload(f.bundle("demo", "1.0.0", &["a", "b", "c:disabled"]))
        .unwrap();
    assert_eq!(app.state, AppState::Uploaded);
    lc.apply(&app.name, vec![]).unwrap().wait();
    let shown = lc.show(&app.name).unwrap();
    assert_eq!(
        shown.app.state,
        AppState::Applied,
        "{:?}",
        shown.app.message
    );
    assert!(f.path("applied/demo/a.yaml").exists());
    assert!(f.path("applied/demo/b.yaml").exists());
    assert!(
        !f.path("applied/demo/c.yaml").exists(),
        "disabled charts are not applied"
    );

    lc.update(f.bundle("demo", "1.1.0", &["a"]), None)
        .unwrap()
        .wait();
    let shown = lc.show(&app.name).unwrap();
    assert_eq!(
        shown.app.state,
        AppState::Applied,
        "{:?}",
        shown.app.message
    );
    assert_eq!(shown.app.active_version, "1.1.0");
    assert!(
        !f.path("applied/demo/b.yaml").exists(),
        "b was dropped by 1.1.0"
    );
    let kept: Vec<(&str, bool, bool)> = shown
        .versions
        .iter()
        .map(|v| (v.version.as_str(), v.active, v.rollback))
        .collect();
    assert_eq!(
        kept,
        [("1.0.0", false, true), ("1.1.0", true, false)],
        "the old version is kept for a rollback"
    );
    assert!(f.path("state/bundles/demo/1.0.0").exists());
}

#[test]
fn an_update_that_is_not_newer_is_refused_and_changes_nothing() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap();
    lc.apply(&app.name, vec![]).unwrap().wait();
    let err = lc
        .update(f.bundle("demo", "1.0.0", &["a"]), None)
        .unwrap_err();
    assert!(matches!(err, Error::Upgrade { .. }), "{err}");
    assert_eq!(err.class(), ErrorClass::Conflict);
    let shown = lc.show(&app.name).unwrap();
    assert_eq!(shown.app.state, AppState::Applied);
    assert_eq!(shown.versions.len(), 1);
    assert_eq!(
        lc.history(&app.name).unwrap().len(),
        2,
        "no update recorded"
    );
}

#[test]
fn user_overrides_reach_the_render_and_survive_a_bad_request() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap();
    let set = OverrideSet {
        set: vec!["greeting=hello".into()],
        ..OverrideSet::default()
    };
    let shown = lc.override_set(&app.name, "a", &set).unwrap();
    assert_eq!(shown.merged["greeting"], "hello");
    let bad = OverrideSet {
        values: vec!["greeting: [".into()],
        ..OverrideSet::default()
    };
    assert!(lc.override_set(&app.name, "a", &bad).is_err());
    assert!(matches!(
        lc.override_set(&app.name, "nope", &set),
        Err(Error::UnknownChart { .. })
    ));
    lc.apply(&app.name, vec![]).unwrap().wait();
    let applied = std::fs::read_to_string(f.path("applied/demo/a.yaml")).unwrap();
    assert!(applied.contains("greeting: hello"), "{applied}");
}

#[test]
fn reopening_moves_interrupted_apps_to_their_failed_state_and_sweeps_orphans() {
    let f = Fixture::new();
    {
        let lc = f.open().unwrap();
        let app = lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap();
        // An apply that a crash interrupted: begun, never finished.
        lc.inner
            .services
            .store
            .begin_operation(
                &app.name,
                Operation::Apply,
                rules::APPLY_FROM,
                AppState::Applying,
            )
            .unwrap();
        std::fs::create_dir_all(f.path("state/bundles/ghost/1.0.0")).unwrap();
        std::fs::create_dir_all(f.path("state/bundles/.staging/leftover")).unwrap();
    }
    let lc = f.open().unwrap();
    let shown = lc.show(&name("demo")).unwrap();
    assert_eq!(shown.app.state, AppState::ApplyFailed);
    assert!(
        shown
            .app
            .message
            .unwrap()
            .contains("the daemon restarted during apply")
    );
    assert!(!f.path("state/bundles/ghost").exists());
    assert!(!f.path("state/bundles/.staging/leftover").exists());
    assert!(f.path("state/bundles/demo/1.0.0/capstan.yaml").exists());
    lc.apply(&name("demo"), vec![]).unwrap().wait();
    assert_eq!(lc.show(&name("demo")).unwrap().app.state, AppState::Applied);
}

#[test]
fn a_second_lifecycle_on_the_same_state_folder_is_refused() {
    let f = Fixture::new();
    let _first = f.open().unwrap();
    assert!(matches!(f.open(), Err(Error::StateLocked { .. })));
}

#[test]
fn each_app_gets_its_own_plugin_secret() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let a = lc.inner.app_secret(&name("a"));
    assert_ne!(a, lc.inner.app_secret(&name("b")));
    drop(lc);
    let again = f.open().unwrap();
    assert_eq!(a, again.inner.app_secret(&name("a")), "the secret persists");
}

#[test]
fn rekind_of_an_unknown_component_is_refused_before_anything_starts() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap();
    let err = lc.apply(&app.name, vec!["ghost".into()]).unwrap_err();
    assert!(matches!(err, Error::UnknownComponent { .. }));
    assert_eq!(err.class(), ErrorClass::BadRequest);
    assert_eq!(lc.history(&app.name).unwrap().len(), 1, "nothing recorded");
    assert_eq!(lc.show(&app.name).unwrap().app.state, AppState::Uploaded);
    let _ = Store::history(lc.inner.services.store.as_ref(), &app.name).unwrap();
}

#[test]
fn a_platform_outside_the_bundles_kubernetes_range_is_refused_before_anything_is_applied() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    // The default facts run the renderer's default version, 1.34.
    let old = f.bundle_with(
        "demo",
        "1.0.0",
        &["a"],
        "kubernetes: {min: \"1.20\", max: \"1.25\"}\n",
    );
    let app = lc.upload(old).unwrap();
    lc.apply(&app.name, vec![]).unwrap().wait();
    let shown = lc.show(&app.name).unwrap();
    assert_eq!(shown.app.state, AppState::ApplyFailed);
    let message = shown.app.message.unwrap();
    assert!(
        message.contains("supports Kubernetes 1.20.0 to 1.25.0"),
        "{message}"
    );
    assert!(!f.path("applied/demo").exists());
}

/// Issue 10: the rendered text is read once, the way Helm reads it before
/// sending it (go-yaml v2 rules), so `0644` reaches the target as 420 and
/// an unquoted `yes` as true, exactly as `helm install` sends them.
#[test]
fn rendered_manifests_reach_the_target_with_helms_yaml_meaning() {
    let template = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  annotations:\n    on-call: on\n    quoted: \"yes\"\nspec:\n  template:\n    spec:\n      enableServiceLinks: yes\n      containers:\n        - name: web\n          image: web:1\n      volumes:\n        - name: config\n          configMap:\n            name: web\n            defaultMode: 0644\n";
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = lc
        .upload(f.bundle_with_template("yaml", "1.0.0", &["web"], "", template))
        .unwrap();
    lc.apply(&app.name, vec![]).unwrap().wait();
    let shown = lc.show(&app.name).unwrap();
    assert_eq!(
        shown.app.state,
        AppState::Applied,
        "{:?}",
        shown.app.message
    );
    let target = DirTarget::new(f.path("applied"));
    let release = crate::kube::Release {
        app: "yaml".into(),
        chart: "web".into(),
        namespace: "yaml".into(),
        release_name: "web".into(),
    };
    let applied = crate::kube::ApplyTarget::applied(&target, &release).unwrap();
    let object = applied[0].object();
    let pod = &object["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][0]["configMap"]["defaultMode"],
        serde_json::json!(420)
    );
    assert_eq!(pod["enableServiceLinks"], serde_json::json!(true));
    assert_eq!(
        object["metadata"]["annotations"]["on-call"],
        serde_json::json!(true)
    );
    assert_eq!(
        object["metadata"]["annotations"]["quoted"],
        serde_json::json!("yes")
    );
    let text = std::fs::read_to_string(f.path("applied/yaml/web.yaml")).unwrap();
    assert!(text.contains("defaultMode: 420"), "{text}");
    assert!(text.contains("quoted: \"yes\""), "{text}");
}

const REVISION_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  revision: {{ .Release.Revision | quote }}\n  install: {{ .Release.IsInstall | quote }}\n";

#[test]
fn release_revision_counts_the_applies_that_changed_something_and_the_store_keeps_it() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = lc
        .upload(f.bundle_with_template("demo", "1.0.0", &["a"], "", REVISION_MAP))
        .unwrap();
    let revision_of = |lc: &Lifecycle| {
        let shown = lc.show(&app.name).unwrap();
        assert_eq!(
            shown.app.state,
            AppState::Applied,
            "{:?}",
            shown.app.message
        );
        let applied = std::fs::read_to_string(f.path("applied/demo/a.yaml")).unwrap();
        (shown.releases, applied)
    };
    lc.apply(&app.name, vec![]).unwrap().wait();
    let (releases, applied) = revision_of(&lc);
    assert!(applied.contains("revision: \"1\""), "{applied}");
    assert!(applied.contains("install: \"true\""), "{applied}");
    assert_eq!(releases.len(), 1);
    assert_eq!(releases[0].chart, "a");
    assert_eq!(releases[0].method, "file");
    assert_eq!(releases[0].revision, 1);
    assert_eq!(
        releases[0]
            .objects
            .iter()
            .map(|o| format!("{}/{}", o.kind, o.name))
            .collect::<Vec<_>>(),
        ["ConfigMap/a"]
    );

    // The template names the revision, so each apply changes the object.
    lc.apply(&app.name, vec![]).unwrap().wait();
    let (releases, applied) = revision_of(&lc);
    assert!(applied.contains("revision: \"2\""), "{applied}");
    assert!(applied.contains("install: \"false\""), "{applied}");
    assert_eq!(releases[0].revision, 2);

    // The count survives a restart of the daemon.
    drop(lc);
    let lc = f.open().unwrap();
    lc.apply(&app.name, vec![]).unwrap().wait();
    let (releases, applied) = revision_of(&lc);
    assert!(applied.contains("revision: \"3\""), "{applied}");
    assert_eq!(releases[0].revision, 3);

    // A remove forgets the release; the next apply is an install again.
    lc.remove(&app.name, false).unwrap().wait();
    assert_eq!(lc.show(&app.name).unwrap().releases, []);
    lc.apply(&app.name, vec![]).unwrap().wait();
    let (releases, applied) = revision_of(&lc);
    assert!(applied.contains("revision: \"1\""), "{applied}");
    assert_eq!(releases[0].revision, 1);
}

#[test]
fn an_apply_that_changes_nothing_keeps_the_revision() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap();
    lc.apply(&app.name, vec![]).unwrap().wait();
    lc.apply(&app.name, vec![]).unwrap().wait();
    let shown = lc.show(&app.name).unwrap();
    assert_eq!(shown.app.state, AppState::Applied);
    assert_eq!(shown.releases[0].revision, 1, "nothing changed: still 1");
}

// ---- issue 13: every operation begins first and ends in one finish ----

impl Fixture {
    /// Opens the lifecycle with `hook` run at every checkpoint.
    fn open_with_hook(&self, hook: super::checkpoint::Hook) -> Lifecycle {
        let mut lc = self.open().unwrap();
        Arc::get_mut(&mut lc.inner)
            .expect("no other handle yet")
            .work
            .checkpoints = super::checkpoint::Checkpoints::with_hook(hook);
        lc
    }
}

/// Every entry of the app's history is finished, and the last one is
/// `operation`, ended in `state`, failed.
fn assert_one_failed_finish(lc: &Lifecycle, app: &AppName, operation: Operation, state: AppState) {
    let history = lc.history(app).unwrap();
    assert!(
        history.iter().all(|h| h.to_state.is_some()),
        "an operation was left running: {history:?}"
    );
    let last = history.last().unwrap();
    assert_eq!(last.operation, operation, "{history:?}");
    assert_eq!(last.to_state, Some(state), "{history:?}");
    assert_eq!(last.outcome, crate::store::Outcome::Failed, "{history:?}");
    assert_eq!(lc.show(app).unwrap().app.state, state);
}

fn truncate(path: &Path) {
    std::fs::write(path, b"").unwrap();
}

#[test]
fn a_damaged_stored_template_fails_each_operation_naming_the_file_and_leaves_the_target_untouched()
{
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap();
    lc.apply(&app.name, vec![]).unwrap().wait();
    assert_eq!(lc.show(&app.name).unwrap().app.state, AppState::Applied);
    let applied = std::fs::read(f.path("applied/demo/a.yaml")).unwrap();
    truncate(&f.path("state/bundles/demo/1.0.0/charts/a/templates/cm.yaml"));

    let err = lc.apply(&app.name, vec![]).unwrap_err();
    let line = err.one_line();
    assert!(line.contains("charts/a/templates/cm.yaml"), "{line}");
    assert!(line.contains("apply-failed"), "{line}");
    assert_eq!(
        err.class(),
        ErrorClass::Conflict,
        "a state error, not a 500"
    );
    assert!(matches!(err.cause(), Error::StoredBundle { .. }), "{line}");
    assert_one_failed_finish(&lc, &app.name, Operation::Apply, AppState::ApplyFailed);
    assert_eq!(
        std::fs::read(f.path("applied/demo/a.yaml")).unwrap(),
        applied
    );

    let err = lc.diff(&app.name).unwrap_err();
    assert!(err.one_line().contains("charts/a/templates/cm.yaml"));
    assert_eq!(err.class(), ErrorClass::Conflict);

    let err = lc.recover(&app.name).unwrap_err();
    assert!(err.one_line().contains("charts/a/templates/cm.yaml"));
    assert_one_failed_finish(&lc, &app.name, Operation::Recover, AppState::ApplyFailed);

    let err = lc.remove(&app.name, false).unwrap_err();
    assert!(err.one_line().contains("charts/a/templates/cm.yaml"));
    assert_one_failed_finish(&lc, &app.name, Operation::Remove, AppState::RemoveFailed);
    assert_eq!(
        std::fs::read(f.path("applied/demo/a.yaml")).unwrap(),
        applied
    );

    // Issue 45: the way out is a forced remove (from the inventories,
    // without the damaged bundle), then delete.
    lc.remove(&app.name, true).unwrap().wait();
    assert_eq!(settled(&lc, "demo"), AppState::Uploaded);
    let message = lc.history(&app.name).unwrap().pop().unwrap().message;
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("removed without the bundle (stored bundle of demo")),
        "{message:?}"
    );
    assert!(!f.path("applied/demo/a.yaml").exists());
    lc.delete(&app.name).unwrap();
}

#[test]
fn a_stored_file_added_behind_the_daemons_back_is_refused() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap();
    std::fs::write(
        f.path("state/bundles/demo/1.0.0/charts/a/templates/extra.yaml"),
        CONFIG_MAP,
    )
    .unwrap();
    let err = lc.apply(&app.name, vec![]).unwrap_err();
    assert!(
        err.one_line().contains("charts/a/templates/extra.yaml"),
        "{}",
        err.one_line()
    );
    assert!(!f.path("applied/demo").exists());
}

#[test]
fn a_failure_injected_at_each_read_ends_the_operation_once() {
    // (checkpoint where the damage is done, the file damaged, the operation)
    let cases: [(&str, &str, Operation); 4] = [
        (
            "apply:begun",
            "1.0.0/charts/a/values.yaml",
            Operation::Apply,
        ),
        ("update:staged", "1.0.0/capstan.yaml", Operation::Update),
        (
            "update:staged",
            "2.0.0/charts/a/templates/cm.yaml",
            Operation::Update,
        ),
        ("remove:begun", "1.0.0/MANIFEST", Operation::Remove),
    ];
    for (point, file, operation) in cases {
        let f = Fixture::new();
        let victim = f.path(&format!("state/bundles/demo/{file}"));
        let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let hook_armed = armed.clone();
        let hook_point = point.to_owned();
        let lc = f.open_with_hook(Arc::new(move |reached: &str| {
            if reached == hook_point && hook_armed.swap(false, std::sync::atomic::Ordering::SeqCst)
            {
                std::fs::write(&victim, b"").unwrap();
            }
        }));
        let app = lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap();
        lc.apply(&app.name, vec![]).unwrap().wait();
        let applied = std::fs::read(f.path("applied/demo/a.yaml")).unwrap();
        armed.store(true, std::sync::atomic::Ordering::SeqCst);
        let (err, state) = match operation {
            Operation::Apply => (
                lc.apply(&app.name, vec![]).unwrap_err(),
                AppState::ApplyFailed,
            ),
            Operation::Update => (
                lc.update(f.bundle("demo", "2.0.0", &["a"]), None)
                    .unwrap_err(),
                AppState::Applied,
            ),
            _ => (
                lc.remove(&app.name, false).unwrap_err(),
                AppState::RemoveFailed,
            ),
        };
        let line = err.one_line();
        let name = file.split_once('/').unwrap().1;
        assert!(line.contains(name), "{point} {file}: {line}");
        assert!(line.contains(state.as_str()), "{point} {file}: {line}");
        assert_ne!(err.class(), ErrorClass::Internal, "{line}");
        assert_one_failed_finish(&lc, &app.name, operation, state);
        assert_eq!(
            std::fs::read(f.path("applied/demo/a.yaml")).unwrap(),
            applied,
            "{point} {file}: the target is untouched"
        );
        if operation == Operation::Update {
            let shown = lc.show(&app.name).unwrap();
            assert_eq!(shown.app.active_version, "1.0.0");
            assert_eq!(shown.app.target_version, None);
            assert_eq!(shown.versions.len(), 1, "the staged version is forgotten");
        }
    }
}

#[test]
fn an_upload_whose_files_cannot_be_stored_is_a_state_error() {
    let f = Fixture::new();
    let blocker = f.path("state/bundles/demo");
    let lc = f.open_with_hook(Arc::new(move |reached: &str| {
        if reached == "upload:begun" {
            // A file where the app's bundle folder goes.
            std::fs::write(&blocker, b"in the way").unwrap();
        }
    }));
    let err = lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap_err();
    let line = err.one_line();
    assert!(line.contains("upload-failed"), "{line}");
    assert_eq!(err.class(), ErrorClass::Conflict, "{line}");
    assert_one_failed_finish(
        &lc,
        &name("demo"),
        Operation::Upload,
        AppState::UploadFailed,
    );
}

/// Waits for `app` to leave its transitional state; its state then.
fn settled(lc: &Lifecycle, app: &str) -> AppState {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let state = lc.show(&name(app)).unwrap().app.state;
        if !state.is_transitional() || std::time::Instant::now() > until {
            return state;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// An operation a crash left running, with `request` kept; the
/// reconciliation a reopening makes of it.
fn interrupted(
    f: &Fixture,
    operation: Operation,
    from: &[AppState],
    to: AppState,
    request: &str,
) -> (Lifecycle, Vec<crate::store::Reconciled>) {
    {
        let lc = f.open().unwrap();
        let op = lc
            .inner
            .services
            .store
            .begin_operation(&name("demo"), operation, from, to)
            .unwrap();
        lc.inner.services.store.set_request(op, request).unwrap();
    }
    let lc = f.open().unwrap();
    let history = lc.history(&name("demo")).unwrap();
    let last = history.last().unwrap();
    assert_eq!(last.outcome, crate::store::Outcome::Interrupted);
    assert_eq!(
        last.request.as_deref(),
        Some(request),
        "kept with the entry"
    );
    let moved = vec![crate::store::Reconciled {
        app: name("demo"),
        from: to,
        to: to.failed_state_of(),
    }];
    (lc, moved)
}

#[test]
fn a_new_leader_resumes_an_interrupted_apply_with_its_flags_and_counts_resumptions() {
    let f = Fixture::new();
    {
        let lc = f.open().unwrap();
        lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap();
    }
    let (lc, moved) = interrupted(
        &f,
        Operation::Apply,
        rules::APPLY_FROM,
        AppState::Applying,
        r#"{"adopt":true}"#,
    );
    lc.resume(&moved);
    assert_eq!(settled(&lc, "demo"), AppState::Applied);
    let history = lc.history(&name("demo")).unwrap();
    let resumed = history.last().unwrap();
    assert_eq!(resumed.operation, Operation::Apply);
    assert_eq!(resumed.outcome, crate::store::Outcome::Succeeded);
    assert_eq!(
        resumed.request.as_deref(),
        Some(r#"{"adopt":true,"resumes":1}"#),
        "the same flags, one resumption"
    );
    let message = resumed.message.as_deref().unwrap_or_default();
    assert!(message.contains("resumed apply"), "{message}");

    // An apply already resumed as often as allowed is left for the
    // operator.
    drop(lc);
    let (lc, moved) = interrupted(
        &f,
        Operation::Apply,
        rules::APPLY_FROM,
        AppState::Applying,
        &format!(r#"{{"resumes":{}}}"#, super::MAX_RESUMES),
    );
    let before = lc.history(&name("demo")).unwrap().len();
    lc.resume(&moved);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(settled(&lc, "demo"), AppState::ApplyFailed);
    assert_eq!(lc.history(&name("demo")).unwrap().len(), before);
}

#[test]
fn a_new_leader_resumes_a_remove_as_a_remove_and_an_update_as_a_recover() {
    let f = Fixture::new();
    {
        let lc = f.open().unwrap();
        lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap();
        lc.apply(&name("demo"), vec![]).unwrap().wait();
    }
    let (lc, moved) = interrupted(
        &f,
        Operation::Remove,
        rules::REMOVE_FROM,
        AppState::Removing,
        r#"{"force":true}"#,
    );
    lc.resume(&moved);
    assert_eq!(settled(&lc, "demo"), AppState::Uploaded);
    let last = lc.history(&name("demo")).unwrap().pop().unwrap();
    assert_eq!(last.operation, Operation::Remove);
    assert_eq!(
        last.request.as_deref(),
        Some(r#"{"force":true,"resumes":1}"#)
    );
    lc.apply(&name("demo"), vec![]).unwrap().wait();
    drop(lc);
    let (lc, moved) = interrupted(
        &f,
        Operation::Update,
        rules::UPDATE_FROM,
        AppState::Updating,
        r#"{"resumes":1}"#,
    );
    lc.resume(&moved);
    assert_eq!(settled(&lc, "demo"), AppState::Applied);
    let last = lc.history(&name("demo")).unwrap().pop().unwrap();
    assert_eq!(last.operation, Operation::Recover);
    assert_eq!(last.request.as_deref(), Some(r#"{"resumes":2}"#));
    let message = last.message.as_deref().unwrap_or_default();
    assert!(
        message.contains("resumed update") && message.contains("recovered: version 1.0.0"),
        "{message}"
    );
}

/// An election this daemon always wins.
struct AlwaysLeads;

impl Leading for AlwaysLeads {
    fn leads(&self) -> bool {
        true
    }

    fn leader(&self) -> Option<String> {
        Some("this-one".into())
    }
}

/// Issue 45, no app without a way out: in cluster mode without a bundle
/// registry, an app whose bundle this replica does not hold can be
/// neither removed nor recovered; `remove --force` removes it from the
/// inventories, skipping what needs the bundle and saying so, and it can
/// then be deleted.
#[test]
fn a_forced_remove_of_an_app_whose_bundle_no_replica_holds_empties_the_target_and_allows_delete() {
    let f = Fixture::new();
    let mut trust = TrustStore::empty();
    trust
        .add_openssh(&f.key.public_key_line().unwrap(), Path::new("test.pub"))
        .unwrap();
    let target = Arc::new(DirTarget::new(f.path("applied")));
    let mut options = Options::new(f.path("state"), trust, target);
    options.leading = Some(Arc::new(AlwaysLeads));
    let lc = Lifecycle::open(options).unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while lc.role() != Role::Leader {
        assert!(std::time::Instant::now() < until, "never led");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let app = name("lost");
    lc.upload(f.bundle("lost", "1.0.0", &["a", "b"])).unwrap();
    lc.apply(&app, vec![]).unwrap().wait();
    assert_eq!(settled(&lc, "lost"), AppState::Applied);
    let applied = f.path("applied");
    let files = |dir: &Path| {
        walk(dir)
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("lost"))
            .count()
    };
    assert!(files(&applied) > 0, "nothing applied");
    // Another replica uploaded it: this one has no folder for it.
    let record = lc.store().version(&app, "1.0.0").unwrap();
    std::fs::remove_dir_all(&record.bundle_dir).unwrap();

    // Without --force: refused for want of the bundle, as before.
    let plain = lc.remove(&app, false);
    assert!(plain.is_err());
    assert_eq!(settled(&lc, "lost"), AppState::RemoveFailed);
    assert!(lc.recover(&app).is_err());
    assert_eq!(settled(&lc, "lost"), AppState::RemoveFailed);
    assert!(lc.delete(&app).is_err(), "deleted while on the target");

    // With --force: removed from the inventories, the history says how.
    lc.remove(&app, true).unwrap().wait();
    assert_eq!(settled(&lc, "lost"), AppState::Uploaded);
    let last = lc.history(&app).unwrap().pop().unwrap();
    assert_eq!(last.outcome, crate::store::Outcome::Succeeded);
    let message = last.message.unwrap_or_default();
    assert!(
        message.contains("removed without the bundle")
            && message.contains("does not hold the bundle")
            && message.contains("2 release(s) [a, b]")
            && message.contains("skipped: plugin hooks"),
        "{message}"
    );
    assert_eq!(
        files(&applied),
        0,
        "left on the target: {:?}",
        walk(&applied)
    );
    assert!(lc.store().list_releases(&app).unwrap().is_empty());
    lc.delete(&app).unwrap();
    assert!(lc.store().app(&app).is_err());
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Issue 45: with automatic operations paused (`serve
/// --pause-automatic`), an operation a leader left running is not
/// resumed (nothing is added to the history) and `app show` says so; an
/// apply the operator asks for runs as always.
#[test]
fn paused_automatic_operations_resume_nothing_and_an_operator_still_applies() {
    let f = Fixture::new();
    {
        let lc = f.open().unwrap();
        lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap();
        let op = lc
            .inner
            .services
            .store
            .begin_operation(
                &name("demo"),
                Operation::Apply,
                rules::APPLY_FROM,
                AppState::Applying,
            )
            .unwrap();
        lc.inner.services.store.set_request(op, "{}").unwrap();
    }
    let mut trust = TrustStore::empty();
    trust
        .add_openssh(&f.key.public_key_line().unwrap(), Path::new("test.pub"))
        .unwrap();
    let target = Arc::new(DirTarget::new(f.path("applied")));
    let mut options = Options::new(f.path("state"), trust, target);
    options.pause_automatic = true;
    let lc = Lifecycle::open(options).unwrap();
    let moved = vec![crate::store::Reconciled {
        app: name("demo"),
        from: AppState::Applying,
        to: AppState::ApplyFailed,
    }];
    let before = lc.history(&name("demo")).unwrap().len();
    lc.resume(&moved);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(settled(&lc, "demo"), AppState::ApplyFailed);
    assert_eq!(lc.history(&name("demo")).unwrap().len(), before);
    let shown = lc.show(&name("demo")).unwrap().automatic_paused;
    assert!(
        shown
            .as_deref()
            .is_some_and(|s| s.contains("--pause-automatic")),
        "{shown:?}"
    );
    lc.apply(&name("demo"), vec![]).unwrap().wait();
    assert_eq!(settled(&lc, "demo"), AppState::Applied);
}

/// The failure policy of issue 45 (retries, pause, `on_failure`), with
/// this module's fixture.
#[path = "tests_failure.rs"]
mod failure;
