//! [`DocStore`]'s rules against the SQLite store's (the differential
//! script), and what only a document store has: fencing, bounds.

use serde_json::json;

use super::memory::MemoryBackend;
use super::*;
use crate::store::conformance::script;
use crate::store::{Finish, SqliteStore};

fn store() -> DocStore<MemoryBackend> {
    DocStore::new(MemoryBackend::new(1024 * 1024))
}

fn name(text: &str) -> AppName {
    AppName::new(text).unwrap()
}

fn upload(store: &dyn Store, app: &str) -> AppName {
    let id = store
        .begin_upload(&VersionRecord {
            app: name(app),
            version: "1.0".into(),
            bundle_dir: "/b".into(),
            bundle_digest: "d".into(),
            signer: "k".into(),
            metadata: json!({}),
            uploaded_at: 0,
            source: None,
        })
        .unwrap();
    store
        .finish_operation(id, &Finish::succeeded(AppState::Uploaded))
        .unwrap();
    name(app)
}

#[test]
fn every_method_answers_as_the_sqlite_store_does() {
    let sqlite = SqliteStore::open_in_memory().unwrap();
    let expected = script(&sqlite, "t-");
    let actual = script(&store(), "t-");
    assert!(expected.len() > 100, "{}", expected.len());
    for (want, got) in expected.iter().zip(&actual) {
        assert_eq!(got, want);
    }
    assert_eq!(actual.len(), expected.len());
    // The script's refusals are real: each kind shows up.
    let text = expected.join("\n");
    for refusal in [
        "app-exists",
        "unknown-app",
        "unknown-version",
        "version-exists",
        "version-in-use",
        "illegal-transition",
        "busy",
        "not-transitional",
        "not-final",
        "unknown-operation",
        "operation-finished",
        "volume-exists",
        "no-target-version",
        "refused-by-the-backend",
    ] {
        assert!(text.contains(refusal), "the script never meets {refusal}");
    }
}

#[test]
fn a_write_after_another_writers_write_is_refused_and_nothing_is_written() {
    let store = store();
    let app = upload(&store, "fenced");
    store
        .set_override(&app, "web", &OverrideLayer::User, &json!({"mine": 1}))
        .unwrap();
    // Another daemon (the new leader) writes the app.
    let mut theirs = store.backend().get(&app).unwrap().unwrap().doc;
    theirs.status.message = Some("written by the other daemon".into());
    store.backend().overwrite(&theirs);
    let err = store
        .set_override(&app, "web", &OverrideLayer::User, &json!({"mine": 2}))
        .unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert!(
        err.to_string().contains("another daemon may lead now"),
        "{err}"
    );
    assert!(store.is_fenced());
    let err = store
        .delete_override(&app, "web", &OverrideLayer::User)
        .unwrap_err();
    assert!(
        matches!(err, Error::Fenced),
        "no write after the refusal: {err}"
    );
    let live = store.backend().get(&app).unwrap().unwrap().doc;
    assert_eq!(live, theirs, "the refused write changed nothing");
    // Reconciliation (a daemon starting to lead) reads afresh: writes go on.
    store.reconcile_after_restart().unwrap();
    assert!(!store.is_fenced());
    store
        .set_override(&app, "web", &OverrideLayer::User, &json!({"mine": 3}))
        .unwrap();
    assert_eq!(
        store
            .override_layer(&app, "web", &OverrideLayer::User)
            .unwrap()
            .unwrap()
            .values,
        json!({"mine": 3})
    );
}

#[test]
fn a_delete_after_another_writers_write_is_refused() {
    let store = store();
    let app = upload(&store, "kept");
    let mut theirs = store.backend().get(&app).unwrap().unwrap().doc;
    theirs.status.state = AppState::Applied;
    store.backend().overwrite(&theirs);
    let err = store
        .delete_app(&app, &[AppState::Uploaded, AppState::Applied])
        .unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    assert!(store.backend().get(&app).unwrap().is_some());
}

#[test]
fn history_is_bounded_and_the_oldest_finished_entries_go_first() {
    let store = store();
    let app = upload(&store, "busy-app");
    for _ in 0..(MAX_HISTORY + 20) {
        let id = store
            .begin_operation(
                &app,
                Operation::Apply,
                &[AppState::Uploaded, AppState::Applied],
                AppState::Applying,
            )
            .unwrap();
        store
            .finish_operation(id, &Finish::succeeded(AppState::Applied))
            .unwrap();
    }
    let history = store.history(&app).unwrap();
    assert_eq!(history.len(), MAX_HISTORY);
    assert!(
        history.iter().all(|h| h.operation == Operation::Apply),
        "the upload went first"
    );
    assert!(history.windows(2).all(|w| w[0].id.0 < w[1].id.0));
}

#[test]
fn a_document_over_the_limit_trims_history_then_refuses_and_writes_nothing() {
    let store = DocStore::new(MemoryBackend::new(8 * 1024));
    let app = upload(&store, "big");
    for _ in 0..20 {
        let id = store
            .begin_operation(
                &app,
                Operation::Apply,
                &[AppState::Uploaded, AppState::Applied],
                AppState::Applying,
            )
            .unwrap();
        store
            .finish_operation(id, &Finish::failed(AppState::Applied, "x".repeat(300)))
            .unwrap();
    }
    let before = store.history(&app).unwrap().len();
    assert!(before < 21, "history was trimmed to fit: {before}");
    // An override that fits only without some history: history gives way.
    store
        .set_override(
            &app,
            "web",
            &OverrideLayer::User,
            &json!({"v": "y".repeat(3000)}),
        )
        .unwrap();
    let after = store.history(&app).unwrap().len();
    assert!(after < before, "{after} < {before}");
    // One that cannot fit at all is refused with the sizes, nothing written.
    let err = store
        .set_override(
            &app,
            "db",
            &OverrideLayer::User,
            &json!({"v": "z".repeat(9000)}),
        )
        .unwrap_err();
    let Error::TooLarge { size, limit, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(*limit, 8 * 1024);
    assert!(*size > *limit);
    assert!(err.to_string().contains("over the store's limit"), "{err}");
    assert!(
        store
            .override_layer(&app, "db", &OverrideLayer::User)
            .unwrap()
            .is_none()
    );
    assert_eq!(store.history(&app).unwrap().len(), after);
}

#[test]
fn an_app_written_without_status_reconciles_to_upload_failed() {
    let store = store();
    let doc = AppDoc {
        name: name("half"),
        spec: AppSpec::default(),
        status: AppStatus::default(),
    };
    store.backend().overwrite(&doc);
    assert_eq!(store.app(&name("half")).unwrap().state, AppState::Uploading);
    let moved = store.reconcile_after_restart().unwrap();
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].to, AppState::UploadFailed);
    let history = store.history(&name("half")).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].operation, Operation::Reconcile);
}

#[test]
fn operations_are_found_by_id_from_another_daemons_writes() {
    let first = store();
    let app = upload(&first, "shared");
    let id = first
        .begin_operation(
            &app,
            Operation::Apply,
            &[AppState::Uploaded],
            AppState::Applying,
        )
        .unwrap();
    // A second store on the same documents has never seen the id.
    let doc = first.backend().get(&app).unwrap().unwrap().doc;
    let second = store();
    second.backend().overwrite(&doc);
    assert_eq!(second.operation(id).unwrap().outcome, Outcome::Running);
    second
        .finish_operation(id, &Finish::succeeded(AppState::Applied))
        .unwrap();
    assert_eq!(second.app(&app).unwrap().state, AppState::Applied);
    assert!(matches!(
        second.operation(OperationId(42)),
        Err(Error::UnknownOperation { .. })
    ));
}

#[test]
fn a_pause_survives_another_daemon_reading_the_document_and_older_ones_read() {
    let first = store();
    let app = upload(&first, "shop");
    let pause = AutomaticPause {
        by: "bearer-token from 10.0.0.1:5000".into(),
        at: 7,
        reason: None,
    };
    first
        .set_automatic_pause(&app, Some(&pause), "automatic operations paused")
        .unwrap();
    // As the cluster keeps it: JSON, read back by another replica.
    let doc = first.backend().get(&app).unwrap().unwrap().doc;
    let text = serde_json::to_string(&doc).unwrap();
    assert!(text.contains("automaticPause"), "{text}");
    let read: AppDoc = serde_json::from_str(&text).unwrap();
    let second = store();
    second.backend().overwrite(&read);
    assert_eq!(second.app(&app).unwrap().automatic_pause, Some(pause));
    assert_eq!(
        second.history(&app).unwrap().last().map(|h| h.operation),
        Some(Operation::Pause)
    );
    // A document written before the pause existed reads unpaused, and
    // an unpaused one is written without the field.
    let mut older: serde_json::Value = serde_json::from_str(&text).unwrap();
    older["status"]
        .as_object_mut()
        .unwrap()
        .remove("automaticPause");
    let older: AppDoc = serde_json::from_value(older).unwrap();
    assert_eq!(older.record().automatic_pause, None);
    second.set_automatic_pause(&app, None, "resumed").unwrap();
    let doc = second.backend().get(&app).unwrap().unwrap().doc;
    assert!(
        !serde_json::to_string(&doc)
            .unwrap()
            .contains("automaticPause")
    );
}
