//! The small trait the lifecycle implements for the loops that run beside
//! it: leading ([`super::leading`]), re-evaluation ([`super::reevaluate`])
//! and resuming ([`super::resume`]) start and read operations through
//! [`Operations`], never through the lifecycle's type, so none of them
//! imports the engine and the engine imports each of them.
//!
//! Also what starting an operation answers ([`Started`]) and what an
//! operation was asked, as kept with its history entry for resuming it
//! ([`Request`]).

use std::sync::Arc;
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};

use super::Error;
use super::apply::ChartDiff;
use super::context::Inner;
use super::stored::StoredVersion;
use crate::model::{AppName, ApplyRequest, Trigger};
use crate::store::{AppRecord, OperationId, Reconciled};

/// What the loops beside the lifecycle may ask of it.
pub(crate) trait Operations: Sized + Send + Sync + 'static {
    /// What every operation shares.
    fn shared(&self) -> &Arc<Inner>;

    /// The lifecycle over `inner`, for a loop that holds only a weak
    /// reference between its rounds.
    fn of(inner: Arc<Inner>) -> Self;

    /// Whether this daemon may start work (not a follower).
    fn may_work(&self) -> bool;

    /// Moves apps left in a transitional state to their failed state.
    fn reconcile(&self) -> Result<Vec<Reconciled>, Error>;

    /// Every app.
    fn list(&self) -> Result<Vec<AppRecord>, Error>;

    /// What applying `app` again would change.
    fn diff(&self, app: &AppName) -> Result<Vec<ChartDiff>, Error>;

    /// The app's active version.
    fn active_version(&self, app: &AppName) -> Result<StoredVersion, Error>;

    /// The `semantic-check` hook's veto, asked without its actions.
    fn semantic_veto(&self, app: &AppName) -> Result<Option<String>, Error>;

    /// The `evaluate-reapply` hook for the `triggers` the app declares.
    fn evaluate_triggers(
        &self,
        app: &AppName,
        version: &StoredVersion,
        triggers: &[Trigger],
    ) -> Result<Option<String>, Error>;

    /// Starts the operation `start` names on `app`.
    fn start(&self, app: &AppName, start: Start) -> Result<Started, Error>;
}

/// An operation the loops start, with what it is asked and why: `note`
/// says why no person asked for it (an automatic re-apply's reason, a
/// resumption).
#[derive(Debug)]
pub(crate) enum Start {
    /// An apply with the operator's flags; `resumes` counts the
    /// resumptions of an interrupted apply.
    Apply {
        flags: ApplyRequest,
        note: Option<String>,
        resumes: u32,
    },
    /// A remove, as the kept request asked it.
    Remove {
        request: Request,
        note: Option<String>,
    },
    /// A recover.
    Recover {
        request: Request,
        note: Option<String>,
    },
}

/// An operation that was started.
#[derive(Debug)]
pub struct Started {
    /// The app as the operation left it at its start.
    pub app: AppRecord,
    /// The operation's id (its history entry).
    pub operation: OperationId,
    /// What the operator should know about it at once (a forced
    /// downgrade, for one).
    pub warnings: Vec<String>,
    pub(crate) handle: Option<JoinHandle<()>>,
}

impl Started {
    /// Waits until the operation has finished.
    pub fn wait(mut self) {
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// What an operation was asked, kept with its history entry so that a
/// new leader can start it again. Its fields are the stored format (older
/// records read as they were written), which is why the apply's flags are
/// copied in and out ([`Request::apply`]) rather than flattened: the
/// wire's type refuses unknown fields, this record must not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Request {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rekind: Vec<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub adopt: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recreate: Vec<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub force: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub force_conflicts: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub keep_secrets: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resumes: u32,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Request {
    /// The record of an apply asked with `flags`.
    pub fn of_apply(flags: &ApplyRequest, resumes: u32) -> Request {
        Request {
            rekind: flags.rekind.clone(),
            adopt: flags.adopt,
            recreate: flags.recreate.clone(),
            force_conflicts: flags.force_conflicts,
            resumes,
            ..Request::default()
        }
    }

    /// The apply's flags this record kept.
    pub fn apply(&self) -> ApplyRequest {
        ApplyRequest {
            rekind: self.rekind.clone(),
            adopt: self.adopt,
            recreate: self.recreate.clone(),
            force_conflicts: self.force_conflicts,
        }
    }
}
