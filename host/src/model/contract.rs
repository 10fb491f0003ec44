//! The plugin contract versions the host speaks (`capstan:plugin@V`, one
//! WIT package per version), as one typed value: [`ContractVersion`].
//!
//! The version text (`0.1.0`) is parsed and printed here and nowhere
//! else; callers ask what a version has (its methods), never compare
//! version strings. Adding a version is one variant and its arms.

use std::fmt;

use serde::{Serialize, Serializer};

/// A version of the plugin contract (`wit/plugin.wit` is 0.1.0,
/// `wit/v0.2/plugin.wit` is 0.2.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ContractVersion {
    /// `capstan:plugin@0.1.0`: values, workload kinds and seven hooks.
    V0_1,
    /// `capstan:plugin@0.2.0`: adds fact sections, the call's namespace
    /// and user overrides, secrets, hook context and state, and actions.
    V0_2,
}

impl ContractVersion {
    /// Every version the host speaks, oldest first.
    pub const ALL: [ContractVersion; 2] = [ContractVersion::V0_1, ContractVersion::V0_2];

    /// The version as the WIT package spells it (`0.1.0`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ContractVersion::V0_1 => "0.1.0",
            ContractVersion::V0_2 => "0.2.0",
        }
    }

    /// The version spelled `text` (`0.2.0`); `None` for a version the host
    /// does not speak.
    pub fn parse(text: &str) -> Option<ContractVersion> {
        ContractVersion::ALL
            .into_iter()
            .find(|version| version.as_str() == text)
    }

    /// Whether a call tells the plugin its context: a chart call the
    /// release's namespace and the user overrides, a hook call the whole
    /// call and the state the plugin kept (0.1.0 is told neither).
    pub const fn tells_call_context(self) -> bool {
        match self {
            ContractVersion::V0_1 => false,
            ContractVersion::V0_2 => true,
        }
    }
}

impl fmt::Display for ContractVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Serialized as its text (`"0.2.0"`).
impl Serialize for ContractVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_version_parses_from_its_text_and_no_other() {
        for version in ContractVersion::ALL {
            assert_eq!(ContractVersion::parse(version.as_str()), Some(version));
            assert_eq!(version.to_string(), version.as_str());
        }
        assert_eq!(ContractVersion::parse("0.3.0"), None);
        assert_eq!(ContractVersion::parse("0.1"), None);
        assert_eq!(
            serde_json::to_string(&ContractVersion::V0_2)
                .ok()
                .as_deref(),
            Some("\"0.2.0\"")
        );
    }
}
