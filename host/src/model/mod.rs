//! The shared vocabulary of capstan: types only, no I/O.
//!
//! Owns every type that more than one module speaks: the validated names
//! (app, chart, component, volume, plugin, namespace, release), the
//! lifecycle [`Hook`] and its [`HookOutcome`], the [`WorkloadKind`] a
//! component runs as, the component spec with its volume traits as
//! `capstan.yaml` declares them ([`ComponentSpec`]), storage [`Size`]s,
//! the override [`Layer`]s, and the identity of a Kubernetes object
//! ([`ObjectRef`], [`ObjectKey`]), what a connected render reads
//! ([`LookupQuery`], [`LookupPolicy`], [`Served`]) and watches
//! ([`WatchFrom`], [`WatchEnd`]), the facts plugins are handed
//! ([`Facts`] and its sections, the [`App`] a call is about), what an
//! operator asks of an apply ([`ApplyRequest`]), what an app says of
//! fields other managers touch ([`FieldPolicy`]), and what a contract
//! 0.2 plugin is asked and answers ([`ChartCall`], [`ChartAnswer`],
//! [`HookCall`], [`HookAnswer`] and its [`Action`]s).
//!
//! Why it exists: each layer used to declare its own copy of these and the
//! lifecycle converted between them by hand; the copies drifted (the bundle
//! module accepted app names the store refused). Here each rule is written
//! once, as kube-core is to kube-client.
//!
//! Must not touch: files, the store, plugins, templates or the cluster.
//! Everything here is a value with its validation; every other module uses
//! these types and none redefines them.

pub mod clock;
mod contract;
mod facts;
mod failure;
mod fields;
mod hook;
mod layer;
mod live;
mod names;
mod object;
mod operation;
mod plugin;
mod size;
mod workload;

pub use contract::ContractVersion;
pub use facts::{
    AddressFamily, AdministrativeState, App, AvailabilityState, ComponentFacts, Cpu, CpuFunction,
    DistributedCloudRole, Facts, HostInventory, InterfaceClass, LocalVolume, MemoryNode, Monitor,
    Network, NetworkInterface, Node, NodeRole, OperationalState, PciDevice, ServiceParameter,
    StorageBackend, StorageClass, StorageHealth, StorageKind, StorageTier, SystemInfo, SystemMode,
    VolumeRequest,
};
pub use failure::{
    DEFAULT_RETRIES, DEFAULT_RETRY_INTERVAL, MAX_RETRIES, MAX_RETRY_DELAY, MAX_RETRY_INTERVAL,
    OnFailure, RetryPolicy,
};
pub use fields::{
    Conflicts, DriftMode, DriftedField, FieldPolicy, IgnoreRule, MAX_IGNORE_RULES, ObjectDrift,
    Pointer, autoscaled, pattern_matches,
};
pub use hook::{Hook, HookOutcome, UnknownHook};
pub use layer::Layer;
pub use live::{LookupPolicy, LookupQuery, Served, WatchEnd, WatchFrom, resource_version};
pub use names::{
    AppName, ChartName, ComponentName, InvalidName, MAX_APP_NAME_LEN, Name, NameKind, Namespace,
    PluginName, RESERVED_APP_NAMES, ReleaseName, SecretName, VolumeName, kinds, namespaced_name,
};
pub use object::{ObjectKey, ObjectRef};
pub use operation::ApplyRequest;
pub use plugin::{
    Action, ActionPolicies, ActionPolicy, Charset, ChartAnswer, ChartCall, DEFAULT_MAX_OWNED,
    DEFAULT_MAX_OWNED_BYTES, FactsSection, GeneratedKey, GeneratedSecret, HookAnswer, HookCall,
    HookOperation, Mirror, MirrorKind, Mode, Observed, Overrides, PodSecurity, ReleaseStatus,
    SecretKeyRef, SecretShape, SecretSource, SecretValue, Trigger, TriggerKind, TriggerSpec,
};
pub use size::{InvalidSize, Size};
pub use workload::{
    ComponentSpec, InvalidWorkloadRef, LocalVolumeMount, Traits, UnknownWorkloadKind, VolumeTrait,
    WorkloadKind, WorkloadRef,
};
