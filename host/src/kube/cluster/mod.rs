//! The Kubernetes cluster target.

mod error;
mod inventory;
mod readiness;
mod retry;
mod stages;
mod wait;
