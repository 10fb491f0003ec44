//! [`AppName`]: the checked name of an app.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Longest app name: Helm's limit on a release name, since an app's charts
/// are released under names derived from it.
pub const MAX_APP_NAME_LEN: usize = 53;

/// The name of an app: 1 to [`MAX_APP_NAME_LEN`] characters of lowercase
/// ASCII letters, digits and `-`, starting and ending with a letter or
/// digit (a DNS label, as Kubernetes and Helm require of release names).
/// Only [`AppName::new`] (and `FromStr`, `Deserialize`) makes one, so a held
/// `AppName` is always valid:
///
/// ```compile_fail
/// let name = capstan::store::AppName(String::from("Not A Name"));
/// ```
///
/// ```
/// use capstan::store::AppName;
/// assert!(AppName::new("cert-manager").is_ok());
/// assert!(AppName::new("Not A Name").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AppName(String);

/// Why a string is not an [`AppName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid app name {name:?}: {reason}")]
pub struct InvalidAppName {
    /// The name as given.
    pub name: String,
    /// Which rule it breaks.
    pub reason: &'static str,
}

impl AppName {
    /// Checks and wraps `name`.
    ///
    /// # Errors
    /// [`InvalidAppName`] naming the rule it breaks: empty, too long, a
    /// character outside `a-z0-9-`, or `-` at either end.
    pub fn new(name: impl Into<String>) -> Result<Self, InvalidAppName> {
        let name = name.into();
        match name_problem(&name) {
            Some(reason) => Err(InvalidAppName { name, reason }),
            None => Ok(AppName(name)),
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.len() > MAX_APP_NAME_LEN {
        return Some("it is longer than 53 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Some("only lowercase letters, digits and '-' are allowed");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("it must start and end with a letter or digit");
    }
    None
}

impl fmt::Display for AppName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for AppName {
    type Err = InvalidAppName;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        AppName::new(name)
    }
}

impl TryFrom<String> for AppName {
    type Error = InvalidAppName;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        AppName::new(name)
    }
}

impl From<AppName> for String {
    fn from(name: AppName) -> String {
        name.0
    }
}

impl AsRef<str> for AppName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_dns_labels() {
        for name in ["vault", "a", "cert-manager", "app2", "9lives"] {
            assert_eq!(AppName::new(name).unwrap().as_str(), name);
        }
        assert!(AppName::new("a".repeat(MAX_APP_NAME_LEN)).is_ok());
    }

    #[test]
    fn refuses_anything_else_with_the_rule() {
        let cases = [
            ("", "it is empty"),
            (
                "Vault",
                "only lowercase letters, digits and '-' are allowed",
            ),
            (
                "../etc",
                "only lowercase letters, digits and '-' are allowed",
            ),
            ("a b", "only lowercase letters, digits and '-' are allowed"),
            ("-vault", "it must start and end with a letter or digit"),
            ("vault-", "it must start and end with a letter or digit"),
        ];
        for (name, reason) in cases {
            assert_eq!(AppName::new(name).unwrap_err().reason, reason, "{name:?}");
        }
        assert!(AppName::new("a".repeat(MAX_APP_NAME_LEN + 1)).is_err());
    }

    #[test]
    fn json_is_a_plain_string_and_is_checked() {
        let name = AppName::new("vault").unwrap();
        assert_eq!(serde_json::to_string(&name).unwrap(), "\"vault\"");
        assert_eq!(serde_json::from_str::<AppName>("\"vault\"").unwrap(), name);
        assert!(serde_json::from_str::<AppName>("\"Bad Name\"").is_err());
    }
}
