//! Which states each operation may start from, and the state it moves the
//! app into. The store enforces these atomically; they live here because
//! they are the lifecycle's rules, not the store's.

use crate::store::AppState::{self, *};

/// Apply: a first apply, a retry after a failure, or a re-apply.
pub const APPLY_FROM: &[AppState] = &[Uploaded, ApplyFailed, Applied];
/// Remove: an applied app, or one whose apply or remove failed.
pub const REMOVE_FROM: &[AppState] = &[Applied, ApplyFailed, RemoveFailed];
/// Remove with `--force`: also an app that is only uploaded (clears
/// anything a crashed first apply left on the target).
pub const FORCE_REMOVE_FROM: &[AppState] = &[Applied, ApplyFailed, RemoveFailed, Uploaded];
/// Delete: only an app that is not on the target.
pub const DELETE_FROM: &[AppState] = &[Uploaded, UploadFailed];
/// Update: only an applied app moves to a new version.
pub const UPDATE_FROM: &[AppState] = &[Applied];
/// Rollback: an applied app, or one whose apply failed, goes back to a
/// kept version.
pub const ROLLBACK_FROM: &[AppState] = &[Applied, ApplyFailed];
/// Recover: an app whose apply, update or removal failed is brought back
/// to its active version, applied.
pub const RECOVER_FROM: &[AppState] = &[ApplyFailed, RemoveFailed];
/// States in which an operation can be aborted.
pub const ABORTABLE: &[AppState] = &[Applying, Updating, Removing, Recovering];

/// The transitional states that overrides may not change in: the running
/// operation reads them.
pub fn overrides_locked(state: AppState) -> bool {
    state.is_transitional()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_operation_starts_from_a_transitional_state() {
        for list in [
            APPLY_FROM,
            REMOVE_FROM,
            FORCE_REMOVE_FROM,
            DELETE_FROM,
            UPDATE_FROM,
            ROLLBACK_FROM,
            RECOVER_FROM,
        ] {
            assert!(list.iter().all(|s| !s.is_transitional()), "{list:?}");
        }
        assert!(ABORTABLE.iter().all(|s| s.is_transitional()));
    }

    #[test]
    fn an_applied_app_cannot_be_deleted_before_it_is_removed() {
        assert!(!DELETE_FROM.contains(&Applied));
        assert!(!DELETE_FROM.contains(&ApplyFailed));
        assert!(REMOVE_FROM.contains(&Applied));
    }
}
