//! Secret values (contract 0.2): generating them, placing them in a
//! chart's values, and hiding them from everything a person or a log reads.
//!
//! A plugin answers some values by reference ([`crate::model::SecretValue`]):
//! a key of an existing Secret, or a key of a secret the host generates
//! once per app ([`crate::model::GeneratedSecret`]). The host fills the
//! value in at render, and the value must never reach logs, history,
//! diffs, `override show`, JSON output, the status page or metrics. This
//! module owns the three pure steps of that:
//!
//! - [`generate`]: a password, an Ed25519 key pair or a self-signed
//!   certificate from a [`SecretShape`](crate::model::SecretShape), with
//!   the bounds of the contract re-checked ([`check_shape`]);
//! - [`parse_path`] and [`set`]: a secret value's dot-separated path
//!   (`auth.password`, `"a.b".c`) and placing a value at it;
//! - [`Redactor`]: replacing every known secret with [`REDACTED`] in text
//!   and JSON, as it is and in the forms the host writes it in (base64 as
//!   a Secret's `data` holds it, JSON- and YAML-escaped, line by line).
//!
//! Types that hold secret material ([`SecretBytes`], [`Redactor`]) print
//! `<redacted>` under `Debug`, wipe their buffers on drop (best effort:
//! copies made inside `rcgen`, `ring` and AWS-LC are theirs), and have no
//! `Display` or `Serialize`. No error of this module carries a secret.
//!
//! This module never talks to the cluster or the store and never logs:
//! reading an existing Secret, keeping a generated one in a Secret the app
//! owns, and deciding which texts to redact belong to its callers.

mod generate;
mod path;
mod redact;

use std::fmt;

use zeroize::Zeroizing;

pub use generate::{
    MAX_COMMON_NAME_BYTES, MAX_DNS_NAME_BYTES, MAX_DNS_NAMES, MAX_PASSWORD_LENGTH,
    MAX_VALIDITY_DAYS, MIN_PASSWORD_LENGTH, MIN_VALIDITY_DAYS, NOT_BEFORE_BACKDATE,
    PUBLIC_KEY_COMMENT, charset_chars, check_shape, generate, generate_at,
};
pub use path::{MAX_PATH_SEGMENTS, MAX_SEGMENT_BYTES, display_path, parse_path, set};
pub use redact::{MIN_SUBSTRING_BYTES, REDACTED, Redactor};

/// How long an input is quoted in an error before it is cut, in
/// characters: plugin input can be arbitrarily long.
const EXCERPT_CHARS: usize = 100;

/// Everything that can go wrong generating or placing a secret value.
///
/// No variant carries secret material: the inputs it quotes (a path, a
/// DNS name, a common name) are the plugin's references and subjects,
/// never values, and they are cut to their first 100 characters.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A password's length is outside
    /// [`MIN_PASSWORD_LENGTH`]`..=`[`MAX_PASSWORD_LENGTH`].
    #[error("password length {length} is outside {MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH}")]
    PasswordLength {
        /// The length asked for.
        length: u32,
    },
    /// A certificate's validity is outside
    /// [`MIN_VALIDITY_DAYS`]`..=`[`MAX_VALIDITY_DAYS`] days.
    #[error(
        "certificate validity of {days} days is outside {MIN_VALIDITY_DAYS} to {MAX_VALIDITY_DAYS}"
    )]
    ValidityDays {
        /// The days asked for.
        days: u32,
    },
    /// A certificate asks for more than [`MAX_DNS_NAMES`] DNS names.
    #[error("certificate has {count} DNS names, more than {MAX_DNS_NAMES}")]
    TooManyDnsNames {
        /// How many it asks for.
        count: usize,
    },
    /// A certificate's DNS name is not a DNS name: empty, longer than
    /// [`MAX_DNS_NAME_BYTES`], or with a label that is empty, longer than 63
    /// bytes, or not letters, digits and inner hyphens (a leading `*.` is
    /// allowed).
    #[error("certificate DNS name {name:?} is not valid: {reason}")]
    DnsName {
        /// The name (its first 100 characters).
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A certificate's common name is empty, longer than
    /// [`MAX_COMMON_NAME_BYTES`], or holds a control character.
    #[error("certificate common name {name:?} is not valid: {reason}")]
    CommonName {
        /// The name (its first 100 characters).
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The clock is before 1970 or so far ahead that the certificate would
    /// end after 9999-12-31, which X.509 cannot write.
    #[error("certificate validity cannot be written: the clock is out of range")]
    Clock,
    /// The random source kept giving bytes that rejection sampling throws
    /// away (a broken source: a sound one is refused with odds below
    /// 2^-32 per draw).
    #[error("the random source gave no usable bytes for a {what}")]
    RandomSource {
        /// What was being generated.
        what: &'static str,
    },
    /// AWS-LC refused the random scalar as a P-256 private key, or gave
    /// a public point of the wrong size.
    #[error("cannot build the certificate's P-256 key")]
    EcdsaKey,
    /// `rcgen` refused the certificate (its parameters or its key).
    #[error("cannot build the self-signed certificate")]
    Certificate(#[source] rcgen::Error),
    /// The Ed25519 public key could not be written in OpenSSH form.
    #[error("cannot write the Ed25519 public key in OpenSSH form")]
    PublicKey(#[source] ssh_key::Error),
    /// A secret value's path is empty.
    #[error("secret value path is empty")]
    EmptyPath,
    /// A secret value's path has an empty segment (`a..b`, `.a`, `a.`,
    /// `""`).
    #[error("secret value path {path:?} has an empty segment (segment {segment})")]
    EmptySegment {
        /// The path (its first 100 characters).
        path: String,
        /// The segment's position, from 1.
        segment: usize,
    },
    /// A secret value's path opens a quote it never closes.
    #[error("secret value path {path:?} has a quote that is never closed")]
    UnterminatedQuote {
        /// The path (its first 100 characters).
        path: String,
    },
    /// A secret value's path has a quote inside an unquoted segment.
    #[error(
        "secret value path {path:?} has a quote inside a segment at byte {offset}; quote the whole segment"
    )]
    StrayQuote {
        /// The path (its first 100 characters).
        path: String,
        /// The quote's byte offset in the path.
        offset: usize,
    },
    /// A secret value's path has something other than a dot right after a
    /// quoted segment.
    #[error(
        "secret value path {path:?} has text after a closing quote at byte {offset}; a quoted segment ends at a dot"
    )]
    TextAfterQuote {
        /// The path (its first 100 characters).
        path: String,
        /// The byte offset of that text.
        offset: usize,
    },
    /// A secret value's path has more than [`MAX_PATH_SEGMENTS`] segments.
    #[error("secret value path {path:?} has more than {MAX_PATH_SEGMENTS} segments")]
    TooManySegments {
        /// The path (its first 100 characters).
        path: String,
    },
    /// A segment of a secret value's path is longer than
    /// [`MAX_SEGMENT_BYTES`].
    #[error(
        "secret value path {path:?} has a segment longer than {MAX_SEGMENT_BYTES} bytes (segment {segment})"
    )]
    SegmentTooLong {
        /// The path (its first 100 characters).
        path: String,
        /// The segment's position, from 1.
        segment: usize,
    },
    /// Placing a secret value would go through a value that is not a map.
    #[error("cannot set secret value at {path:?}: {at:?} holds {found}, not a map")]
    NotAMap {
        /// The full path, as [`display_path`] writes it (first 100
        /// characters).
        path: String,
        /// The part of it that holds the other value.
        at: String,
        /// What that value is (`a string`, `a list`, ...).
        found: &'static str,
    },
}

/// Bytes of secret material: wiped when dropped, `<redacted>` under
/// `Debug`, and with no `Display`, `Serialize` or `PartialEq` (a
/// comparison that stops at the first difference tells how much matched).
///
/// Cloning copies the bytes; each copy is wiped when it drops.
#[derive(Clone, Default)]
pub struct SecretBytes(Zeroizing<Vec<u8>>);

impl SecretBytes {
    /// Takes `bytes` over without copying them.
    pub fn new(bytes: Vec<u8>) -> Self {
        Self(Zeroizing::new(bytes))
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The bytes as text, or `None` when they are not UTF-8. Every
    /// generated secret is ASCII text.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// How many bytes there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<Vec<u8>> for SecretBytes {
    fn from(bytes: Vec<u8>) -> Self {
        Self::new(bytes)
    }
}

impl From<String> for SecretBytes {
    fn from(text: String) -> Self {
        Self::new(text.into_bytes())
    }
}

impl fmt::Debug for SecretBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// The first [`EXCERPT_CHARS`] characters of `text`, with `...` when cut.
fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_cuts_long_input_on_a_char_boundary() {
        assert_eq!(excerpt("short"), "short");
        let long = "é".repeat(150);
        let cut = excerpt(&long);
        assert_eq!(cut, format!("{}...", "é".repeat(EXCERPT_CHARS)));
    }

    #[test]
    fn secret_bytes_debug_hides_the_bytes() {
        let secret = SecretBytes::from(String::from("hunter2-hunter2"));
        assert_eq!(format!("{secret:?}"), "<redacted>");
        assert_eq!(format!("{secret:#?}"), "<redacted>");
        assert_eq!(secret.as_str(), Some("hunter2-hunter2"));
        assert_eq!(secret.len(), 15);
        assert!(!secret.is_empty());
        assert_eq!(SecretBytes::new(vec![0xff]).as_str(), None);
    }

    #[test]
    fn errors_read_as_one_line() {
        let e = Error::NotAMap {
            path: "auth.password".into(),
            at: "auth".into(),
            found: "a string",
        };
        assert_eq!(
            e.to_string(),
            r#"cannot set secret value at "auth.password": "auth" holds a string, not a map"#
        );
        assert_eq!(
            Error::PasswordLength { length: 4 }.to_string(),
            "password length 4 is outside 8 to 256"
        );
    }
}
