//! The app state machine: upload, apply, remove, delete, update with
//! rollback, abort and recover, the lifecycle hooks around them, and the
//! reconciliation run at start.
//!
//! Owns the order of every step of an operation and which states each
//! operation may start from ([`rules`]). An operation is started in one
//! store transaction ([`crate::store::Store::begin_operation`]), which is
//! where a second operation on the same app is refused as busy; long
//! operations then run on their own thread, record their progress in the
//! store and end in exactly one [`crate::store::Store::finish_operation`].
//! A crash anywhere leaves the app in a transitional state, which
//! [`Lifecycle::open`] moves to its failed state before anything is served.
//!
//! An apply is a pure *plan* and an effectful *run*. `run` loads the
//! version's plugins and the facts, runs `semantic-check`, computes the
//! system overrides, and for every enabled chart reads what planning needs
//! (its files, its layers, the stored decisions, the plugins' answers);
//! `plan` turns that into the desired objects and the new decisions and
//! writes nothing (`app diff` is planning alone). Then `pre-apply`, then
//! the commit (decisions and system overrides stored), then per chart
//! group, per chart: plan against what is applied and apply through the
//! target -> prune charts the version dropped -> `post-apply`.
//!
//! Module map: `admit` (the content checks of a verified bundle, before
//! it is recorded), `engine` (the operations and their state rules), `run`
//! (the steps), `plan` (pure), `context` (what operations share),
//! `stored` (a stored version), `state_dir` (the state folder),
//! `progress` (where each chart of an operation stands),
//! `lookup` (what a connected render reads from the target),
//! `facts_source` and `cluster_facts` (where facts come from),
//! `reevaluate` (apps planned again when the facts change), `leading`
//! and `resume` (cluster mode: who works, and handing operations from one
//! leader to the next), `actions`
//! (contract 0.2 hook actions under the operator's policy, the owned
//! release, the `status` loop), `secret_values` (values by reference and
//! generated secrets at render),
//! `bundleless` (a forced remove of an app whose bundle cannot be read),
//! `pause` (whether the daemon starts anything on its own),
//! `overrides`, `volumes`, `facts`, `checkpoint`, `metrics`.
//!
//! Must not touch: HTTP (that is `api`), bundle bytes before they are
//! verified, or the cluster except through [`crate::kube::ApplyTarget`].

mod actions;
mod admit;
mod apply;
mod bundle_home;
mod bundleless;
mod checkpoint;
mod cluster_facts;
mod context;
mod drift;
mod drifted;
mod engine;
mod error;
mod facts;
mod facts_source;
mod job;
mod leading;
mod lookup;
mod metrics;
mod operations;
mod overrides;
mod owned;
mod pause;
mod plan;
mod progress;
mod reevaluate;
mod resume;
mod retries;
mod retry;
pub mod rules;
mod slots;
mod state_dir;
mod stored;
#[cfg(test)]
mod tests;
mod triggers;
mod volumes;

pub use actions::{MAX_PATCHED_OVERRIDES_BYTES, merge_patch};
pub use admit::validate_plugin;
pub use apply::ChartDiff;
pub use bundle_home::{BundleHome, RegistryHome};
pub use checkpoint::{Checkpoints, DELAY_ENV, PAUSE_ENV};
pub use cluster_facts::{ClusterFacts, ClusterFactsOptions, Overlay, POLL_INTERVAL};
pub use engine::{
    AppDetails, ChartSummary, DEFAULT_KEEP_VERSIONS, Drifted, Lifecycle, Options, VersionSummary,
};
pub use error::{Error, ErrorClass};
pub use facts::default_facts;
pub use facts_source::{FactsSource, FactsView, StaticFacts};
pub use leading::{Leading, Role};
pub use metrics::{DurationHistogram, Metrics, OPERATION_BUCKETS};
pub use operations::Started;
pub use overrides::{ChartOverrides, LayerValues, OverrideSet, OverrideSummary};
pub use owned::OWNED_CHART;
pub use progress::{ChartProgress, ChartState, OperationCharts};
pub use reevaluate::DEBOUNCE;
pub use resume::MAX_RESUMES;
pub use slots::{DEFAULT_MAX_OPERATIONS, SlotCounts};
pub use state_dir::{StatePaths, lock_folder};
pub use triggers::{
    MAX_EVENT_DETAILS, MAX_EVENT_VALUE, PlatformEventOutcome, PlatformEventRequest,
};
pub use volumes::{VOLUMES_APP, VolumeRequest, VolumeView};
