//! What can go wrong in an operation, and which kind of wrong it is (the
//! API turns the kind into an HTTP status).

use crate::model::Hook;
use crate::store;

/// Everything that can stop an operation, one variant per failing step.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store refused or failed (unknown app, busy, illegal transition,
    /// database error).
    #[error(transparent)]
    Store(#[from] store::Error),
    /// The bundle was rejected: signature, trust, format or limits.
    #[error("bundle rejected")]
    Bundle(#[source] Box<crate::bundle::Error>),
    /// The bundle's name is not a valid app name for the store.
    #[error("bundle names app {name:?}, which is not a valid app name")]
    AppName {
        /// The name in the bundle.
        name: String,
    },
    /// An update bundle is for another app than the one being updated.
    #[error("the update bundle is for app {bundle}, not {app}")]
    WrongApp {
        /// The app named in the request.
        app: String,
        /// The app the bundle is for.
        bundle: String,
    },
    /// An update bundle may not replace the active version.
    #[error("app {app} cannot be updated from {from} to {to}")]
    Upgrade {
        /// The app.
        app: String,
        /// Its active version.
        from: String,
        /// The bundle's version.
        to: String,
        /// Why not.
        #[source]
        source: Box<crate::bundle::Error>,
    },
    /// A stored bundle could not be read back, or no longer matches its
    /// signed `MANIFEST` (its files were removed or damaged behind the
    /// daemon's back); the cause names the file.
    #[error("stored bundle of {app} {version} is damaged")]
    StoredBundle {
        /// The app.
        app: String,
        /// The version.
        version: String,
        /// What failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The bundle registry of cluster mode failed: keeping an upload's
    /// archive there, or fetching one this replica lacks.
    #[error("bundle of {app} {version}: {reason}")]
    BundleHome {
        /// The app.
        app: String,
        /// The version.
        version: String,
        /// What failed.
        reason: String,
    },
    /// A rollback has nowhere to go: no kept earlier version, the one named
    /// is not kept, or an update is pending.
    #[error("cannot roll back {app}: {reason}")]
    Rollback {
        /// The app.
        app: String,
        /// Why not, with what is kept.
        reason: String,
    },
    /// A chart the request names is not one of the app's charts.
    #[error("app {app} has no chart {chart:?}")]
    UnknownChart {
        /// The app.
        app: String,
        /// The chart asked for.
        chart: String,
    },
    /// A platform event's name or details are not acceptable.
    #[error("platform event {name:?}: {reason}")]
    BadPlatformEvent {
        /// The event's name (cut at 64 characters).
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A component named by `--rekind` is not one of the app's components.
    #[error("app {app} has no component {component:?}")]
    UnknownComponent {
        /// The app.
        app: String,
        /// The component asked for.
        component: String,
    },
    /// Overrides given by the operator are not valid YAML or `--set` syntax.
    #[error("invalid overrides: {reason}")]
    InvalidOverrides {
        /// What was wrong, with the line where known.
        reason: String,
    },
    /// The platform's Kubernetes version is outside the range the bundle
    /// supports.
    #[error("app {app} supports Kubernetes {range}, the platform runs {version}")]
    KubernetesUnsupported {
        /// The app.
        app: String,
        /// The supported range, e.g. `1.28 to 1.34`.
        range: String,
        /// The platform's version.
        version: String,
    },
    /// A plugin's hook vetoed the operation.
    #[error("plugin {plugin} vetoed the {hook} hook: {reason}")]
    Vetoed {
        /// The plugin.
        plugin: String,
        /// The hook.
        hook: Hook,
        /// The plugin's reason.
        reason: String,
    },
    /// A plugin's hook asked for an action the operator's policy does not
    /// allow; nothing of its answer was done.
    #[error("plugin {plugin}'s {hook} hook asked to {action}: denied by rule {rule}: {reason}")]
    ActionDenied {
        /// The plugin's path in the bundle.
        plugin: String,
        /// The hook.
        hook: Hook,
        /// The request, on one line.
        action: String,
        /// The rule that refused it.
        rule: &'static str,
        /// Why.
        reason: String,
    },
    /// A plugin's secret value could not be placed: its source is missing
    /// or not allowed, or its path does not fit the values.
    #[error("plugin {plugin}, chart {chart}: secret value: {reason}")]
    SecretValue {
        /// The plugin's path in the bundle.
        plugin: String,
        /// The chart.
        chart: String,
        /// Why.
        reason: String,
    },
    /// A plugin's `status` hook said a release failed, or it stayed not
    /// ready past the chart's timeout.
    #[error("plugin {plugin}'s status hook for release {release}: {reason}")]
    StatusFailed {
        /// The plugin's path in the bundle.
        plugin: String,
        /// The release (chart).
        release: String,
        /// Why.
        reason: String,
    },
    /// A plugin could not be loaded or a call to it failed.
    #[error("plugin {plugin} failed during {step}")]
    Plugin {
        /// The plugin's path in the bundle.
        plugin: String,
        /// What it was asked to do.
        step: String,
        /// The sandbox's typed error.
        #[source]
        source: Box<crate::sandbox::Error>,
    },
    /// Rendering a chart failed.
    #[error("rendering chart {chart} failed")]
    Render {
        /// The chart.
        chart: String,
        /// The renderer's error.
        #[source]
        source: Box<crate::render::Error>,
    },
    /// Transforming the chart's workloads by their decisions failed.
    #[error("workload transform of chart {chart} failed")]
    Workload {
        /// The chart.
        chart: String,
        /// The transform's error.
        #[source]
        source: Box<crate::workload::Error>,
    },
    /// Reading, planning or applying the chart's objects failed.
    #[error("applying chart {chart} failed")]
    Kube {
        /// The chart.
        chart: String,
        /// The target's or planner's error.
        #[source]
        source: Box<crate::kube::Error>,
    },
    /// The app is in the middle of an operation that reads what the
    /// request would change.
    #[error("app {app} is busy ({state}); try again when it finishes")]
    Busy {
        /// The app.
        app: String,
        /// Its transitional state.
        state: crate::store::AppState,
    },
    /// The operator aborted the operation.
    #[error("aborted by the operator")]
    Aborted,
    /// The daemon is shutting down in cluster mode: the operation stopped
    /// at a checkpoint, left running in the store for the next leader to
    /// resume.
    #[error("stopped at a checkpoint to hand over to the next leader")]
    HandedOver,
    /// The daemon may not start an operation on its own for the app
    /// (module `pause`); an operator's request is never refused so.
    #[error("not started for app {app}: {reason}")]
    AutomaticPaused {
        /// The app.
        app: String,
        /// Why.
        reason: String,
    },
    /// The reason given to `app pause` or `app resume` is too long or
    /// holds control characters.
    #[error("pause reason refused: {problem}")]
    BadPauseReason {
        /// What is wrong with it.
        problem: String,
    },
    /// Abort was asked for an app with no abortable operation running.
    #[error("app {app} has no operation running that can be aborted")]
    NothingToAbort {
        /// The app.
        app: String,
    },
    /// A local volume request was refused.
    #[error("volume {name}: {reason}")]
    Volume {
        /// The volume.
        name: String,
        /// Why.
        reason: String,
    },
    /// No volume has this name.
    #[error("no volume {name:?}")]
    UnknownVolume {
        /// The name asked for.
        name: String,
    },
    /// A volume cannot be removed while apps mount it.
    #[error("volume {name} is in use by {users} (remove those apps first, or use --force)")]
    VolumeInUse {
        /// The volume.
        name: String,
        /// `app/component`, comma separated.
        users: String,
    },
    /// Local file handling in the state folder failed.
    #[error("{what}")]
    Io {
        /// What was being done, naming the path.
        what: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The plugin engine (wasmtime, its epoch ticker) could not start.
    #[error("starting the plugin engine")]
    Engine(#[source] Box<crate::sandbox::Error>),
    /// The compiled-plugin cache folder could not be opened.
    #[error("opening the plugin cache {path}")]
    PluginCache {
        /// The cache folder.
        path: String,
        /// What failed.
        #[source]
        source: Box<crate::sandbox::Error>,
    },
    /// The operating system gave no random bytes for the daemon's secret.
    #[error("making the daemon secret {path}")]
    Randomness {
        /// The secret's file.
        path: String,
        /// What failed.
        #[source]
        source: getrandom::Error,
    },
    /// A worker thread of an operation (a chart of a parallel group)
    /// panicked; the operation fails, the daemon goes on.
    #[error("{what} panicked")]
    WorkerPanicked {
        /// Which worker.
        what: String,
    },
    /// A lock shared by operations was poisoned by a thread that panicked
    /// while holding it.
    #[error("{what} is unusable: a thread panicked while holding its lock")]
    Poisoned {
        /// Which table.
        what: &'static str,
    },
    /// An operation that had begun failed before its work started (a
    /// stored version that is missing or damaged, a component that is not
    /// the app's, a bundle that could not be stored); it was finished at
    /// once, leaving the app in `state`.
    #[error("{operation} of {app} failed; the app is {state}")]
    Ended {
        /// The operation.
        operation: store::Operation,
        /// The app.
        app: String,
        /// The state the operation left the app in.
        state: store::AppState,
        /// Why it failed.
        #[source]
        source: Box<Error>,
    },
    /// The state folder is held by another running daemon.
    #[error("state folder {path} is in use by another capstan daemon")]
    StateLocked {
        /// The folder.
        path: String,
    },
}

/// How an error should be reported to a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The request was wrong (bad bundle, bad overrides, unknown chart).
    BadRequest,
    /// The app (or volume) does not exist.
    NotFound,
    /// The request conflicts with the app's state (busy, exists, illegal
    /// transition).
    Conflict,
    /// The operation ran and failed (a veto, a plugin fault, a render
    /// error): the request was fine.
    Failed,
    /// Something is wrong with the daemon's own state.
    Internal,
}

impl Error {
    /// The class of this error.
    pub fn class(&self) -> ErrorClass {
        use store::Error as S;
        match self {
            Error::Store(S::UnknownApp { .. } | S::UnknownVersion { .. }) => ErrorClass::NotFound,
            Error::Store(
                S::AppExists { .. }
                | S::VersionExists { .. }
                | S::Busy { .. }
                | S::IllegalTransition { .. }
                | S::VersionInUse { .. }
                | S::VolumeExists { .. },
            ) => ErrorClass::Conflict,
            // A damaged stored version is this app's state, not the
            // daemon's: the request conflicts with it.
            Error::StoredBundle { .. } => ErrorClass::Conflict,
            Error::BundleHome { .. } => ErrorClass::Failed,
            // An operation that ended early is a state of its app: never
            // an internal error.
            Error::Ended { source, .. } => match source.class() {
                ErrorClass::Internal => ErrorClass::Conflict,
                class => class,
            },
            Error::Store(_) | Error::Io { .. } => ErrorClass::Internal,
            Error::StateLocked { .. }
            | Error::Engine(_)
            | Error::PluginCache { .. }
            | Error::Randomness { .. }
            | Error::WorkerPanicked { .. }
            | Error::Poisoned { .. } => ErrorClass::Internal,
            Error::Bundle(_)
            | Error::AppName { .. }
            | Error::WrongApp { .. }
            | Error::InvalidOverrides { .. }
            | Error::UnknownComponent { .. }
            | Error::BadPlatformEvent { .. }
            | Error::BadPauseReason { .. }
            | Error::Volume { .. } => ErrorClass::BadRequest,
            Error::UnknownChart { .. } | Error::UnknownVolume { .. } => ErrorClass::NotFound,
            Error::VolumeInUse { .. } => ErrorClass::Conflict,
            Error::Upgrade { .. }
            | Error::Rollback { .. }
            | Error::NothingToAbort { .. }
            | Error::AutomaticPaused { .. }
            | Error::Busy { .. } => ErrorClass::Conflict,
            Error::Vetoed { .. }
            | Error::ActionDenied { .. }
            | Error::SecretValue { .. }
            | Error::StatusFailed { .. }
            | Error::KubernetesUnsupported { .. }
            | Error::Plugin { .. }
            | Error::Render { .. }
            | Error::Workload { .. }
            | Error::Kube { .. }
            | Error::Aborted
            | Error::HandedOver => ErrorClass::Failed,
        }
    }

    /// The error an [`Error::Ended`] wraps, else this one.
    pub fn cause(&self) -> &Error {
        match self {
            Error::Ended { source, .. } => source.cause(),
            other => other,
        }
    }

    /// The error and its causes on one line, `a: b: c`, for a message kept
    /// on the app and shown by the CLI.
    pub fn one_line(&self) -> String {
        let mut line = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !line.ends_with(&text) {
                line.push_str(": ");
                line.push_str(&text);
            }
            source = cause.source();
        }
        line
    }
}
