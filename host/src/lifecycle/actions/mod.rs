//! Contract 0.2 hook actions carried out: an answer's actions are
//! resolved and decided whole ([`decide`]) before the first is taken,
//! then taken in order ([`take`]: ensure, patch overrides, restart,
//! request a re-apply); [`status`] is the `status` loop.
//!
//! The decision itself is the pure [`crate::policy::actions`]; this room
//! reads what it needs through the target and carries out what it allows.

pub(crate) mod decide;
pub(crate) mod status;
pub(crate) mod take;

pub(crate) use status::status_until_ready;
pub(crate) use take::take_actions;
pub use take::{MAX_PATCHED_OVERRIDES_BYTES, merge_patch};
