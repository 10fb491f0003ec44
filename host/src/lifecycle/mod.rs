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
//! The pipeline of an apply (`pipeline`): facts -> `semantic-check` hook
//! -> system overrides from the app's own plugins -> `pre-apply` -> per
//! chart group, per chart: merge the override layers, render, apply the
//! sticky workload decisions, plan against what is applied and apply
//! through the target -> prune charts the version dropped -> `post-apply`.
//!
//! Must not touch: HTTP (that is `api`), bundle bytes before they are
//! verified, or the cluster except through [`crate::kube::ApplyTarget`].

mod checkpoint;
mod engine;
mod error;
mod facts;
mod metrics;
mod overrides;
mod paths;
mod pipeline;
pub mod rules;
#[cfg(test)]
mod tests;
mod volumes;

pub use checkpoint::{Checkpoints, DELAY_ENV, PAUSE_ENV};
pub use engine::{AppDetails, Lifecycle, Options, Started};
pub use error::{Error, ErrorClass};
pub use metrics::Metrics;
pub use overrides::{ChartOverrides, LayerValues, OverrideSet, OverrideSummary};
pub use paths::StatePaths;
pub use pipeline::ChartDiff;
pub use volumes::{VOLUMES_APP, VolumeRequest, VolumeView};
