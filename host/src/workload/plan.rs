//! Replacing a live workload whose kind changed.

use serde::Serialize;

use super::WorkloadKind;

/// One step of a kind change, for the applier to run in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "step")]
pub enum Step {
    /// Delete the old workload object with foreground propagation, so its
    /// pods go with it. Claims are not deleted: a Deployment owns none, and
    /// a StatefulSet's claims are kept by its default retention policy.
    /// The applier must also leave the old kind's claims (standalone claims
    /// or claim-template claims) out of pruning.
    DeleteWorkload {
        /// The old kind.
        kind: WorkloadKind,
        /// The workload's name.
        name: String,
    },
    /// Wait until no pod of the old workload is left, so `ReadWriteOnce`
    /// volumes are detached before new pods ask for them.
    WaitForPodsGone {
        /// The old kind.
        kind: WorkloadKind,
        /// The workload's name.
        name: String,
    },
    /// Create the new workload object (with its companions, as the
    /// transformed manifests hold them) by the normal apply.
    CreateWorkload {
        /// The new kind.
        kind: WorkloadKind,
        /// The workload's name.
        name: String,
    },
}

/// The steps that replace live workload `name` of kind `old` by one of
/// kind `new`; empty when the kinds are equal.
///
/// Server-side apply cannot change an object's kind, so the old object is
/// deleted and the new one created.
///
/// # Downtime
///
/// The component serves nothing from the moment the old pods are deleted
/// until the new pods are ready: at least pod termination (the grace
/// period), volume detach and attach, image start and readiness. Nothing
/// is kept running in between on purpose: both kinds would mount the same
/// `ReadWriteOnce` volumes, and a StatefulSet's pods need their old pods
/// gone before they can take over their names.
///
/// # Data
///
/// Claims survive, but the two kinds name them differently (a Deployment's
/// standalone claim is `<workload>-<volume>`, a StatefulSet's is
/// `<volume>-<workload>-<ordinal>`), so the new pods get new, empty claims;
/// data must be copied from the kept claims by hand.
pub fn kind_change_plan(old: WorkloadKind, new: WorkloadKind, name: &str) -> Vec<Step> {
    if old == new {
        return Vec::new();
    }
    vec![
        Step::DeleteWorkload {
            kind: old,
            name: name.to_owned(),
        },
        Step::WaitForPodsGone {
            kind: old,
            name: name.to_owned(),
        },
        Step::CreateWorkload {
            kind: new,
            name: name.to_owned(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_kind_needs_no_steps() {
        assert!(
            kind_change_plan(WorkloadKind::StatefulSet, WorkloadKind::StatefulSet, "b").is_empty()
        );
    }

    #[test]
    fn kind_change_deletes_waits_then_creates() {
        let plan = kind_change_plan(
            WorkloadKind::Deployment,
            WorkloadKind::StatefulSet,
            "broker",
        );
        assert_eq!(
            plan,
            vec![
                Step::DeleteWorkload {
                    kind: WorkloadKind::Deployment,
                    name: "broker".to_owned()
                },
                Step::WaitForPodsGone {
                    kind: WorkloadKind::Deployment,
                    name: "broker".to_owned()
                },
                Step::CreateWorkload {
                    kind: WorkloadKind::StatefulSet,
                    name: "broker".to_owned()
                },
            ]
        );
        let json = serde_json::to_value(&plan[0]).unwrap();
        assert_eq!(json["step"], "deleteWorkload");
        assert_eq!(json["kind"], "Deployment");
    }
}
