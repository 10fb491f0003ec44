//! The words the store records: app states, operations, outcomes and
//! override layers, each with a stable kebab-case spelling on disk and in
//! JSON.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where an app is in its life. The spellings (`as_str`) are stored on disk
/// and shown to operators; never change one, only add.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AppState {
    /// The bundle is being verified and stored.
    Uploading,
    /// Stored and ready to apply.
    Uploaded,
    /// Upload did not finish; only delete is useful.
    UploadFailed,
    /// Charts are being applied.
    Applying,
    /// Every chart group is applied.
    Applied,
    /// An apply, update or recovery failed part-way.
    ApplyFailed,
    /// Charts are being removed from the target.
    Removing,
    /// A remove failed part-way.
    RemoveFailed,
    /// Moving to the target version.
    Updating,
    /// An update failed and the previous version is being re-applied.
    Recovering,
    /// Not in use (kept for a superseded app).
    Inactive,
}

impl AppState {
    /// Every state, in declaration order.
    pub const ALL: [AppState; 11] = [
        AppState::Uploading,
        AppState::Uploaded,
        AppState::UploadFailed,
        AppState::Applying,
        AppState::Applied,
        AppState::ApplyFailed,
        AppState::Removing,
        AppState::RemoveFailed,
        AppState::Updating,
        AppState::Recovering,
        AppState::Inactive,
    ];

    /// The stable spelling, e.g. `upload-failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            AppState::Uploading => "uploading",
            AppState::Uploaded => "uploaded",
            AppState::UploadFailed => "upload-failed",
            AppState::Applying => "applying",
            AppState::Applied => "applied",
            AppState::ApplyFailed => "apply-failed",
            AppState::Removing => "removing",
            AppState::RemoveFailed => "remove-failed",
            AppState::Updating => "updating",
            AppState::Recovering => "recovering",
            AppState::Inactive => "inactive",
        }
    }

    /// True for the states an operation passes through (`uploading`,
    /// `applying`, `removing`, `updating`, `recovering`). An app found in
    /// one of them with no operation running was interrupted.
    pub fn is_transitional(self) -> bool {
        matches!(
            self,
            AppState::Uploading
                | AppState::Applying
                | AppState::Removing
                | AppState::Updating
                | AppState::Recovering
        )
    }

    /// The state an interrupted or failed operation lands in:
    /// `uploading` -> `upload-failed`, `applying`, `updating` and
    /// `recovering` -> `apply-failed`, `removing` -> `remove-failed`.
    /// A state that is not transitional is returned unchanged.
    pub fn failed_state_of(self) -> AppState {
        match self {
            AppState::Uploading => AppState::UploadFailed,
            AppState::Applying | AppState::Updating | AppState::Recovering => AppState::ApplyFailed,
            AppState::Removing => AppState::RemoveFailed,
            other => other,
        }
    }
}

impl fmt::Display for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that names no known value of one of the store's enums.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {word:?}")]
pub struct UnknownWord {
    /// What was being parsed (`app state`, `operation`, ...).
    pub kind: &'static str,
    /// The word as given.
    pub word: String,
}

fn parse_word<T: Copy>(
    kind: &'static str,
    word: &str,
    all: &[T],
    spell: fn(T) -> &'static str,
) -> Result<T, UnknownWord> {
    all.iter()
        .copied()
        .find(|candidate| spell(*candidate) == word)
        .ok_or_else(|| UnknownWord {
            kind,
            word: word.to_owned(),
        })
}

impl FromStr for AppState {
    type Err = UnknownWord;

    /// Parses the kebab-case spelling; anything else is [`UnknownWord`].
    fn from_str(word: &str) -> Result<Self, Self::Err> {
        parse_word("app state", word, &AppState::ALL, AppState::as_str)
    }
}

/// What an operator (or the daemon itself) asked to happen to an app; one
/// history entry per operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Operation {
    /// Verify and store a bundle.
    Upload,
    /// Apply (or re-apply) the active version.
    Apply,
    /// Remove the app's objects from the target.
    Remove,
    /// Move to a newer version, rolling back on failure.
    Update,
    /// Bring a failed app back to a working state.
    Recover,
    /// Startup reconciliation of an interrupted operation.
    Reconcile,
    /// Delete the app and its stored versions (never in history: the
    /// history goes with the app).
    Delete,
    /// Stop a running operation at its next step (ends that operation as
    /// [`Outcome::Aborted`]; no history entry of its own).
    Abort,
    /// Go back to a kept earlier version with the user overrides it had.
    Rollback,
    /// Stop the daemon's automatic operations for the app (`app pause`;
    /// a history entry only, the state is unchanged).
    Pause,
    /// Let them run again (`app resume`).
    Resume,
}

impl Operation {
    /// Every operation, in declaration order.
    pub const ALL: [Operation; 11] = [
        Operation::Upload,
        Operation::Apply,
        Operation::Remove,
        Operation::Update,
        Operation::Recover,
        Operation::Reconcile,
        Operation::Delete,
        Operation::Abort,
        Operation::Rollback,
        Operation::Pause,
        Operation::Resume,
    ];

    /// The stable spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Upload => "upload",
            Operation::Apply => "apply",
            Operation::Remove => "remove",
            Operation::Update => "update",
            Operation::Recover => "recover",
            Operation::Reconcile => "reconcile",
            Operation::Delete => "delete",
            Operation::Abort => "abort",
            Operation::Rollback => "rollback",
            Operation::Pause => "pause",
            Operation::Resume => "resume",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Operation {
    type Err = UnknownWord;

    fn from_str(word: &str) -> Result<Self, Self::Err> {
        parse_word("operation", word, &Operation::ALL, Operation::as_str)
    }
}

/// How an operation ended (or that it has not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Still in progress.
    Running,
    /// Did what was asked.
    Succeeded,
    /// Stopped by an error or a plugin's veto; the message says which.
    Failed,
    /// Stopped on the operator's request.
    Aborted,
    /// Cut short by a daemon restart; closed by reconciliation.
    Interrupted,
}

impl Outcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Outcome; 5] = [
        Outcome::Running,
        Outcome::Succeeded,
        Outcome::Failed,
        Outcome::Aborted,
        Outcome::Interrupted,
    ];

    /// The stable spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Running => "running",
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Aborted => "aborted",
            Outcome::Interrupted => "interrupted",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Outcome {
    type Err = UnknownWord;

    fn from_str(word: &str) -> Result<Self, Self::Err> {
        parse_word("outcome", word, &Outcome::ALL, Outcome::as_str)
    }
}

/// One stored override layer of a chart (chart defaults are not stored;
/// they live in the bundle). Static and system layers belong to one version
/// of the app; the user layer belongs to the app and survives updates.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "layer", rename_all = "kebab-case")]
pub enum OverrideLayer {
    /// Shipped in the bundle of `version`.
    Static {
        /// The app version whose bundle holds these values.
        version: String,
    },
    /// Computed by the plugins of `version`.
    System {
        /// The app version whose plugins computed these values.
        version: String,
    },
    /// Set by the operator; kept across versions.
    User,
}

impl OverrideLayer {
    /// The layer's kind as stored: `static`, `system` or `user`.
    pub fn kind(&self) -> &'static str {
        match self {
            OverrideLayer::Static { .. } => "static",
            OverrideLayer::System { .. } => "system",
            OverrideLayer::User => "user",
        }
    }

    /// The version a static or system layer belongs to; `None` for user.
    pub fn version(&self) -> Option<&str> {
        match self {
            OverrideLayer::Static { version } | OverrideLayer::System { version } => Some(version),
            OverrideLayer::User => None,
        }
    }

    /// Rebuilds a layer from its stored kind and version.
    ///
    /// # Errors
    /// [`UnknownWord`] for an unknown kind, or a version present where it
    /// must be absent (user) or absent where it is required.
    pub fn from_parts(kind: &str, version: Option<String>) -> Result<Self, UnknownWord> {
        match (kind, version) {
            ("static", Some(version)) => Ok(OverrideLayer::Static { version }),
            ("system", Some(version)) => Ok(OverrideLayer::System { version }),
            ("user", None) => Ok(OverrideLayer::User),
            (other, version) => Err(UnknownWord {
                kind: "override layer",
                word: match version {
                    Some(version) => format!("{other}@{version}"),
                    None => other.to_owned(),
                },
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_round_trips_through_its_spelling() {
        for state in AppState::ALL {
            assert_eq!(state.as_str().parse::<AppState>(), Ok(state));
            let json = serde_json::to_string(&state).unwrap();
            assert_eq!(json, format!("\"{}\"", state.as_str()));
        }
        assert_eq!("upload-failed".parse(), Ok(AppState::UploadFailed));
        assert!("UploadFailed".parse::<AppState>().is_err());
        assert!("".parse::<AppState>().is_err());
    }

    #[test]
    fn exactly_the_operation_states_are_transitional() {
        let transitional: Vec<_> = AppState::ALL
            .into_iter()
            .filter(|state| state.is_transitional())
            .collect();
        assert_eq!(
            transitional,
            [
                AppState::Uploading,
                AppState::Applying,
                AppState::Removing,
                AppState::Updating,
                AppState::Recovering
            ]
        );
    }

    #[test]
    fn failed_states_match_their_transitional_state() {
        use AppState::*;
        let expected = [
            (Uploading, UploadFailed),
            (Applying, ApplyFailed),
            (Removing, RemoveFailed),
            (Updating, ApplyFailed),
            (Recovering, ApplyFailed),
        ];
        for (from, to) in expected {
            assert_eq!(from.failed_state_of(), to, "{from}");
            assert!(!to.is_transitional());
        }
        for state in AppState::ALL.into_iter().filter(|s| !s.is_transitional()) {
            assert_eq!(state.failed_state_of(), state);
        }
    }

    #[test]
    fn operations_and_outcomes_round_trip() {
        for op in Operation::ALL {
            assert_eq!(op.as_str().parse::<Operation>(), Ok(op));
        }
        for outcome in Outcome::ALL {
            assert_eq!(outcome.as_str().parse::<Outcome>(), Ok(outcome));
        }
        assert!("roll-back".parse::<Operation>().is_err());
    }

    #[test]
    fn override_layers_rebuild_from_their_parts() {
        let layers = [
            OverrideLayer::Static {
                version: "1.0".into(),
            },
            OverrideLayer::System {
                version: "2.0".into(),
            },
            OverrideLayer::User,
        ];
        for layer in layers {
            let rebuilt =
                OverrideLayer::from_parts(layer.kind(), layer.version().map(str::to_owned));
            assert_eq!(rebuilt, Ok(layer));
        }
        assert!(OverrideLayer::from_parts("user", Some("1.0".into())).is_err());
        assert!(OverrideLayer::from_parts("system", None).is_err());
        assert!(OverrideLayer::from_parts("chart", None).is_err());
    }
}
