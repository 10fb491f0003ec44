//! Owns whether the daemon may start an operation on its own for an app:
//! an automatic re-apply ([`super::reevaluate`]) or the resumption of an
//! operation a leader left running ([`super::resume`]). Every such start
//! goes through [`super::operations::Operations::start`], which asks
//! [`automatic_paused`] first; an operation a person asks for is never
//! paused. Today the switch is the daemon's (`serve --pause-automatic`,
//! for every app), as StarlingX's audit can be skipped while an operator
//! works by hand.
//!
//! Must not stop what is already running: `app abort` does that.

use super::context::Inner;
use crate::model::AppName;

/// Why the daemon starts nothing on its own for `app`, or `None` when it
/// may.
pub(crate) fn automatic_paused(inner: &Inner, _app: &AppName) -> Option<String> {
    inner.policies.pause_automatic.then(|| {
        "automatic operations are paused on this daemon (serve --pause-automatic)".to_owned()
    })
}
