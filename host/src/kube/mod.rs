//! Applying rendered charts to a target: a Kubernetes cluster (later, by
//! server-side apply) or a directory that stands in for one.
//!
//! Owns the identity of a rendered object ([`Resource`], [`ObjectRef`]),
//! parsing a rendered manifest stream, the pure plan of an apply (install
//! order, what changed, what to prune: [`plan_apply`], [`plan_remove`],
//! [`diff`]), Helm hooks' order and delete policies ([`hooks`]), the
//! masked diff against a live cluster ([`live_diff`]), the built-in kinds'
//! scopes ([`scope`]) and the targets that carry a plan out
//! ([`ApplyTarget`], [`DirTarget`], [`ClusterTarget`]), each refusing
//! before it writes what a real API server would refuse
//! ([`ApplyTarget::admit`]), and the read-only view of what a target
//! holds ([`ClusterView`], from [`ApplyTarget::view`]) for callers that
//! never write.
//!
//! Why the split: the plan is where the mistakes that cost data live
//! (deleting an object a chart still renders, deleting in the wrong order),
//! so it is a pure function of two resource sets and unit tested without
//! I/O; a target only does what the plan says, as kube-core builds requests
//! that kube-client sends.
//!
//! ```
//! use capstan::kube::{ApplyTarget, DirTarget, Release, parse_manifests, plan_apply};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let target = DirTarget::new(dir.path());
//! let release = Release {
//!     app: "shop".into(),
//!     chart: "web".into(),
//!     namespace: "shop".into(),
//!     release_name: "web".into(),
//! };
//! let desired = parse_manifests("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n")?;
//! let plan = plan_apply(&target.applied(&release)?, &desired)?;
//! let applied = target.apply(&release, &plan)?;
//! assert_eq!(applied.applied[0].name, "web");
//! assert!(dir.path().join("shop/web.yaml").exists());
//! # Ok(())
//! # }
//! ```
//!
//! Must not touch: the store, plugins, values or rendering. It receives
//! rendered objects and release names from its caller (lifecycle) and
//! returns what it did; it never decides whether an app may be applied.

pub mod cluster;
mod dir;
pub mod hooks;
pub mod live_diff;
pub mod managed;
mod manifest;
mod plan;
pub mod scope;
mod target;
pub mod view;

pub use crate::model::{ObjectKey, ObjectRef};
pub use cluster::{ClusterOptions, ClusterTarget, Connect};
pub use dir::DirTarget;
pub use hooks::HookEvent;
pub use live_diff::{LiveChange, LiveDiff, MASK, MASK_CHANGED};
pub use manifest::{Resource, parse_manifests};
pub use plan::{
    ApplyPlan, Changed, Diff, INSTALL_ORDER, UNINSTALL_ORDER, diff, plan_apply, plan_partial,
    plan_remove,
};
pub use target::{
    Applied, ApplyEvent, ApplyOptions, ApplyTarget, Change, NoProgress, ProgressSink, Purge,
    Release, ReleaseEvent, RemoveOptions, apply_some_whole,
};
pub use view::ClusterView;

use std::path::PathBuf;

/// Everything that can go wrong in `kube`, one variant per failing step.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A manifest document is not valid YAML (or has a key that is not a
    /// string).
    #[error("manifest {document} is not valid yaml")]
    ManifestYaml {
        /// Which document: its `# Source:` path, or its position.
        document: String,
        /// The parser's complaint.
        #[source]
        source: crate::values::Error,
    },
    /// A manifest document is YAML but not a mapping (a list, a scalar).
    #[error("manifest {document} is not a mapping")]
    NotAnObject {
        /// Which document.
        document: String,
    },
    /// A manifest document lacks `apiVersion`, `kind` or `metadata.name`,
    /// or one of them (or `metadata.namespace`) is not a non-empty string.
    #[error("manifest {document} has no string {field}")]
    MissingField {
        /// Which document.
        document: String,
        /// The field path, e.g. `metadata.name`.
        field: &'static str,
    },
    /// The desired set names the same object twice.
    #[error("{object} is rendered twice, by {first} and by {second}")]
    Duplicate {
        /// The object (boxed to keep the error small).
        object: Box<ObjectRef>,
        /// Where the first copy came from.
        first: String,
        /// Where the second copy came from.
        second: String,
    },
    /// An app or chart name cannot be used as a file or folder name.
    #[error("{what} name {name:?} is not a DNS-1123 label")]
    InvalidName {
        /// `app` or `chart`.
        what: &'static str,
        /// The name as given.
        name: String,
    },
    /// A resource could not be turned into YAML.
    #[error("serializing {object} to yaml")]
    Serialize {
        /// The object (boxed to keep the error small).
        object: Box<ObjectRef>,
        /// The serializer's complaint.
        #[source]
        source: crate::values::Error,
    },
    /// A folder of the directory target exists but is not a plain folder
    /// (a symbolic link, a file).
    #[error("{path} is not a directory")]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// Writing a release's manifests to the directory target failed.
    #[error("writing manifests of {release} to {path}")]
    Write {
        /// The release (`app/chart`).
        release: String,
        /// The file or folder being written.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Reading a release's applied manifests back failed.
    #[error("reading applied manifests of {release} from {path}")]
    Read {
        /// The release (`app/chart`).
        release: String,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A release's applied manifests file does not parse.
    #[error("applied manifests of {release} at {path} are corrupt")]
    Corrupt {
        /// The release (`app/chart`).
        release: String,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: Box<Error>,
    },
    /// A step on a cluster failed for a release (see
    /// [`cluster::Error`] for which).
    #[error("release {release} on the cluster")]
    Cluster {
        /// The release (`app/chart`).
        release: String,
        /// The failing step.
        #[source]
        source: Box<cluster::Error>,
    },
    /// A read for a connected render failed on the cluster (`lookup`,
    /// discovery for `.Capabilities`).
    #[error("reading {what} from the cluster")]
    Live {
        /// What was read: the lookup's object, `discovery`.
        what: String,
        /// The failing request.
        #[source]
        source: Box<cluster::Error>,
    },
    /// Restarting a workload on the cluster failed.
    #[error("restarting {object} on the cluster")]
    Restart {
        /// The workload.
        object: String,
        /// The failing request.
        #[source]
        source: Box<cluster::Error>,
    },
    /// The target runs no workloads, so it cannot restart one.
    #[error("this target runs no workloads: it cannot restart {object}")]
    CannotRestart {
        /// The workload.
        object: String,
    },
    /// An object is a List kind (`v1 List`, `ConfigMapList`, any
    /// `...List` with `items`): an API server stores objects, never lists
    /// of them, and refuses to create one.
    #[error("{object} is a list, which an API server does not store; apply its items one by one")]
    ListKind {
        /// The object (boxed to keep the error small).
        object: Box<ObjectRef>,
    },
    /// A CustomResourceDefinition that an API server would refuse: its
    /// `spec.group` is empty, has no dot or is a built-in group, its
    /// names or scope are missing, or its name is not `PLURAL.GROUP`.
    #[error("{object} is refused as an API server would refuse it: {reason}")]
    InvalidDefinition {
        /// The definition (boxed to keep the error small).
        object: Box<ObjectRef>,
        /// The rule it breaks.
        reason: String,
    },
    /// The directory target would write an object its own reader cannot
    /// read back (nested deeper than the YAML reader's limit), which
    /// would make the release's file, and every read of the folder,
    /// fail. Nothing is written.
    #[error("{object} cannot be written: it would not read back")]
    Unreadable {
        /// The object (boxed to keep the error small).
        object: Box<ObjectRef>,
        /// What the reader says of its written form; `None` when it
        /// reads, but not back as that one object.
        #[source]
        source: Option<Box<Error>>,
    },
    /// Another release of the directory target holds the object, and the
    /// apply neither adopts nor takes over that release's objects.
    #[error(
        "{object} already exists and is owned by capstan release {release}; pass --adopt to take it over"
    )]
    Ownership {
        /// The object (boxed to keep the error small).
        object: Box<ObjectRef>,
        /// The release holding it (`app/chart`).
        release: String,
    },
    /// Removing a release's manifests from the directory target failed.
    #[error("removing manifests of {release} at {path}")]
    Remove {
        /// The release (`app/chart`).
        release: String,
        /// The file or folder being removed.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}
