//! Starting the long operations (apply, remove, recover; delete and
//! abort), each in one store transaction, and running them on a thread
//! of their own to exactly one finish.

use super::*;
use crate::lifecycle::apply::{apply_version, post_abort, remove_version};
use crate::lifecycle::job::{Apply, Job, NO_FLAGS, UserLayer};
use crate::lifecycle::operations::{Request, Started};
use crate::lifecycle::owned::{owned_error, owned_release_of};
use crate::lifecycle::state_dir::remove_dir;
use crate::lifecycle::{Error, bundleless, rules};
use crate::model::ApplyRequest;
use crate::model::{AppName, Hook};
use crate::store::{AppRecord, AppState, Finish, Operation, OperationId, Outcome, TargetChange};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What a long operation's work returns: how it ends, and a version whose
/// files and rows go once it has ended (the replaced or failed version).
pub(super) struct Ending {
    pub(super) finish: Finish,
    pub(super) drop_version: Option<String>,
}

impl Ending {
    pub(super) fn new(finish: Finish) -> Self {
        Ending {
            finish,
            drop_version: None,
        }
    }
}

pub(super) fn failed(state: AppState, error: &Error) -> Finish {
    let finish = Finish::failed(state, error.one_line());
    match error {
        Error::Aborted => finish.with_outcome(Outcome::Aborted),
        // Not written: the next leader finds it running (see `run`).
        Error::HandedOver => finish.with_outcome(Outcome::Interrupted),
        _ => finish,
    }
}

pub(super) fn with_note(finish: Finish, note: Option<String>) -> Finish {
    match (note, &finish.message) {
        (Some(note), Some(message)) => {
            let joined = format!("{message}; {note}");
            finish.with_message(joined)
        }
        (Some(note), None) => finish.with_message(note),
        (None, _) => finish,
    }
}

impl Lifecycle {
    /// Deletes an uploaded (never applied, or removed) app and its files.
    ///
    /// # Errors
    /// [`crate::store::Error::UnknownApp`]; a busy or illegal-transition error when
    /// it is not `uploaded` or `upload-failed`.
    pub fn delete(&self, app: &AppName) -> Result<(), Error> {
        // Secrets a `remove --keep-secrets` kept go with the app. Only an
        // app that may be deleted is looked at; a failure deletes nothing.
        let record = self.store().app(app)?;
        if rules::DELETE_FROM.contains(&record.state)
            && let Ok(version) = self.active_version(app)
        {
            let release = owned_release_of(app, &version.metadata);
            let removed = self
                .inner
                .services
                .target
                .remove(&release)
                .map_err(owned_error)?;
            if !removed.is_empty() {
                tracing::info!(target: "capstan::audit", app = %app, objects = removed.len(), "kept generated secrets removed with the app");
            }
        }
        let versions = self.store().delete_app(app, rules::DELETE_FROM)?;
        self.inner.work.checkpoints.reach("delete:rows-deleted");
        for version in versions {
            remove_dir(&version.bundle_dir)?;
        }
        let app_dir = self.inner.paths.bundles().join(app.as_str());
        if app_dir.exists() {
            remove_dir(&app_dir)?;
        }
        self.inner.work.charts.forget(app.as_str());
        self.inner.work.metrics.operation("delete", "succeeded");
        tracing::info!(app = %app, "deleted");
        Ok(())
    }

    /// Asks the running apply, update, remove or recover of `app` to stop
    /// at its next step, and interrupts the plugin call it is in at the
    /// sandbox's next epoch tick (the call ends as `aborted`); it then ends
    /// in the matching failed state, outcome `aborted`.
    ///
    /// # Errors
    /// [`Error::NothingToAbort`] when no such operation runs.
    pub fn abort(&self, app: &AppName) -> Result<AppRecord, Error> {
        let record = self.store().app(app)?;
        let running = self
            .inner
            .work
            .running
            .lock()
            .map_err(|_| poisoned())?
            .get(app.as_str())
            .map(|(_, flag)| flag.clone());
        match running {
            Some(flag) if rules::ABORTABLE.contains(&record.state) => {
                flag.store(true, Ordering::SeqCst);
                tracing::info!(app = %app, state = %record.state, "abort requested");
                Ok(record)
            }
            _ => Err(Error::NothingToAbort {
                app: app.to_string(),
            }),
        }
    }

    /// Finishes an operation that failed before its work started, leaving
    /// the app in `state` with the error as its message, and returns the
    /// error as [`Error::Ended`] (a state error, never an internal one).
    pub(super) fn end_early(
        &self,
        app: &AppName,
        op: OperationId,
        operation: Operation,
        finish: Finish,
        error: Error,
    ) -> Error {
        let state = finish.state;
        if let Err(e) = self.store().finish_operation(op, &finish) {
            tracing::error!(app = %app, operation = %operation, error = %e,
                "could not record the end of the operation");
            return Error::Store(e);
        }
        self.inner
            .work
            .metrics
            .operation(operation.as_str(), "failed");
        tracing::warn!(app = %app, operation = %operation, state = %state,
            error = %error.one_line(), "operation failed before it started its work");
        Error::Ended {
            operation,
            app: app.to_string(),
            state,
            source: Box::new(error),
        }
    }

    // ---- long operations ----

    /// Starts applying the active version; `rekind` names components whose
    /// workload kind is decided again.
    ///
    /// # Errors
    /// [`Error::UnknownComponent`]; the store's busy and illegal-transition
    /// errors.
    pub fn apply(&self, app: &AppName, rekind: Vec<String>) -> Result<Started, Error> {
        self.apply_with(
            app,
            ApplyRequest {
                rekind,
                ..ApplyRequest::default()
            },
        )
    }

    /// [`Lifecycle::apply`] with every flag an operator may give.
    ///
    /// # Errors
    /// As [`Lifecycle::apply`].
    pub fn apply_with(&self, app: &AppName, flags: ApplyRequest) -> Result<Started, Error> {
        self.start_apply(app, flags, None, 0)
    }

    /// [`Lifecycle::apply_with`]; `note` says why no person asked for it
    /// (its hooks are told the apply is automatic), `resumes` counts the
    /// resumptions of an interrupted apply.
    pub(crate) fn start_apply(
        &self,
        app: &AppName,
        flags: ApplyRequest,
        note: Option<String>,
        resumes: u32,
    ) -> Result<Started, Error> {
        // A request naming a component the app does not have is refused
        // before anything starts (nothing recorded); the metadata read for
        // it is not trusted for anything else.
        if let Ok(version) = self.active_version(app) {
            check_rekind(app, &version, &flags.rekind)?;
        }
        let op = self.store().begin_operation(
            app,
            Operation::Apply,
            rules::APPLY_FROM,
            AppState::Applying,
        )?;
        self.inner.work.checkpoints.reach("apply:begun");
        let request = Request::of_apply(&flags, resumes);
        let checked = self
            .keep_request(op, &request)
            .and_then(|()| self.active_version_checked(app))
            .and_then(|version| check_rekind(app, &version, &flags.rekind).map(|()| version));
        let version = match checked {
            Ok(version) => version,
            Err(e) => {
                let finish = failed(AppState::ApplyFailed, &e);
                return Err(self.end_early(app, op, Operation::Apply, finish, e));
            }
        };
        Ok(self.spawn(app, op, Operation::Apply, move |job| {
            // A note says why no person asked for it: its hooks are told
            // the apply is automatic, and the history keeps it at the end.
            if let Some(note) = &note {
                job.automatic.store(true, Ordering::SeqCst);
                job.note(note.clone());
            }
            let request = Apply {
                version: &version,
                replacing: None,
                user: UserLayer::Stored,
                flags: &flags,
                around: None,
                phase: "apply",
            };
            let finish = match apply_version(job, &request) {
                Ok(()) => with_note(Finish::succeeded(AppState::Applied), job.warnings_note()),
                Err(e) => failed(AppState::ApplyFailed, &e),
            };
            Ending::new(with_note(finish, note))
        }))
    }

    /// Starts removing the app's charts from the target, in reverse order;
    /// it ends `uploaded`. With `force`, a failing chart or hook does not
    /// stop the removal of the others.
    ///
    /// # Errors
    /// The store's busy and illegal-transition errors.
    pub fn remove(&self, app: &AppName, force: bool) -> Result<Started, Error> {
        self.remove_with(app, force, false)
    }

    /// [`Lifecycle::remove`]; with `keep_secrets`, the Secrets the host
    /// generated for the app's plugins stay (the owned release is pruned
    /// down to them), so that applying the app again hands out the same
    /// values; [`Lifecycle::delete`] removes them.
    ///
    /// # Errors
    /// The store's busy and illegal-transition errors.
    pub fn remove_with(
        &self,
        app: &AppName,
        force: bool,
        keep_secrets: bool,
    ) -> Result<Started, Error> {
        let request = Request {
            force,
            keep_secrets,
            ..Request::default()
        };
        self.start_remove(app, request, None)
    }

    /// [`Lifecycle::remove_with`] as `request` says, with `note` (why no
    /// person asked for it) in its message.
    pub(crate) fn start_remove(
        &self,
        app: &AppName,
        request: Request,
        note: Option<String>,
    ) -> Result<Started, Error> {
        let (force, keep_secrets) = (request.force, request.keep_secrets);
        let from = if force {
            rules::FORCE_REMOVE_FROM
        } else {
            rules::REMOVE_FROM
        };
        let op = self
            .store()
            .begin_operation(app, Operation::Remove, from, AppState::Removing)?;
        self.inner.work.checkpoints.reach("remove:begun");
        let checked = self
            .keep_request(op, &request)
            .and_then(|()| self.versions_checked(app));
        let (version, target) = match checked {
            Ok(versions) => versions,
            // No app without a way out: a bundle that cannot be read
            // (module `bundleless`) is removed from the inventories alone.
            Err(e) if force && bundleless::unreadable(&e) => {
                let why = e.one_line();
                return Ok(self.spawn(app, op, Operation::Remove, move |job| {
                    if let Some(note) = note {
                        job.note(note);
                    }
                    Ending::new(
                        match bundleless::remove_without_bundle(job, &why, keep_secrets) {
                            Ok(done) => with_note(
                                Finish::succeeded(AppState::Uploaded)
                                    .with_target(TargetChange::Discard)
                                    .with_message(done),
                                job.warnings_note(),
                            ),
                            Err(e) => failed(AppState::RemoveFailed, &e),
                        },
                    )
                }));
            }
            Err(e) => {
                let finish = failed(AppState::RemoveFailed, &e);
                return Err(self.end_early(app, op, Operation::Remove, finish, e));
            }
        };
        Ok(self.spawn(app, op, Operation::Remove, move |job| {
            if let Some(note) = note {
                job.note(note);
            }
            let result = remove_version(job, &version, target.as_ref(), force, keep_secrets);
            Ending {
                finish: match result {
                    Ok(()) => with_note(
                        Finish::succeeded(AppState::Uploaded).with_target(TargetChange::Discard),
                        job.warnings_note(),
                    ),
                    Err(e) => failed(AppState::RemoveFailed, &e),
                },
                drop_version: None,
            }
        }))
    }

    /// Starts bringing an app whose apply, update or removal failed back to
    /// its active version, applied; a failed update's target version is
    /// removed from the target and forgotten.
    ///
    /// # Errors
    /// The store's busy and illegal-transition errors.
    pub fn recover(&self, app: &AppName) -> Result<Started, Error> {
        self.start_recover(app, Request::default(), None)
    }

    /// [`Lifecycle::recover`], with `note` (why no person asked for it)
    /// at the head of its message and `request` kept with it.
    pub(crate) fn start_recover(
        &self,
        app: &AppName,
        request: Request,
        note: Option<String>,
    ) -> Result<Started, Error> {
        let before = self.store().app(app)?.state;
        let op = self.store().begin_operation(
            app,
            Operation::Recover,
            rules::RECOVER_FROM,
            AppState::Recovering,
        )?;
        self.inner.work.checkpoints.reach("recover:begun");
        let checked = self
            .keep_request(op, &request)
            .and_then(|()| self.versions_checked(app));
        let (version, target) = match checked {
            Ok(versions) => versions,
            Err(e) => {
                let finish = failed(AppState::failed_state_of(before), &e);
                return Err(self.end_early(app, op, Operation::Recover, finish, e));
            }
        };
        Ok(self.spawn(app, op, Operation::Recover, move |job| {
            let request = Apply {
                version: &version,
                replacing: target.as_ref(),
                user: UserLayer::Stored,
                flags: &NO_FLAGS,
                around: Some((Hook::PreRecover, Hook::PostRecover)),
                phase: "recover",
            };
            match apply_version(job, &request) {
                Ok(()) => Ending {
                    finish: Finish::succeeded(AppState::Applied)
                        .with_target(TargetChange::Discard)
                        .with_message(match &note {
                            Some(note) => {
                                format!("{note}; recovered: version {} applied", version.version)
                            }
                            None => format!("recovered: version {} applied", version.version),
                        }),
                    drop_version: target.map(|t| t.version),
                },
                Err(e) => Ending::new(failed(AppState::ApplyFailed, &e)),
            }
        }))
    }

    /// After an aborted operation: the `post-abort` hooks of the app's
    /// active version ([`Job::post_abort`]), within the operation (its
    /// actions are recorded with it; a second `app abort` interrupts
    /// them). A failure is added to the operation's message; the
    /// operation stays aborted.
    pub(super) fn post_abort(&self, job: &Job<'_>, ending: &mut Ending) {
        let Ok(version) = self.active_version(&job.app) else {
            return;
        };
        if !version
            .metadata
            .plugins
            .iter()
            .any(|p| p.hooks.contains(&Hook::PostAbort))
        {
            return;
        }
        job.abort.store(false, Ordering::SeqCst);
        let result = self
            .active_version_checked(&job.app)
            .and_then(|version| post_abort(job, &version));
        let added = match result {
            Ok(()) => "post-abort hook called".to_string(),
            Err(e) => format!("post-abort hook failed: {}", e.one_line()),
        };
        tracing::info!(target: "capstan::audit", app = %job.app, "{added}");
        let message = match ending.finish.message.take() {
            Some(message) => format!("{message}; {added}"),
            None => added,
        };
        ending.finish.message = Some(message);
    }

    /// Runs `work` on its own thread as operation `op` of `app`, then
    /// finishes the operation with what it returned.
    pub(super) fn spawn(
        &self,
        app: &AppName,
        op: OperationId,
        operation: Operation,
        work: impl FnOnce(&Job<'_>) -> Ending + Send + 'static,
    ) -> Started {
        let abort = Arc::new(AtomicBool::new(false));
        if let Ok(mut running) = self.inner.work.running.lock() {
            running.insert(app.to_string(), (op, abort.clone()));
        }
        let record = self.store().app(app).ok();
        let lifecycle = self.clone();
        let thread_app = app.clone();
        let handle = std::thread::Builder::new()
            .name(format!("{operation}-{app}"))
            .spawn(move || lifecycle.run(&thread_app, op, operation, &abort, work));
        let handle = match handle {
            Ok(handle) => Some(handle),
            Err(e) => {
                let finish = Finish::failed(
                    AppState::failed_state_of(
                        record.as_ref().map_or(AppState::Applying, |r| r.state),
                    ),
                    format!("could not start a thread: {e}"),
                );
                let _ = self.store().finish_operation(op, &finish);
                None
            }
        };
        Started {
            app: record.unwrap_or_else(|| placeholder(app)),
            operation: op,
            warnings: Vec::new(),
            handle,
        }
    }

    pub(super) fn run(
        &self,
        app: &AppName,
        op: OperationId,
        operation: Operation,
        abort: &Arc<AtomicBool>,
        work: impl FnOnce(&Job<'_>) -> Ending,
    ) {
        let span = tracing::info_span!("operation", app = %app, operation = %operation, id = op.0);
        let _entered = span.enter();
        let started = std::time::Instant::now();
        let job = Job {
            inner: &self.inner,
            app: app.clone(),
            op,
            abort,
            warnings: Mutex::new(Vec::new()),
            requested_reapply: Mutex::new(None),
            redactor: Mutex::new(crate::secrets::Redactor::new()),
            automatic: AtomicBool::new(false),
        };
        // At most `max_operations` run at once; the rest wait here, in
        // order, with their progress saying so.
        let slot = self.inner.work.slots.acquire(op, abort, |counts| {
            tracing::info!(
                running = counts.running,
                queued = counts.queued,
                max = counts.max,
                "operation queued: the daemon runs at most --max-operations at once"
            );
            let _ = self.store().set_progress(
                op,
                Some(&format!(
                    "queued: {} operations running (at most {} at once), {} waiting with this one",
                    counts.running, counts.max, counts.queued
                )),
            );
        });
        let mut ending = work(&job);
        // An automatic apply that failed is retried (module `retry`); an
        // operator's operation resets the app's retries.
        crate::lifecycle::retry::ending(
            self,
            app,
            job.automatic.load(Ordering::SeqCst),
            &mut ending.finish,
            || {
                self.active_version(app)
                    .ok()
                    .map(|v| v.metadata.retry_policy())
            },
        );
        if ending.finish.outcome == Outcome::Interrupted {
            // Stopped at a checkpoint for the next leader: nothing is
            // written, so it finds the operation running, as after a
            // crash, and resumes it (`leading`).
            self.inner.work.charts.end(app.as_str(), op);
            drop(slot);
            if let Ok(mut running) = self.inner.work.running.lock()
                && running.get(app.as_str()).is_some_and(|(id, _)| *id == op)
            {
                running.remove(app.as_str());
            }
            self.inner
                .work
                .metrics
                .operation(operation.as_str(), Outcome::Interrupted.as_str());
            tracing::info!(target: "capstan::lease", "operation handed over to the next leader");
            return;
        }
        if ending.finish.outcome == Outcome::Aborted {
            self.post_abort(&job, &mut ending);
        }
        // No secret value an operation placed reaches its message.
        if let Some(message) = ending.finish.message.take() {
            ending.finish.message = Some(job.redact(&message));
        }
        // The operation rendered with the facts in effect: whatever the
        // last re-evaluation found is out of date; but a plugin may have
        // asked for another apply (`request-reapply`).
        let requested = job
            .requested_reapply
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match requested {
            Some(reason) => {
                self.inner
                    .work
                    .reapply_marks()
                    .insert(app.to_string(), reason);
                self.inner.work.metrics.reapply_needed();
            }
            None => {
                self.inner.work.reapply_marks().remove(app.as_str());
            }
        }
        // The charts' clock stops with the work.
        self.inner.work.charts.end(app.as_str(), op);
        self.inner
            .work
            .checkpoints
            .reach(&format!("{}:finishing", operation.as_str()));
        let outcome = ending.finish.outcome;
        // The work is done: its end must be recorded, or the app would stay
        // in its transitional state (busy) until the next start. A full
        // disk or a read-only state folder is waited out.
        let mut delay = std::time::Duration::from_millis(250);
        loop {
            match self.store().finish_operation(op, &ending.finish) {
                Ok(record) => {
                    tracing::info!(state = %record.state, outcome = %outcome,
                        message = record.message.as_deref().unwrap_or(""), "operation finished");
                    break;
                }
                Err(e) if e.is_out_of_storage() || e.is_busy_database() => {
                    tracing::warn!(error = %crate::lifecycle::Error::from(e).one_line(), retry_in = ?delay,
                        "could not record the end of the operation; retrying");
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(std::time::Duration::from_secs(5));
                }
                Err(e) => {
                    tracing::error!(error = %e, "could not record the end of the operation");
                    break;
                }
            }
        }
        // Its end is recorded: the next in line may start.
        drop(slot);
        self.inner
            .work
            .metrics
            .operation(operation.as_str(), outcome.as_str());
        self.inner
            .work
            .metrics
            .operation_took(operation.as_str(), started.elapsed());
        if let Ok(mut running) = self.inner.work.running.lock()
            && running.get(app.as_str()).is_some_and(|(id, _)| *id == op)
        {
            running.remove(app.as_str());
        }
        if let Some(version) = ending.drop_version {
            self.inner
                .work
                .checkpoints
                .reach(&format!("{}:dropping-version", operation.as_str()));
            let kept = self
                .store()
                .app(app)
                .ok()
                .and_then(|record| self.kept_versions(&record).ok())
                .is_some_and(|kept| kept.iter().any(|k| k.version == version));
            if !kept {
                self.drop_version(app, &version);
            }
        }
        if matches!(operation, Operation::Update | Operation::Rollback) {
            self.trim_versions(app);
        }
    }
}
