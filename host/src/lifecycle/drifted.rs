//! Owns what the drift loop ([`super::drift`]) knows of each app
//! ([`AppDrift`], kept in the lifecycle's shared work), the one-line
//! summary of a drift, and following a release after a chart's apply
//! ([`follow`]). A leaf: it imports nothing of the lifecycle's, so the
//! context and the apply can use it without an import circle.

use std::time::Instant;

use crate::kube::managed::FieldSet;
use crate::kube::{ClusterView, Release};
use crate::model::{AppName, DriftMode, FieldPolicy, ObjectDrift, ObjectRef};

/// What the drift watch last saw of one app.
#[derive(Debug, Clone, Default)]
pub(crate) struct AppDrift {
    /// The drifted objects, in chart order.
    pub objects: Vec<ObjectDrift>,
    /// When it was first seen drifted (unix millis); 0 when not.
    pub since: i64,
    /// When a correction was last started.
    pub corrected: Option<Instant>,
}

/// After a chart's apply: follows its release with the fields capstan
/// now holds, or lets it go when the app's policy is `drift: off`. A
/// failure to follow is logged: the apply itself succeeded.
pub(crate) fn follow(
    view: &dyn ClusterView,
    app: &AppName,
    release: &Release,
    held: &[(ObjectRef, FieldSet)],
    policy: &FieldPolicy,
) {
    if policy.drift == DriftMode::Off {
        view.unfollow(release);
        return;
    }
    if let Err(e) = view.follow(release, held, policy) {
        tracing::warn!(app = %app, release = %release, error = %e, "could not watch the release for drift");
    }
}

/// One line naming the drifted objects and fields, at most 1,024 bytes.
pub(crate) fn summary(objects: &[ObjectDrift]) -> String {
    let parts: Vec<String> = objects.iter().map(ToString::to_string).collect();
    let mut text = parts.join("; ");
    if text.len() > 1024 {
        let mut cut = 1020;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}
