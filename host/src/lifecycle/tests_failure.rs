//! Issue 45's failure policy in process, on the directory target: a
//! failed automatic re-apply retried with backoff up to its app's limit,
//! a success resetting the count, an app's own pause (and resume), and an
//! update with `on_failure: keep` left as it got.

use std::time::{Duration, Instant};

use super::*;
use crate::model::OnFailure;
use crate::store::{HistoryEntry, Outcome};

/// A ConfigMap whose render fails while the values say `fail: true`.
const FAILING: &str = "{{ if .Values.fail }}{{ fail \"told to fail\" }}{{ end }}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n";

/// A ConfigMap whose render always fails.
const BROKEN: &str = "{{ fail \"this version is broken\" }}";

fn set_fail(lc: &Lifecycle, app: &AppName, fail: bool) {
    let set = OverrideSet {
        set: vec![format!("fail={fail}")],
        ..OverrideSet::default()
    };
    lc.override_set(app, "a", &set).unwrap();
}

/// The finished applies of `app` the daemon started on its own (their
/// message holds an automatic note).
fn automatic_applies(lc: &Lifecycle, app: &AppName) -> Vec<HistoryEntry> {
    lc.history(app)
        .unwrap()
        .into_iter()
        .filter(|h| {
            h.operation == Operation::Apply
                && h.finished_at.is_some()
                && h.message
                    .as_deref()
                    .is_some_and(|m| m.contains("automatic re-apply: "))
        })
        .collect()
}

/// Waits up to `within` for `app` to have `count` finished automatic
/// applies; returns them (fewer when the time ran out).
fn wait_for_automatic(
    lc: &Lifecycle,
    app: &AppName,
    count: usize,
    within: Duration,
) -> Vec<HistoryEntry> {
    let until = Instant::now() + within;
    loop {
        let applies = automatic_applies(lc, app);
        if applies.len() >= count || Instant::now() > until {
            return applies;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn mark(lc: &Lifecycle, app: &AppName) {
    let version = lc.active_version(app).unwrap();
    crate::lifecycle::reevaluate::mark_reapply(lc, app, &version, "facts changed (test)", None);
}

#[test]
fn a_failed_automatic_reapply_is_retried_with_backoff_then_left_failed() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = name("demo");
    let extra = "auto_reapply: true\nretries: 2\nretry_interval: 1s\n";
    lc.upload(f.bundle_with_template("demo", "1.0.0", &["a"], extra, FAILING))
        .unwrap();
    lc.apply(&app, vec![]).unwrap().wait();
    assert_eq!(settled(&lc, "demo"), AppState::Applied);
    set_fail(&lc, &app, true);
    let began = Instant::now();
    mark(&lc, &app);
    let applies = wait_for_automatic(&lc, &app, 3, Duration::from_secs(30));
    let took = began.elapsed();
    let messages: Vec<&str> = applies
        .iter()
        .map(|h| h.message.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(applies.len(), 3, "{messages:#?}");
    assert!(
        applies.iter().all(|h| h.outcome == Outcome::Failed),
        "{messages:#?}"
    );
    // The first retry waits the interval, the second twice it.
    assert!(took >= Duration::from_secs(3), "retried after {took:?}");
    assert!(
        applies[1].started_at - applies[0].finished_at.unwrap() >= 1000,
        "{applies:#?}"
    );
    assert!(
        applies[2].started_at - applies[1].finished_at.unwrap() >= 2000,
        "{applies:#?}"
    );
    assert!(messages[0].contains("told to fail"), "{}", messages[0]);
    assert!(
        messages[0].contains("retry 1 of 2 in 1s"),
        "{}",
        messages[0]
    );
    assert!(
        messages[1].contains("retry 1 of 2 after ") && messages[1].contains("told to fail"),
        "{}",
        messages[1]
    );
    assert!(
        messages[1].contains("retry 2 of 2 in 2s"),
        "{}",
        messages[1]
    );
    assert!(
        messages[2].contains("retry 2 of 2 after "),
        "{}",
        messages[2]
    );
    assert!(
        messages[2].contains("automatic retries exhausted (2 of 2)"),
        "{}",
        messages[2]
    );
    // Then nothing more: the app stays failed, with no retry pending.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(automatic_applies(&lc, &app).len(), 3);
    assert_eq!(settled(&lc, "demo"), AppState::ApplyFailed);
    assert_eq!(lc.show(&app).unwrap().automatic_retry, None);
    let metrics = lc.metrics().render();
    assert!(
        metrics.contains("capstan_automatic_retries_total 2\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("capstan_automatic_retries_exhausted_total 1\n"),
        "{metrics}"
    );
}

#[test]
fn a_retry_that_succeeds_resets_the_count_and_an_operator_apply_clears_a_pending_one() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = name("demo");
    let extra = "auto_reapply: true\nauto_reapply_interval: 1s\nretries: 3\nretry_interval: 1s\n";
    lc.upload(f.bundle_with_template("demo", "1.0.0", &["a"], extra, FAILING))
        .unwrap();
    lc.apply(&app, vec![]).unwrap().wait();
    set_fail(&lc, &app, true);
    mark(&lc, &app);
    let applies = wait_for_automatic(&lc, &app, 1, Duration::from_secs(10));
    assert_eq!(applies.len(), 1);
    let pending = lc.show(&app).unwrap().automatic_retry;
    assert!(
        pending
            .as_deref()
            .is_some_and(|p| p.starts_with("retry 1 due in")),
        "{pending:?}"
    );
    set_fail(&lc, &app, false);
    let applies = wait_for_automatic(&lc, &app, 2, Duration::from_secs(10));
    assert_eq!(applies.len(), 2);
    assert_eq!(applies[1].outcome, Outcome::Succeeded);
    assert!(
        applies[1]
            .message
            .as_deref()
            .is_some_and(|m| m.contains("retry 1 of 3 after ")),
        "{:?}",
        applies[1].message
    );
    assert_eq!(settled(&lc, "demo"), AppState::Applied);
    assert_eq!(lc.show(&app).unwrap().automatic_retry, None);

    // Failing again starts from retry 1; an operator's apply in between
    // clears the pending retry, so none follows it.
    set_fail(&lc, &app, true);
    std::thread::sleep(Duration::from_millis(1100));
    let before = lc.history(&app).unwrap().len();
    mark(&lc, &app);
    let applies = wait_for_automatic(&lc, &app, 3, Duration::from_secs(10));
    assert_eq!(applies.len(), 3);
    assert!(
        applies[2]
            .message
            .as_deref()
            .is_some_and(|m| m.contains("retry 1 of 3 in")),
        "{:?}",
        applies[2].message
    );
    lc.apply(&app, vec![]).unwrap().wait();
    assert_eq!(lc.show(&app).unwrap().automatic_retry, None);
    std::thread::sleep(Duration::from_millis(1800));
    assert_eq!(
        lc.history(&app).unwrap().len(),
        before + 2,
        "the failed automatic apply and the operator's, no retry"
    );
}

#[test]
fn a_paused_app_gets_no_automatic_operation_while_an_operator_still_applies() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = name("demo");
    lc.upload(f.bundle_with("demo", "1.0.0", &["a"], "auto_reapply: true\n"))
        .unwrap();
    lc.apply(&app, vec![]).unwrap().wait();
    let record = lc
        .pause_automatic(&app, "uid=1000", Some("disk replacement"))
        .unwrap();
    assert_eq!(
        record.automatic_pause.as_ref().map(|p| p.by.as_str()),
        Some("uid=1000")
    );
    let shown = lc.show(&app).unwrap().automatic_paused.unwrap_or_default();
    assert!(
        shown.starts_with("paused by uid=1000 at ") && shown.contains(": disk replacement"),
        "{shown}"
    );
    let before = lc.history(&app).unwrap().len();
    mark(&lc, &app);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(lc.history(&app).unwrap().len(), before, "nothing started");
    // The operator's own apply runs.
    lc.apply(&app, vec![]).unwrap().wait();
    assert_eq!(settled(&lc, "demo"), AppState::Applied);
    assert_eq!(lc.history(&app).unwrap().len(), before + 1);
    // Marked again while paused; resuming starts the automatic re-apply.
    mark(&lc, &app);
    std::thread::sleep(Duration::from_millis(300));
    assert!(automatic_applies(&lc, &app).is_empty());
    lc.resume_automatic(&app, "uid=0", None).unwrap();
    let applies = wait_for_automatic(&lc, &app, 1, Duration::from_secs(10));
    assert_eq!(applies.len(), 1);
    assert_eq!(applies[0].outcome, Outcome::Succeeded);
    assert_eq!(lc.show(&app).unwrap().automatic_paused, None);
    let history = lc.history(&app).unwrap();
    let pause = history
        .iter()
        .find(|h| h.operation == Operation::Pause)
        .and_then(|h| h.message.clone())
        .unwrap_or_default();
    assert!(
        pause.contains("paused by uid=1000") && pause.contains("disk replacement"),
        "{pause}"
    );
    assert!(history.iter().any(|h| h.operation == Operation::Resume
        && h.message.as_deref() == Some("automatic operations resumed by uid=0")));
    // A reason is bounded and one line.
    let long = "x".repeat(257);
    assert!(matches!(
        lc.pause_automatic(&app, "uid=0", Some(&long)),
        Err(Error::BadPauseReason { .. })
    ));
    assert!(lc.pause_automatic(&app, "uid=0", Some("a\nb")).is_err());
    assert_eq!(lc.show(&app).unwrap().automatic_paused, None);
}

#[test]
fn a_pending_retry_waits_while_its_app_is_paused() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = name("demo");
    let extra = "auto_reapply: true\nretries: 1\nretry_interval: 1s\n";
    lc.upload(f.bundle_with_template("demo", "1.0.0", &["a"], extra, FAILING))
        .unwrap();
    lc.apply(&app, vec![]).unwrap().wait();
    set_fail(&lc, &app, true);
    mark(&lc, &app);
    assert_eq!(
        wait_for_automatic(&lc, &app, 1, Duration::from_secs(10)).len(),
        1
    );
    lc.pause_automatic(&app, "uid=0", None).unwrap();
    std::thread::sleep(Duration::from_millis(1800));
    assert_eq!(automatic_applies(&lc, &app).len(), 1, "paused: no retry");
    set_fail(&lc, &app, false);
    lc.resume_automatic(&app, "uid=0", None).unwrap();
    let applies = wait_for_automatic(&lc, &app, 2, Duration::from_secs(10));
    assert_eq!(applies.len(), 2);
    assert_eq!(applies[1].outcome, Outcome::Succeeded);
}

#[test]
fn an_update_with_on_failure_keep_is_not_rolled_back() {
    let f = Fixture::new();
    let lc = f.open().unwrap();
    let app = name("demo");
    lc.upload(f.bundle("demo", "1.0.0", &["a"])).unwrap();
    lc.apply(&app, vec![]).unwrap().wait();
    let keep = "on_failure: keep\n";

    // The operation's override wins over the bundle's `keep`.
    let bundle = f.bundle_with_template("demo", "2.0.0", &["a"], keep, BROKEN);
    lc.update_with(bundle, None, false, None, Some(OnFailure::Rollback))
        .unwrap()
        .wait();
    let shown = lc.show(&app).unwrap();
    assert_eq!(
        shown.app.state,
        AppState::Applied,
        "{:?}",
        shown.app.message
    );
    assert_eq!(shown.app.active_version, "1.0.0");

    let bundle = f.bundle_with_template("demo", "2.0.0", &["a"], keep, BROKEN);
    lc.update(bundle, None).unwrap().wait();
    let shown = lc.show(&app).unwrap();
    assert_eq!(shown.app.state, AppState::ApplyFailed);
    assert_eq!(shown.app.active_version, "2.0.0", "the new version stays");
    assert_eq!(shown.app.target_version, None);
    assert!(
        shown.versions.iter().any(|v| v.version == "1.0.0"),
        "the old version is kept for `app rollback`"
    );
    let last = lc.history(&app).unwrap().pop().unwrap();
    assert_eq!(last.operation, Operation::Update);
    assert_eq!(last.outcome, Outcome::Failed);
    assert_eq!(last.to_state, Some(AppState::ApplyFailed));
    let message = last.message.unwrap_or_default();
    assert!(
        message.contains("this version is broken")
            && message.contains("not rolled back (on_failure: keep)"),
        "{message}"
    );
    assert!(
        !message.contains("rolled back to") && !message.contains("rollback to"),
        "no rollback ran: {message}"
    );
    assert!(
        std::fs::read_to_string(f.path("applied/demo/a.yaml")).is_ok(),
        "what 1.0.0 applied is not removed either"
    );
    // The way out: back to the kept version.
    lc.rollback(&app, None).unwrap().wait();
    let shown = lc.show(&app).unwrap();
    assert_eq!(
        shown.app.state,
        AppState::Applied,
        "{:?}",
        shown.app.message
    );
    assert_eq!(shown.app.active_version, "1.0.0");
}

/// An app's own pause also holds the resumption of an operation a leader
/// left running (as `serve --pause-automatic` does for every app), and
/// survives the daemon's restart; another app is resumed as always.
#[test]
fn an_apps_pause_holds_the_resumption_of_its_interrupted_operation() {
    let f = Fixture::new();
    let moved: Vec<crate::store::Reconciled> = {
        let lc = f.open().unwrap();
        for app in ["held", "free"] {
            lc.upload(f.bundle(app, "1.0.0", &["a"])).unwrap();
        }
        lc.pause_automatic(&name("held"), "uid=0", Some("hands off"))
            .unwrap();
        ["held", "free"]
            .iter()
            .map(|app| {
                let op = lc
                    .inner
                    .services
                    .store
                    .begin_operation(
                        &name(app),
                        Operation::Apply,
                        rules::APPLY_FROM,
                        AppState::Applying,
                    )
                    .unwrap();
                lc.inner.services.store.set_request(op, "{}").unwrap();
                crate::store::Reconciled {
                    app: name(app),
                    from: AppState::Applying,
                    to: AppState::ApplyFailed,
                }
            })
            .collect()
    };
    let lc = f.open().unwrap();
    let before = lc.history(&name("held")).unwrap().len();
    lc.resume(&moved);
    assert_eq!(settled(&lc, "free"), AppState::Applied);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(settled(&lc, "held"), AppState::ApplyFailed);
    assert_eq!(lc.history(&name("held")).unwrap().len(), before);
    let shown = lc.show(&name("held")).unwrap().automatic_paused;
    assert!(
        shown.as_deref().is_some_and(|s| s.contains("hands off")),
        "{shown:?}"
    );
}
