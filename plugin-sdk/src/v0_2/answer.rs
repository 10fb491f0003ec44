//! A plugin's [`Answer`] for one chart: values, values the host fills in
//! from secrets at render, secrets for the host to generate once per app,
//! or "leave this chart out".

use crate::v0_1::Values;

/// The keys of the secrets the host generates, by [`Shape`].
pub mod key {
    /// A [`Shape::Password`](super::Shape::Password)'s only key.
    pub const PASSWORD: &str = "password";
    /// An [`Shape::Ed25519Key`](super::Shape::Ed25519Key)'s private key
    /// (PKCS #8 PEM).
    pub const PRIVATE_KEY: &str = "private-key";
    /// An [`Shape::Ed25519Key`](super::Shape::Ed25519Key)'s public key
    /// (OpenSSH form).
    pub const PUBLIC_KEY: &str = "public-key";
    /// A [`Shape::Certificate`](super::Shape::Certificate)'s certificate
    /// (PEM).
    pub const TLS_CRT: &str = "tls.crt";
    /// A [`Shape::Certificate`](super::Shape::Certificate)'s private key
    /// (PEM).
    pub const TLS_KEY: &str = "tls.key";
    /// A [`Shape::Certificate`](super::Shape::Certificate)'s issuer, itself
    /// (PEM).
    pub const CA_CRT: &str = "ca.crt";
}

/// A key of a Secret in the cluster. The plugin names it; only the host
/// reads it, under the operator's policy (by default, Secrets in the app's
/// own namespaces).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SecretKeyRef {
    /// The Secret's namespace.
    pub namespace: String,
    /// The Secret's name.
    pub name: String,
    /// The key within its data.
    pub key: String,
}

impl SecretKeyRef {
    /// Key `key` of Secret `namespace`/`name`.
    pub fn new(namespace: &str, name: &str, key: &str) -> Self {
        SecretKeyRef {
            namespace: namespace.into(),
            name: name.into(),
            key: key.into(),
        }
    }
}

/// A key of a secret the host generated for this app (see
/// [`Answer::generate`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GeneratedKey {
    /// The generated secret's name.
    pub name: String,
    /// The key, one of [`key`]'s.
    pub key: String,
}

/// Where a secret value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SecretSource {
    /// A key of an existing Secret.
    Existing(SecretKeyRef),
    /// A key of a secret the host generated for this app.
    Generated(GeneratedKey),
}

/// A Helm value the host fills in at render from a secret. Neither the
/// plugin nor the host's records ever hold the value itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SecretValue {
    /// The value's path, dot-separated (`auth.password`); a segment holding
    /// a dot is written within quotes (`"a.b".c`).
    pub path: String,
    /// Where its value comes from.
    pub source: SecretSource,
}

/// The characters a generated password is drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Charset {
    /// `A-Z a-z 0-9`.
    Alphanumeric,
    /// `0-9 a-f`.
    Hex,
    /// Printable ASCII but space, quotes and backslash.
    Printable,
}

/// What the host generates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Shape {
    /// A random password: key [`key::PASSWORD`].
    Password {
        /// Its length, 8 to 256 (the host refuses others).
        length: u32,
        /// Its characters.
        charset: Charset,
    },
    /// An Ed25519 key pair: keys [`key::PRIVATE_KEY`] and
    /// [`key::PUBLIC_KEY`].
    Ed25519Key,
    /// A self-signed certificate with an ECDSA P-256 key: keys
    /// [`key::TLS_CRT`], [`key::TLS_KEY`] and [`key::CA_CRT`].
    Certificate {
        /// Its common name.
        common_name: String,
        /// Its DNS subject alternative names.
        dns_names: Vec<String>,
        /// How many days it is valid, 1 to 3650 (the host refuses others).
        validity_days: u32,
    },
}

impl Shape {
    /// A password of `length` characters (8 to 256) from `charset`.
    pub fn password(length: u32, charset: Charset) -> Self {
        Shape::Password { length, charset }
    }

    /// An Ed25519 key pair.
    pub fn ed25519_key() -> Self {
        Shape::Ed25519Key
    }

    /// A self-signed certificate for `common_name` and `dns_names`, valid
    /// `validity_days` days (1 to 3650).
    pub fn certificate<I, S>(common_name: &str, dns_names: I, validity_days: u32) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Shape::Certificate {
            common_name: common_name.into(),
            dns_names: dns_names.into_iter().map(Into::into).collect(),
            validity_days,
        }
    }
}

/// A secret the host generates once for the app, keeps in a Secret the app
/// owns, and hands out unchanged on every later apply, update and rollback
/// until the app is deleted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GeneratedSecret {
    /// Its name within the app, a DNS-1123 label.
    pub name: String,
    /// What to generate. Asking for a name again with another shape is an
    /// error.
    pub shape: Shape,
}

/// A plugin's answer for one chart.
///
/// ```
/// use capstan_plugin_sdk::v0_2::{Answer, Charset, SecretKeyRef, Shape, Values, key};
/// let answer = Answer::new(Values::new().set("replicaCount", 2))
///     .generate("admin", Shape::password(32, Charset::Alphanumeric))
///     .secret_generated("auth.adminPassword", "admin", key::PASSWORD)
///     .secret_from("auth.ldapPassword", SecretKeyRef::new("platform", "ldap", "password"));
/// assert_eq!(answer.secret_values.len(), 2);
/// assert!(!answer.disabled);
/// assert!(Answer::disabled().disabled);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// The chart's system overrides.
    pub values: Values,
    /// Values the host fills in from secrets at render. They are never
    /// stored, logged, shown or diffed: only their references are.
    pub secret_values: Vec<SecretValue>,
    /// Secrets to generate (once) for the app.
    pub generate: Vec<GeneratedSecret>,
    /// True to leave this chart out of the apply: it is not rendered, and its
    /// release is removed if it was installed.
    pub disabled: bool,
}

impl Answer {
    /// An answer with these system overrides and nothing else.
    pub fn new(values: Values) -> Self {
        Answer {
            values,
            ..Answer::default()
        }
    }

    /// An answer that leaves the chart out of the apply (and removes its
    /// release if it was installed).
    pub fn disabled() -> Self {
        Answer {
            disabled: true,
            ..Answer::default()
        }
    }

    /// Fills the value at `path` in at render from key `secret` of an
    /// existing Secret.
    pub fn secret_from(mut self, path: &str, secret: SecretKeyRef) -> Self {
        self.secret_values.push(SecretValue {
            path: path.into(),
            source: SecretSource::Existing(secret),
        });
        self
    }

    /// Fills the value at `path` in at render from key `key` (see [`key`])
    /// of the secret the host generated as `name` (ask for it with
    /// [`Answer::generate`]).
    pub fn secret_generated(mut self, path: &str, name: &str, key: &str) -> Self {
        self.secret_values.push(SecretValue {
            path: path.into(),
            source: SecretSource::Generated(GeneratedKey {
                name: name.into(),
                key: key.into(),
            }),
        });
        self
    }

    /// Asks the host to generate secret `name` of `shape` for the app, once.
    pub fn generate(mut self, name: &str, shape: Shape) -> Self {
        self.generate.push(GeneratedSecret {
            name: name.into(),
            shape,
        });
        self
    }

    /// The secret source of the value at `path`, if the answer has one (for
    /// tests).
    pub fn secret_at(&self, path: &str) -> Option<&SecretSource> {
        self.secret_values
            .iter()
            .find(|s| s.path == path)
            .map(|s| &s.source)
    }
}

impl From<Values> for Answer {
    fn from(values: Values) -> Self {
        Answer::new(values)
    }
}
