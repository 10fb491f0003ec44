//! The sticky decision of a component's workload kind.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Traits, WorkloadKind};

/// Who chose a component's workload kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DecidedBy {
    /// The app's plugin answered `workload-kind` at the first apply.
    Plugin,
    /// No plugin served `workload-kind`; [`default_kind`] chose.
    DefaultRule,
    /// The operator asked to decide again (`--rekind`); the plugin or the
    /// default rule chose, as the [`Warning::KindChanged`] or the stored
    /// kind shows.
    Rekind,
}

impl fmt::Display for DecidedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Plugin => "the plugin",
            Self::DefaultRule => "the default rule",
            Self::Rekind => "a rekind",
        })
    }
}

/// A component's stored workload kind, with how it was chosen and a digest
/// of the traits it was chosen for.
///
/// Stored by the caller (the store), one per component; serializes with
/// camelCase keys (`kind`, `decidedBy`, `traitsDigest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// The kind the component runs as.
    pub kind: WorkloadKind,
    /// Who chose it.
    pub decided_by: DecidedBy,
    /// [`traits_digest`] of the traits at the time of the decision.
    pub traits_digest: String,
}

/// Something a person should know about a decision or a transform; never
/// an error, the apply goes on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "warning")]
pub enum Warning {
    /// The traits changed since the kind was decided; the kind is kept.
    TraitsChanged {
        /// The stored kind, kept.
        kept: WorkloadKind,
        /// What the default rule would choose for the new traits.
        default_now: WorkloadKind,
    },
    /// A plugin answered a different kind than the stored, sticky one.
    PluginDisagrees {
        /// The stored kind, kept.
        kept: WorkloadKind,
        /// The plugin's answer, ignored.
        plugin: WorkloadKind,
    },
    /// A rekind chose another kind: the live object is replaced.
    KindChanged {
        /// The kind of the live object.
        from: WorkloadKind,
        /// The new kind.
        to: WorkloadKind,
        /// Who chose the new kind (the plugin or the default rule).
        chosen_by: DecidedBy,
    },
    /// Several replicas of a Deployment share one `ReadWriteOnce` claim, so
    /// they must all run on the claim's node.
    SharedClaim {
        /// The Deployment's name.
        workload: String,
        /// Its replica count.
        replicas: u64,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TraitsChanged { kept, default_now } => write!(
                f,
                "traits changed since the workload kind was decided; keeping {kept} \
                 (the default rule would now choose {default_now}; apply with --rekind to decide again)"
            ),
            Self::PluginDisagrees { kept, plugin } => write!(
                f,
                "the plugin now chooses {plugin} but the decided kind {kept} is kept \
                 (apply with --rekind to decide again)"
            ),
            Self::KindChanged {
                from,
                to,
                chosen_by,
            } => write!(
                f,
                "workload kind changes from {from} to {to} (chosen by {chosen_by}); the {from} \
                 is deleted before the {to} is created, so the component is down in between"
            ),
            Self::SharedClaim { workload, replicas } => write!(
                f,
                "the {replicas} replicas of Deployment {workload:?} share ReadWriteOnce claims, \
                 so they all run on one node"
            ),
        }
    }
}

/// The default rule: a component with a volume trait runs as a
/// StatefulSet, any other as a Deployment. Named local volumes do not count:
/// they are one shared claim, not a claim per pod.
pub fn default_kind(traits: &Traits) -> WorkloadKind {
    if traits.volumes.is_empty() {
        WorkloadKind::Deployment
    } else {
        WorkloadKind::StatefulSet
    }
}

/// The hex sha256 of the traits' JSON form, to notice later that they changed.
pub fn traits_digest(traits: &Traits) -> String {
    // Serializing plain structs of strings and numbers cannot fail; an
    // empty digest input would still give a stable (if useless) digest.
    let json = serde_json::to_vec(traits).unwrap_or_default();
    hex::encode(Sha256::digest(json))
}

/// Decides a component's workload kind.
///
/// - With a `previous` decision and no `rekind`, the previous decision is
///   returned unchanged (its digest included, so the warning repeats until
///   the operator acts), with [`Warning::TraitsChanged`] when the traits'
///   digest differs and [`Warning::PluginDisagrees`] when `plugin_choice`
///   names another kind. The host need not ask the plugin then.
/// - Otherwise `plugin_choice` wins, else [`default_kind`]. With `rekind`
///   and a previous decision the result is marked [`DecidedBy::Rekind`],
///   and [`Warning::KindChanged`] says when the kind differs from before,
///   which means the live object must be replaced ([`super::kind_change_plan`]).
pub fn decide(
    previous: Option<&Decision>,
    plugin_choice: Option<WorkloadKind>,
    traits: &Traits,
    rekind: bool,
) -> (Decision, Vec<Warning>) {
    let digest = traits_digest(traits);
    let mut warnings = Vec::new();
    if let Some(previous) = previous.filter(|_| !rekind) {
        if previous.traits_digest != digest {
            warnings.push(Warning::TraitsChanged {
                kept: previous.kind,
                default_now: default_kind(traits),
            });
        }
        if let Some(plugin) = plugin_choice.filter(|kind| *kind != previous.kind) {
            warnings.push(Warning::PluginDisagrees {
                kept: previous.kind,
                plugin,
            });
        }
        return (previous.clone(), warnings);
    }
    let (kind, chosen_by) = match plugin_choice {
        Some(kind) => (kind, DecidedBy::Plugin),
        None => (default_kind(traits), DecidedBy::DefaultRule),
    };
    let decided_by = match previous {
        Some(previous) => {
            if previous.kind != kind {
                warnings.push(Warning::KindChanged {
                    from: previous.kind,
                    to: kind,
                    chosen_by,
                });
            }
            DecidedBy::Rekind
        }
        None => chosen_by,
    };
    let decision = Decision {
        kind,
        decided_by,
        traits_digest: digest,
    };
    (decision, warnings)
}

#[cfg(test)]
mod tests {
    use super::super::VolumeTrait;
    use super::*;
    use crate::model::Size;

    fn with_volume() -> Traits {
        let size = Size::parse("1Gi").unwrap();
        Traits {
            volumes: vec![VolumeTrait {
                container: 0,
                storage_class_name: "fast".to_owned(),
                size,
                path: "/data".to_owned(),
                name: None,
            }],
            local_volumes: Vec::new(),
        }
    }

    #[test]
    fn default_rule_follows_the_volume_trait() {
        assert_eq!(default_kind(&Traits::default()), WorkloadKind::Deployment);
        assert_eq!(default_kind(&with_volume()), WorkloadKind::StatefulSet);
    }

    #[test]
    fn first_decision_prefers_the_plugin() {
        let (by_rule, warnings) = decide(None, None, &with_volume(), false);
        assert_eq!(by_rule.kind, WorkloadKind::StatefulSet);
        assert_eq!(by_rule.decided_by, DecidedBy::DefaultRule);
        assert_eq!(by_rule.traits_digest, traits_digest(&with_volume()));
        assert!(warnings.is_empty());
        let (by_plugin, _) = decide(None, Some(WorkloadKind::Deployment), &with_volume(), false);
        assert_eq!(by_plugin.kind, WorkloadKind::Deployment);
        assert_eq!(by_plugin.decided_by, DecidedBy::Plugin);
    }

    #[test]
    fn decision_is_sticky_when_traits_change() {
        let (first, _) = decide(None, None, &Traits::default(), false);
        assert_eq!(first.kind, WorkloadKind::Deployment);
        let (again, warnings) = decide(Some(&first), None, &with_volume(), false);
        assert_eq!(again, first);
        assert_eq!(
            warnings,
            vec![Warning::TraitsChanged {
                kept: WorkloadKind::Deployment,
                default_now: WorkloadKind::StatefulSet
            }]
        );
        assert!(warnings[0].to_string().contains("--rekind"));
        let (same, quiet) = decide(Some(&first), None, &Traits::default(), false);
        assert_eq!(same, first);
        assert!(quiet.is_empty());
    }

    #[test]
    fn sticky_decision_ignores_a_changed_plugin() {
        let (first, _) = decide(
            None,
            Some(WorkloadKind::StatefulSet),
            &Traits::default(),
            false,
        );
        let (again, warnings) = decide(
            Some(&first),
            Some(WorkloadKind::Deployment),
            &Traits::default(),
            false,
        );
        assert_eq!(again.kind, WorkloadKind::StatefulSet);
        assert!(matches!(warnings[..], [Warning::PluginDisagrees { .. }]));
    }

    #[test]
    fn rekind_decides_again() {
        let (first, _) = decide(None, None, &Traits::default(), false);
        let (rekinded, warnings) = decide(Some(&first), None, &with_volume(), true);
        assert_eq!(rekinded.kind, WorkloadKind::StatefulSet);
        assert_eq!(rekinded.decided_by, DecidedBy::Rekind);
        assert_eq!(rekinded.traits_digest, traits_digest(&with_volume()));
        assert_eq!(
            warnings,
            vec![Warning::KindChanged {
                from: WorkloadKind::Deployment,
                to: WorkloadKind::StatefulSet,
                chosen_by: DecidedBy::DefaultRule
            }]
        );
        let (unchanged, quiet) = decide(Some(&rekinded), None, &with_volume(), true);
        assert_eq!(unchanged.kind, WorkloadKind::StatefulSet);
        assert!(quiet.is_empty());
        let (fresh, _) = decide(None, None, &with_volume(), true);
        assert_eq!(fresh.decided_by, DecidedBy::DefaultRule);
    }

    #[test]
    fn decisions_round_trip_for_the_store() {
        let (decision, _) = decide(None, None, &with_volume(), false);
        let json = serde_json::to_value(&decision).unwrap();
        assert_eq!(json["kind"], "StatefulSet");
        assert_eq!(json["decidedBy"], "DefaultRule");
        let back: Decision = serde_json::from_value(json).unwrap();
        assert_eq!(back, decision);
    }
}
