//! Owns what a plugin may hand the host and ask it to do, as pure
//! functions that read nothing and write nothing: the bounds of every
//! string in an answer ([`bounds`]), the operator's action policy over
//! one action and what the host resolved about its object
//! ([`actions`]), and the Pod Security Standards' levels for the Pods
//! and Pod templates a plugin ensures ([`pod_security`]).
//!
//! The sandbox checks an answer's bounds before the answer leaves it;
//! the lifecycle resolves each action's scope through the target, asks
//! [`actions::check`] for a decision on every action of the answer, and
//! writes only when none is refused.

pub mod actions;
pub mod bounds;
pub mod pod_security;

pub use actions::{Admitted, Refusal, Resolved, Scope};
