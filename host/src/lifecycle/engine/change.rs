//! Changing an app's version: update (with rollback on failure) and
//! rollback, what is undone when a change fails, and which versions are
//! kept.

use super::*;
use crate::bundle::{self, VerifiedBundle};
use crate::lifecycle::apply::apply_version;
use crate::lifecycle::engine::start::Ending;
use crate::lifecycle::engine::start::failed;
use crate::lifecycle::engine::start::with_note;
use crate::lifecycle::engine::versions::Capture;
use crate::lifecycle::job::{Apply, Job, NO_FLAGS, UserLayer};
use crate::lifecycle::operations::Started;
use crate::lifecycle::stored::StoredVersion;
use crate::lifecycle::{Error, rules};
use crate::model::{AppName, Hook, OnFailure};
use crate::store::{
    AppRecord, AppState, Finish, Operation, Outcome, OverrideLayer, TargetChange, UserSnapshot,
    VersionRecord,
};
use std::io::Read;

/// A failed change to undo ([`Job::undo_failed_change`]).
pub(super) struct Undo<'a> {
    /// The change as messages name it (`update to 2.0.0`).
    pub(super) change: String,
    /// The version the change failed to apply.
    pub(super) failed: &'a StoredVersion,
    /// The version applied again.
    pub(super) back_to: &'a StoredVersion,
    pub(super) how: UndoHow,
    /// The checkpoint prefix of the undoing apply.
    pub(super) phase: &'static str,
}

/// How an undo reads: an update rolls back to the old version (and the
/// failed new version is dropped); a rollback applies the version it left
/// again (which stays kept).
#[derive(Clone, Copy)]
pub(super) enum UndoHow {
    RollBack,
    ApplyAgain,
}

impl UndoHow {
    pub(super) fn doing(self, version: &str) -> String {
        match self {
            UndoHow::RollBack => format!("rolling back to {version}"),
            UndoHow::ApplyAgain => format!("applying {version} again"),
        }
    }

    pub(super) fn done(self, version: &str) -> String {
        match self {
            UndoHow::RollBack => format!("rolled back to {version}"),
            UndoHow::ApplyAgain => format!("{version} applied again"),
        }
    }

    pub(super) fn attempt(self, version: &str) -> String {
        match self {
            UndoHow::RollBack => format!("rollback to {version}"),
            UndoHow::ApplyAgain => format!("applying {version} again"),
        }
    }
}

/// What a forced update forces, one line each.
pub(super) fn forced_notes(active: &semver::Version, candidate: &bundle::Metadata) -> Vec<String> {
    let mut notes = Vec::new();
    if candidate.version < *active {
        notes.push(format!(
            "forced: a downgrade from {active} to {}",
            candidate.version
        ));
    } else if candidate.version == *active {
        notes.push(format!("forced: a reinstall of {active}"));
    }
    let from = &candidate.upgrades.from_versions;
    if !from.is_empty() && !from.iter().any(|spec| spec.matches(active)) {
        notes.push(format!(
            "forced: {} does not list {active} in upgrades.from_versions",
            candidate.version
        ));
    }
    notes
}

impl Lifecycle {
    /// Verifies an update bundle and starts moving the applied app to it;
    /// on failure the old version is applied again. `reuse_user_overrides`
    /// overrides the bundle's `maintain_user_overrides`.
    ///
    /// # Errors
    /// [`Error::Bundle`], [`Error::Upgrade`], unknown app, busy, illegal
    /// transition; nothing is changed then.
    pub fn update(
        &self,
        archive: impl Read,
        reuse_user_overrides: Option<bool>,
    ) -> Result<Started, Error> {
        self.update_with(archive, reuse_user_overrides, false, None, None)
    }

    /// [`Lifecycle::update`]; with `force`, also to an older version (a
    /// downgrade) or one whose `upgrades.from_versions` does not list the
    /// active version. The active version itself is refused, forced or not
    /// (the store's version-exists error; nothing is touched). What was forced is returned in
    /// [`Started::warnings`], logged, and kept in the operation's message.
    /// `source` is where the bundle was fetched from (as
    /// [`Lifecycle::upload_from`]); the finished update's note names it.
    /// `on_failure` overrides the new bundle's `on_failure` (`app update
    /// --on-failure`): `keep` leaves a failed update's new version
    /// applied as far as it got, with no rollback.
    ///
    /// # Errors
    /// As [`Lifecycle::update`].
    pub fn update_with(
        &self,
        archive: impl Read,
        reuse_user_overrides: Option<bool>,
        force: bool,
        source: Option<String>,
        on_failure: Option<OnFailure>,
    ) -> Result<Started, Error> {
        let mut capture = Capture::new(archive, self.inner.cluster.bundle_home.is_some());
        let (bundle, digest) = self.verify(&mut capture)?;
        let mut record = self.version_record(&bundle, &digest)?;
        let app = record.app.clone();
        let current = self.store().app(&app)?;
        let active =
            semver::Version::parse(&current.active_version).map_err(|e| Error::StoredBundle {
                app: app.to_string(),
                version: current.active_version.clone(),
                source: Box::new(e),
            })?;
        bundle::check_upgrade(&active, bundle.metadata(), force).map_err(|source| {
            Error::Upgrade {
                app: app.to_string(),
                from: current.active_version.clone(),
                to: record.version.clone(),
                source: Box::new(source),
            }
        })?;
        if record.version == current.active_version {
            // A forced reinstall of the active version cannot be staged
            // beside it (one stored record per version); refused before
            // anything is touched. The staging failure it used to meet
            // removed the active version's stored bundle (issue 29,
            // found by the API fuzzer); `app apply` applies it again.
            return Err(Error::Store(crate::store::Error::VersionExists {
                app,
                version: record.version,
            }));
        }
        let forced = if force {
            forced_notes(&active, bundle.metadata())
        } else {
            Vec::new()
        };
        let keep_user = reuse_user_overrides.unwrap_or(bundle.metadata().maintain_user_overrides);
        let on_failure = on_failure.unwrap_or(bundle.metadata().on_failure);
        record.source = self.keep_bundle(&record, capture, source)?;
        let op = self.store().begin_operation(
            &app,
            Operation::Update,
            rules::UPDATE_FROM,
            AppState::Updating,
        )?;
        self.inner.work.checkpoints.reach("update:begun");
        for note in &forced {
            tracing::warn!(app = %app, "{note}");
        }
        let staged = self
            .stage_update(bundle, &record, &current.active_version)
            .and_then(|()| {
                let old = self.stored(&app, &current.active_version)?;
                let new = self.stored(&app, &record.version)?;
                Ok((old, new))
            });
        let (old, new) = match staged {
            Ok(versions) => versions,
            Err(e) => {
                let _ = self.store().set_target_version(&app, None);
                // Only what this update staged: never the active version.
                if record.version != current.active_version {
                    let _ = self.store().delete_version(&app, &record.version);
                    let _ = std::fs::remove_dir_all(&record.bundle_dir);
                }
                let finish = Finish::failed(
                    AppState::Applied,
                    format!("update to {} failed: {}", record.version, e.one_line()),
                )
                .with_target(TargetChange::Discard);
                return Err(self.end_early(&app, op, Operation::Update, finish, e));
            }
        };
        let notes = forced.clone();
        let mut started = self.spawn(&app, op, Operation::Update, move |job| {
            if let Ok(mut warnings) = job.warnings.lock() {
                warnings.extend(notes);
            }
            update(job, &old, &new, keep_user, on_failure)
        });
        started.warnings = forced;
        Ok(started)
    }

    /// Starts going back to a kept earlier version of an applied app
    /// (`version`, or the one most recently left), with the user overrides
    /// it had when it was left. If that fails, the version it leaves is
    /// applied again with its own overrides.
    ///
    /// # Errors
    /// [`Error::Rollback`] when there is no kept version to go to (or the
    /// one named is not kept); unknown app, busy, illegal transition.
    pub fn rollback(&self, app: &AppName, version: Option<&str>) -> Result<Started, Error> {
        let record = self.store().app(app)?;
        let refuse = |reason: String| Error::Rollback {
            app: app.to_string(),
            reason,
        };
        if let Some(target) = &record.target_version {
            return Err(refuse(format!(
                "an update to {target} is pending; `capstan app recover {app}` first"
            )));
        }
        let kept = self.kept_versions(&record)?;
        let names = || {
            if kept.is_empty() {
                "none is kept".to_owned()
            } else {
                let list: Vec<&str> = kept.iter().map(|k| k.version.as_str()).collect();
                format!("kept: {}", list.join(", "))
            }
        };
        let snapshot = match version {
            Some(v) if v == record.active_version => {
                return Err(refuse(format!(
                    "{v} is the active version; `capstan app apply {app}` applies it again"
                )));
            }
            Some(v) => kept
                .iter()
                .find(|k| k.version == v)
                .cloned()
                .ok_or_else(|| refuse(format!("version {v} is not kept ({})", names())))?,
            None => kept
                .first()
                .cloned()
                .ok_or_else(|| refuse(format!("no earlier version is kept ({})", names())))?,
        };
        let current = self.stored(app, &record.active_version)?;
        let to = self.stored(app, &snapshot.version)?;
        let op = self.store().begin_operation(
            app,
            Operation::Rollback,
            rules::ROLLBACK_FROM,
            AppState::Updating,
        )?;
        self.inner.work.checkpoints.reach("rollback:begun");
        let staged = self
            .store()
            .save_user_snapshot(app, &record.active_version)
            .and_then(|()| self.store().set_target_version(app, Some(&to.version)));
        if let Err(e) = staged {
            let finish = Finish::failed(
                record.state,
                format!("rollback to {} failed: {e}", to.version),
            )
            .with_target(TargetChange::Discard);
            self.store().finish_operation(op, &finish)?;
            self.inner.work.metrics.operation("rollback", "failed");
            return Err(Error::Store(e));
        }
        let user = snapshot.charts;
        Ok(self.spawn(app, op, Operation::Rollback, move |job| {
            rollback(job, &current, &to, &user)
        }))
    }

    /// The versions `app rollback` can go to, most recently left first:
    /// neither active nor an update's target, left at least once (so their
    /// user overrides were saved), at most `keep_versions - 1` of them.
    pub(super) fn kept_versions(&self, record: &AppRecord) -> Result<Vec<UserSnapshot>, Error> {
        let stored = self.store().list_versions(&record.name)?;
        let mut kept: Vec<UserSnapshot> = self
            .store()
            .user_snapshots(&record.name)?
            .into_iter()
            .filter(|s| {
                s.version != record.active_version
                    && record.target_version.as_deref() != Some(s.version.as_str())
                    && stored.iter().any(|v| v.version == s.version)
            })
            .collect();
        kept.truncate(self.inner.policies.keep_versions.saturating_sub(1));
        Ok(kept)
    }

    /// Forgets the versions an app left that are beyond what is kept
    /// (`keep_versions`). Only versions that were once active are touched;
    /// one being staged by an update is not (it has no saved overrides).
    pub(super) fn trim_versions(&self, app: &AppName) {
        let Ok(record) = self.store().app(app) else {
            return;
        };
        let (Ok(kept), Ok(left)) = (
            self.kept_versions(&record),
            self.store().user_snapshots(app),
        ) else {
            return;
        };
        for snapshot in left {
            let in_use = snapshot.version == record.active_version
                || record.target_version.as_deref() == Some(snapshot.version.as_str())
                || kept.iter().any(|k| k.version == snapshot.version);
            if !in_use && self.store().version(app, &snapshot.version).is_ok() {
                tracing::info!(app = %app, version = %snapshot.version, keep = self.inner.policies.keep_versions,
                    "forgetting a version beyond the kept ones");
                self.drop_version(app, &snapshot.version);
            }
        }
    }

    pub(super) fn stage_update(
        &self,
        bundle: VerifiedBundle,
        record: &VersionRecord,
        active: &str,
    ) -> Result<(), Error> {
        if record.version != active && self.store().version(&record.app, &record.version).is_ok() {
            // A kept earlier version comes back as a new upload: the bundle
            // just verified replaces it (and its saved overrides).
            self.drop_version(&record.app, &record.version);
        }
        self.store().save_user_snapshot(&record.app, active)?;
        self.store().add_version(record)?;
        self.store_bundle(bundle, record)?;
        self.store()
            .set_target_version(&record.app, Some(&record.version))?;
        self.inner.work.checkpoints.reach("update:staged");
        Ok(())
    }
}

/// The work of an update: apply the new version; on failure roll back,
/// or with `on_failure: keep` leave it ([`keep_failed_update`]).
pub(super) fn update(
    job: &Job<'_>,
    old: &StoredVersion,
    new: &StoredVersion,
    keep_user: bool,
    on_failure: OnFailure,
) -> Ending {
    let request = Apply {
        version: new,
        replacing: Some(old),
        user: if keep_user {
            UserLayer::Stored
        } else {
            UserLayer::Dropped
        },
        flags: &NO_FLAGS,
        around: Some((Hook::PreUpdate, Hook::PostUpdate)),
        phase: "update",
    };
    let error = match apply_version(job, &request) {
        Ok(()) => return promote(job, old, new, keep_user),
        Err(e) => e,
    };
    // An abort or a hand-over ends as always (`recover` applies the old
    // version again); `keep` is for a failure.
    if on_failure == OnFailure::Keep && !matches!(error, Error::Aborted | Error::HandedOver) {
        return keep_failed_update(job, old, new, keep_user, &error);
    }
    undo_failed_change(
        job,
        &Undo {
            change: format!("update to {}", new.version),
            failed: new,
            back_to: old,
            how: UndoHow::RollBack,
            phase: "rollback",
        },
        &error,
    )
}

/// The work of a rollback: apply the kept version `to` with its saved
/// user overrides; on failure apply `current` again.
pub(super) fn rollback(
    job: &Job<'_>,
    current: &StoredVersion,
    to: &StoredVersion,
    user: &[(String, serde_json::Value)],
) -> Ending {
    let request = Apply {
        version: to,
        replacing: Some(current),
        user: UserLayer::Given(user),
        flags: &NO_FLAGS,
        around: Some((Hook::PreUpdate, Hook::PostUpdate)),
        phase: "rollback-to",
    };
    let error = match apply_version(job, &request) {
        Ok(()) => {
            if let Err(e) =
                job.inner
                    .services
                    .store
                    .replace_layer(&job.app, &OverrideLayer::User, user)
            {
                return Ending::new(failed(AppState::ApplyFailed, &Error::Store(e)));
            }
            let note = format!(
                "rolled back from {} to {} with the user overrides {} had",
                current.version, to.version, to.version
            );
            return Ending::new(with_note(
                Finish::succeeded(AppState::Applied)
                    .with_target(TargetChange::Promote)
                    .with_message(note),
                job.warnings_note(),
            ));
        }
        Err(e) => e,
    };
    undo_failed_change(
        job,
        &Undo {
            change: format!("rollback to {}", to.version),
            failed: to,
            back_to: current,
            how: UndoHow::ApplyAgain,
            phase: "rollback-undo",
        },
        &error,
    )
}

/// After a change (an update, a rollback) failed: an aborted change
/// ends there (`recover` applies the version it left again); else the
/// version it left is applied again with its stored user overrides.
pub(super) fn undo_failed_change(job: &Job<'_>, undo: &Undo<'_>, error: &Error) -> Ending {
    let (change, back) = (&undo.change, &undo.back_to.version);
    if matches!(error, Error::HandedOver) {
        // The next leader finishes it as it finishes any interrupted
        // change: `recover` applies the version it left again.
        return Ending::new(failed(AppState::ApplyFailed, error));
    }
    if matches!(error, Error::Aborted) {
        let note = format!("{change} aborted; `recover` applies {back} again");
        return Ending::new(
            Finish::failed(AppState::ApplyFailed, note).with_outcome(Outcome::Aborted),
        );
    }
    let reason = error.one_line();
    tracing::warn!(error = %reason, "{change} failed; {}", undo.how.doing(back));
    let note = format!("{change} failed: {reason}; {}", undo.how.doing(back));
    if let Err(e) =
        job.inner
            .services
            .store
            .advance_operation(job.op, AppState::Recovering, Some(&note))
    {
        return Ending::new(failed(AppState::ApplyFailed, &Error::Store(e)));
    }
    let request = Apply {
        version: undo.back_to,
        replacing: Some(undo.failed),
        user: UserLayer::Stored,
        flags: &NO_FLAGS,
        around: None,
        phase: undo.phase,
    };
    match apply_version(job, &request) {
        Ok(()) => Ending {
            finish: Finish {
                state: AppState::Applied,
                outcome: Outcome::Failed,
                message: Some(format!(
                    "{change} failed: {reason}; {}",
                    undo.how.done(back)
                )),
                target: TargetChange::Discard,
            },
            drop_version: match undo.how {
                UndoHow::RollBack => Some(undo.failed.version.clone()),
                UndoHow::ApplyAgain => None,
            },
        },
        Err(e) => Ending::new(Finish::failed(
            AppState::ApplyFailed,
            format!(
                "{change} failed: {reason}; {} failed: {}",
                undo.how.attempt(back),
                e.one_line()
            ),
        )),
    }
}

/// Drops the app's user overrides unless `keep_user` (an update that
/// does not keep them); the ending when the store refuses.
fn drop_user_layer(job: &Job<'_>, keep_user: bool) -> Option<Ending> {
    if keep_user {
        return None;
    }
    job.inner
        .services
        .store
        .replace_layer(&job.app, &OverrideLayer::User, &[])
        .err()
        .map(|e| Ending::new(failed(AppState::ApplyFailed, &Error::Store(e))))
}

/// A failed update with `on_failure: keep`: the new version becomes the
/// active one as far as it got, the app `apply-failed`, nothing rolled
/// back; the old version stays kept for `app rollback`, and the message
/// (in the history) says so.
pub(super) fn keep_failed_update(
    job: &Job<'_>,
    old: &StoredVersion,
    new: &StoredVersion,
    keep_user: bool,
    error: &Error,
) -> Ending {
    if let Some(ending) = drop_user_layer(job, keep_user) {
        return ending;
    }
    let reason = error.one_line();
    tracing::warn!(error = %reason, "update to {} failed; on_failure: keep, not rolled back", new.version);
    Ending::new(
        Finish::failed(
            AppState::ApplyFailed,
            format!(
                "update to {new} failed: {reason}; not rolled back (on_failure: keep): {new} stays \
                 applied as far as it got; `app apply` tries it again, `app rollback` goes back \
                 to {old}",
                new = new.version,
                old = old.version,
            ),
        )
        .with_target(TargetChange::Promote),
    )
}

pub(super) fn promote(
    job: &Job<'_>,
    old: &StoredVersion,
    new: &StoredVersion,
    keep_user: bool,
) -> Ending {
    if let Some(ending) = drop_user_layer(job, keep_user) {
        return ending;
    }
    let mut note = format!("updated from {} to {}", old.version, new.version);
    if let Ok(record) = job.inner.services.store.version(&job.app, &new.version)
        && let Some(source) = record.source
    {
        note.push_str(&format!(" from {source}"));
    }
    Ending {
        finish: with_note(
            Finish::succeeded(AppState::Applied)
                .with_target(TargetChange::Promote)
                .with_message(note),
            job.warnings_note(),
        ),
        drop_version: Some(old.version.clone()),
    }
}
