//! Tests of [`SqliteStore`] against a real database in a temporary
//! directory.

use std::sync::{Arc, Barrier};
use std::thread;

use serde_json::json;

use super::*;
use crate::model::WorkloadKind;

fn new_store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("state")).unwrap();
    (dir, store)
}

fn reopen(dir: &tempfile::TempDir) -> SqliteStore {
    SqliteStore::open(&dir.path().join("state")).unwrap()
}

fn name(text: &str) -> AppName {
    AppName::new(text).unwrap()
}

fn bundle(app: &str, version: &str) -> VersionRecord {
    VersionRecord {
        app: name(app),
        version: version.to_owned(),
        bundle_dir: format!("/var/lib/capstan/bundles/{app}/{version}").into(),
        bundle_digest: format!("digest-of-{app}-{version}"),
        signer: "release-key".to_owned(),
        metadata: json!({"name": app, "version": version}),
        uploaded_at: 0,
        source: None,
    }
}

/// Uploads `app` at version 1.0 and finishes the upload.
fn uploaded(store: &SqliteStore, app: &str) -> AppName {
    let id = store.begin_upload(&bundle(app, "1.0")).unwrap();
    store
        .finish_operation(id, &Finish::succeeded(AppState::Uploaded))
        .unwrap();
    name(app)
}

/// Puts the app in `state` behind the store's back (as a crash or an older
/// daemon could leave it).
fn force_state(store: &SqliteStore, app: &AppName, state: AppState) {
    store
        .connection()
        .execute(
            "UPDATE apps SET state = ?2 WHERE name = ?1",
            rusqlite::params![app.as_str(), state.as_str()],
        )
        .unwrap();
}

fn begin_apply(store: &dyn Store, app: &AppName) -> Result<OperationId, Error> {
    store.begin_operation(app, Operation::Apply, &APPLY_FROM, AppState::Applying)
}

/// The end of a successful update.
fn promote() -> Finish {
    Finish::succeeded(AppState::Applied).with_target(TargetChange::Promote)
}

fn count(store: &SqliteStore, sql: &str) -> i64 {
    store
        .connection()
        .query_row(sql, [], |row| row.get(0))
        .unwrap()
}

fn pragma(path: &std::path::Path, name: &str) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(&format!("PRAGMA {name}"), [], |row| row.get(0))
        .unwrap()
}

// ---- opening and migrating ----

#[test]
fn opening_creates_the_directory_and_the_current_schema() {
    let (dir, store) = new_store();
    let path = dir.path().join("state").join(DATABASE_FILE);
    assert_eq!(store.path(), path);
    assert_eq!(pragma(&path, "user_version"), schema_version());
    assert_eq!(pragma(&path, "application_id"), i64::from(APPLICATION_ID));
    let mode: String = store
        .connection()
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    assert_eq!(count(&store, "PRAGMA foreign_keys"), 1);
    assert_eq!(count(&store, "PRAGMA synchronous"), 2, "FULL is 2");
}

#[test]
fn reopening_keeps_data_and_schema() {
    let (dir, store) = new_store();
    let app = uploaded(&store, "vault");
    store
        .set_override(&app, "vault", &OverrideLayer::User, &json!({"replicas": 3}))
        .unwrap();
    drop(store);
    let store = reopen(&dir);
    assert_eq!(store.app(&app).unwrap().state, AppState::Uploaded);
    let user = store
        .override_layer(&app, "vault", &OverrideLayer::User)
        .unwrap()
        .unwrap();
    assert_eq!(user.values, json!({"replicas": 3}));
    drop(store);
    let store = reopen(&dir);
    assert_eq!(store.list_apps().unwrap().len(), 1);
    assert_eq!(pragma(store.path(), "user_version"), schema_version());
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let (dir, store) = new_store();
    let path = store.path().to_owned();
    store
        .connection()
        .pragma_update(None, "user_version", schema_version() + 1)
        .unwrap();
    drop(store);
    let error = SqliteStore::open(&dir.path().join("state")).unwrap_err();
    match &error {
        Error::SchemaTooNew {
            found,
            known,
            path: at,
        } => {
            assert_eq!(*found, schema_version() + 1);
            assert_eq!(*known, schema_version());
            assert_eq!(at, &path);
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
    assert!(error.to_string().contains("newer"), "{error}");
    assert_eq!(pragma(&path, "user_version"), schema_version() + 1);
}

#[test]
fn another_programs_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE notes (text TEXT)")
        .unwrap();
    drop(conn);
    let error = SqliteStore::open_file(&path).unwrap_err();
    assert!(
        matches!(error, Error::ForeignDatabase { found: 0, .. }),
        "{error:?}"
    );

    let marked = dir.path().join("marked.db");
    let conn = rusqlite::Connection::open(&marked).unwrap();
    conn.pragma_update(None, "application_id", 42).unwrap();
    drop(conn);
    let error = SqliteStore::open_file(&marked).unwrap_err();
    assert!(
        matches!(error, Error::ForeignDatabase { found: 42, .. }),
        "{error:?}"
    );
}

#[test]
fn a_failing_migration_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DATABASE_FILE);
    let conn = rusqlite::Connection::open(&path).unwrap();
    // Ours by id but at version 0, with a table the first step creates.
    conn.pragma_update(None, "application_id", APPLICATION_ID)
        .unwrap();
    conn.execute_batch("CREATE TABLE volumes (name TEXT)")
        .unwrap();
    drop(conn);
    let error = SqliteStore::open_file(&path).unwrap_err();
    assert!(
        matches!(error, Error::Migrate { from: 0, to: 1, .. }),
        "{error:?}"
    );
    assert_eq!(pragma(&path, "user_version"), 0);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let apps: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'apps'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(
        apps, 0,
        "the tables created before the failure were rolled back"
    );
}

#[test]
fn a_state_directory_that_cannot_be_created_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let error = SqliteStore::open(&file.join("state")).unwrap_err();
    assert!(matches!(error, Error::CreateDir { .. }), "{error:?}");
    assert!(error.to_string().contains("a-file"), "{error}");
}

// ---- upload ----

#[test]
fn upload_stores_the_app_its_version_and_history() {
    let (_dir, store) = new_store();
    let id = store.begin_upload(&bundle("vault", "1.0")).unwrap();
    let app = store.app(&name("vault")).unwrap();
    assert_eq!(app.state, AppState::Uploading);
    assert_eq!(app.active_version, "1.0");
    assert_eq!(app.target_version, None);
    let running = store.operation(id).unwrap();
    assert_eq!(running.operation, Operation::Upload);
    assert_eq!(running.from_state, None);
    assert_eq!(running.outcome, Outcome::Running);

    let app = store
        .finish_operation(id, &Finish::succeeded(AppState::Uploaded))
        .unwrap();
    assert_eq!(app.state, AppState::Uploaded);
    let version = store.version(&app.name, "1.0").unwrap();
    assert_eq!(version.bundle_digest, "digest-of-vault-1.0");
    assert_eq!(version.metadata, json!({"name": "vault", "version": "1.0"}));
    let history = store.history(&app.name).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].to_state, Some(AppState::Uploaded));
    assert_eq!(history[0].outcome, Outcome::Succeeded);
    assert!(history[0].finished_at.is_some());
}

#[test]
fn uploading_an_existing_name_fails_and_changes_nothing() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    let error = store.begin_upload(&bundle("vault", "2.0")).unwrap_err();
    assert!(
        matches!(&error, Error::AppExists { app: a } if *a == app),
        "{error:?}"
    );
    assert_eq!(error.to_string(), "app \"vault\" already exists");
    assert_eq!(store.list_versions(&app).unwrap().len(), 1);
    assert_eq!(store.history(&app).unwrap().len(), 1);
}

#[test]
fn a_non_utf8_bundle_path_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let (_dir, store) = new_store();
    let mut version = bundle("vault", "1.0");
    version.bundle_dir = std::ffi::OsStr::from_bytes(b"/tmp/\xff").into();
    let error = store.begin_upload(&version).unwrap_err();
    assert!(matches!(error, Error::NonUtf8Path { .. }), "{error:?}");
    assert!(matches!(
        store.app(&name("vault")),
        Err(Error::UnknownApp { .. })
    ));
}

// ---- transitions ----

const APPLY_FROM: [AppState; 3] = [AppState::Uploaded, AppState::ApplyFailed, AppState::Applied];

#[test]
fn begin_operation_follows_the_allowed_states_for_every_state() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    for state in AppState::ALL {
        force_state(&store, &app, state);
        let before = store.history(&app).unwrap().len();
        let result = begin_apply(&store, &app);
        let after = store.app(&app).unwrap();
        match result {
            Ok(id) => {
                assert!(APPLY_FROM.contains(&state), "{state} was allowed");
                assert_eq!(after.state, AppState::Applying);
                let entry = store.operation(id).unwrap();
                assert_eq!(entry.from_state, Some(state));
                assert_eq!(entry.via_state, AppState::Applying);
                assert_eq!(store.history(&app).unwrap().len(), before + 1);
                store
                    .finish_operation(id, &Finish::succeeded(AppState::Applied))
                    .unwrap();
            }
            Err(Error::Busy {
                state: s,
                operation,
                ..
            }) => {
                assert!(state.is_transitional(), "{state} reported busy");
                assert_eq!((s, operation), (state, Operation::Apply));
                assert_eq!(after.state, state);
                assert_eq!(store.history(&app).unwrap().len(), before);
            }
            Err(Error::IllegalTransition {
                state: s,
                operation,
                ..
            }) => {
                assert!(!APPLY_FROM.contains(&state) && !state.is_transitional());
                assert_eq!((s, operation), (state, Operation::Apply));
                assert_eq!(after.state, state);
                assert_eq!(store.history(&app).unwrap().len(), before);
            }
            Err(other) => panic!("unexpected error in {state}: {other:?}"),
        }
    }
}

#[test]
fn illegal_transition_and_busy_messages_name_the_app() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    let error = store
        .begin_operation(
            &app,
            Operation::Remove,
            &[AppState::Applied],
            AppState::Removing,
        )
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot remove app \"vault\" while it is uploaded"
    );
    begin_apply(&store, &app).unwrap();
    let error = begin_apply(&store, &app).unwrap_err();
    assert!(matches!(error, Error::Busy { .. }), "{error:?}");
    assert!(
        error.to_string().contains("\"vault\" is busy (applying)"),
        "{error}"
    );
}

#[test]
fn operations_must_go_through_a_transitional_state() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    let error = store
        .begin_operation(&app, Operation::Apply, &APPLY_FROM, AppState::Applied)
        .unwrap_err();
    assert!(matches!(error, Error::NotTransitional { .. }), "{error:?}");
    assert_eq!(store.app(&app).unwrap().state, AppState::Uploaded);
}

#[test]
fn unknown_apps_are_reported_by_name() {
    let (_dir, store) = new_store();
    let ghost = name("ghost");
    let error = begin_apply(&store, &ghost).unwrap_err();
    assert_eq!(error.to_string(), "unknown app \"ghost\"");
    assert!(matches!(store.app(&ghost), Err(Error::UnknownApp { .. })));
    assert!(matches!(
        store.history(&ghost),
        Err(Error::UnknownApp { .. })
    ));
    assert!(matches!(
        store.set_override(&ghost, "c", &OverrideLayer::User, &json!({})),
        Err(Error::UnknownApp { .. })
    ));
}

#[test]
fn finishing_checks_the_operation_and_the_final_state() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    let id = begin_apply(&store, &app).unwrap();
    let error = store
        .finish_operation(id, &Finish::succeeded(AppState::Removing))
        .unwrap_err();
    assert!(matches!(error, Error::NotFinal { .. }), "{error:?}");
    let error = store
        .finish_operation(
            id,
            &Finish::succeeded(AppState::Applied).with_outcome(Outcome::Running),
        )
        .unwrap_err();
    assert!(matches!(error, Error::NotFinal { .. }), "{error:?}");
    assert_eq!(store.app(&app).unwrap().state, AppState::Applying);

    let failed = store
        .finish_operation(
            id,
            &Finish::failed(AppState::ApplyFailed, "chart \"db\" failed"),
        )
        .unwrap();
    assert_eq!(failed.state, AppState::ApplyFailed);
    assert_eq!(failed.message.as_deref(), Some("chart \"db\" failed"));
    let entry = store.operation(id).unwrap();
    assert_eq!(entry.outcome, Outcome::Failed);
    assert_eq!(entry.message.as_deref(), Some("chart \"db\" failed"));

    let again = store.finish_operation(id, &Finish::succeeded(AppState::Applied));
    assert!(
        matches!(again, Err(Error::OperationFinished { .. })),
        "{again:?}"
    );
    let unknown = store.finish_operation(OperationId(999), &Finish::succeeded(AppState::Applied));
    assert!(
        matches!(unknown, Err(Error::UnknownOperation { .. })),
        "{unknown:?}"
    );
    assert_eq!(store.app(&app).unwrap().state, AppState::ApplyFailed);
}

#[test]
fn the_running_operation_is_found_until_it_finishes() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    assert_eq!(store.running_operation(&app).unwrap(), None);
    let id = begin_apply(&store, &app).unwrap();
    let running = store.running_operation(&app).unwrap().unwrap();
    assert_eq!((running.id, running.operation), (id, Operation::Apply));
    let aborted = Finish::failed(AppState::ApplyFailed, "aborted by the operator")
        .with_outcome(Outcome::Aborted);
    store.finish_operation(id, &aborted).unwrap();
    assert_eq!(store.running_operation(&app).unwrap(), None);
    assert_eq!(store.operation(id).unwrap().outcome, Outcome::Aborted);
}

#[test]
fn an_in_memory_store_follows_the_same_rules() {
    let store = SqliteStore::open_in_memory().unwrap();
    let app = uploaded(&store, "vault");
    assert!(matches!(
        store.begin_upload(&bundle("vault", "1.0")),
        Err(Error::AppExists { .. })
    ));
    let id = begin_apply(&store, &app).unwrap();
    assert!(matches!(begin_apply(&store, &app), Err(Error::Busy { .. })));
    store
        .finish_operation(id, &Finish::succeeded(AppState::Applied))
        .unwrap();
    assert_eq!(store.path(), std::path::Path::new(":memory:"));
}

#[test]
fn progress_is_shown_while_running_and_cleared_at_the_end() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    let id = begin_apply(&store, &app).unwrap();
    store.set_progress(id, Some("chart group 2 of 3")).unwrap();
    assert_eq!(
        store.app(&app).unwrap().progress.as_deref(),
        Some("chart group 2 of 3")
    );
    let done = store
        .finish_operation(id, &Finish::succeeded(AppState::Applied))
        .unwrap();
    assert_eq!(done.progress, None);
    assert!(matches!(
        store.set_progress(id, Some("late")),
        Err(Error::OperationFinished { .. })
    ));
}

/// Uploads v1, applies it, stores v2 and starts an update to it.
fn updating(store: &SqliteStore) -> (AppName, OperationId) {
    let app = uploaded(store, "vault");
    let id = begin_apply(store, &app).unwrap();
    store
        .finish_operation(id, &Finish::succeeded(AppState::Applied))
        .unwrap();
    store.add_version(&bundle("vault", "2.0")).unwrap();
    let id = store
        .begin_operation(
            &app,
            Operation::Update,
            &[AppState::Applied],
            AppState::Updating,
        )
        .unwrap();
    store.set_target_version(&app, Some("2.0")).unwrap();
    (app, id)
}

#[test]
fn a_successful_update_promotes_the_target() {
    let (_dir, store) = new_store();
    let (app, id) = updating(&store);
    let done = store.finish_operation(id, &promote()).unwrap();
    assert_eq!(done.active_version, "2.0");
    assert_eq!(done.target_version, None);
    assert_eq!(store.app(&app).unwrap(), done);
}

#[test]
fn a_failed_update_rolls_back_through_recovering() {
    let (_dir, store) = new_store();
    let (app, id) = updating(&store);
    store
        .advance_operation(id, AppState::Recovering, Some("apply of 2.0 failed"))
        .unwrap();
    let during = store.app(&app).unwrap();
    assert_eq!(during.state, AppState::Recovering);
    assert_eq!(during.message.as_deref(), Some("apply of 2.0 failed"));
    assert!(matches!(
        store.advance_operation(id, AppState::Applied, None),
        Err(Error::NotTransitional { .. })
    ));
    let done = store
        .finish_operation(
            id,
            &Finish::failed(
                AppState::Applied,
                "update to 2.0 failed; rolled back to 1.0",
            )
            .with_target(TargetChange::Discard),
        )
        .unwrap();
    assert_eq!(done.state, AppState::Applied);
    assert_eq!(done.active_version, "1.0");
    assert_eq!(done.target_version, None);
    let entry = store.operation(id).unwrap();
    assert_eq!(entry.operation, Operation::Update);
    assert_eq!(entry.via_state, AppState::Updating);
    assert_eq!(entry.to_state, Some(AppState::Applied));
    assert_eq!(entry.outcome, Outcome::Failed);
}

#[test]
fn promoting_without_a_target_fails_and_leaves_the_operation_running() {
    let (_dir, store) = new_store();
    let (app, id) = updating(&store);
    store.set_target_version(&app, None).unwrap();
    let error = store.finish_operation(id, &promote()).unwrap_err();
    assert!(matches!(error, Error::NoTargetVersion { .. }), "{error:?}");
    assert_eq!(store.app(&app).unwrap().state, AppState::Updating);
    assert_eq!(store.operation(id).unwrap().outcome, Outcome::Running);
}

// ---- reconciliation ----

#[test]
fn reconcile_after_a_crash_moves_apps_to_failed_states_and_keeps_overrides() {
    let (dir, store) = new_store();
    let applying = uploaded(&store, "applying-app");
    store
        .set_override(
            &applying,
            "db",
            &OverrideLayer::User,
            &json!({"size": "10Gi"}),
        )
        .unwrap();
    let apply = begin_apply(&store, &applying).unwrap();
    store.set_progress(apply, Some("chart db")).unwrap();
    let removing = uploaded(&store, "removing-app");
    force_state(&store, &removing, AppState::Applied);
    store
        .begin_operation(
            &removing,
            Operation::Remove,
            &[AppState::Applied],
            AppState::Removing,
        )
        .unwrap();
    let upload = bundle("half-uploaded", "1.0");
    store.begin_upload(&upload).unwrap();
    let settled = uploaded(&store, "settled");
    // The daemon dies: nothing is finished.
    drop(store);

    let store = reopen(&dir);
    let moved = store.reconcile_after_restart().unwrap();
    let expect = |app: &str, from, to| Reconciled {
        app: name(app),
        from,
        to,
    };
    assert_eq!(
        moved,
        [
            expect("applying-app", AppState::Applying, AppState::ApplyFailed),
            expect("half-uploaded", AppState::Uploading, AppState::UploadFailed),
            expect("removing-app", AppState::Removing, AppState::RemoveFailed),
        ]
    );
    let app = store.app(&applying).unwrap();
    assert_eq!(app.state, AppState::ApplyFailed);
    assert_eq!(app.progress, None);
    let reason = app.message.unwrap();
    assert!(reason.contains("restarted during apply"), "{reason}");
    let entry = store.operation(apply).unwrap();
    assert_eq!(entry.outcome, Outcome::Interrupted);
    assert_eq!(entry.to_state, Some(AppState::ApplyFailed));
    assert_eq!(entry.message.as_deref(), Some(reason.as_str()));
    let user = store
        .override_layer(&applying, "db", &OverrideLayer::User)
        .unwrap()
        .unwrap();
    assert_eq!(user.values, json!({"size": "10Gi"}));
    assert_eq!(store.app(&settled).unwrap().state, AppState::Uploaded);
    assert_eq!(store.history(&settled).unwrap().len(), 1);

    // Apply works again and a second reconciliation has nothing to do.
    let again = begin_apply(&store, &applying).unwrap();
    store
        .finish_operation(again, &Finish::succeeded(AppState::Applied))
        .unwrap();
    assert_eq!(store.reconcile_after_restart().unwrap(), []);
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM history WHERE outcome = 'running'"
        ),
        0
    );
}

#[test]
fn reconcile_keeps_the_target_of_an_interrupted_update() {
    let (dir, store) = new_store();
    let (app, id) = updating(&store);
    store
        .advance_operation(id, AppState::Recovering, Some("rolling back"))
        .unwrap();
    drop(store);
    let store = reopen(&dir);
    let moved = store.reconcile_after_restart().unwrap();
    assert_eq!(moved[0].from, AppState::Recovering);
    let record = store.app(&app).unwrap();
    assert_eq!(record.state, AppState::ApplyFailed);
    assert_eq!(record.active_version, "1.0");
    assert_eq!(record.target_version.as_deref(), Some("2.0"));
    // The stale id of the interrupted operation cannot finish it.
    assert!(matches!(
        store.finish_operation(id, &Finish::succeeded(AppState::Applied)),
        Err(Error::OperationFinished { .. })
    ));
}

#[test]
fn reconcile_records_history_for_a_stuck_app_without_a_running_operation() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    force_state(&store, &app, AppState::Updating);
    let moved = store.reconcile_after_restart().unwrap();
    assert_eq!(moved.len(), 1);
    let history = store.history(&app).unwrap();
    let last = history.last().unwrap();
    assert_eq!(last.operation, Operation::Reconcile);
    assert_eq!(last.from_state, Some(AppState::Updating));
    assert_eq!(last.to_state, Some(AppState::ApplyFailed));
    assert_eq!(store.app(&app).unwrap().state, AppState::ApplyFailed);
}

// ---- atomicity ----

#[test]
fn a_failing_history_write_leaves_the_state_unchanged() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    store
        .connection()
        .execute_batch(
            "CREATE TRIGGER fail_history BEFORE INSERT ON history \
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .unwrap();
    let error = begin_apply(&store, &app).unwrap_err();
    assert!(matches!(error, Error::Database { .. }), "{error:?}");
    assert!(error.to_string().contains("\"vault\""), "{error}");
    assert_eq!(store.app(&app).unwrap().state, AppState::Uploaded);
    let upload = store.begin_upload(&bundle("other", "1.0"));
    assert!(upload.is_err());
    assert!(matches!(
        store.app(&name("other")),
        Err(Error::UnknownApp { .. })
    ));
    assert_eq!(
        count(&store, "SELECT count(*) FROM versions WHERE app = 'other'"),
        0
    );
}

#[test]
fn a_failing_history_close_leaves_the_operation_running() {
    let (_dir, store) = new_store();
    let (app, id) = updating(&store);
    store
        .connection()
        .execute_batch(
            "CREATE TRIGGER fail_close BEFORE UPDATE OF outcome ON history \
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .unwrap();
    let result = store.finish_operation(id, &promote());
    assert!(result.is_err());
    let record = store.app(&app).unwrap();
    assert_eq!(record.state, AppState::Updating);
    assert_eq!(record.active_version, "1.0");
    assert_eq!(record.target_version.as_deref(), Some("2.0"));
    assert!(store.reconcile_after_restart().is_err());
    assert_eq!(store.app(&app).unwrap().state, AppState::Updating);
}

#[test]
fn replacing_a_layer_with_a_repeated_chart_keeps_the_old_layer() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    let system = OverrideLayer::System {
        version: "1.0".into(),
    };
    store
        .replace_layer(&app, &system, &[("db".into(), json!({"a": 1}))])
        .unwrap();
    let repeated = [
        ("web".into(), json!({"b": 2})),
        ("web".into(), json!({"b": 3})),
    ];
    let error = store.replace_layer(&app, &system, &repeated).unwrap_err();
    assert!(matches!(error, Error::Database { .. }), "{error:?}");
    let layers = store.list_overrides(&app).unwrap();
    assert_eq!(layers.len(), 1);
    assert_eq!(layers[0].chart, "db");
    assert_eq!(layers[0].values, json!({"a": 1}));
}

// ---- overrides ----

#[test]
fn override_layers_are_kept_apart_and_user_values_survive_updates() {
    let (_dir, store) = new_store();
    let (app, id) = updating(&store);
    let v1_static = OverrideLayer::Static {
        version: "1.0".into(),
    };
    let v1_system = OverrideLayer::System {
        version: "1.0".into(),
    };
    let v2_system = OverrideLayer::System {
        version: "2.0".into(),
    };
    store
        .set_override(&app, "db", &v1_static, &json!({"s": 1}))
        .unwrap();
    store
        .set_override(&app, "db", &v1_system, &json!({"p": 1}))
        .unwrap();
    store
        .set_override(&app, "db", &v2_system, &json!({"p": 2}))
        .unwrap();
    store
        .set_override(&app, "db", &OverrideLayer::User, &json!({"u": 0}))
        .unwrap();
    store
        .set_override(&app, "db", &OverrideLayer::User, &json!({"u": 1}))
        .unwrap();
    let listed: Vec<_> = store
        .list_overrides(&app)
        .unwrap()
        .into_iter()
        .map(|record| (record.layer, record.values))
        .collect();
    assert_eq!(
        listed,
        [
            (v1_static.clone(), json!({"s": 1})),
            (v1_system.clone(), json!({"p": 1})),
            (v2_system.clone(), json!({"p": 2})),
            (OverrideLayer::User, json!({"u": 1})),
        ]
    );

    store.finish_operation(id, &promote()).unwrap();
    let removed = store.delete_version(&app, "1.0").unwrap();
    assert_eq!(removed.version, "1.0");
    let remaining: Vec<_> = store
        .list_overrides(&app)
        .unwrap()
        .into_iter()
        .map(|record| record.layer)
        .collect();
    assert_eq!(remaining, [v2_system, OverrideLayer::User]);

    assert!(
        store
            .delete_override(&app, "db", &OverrideLayer::User)
            .unwrap()
    );
    assert!(
        !store
            .delete_override(&app, "db", &OverrideLayer::User)
            .unwrap()
    );
    assert_eq!(
        store
            .override_layer(&app, "db", &OverrideLayer::User)
            .unwrap(),
        None
    );
}

#[test]
fn version_layers_need_a_stored_version() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    let layer = OverrideLayer::System {
        version: "9.9".into(),
    };
    let error = store
        .set_override(&app, "db", &layer, &json!({}))
        .unwrap_err();
    assert_eq!(error.to_string(), "app \"vault\" has no version \"9.9\"");
}

// ---- versions ----

#[test]
fn versions_in_use_cannot_be_deleted() {
    let (_dir, store) = new_store();
    let (app, _id) = updating(&store);
    for version in ["1.0", "2.0"] {
        let error = store.delete_version(&app, version).unwrap_err();
        assert!(matches!(error, Error::VersionInUse { .. }), "{error:?}");
    }
    assert!(matches!(
        store.add_version(&bundle("vault", "2.0")),
        Err(Error::VersionExists { .. })
    ));
    assert!(matches!(
        store.set_active_version(&app, "3.0"),
        Err(Error::UnknownVersion { .. })
    ));
    store.set_active_version(&app, "2.0").unwrap();
    assert_eq!(store.app(&app).unwrap().active_version, "2.0");
    let versions: Vec<_> = store
        .list_versions(&app)
        .unwrap()
        .into_iter()
        .map(|v| v.version)
        .collect();
    assert_eq!(versions, ["1.0", "2.0"]);
}

// ---- delete ----

#[test]
fn delete_removes_every_row_of_the_app_and_only_of_it() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    let other = uploaded(&store, "other");
    store.add_version(&bundle("vault", "2.0")).unwrap();
    store
        .set_override(&app, "db", &OverrideLayer::User, &json!({"a": 1}))
        .unwrap();
    store
        .set_override(&other, "db", &OverrideLayer::User, &json!({"a": 2}))
        .unwrap();
    store
        .set_override(
            &app,
            "db",
            &OverrideLayer::Static {
                version: "1.0".into(),
            },
            &json!({}),
        )
        .unwrap();
    store.record_decision(&decision("vault", "broker")).unwrap();

    force_state(&store, &app, AppState::Applied);
    let refused = store.delete_app(&app, &[AppState::Uploaded, AppState::UploadFailed]);
    match refused {
        Err(Error::IllegalTransition { operation, .. }) => {
            assert_eq!(operation, Operation::Delete)
        }
        other => panic!("expected an illegal transition, got {other:?}"),
    }
    force_state(&store, &app, AppState::Uploaded);
    let versions = store
        .delete_app(&app, &[AppState::Uploaded, AppState::UploadFailed])
        .unwrap();
    let dirs: Vec<_> = versions.iter().map(|v| v.bundle_dir.clone()).collect();
    assert_eq!(
        dirs,
        [
            std::path::PathBuf::from("/var/lib/capstan/bundles/vault/1.0"),
            "/var/lib/capstan/bundles/vault/2.0".into()
        ]
    );
    for table in ["versions", "overrides", "decisions", "history"] {
        let sql = format!("SELECT count(*) FROM {table} WHERE app = 'vault'");
        assert_eq!(count(&store, &sql), 0, "{table}");
    }
    assert!(matches!(store.app(&app), Err(Error::UnknownApp { .. })));
    assert_eq!(store.list_overrides(&other).unwrap().len(), 1);
    assert_eq!(store.history(&other).unwrap().len(), 1);
    // The name is free again.
    uploaded(&store, "vault");
}

// ---- decisions ----

fn decision(app: &str, component: &str) -> DecisionRecord {
    DecisionRecord {
        app: name(app),
        component: component.to_owned(),
        kind: WorkloadKind::StatefulSet,
        decided_by: "default-rule".to_owned(),
        traits_digest: "abc".to_owned(),
        decided_at: 0,
    }
}

#[test]
fn decisions_are_recorded_replaced_and_forgotten() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "kafka");
    assert_eq!(store.decision(&app, "broker").unwrap(), None);
    let stored = store.record_decision(&decision("kafka", "broker")).unwrap();
    assert!(stored.decided_at > 0, "stamped by the store");
    assert_eq!(store.decision(&app, "broker").unwrap(), Some(stored));
    let rekind = DecisionRecord {
        kind: WorkloadKind::Deployment,
        decided_by: "operator".to_owned(),
        ..decision("kafka", "broker")
    };
    store.record_decision(&rekind).unwrap();
    store
        .record_decision(&decision("kafka", "zookeeper"))
        .unwrap();
    let kinds: Vec<_> = store
        .list_decisions(&app)
        .unwrap()
        .into_iter()
        .map(|d| (d.component, d.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("broker".to_owned(), WorkloadKind::Deployment),
            ("zookeeper".to_owned(), WorkloadKind::StatefulSet)
        ]
    );
    assert!(store.delete_decision(&app, "broker").unwrap());
    assert!(!store.delete_decision(&app, "broker").unwrap());
    assert!(matches!(
        store.record_decision(&decision("ghost", "x")),
        Err(Error::UnknownApp { .. })
    ));
}

// ---- release inventories ----

fn release(app: &str, chart: &str, revision: u64, names: &[&str]) -> ReleaseRecord {
    ReleaseRecord {
        app: name(app),
        chart: chart.to_owned(),
        namespace: "shop".to_owned(),
        release_name: format!("{app}-{chart}"),
        method: "server-side-apply".to_owned(),
        revision,
        objects: names
            .iter()
            .map(|n| crate::model::ObjectRef {
                api_version: "v1".to_owned(),
                kind: "ConfigMap".to_owned(),
                namespace: (*n != "cluster-wide").then(|| "shop".to_owned()),
                name: (*n).to_owned(),
            })
            .collect(),
        updated_at: 0,
    }
}

#[test]
fn releases_are_recorded_replaced_listed_and_forgotten() {
    let (dir, store) = new_store();
    let app = uploaded(&store, "shop");
    assert_eq!(store.release(&app, "web").unwrap(), None);
    let first = store
        .record_release(&release("shop", "web", 1, &["a", "cluster-wide"]))
        .unwrap();
    assert!(first.updated_at > 0, "stamped by the store");
    assert_eq!(store.release(&app, "web").unwrap(), Some(first.clone()));
    store
        .record_release(&release("shop", "web", 2, &["b"]))
        .unwrap();
    store
        .record_release(&release("shop", "db", 1, &[]))
        .unwrap();
    drop(store);
    let store = reopen(&dir);
    let listed: Vec<_> = store
        .list_releases(&app)
        .unwrap()
        .into_iter()
        .map(|r| (r.chart, r.revision, r.objects.len()))
        .collect();
    assert_eq!(listed, [("db".to_owned(), 1, 0), ("web".to_owned(), 2, 1)]);
    assert_eq!(
        store.release(&app, "web").unwrap().unwrap().objects[0].name,
        "b"
    );
    assert!(store.delete_release(&app, "web").unwrap());
    assert!(!store.delete_release(&app, "web").unwrap());
    assert!(matches!(
        store.record_release(&release("ghost", "web", 1, &[])),
        Err(Error::UnknownApp { .. })
    ));
}

#[test]
fn release_objects_serialize_as_the_inventory_secret_spells_them() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "shop");
    store
        .record_release(&release("shop", "web", 3, &["a", "cluster-wide"]))
        .unwrap();
    let text: String = store
        .connection()
        .query_row("SELECT objects FROM releases", [], |row| row.get(0))
        .unwrap();
    let objects: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        objects,
        json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "a"},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cluster-wide"}
        ])
    );
    store
        .connection()
        .execute("UPDATE releases SET objects = '[{\"kind\": 3}]'", [])
        .unwrap();
    let error = store.release(&app, "web").unwrap_err().to_string();
    assert!(error.contains("reading release shop/web"), "{error}");
}

#[test]
fn a_version_2_store_gains_the_releases_table_and_keeps_its_apps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    std::fs::create_dir_all(&path).unwrap();
    let db = path.join(DATABASE_FILE);
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(schema::MIGRATIONS[0]).unwrap();
        conn.execute_batch(schema::MIGRATIONS[1]).unwrap();
        conn.pragma_update(None, "user_version", 2).unwrap();
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        conn.execute(
            "INSERT INTO apps VALUES ('shop', 'applied', '1.0.0', NULL, NULL, NULL, 1, 1)",
            [],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(pragma(&db, "user_version"), schema_version());
    let app = name("shop");
    assert_eq!(store.app(&app).unwrap().state, AppState::Applied);
    assert_eq!(store.list_releases(&app).unwrap(), []);
    store
        .record_release(&release("shop", "web", 1, &["a"]))
        .unwrap();
    assert_eq!(store.list_releases(&app).unwrap().len(), 1);
}

// ---- volumes ----

#[test]
fn volumes_are_created_listed_and_deleted() {
    let (_dir, store) = new_store();
    let volume = |name: &str, node: &str| VolumeRecord {
        name: name.to_owned(),
        node: node.to_owned(),
        host_path: format!("/data/{name}").into(),
        size: "10Gi".to_owned(),
        storage_class: "local".to_owned(),
        created_at: 0,
        namespace: "kafka".to_owned(),
    };
    let created = store.create_volume(&volume("zk-0", "worker-1")).unwrap();
    assert!(created.created_at > 0);
    store
        .create_volume(&volume("broker-0", "worker-2"))
        .unwrap();
    let error = store
        .create_volume(&volume("zk-0", "worker-3"))
        .unwrap_err();
    assert_eq!(error.to_string(), "volume \"zk-0\" already exists");
    let names: Vec<_> = store
        .list_volumes()
        .unwrap()
        .into_iter()
        .map(|v| (v.name, v.node))
        .collect();
    assert_eq!(
        names,
        [
            ("broker-0".to_owned(), "worker-2".to_owned()),
            ("zk-0".to_owned(), "worker-1".to_owned())
        ]
    );
    assert_eq!(store.volume("zk-0").unwrap(), Some(created.clone()));
    assert_eq!(store.delete_volume("zk-0").unwrap(), Some(created));
    assert_eq!(store.delete_volume("zk-0").unwrap(), None);
    assert_eq!(store.volume("zk-0").unwrap(), None);
}

// ---- damaged data ----

#[test]
fn an_unknown_stored_state_is_an_error_naming_the_app() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    store
        .connection()
        .execute("UPDATE apps SET state = 'exploded'", [])
        .unwrap();
    let error = store.app(&app).unwrap_err();
    assert_eq!(
        error.to_string(),
        "database error while reading app \"vault\""
    );
    let mut chain = String::new();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    assert!(chain.contains("exploded"), "{chain}");
}

// ---- concurrency ----

#[test]
fn threads_on_different_apps_do_not_interfere() {
    let (_dir, store) = new_store();
    let store: Arc<dyn Store> = Arc::new(store);
    let rounds = 20;
    let workers: Vec<_> = ["alpha", "beta"]
        .into_iter()
        .map(|app| {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                let id = store.begin_upload(&bundle(app, "1.0")).unwrap();
                store
                    .finish_operation(id, &Finish::succeeded(AppState::Uploaded))
                    .unwrap();
                let app = name(app);
                for round in 0..rounds {
                    let id = begin_apply(store.as_ref(), &app).unwrap();
                    store
                        .set_override(&app, "c", &OverrideLayer::User, &json!({"round": round}))
                        .unwrap();
                    store
                        .finish_operation(id, &Finish::succeeded(AppState::Applied))
                        .unwrap();
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    for app in ["alpha", "beta"] {
        let app = name(app);
        assert_eq!(store.app(&app).unwrap().state, AppState::Applied);
        assert_eq!(store.history(&app).unwrap().len(), rounds + 1);
        let user = store
            .override_layer(&app, "c", &OverrideLayer::User)
            .unwrap()
            .unwrap();
        assert_eq!(user.values, json!({"round": rounds - 1}));
    }
}

#[test]
fn of_two_racing_operations_on_one_app_exactly_one_starts() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    let store = Arc::new(store);
    let start = Arc::new(Barrier::new(2));
    let racers: Vec<_> = (0..2)
        .map(|_| {
            let (store, start, app) = (Arc::clone(&store), Arc::clone(&start), app.clone());
            thread::spawn(move || {
                start.wait();
                begin_apply(store.as_ref(), &app)
            })
        })
        .collect();
    let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    let started = results.iter().filter(|r| r.is_ok()).count();
    let busy = results
        .iter()
        .filter(|r| matches!(r, Err(Error::Busy { .. })))
        .count();
    assert_eq!((started, busy), (1, 1), "{results:?}");
}

#[test]
fn two_stores_on_one_file_see_each_others_commits() {
    let (dir, first) = new_store();
    let second = reopen(&dir);
    let app = uploaded(&first, "vault");
    assert_eq!(second.app(&app).unwrap().state, AppState::Uploaded);
    let error = second.begin_upload(&bundle("vault", "1.0")).unwrap_err();
    assert!(matches!(error, Error::AppExists { .. }));
}

#[test]
fn records_serialize_as_the_api_returns_them() {
    let (_dir, store) = new_store();
    let app = uploaded(&store, "vault");
    store
        .set_override(
            &app,
            "db",
            &OverrideLayer::System {
                version: "1.0".into(),
            },
            &json!({"x": 1}),
        )
        .unwrap();
    let record = store.app(&app).unwrap();
    let json = serde_json::to_value(&record).unwrap();
    assert_eq!(json["name"], "vault");
    assert_eq!(json["state"], "uploaded");
    let back: AppRecord = serde_json::from_value(json).unwrap();
    assert_eq!(back, record);
    let layer = &store.list_overrides(&app).unwrap()[0];
    let json = serde_json::to_value(layer).unwrap();
    assert_eq!(json["layer"], "system");
    assert_eq!(json["version"], "1.0");
    assert_eq!(json["values"], json!({"x": 1}));
    let back: OverrideRecord = serde_json::from_value(json).unwrap();
    assert_eq!(&back, layer);
}

// ---- a real crash ----

const CRASH_DIR_VAR: &str = "CAPSTAN_STORE_CRASH_TEST_DIR";

/// Run only as the child of `a_killed_writer_leaves_a_consistent_store`:
/// applies and sets overrides in a loop until it is killed.
#[test]
#[ignore = "the child half of a_killed_writer_leaves_a_consistent_store"]
fn crash_child_writer() {
    let Some(dir) = std::env::var_os(CRASH_DIR_VAR) else {
        return;
    };
    let store = SqliteStore::open(std::path::Path::new(&dir)).unwrap();
    let app = name("vault");
    for round in 0u64.. {
        let id = begin_apply(&store, &app).unwrap();
        store
            .set_override(&app, "db", &OverrideLayer::User, &json!({"round": round}))
            .unwrap();
        store.set_progress(id, Some("chart db")).unwrap();
        store
            .finish_operation(id, &Finish::succeeded(AppState::Applied))
            .unwrap();
        println!("round {round}");
    }
}

#[test]
fn a_killed_writer_leaves_a_consistent_store() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let (dir, store) = new_store();
    let app = uploaded(&store, "vault");
    drop(store);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "store::tests::crash_child_writer",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(CRASH_DIR_VAR, dir.path().join("state"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut last_round = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(round) = line.strip_prefix("round ") {
            last_round = Some(round.parse::<u64>().unwrap());
            if last_round >= Some(5) {
                break;
            }
        }
    }
    // SIGKILL, mid-way through some later round.
    child.kill().unwrap();
    child.wait().unwrap();
    let last_round = last_round.expect("the child finished at least one round");

    let store = reopen(&dir);
    let integrity: String = store
        .connection()
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    store.reconcile_after_restart().unwrap();
    let record = store.app(&app).unwrap();
    assert!(
        [AppState::Applied, AppState::ApplyFailed].contains(&record.state),
        "{}",
        record.state
    );
    let user = store
        .override_layer(&app, "db", &OverrideLayer::User)
        .unwrap()
        .unwrap();
    let round = user.values["round"].as_u64().unwrap();
    assert!(
        round >= last_round,
        "override of round {round} lost round {last_round}"
    );
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM history WHERE outcome = 'running'"
        ),
        0
    );
    let id = begin_apply(&store, &app).unwrap();
    store
        .finish_operation(id, &Finish::succeeded(AppState::Applied))
        .unwrap();
}

#[test]
fn a_versions_registry_source_is_stored_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).unwrap();
    let source = "oci://127.0.0.1:5000/apps/a@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let mut record = bundle("a", "1.0");
    record.source = Some(source.to_owned());
    store.begin_upload(&record).unwrap();
    let versions = store.list_versions(&name("a")).unwrap();
    assert_eq!(versions[0].source.as_deref(), Some(source));
    // An older record's JSON (no source) still reads.
    let mut json = serde_json::to_value(&versions[0]).unwrap();
    json.as_object_mut().unwrap().remove("source");
    let old: VersionRecord = serde_json::from_value(json).unwrap();
    assert_eq!(old.source, None);
}

#[test]
fn a_user_snapshot_keeps_the_user_layer_of_its_moment_and_goes_with_its_version() {
    let (dir, store) = new_store();
    let app = uploaded(&store, "shop");
    store
        .set_override(&app, "web", &OverrideLayer::User, &json!({"replicas": 3}))
        .unwrap();
    store.add_version(&bundle("shop", "1.1.0")).unwrap();
    store.save_user_snapshot(&app, "1.0").unwrap();
    store
        .set_override(&app, "web", &OverrideLayer::User, &json!({"replicas": 4}))
        .unwrap();
    store.save_user_snapshot(&app, "1.1.0").unwrap();
    let store = reopen(&dir);
    let snapshots = store.user_snapshots(&app).unwrap();
    let seen: Vec<(&str, &serde_json::Value)> = snapshots
        .iter()
        .map(|s| (s.version.as_str(), &s.charts[0].1))
        .collect();
    assert_eq!(
        seen,
        [
            ("1.1.0", &json!({"replicas": 4})),
            ("1.0", &json!({"replicas": 3}))
        ],
        "most recent first, each with its own values"
    );
    assert!(matches!(
        store.save_user_snapshot(&app, "9.9.9"),
        Err(Error::UnknownVersion { .. })
    ));
    store.delete_version(&app, "1.1.0").unwrap();
    let left: Vec<String> = store
        .user_snapshots(&app)
        .unwrap()
        .into_iter()
        .map(|s| s.version)
        .collect();
    assert_eq!(left, ["1.0"], "a deleted version's snapshot goes with it");
}

// ---- the pause of automatic operations (issue 45) ----

#[test]
fn a_pause_survives_reopening_and_is_in_the_history() {
    let (dir, store) = new_store();
    let app = uploaded(&store, "shop");
    let pause = AutomaticPause {
        by: "uid=1000".into(),
        at: 42,
        reason: Some("disk swap".into()),
    };
    let record = store
        .set_automatic_pause(&app, Some(&pause), "automatic operations paused")
        .unwrap();
    assert_eq!(record.automatic_pause.as_ref(), Some(&pause));
    assert_eq!(record.state, AppState::Uploaded, "the state is untouched");
    drop(store);
    let store = reopen(&dir);
    assert_eq!(store.app(&app).unwrap().automatic_pause, Some(pause));
    store
        .set_automatic_pause(&app, None, "automatic operations resumed by uid=0")
        .unwrap();
    drop(store);
    let store = reopen(&dir);
    assert_eq!(store.app(&app).unwrap().automatic_pause, None);
    let history = store.history(&app).unwrap();
    let kinds: Vec<_> = history.iter().map(|h| (h.operation, h.outcome)).collect();
    assert_eq!(
        kinds,
        [
            (Operation::Upload, Outcome::Succeeded),
            (Operation::Pause, Outcome::Succeeded),
            (Operation::Resume, Outcome::Succeeded),
        ]
    );
    assert_eq!(
        history[2].message.as_deref(),
        Some("automatic operations resumed by uid=0")
    );
    assert_eq!(history[1].to_state, Some(AppState::Uploaded));
    assert!(matches!(
        store.set_automatic_pause(&name("ghost"), None, "x"),
        Err(Error::UnknownApp { .. })
    ));
}

#[test]
fn a_version_7_store_gains_the_pause_column_and_reads_its_apps_unpaused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state");
    std::fs::create_dir_all(&path).unwrap();
    let db = path.join(DATABASE_FILE);
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        for step in &schema::MIGRATIONS[..7] {
            conn.execute_batch(step).unwrap();
        }
        conn.pragma_update(None, "user_version", 7).unwrap();
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        conn.execute(
            "INSERT INTO apps VALUES ('shop', 'applied', '1.0.0', NULL, NULL, NULL, 1, 1)",
            [],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(pragma(&db, "user_version"), schema_version());
    let app = store.app(&name("shop")).unwrap();
    assert_eq!(app.state, AppState::Applied);
    assert_eq!(app.automatic_pause, None);
}
