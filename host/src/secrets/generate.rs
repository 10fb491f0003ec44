//! Generating a secret from its shape: a password, an Ed25519 key pair or
//! a self-signed certificate, each as the keys contract 0.2 names
//! ([`SecretShape::keys`]), after re-checking the contract's bounds.
//!
//! All randomness comes from the caller's random source (the daemon passes
//! the operating system's): password characters, the Ed25519 seed, the
//! P-256 scalar and the certificate's serial number. Only the ECDSA
//! signature's nonce comes from `ring`'s own source, which is never part
//! of the secret.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rand_core::CryptoRngCore;
use rcgen::string::Ia5String;
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    PKCS_ECDSA_P256_SHA256, SanType, SerialNumber,
};
use rustls::pki_types::PrivatePkcs8KeyDer;
use ssh_key::private::Ed25519Keypair;
use ssh_key::public::KeyData;
use zeroize::Zeroizing;

use super::{Error, SecretBytes, excerpt};
use crate::model::{Charset, SecretShape};

/// The shortest password the contract allows.
pub const MIN_PASSWORD_LENGTH: u32 = 8;
/// The longest password the contract allows.
pub const MAX_PASSWORD_LENGTH: u32 = 256;
/// The shortest certificate validity the contract allows, in days.
pub const MIN_VALIDITY_DAYS: u32 = 1;
/// The longest certificate validity the contract allows, in days.
pub const MAX_VALIDITY_DAYS: u32 = 3650;
/// The most DNS names a certificate may carry.
pub const MAX_DNS_NAMES: usize = 100;
/// The longest DNS name, in bytes (RFC 1035 text form without the final
/// dot).
pub const MAX_DNS_NAME_BYTES: usize = 253;
/// The longest common name, in bytes (X.520's upper bound is 64
/// characters; counting bytes is stricter for non-ASCII names).
pub const MAX_COMMON_NAME_BYTES: usize = 64;
/// How far before "now" a certificate's validity starts, so that a client
/// whose clock is a little behind the host's accepts it at once. Its end is
/// exactly the asked number of days after "now".
pub const NOT_BEFORE_BACKDATE: Duration = Duration::from_secs(5 * 60);
/// The comment of a generated public key's OpenSSH line.
pub const PUBLIC_KEY_COMMENT: &str = "capstan";

/// The longest label of a DNS name, in bytes.
const MAX_DNS_LABEL_BYTES: usize = 63;
/// 9999-12-31T23:59:59Z in seconds from the Unix epoch: the last instant
/// X.509's GeneralizedTime (and the `time` crate) can write.
const MAX_X509_SECONDS: u64 = 253_402_300_799;
/// Random bytes drawn at a time for a password.
const PASSWORD_CHUNK: usize = 64;
/// Random bytes a password may use up per character before the source is
/// called broken. The worst charset, `printable`, throws away 76 of 256
/// byte values; a sound source fails this with odds far below 2^-100.
const PASSWORD_DRAWS_PER_CHAR: usize = 64;
/// Draws of a P-256 scalar before the source is called broken (a sound
/// source needs a second draw with odds of about 2^-32).
const SCALAR_DRAWS: usize = 8;

/// `A-Z a-z 0-9`.
const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
/// `0-9 a-f`.
const HEX: &[u8] = b"0123456789abcdef";
/// ASCII `!` to `~` but `"`, `'`, `` ` `` and `\`: 90 characters.
const PRINTABLE: &[u8] =
    b"!#$%&()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_abcdefghijklmnopqrstuvwxyz{|}~";

/// PKCS #8 v1 `PrivateKeyInfo` of an Ed25519 key up to its 32-byte seed
/// (RFC 8410, section 7): version 0, algorithm 1.3.101.112, and the seed
/// as an OCTET STRING inside the privateKey OCTET STRING.
const ED25519_PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
/// RFC 5915 `ECPrivateKey` up to its 32-byte scalar: SEQUENCE, version 1,
/// OCTET STRING of 32 bytes.
const EC_PRIVATE_KEY_PREFIX: [u8; 7] = [0x30, 0x31, 0x02, 0x01, 0x01, 0x04, 0x20];
/// RFC 5915 `ECPrivateKey` after its scalar: `[0]` parameters, the named
/// curve prime256v1 (1.2.840.10045.3.1.7). The public key is left out;
/// AWS-LC computes it.
const EC_PRIVATE_KEY_CURVE: [u8; 12] = [
    0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
];
/// PKCS #8 v1 `PrivateKeyInfo` of a P-256 key up to its 32-byte scalar:
/// version 0, algorithm id-ecPublicKey with prime256v1, and an RFC 5915
/// `ECPrivateKey` (version 1, the scalar) as the privateKey OCTET STRING.
/// The layout `ring` writes and requires (the public key present, the
/// curve not repeated), which OpenSSL and Go read too.
const P256_PKCS8_PREFIX: [u8; 36] = [
    0x30, 0x81, 0x87, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02,
    0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x04, 0x6d, 0x30, 0x6b, 0x02,
    0x01, 0x01, 0x04, 0x20,
];
/// The P-256 `PrivateKeyInfo` between the scalar and the 65-byte
/// uncompressed public point: `[1]` holding a BIT STRING with no unused
/// bits.
const P256_PKCS8_PUBLIC: [u8; 5] = [0xa1, 0x44, 0x03, 0x42, 0x00];
/// The length of an uncompressed P-256 point (`04 || X || Y`).
const P256_POINT_BYTES: usize = 65;
/// The order n of P-256's base point, big-endian: a private scalar is in
/// `1..n`.
const P256_ORDER: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
];

/// The characters a password of `charset` is drawn from, each once:
///
/// - `alphanumeric`: `A-Z a-z 0-9` (62);
/// - `hex`: `0-9 a-f` (16);
/// - `printable`: ASCII `!` (0x21) to `~` (0x7e) but the double quote,
///   the single quote, the backquote and the backslash (90). The contract
///   says "printable ASCII but space, quotes and backslash"; the backquote
///   counts as a quote here because shells and Markdown read it as one.
pub fn charset_chars(charset: Charset) -> &'static [u8] {
    match charset {
        Charset::Alphanumeric => ALPHANUMERIC,
        Charset::Hex => HEX,
        Charset::Printable => PRINTABLE,
    }
}

/// Checks a shape against the contract's bounds without generating
/// anything: what [`generate`] checks first.
///
/// # Errors
///
/// [`Error::PasswordLength`] outside
/// [`MIN_PASSWORD_LENGTH`]`..=`[`MAX_PASSWORD_LENGTH`];
/// [`Error::ValidityDays`] outside
/// [`MIN_VALIDITY_DAYS`]`..=`[`MAX_VALIDITY_DAYS`];
/// [`Error::TooManyDnsNames`] past [`MAX_DNS_NAMES`]; [`Error::DnsName`]
/// for a name that is not a DNS name (a leading `*.` is allowed);
/// [`Error::CommonName`] for an empty common name, one past
/// [`MAX_COMMON_NAME_BYTES`], or one with a control character.
pub fn check_shape(shape: &SecretShape) -> Result<(), Error> {
    match shape {
        SecretShape::Password { length, .. } => {
            if (MIN_PASSWORD_LENGTH..=MAX_PASSWORD_LENGTH).contains(length) {
                Ok(())
            } else {
                Err(Error::PasswordLength { length: *length })
            }
        }
        SecretShape::Ed25519Key => Ok(()),
        SecretShape::Certificate {
            common_name,
            dns_names,
            validity_days,
        } => {
            if !(MIN_VALIDITY_DAYS..=MAX_VALIDITY_DAYS).contains(validity_days) {
                return Err(Error::ValidityDays {
                    days: *validity_days,
                });
            }
            check_common_name(common_name).map_err(|reason| Error::CommonName {
                name: excerpt(common_name),
                reason,
            })?;
            if dns_names.len() > MAX_DNS_NAMES {
                return Err(Error::TooManyDnsNames {
                    count: dns_names.len(),
                });
            }
            for name in dns_names {
                check_dns_name(name).map_err(|reason| Error::DnsName {
                    name: excerpt(name),
                    reason,
                })?;
            }
            Ok(())
        }
    }
}

/// Generates a secret of `shape` from `rng`, with certificates valid from
/// the system clock: [`generate_at`] with [`SystemTime::now`].
///
/// # Errors
///
/// As [`generate_at`].
pub fn generate(
    shape: &SecretShape,
    rng: &mut impl CryptoRngCore,
) -> Result<BTreeMap<String, SecretBytes>, Error> {
    generate_at(shape, rng, SystemTime::now())
}

/// Generates a secret of `shape` from `rng`, a certificate being valid from
/// `now` less [`NOT_BEFORE_BACKDATE`] to `now` plus its days. Returns the
/// keys [`SecretShape::keys`] names, each ASCII text:
///
/// - a password: `password`, `length` characters drawn uniformly from
///   [`charset_chars`] (rejection sampling: a random byte past the largest
///   multiple of the charset's size is thrown away, so no character is
///   likelier than another);
/// - an Ed25519 key: `private-key`, the PKCS #8 `PRIVATE KEY` PEM of a
///   random 32-byte seed, and `public-key`, its OpenSSH line
///   `ssh-ed25519 AAAA... capstan` without a final newline;
/// - a certificate: `tls.key`, the PKCS #8 `PRIVATE KEY` PEM of a random
///   P-256 key; `tls.crt`, a self-signed X.509 v3 certificate with that
///   key, signed with ECDSA and SHA-256, a random 126-bit serial number,
///   the common name as its subject and issuer, the DNS names as subject
///   alternative names, `CA:FALSE`, extended key usages server and client
///   authentication, and no key usage extension (OpenSSL takes a
///   certificate whose key usage lacks `keyCertSign` as not self-signed,
///   so it could not be its own trust anchor); and `ca.crt`, the same
///   certificate, the one a client trusts to reach the holder of
///   `tls.key`.
///
/// Every buffer of secret material this module fills is wiped when
/// dropped; `rcgen` and AWS-LC keep copies of the certificate's key that
/// are not.
///
/// # Errors
///
/// Those of [`check_shape`], then [`Error::Clock`] when `now` is before
/// 1970 or the certificate would end past 9999; [`Error::RandomSource`]
/// when `rng` keeps giving bytes rejection sampling throws away;
/// [`Error::EcdsaKey`], [`Error::Certificate`] or [`Error::PublicKey`] when
/// a library refuses its step.
pub fn generate_at(
    shape: &SecretShape,
    rng: &mut impl CryptoRngCore,
    now: SystemTime,
) -> Result<BTreeMap<String, SecretBytes>, Error> {
    check_shape(shape)?;
    let keys = match shape {
        SecretShape::Password { length, charset } => {
            vec![("password", password(*length, *charset, rng)?)]
        }
        SecretShape::Ed25519Key => {
            let (private, public) = ed25519_key(rng)?;
            vec![("private-key", private), ("public-key", public)]
        }
        SecretShape::Certificate {
            common_name,
            dns_names,
            validity_days,
        } => {
            let (cert, key) = certificate(common_name, dns_names, *validity_days, rng, now)?;
            vec![
                ("tls.crt", cert.clone()),
                ("tls.key", key),
                ("ca.crt", cert),
            ]
        }
    };
    Ok(keys
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect())
}

/// A password of `length` characters of `charset`, by rejection sampling.
fn password(
    length: u32,
    charset: Charset,
    rng: &mut impl CryptoRngCore,
) -> Result<SecretBytes, Error> {
    let chars = charset_chars(charset);
    let size = chars.len();
    // Byte values below `limit` map onto the charset evenly.
    let limit = 256 - 256 % size;
    let length = usize::try_from(length).map_err(|_| Error::PasswordLength { length })?;
    let mut out = Zeroizing::new(Vec::with_capacity(length));
    let mut chunk = Zeroizing::new([0u8; PASSWORD_CHUNK]);
    let mut budget = length.saturating_mul(PASSWORD_DRAWS_PER_CHAR);
    while out.len() < length {
        if budget < PASSWORD_CHUNK {
            return Err(Error::RandomSource { what: "password" });
        }
        budget -= PASSWORD_CHUNK;
        rng.fill_bytes(&mut chunk[..]);
        for &byte in chunk.iter() {
            let byte = usize::from(byte);
            if byte < limit
                && let Some(&c) = chars.get(byte % size)
            {
                out.push(c);
                if out.len() == length {
                    break;
                }
            }
        }
    }
    Ok(SecretBytes(out))
}

/// An Ed25519 key pair from a random seed: its PKCS #8 PEM and its
/// OpenSSH public line.
fn ed25519_key(rng: &mut impl CryptoRngCore) -> Result<(SecretBytes, SecretBytes), Error> {
    let mut seed = Zeroizing::new([0u8; 32]);
    rng.fill_bytes(&mut seed[..]);
    let pair = Ed25519Keypair::from_seed(&seed);
    let public = ssh_key::PublicKey::new(KeyData::Ed25519(pair.public), PUBLIC_KEY_COMMENT)
        .to_openssh()
        .map_err(Error::PublicKey)?;
    let mut der = Zeroizing::new(Vec::with_capacity(ED25519_PKCS8_PREFIX.len() + seed.len()));
    der.extend_from_slice(&ED25519_PKCS8_PREFIX);
    der.extend_from_slice(&seed[..]);
    Ok((pem("PRIVATE KEY", &der), SecretBytes::from(public)))
}

/// A self-signed certificate and its key, both PEM (see [`generate_at`]).
fn certificate(
    common_name: &str,
    dns_names: &[String],
    validity_days: u32,
    rng: &mut impl CryptoRngCore,
    now: SystemTime,
) -> Result<(SecretBytes, SecretBytes), Error> {
    let (not_before, not_after) = validity(now, validity_days)?;
    let key = p256_key(rng)?;
    let mut serial = [0u8; 16];
    rng.fill_bytes(&mut serial);
    // Positive, never zero, always 16 bytes long: 126 random bits.
    serial[0] = (serial[0] & 0x3f) | 0x40;

    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, common_name);
    params.distinguished_name = subject;
    params.subject_alt_names = dns_names
        .iter()
        .map(|name| {
            Ia5String::try_from(name.as_str())
                .map(SanType::DnsName)
                .map_err(Error::Certificate)
        })
        .collect::<Result<_, _>>()?;
    // Both offsets are at most MAX_X509_SECONDS: neither addition overflows.
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    params.not_before = epoch + not_before;
    params.not_after = epoch + not_after;
    params.serial_number = Some(SerialNumber::from_slice(&serial));
    params.is_ca = IsCa::ExplicitNoCa;
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let cert = params.self_signed(&key).map_err(Error::Certificate)?;
    Ok((
        SecretBytes::from(cert.pem()),
        SecretBytes::from(key.serialize_pem()),
    ))
}

/// A certificate's validity as offsets from the Unix epoch: `now` less
/// [`NOT_BEFORE_BACKDATE`] (not before 1970), and `now` plus `days` (not
/// past [`MAX_X509_SECONDS`]).
fn validity(now: SystemTime, days: u32) -> Result<(Duration, Duration), Error> {
    let now = now
        .duration_since(UNIX_EPOCH)
        .map_err(|_| Error::Clock)?
        .as_secs();
    let start = now.saturating_sub(NOT_BEFORE_BACKDATE.as_secs());
    let end = u64::from(days)
        .checked_mul(86_400)
        .and_then(|length| now.checked_add(length))
        .filter(|&end| end <= MAX_X509_SECONDS)
        .ok_or(Error::Clock)?;
    Ok((Duration::from_secs(start), Duration::from_secs(end)))
}

/// A P-256 key pair from a random scalar in `1..n` (rejection sampling),
/// ready for `rcgen`: AWS-LC computes the public point, and the PKCS #8
/// document is written here in the layout `ring` (under `rcgen`) reads.
fn p256_key(rng: &mut impl CryptoRngCore) -> Result<KeyPair, Error> {
    for _ in 0..SCALAR_DRAWS {
        let mut scalar = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(&mut scalar[..]);
        // Equal-length big-endian byte strings order as their numbers do.
        if scalar.iter().all(|&b| b == 0) || scalar[..] >= P256_ORDER[..] {
            continue;
        }
        let mut sec1 = Zeroizing::new(Vec::with_capacity(
            EC_PRIVATE_KEY_PREFIX.len() + scalar.len() + EC_PRIVATE_KEY_CURVE.len(),
        ));
        sec1.extend_from_slice(&EC_PRIVATE_KEY_PREFIX);
        sec1.extend_from_slice(&scalar[..]);
        sec1.extend_from_slice(&EC_PRIVATE_KEY_CURVE);
        let pair = EcdsaKeyPair::from_private_key_der(&ECDSA_P256_SHA256_ASN1_SIGNING, &sec1)
            .map_err(|_| Error::EcdsaKey)?;
        let point = pair.public_key().as_ref();
        if point.len() != P256_POINT_BYTES {
            return Err(Error::EcdsaKey);
        }
        let mut pkcs8 = Zeroizing::new(Vec::with_capacity(
            P256_PKCS8_PREFIX.len() + scalar.len() + P256_PKCS8_PUBLIC.len() + point.len(),
        ));
        pkcs8.extend_from_slice(&P256_PKCS8_PREFIX);
        pkcs8.extend_from_slice(&scalar[..]);
        pkcs8.extend_from_slice(&P256_PKCS8_PUBLIC);
        pkcs8.extend_from_slice(point);
        return KeyPair::from_pkcs8_der_and_sign_algo(
            &PrivatePkcs8KeyDer::from(pkcs8.as_slice()),
            &PKCS_ECDSA_P256_SHA256,
        )
        .map_err(Error::Certificate);
    }
    Err(Error::RandomSource { what: "P-256 key" })
}

/// `der` as PEM with `label`: base64 in lines of 64 characters, each line
/// and the end line ending in `\n`.
fn pem(label: &str, der: &[u8]) -> SecretBytes {
    let begin = format!("-----BEGIN {label}-----\n");
    let end = format!("-----END {label}-----\n");
    let body = der.len().div_ceil(48) * 65;
    let mut out = Zeroizing::new(Vec::with_capacity(begin.len() + body + end.len()));
    out.extend_from_slice(begin.as_bytes());
    for chunk in der.chunks(48) {
        let line = Zeroizing::new(STANDARD.encode(chunk));
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(end.as_bytes());
    SecretBytes(out)
}

/// Why `name` is not a common name, if it is not.
fn check_common_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        Err("it is empty")
    } else if name.len() > MAX_COMMON_NAME_BYTES {
        Err("it is longer than 64 bytes")
    } else if name.chars().any(char::is_control) {
        Err("it holds a control character")
    } else {
        Ok(())
    }
}

/// Why `name` is not a DNS name for a certificate, if it is not: labels of
/// 1 to 63 letters, digits and inner hyphens, at most 253 bytes in all,
/// and an optional leading `*.`.
fn check_dns_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("it is empty");
    }
    if name.len() > MAX_DNS_NAME_BYTES {
        return Err("it is longer than 253 bytes");
    }
    let rest = name.strip_prefix("*.").unwrap_or(name);
    for label in rest.split('.') {
        if label.is_empty() {
            return Err("it has an empty label");
        }
        if label.len() > MAX_DNS_LABEL_BYTES {
            return Err("it has a label longer than 63 bytes");
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err("it has a character other than letters, digits, hyphens and dots");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err("it has a label that starts or ends with a hyphen");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use rand_core::{CryptoRng, RngCore};
    use rustls::client::WebPkiServerVerifier;
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

    use super::*;

    /// SplitMix64: a seeded, deterministic source for tests only (it is
    /// not cryptographic; the trait bound is satisfied to exercise the
    /// real code path).
    struct TestRng(u64);

    impl RngCore for TestRng {
        fn next_u32(&mut self) -> u32 {
            (self.next_u64() >> 32) as u32
        }
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn fill_bytes(&mut self, dest: &mut [u8]) {
            rand_core::impls::fill_bytes_via_next(self, dest);
        }
        fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
            self.fill_bytes(dest);
            Ok(())
        }
    }

    impl CryptoRng for TestRng {}

    /// A broken source that gives the same byte forever.
    struct StuckRng(u8);

    impl RngCore for StuckRng {
        fn next_u32(&mut self) -> u32 {
            u32::from_ne_bytes([self.0; 4])
        }
        fn next_u64(&mut self) -> u64 {
            u64::from_ne_bytes([self.0; 8])
        }
        fn fill_bytes(&mut self, dest: &mut [u8]) {
            dest.fill(self.0);
        }
        fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
            self.fill_bytes(dest);
            Ok(())
        }
    }

    impl CryptoRng for StuckRng {}

    fn password_shape(length: u32, charset: Charset) -> SecretShape {
        SecretShape::Password { length, charset }
    }

    fn cert_shape(common_name: &str, dns_names: &[&str], validity_days: u32) -> SecretShape {
        SecretShape::Certificate {
            common_name: common_name.into(),
            dns_names: dns_names.iter().map(|&n| n.to_owned()).collect(),
            validity_days,
        }
    }

    fn text<'a>(secret: &'a BTreeMap<String, SecretBytes>, key: &str) -> &'a str {
        secret[key].as_str().expect("generated secrets are text")
    }

    fn keys(secret: &BTreeMap<String, SecretBytes>) -> Vec<&str> {
        secret.keys().map(String::as_str).collect()
    }

    #[test]
    fn printable_is_ascii_graphic_but_quotes_and_backslash() {
        let expected: Vec<u8> = (0x21..=0x7e)
            .filter(|b| !matches!(b, b'"' | b'\'' | b'`' | b'\\'))
            .collect();
        assert_eq!(PRINTABLE, expected.as_slice());
        assert_eq!(PRINTABLE.len(), 90);
        assert_eq!(ALPHANUMERIC.len(), 62);
        for chars in [ALPHANUMERIC, HEX, PRINTABLE] {
            let unique: BTreeSet<u8> = chars.iter().copied().collect();
            assert_eq!(unique.len(), chars.len(), "a charset repeats a character");
        }
    }

    #[test]
    fn password_has_the_length_and_only_charset_characters() {
        let mut rng = TestRng(1);
        for charset in [Charset::Alphanumeric, Charset::Hex, Charset::Printable] {
            for length in [8, 9, 63, 64, 65, 256] {
                let secret = generate(&password_shape(length, charset), &mut rng).unwrap();
                assert_eq!(keys(&secret), ["password"]);
                let password = secret["password"].as_bytes();
                assert_eq!(password.len(), length as usize);
                assert!(
                    password.iter().all(|c| charset_chars(charset).contains(c)),
                    "{charset:?} password has a character outside its charset"
                );
            }
        }
    }

    #[test]
    fn password_draws_every_character_and_nothing_else() {
        // Not a test of uniformity (rejection sampling gives that by
        // construction), a smoke test that no character is unreachable.
        for (charset, seed) in [
            (Charset::Alphanumeric, 7),
            (Charset::Hex, 8),
            (Charset::Printable, 9),
        ] {
            let mut rng = TestRng(seed);
            let mut counts = BTreeMap::<u8, usize>::new();
            let mut drawn = 0;
            while drawn < 20_000 {
                let secret = generate(&password_shape(256, charset), &mut rng).unwrap();
                for &c in secret["password"].as_bytes() {
                    *counts.entry(c).or_default() += 1;
                }
                drawn += 256;
            }
            let seen: Vec<u8> = counts.keys().copied().collect();
            let mut expected = charset_chars(charset).to_vec();
            expected.sort_unstable();
            assert_eq!(seen, expected, "{charset:?}");
            // Each of 90 characters in ~20,000 draws is expected ~228
            // times; a character at a quarter of that is a bias bug.
            let fair = drawn / expected.len();
            assert!(
                counts.values().all(|&n| n > fair / 4),
                "{charset:?}: {counts:?}"
            );
        }
    }

    #[test]
    fn password_is_deterministic_for_a_seed_and_differs_between_seeds() {
        let shape = password_shape(32, Charset::Alphanumeric);
        let a = generate(&shape, &mut TestRng(42)).unwrap();
        let b = generate(&shape, &mut TestRng(42)).unwrap();
        let c = generate(&shape, &mut TestRng(43)).unwrap();
        assert_eq!(a["password"].as_bytes(), b["password"].as_bytes());
        assert_ne!(a["password"].as_bytes(), c["password"].as_bytes());
    }

    #[test]
    fn password_from_the_operating_system() {
        let shape = password_shape(24, Charset::Printable);
        let a = generate(&shape, &mut rand_core::OsRng).unwrap();
        let b = generate(&shape, &mut rand_core::OsRng).unwrap();
        assert_eq!(a["password"].len(), 24);
        assert_ne!(a["password"].as_bytes(), b["password"].as_bytes());
    }

    #[test]
    fn password_length_bounds_are_rechecked() {
        for length in [0, 7, 257, u32::MAX] {
            let err = generate(&password_shape(length, Charset::Hex), &mut TestRng(1)).unwrap_err();
            assert!(matches!(err, Error::PasswordLength { length: l } if l == length));
        }
        assert_eq!(
            Error::PasswordLength { length: 7 }.to_string(),
            "password length 7 is outside 8 to 256"
        );
    }

    #[test]
    fn a_stuck_source_is_an_error_not_a_hang() {
        // 0xff is past the last even multiple of 62 and of 90.
        for charset in [Charset::Alphanumeric, Charset::Printable] {
            let err = generate(&password_shape(256, charset), &mut StuckRng(0xff)).unwrap_err();
            assert!(
                matches!(err, Error::RandomSource { what: "password" }),
                "{err}"
            );
        }
        // 0xff.. is past P-256's order, 0x00.. is zero.
        for byte in [0xff, 0x00] {
            let err = generate(&cert_shape("x", &[], 1), &mut StuckRng(byte)).unwrap_err();
            assert!(
                matches!(err, Error::RandomSource { what: "P-256 key" }),
                "{err}"
            );
        }
        // Hex uses every byte value: a stuck source gives a (poor) password.
        let secret = generate(&password_shape(8, Charset::Hex), &mut StuckRng(0xff)).unwrap();
        assert_eq!(secret["password"].as_str(), Some("ffffffff"));
    }

    #[test]
    fn ed25519_private_key_parses_back_and_matches_the_openssh_line() {
        let secret = generate(&SecretShape::Ed25519Key, &mut TestRng(5)).unwrap();
        assert_eq!(keys(&secret), ["private-key", "public-key"]);
        let private = text(&secret, "private-key");
        let public = text(&secret, "public-key");
        assert!(private.starts_with("-----BEGIN PRIVATE KEY-----\n"));
        assert!(private.ends_with("-----END PRIVATE KEY-----\n"));
        assert!(public.starts_with("ssh-ed25519 AAAA"));
        assert!(public.ends_with(" capstan"));

        // ring (through rcgen) reads the PKCS #8 key as Ed25519 ...
        let pair = KeyPair::from_pem(private).unwrap();
        assert_eq!(pair.algorithm(), &rcgen::PKCS_ED25519);
        // ... and ssh-key reads the OpenSSH line: the same public key.
        let openssh = ssh_key::PublicKey::from_openssh(public).unwrap();
        assert_eq!(openssh.comment(), PUBLIC_KEY_COMMENT);
        let from_line = openssh.key_data().ed25519().unwrap();
        assert_eq!(pair.public_key_raw(), from_line.as_ref());

        // rustls reads it too, and signs with it.
        let der = PrivateKeyDer::from_pem_slice(private.as_bytes()).unwrap();
        let signer = rustls::crypto::ring::sign::any_supported_type(&der).unwrap();
        let spki = signer.public_key().unwrap();
        assert!(spki.as_ref().ends_with(from_line.as_ref()));
    }

    #[test]
    fn ed25519_key_is_deterministic_for_a_seed() {
        let a = generate(&SecretShape::Ed25519Key, &mut TestRng(9)).unwrap();
        let b = generate(&SecretShape::Ed25519Key, &mut TestRng(9)).unwrap();
        let c = generate(&SecretShape::Ed25519Key, &mut TestRng(10)).unwrap();
        assert_eq!(text(&a, "private-key"), text(&b, "private-key"));
        assert_eq!(text(&a, "public-key"), text(&b, "public-key"));
        assert_ne!(text(&a, "public-key"), text(&c, "public-key"));
    }

    fn verifier(ca_pem: &str) -> Arc<WebPkiServerVerifier> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
            .unwrap();
        WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap()
    }

    fn verify(
        verifier: &WebPkiServerVerifier,
        cert: &CertificateDer<'_>,
        name: &str,
        at: u64,
    ) -> Result<(), rustls::Error> {
        verifier
            .verify_server_cert(
                cert,
                &[],
                &ServerName::try_from(name.to_owned()).unwrap(),
                &[],
                UnixTime::since_unix_epoch(Duration::from_secs(at)),
            )
            .map(|_| ())
    }

    #[test]
    fn certificate_is_trusted_by_rustls_for_its_names_and_days() {
        let now_secs = 1_750_000_000;
        let now = UNIX_EPOCH + Duration::from_secs(now_secs);
        let shape = cert_shape("db.example.com", &["db.example.com", "*.db.svc"], 30);
        let secret = generate_at(&shape, &mut TestRng(3), now).unwrap();
        assert_eq!(keys(&secret), ["ca.crt", "tls.crt", "tls.key"]);
        let crt = text(&secret, "tls.crt");
        let key = text(&secret, "tls.key");
        assert_eq!(crt, text(&secret, "ca.crt"));
        assert!(crt.starts_with("-----BEGIN CERTIFICATE-----\n"));
        assert!(key.starts_with("-----BEGIN PRIVATE KEY-----\n"));

        let cert = CertificateDer::from_pem_slice(crt.as_bytes()).unwrap();
        let verifier = verifier(text(&secret, "ca.crt"));
        verify(&verifier, &cert, "db.example.com", now_secs).unwrap();
        verify(&verifier, &cert, "x.db.svc", now_secs).unwrap();
        // Backdated a little, and ends exactly `validity_days` later.
        verify(&verifier, &cert, "db.example.com", now_secs - 299).unwrap();
        verify(&verifier, &cert, "db.example.com", now_secs + 30 * 86_400).unwrap();
        assert!(verify(&verifier, &cert, "db.example.com", now_secs - 301).is_err());
        assert!(
            verify(
                &verifier,
                &cert,
                "db.example.com",
                now_secs + 30 * 86_400 + 1
            )
            .is_err()
        );
        // Only its names.
        assert!(verify(&verifier, &cert, "other.example.com", now_secs).is_err());

        // The key is a P-256 key, and the certificate's.
        let pair = KeyPair::from_pem(key).unwrap();
        assert_eq!(pair.algorithm(), &PKCS_ECDSA_P256_SHA256);
        let der = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
        let signer = rustls::crypto::ring::sign::any_ecdsa_type(&der).unwrap();
        let spki = signer.public_key().unwrap();
        assert!(
            cert.as_ref()
                .windows(spki.as_ref().len())
                .any(|w| w == spki.as_ref()),
            "the certificate does not hold tls.key's public key"
        );
    }

    #[test]
    fn certificate_keys_differ_between_seeds_and_calls() {
        let shape = cert_shape("a", &["a.example"], 1);
        let a = generate(&shape, &mut TestRng(1)).unwrap();
        let b = generate(&shape, &mut TestRng(2)).unwrap();
        assert_ne!(text(&a, "tls.key"), text(&b, "tls.key"));
        let c = generate(&shape, &mut rand_core::OsRng).unwrap();
        assert_ne!(text(&a, "tls.key"), text(&c, "tls.key"));
    }

    #[test]
    fn certificate_with_the_most_names_and_days() {
        let names: Vec<String> = (0..MAX_DNS_NAMES)
            .map(|i| format!("n{i}.example"))
            .collect();
        let long = format!(
            "{}.{}.{}.{}",
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(61)
        );
        assert_eq!(long.len(), MAX_DNS_NAME_BYTES);
        let mut refs: Vec<&str> = names.iter().map(String::as_str).collect();
        refs[0] = &long;
        let shape = cert_shape(&"c".repeat(64), &refs, MAX_VALIDITY_DAYS);
        let now = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
        let secret = generate_at(&shape, &mut TestRng(4), now).unwrap();
        let cert = CertificateDer::from_pem_slice(secret["tls.crt"].as_bytes()).unwrap();
        let verifier = verifier(text(&secret, "ca.crt"));
        let end = 1_750_000_000 + u64::from(MAX_VALIDITY_DAYS) * 86_400;
        verify(&verifier, &cert, "n99.example", end).unwrap();
        verify(&verifier, &cert, &long, end).unwrap();
    }

    #[test]
    fn certificate_bounds_are_rechecked() {
        let mut rng = TestRng(1);
        let mut check = |shape: SecretShape| generate(&shape, &mut rng).unwrap_err();

        assert!(matches!(
            check(cert_shape("a", &[], 0)),
            Error::ValidityDays { days: 0 }
        ));
        assert!(matches!(
            check(cert_shape("a", &[], 3651)),
            Error::ValidityDays { days: 3651 }
        ));
        let names: Vec<String> = (0..=MAX_DNS_NAMES)
            .map(|i| format!("n{i}.example"))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        assert!(matches!(
            check(cert_shape("a", &refs, 1)),
            Error::TooManyDnsNames { count: 101 }
        ));

        for (name, reason) in [
            ("", "it is empty"),
            (&*"a.".repeat(127), "it is longer than 253 bytes"),
            ("a..b", "it has an empty label"),
            ("example.com.", "it has an empty label"),
            ("*.", "it has an empty label"),
            (&*"a".repeat(64), "it has a label longer than 63 bytes"),
            (
                "a_b.example",
                "it has a character other than letters, digits, hyphens and dots",
            ),
            (
                "a.*.example",
                "it has a character other than letters, digits, hyphens and dots",
            ),
            (
                "bücher.example",
                "it has a character other than letters, digits, hyphens and dots",
            ),
            (
                "-a.example",
                "it has a label that starts or ends with a hyphen",
            ),
        ] {
            match check(cert_shape("a", &[name], 1)) {
                Error::DnsName { reason: r, .. } => assert_eq!(r, reason, "{name}"),
                other => panic!("{name}: {other}"),
            }
        }
        for (name, reason) in [
            ("", "it is empty"),
            (&*"é".repeat(33), "it is longer than 64 bytes"),
            ("a\nb", "it holds a control character"),
        ] {
            match check(cert_shape(name, &[], 1)) {
                Error::CommonName { reason: r, .. } => assert_eq!(r, reason, "{name}"),
                other => panic!("{name}: {other}"),
            }
        }
        let err = check(cert_shape("a", &["a b"], 1));
        assert_eq!(
            err.to_string(),
            r#"certificate DNS name "a b" is not valid: it has a character other than letters, digits, hyphens and dots"#
        );
        // A hostile name is quoted cut and escaped.
        let err = check(cert_shape("a", &[&"\n".repeat(300)], 1));
        assert!(err.to_string().len() < 400);
        assert!(!err.to_string().contains('\n'));
    }

    #[test]
    fn check_shape_accepts_the_edges() {
        for shape in [
            password_shape(MIN_PASSWORD_LENGTH, Charset::Hex),
            password_shape(MAX_PASSWORD_LENGTH, Charset::Printable),
            SecretShape::Ed25519Key,
            cert_shape("a", &[], MIN_VALIDITY_DAYS),
            cert_shape("Ünïcode CN", &["*.a", "a", "0-0.x"], MAX_VALIDITY_DAYS),
        ] {
            check_shape(&shape).unwrap();
        }
    }

    #[test]
    fn the_clock_must_be_writable() {
        let shape = cert_shape("a", &[], 3650);
        let before_1970 = UNIX_EPOCH - Duration::from_secs(1);
        assert!(matches!(
            generate_at(&shape, &mut TestRng(1), before_1970),
            Err(Error::Clock)
        ));
        let late = UNIX_EPOCH + Duration::from_secs(MAX_X509_SECONDS - 3649 * 86_400);
        assert!(matches!(
            generate_at(&shape, &mut TestRng(1), late),
            Err(Error::Clock)
        ));
        // Just in range: ends at 9999-12-31T23:59:59Z.
        let last = UNIX_EPOCH + Duration::from_secs(MAX_X509_SECONDS - 3650 * 86_400);
        generate_at(&shape, &mut TestRng(1), last).unwrap();
        // At the epoch, the backdate stops at 1970.
        generate_at(&shape, &mut TestRng(1), UNIX_EPOCH).unwrap();
    }

    #[test]
    fn debug_of_a_generated_secret_prints_no_secret() {
        let now = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
        for shape in [
            password_shape(16, Charset::Alphanumeric),
            SecretShape::Ed25519Key,
            cert_shape("a", &["a.example"], 1),
        ] {
            let secret = generate_at(&shape, &mut TestRng(11), now).unwrap();
            let debug = format!("{secret:?}");
            let pretty = format!("{secret:#?}");
            for (key, value) in &secret {
                let value = value.as_str().unwrap();
                assert!(!debug.contains(value) && !pretty.contains(value), "{key}");
                // Not even a line of a PEM.
                for line in value.lines().filter(|l| !l.starts_with("-----")) {
                    assert!(!debug.contains(line), "{key}");
                }
                assert!(debug.contains(&format!("{key:?}: <redacted>")), "{debug}");
            }
        }
    }
}
