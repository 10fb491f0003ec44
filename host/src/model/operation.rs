//! What an operator asks of an apply: the one options type that travels
//! from the HTTP body (`POST /v1/apps/{app}/apply`, re-exported by
//! `api::wire`) through the lifecycle, the record kept for resuming the
//! operation, and the apply's steps, down to the per-chart options the
//! target is handed (`kube::ApplyOptions`, the second type: what one
//! chart is applied with, which adds what `capstan.yaml` says of the
//! chart and what the operation lets go of).

use serde::{Deserialize, Serialize};

/// The operator's flags for an apply; an empty body is the default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyRequest {
    /// Components whose workload kind is decided again.
    #[serde(default)]
    pub rekind: Vec<String>,
    /// Take over live objects no release of this app owns yet.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopt: bool,
    /// Objects (`Kind/name`) that may be recreated when a change is
    /// refused as immutable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recreate: Vec<String>,
    /// Take back, for this operation, the fields other managers hold
    /// even where the app's `conflicts` policy is `fail`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force_conflicts: bool,
}
