//! Validated names. App, chart, component, volume, plugin, namespace and
//! release names are distinct types, each a DNS-1123 label with one rule,
//! so one cannot stand in for another and no module checks a name its own
//! way.

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What kind of name a [`Name`] is, and the rule it follows beyond the
/// DNS-1123 label.
pub trait NameKind {
    /// How the kind is called in errors (`app name`).
    const KIND: &'static str;
    /// The longest accepted name, in bytes.
    const MAX_LEN: usize;
    /// Names of this kind that capstan keeps for itself.
    const RESERVED: &'static [&'static str] = &[];
}

/// The longest app name: Helm's limit on a release name (53), since an
/// app's charts are released under names derived from it and the objects
/// a chart generates must still fit in 63 characters.
pub const MAX_APP_NAME_LEN: usize = 53;

/// App names capstan uses for its own releases: `capstan-volumes` holds
/// the local volumes made with `capstan volume create`.
pub const RESERVED_APP_NAMES: &[&str] = &["capstan-volumes"];

/// The marker types of each kind of name.
pub mod kinds {
    use super::{MAX_APP_NAME_LEN, NameKind, RESERVED_APP_NAMES};

    /// Marker for [`super::AppName`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum App {}
    /// Marker for [`super::ChartName`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum Chart {}
    /// Marker for [`super::ComponentName`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum Component {}
    /// Marker for [`super::Namespace`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum Namespace {}
    /// Marker for [`super::ReleaseName`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum Release {}
    /// Marker for [`super::VolumeName`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum Volume {}
    /// Marker for [`super::PluginName`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum Plugin {}
    /// Marker for [`super::SecretName`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum Secret {}

    impl NameKind for App {
        const KIND: &'static str = "app name";
        const MAX_LEN: usize = MAX_APP_NAME_LEN;
        const RESERVED: &'static [&'static str] = RESERVED_APP_NAMES;
    }
    impl NameKind for Chart {
        const KIND: &'static str = "chart name";
        const MAX_LEN: usize = 63;
        // The release of the objects an app's hooks ensure (contract 0.2).
        const RESERVED: &'static [&'static str] = &["capstan-owned"];
    }
    impl NameKind for Component {
        const KIND: &'static str = "component name";
        const MAX_LEN: usize = 63;
    }
    impl NameKind for Namespace {
        const KIND: &'static str = "namespace";
        const MAX_LEN: usize = 63;
    }
    impl NameKind for Release {
        const KIND: &'static str = "release name";
        // Helm caps release names at 53 so generated object names still fit.
        const MAX_LEN: usize = 53;
    }
    impl NameKind for Volume {
        const KIND: &'static str = "volume name";
        const MAX_LEN: usize = 63;
    }
    impl NameKind for Plugin {
        const KIND: &'static str = "plugin name";
        const MAX_LEN: usize = 63;
    }
    impl NameKind for Secret {
        const KIND: &'static str = "generated secret name";
        // The Secret that keeps it is named `<app>-<name>` (at most 253),
        // and the name appears in release labels (at most 63).
        const MAX_LEN: usize = 63;
    }
}

/// An app's name.
///
/// Names of different kinds do not mix:
///
/// ```compile_fail
/// use capstan::model::{AppName, ChartName};
/// let chart = ChartName::parse("hello").unwrap();
/// let app: AppName = chart;
/// ```
///
/// and one is only made by checking it:
///
/// ```
/// use capstan::model::AppName;
/// assert!(AppName::new("cert-manager").is_ok());
/// assert!(AppName::new("Not A Name").is_err());
/// assert!(AppName::new("a".repeat(54)).is_err());
/// assert!(AppName::new("capstan-volumes").is_err());
/// ```
pub type AppName = Name<kinds::App>;
/// A chart's name within an app.
pub type ChartName = Name<kinds::Chart>;
/// A component's name within an app.
pub type ComponentName = Name<kinds::Component>;
/// A Kubernetes namespace.
pub type Namespace = Name<kinds::Namespace>;
/// A Helm release name.
pub type ReleaseName = Name<kinds::Release>;
/// A local volume's name (or a volume trait's pod volume name).
pub type VolumeName = Name<kinds::Volume>;
/// A plugin's name within a bundle (`plugins/NAME.wasm`).
pub type PluginName = Name<kinds::Plugin>;
/// The name of a secret the host generates for an app (contract 0.2).
pub type SecretName = Name<kinds::Secret>;

/// A DNS-1123 label of kind `K`: 1 to `K::MAX_LEN` characters of `a-z`,
/// `0-9` and `-`, starting and ending with a letter or digit, and not one
/// of `K::RESERVED`.
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
    pub reason: String,
}

impl<K: NameKind> Name<K> {
    /// Checks `text` against the rule of its kind.
    ///
    /// # Errors
    ///
    /// [`InvalidName`] naming the rule that `text` breaks.
    pub fn parse(text: &str) -> Result<Self, InvalidName> {
        Self::new(text)
    }

    /// [`Name::parse`] for an owned string.
    ///
    /// # Errors
    ///
    /// [`InvalidName`] naming the rule that `text` breaks.
    pub fn new(text: impl Into<String>) -> Result<Self, InvalidName> {
        let text = text.into();
        match rule_broken::<K>(&text) {
            Some(reason) => Err(InvalidName {
                kind: K::KIND,
                name: text,
                reason,
            }),
            None => Ok(Self {
                text,
                kind: PhantomData,
            }),
        }
    }
}

impl<K> Name<K> {
    /// The name's text.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

fn rule_broken<K: NameKind>(text: &str) -> Option<String> {
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        Some("it is empty".into())
    } else if bytes.len() > K::MAX_LEN {
        Some(format!("it is longer than {} characters", K::MAX_LEN))
    } else if !bytes.iter().all(|&b| allowed(b)) {
        Some("only lowercase letters, digits and '-' are allowed".into())
    } else if bytes[0] == b'-' || bytes[bytes.len() - 1] == b'-' {
        Some("it must start and end with a letter or digit".into())
    } else if K::RESERVED.contains(&text) {
        Some("it is reserved for capstan's own use".into())
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

impl<K> std::borrow::Borrow<str> for Name<K> {
    fn borrow(&self) -> &str {
        &self.text
    }
}

impl<K: NameKind> FromStr for Name<K> {
    type Err = InvalidName;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl<K: NameKind> TryFrom<String> for Name<K> {
    type Error = InvalidName;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        Self::new(text)
    }
}

impl<K> From<Name<K>> for String {
    fn from(name: Name<K>) -> String {
        name.text
    }
}

impl<K> PartialEq<str> for Name<K> {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl<K> PartialEq<&str> for Name<K> {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl<K> Serialize for Name<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de, K: NameKind> Deserialize<'de> for Name<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::new(text).map_err(serde::de::Error::custom)
    }
}

/// `NAMESPACE/NAME` of an object of `kind` (a ConfigMap, a
/// ServiceAccount): a DNS-1123 label, then a DNS-1123 subdomain name.
///
/// # Errors
/// One line naming the part that is not valid.
pub fn namespaced_name(text: &str, kind: &str) -> Result<(String, String), String> {
    let (namespace, name) = text
        .split_once('/')
        .ok_or_else(|| format!("{text:?} is not NAMESPACE/NAME"))?;
    let namespace = Namespace::new(namespace).map_err(|e| e.to_string())?;
    let valid = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    if !valid {
        return Err(format!("{name:?} is not a {kind} name"));
    }
    Ok((namespace.to_string(), name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_dns_labels() {
        for good in ["a", "hello", "cert-manager", "x1", "0abc", "9lives"] {
            assert_eq!(AppName::parse(good).unwrap().as_str(), good);
        }
        assert!(AppName::new("a".repeat(MAX_APP_NAME_LEN)).is_ok());
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
            (
                "../etc",
                "only lowercase letters, digits and '-' are allowed",
            ),
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
    fn one_length_rule_per_kind() {
        let app_max = "a".repeat(MAX_APP_NAME_LEN);
        let too_long_app = "a".repeat(MAX_APP_NAME_LEN + 1);
        assert!(AppName::parse(&app_max).is_ok());
        assert_eq!(
            AppName::parse(&too_long_app).unwrap_err().to_string(),
            format!("app name {too_long_app:?} is invalid: it is longer than 53 characters")
        );
        assert!(Namespace::parse(&too_long_app).is_ok());
        assert!(ReleaseName::parse(&too_long_app).is_err());
        assert!(ChartName::parse(&"a".repeat(63)).is_ok());
        assert!(ChartName::parse(&"a".repeat(64)).is_err());
    }

    #[test]
    fn reserved_app_names_are_refused() {
        let err = AppName::parse("capstan-volumes").unwrap_err();
        assert_eq!(err.reason, "it is reserved for capstan's own use");
        assert!(ChartName::parse("capstan-volumes").is_ok());
    }

    #[test]
    fn json_is_a_plain_string_and_is_checked() {
        let name = AppName::new("vault").unwrap();
        assert_eq!(serde_json::to_string(&name).unwrap(), "\"vault\"");
        assert_eq!(serde_json::from_str::<AppName>("\"vault\"").unwrap(), name);
        assert!(serde_json::from_str::<AppName>("\"Bad Name\"").is_err());
    }
}
