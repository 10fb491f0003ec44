//! The lifecycle hooks a plugin may implement, and its verdict on one.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A lifecycle hook (the WIT `hook`, spelled in `capstan.yaml` as
/// [`Hook::as_str`] gives).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hook {
    /// May the app be applied on this platform?
    SemanticCheck,
    /// Before the charts are applied.
    PreApply,
    /// After every chart group was applied.
    PostApply,
    /// Before removal.
    PreRemove,
    /// After removal.
    PostRemove,
    /// Before an update.
    PreUpdate,
    /// After an update.
    PostUpdate,
    /// Per release, after it was applied and is ready by the host's rules:
    /// is it ready by the app's? (contract 0.2)
    Status,
    /// The platform changed: may the host re-apply the app? (contract 0.2)
    EvaluateReapply,
    /// After an operation was aborted. (contract 0.2)
    PostAbort,
    /// Before a failed operation is recovered. (contract 0.2)
    PreRecover,
    /// After a recovery. (contract 0.2)
    PostRecover,
}

impl Hook {
    /// Every hook, in the order of an app's life.
    pub const ALL: [Hook; 12] = [
        Hook::SemanticCheck,
        Hook::PreApply,
        Hook::PostApply,
        Hook::PreRemove,
        Hook::PostRemove,
        Hook::PreUpdate,
        Hook::PostUpdate,
        Hook::Status,
        Hook::EvaluateReapply,
        Hook::PostAbort,
        Hook::PreRecover,
        Hook::PostRecover,
    ];

    /// Whether a contract 0.1.0 plugin can implement this hook (the seven
    /// hooks of 0.1.0; the others came with 0.2.0).
    pub fn in_contract_0_1(self) -> bool {
        !matches!(
            self,
            Hook::Status
                | Hook::EvaluateReapply
                | Hook::PostAbort
                | Hook::PreRecover
                | Hook::PostRecover
        )
    }

    /// The hook's name as the WIT contract and `capstan.yaml` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Hook::SemanticCheck => "semantic-check",
            Hook::PreApply => "pre-apply",
            Hook::PostApply => "post-apply",
            Hook::PreRemove => "pre-remove",
            Hook::PostRemove => "post-remove",
            Hook::PreUpdate => "pre-update",
            Hook::PostUpdate => "post-update",
            Hook::Status => "status",
            Hook::EvaluateReapply => "evaluate-reapply",
            Hook::PostAbort => "post-abort",
            Hook::PreRecover => "pre-recover",
            Hook::PostRecover => "post-recover",
        }
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no [`Hook`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown hook {0:?}; expected one of semantic-check, pre-apply, post-apply, pre-remove, post-remove, pre-update, post-update, status, evaluate-reapply, post-abort, pre-recover, post-recover"
)]
pub struct UnknownHook(pub String);

impl FromStr for Hook {
    type Err = UnknownHook;

    fn from_str(text: &str) -> Result<Hook, UnknownHook> {
        Hook::ALL
            .into_iter()
            .find(|hook| hook.as_str() == text)
            .ok_or_else(|| UnknownHook(text.to_string()))
    }
}

/// A plugin's verdict on a hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookOutcome {
    /// Go on.
    Proceed,
    /// Stop, with the plugin's reason.
    Veto(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for hook in Hook::ALL {
            assert_eq!(hook.as_str().parse::<Hook>(), Ok(hook));
            let json = serde_json::to_string(&hook).unwrap();
            assert_eq!(json, format!("\"{}\"", hook.as_str()));
        }
        let err = "pre-install".parse::<Hook>().unwrap_err();
        assert!(err.to_string().starts_with("unknown hook \"pre-install\""));
    }
}
