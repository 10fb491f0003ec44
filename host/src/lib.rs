//! capstan: a platform daemon for signed Kubernetes application bundles whose
//! override plugins run as sandboxed WebAssembly components.
//!
//! Data flows one way: bundle -> store -> lifecycle -> (sandbox -> values) ->
//! render -> workload -> kube. A module never reaches back up that chain.

pub mod api;
pub mod bundle;
pub mod cli;
pub mod kube;
pub mod lifecycle;
pub mod model;
pub mod oci;
pub mod policy;
pub mod render;
pub mod sandbox;
pub mod secrets;
pub mod store;
pub mod trust;
pub mod values;
pub mod volumes;
pub mod workload;
