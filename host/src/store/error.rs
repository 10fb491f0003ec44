//! The store's error type.

use std::path::PathBuf;

use super::records::OperationId;
use super::state::{AppState, Operation};
use crate::model::AppName;

/// What can go wrong reading or writing the durable state. Operator
/// mistakes (unknown app, app exists, illegal transition, busy) are their own
/// variants so the API can map them to 4xx answers; everything else is an
/// internal failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The state directory could not be created.
    #[error("creating state directory {path}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The filesystem error.
        #[source]
        source: std::io::Error,
    },
    /// SQLite could not open the database file.
    #[error("opening store at {path}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// Setting the journal mode, sync level, foreign keys or busy timeout
    /// failed.
    #[error("configuring store at {path} ({setting})")]
    Configure {
        /// The database file.
        path: PathBuf,
        /// The setting that failed, e.g. `journal_mode=WAL`.
        setting: &'static str,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// SQLite would not switch the file to write-ahead logging.
    #[error("store at {path} cannot use write-ahead logging (journal mode stays {mode})")]
    WalUnavailable {
        /// The database file.
        path: PathBuf,
        /// The journal mode SQLite kept.
        mode: String,
    },
    /// The file is a SQLite database of some other program.
    #[error("{path} is not a capstan store (application id {found:#x})")]
    ForeignDatabase {
        /// The database file.
        path: PathBuf,
        /// The application id found in its header.
        found: i32,
    },
    /// The database was written by a newer capstan; it is left untouched.
    #[error("store at {path} has schema version {found}, newer than this capstan's {known}")]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// The schema version in the file.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// A migration step failed; the whole migration was rolled back.
    #[error("migrating store at {path} from schema version {from} to {to}")]
    Migrate {
        /// The database file.
        path: PathBuf,
        /// The version before.
        from: i64,
        /// The version the failing step would have reached.
        to: i64,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// No app has this name.
    #[error("unknown app \"{app}\"")]
    UnknownApp {
        /// The name asked for.
        app: AppName,
    },
    /// An upload named an app that is already stored.
    #[error("app \"{app}\" already exists")]
    AppExists {
        /// The app.
        app: AppName,
    },
    /// The app has no such version stored.
    #[error("app \"{app}\" has no version \"{version}\"")]
    UnknownVersion {
        /// The app.
        app: AppName,
        /// The version asked for.
        version: String,
    },
    /// The version is already stored for the app.
    #[error("app \"{app}\" already has version \"{version}\"")]
    VersionExists {
        /// The app.
        app: AppName,
        /// The version.
        version: String,
    },
    /// A version cannot be deleted while it is active or the update target.
    #[error("version \"{version}\" of app \"{app}\" is in use")]
    VersionInUse {
        /// The app.
        app: AppName,
        /// The version.
        version: String,
    },
    /// The app's state does not allow the operation.
    #[error("cannot {operation} app \"{app}\" while it is {state}")]
    IllegalTransition {
        /// The app.
        app: AppName,
        /// Its current state.
        state: AppState,
        /// What was asked.
        operation: Operation,
    },
    /// Another operation is running on the app.
    #[error("app \"{app}\" is busy ({state}); {operation} must wait until it finishes")]
    Busy {
        /// The app.
        app: AppName,
        /// The transitional state of the running operation.
        state: AppState,
        /// What was asked.
        operation: Operation,
    },
    /// An operation must move the app into a transitional state.
    #[error("{operation} cannot move app \"{app}\" to {state}, which is not a transitional state")]
    NotTransitional {
        /// The app.
        app: AppName,
        /// What was asked.
        operation: Operation,
        /// The state given.
        state: AppState,
    },
    /// An operation must finish in a settled (not transitional) state and a
    /// final outcome.
    #[error("operation {id} cannot finish in state {state} with outcome {outcome}")]
    NotFinal {
        /// The operation.
        id: OperationId,
        /// The state given.
        state: AppState,
        /// The outcome given.
        outcome: super::state::Outcome,
    },
    /// No operation has this id.
    #[error("unknown operation {id}")]
    UnknownOperation {
        /// The id asked for.
        id: OperationId,
    },
    /// The operation already finished (or was closed by reconciliation).
    #[error("operation {id} on app \"{app}\" has already finished")]
    OperationFinished {
        /// The operation.
        id: OperationId,
        /// Its app.
        app: AppName,
    },
    /// A volume with this name already exists.
    #[error("volume \"{name}\" already exists")]
    VolumeExists {
        /// The volume's name.
        name: String,
    },
    /// An update finished with [`TargetChange::Promote`] but the app has
    /// no target version.
    ///
    /// [`TargetChange::Promote`]: super::records::TargetChange::Promote
    #[error("app \"{app}\" has no target version to promote")]
    NoTargetVersion {
        /// The app.
        app: AppName,
    },
    /// A path to store is not valid UTF-8 (the store keeps paths as text).
    #[error("path {path:?} is not valid UTF-8")]
    NonUtf8Path {
        /// The path.
        path: PathBuf,
    },
    /// A request the store cannot carry out as given (e.g. one chart
    /// twice in a replaced layer).
    #[error("{context}: {reason}")]
    Invalid {
        /// What the store was doing.
        context: String,
        /// What is wrong.
        reason: String,
    },
    /// The app's document would pass the backend's size limit even with
    /// its finished history trimmed; nothing was written.
    #[error(
        "app \"{app}\" would take {size} bytes, over the store's limit of {limit} bytes for one \
         app (its versions' metadata, overrides, decisions and inventories); remove overrides or \
         old versions"
    )]
    TooLarge {
        /// The app.
        app: AppName,
        /// The size the write would reach.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The document changed since this daemon last wrote it: another
    /// writer (a daemon that leads now) came first. Nothing was written.
    #[error(
        "{what} was changed by another writer since this daemon last wrote it (it holds \
         resourceVersion {expected}); not written — another daemon may lead now"
    )]
    Conflict {
        /// The document (`app "x"`).
        what: String,
        /// The version this daemon wrote last.
        expected: String,
    },
    /// An earlier write was refused as [`Error::Conflict`]: this daemon
    /// writes nothing more until it leads again.
    #[error(
        "this daemon stopped writing: another writer changed the state it last wrote, so another \
         daemon may lead now; it writes again once it leads again"
    )]
    Fenced,
    /// This daemon does not lead (cluster mode): it writes nothing.
    #[error("this daemon does not lead; only the leader writes the state")]
    NotLeading,
    /// The backend (the API server) failed.
    #[error("{context}")]
    Backend {
        /// What the store was doing.
        context: String,
        /// What went wrong.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// SQLite failed while doing something.
    #[error("database error while {context}")]
    Database {
        /// What the store was doing, naming the app or volume.
        context: String,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
}

impl Error {
    /// SQLite's error code, for the errors that carry one.
    fn sqlite_code(&self) -> Option<rusqlite::ErrorCode> {
        match self {
            Error::Database { source, .. }
            | Error::Open { source, .. }
            | Error::Configure { source, .. }
            | Error::Migrate { source, .. } => source.sqlite_error_code(),
            _ => None,
        }
    }

    /// True when SQLite could not write because the disk is full or the
    /// file system is read-only (or failed an I/O): the database is
    /// unchanged, and the same write may succeed once space is back.
    pub fn is_out_of_storage(&self) -> bool {
        matches!(
            self.sqlite_code(),
            Some(
                rusqlite::ErrorCode::DiskFull
                    | rusqlite::ErrorCode::ReadOnly
                    | rusqlite::ErrorCode::SystemIoFailure
            )
        )
    }

    /// True when SQLite reported the database locked or busy beyond the busy
    /// timeout: another process holds it, and a retry may succeed.
    pub fn is_busy_database(&self) -> bool {
        matches!(
            self.sqlite_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    }
}

/// Adds what the store was doing to a SQLite error.
pub(crate) trait Context<T> {
    /// Wraps an error as [`Error::Database`] with the context `what()`.
    fn context(self, what: impl FnOnce() -> String) -> Result<T, Error>;
}

impl<T> Context<T> for Result<T, rusqlite::Error> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, Error> {
        self.map_err(|source| Error::Database {
            context: what(),
            source,
        })
    }
}
