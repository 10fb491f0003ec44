//! Sprig's key and certificate generators, with Go's `crypto/x509`
//! layout: RSA keys (2048 bits for certificates, 4096 for `genPrivateKey`)
//! as PKCS#1 `RSA PRIVATE KEY` PEM, ed25519 keys as PKCS#8, and X.509 v3
//! certificates signed with SHA-256 and RSA, carrying the extensions Go
//! writes for Sprig's templates (key usage, extended key usage server and
//! client auth, basic constraints, subject and authority key ids, subject
//! alternative names). Also `buildCustomCert` and `derivePassword` (the
//! Master Password algorithm, scrypt-based).
//!
//! A certificate is a map with `Cert` and `Key` (PEM text), as Sprig's
//! `certificate` struct is read in templates (`$ca.Cert`).
//!
//! Not supported: `ecdsa` and `dsa` keys (`genPrivateKey` returns an
//! error text for them, and the `*WithKey` functions accept only RSA
//! keys).

use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey, EncodeRsaPublicKey};
use rsa::pkcs8::DecodePrivateKey;
use rsa::{Pkcs1v15Sign, RsaPrivateKey};
use sha2::{Digest, Sha256};

use super::args::{dict, exactly, integer, text, wrong_type};
use super::der::{self, Element};
use super::{FuncError, Function};
use crate::values::{Map, Value};

pub(super) const FUNCTIONS: &[(&str, Function)] = &[
    ("genPrivateKey", gen_private_key),
    ("genCA", gen_ca),
    ("genCAWithKey", gen_ca_with_key),
    ("genSelfSignedCert", gen_self_signed_cert),
    ("genSelfSignedCertWithKey", gen_self_signed_cert_with_key),
    ("genSignedCert", gen_signed_cert),
    ("genSignedCertWithKey", gen_signed_cert_with_key),
    ("buildCustomCert", build_custom_cert),
    ("derivePassword", derive_password),
];

/// The longest validity a certificate gets, in days (about 2700 years).
const MAX_DAYS_VALID: i64 = 1_000_000;

const RSA_ENCRYPTION: &[u64] = &[1, 2, 840, 113_549, 1, 1, 1];
const SHA256_WITH_RSA: &[u64] = &[1, 2, 840, 113_549, 1, 1, 11];
const COMMON_NAME: &[u64] = &[2, 5, 4, 3];
const KEY_USAGE: &[u64] = &[2, 5, 29, 15];
const EXT_KEY_USAGE: &[u64] = &[2, 5, 29, 37];
const BASIC_CONSTRAINTS: &[u64] = &[2, 5, 29, 19];
const SUBJECT_KEY_ID: &[u64] = &[2, 5, 29, 14];
const AUTHORITY_KEY_ID: &[u64] = &[2, 5, 29, 35];
const SUBJECT_ALT_NAME: &[u64] = &[2, 5, 29, 17];
const SERVER_AUTH: &[u64] = &[1, 3, 6, 1, 5, 5, 7, 3, 1];
const CLIENT_AUTH: &[u64] = &[1, 3, 6, 1, 5, 5, 7, 3, 2];

/// PKCS#1 v1.5 signing of a SHA-256 digest (the DigestInfo prefix of
/// RFC 8017, section 9.2).
fn sha256_pkcs1v15() -> Pkcs1v15Sign {
    const PREFIX: [u8; 19] = [
        0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01,
        0x05, 0x00, 0x04, 0x20,
    ];
    Pkcs1v15Sign {
        hash_len: Some(32),
        prefix: PREFIX.into(),
    }
}

fn crypto_error(step: &str, e: impl std::fmt::Display) -> FuncError {
    FuncError::call(format!("{step}: {e}"))
}

/// A new RSA key of `bits` (2048 or 4096) with exponent 65537, as Go's
/// `rsa.GenerateKey`.
///
/// AWS-LC generates it (its prime search is several times faster than the
/// `rsa` crate's, and as fast as Go's: docs/src/reference/template-functions.md has the
/// measurements); the `rsa` crate then holds it for encoding and signing,
/// read from the PKCS#8 form AWS-LC writes.
fn new_rsa_key(bits: usize) -> Result<RsaPrivateKey, FuncError> {
    use aws_lc_rs::encoding::AsDer;
    use aws_lc_rs::rsa::{KeyPair, KeySize};
    let size = match bits {
        2048 => KeySize::Rsa2048,
        4096 => KeySize::Rsa4096,
        other => {
            return Err(FuncError::call(format!(
                "error generating rsa key: unsupported size {other}"
            )));
        }
    };
    let failed = |e: &dyn std::fmt::Display| crypto_error("error generating rsa key", e);
    let pair = KeyPair::generate(size).map_err(|e| failed(&e))?;
    let pkcs8 = pair.as_der().map_err(|e| failed(&e))?;
    RsaPrivateKey::from_pkcs8_der(pkcs8.as_ref()).map_err(|e| failed(&e))
}

/// PKCS#1 `RSA PRIVATE KEY` PEM, as Go's `x509.MarshalPKCS1PrivateKey`.
fn rsa_key_pem(key: &RsaPrivateKey) -> Result<String, FuncError> {
    let der = key
        .to_pkcs1_der()
        .map_err(|e| crypto_error("error encoding rsa key", e))?;
    Ok(der::pem("RSA PRIVATE KEY", der.as_bytes()))
}

/// Sprig's `parsePrivateKeyPEM`, for RSA keys (PKCS#1 or PKCS#8); the
/// error is the text Sprig puts after its caller's prefix.
fn parse_rsa_key(pem_text: &str) -> Result<RsaPrivateKey, String> {
    let (label, bytes) = der::pem_decode(pem_text).ok_or("no PEM data in input")?;
    match label.as_str() {
        "RSA PRIVATE KEY" => RsaPrivateKey::from_pkcs1_der(&bytes)
            .map_err(|e| format!("parsing RSA private key from PEM: {e}")),
        "PRIVATE KEY" => RsaPrivateKey::from_pkcs8_der(&bytes)
            .map_err(|e| format!("decoding PEM as PKCS#8 (only rsa is supported): {e}")),
        other if !other.ends_with(" PRIVATE KEY") => {
            Err(format!("no private key data in PEM block of type {other}"))
        }
        other => Err(format!(
            "invalid private key type {other} (only rsa is supported)"
        )),
    }
}

/// A key argument of the `*WithKey` functions.
fn key_arg(value: &Value) -> Result<RsaPrivateKey, FuncError> {
    parse_rsa_key(text(value)?).map_err(|e| FuncError::call(format!("parsing private key: {e}")))
}

/// Sprig's `genPrivateKey TYPE`: `rsa` (4096 bits) or `ed25519`; other
/// types give an error text as the result, as Sprig does for unknown ones.
fn gen_private_key(args: &[Value]) -> Result<Value, FuncError> {
    let [kind] = exactly::<1>("genPrivateKey", args)?;
    Ok(match text(kind)? {
        "" | "rsa" => rsa_key_pem(&new_rsa_key(4096)?)?,
        "ed25519" => {
            let mut seed = [0u8; 32];
            getrandom::fill(&mut seed).map_err(|e| crypto_error("reading random bytes", e))?;
            let pkcs8 = der::sequence(&[
                der::unsigned_integer(&[0]),
                der::sequence(&[der::oid(&[1, 3, 101, 112])]),
                der::octet_string(&der::octet_string(&seed)),
            ]);
            der::pem("PRIVATE KEY", &pkcs8)
        }
        "ecdsa" | "dsa" => format!(
            "failed to generate private key: {} keys are not supported",
            text(kind)?
        ),
        other => format!("Unknown type {other}"),
    }
    .into())
}

/// What goes into one certificate.
struct CertSpec {
    common_name: String,
    ips: Vec<IpAddr>,
    dns_names: Vec<String>,
    days_valid: i64,
    is_ca: bool,
}

/// The signer of a certificate: its subject name (DER), its subject key
/// id, and its key. None means self-signed.
struct Issuer {
    name: Vec<u8>,
    key_id: Option<Vec<u8>>,
    key: RsaPrivateKey,
}

fn name_der(common_name: &str) -> Vec<u8> {
    der::sequence(&[der::set(&[der::sequence(&[
        der::oid(COMMON_NAME),
        der::directory_string(common_name),
    ])])])
}

/// UTCTime until 2049, GeneralizedTime after, as Go writes validity.
fn time_der(unix: i64) -> Vec<u8> {
    let (year, month, day) = super::dates::civil_from_days(unix.div_euclid(86_400));
    let secs = unix.rem_euclid(86_400);
    let clock = format!(
        "{month:02}{day:02}{:02}{:02}{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if (1950..2050).contains(&year) {
        der::tlv(0x17, format!("{:02}{clock}", year % 100).as_bytes())
    } else {
        der::tlv(0x18, format!("{year:04}{clock}").as_bytes())
    }
}

fn extension(id: &[u64], critical: bool, value: Vec<u8>) -> Vec<u8> {
    let mut parts = vec![der::oid(id)];
    if critical {
        parts.push(der::true_value());
    }
    parts.push(der::octet_string(&value));
    der::sequence(&parts)
}

/// Go's `marshalKeyUsage` for digital signature, key encipherment and,
/// for a CA, certificate signing.
fn key_usage(is_ca: bool) -> Vec<u8> {
    if is_ca {
        der::bit_string(&[0xa4], 2)
    } else {
        der::bit_string(&[0xa0], 5)
    }
}

fn alt_names(spec: &CertSpec) -> Vec<u8> {
    let mut parts: Vec<Vec<u8>> = spec
        .dns_names
        .iter()
        .map(|n| der::tlv(0x82, n.as_bytes()))
        .collect();
    for ip in &spec.ips {
        let bytes = match ip {
            IpAddr::V4(v4) => v4.octets().to_vec(),
            IpAddr::V6(v6) => v6.octets().to_vec(),
        };
        parts.push(der::tlv(0x87, &bytes));
    }
    der::sequence(&parts)
}

fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Go's `x509.CreateCertificate` for Sprig's templates; returns the
/// certificate and key PEM.
fn create_certificate(
    spec: &CertSpec,
    key: &RsaPrivateKey,
    issuer: Option<&Issuer>,
) -> Result<Map, FuncError> {
    let public = key
        .to_public_key()
        .to_pkcs1_der()
        .map_err(|e| crypto_error("error encoding public key", e))?;
    let spki = der::sequence(&[
        der::sequence(&[der::oid(RSA_ENCRYPTION), der::null()]),
        der::bit_string(public.as_bytes(), 0),
    ]);
    let subject = name_der(&spec.common_name);
    let issuer_name = issuer.map_or_else(|| subject.clone(), |i| i.name.clone());
    let mut serial = [0u8; 16];
    getrandom::fill(&mut serial).map_err(|e| crypto_error("reading random bytes", e))?;
    let now = now_unix();
    // Go's duration arithmetic cannot reach past year 2262 either; keep the
    // end within four-digit years.
    let validity = spec.days_valid.clamp(-MAX_DAYS_VALID, MAX_DAYS_VALID) * 86_400;
    let algorithm = der::sequence(&[der::oid(SHA256_WITH_RSA), der::null()]);

    let subject_key_id = spec
        .is_ca
        .then(|| Sha256::digest(public.as_bytes())[..20].to_vec());
    let signer_key_id = match issuer {
        Some(i) => i.key_id.clone(),
        None => subject_key_id.clone(),
    };
    let mut extensions = vec![
        extension(KEY_USAGE, true, key_usage(spec.is_ca)),
        extension(
            EXT_KEY_USAGE,
            false,
            der::sequence(&[der::oid(SERVER_AUTH), der::oid(CLIENT_AUTH)]),
        ),
        extension(
            BASIC_CONSTRAINTS,
            true,
            der::sequence(&if spec.is_ca {
                vec![der::true_value()]
            } else {
                vec![]
            }),
        ),
    ];
    if let Some(id) = &subject_key_id {
        extensions.push(extension(SUBJECT_KEY_ID, false, der::octet_string(id)));
    }
    if let Some(id) = signer_key_id.filter(|_| issuer_name != subject) {
        extensions.push(extension(
            AUTHORITY_KEY_ID,
            false,
            der::sequence(&[der::tlv(0x80, &id)]),
        ));
    }
    if !spec.dns_names.is_empty() || !spec.ips.is_empty() {
        extensions.push(extension(SUBJECT_ALT_NAME, false, alt_names(spec)));
    }
    let tbs = der::sequence(&[
        der::explicit(0, &der::unsigned_integer(&[2])),
        der::unsigned_integer(&serial),
        algorithm.clone(),
        issuer_name,
        der::sequence(&[time_der(now), time_der(now.saturating_add(validity))]),
        subject,
        spki,
        der::explicit(3, &der::sequence(&extensions)),
    ]);
    let signing_key = issuer.map_or(key, |i| &i.key);
    let signature = signing_key
        .sign(sha256_pkcs1v15(), &Sha256::digest(&tbs))
        .map_err(|e| crypto_error("error signing certificate", e))?;
    let certificate = der::sequence(&[tbs, algorithm, der::bit_string(&signature, 0)]);
    let mut out = Map::new();
    out.insert(
        "Cert".into(),
        Value::String(der::pem("CERTIFICATE", &certificate)),
    );
    out.insert("Key".into(), Value::String(rsa_key_pem(key)?));
    Ok(out)
}

/// The elements of a `[]interface {}` argument (nil is none), each
/// converted by `item`.
fn list_items<T>(
    value: &Value,
    item: impl Fn(&Value) -> Result<T, FuncError>,
) -> Result<Vec<T>, FuncError> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::List(items) => items.iter().map(item).collect(),
        other => Err(wrong_type("[]interface {}", other)),
    }
}

/// Sprig's `getNetIPs`: a list of IP strings.
fn ip_list(value: &Value) -> Result<Vec<IpAddr>, FuncError> {
    list_items(value, |item| match item {
        Value::String(s) => s
            .parse()
            .map_err(|_| FuncError::call(format!("error parsing ip: {s}"))),
        other => Err(FuncError::call(format!(
            "error parsing ip: {other} is not a string"
        ))),
    })
}

/// Sprig's `getAlternateDNSStrs`: a list of strings.
fn dns_list(value: &Value) -> Result<Vec<String>, FuncError> {
    list_items(value, |item| match item {
        Value::String(s) => Ok(s.clone()),
        other => Err(FuncError::call(format!(
            "error processing alternate dns name: {other} is not a string"
        ))),
    })
}

fn ca_spec(common_name: &Value, days: &Value) -> Result<CertSpec, FuncError> {
    Ok(CertSpec {
        common_name: text(common_name)?.to_string(),
        ips: Vec::new(),
        dns_names: Vec::new(),
        days_valid: integer(days)?,
        is_ca: true,
    })
}

fn leaf_spec(
    common_name: &Value,
    ips: &Value,
    names: &Value,
    days: &Value,
) -> Result<CertSpec, FuncError> {
    Ok(CertSpec {
        common_name: text(common_name)?.to_string(),
        ips: ip_list(ips)?,
        dns_names: dns_list(names)?,
        days_valid: integer(days)?,
        is_ca: false,
    })
}

/// `genCA CN DAYS`: a self-signed CA with a new 2048-bit RSA key.
fn gen_ca(args: &[Value]) -> Result<Value, FuncError> {
    let [cn, days] = exactly::<2>("genCA", args)?;
    let spec = ca_spec(cn, days)?;
    Ok(Value::Map(create_certificate(
        &spec,
        &new_rsa_key(2048)?,
        None,
    )?))
}

fn gen_ca_with_key(args: &[Value]) -> Result<Value, FuncError> {
    let [cn, days, key] = exactly::<3>("genCAWithKey", args)?;
    let spec = ca_spec(cn, days)?;
    Ok(Value::Map(create_certificate(&spec, &key_arg(key)?, None)?))
}

/// `genSelfSignedCert CN IPS NAMES DAYS`.
fn gen_self_signed_cert(args: &[Value]) -> Result<Value, FuncError> {
    let [cn, ips, names, days] = exactly::<4>("genSelfSignedCert", args)?;
    let spec = leaf_spec(cn, ips, names, days)?;
    Ok(Value::Map(create_certificate(
        &spec,
        &new_rsa_key(2048)?,
        None,
    )?))
}

fn gen_self_signed_cert_with_key(args: &[Value]) -> Result<Value, FuncError> {
    let [cn, ips, names, days, key] = exactly::<5>("genSelfSignedCertWithKey", args)?;
    let spec = leaf_spec(cn, ips, names, days)?;
    Ok(Value::Map(create_certificate(&spec, &key_arg(key)?, None)?))
}

/// Reads the signing side from a `genCA` result.
fn issuer_of(ca: &Value) -> Result<Issuer, FuncError> {
    let ca = match ca {
        Value::Map(_) => dict(ca)?,
        other => return Err(wrong_type("sprig.certificate", other)),
    };
    let cert_pem = ca.get("Cert").and_then(Value::as_str).unwrap_or("");
    let key_pem = ca.get("Key").and_then(Value::as_str).unwrap_or("");
    let (_, cert) =
        der::pem_decode(cert_pem).ok_or_else(|| FuncError::call("unable to decode certificate"))?;
    let (name, key_id) = subject_and_key_id(&cert).ok_or_else(|| {
        FuncError::call("error parsing certificate: decodedSignerCert.Bytes: malformed certificate")
    })?;
    let key = parse_rsa_key(key_pem)
        .map_err(|e| FuncError::call(format!("error parsing private key: {e}")))?;
    Ok(Issuer { name, key_id, key })
}

/// The subject name and subject key id of a DER certificate.
fn subject_and_key_id(cert: &[u8]) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let (certificate, _) = der::read(cert)?;
    let (tbs, _) = der::read(certificate.content)?;
    let fields = der::children(tbs.content)?;
    let offset = usize::from(fields.first()?.tag == 0xa0);
    let subject = fields.get(offset + 4)?.raw.to_vec();
    let key_id = fields
        .iter()
        .find(|f| f.tag == 0xa3)
        .and_then(|ext| find_subject_key_id(ext.content));
    Some((subject, key_id))
}

fn find_subject_key_id(explicit: &[u8]) -> Option<Vec<u8>> {
    let (list, _) = der::read(explicit)?;
    for ext in der::children(list.content)? {
        let parts: Vec<Element<'_>> = der::children(ext.content)?;
        if parts.first()?.raw == der::oid(SUBJECT_KEY_ID).as_slice() {
            let (inner, _) = der::read(parts.last()?.content)?;
            return Some(inner.content.to_vec());
        }
    }
    None
}

/// `genSignedCert CN IPS NAMES DAYS CA`: a certificate with a new key,
/// signed by CA.
fn gen_signed_cert(args: &[Value]) -> Result<Value, FuncError> {
    let [cn, ips, names, days, ca] = exactly::<5>("genSignedCert", args)?;
    let spec = leaf_spec(cn, ips, names, days)?;
    let issuer = issuer_of(ca)?;
    Ok(Value::Map(create_certificate(
        &spec,
        &new_rsa_key(2048)?,
        Some(&issuer),
    )?))
}

fn gen_signed_cert_with_key(args: &[Value]) -> Result<Value, FuncError> {
    let [cn, ips, names, days, ca, key] = exactly::<6>("genSignedCertWithKey", args)?;
    let spec = leaf_spec(cn, ips, names, days)?;
    let issuer = issuer_of(ca)?;
    Ok(Value::Map(create_certificate(
        &spec,
        &key_arg(key)?,
        Some(&issuer),
    )?))
}

/// `buildCustomCert CERT_B64 KEY_B64`: a certificate map from base64 PEM.
fn build_custom_cert(args: &[Value]) -> Result<Value, FuncError> {
    let [cert, key] = exactly::<2>("buildCustomCert", args)?;
    let decode = |v: &Value, what: &str| -> Result<String, FuncError> {
        let bytes = super::encoding::base64_decode(text(v)?)
            .map_err(|_| FuncError::call(format!("unable to decode base64 {what}")))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    let (cert, key) = (decode(cert, "certificate")?, decode(key, "private key")?);
    let (_, der) =
        der::pem_decode(&cert).ok_or_else(|| FuncError::call("unable to decode certificate"))?;
    if subject_and_key_id(&der).is_none() {
        return Err(FuncError::call(
            "error parsing certificate: decodedCert.Bytes: malformed certificate",
        ));
    }
    parse_rsa_key(&key).map_err(|e| FuncError::call(format!("error parsing private key: {e}")))?;
    let mut out = Map::new();
    out.insert("Cert".into(), Value::String(cert));
    out.insert("Key".into(), Value::String(key));
    Ok(Value::Map(out))
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(message);
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

fn pbkdf2_sha256(password: &[u8], salt: &[u8], length: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(length);
    let mut index = 1u32;
    while out.len() < length {
        let mut message = salt.to_vec();
        message.extend_from_slice(&index.to_be_bytes());
        out.extend_from_slice(&hmac_sha256(password, &message));
        index += 1;
    }
    out.truncate(length);
    out
}

fn salsa20_8(block: &mut [u32; 16]) {
    let mut x = *block;
    for _ in 0..4 {
        let quarter = |x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize| {
            x[b] ^= x[a].wrapping_add(x[d]).rotate_left(7);
            x[c] ^= x[b].wrapping_add(x[a]).rotate_left(9);
            x[d] ^= x[c].wrapping_add(x[b]).rotate_left(13);
            x[a] ^= x[d].wrapping_add(x[c]).rotate_left(18);
        };
        quarter(&mut x, 0, 4, 8, 12);
        quarter(&mut x, 5, 9, 13, 1);
        quarter(&mut x, 10, 14, 2, 6);
        quarter(&mut x, 15, 3, 7, 11);
        quarter(&mut x, 0, 1, 2, 3);
        quarter(&mut x, 5, 6, 7, 4);
        quarter(&mut x, 10, 11, 8, 9);
        quarter(&mut x, 15, 12, 13, 14);
    }
    for (b, v) in block.iter_mut().zip(x) {
        *b = b.wrapping_add(v);
    }
}

/// scrypt's BlockMix over 2r 64-byte blocks of u32 words.
fn block_mix(input: &[u32], output: &mut [u32], r: usize) {
    let mut x = [0u32; 16];
    x.copy_from_slice(&input[(2 * r - 1) * 16..]);
    for i in 0..2 * r {
        for (k, w) in x.iter_mut().enumerate() {
            *w ^= input[i * 16 + k];
        }
        salsa20_8(&mut x);
        let target = if i % 2 == 0 { i / 2 } else { r + i / 2 };
        output[target * 16..target * 16 + 16].copy_from_slice(&x);
    }
}

/// scrypt (RFC 7914).
fn scrypt(password: &[u8], salt: &[u8], n: usize, r: usize, p: usize, length: usize) -> Vec<u8> {
    let block_len = 128 * r;
    let mut b = pbkdf2_sha256(password, salt, p * block_len);
    let words = 32 * r;
    let mut v = vec![0u32; n * words];
    for chunk in b.chunks_mut(block_len) {
        let mut x: Vec<u32> = chunk
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let mut y = vec![0u32; words];
        for i in 0..n {
            v[i * words..(i + 1) * words].copy_from_slice(&x);
            block_mix(&x, &mut y, r);
            std::mem::swap(&mut x, &mut y);
        }
        for _ in 0..n {
            let j = x[(2 * r - 1) * 16] as usize % n;
            for (k, w) in x.iter_mut().enumerate() {
                *w ^= v[j * words + k];
            }
            block_mix(&x, &mut y, r);
            std::mem::swap(&mut x, &mut y);
        }
        for (bytes, w) in chunk.chunks_mut(4).zip(x) {
            bytes.copy_from_slice(&w.to_le_bytes());
        }
    }
    pbkdf2_sha256(password, &b, length)
}

const MASTER_PASSWORD_SEED: &str = "com.lyndir.masterpassword";

fn password_templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

fn template_characters(class: u8) -> &'static [u8] {
    match class {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        _ => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
    }
}

/// The Master Password algorithm as Sprig implements it.
pub fn master_password(counter: u32, kind: &str, password: &str, user: &str, site: &str) -> String {
    let Some(templates) = password_templates(kind) else {
        return format!("cannot find password template {kind}");
    };
    let mut salt = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    salt.extend_from_slice(&(user.len() as u32).to_be_bytes());
    salt.extend_from_slice(user.as_bytes());
    let key = scrypt(password.as_bytes(), &salt, 32_768, 8, 2, 64);
    let mut message = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    message.extend_from_slice(&(site.len() as u32).to_be_bytes());
    message.extend_from_slice(site.as_bytes());
    message.extend_from_slice(&counter.to_be_bytes());
    let seed = hmac_sha256(&key, &message);
    let template = templates[usize::from(seed[0]) % templates.len()];
    template
        .bytes()
        .enumerate()
        .map(|(i, class)| {
            let chars = template_characters(class);
            chars[usize::from(seed[i + 1]) % chars.len()] as char
        })
        .collect()
}

/// `derivePassword COUNTER TYPE PASSWORD USER SITE`.
fn derive_password(args: &[Value]) -> Result<Value, FuncError> {
    let [counter, kind, password, user, site] = exactly::<5>("derivePassword", args)?;
    let counter = u32::try_from(integer(counter)?).map_err(|_| wrong_type("uint32", counter))?;
    Ok(master_password(
        counter,
        text(kind)?,
        text(password)?,
        text(user)?,
        text(site)?,
    )
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field<'a>(v: &'a Value, key: &str) -> &'a str {
        v.as_map()
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    #[test]
    fn scrypt_matches_rfc_7914() {
        let out = scrypt(b"password", b"NaCl", 1024, 8, 16, 64);
        assert_eq!(hex::encode(&out[..16]), "fdbabe1c9d3472007856e7190d01e9fe");
        let empty = scrypt(b"", b"", 16, 1, 1, 64);
        assert_eq!(
            hex::encode(&empty[..16]),
            "77d6576238657b203b19ca42c18a0497"
        );
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        let mac = hmac_sha256(&[0x0b; 20], b"Hi There");
        assert_eq!(
            hex::encode(mac),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }

    #[test]
    #[ignore = "scrypt with N=32768 is slow in debug builds"]
    fn derive_password_matches_sprig() {
        assert_eq!(
            master_password(1, "long", "password", "user", "example.com"),
            "ZedaFaxcZaso9*"
        );
    }

    #[test]
    fn ca_and_signed_certificate() {
        let ca = gen_ca(&["test-ca".into(), Value::Int(365)]).unwrap_or_else(|e| panic!("{e}"));
        assert!(field(&ca, "Cert").starts_with("-----BEGIN CERTIFICATE-----\n"));
        assert!(field(&ca, "Key").starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
        let (_, der) = der::pem_decode(field(&ca, "Cert")).unwrap_or_default();
        let (subject, key_id) = subject_and_key_id(&der).unwrap_or_default();
        assert_eq!(subject, name_der("test-ca"));
        assert_eq!(key_id.map(|k| k.len()), Some(20));
        let names = Value::List(vec!["svc.example".into()]);
        let ips = Value::List(vec!["10.0.0.1".into()]);
        let cert = gen_signed_cert(&["svc".into(), ips, names, Value::Int(30), ca.clone()]);
        let cert = cert.unwrap_or_else(|e| panic!("{e}"));
        let (_, der) = der::pem_decode(field(&cert, "Cert")).unwrap_or_default();
        let (subject, key_id) = subject_and_key_id(&der).unwrap_or_default();
        assert_eq!(subject, name_der("svc"));
        assert_eq!(key_id, None);
        assert!(der.windows(11).any(|w| w == b"svc.example"));
        let bad_ip = gen_signed_cert(&[
            "svc".into(),
            Value::List(vec!["x".into()]),
            Value::Null,
            Value::Int(1),
            ca,
        ]);
        assert_eq!(
            bad_ip.map_err(|e| e.message),
            Err("error parsing ip: x".into())
        );
        assert!(
            gen_signed_cert(&[
                "svc".into(),
                Value::Null,
                Value::Null,
                Value::Int(1),
                "nope".into()
            ])
            .is_err()
        );
    }

    /// The PKCS#1 key of a PEM text, with its modulus size in bits.
    fn rsa_key_bits(pem_text: &str) -> (RsaPrivateKey, usize) {
        use rsa::traits::PublicKeyParts;
        let (label, der) = der::pem_decode(pem_text).unwrap_or_default();
        assert_eq!(label, "RSA PRIVATE KEY");
        let key = RsaPrivateKey::from_pkcs1_der(&der).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(key.e(), &rsa::BigUint::from(65_537u32), "Go's exponent");
        let bits = key.n().bits();
        (key, bits)
    }

    /// Sprig's sizes: `genPrivateKey "rsa"` 4096 bits, the certificate
    /// functions 2048 bits, each a valid PKCS#1 key with Go's exponent
    /// (65537) whose certificate carries its public key.
    #[test]
    fn generated_rsa_keys_have_sprigs_sizes() {
        let key = gen_private_key(&["rsa".into()]).unwrap_or_else(|e| panic!("{e}"));
        let (key, bits) = rsa_key_bits(key.as_str().unwrap_or_default());
        assert_eq!(bits, 4096);
        assert!(key.validate().is_ok());
        let ca = gen_ca(&["c".into(), Value::Int(1)]).unwrap_or_else(|e| panic!("{e}"));
        let (key, bits) = rsa_key_bits(field(&ca, "Key"));
        assert_eq!(bits, 2048);
        let public = key
            .to_public_key()
            .to_pkcs1_der()
            .unwrap_or_else(|e| panic!("{e}"));
        let (_, cert) = der::pem_decode(field(&ca, "Cert")).unwrap_or_default();
        assert!(
            cert.windows(public.as_bytes().len())
                .any(|w| w == public.as_bytes())
        );
        let leaf = gen_self_signed_cert(&["l".into(), Value::Null, Value::Null, Value::Int(1)])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rsa_key_bits(field(&leaf, "Key")).1, 2048);
        let signed = gen_signed_cert(&["s".into(), Value::Null, Value::Null, Value::Int(1), ca])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rsa_key_bits(field(&signed, "Key")).1, 2048);
        // Two keys are never the same.
        assert_ne!(field(&leaf, "Key"), field(&signed, "Key"));
    }

    #[test]
    fn private_keys_and_custom_certs() {
        let ed = gen_private_key(&["ed25519".into()]);
        assert!(
            matches!(&ed, Ok(Value::String(s)) if s.starts_with("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI"))
        );
        assert_eq!(
            gen_private_key(&["foo".into()]),
            Ok("Unknown type foo".into())
        );
        let ca = gen_ca(&["x".into(), Value::Int(1)]).unwrap_or_else(|e| panic!("{e}"));
        let (pem_cert, pem_key) = (
            field(&ca, "Cert").to_string(),
            field(&ca, "Key").to_string(),
        );
        let built = build_custom_cert(&[
            super::super::encoding::base64_encode(pem_cert.as_bytes()).into(),
            super::super::encoding::base64_encode(pem_key.as_bytes()).into(),
        ]);
        assert!(
            matches!(&built, Ok(v) if field(v, "Cert") == pem_cert && field(v, "Key") == pem_key)
        );
        assert!(build_custom_cert(&["!!".into(), "".into()]).is_err());
    }
}
