//! Local persistent volumes: a directory on one node offered to workloads as
//! a PersistentVolume plus a claim bound to it, and the placement rule that
//! keeps a workload on the node its volumes live on.
//!
//! Why: stateful services run on platforms without a storage backend
//! (ZooKeeper, Kafka brokers) need disks that stay on a known node and
//! outlive the app. Kubernetes can express that (hostPath PV, node affinity,
//! a pre-bound claim), but each piece is easy to get subtly wrong; this
//! module builds them in one place, checks names, paths and sizes before
//! anything reaches the cluster, and refuses placements that cannot work.
//!
//! Pure: builds and checks JSON objects. It never talks to the cluster,
//! never reads the store, and never decides a workload's kind (`workload`
//! does, and calls into this module for names, sizes and placement).

mod local;
mod names;
mod placement;

pub use crate::model::Size;
pub use local::{
    DEFAULT_STORAGE_CLASS, LocalVolume, VOLUME_LABEL, persistent_volume, persistent_volume_claim,
};
pub use names::{validate_host_path, validate_label, validate_mount_path, validate_subdomain};
pub use placement::{describe_workload, pin_to_node, pinned_node, place};

/// The well-known node label that holds a node's name.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// What can go wrong checking or placing a local volume.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A name is not the DNS-1123 label or subdomain Kubernetes requires.
    #[error("{what} {name:?} {reason}")]
    InvalidName {
        /// What the name is for (`"volume name"`, `"node name"`).
        what: &'static str,
        /// The name as given.
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A host path is relative, the root, or climbs with `..`.
    #[error("host path {path:?} {reason}")]
    InvalidHostPath {
        /// The path as given.
        path: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A container mount path is relative, the root, or climbs with `..`.
    #[error("mount path {path:?} {reason}")]
    InvalidMountPath {
        /// The path as given.
        path: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A size is not a positive Kubernetes quantity.
    #[error(transparent)]
    InvalidSize(#[from] crate::model::InvalidSize),
    /// One workload asks for volumes that live on different nodes.
    #[error(
        "volume {first:?} is on node {first_node:?} but volume {second:?} is on node {second_node:?}"
    )]
    VolumesOnTwoNodes {
        /// The first volume asked for.
        first: String,
        /// Its node.
        first_node: String,
        /// The first volume on another node.
        second: String,
        /// That other node.
        second_node: String,
    },
    /// A workload is pinned to another node than the volume it uses.
    #[error(
        "volume {volume:?} is on node {volume_node:?} but the workload is pinned to node {pinned_node:?}"
    )]
    PinnedElsewhere {
        /// The volume.
        volume: String,
        /// The node it lives on.
        volume_node: String,
        /// The node the workload asks for.
        pinned_node: String,
    },
    /// A pod template's `nodeName` and hostname `nodeSelector` disagree.
    #[error("pod template sets nodeName {node_name:?} but selects node {node_selector:?}")]
    ConflictingPins {
        /// The `nodeName`.
        node_name: String,
        /// The `kubernetes.io/hostname` selector value.
        node_selector: String,
    },
    /// Pinning a workload that is already pinned to another node.
    #[error("{workload} is pinned to node {pinned_node:?}, not {node:?}")]
    AlreadyPinned {
        /// The workload, as `Kind "name"`.
        workload: String,
        /// The node it is pinned to.
        pinned_node: String,
        /// The node asked for.
        node: String,
    },
    /// A workload has no `spec.template.spec` object to place.
    #[error("{workload} has no pod template")]
    NoPodTemplate {
        /// The workload, as `Kind "name"`.
        workload: String,
    },
}
