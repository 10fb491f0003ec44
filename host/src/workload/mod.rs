//! Workload polymorphism: whether a component runs as a Deployment or a
//! StatefulSet, the sticky decision of that kind, and the transforms that
//! turn a rendered Deployment into what was decided (a StatefulSet with a
//! headless Service and claim templates, or a Deployment with standalone
//! claims), plus mounting named local volumes.
//!
//! Why: charts render Deployments, but a component that needs a disk per
//! pod is better served by a StatefulSet. Rather than fork charts, capstan
//! decides the kind once (plugin, else the default rule), stores it so it
//! never flips by itself, and rewrites the rendered objects after rendering.
//!
//! Pure: maps manifests (`serde_json::Value`, one object each) to
//! manifests, keeping fields it does not know. It never renders, never
//! stores decisions (the caller does), never talks to the cluster, and
//! uses `volumes` only for names, sizes and placement.

mod apply;
mod claims;
mod component;
mod decision;
#[cfg(test)]
mod fixtures;
mod plan;
mod pod;
mod stateful;

pub use apply::{Applied, ComponentReport, apply_decisions, apply_local_volumes};
pub use claims::{standalone_claim_name, with_local_volumes, with_standalone_claims};
pub use decision::{DecidedBy, Decision, Warning, decide, default_kind, traits_digest};
pub use plan::{Step, kind_change_plan};
pub use stateful::to_stateful_set;

use claims::claim_spec;
use serde_json::Value;

#[allow(unused_imports)]
use crate::model::{
    ComponentSpec, LocalVolumeMount, Traits, VolumeTrait, WorkloadKind, WorkloadRef,
};
use crate::volumes;

/// The label on a transformed workload that records the kind chosen.
pub const CHILD_RESOURCE_LABEL: &str = "app.capstan.dev/child-resource";

/// A transformed workload and what came with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Transformed {
    /// The workload object (StatefulSet or Deployment).
    pub workload: Value,
    /// Objects generated for it: the headless Service of a StatefulSet, or
    /// the standalone claims of a Deployment.
    pub companions: Vec<Value>,
    /// Dotted paths of source fields with no counterpart, left out.
    pub dropped: Vec<String>,
    /// Things a person should know; the transform succeeded.
    pub warnings: Vec<Warning>,
}

/// Checks the component and that `source` is a rendered Deployment.
fn check_source(source: &Value, component: &ComponentSpec) -> Result<(), Error> {
    component.validate()?;
    let kind = source
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind == WorkloadKind::Deployment.as_str() {
        return Ok(());
    }
    Err(Error::NotADeployment {
        component: component.name.to_string(),
        kind: kind.to_owned(),
    })
}

/// What can go wrong deciding or transforming a workload.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A component's name or one of its traits is invalid.
    #[error("component {component:?} has an invalid trait")]
    InvalidTrait {
        /// The component.
        component: String,
        /// What was wrong.
        #[source]
        source: volumes::Error,
    },
    /// Two volumes of one component share a name.
    #[error("component {component:?} asks twice for volume {volume:?}")]
    DuplicateVolume {
        /// The component.
        component: String,
        /// The repeated volume name.
        volume: String,
    },
    /// Two volumes of one component are mounted at one path of a container.
    #[error("component {component:?} mounts two volumes at {path:?} in container {container}")]
    DuplicateMountPath {
        /// The component.
        component: String,
        /// The container index.
        container: usize,
        /// The repeated mount path.
        path: String,
    },
    /// The object handed to a transform is not a Deployment.
    #[error("component {component:?} expects a Deployment, not {kind:?}")]
    NotADeployment {
        /// The component.
        component: String,
        /// The object's kind.
        kind: String,
    },
    /// A field the transform needs is missing or of the wrong type.
    #[error("{workload}: {field} is not {expected}")]
    Malformed {
        /// The workload, as `Kind "name"`.
        workload: String,
        /// The dotted path of the field.
        field: String,
        /// What it should be.
        expected: &'static str,
    },
    /// The Deployment's strategy type is neither RollingUpdate nor Recreate.
    #[error("{workload} has unknown strategy type {strategy:?}")]
    UnknownStrategy {
        /// The workload, as `Kind "name"`.
        workload: String,
        /// The strategy type.
        strategy: String,
    },
    /// No valid headless Service name can be made from the workload name.
    #[error(
        "cannot name a headless service for {workload:?}: {service:?} must start with a letter"
    )]
    ServiceName {
        /// The workload's name.
        workload: String,
        /// The name tried.
        service: String,
    },
    /// A volume trait names a container the pod template does not have.
    #[error("{workload} has {count} containers, no container {index}")]
    ContainerOutOfRange {
        /// The workload, as `Kind "name"`.
        workload: String,
        /// The index asked for.
        index: usize,
        /// How many containers there are.
        count: usize,
    },
    /// The pod template already has a volume with a trait volume's name.
    #[error("{workload} already has a volume named {volume:?}")]
    VolumeNameTaken {
        /// The workload, as `Kind "name"`.
        workload: String,
        /// The volume name.
        volume: String,
    },
    /// The container already mounts something at the path or by the name.
    #[error(
        "container {container:?} of {workload} already mounts a volume at {path:?} or by its name"
    )]
    MountTaken {
        /// The workload, as `Kind "name"`.
        workload: String,
        /// The container's name.
        container: String,
        /// The mount path.
        path: String,
    },
    /// A component has no stored or fresh decision.
    #[error("component {component:?} has no workload kind decision")]
    MissingDecision {
        /// The component.
        component: String,
    },
    /// A component names a rendered kind capstan does not transform.
    #[error("component {component:?} names a rendered {kind}; only Deployments are transformed")]
    UnsupportedSource {
        /// The component.
        component: String,
        /// The kind named.
        kind: WorkloadKind,
    },
    /// The rendered manifests hold no workload of the component's kind and name.
    #[error("component {component:?} names {kind} {name:?}, which its chart does not render")]
    MissingWorkload {
        /// The component.
        component: String,
        /// The kind looked for.
        kind: WorkloadKind,
        /// The name looked for.
        name: String,
    },
    /// Several rendered workloads have the component's kind and name.
    #[error("component {component:?} names {kind} {name:?}, which is rendered {count} times")]
    AmbiguousWorkload {
        /// The component.
        component: String,
        /// The kind looked for.
        kind: WorkloadKind,
        /// The name looked for.
        name: String,
        /// How many matched.
        count: usize,
    },
    /// Two components name the same rendered workload.
    #[error("components {first:?} and {second:?} both name workload {workload:?}")]
    SharedWorkload {
        /// The workload's name.
        workload: String,
        /// The first component.
        first: String,
        /// The second component.
        second: String,
    },
    /// A generated object has the identity of a rendered one.
    #[error("component {component:?} generates {object}, which the chart already renders")]
    GeneratedClash {
        /// The component.
        component: String,
        /// The object, as `Kind namespace/name`.
        object: String,
    },
    /// A component refers to a local volume that does not exist.
    #[error("component {component:?} uses local volume {volume:?}, which does not exist")]
    UnknownLocalVolume {
        /// The component.
        component: String,
        /// The volume name.
        volume: String,
    },
    /// A component's local volumes cannot be reached from one node.
    #[error("component {component:?} cannot be placed")]
    Placement {
        /// The component.
        component: String,
        /// Which nodes disagree.
        #[source]
        source: volumes::Error,
    },
}
