//! Trusted signing keys: the set of ed25519 public keys whose bundles the
//! platform accepts, and the signing side (key generation, loading a private
//! key, producing and checking OpenSSH `SSHSIG` signatures).
//!
//! Signatures use OpenSSH's SSHSIG format so that an author can sign with an
//! ed25519 key they already hold and anyone can check a bundle by hand with
//! `ssh-keygen -Y verify`. A key is identified by its SHA-256 fingerprint,
//! written exactly as `ssh-keygen -l` prints it (`SHA256:<base64>`).
//!
//! This module knows nothing about bundles, archives or the store: it maps key
//! files and signature bytes to keys, fingerprints and verdicts.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use ssh_key::{Algorithm, HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};

/// The SSHSIG namespace every bundle signature is made in. `ssh-keygen -Y
/// verify` needs it as `-n capstan-bundle`.
pub const BUNDLE_NAMESPACE: &str = "capstan-bundle";

/// The hash SSHSIG applies to the message before signing (ssh-keygen's default).
const SIGNATURE_HASH: HashAlg = HashAlg::Sha512;

/// Errors of key handling and signature checks.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The trust directory could not be listed.
    #[error("cannot read trust directory {}", dir.display())]
    ReadDir {
        /// The directory.
        dir: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A key file could not be read.
    #[error("cannot read key file {}", file.display())]
    ReadKey {
        /// The file.
        file: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A public key file is not one OpenSSH public key line.
    #[error("key file {} is not an OpenSSH public key", file.display())]
    ParsePublicKey {
        /// The file.
        file: PathBuf,
        /// The cause.
        #[source]
        source: ssh_key::Error,
    },
    /// A private key file is not an OpenSSH private key.
    #[error("key file {} is not an OpenSSH private key", file.display())]
    ParsePrivateKey {
        /// The file.
        file: PathBuf,
        /// The cause.
        #[source]
        source: ssh_key::Error,
    },
    /// A key is of another algorithm than ed25519.
    #[error("key file {} holds a {algorithm} key; only ssh-ed25519 is accepted", file.display())]
    NotEd25519 {
        /// The file.
        file: PathBuf,
        /// The algorithm the key uses.
        algorithm: String,
    },
    /// A private key is protected by a passphrase, which capstan does not prompt for.
    #[error("private key {} is passphrase-protected; use an unencrypted key", file.display())]
    EncryptedKey {
        /// The file.
        file: PathBuf,
    },
    /// Two key files in the trust directory hold the same key.
    #[error("key files {} and {} hold the same key {fingerprint}", first.display(), second.display())]
    DuplicateKey {
        /// The file read first.
        first: PathBuf,
        /// The file read second.
        second: PathBuf,
        /// The shared fingerprint.
        fingerprint: Fingerprint,
    },
    /// A key name for `keygen` is empty or has characters other than
    /// letters, digits, `.`, `_` and `-`.
    #[error("key name {name:?} must be letters, digits, '.', '_' or '-'")]
    InvalidKeyName {
        /// The rejected name.
        name: String,
    },
    /// Generating a key pair failed (no randomness, encoding).
    #[error("cannot generate an ed25519 key pair")]
    Generate(#[source] ssh_key::Error),
    /// A key file could not be written (or already exists).
    #[error("cannot write key file {}", file.display())]
    WriteKey {
        /// The file.
        file: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Encoding a key or signature failed.
    #[error("cannot encode {what}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// The cause.
        #[source]
        source: ssh_key::Error,
    },
    /// Signing failed.
    #[error("cannot sign with key {fingerprint}")]
    Sign {
        /// The signing key.
        fingerprint: Fingerprint,
        /// The cause.
        #[source]
        source: ssh_key::Error,
    },
    /// A signature is not an armored SSHSIG.
    #[error("signature is not an armored OpenSSH SSHSIG")]
    MalformedSignature(#[source] ssh_key::Error),
    /// A signature was made with another key type than ed25519.
    #[error("signature is made with a {algorithm} key; only ssh-ed25519 is accepted")]
    SignatureNotEd25519 {
        /// The signing key's algorithm.
        algorithm: String,
    },
    /// A signature was made in another namespace than [`BUNDLE_NAMESPACE`].
    #[error("signature namespace is {found:?}, expected {BUNDLE_NAMESPACE:?}")]
    WrongNamespace {
        /// The namespace in the signature.
        found: String,
    },
    /// A signature does not verify over the message with the key it names.
    #[error("signature by {fingerprint} does not match the signed data")]
    InvalidSignature {
        /// The key the signature names.
        fingerprint: Fingerprint,
    },
}

/// A key's identity: its SHA-256 fingerprint as `ssh-keygen -l` prints it,
/// `SHA256:` followed by unpadded base64.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fingerprint(String);

impl Fingerprint {
    fn of(key: &PublicKey) -> Self {
        Self(key.fingerprint(HashAlg::Sha256).to_string())
    }

    fn of_key_data(key: &ssh_key::public::KeyData) -> Self {
        Self(key.fingerprint(HashAlg::Sha256).to_string())
    }

    /// The fingerprint text, `SHA256:...`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One trusted public key and the file it came from.
#[derive(Debug, Clone)]
pub struct TrustedKey {
    key: PublicKey,
    fingerprint: Fingerprint,
    file: PathBuf,
}

impl TrustedKey {
    /// The key's fingerprint.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// The `*.pub` file the key was read from.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The key's comment (the name given at `keygen`).
    pub fn comment(&self) -> &str {
        self.key.comment()
    }
}

/// The set of public keys whose signatures the platform accepts, by fingerprint.
#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    keys: BTreeMap<Fingerprint, TrustedKey>,
}

impl TrustStore {
    /// An empty store: trusts nothing.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Loads every `*.pub` file of `dir` (not recursing), one OpenSSH
    /// ed25519 public key per file. Other files are ignored.
    ///
    /// # Errors
    ///
    /// [`Error::ReadDir`] if `dir` cannot be listed; [`Error::ReadKey`],
    /// [`Error::ParsePublicKey`] or [`Error::NotEd25519`] naming the file
    /// that is unreadable or not an ed25519 key; [`Error::DuplicateKey`] if
    /// two files hold the same key. An empty directory gives an empty store.
    pub fn load_dir(dir: &Path) -> Result<Self, Error> {
        let read_dir = |source| Error::ReadDir {
            dir: dir.to_path_buf(),
            source,
        };
        let mut files = Vec::new();
        for entry in fs::read_dir(dir).map_err(read_dir)? {
            let path = entry.map_err(read_dir)?.path();
            if path.extension().is_some_and(|ext| ext == "pub") {
                files.push(path);
            }
        }
        files.sort();
        let mut store = Self::empty();
        for file in files {
            store.add(read_public_key(&file)?, file)?;
        }
        Ok(store)
    }

    /// Adds a public key read from OpenSSH text (`ssh-ed25519 AAAA... name`);
    /// `origin` names where it came from in errors and listings.
    ///
    /// # Errors
    ///
    /// [`Error::ParsePublicKey`], [`Error::NotEd25519`] or [`Error::DuplicateKey`].
    pub fn add_openssh(&mut self, text: &str, origin: &Path) -> Result<Fingerprint, Error> {
        let key = parse_public_key(text, origin)?;
        self.add(key, origin.to_path_buf())
    }

    fn add(&mut self, key: PublicKey, file: PathBuf) -> Result<Fingerprint, Error> {
        let fingerprint = Fingerprint::of(&key);
        if let Some(existing) = self.keys.get(&fingerprint) {
            return Err(Error::DuplicateKey {
                first: existing.file.clone(),
                second: file,
                fingerprint,
            });
        }
        let trusted = TrustedKey {
            key,
            fingerprint: fingerprint.clone(),
            file,
        };
        self.keys.insert(fingerprint.clone(), trusted);
        Ok(fingerprint)
    }

    /// The trusted key with this fingerprint, if any.
    pub fn get(&self, fingerprint: &Fingerprint) -> Option<&TrustedKey> {
        self.keys.get(fingerprint)
    }

    /// Every trusted key, ordered by fingerprint.
    pub fn keys(&self) -> impl Iterator<Item = &TrustedKey> {
        self.keys.values()
    }

    /// How many keys are trusted.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is trusted.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

fn read_public_key(file: &Path) -> Result<PublicKey, Error> {
    let text = fs::read_to_string(file).map_err(|source| Error::ReadKey {
        file: file.to_path_buf(),
        source,
    })?;
    parse_public_key(&text, file)
}

fn parse_public_key(text: &str, file: &Path) -> Result<PublicKey, Error> {
    // Name another key type before the parser, built for ed25519 only, calls
    // its algorithm unknown.
    let algorithm = text.split_whitespace().next().unwrap_or_default();
    let is_key_type = ["ssh-", "ecdsa-", "sk-"]
        .iter()
        .any(|p| algorithm.starts_with(p));
    if is_key_type && algorithm != "ssh-ed25519" {
        return Err(Error::NotEd25519 {
            file: file.to_path_buf(),
            algorithm: algorithm.to_string(),
        });
    }
    let key = PublicKey::from_openssh(text.trim()).map_err(|source| Error::ParsePublicKey {
        file: file.to_path_buf(),
        source,
    })?;
    require_ed25519(key.algorithm(), file)?;
    Ok(key)
}

fn require_ed25519(algorithm: Algorithm, file: &Path) -> Result<(), Error> {
    if algorithm == Algorithm::Ed25519 {
        Ok(())
    } else {
        Err(Error::NotEd25519 {
            file: file.to_path_buf(),
            algorithm: algorithm.to_string(),
        })
    }
}

/// An ed25519 private key that signs bundles.
pub struct SigningKey {
    key: PrivateKey,
    fingerprint: Fingerprint,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Generates a fresh key pair from the operating system's randomness;
    /// `name` becomes the key's comment.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKeyName`] for a name outside `[A-Za-z0-9._-]+`;
    /// [`Error::Generate`] if no randomness is available.
    pub fn generate(name: &str) -> Result<Self, Error> {
        validate_key_name(name)?;
        let mut rng = ssh_key::rand_core::OsRng;
        let mut key = PrivateKey::random(&mut rng, Algorithm::Ed25519).map_err(Error::Generate)?;
        key.set_comment(name);
        Ok(Self::from_private(key))
    }

    /// Reads an unencrypted OpenSSH ed25519 private key (as written by
    /// [`SigningKey::write_pair`] or `ssh-keygen -t ed25519 -N ''`).
    ///
    /// # Errors
    ///
    /// [`Error::ReadKey`], [`Error::ParsePrivateKey`], [`Error::EncryptedKey`]
    /// or [`Error::NotEd25519`], each naming the file.
    pub fn load(file: &Path) -> Result<Self, Error> {
        let text = fs::read(file).map_err(|source| Error::ReadKey {
            file: file.to_path_buf(),
            source,
        })?;
        Self::from_openssh(&text, file)
    }

    /// Parses an unencrypted OpenSSH ed25519 private key; `origin` names it in errors.
    ///
    /// # Errors
    ///
    /// As [`SigningKey::load`], without the read.
    pub fn from_openssh(text: &[u8], origin: &Path) -> Result<Self, Error> {
        let key = PrivateKey::from_openssh(text).map_err(|source| Error::ParsePrivateKey {
            file: origin.to_path_buf(),
            source,
        })?;
        if key.is_encrypted() {
            return Err(Error::EncryptedKey {
                file: origin.to_path_buf(),
            });
        }
        require_ed25519(key.algorithm(), origin)?;
        Ok(Self::from_private(key))
    }

    fn from_private(key: PrivateKey) -> Self {
        let fingerprint = Fingerprint::of(key.public_key());
        Self { key, fingerprint }
    }

    /// The key's fingerprint.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// The public half as one OpenSSH line, `ssh-ed25519 AAAA... NAME`.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] if the key cannot be encoded.
    pub fn public_key_line(&self) -> Result<String, Error> {
        self.key
            .public_key()
            .to_openssh()
            .map_err(|source| Error::Encode {
                what: "public key",
                source,
            })
    }

    /// Writes `NAME.key` (the private key, mode 0600 on Unix) and `NAME.pub`
    /// (the public key line) into `dir`, where NAME is the key's comment.
    /// Never overwrites: an existing file is an error. Returns both paths.
    ///
    /// # Errors
    ///
    /// [`Error::WriteKey`] naming the file that exists or cannot be written;
    /// [`Error::Encode`]. When the public file fails the private one is kept.
    pub fn write_pair(&self, dir: &Path) -> Result<(PathBuf, PathBuf), Error> {
        let name = self.key.comment();
        validate_key_name(name)?;
        let private_path = dir.join(format!("{name}.key"));
        let public_path = dir.join(format!("{name}.pub"));
        let private_text = self
            .key
            .to_openssh(LineEnding::LF)
            .map_err(|source| Error::Encode {
                what: "private key",
                source,
            })?;
        let public_text = format!("{}\n", self.public_key_line()?);
        write_new_file(&private_path, private_text.as_bytes(), 0o600)?;
        write_new_file(&public_path, public_text.as_bytes(), 0o644)?;
        Ok((private_path, public_path))
    }

    /// Signs `message` in the [`BUNDLE_NAMESPACE`] and returns the armored
    /// SSHSIG text (`-----BEGIN SSH SIGNATURE-----` ...), newline-terminated.
    /// Ed25519 signing is deterministic: the same key and message give the
    /// same text.
    ///
    /// # Errors
    ///
    /// [`Error::Sign`] or [`Error::Encode`].
    pub fn sign(&self, message: &[u8]) -> Result<String, Error> {
        let signature = self
            .key
            .sign(BUNDLE_NAMESPACE, SIGNATURE_HASH, message)
            .map_err(|source| Error::Sign {
                fingerprint: self.fingerprint.clone(),
                source,
            })?;
        let mut text = signature
            .to_pem(LineEnding::LF)
            .map_err(|source| Error::Encode {
                what: "signature",
                source,
            })?;
        if !text.ends_with('\n') {
            text.push('\n');
        }
        Ok(text)
    }
}

/// A parsed SSHSIG signature whose cryptographic check passed: the message
/// was signed, in the bundle namespace, by the key named `signer`. Whether
/// that key is trusted is a separate question ([`TrustStore::get`]).
#[derive(Debug, Clone)]
pub struct VerifiedSignature {
    signer: Fingerprint,
}

impl VerifiedSignature {
    /// The fingerprint of the key that made the signature.
    pub fn signer(&self) -> &Fingerprint {
        &self.signer
    }
}

/// Checks an armored SSHSIG over `message` against the public key embedded in
/// the signature. Trust is not checked here: look the signer up in a
/// [`TrustStore`] afterwards.
///
/// # Errors
///
/// [`Error::MalformedSignature`] if the text is not an SSHSIG;
/// [`Error::WrongNamespace`] if it was made for another purpose;
/// [`Error::SignatureNotEd25519`] for another key type;
/// [`Error::InvalidSignature`] if it does not verify.
pub fn verify_signature(armored: &[u8], message: &[u8]) -> Result<VerifiedSignature, Error> {
    let signature = SshSig::from_pem(armored).map_err(Error::MalformedSignature)?;
    if signature.namespace() != BUNDLE_NAMESPACE {
        return Err(Error::WrongNamespace {
            found: signature.namespace().to_string(),
        });
    }
    let key_data = signature.public_key().clone();
    if key_data.algorithm() != Algorithm::Ed25519 {
        return Err(Error::SignatureNotEd25519 {
            algorithm: key_data.algorithm().to_string(),
        });
    }
    let signer = Fingerprint::of_key_data(&key_data);
    let public = PublicKey::new(key_data, "");
    public
        .verify(BUNDLE_NAMESPACE, message, &signature)
        .map_err(|_| Error::InvalidSignature {
            fingerprint: signer.clone(),
        })?;
    Ok(VerifiedSignature { signer })
}

fn validate_key_name(name: &str) -> Result<(), Error> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.starts_with('.') || !name.chars().all(allowed) {
        return Err(Error::InvalidKeyName {
            name: name.to_string(),
        });
    }
    Ok(())
}

fn write_new_file(path: &Path, contents: &[u8], mode: u32) -> Result<(), Error> {
    let fail = |source| Error::WriteKey {
        file: path.to_path_buf(),
        source,
    };
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path).map_err(fail)?;
    file.write_all(contents).map_err(fail)?;
    file.sync_all().map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn sign_then_verify_names_the_signer() {
        let key = SigningKey::generate("alice").unwrap();
        let signature = key.sign(b"hello\n").unwrap();
        assert!(signature.starts_with("-----BEGIN SSH SIGNATURE-----\n"));
        let verified = verify_signature(signature.as_bytes(), b"hello\n").unwrap();
        assert_eq!(verified.signer(), key.fingerprint());
        assert!(key.fingerprint().as_str().starts_with("SHA256:"));
    }

    #[test]
    fn signing_is_deterministic() {
        let key = SigningKey::generate("alice").unwrap();
        assert_eq!(key.sign(b"m").unwrap(), key.sign(b"m").unwrap());
    }

    #[test]
    fn a_changed_message_fails_verification() {
        let key = SigningKey::generate("alice").unwrap();
        let signature = key.sign(b"hello\n").unwrap();
        let err = verify_signature(signature.as_bytes(), b"hellO\n").unwrap_err();
        assert!(
            matches!(err, Error::InvalidSignature { fingerprint } if &fingerprint == key.fingerprint())
        );
    }

    #[test]
    fn garbage_is_a_malformed_signature() {
        let err = verify_signature(b"not a signature", b"m").unwrap_err();
        assert!(matches!(err, Error::MalformedSignature(_)));
    }

    #[test]
    fn key_pair_round_trips_through_files() {
        let dir = temp_dir();
        let key = SigningKey::generate("builder").unwrap();
        let (private_path, public_path) = key.write_pair(dir.path()).unwrap();
        assert_eq!(private_path, dir.path().join("builder.key"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&private_path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let public_text = fs::read_to_string(&public_path).unwrap();
        assert!(public_text.starts_with("ssh-ed25519 AAAA"));
        assert!(public_text.trim_end().ends_with(" builder"));

        let loaded = SigningKey::load(&private_path).unwrap();
        assert_eq!(loaded.fingerprint(), key.fingerprint());
        let store = TrustStore::load_dir(dir.path()).unwrap();
        assert_eq!(store.len(), 1);
        let trusted = store.get(key.fingerprint()).unwrap();
        assert_eq!(trusted.file(), public_path);
        assert_eq!(trusted.comment(), "builder");
    }

    #[test]
    fn write_pair_never_overwrites() {
        let dir = temp_dir();
        let key = SigningKey::generate("k").unwrap();
        key.write_pair(dir.path()).unwrap();
        let err = key.write_pair(dir.path()).unwrap_err();
        assert!(matches!(err, Error::WriteKey { file, .. } if file.ends_with("k.key")));
    }

    #[test]
    fn a_bad_pub_file_is_named() {
        let dir = temp_dir();
        fs::write(dir.path().join("broken.pub"), "ssh-ed25519 not-base64 x\n").unwrap();
        fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
        let err = TrustStore::load_dir(dir.path()).unwrap_err();
        assert!(matches!(err, Error::ParsePublicKey { file, .. } if file.ends_with("broken.pub")));
    }

    #[test]
    fn other_key_types_are_named() {
        let ecdsa = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBAPPSUzo4pdWkH5VO70wA72UgOlXavhynK2o+mDcxC4pvP9MymciQgrLY4BAGUKokKJ+Jf3bAotmpk7RDeg8vA8= other";
        let mut store = TrustStore::empty();
        let err = store
            .add_openssh(ecdsa, Path::new("other.pub"))
            .unwrap_err();
        assert!(
            matches!(&err, Error::NotEd25519 { file, algorithm } if file.ends_with("other.pub") && algorithm == "ecdsa-sha2-nistp256"),
            "{err:?}"
        );
        assert!(store.is_empty());
    }

    #[test]
    fn the_same_key_twice_is_rejected() {
        let dir = temp_dir();
        let line = SigningKey::generate("k")
            .unwrap()
            .public_key_line()
            .unwrap();
        fs::write(dir.path().join("a.pub"), &line).unwrap();
        fs::write(dir.path().join("b.pub"), &line).unwrap();
        let err = TrustStore::load_dir(dir.path()).unwrap_err();
        assert!(matches!(err, Error::DuplicateKey { .. }));
    }

    #[test]
    fn key_names_are_restricted() {
        for bad in ["", ".hidden", "a/b", "a b"] {
            assert!(matches!(
                SigningKey::generate(bad),
                Err(Error::InvalidKeyName { .. })
            ));
        }
    }

    #[test]
    fn missing_directory_is_a_read_dir_error() {
        let dir = temp_dir();
        let err = TrustStore::load_dir(&dir.path().join("absent")).unwrap_err();
        assert!(matches!(err, Error::ReadDir { .. }));
    }
}
