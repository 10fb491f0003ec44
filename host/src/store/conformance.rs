//! One script of every [`Store`] method, its refusals included, whose
//! answers are compared between two stores: the SQLite store is the
//! reference, and a store kept as documents (in memory, or on a real API
//! server in the end-to-end tests) must answer the same. Timestamps are
//! blanked and operation ids renumbered in the order they appear, since
//! each store stamps and numbers its own way.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Value, json};

use super::{
    AppState, DecisionRecord, Error, Finish, Operation, OperationId, OverrideLayer, ReleaseRecord,
    Store, TargetChange, VersionRecord, VolumeRecord,
};
use crate::model::{AppName, ObjectRef, WorkloadKind};

/// The answers of `store` to the script, one line a step, normalized.
/// `prefix` starts every app and volume name, so runs on a shared
/// backend do not meet.
///
/// # Panics
/// When `prefix` makes an invalid app name (a test's mistake).
pub fn script(store: &dyn Store, prefix: &str) -> Vec<String> {
    let mut run = Run {
        store,
        ids: HashMap::new(),
        lines: Vec::new(),
    };
    #[allow(clippy::unwrap_used)]
    let name = |n: &str| AppName::new(format!("{prefix}{n}")).unwrap();
    let a = name("a");
    let b = name("b");
    let ghost = name("ghost");
    let version = |app: &AppName, v: &str| VersionRecord {
        app: app.clone(),
        version: v.into(),
        bundle_dir: format!("/state/bundles/{app}/{v}").into(),
        bundle_digest: format!("sha256-{app}-{v}"),
        signer: "release-key".into(),
        metadata: json!({"name": app.as_str(), "version": v, "charts": [{"name": "web"}]}),
        uploaded_at: 123,
        source: (v == "2.0").then(|| format!("oci://registry/{app}@sha256:00")),
    };
    let st = |v: &str| OverrideLayer::Static { version: v.into() };
    let sys = |v: &str| OverrideLayer::System { version: v.into() };
    let user = OverrideLayer::User;

    // uploads and operations
    let up = run.id("begin_upload a", store.begin_upload(&version(&a, "1.0")));
    run.id(
        "begin_upload a again",
        store.begin_upload(&version(&a, "1.0")),
    );
    run.step(
        "finish upload",
        store.finish_operation(up, &Finish::succeeded(AppState::Uploaded)),
    );
    run.id(
        "begin to a settled state",
        store.begin_operation(
            &a,
            Operation::Apply,
            &[AppState::Uploaded],
            AppState::Applied,
        ),
    );
    let apply = run.id(
        "begin apply",
        store.begin_operation(
            &a,
            Operation::Apply,
            &[AppState::Uploaded],
            AppState::Applying,
        ),
    );
    run.step("progress", store.set_progress(apply, Some("chart web")));
    run.step("request", store.set_request(apply, r#"{"adopt":true}"#));
    run.step("app while applying", store.app(&a));
    run.step("running", store.running_operation(&a));
    run.step(
        "advance",
        store.advance_operation(apply, AppState::Recovering, Some("rolling back")),
    );
    run.step(
        "advance to settled",
        store.advance_operation(apply, AppState::Applied, None),
    );
    run.step(
        "not final",
        store.finish_operation(apply, &Finish::succeeded(AppState::Applying)),
    );
    run.step(
        "finish failed",
        store.finish_operation(apply, &Finish::failed(AppState::ApplyFailed, "boom")),
    );
    run.step("progress after finish", store.set_progress(apply, None));
    run.step("request after finish", store.set_request(apply, "{}"));
    run.step(
        "finish twice",
        store.finish_operation(apply, &Finish::succeeded(AppState::Applied)),
    );
    run.step("operation", store.operation(apply));
    run.step(
        "unknown operation",
        store.operation(OperationId(i64::MAX - 7)),
    );
    run.id(
        "illegal",
        store.begin_operation(
            &a,
            Operation::Apply,
            &[AppState::Uploaded],
            AppState::Applying,
        ),
    );
    let again = run.id(
        "apply again",
        store.begin_operation(
            &a,
            Operation::Apply,
            &[AppState::ApplyFailed],
            AppState::Applying,
        ),
    );
    run.id(
        "busy",
        store.begin_operation(
            &a,
            Operation::Remove,
            &[AppState::Applied],
            AppState::Removing,
        ),
    );
    run.step(
        "applied",
        store.finish_operation(again, &Finish::succeeded(AppState::Applied)),
    );

    // versions
    run.step("add 2.0", store.add_version(&version(&a, "2.0")));
    run.step("add 2.0 again", store.add_version(&version(&a, "2.0")));
    run.step("add to ghost", store.add_version(&version(&ghost, "1.0")));
    run.step("version 2.0", store.version(&a, "2.0"));
    run.step("version 9", store.version(&a, "9"));
    run.step("versions", store.list_versions(&a));
    run.step("versions of ghost", store.list_versions(&ghost));

    // overrides
    run.step(
        "user",
        store.set_override(&a, "web", &user, &json!({"x": 1})),
    );
    run.step(
        "user again",
        store.set_override(&a, "web", &user, &json!({"x": 2})),
    );
    run.step(
        "static 1.0",
        store.set_override(&a, "web", &st("1.0"), &json!({"s": 1})),
    );
    run.step(
        "static 9",
        store.set_override(&a, "web", &st("9"), &json!({})),
    );
    run.step(
        "system 2.0",
        store.set_override(&a, "db", &sys("2.0"), &json!({"y": [1]})),
    );
    run.step(
        "system 1.0",
        store.set_override(&a, "db", &sys("1.0"), &json!({"old": true})),
    );
    run.step(
        "replace system 2.0",
        store.replace_layer(
            &a,
            &sys("2.0"),
            &[
                ("web".into(), json!({"r": 1})),
                ("api".into(), json!({"r": 2})),
            ],
        ),
    );
    run.step(
        "replace with a chart twice",
        store.replace_layer(
            &a,
            &user,
            &[("web".into(), json!({})), ("web".into(), json!({}))],
        ),
    );
    run.step(
        "replace unknown version",
        store.replace_layer(&a, &st("9"), &[]),
    );
    run.step("layer", store.override_layer(&a, "web", &user));
    run.step("absent layer", store.override_layer(&a, "nothing", &user));
    run.step("overrides", store.list_overrides(&a));
    run.step(
        "delete user of api",
        store.delete_override(&a, "api", &user),
    );
    run.step(
        "delete system api",
        store.delete_override(&a, "api", &sys("2.0")),
    );
    run.step("overrides of ghost", store.list_overrides(&ghost));

    // user snapshots
    run.step("snapshot 1.0", store.save_user_snapshot(&a, "1.0"));
    run.step(
        "user db",
        store.set_override(&a, "db", &user, &json!({"u": "db"})),
    );
    run.step("snapshot 2.0", store.save_user_snapshot(&a, "2.0"));
    run.step("snapshot 9", store.save_user_snapshot(&a, "9"));
    run.step("snapshots", store.user_snapshots(&a));

    // an update promoted, then the old version deleted with its layers
    run.step("target 9", store.set_target_version(&a, Some("9")));
    run.step("target 2.0", store.set_target_version(&a, Some("2.0")));
    run.step("delete the target", store.delete_version(&a, "2.0"));
    run.step("delete the active", store.delete_version(&a, "1.0"));
    let update = run.id(
        "update",
        store.begin_operation(
            &a,
            Operation::Update,
            &[AppState::Applied],
            AppState::Updating,
        ),
    );
    run.step(
        "promote",
        store.finish_operation(
            update,
            &Finish::succeeded(AppState::Applied).with_target(TargetChange::Promote),
        ),
    );
    run.step("delete 1.0", store.delete_version(&a, "1.0"));
    run.step("delete 1.0 again", store.delete_version(&a, "1.0"));
    run.step("overrides after", store.list_overrides(&a));
    run.step("snapshots after", store.user_snapshots(&a));
    let nothing = run.id(
        "apply for no target",
        store.begin_operation(
            &a,
            Operation::Apply,
            &[AppState::Applied],
            AppState::Applying,
        ),
    );
    run.step(
        "promote without target",
        store.finish_operation(
            nothing,
            &Finish::succeeded(AppState::Applied).with_target(TargetChange::Promote),
        ),
    );
    run.step(
        "aborted",
        store.finish_operation(
            nothing,
            &Finish::failed(AppState::ApplyFailed, "stopped")
                .with_outcome(super::Outcome::Aborted)
                .with_target(TargetChange::Discard),
        ),
    );
    run.step("active 9", store.set_active_version(&a, "9"));
    run.step("active 2.0", store.set_active_version(&a, "2.0"));
    run.step("clear target", store.set_target_version(&a, None));

    // decisions
    let decision = |component: &str, kind| DecisionRecord {
        app: a.clone(),
        component: component.into(),
        kind,
        decided_by: "default-rule".into(),
        traits_digest: "d1".into(),
        decided_at: 5,
    };
    run.step(
        "decide db",
        store.record_decision(&decision("db", WorkloadKind::StatefulSet)),
    );
    run.step(
        "decide api",
        store.record_decision(&decision("api", WorkloadKind::Deployment)),
    );
    run.step(
        "decide db again",
        store.record_decision(&decision("db", WorkloadKind::Deployment)),
    );
    run.step("decision", store.decision(&a, "db"));
    run.step("no decision", store.decision(&a, "zz"));
    run.step("decisions", store.list_decisions(&a));
    run.step("forget api", store.delete_decision(&a, "api"));
    run.step("forget api again", store.delete_decision(&a, "api"));
    run.step("decisions of ghost", store.list_decisions(&ghost));

    // releases
    let release = |chart: &str, revision| ReleaseRecord {
        app: a.clone(),
        chart: chart.into(),
        namespace: "apps".into(),
        release_name: format!("{a}-{chart}"),
        method: "server-side-apply".into(),
        revision,
        objects: vec![ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("apps".into()),
            name: format!("{chart}-config"),
        }],
        updated_at: 1,
    };
    run.step("release web", store.record_release(&release("web", 1)));
    run.step("release db", store.record_release(&release("db", 1)));
    run.step("release web 2", store.record_release(&release("web", 2)));
    run.step("release", store.release(&a, "web"));
    run.step("no release", store.release(&a, "zz"));
    run.step("releases", store.list_releases(&a));
    run.step("forget db", store.delete_release(&a, "db"));
    run.step("forget db again", store.delete_release(&a, "db"));

    // an operator's pause of automatic operations (issue 45)
    let pause = super::AutomaticPause {
        by: "uid=0".into(),
        at: 5,
        reason: Some("maintenance".into()),
    };
    run.step(
        "pause a",
        store.set_automatic_pause(&a, Some(&pause), "paused by uid=0"),
    );
    run.step("a paused", store.app(&a).map(|r| r.automatic_pause));
    run.step(
        "resume a",
        store.set_automatic_pause(&a, None, "resumed by uid=0"),
    );
    run.step("a resumed", store.app(&a).map(|r| r.automatic_pause));
    run.step(
        "pause ghost",
        store.set_automatic_pause(&ghost, Some(&pause), "paused"),
    );

    // history, and reconciliation of an interrupted app
    run.step("history", store.history(&a));
    run.step("nothing running", store.running_operation(&a));
    let up_b = run.id("upload b", store.begin_upload(&version(&b, "1.0")));
    run.step(
        "b uploaded",
        store.finish_operation(up_b, &Finish::succeeded(AppState::Uploaded)),
    );
    run.id(
        "b applying",
        store.begin_operation(
            &b,
            Operation::Apply,
            &[AppState::Uploaded],
            AppState::Applying,
        ),
    );
    run.step(
        "progress b",
        store.running_operation(&b).map(|r| r.is_some()),
    );
    let moved: Result<Vec<_>, Error> = store.reconcile_after_restart().map(|all| {
        all.into_iter()
            .filter(|m| m.app.as_str().starts_with(prefix))
            .collect()
    });
    run.step("reconcile", moved);
    run.step("b after", store.app(&b));
    run.step("b history", store.history(&b));
    run.step("list", store.list_apps().map(|all| mine(all, prefix)));

    // volumes
    let volume = VolumeRecord {
        name: format!("{prefix}data"),
        node: "node-1".into(),
        host_path: "/var/lib/data".into(),
        size: "10Gi".into(),
        storage_class: "local".into(),
        created_at: 9,
        namespace: "apps".into(),
    };
    run.step("create volume", store.create_volume(&volume));
    run.step("create volume again", store.create_volume(&volume));
    run.step("volume", store.volume(&volume.name));
    run.step("no volume", store.volume(&format!("{prefix}none")));
    run.step(
        "volumes",
        store.list_volumes().map(|all| {
            all.into_iter()
                .filter(|v| v.name.starts_with(prefix))
                .collect::<Vec<_>>()
        }),
    );
    run.step("delete volume", store.delete_volume(&volume.name));
    run.step("delete volume again", store.delete_volume(&volume.name));

    // delete
    run.step(
        "delete refused",
        store.delete_app(&a, &[AppState::Uploaded]),
    );
    run.step(
        "delete a",
        store.delete_app(&a, &[AppState::ApplyFailed, AppState::Applied]),
    );
    run.step("a gone", store.app(&a));
    run.step("history gone", store.history(&a));
    run.step(
        "delete ghost",
        store.delete_app(&ghost, &[AppState::Applied]),
    );
    run.step("list after", store.list_apps().map(|all| mine(all, prefix)));
    // The daemon key: made once, the same at every later call.
    let first = store.daemon_key();
    let again = store.daemon_key();
    run.step(
        "daemon key kept",
        first.and_then(|f| again.map(|a| f == a && f.0 != [0; 32])),
    );
    run.lines
}

fn mine(apps: Vec<super::AppRecord>, prefix: &str) -> Vec<super::AppRecord> {
    apps.into_iter()
        .filter(|app| app.name.as_str().starts_with(prefix))
        .collect()
}

struct Run<'a> {
    store: &'a dyn Store,
    ids: HashMap<i64, usize>,
    lines: Vec<String>,
}

impl Run<'_> {
    /// Records a step answering an operation id; returns the id (an
    /// unused one when refused, so later steps see the refusal too).
    fn id(&mut self, what: &str, result: Result<OperationId, Error>) -> OperationId {
        let id = result.as_ref().ok().copied();
        self.step(what, result);
        id.unwrap_or(OperationId(i64::MAX - 3))
    }

    fn step<T: Serialize>(&mut self, what: &str, result: Result<T, Error>) {
        let _ = self.store;
        let answer = match result {
            Ok(value) => {
                let mut value = serde_json::to_value(value).unwrap_or(Value::Null);
                self.normalize(&mut value, None);
                json!({ "ok": value })
            }
            Err(e) => json!({ "err": kind(&e) }),
        };
        self.lines.push(format!("{what}: {answer}"));
    }

    fn normalize(&mut self, value: &mut Value, key: Option<&str>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    self.normalize(v, Some(k));
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.normalize(v, key)),
            Value::Number(n) => {
                if key.is_some_and(|k| k.ends_with("_at")) {
                    *value = json!(0);
                } else if (key.is_none() || key == Some("id"))
                    && let Some(id) = n.as_i64()
                {
                    let next = self.ids.len();
                    *value = json!(*self.ids.entry(id).or_insert(next));
                }
            }
            _ => {}
        }
    }
}

/// The refusal's variant: the wording of a backend's own errors differs,
/// the variant does not.
fn kind(error: &Error) -> &'static str {
    match error {
        Error::UnknownApp { .. } => "unknown-app",
        Error::AppExists { .. } => "app-exists",
        Error::UnknownVersion { .. } => "unknown-version",
        Error::VersionExists { .. } => "version-exists",
        Error::VersionInUse { .. } => "version-in-use",
        Error::IllegalTransition { .. } => "illegal-transition",
        Error::Busy { .. } => "busy",
        Error::NotTransitional { .. } => "not-transitional",
        Error::NotFinal { .. } => "not-final",
        Error::UnknownOperation { .. } => "unknown-operation",
        Error::OperationFinished { .. } => "operation-finished",
        Error::VolumeExists { .. } => "volume-exists",
        Error::NoTargetVersion { .. } => "no-target-version",
        Error::NonUtf8Path { .. } => "non-utf8-path",
        Error::Database { .. } | Error::Invalid { .. } => "refused-by-the-backend",
        _ => "other",
    }
}
