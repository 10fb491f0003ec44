//! Validated names: app, chart, component, namespace and release names are
//! distinct types, each a DNS-1123 label, so one cannot stand in for another.

use std::fmt;
use std::marker::PhantomData;

use serde::{Deserialize, Deserializer};

/// What kind of name a [`Name`] is, and how long it may be.
pub trait NameKind {
    /// How the kind is called in errors (`app name`).
    const KIND: &'static str;
    /// The longest accepted name, in bytes.
    const MAX_LEN: usize;
}

/// Marker for [`AppName`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum App {}
/// Marker for [`ChartName`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChartKind {}
/// Marker for [`ComponentName`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ComponentKind {}
/// Marker for [`Namespace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NamespaceKind {}
/// Marker for [`ReleaseName`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReleaseKind {}

impl NameKind for App {
    const KIND: &'static str = "app name";
    const MAX_LEN: usize = 63;
}
impl NameKind for ChartKind {
    const KIND: &'static str = "chart name";
    const MAX_LEN: usize = 63;
}
impl NameKind for ComponentKind {
    const KIND: &'static str = "component name";
    const MAX_LEN: usize = 63;
}
impl NameKind for NamespaceKind {
    const KIND: &'static str = "namespace";
    const MAX_LEN: usize = 63;
}
impl NameKind for ReleaseKind {
    const KIND: &'static str = "release name";
    // Helm caps release names at 53 so generated object names still fit.
    const MAX_LEN: usize = 53;
}

/// An app's name.
///
/// Names of different kinds do not mix:
///
/// ```compile_fail
/// use capstan::bundle::{AppName, ChartName};
/// let chart = ChartName::parse("hello").unwrap();
/// let app: AppName = chart;
/// ```
pub type AppName = Name<App>;
/// A chart's name within an app.
pub type ChartName = Name<ChartKind>;
/// A component's name within an app.
pub type ComponentName = Name<ComponentKind>;
/// A Kubernetes namespace.
pub type Namespace = Name<NamespaceKind>;
/// A Helm release name.
pub type ReleaseName = Name<ReleaseKind>;

/// A DNS-1123 label of kind `K`: 1 to `K::MAX_LEN` characters of `a-z`, `0-9`
/// and `-`, starting and ending with a letter or digit.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name<K> {
    text: String,
    kind: PhantomData<K>,
}

/// A string that is not a valid name of its kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {name:?} is invalid: {reason}")]
pub struct InvalidName {
    /// The kind of name (`chart name`).
    pub kind: &'static str,
    /// The rejected text.
    pub name: String,
    /// Which rule it breaks.
    pub reason: &'static str,
}

impl<K: NameKind> Name<K> {
    /// Checks `text` against the DNS-1123 label rules.
    ///
    /// # Errors
    ///
    /// [`InvalidName`] naming the rule that `text` breaks.
    pub fn parse(text: &str) -> Result<Self, InvalidName> {
        label_rule_broken(text, K::MAX_LEN)
            .map_or(Ok(()), |reason| {
                Err(InvalidName {
                    kind: K::KIND,
                    name: text.to_string(),
                    reason,
                })
            })
            .map(|()| Self {
                text: text.to_string(),
                kind: PhantomData,
            })
    }

    /// The name's text.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

fn label_rule_broken(text: &str, max_len: usize) -> Option<&'static str> {
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        Some("it is empty")
    } else if bytes.len() > max_len {
        Some("it is too long")
    } else if !bytes.iter().all(|&b| allowed(b)) {
        Some("only lowercase letters, digits and '-' are allowed")
    } else if bytes[0] == b'-' || bytes[bytes.len() - 1] == b'-' {
        Some("it must start and end with a letter or digit")
    } else {
        None
    }
}

impl<K> fmt::Display for Name<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<K: NameKind> fmt::Debug for Name<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({:?})", K::KIND, self.text)
    }
}

impl<K> AsRef<str> for Name<K> {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl<'de, K: NameKind> Deserialize<'de> for Name<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_dns_labels() {
        for good in ["a", "hello", "cert-manager", "x1", "0abc"] {
            assert_eq!(AppName::parse(good).unwrap().as_str(), good);
        }
    }

    #[test]
    fn rejects_each_rule() {
        let cases = [
            ("", "it is empty"),
            (
                "Hello",
                "only lowercase letters, digits and '-' are allowed",
            ),
            ("a_b", "only lowercase letters, digits and '-' are allowed"),
            ("a.b", "only lowercase letters, digits and '-' are allowed"),
            ("-a", "it must start and end with a letter or digit"),
            ("a-", "it must start and end with a letter or digit"),
        ];
        for (bad, reason) in cases {
            let err = ChartName::parse(bad).unwrap_err();
            assert_eq!(err.reason, reason, "{bad:?}");
            assert_eq!(err.kind, "chart name");
        }
    }

    #[test]
    fn release_names_are_shorter_than_labels() {
        let long = "a".repeat(54);
        assert!(Namespace::parse(&long).is_ok());
        assert_eq!(
            ReleaseName::parse(&long).unwrap_err().reason,
            "it is too long"
        );
        assert!(AppName::parse(&"a".repeat(64)).is_err());
    }
}
