//! Bundles through OCI registries: `capstan bundle push|pull` and
//! `capstan app upload|update oci://…`.
//!
//! Owns: the artifact's media types (documented in docs/src/apps/bundle-format.md),
//! parsing `oci://` references, registry credentials (`auth`), and moving a
//! bundle's bytes to and from a registry with the `oci-client` crate, which
//! speaks the distribution protocol (including token-service auth).
//!
//! A registry is transport, never trust: the pulled bytes are the signed
//! bundle itself, and the daemon verifies them exactly as it verifies an
//! uploaded file. What this module checks is that the registry handed back
//! what was asked for: the manifest's digest when pinned, its artifact
//! type, its size, and the blob's size and digest.
//!
//! Must not touch: bundle verification (that is `bundle`), the daemon, the
//! store.

mod auth;
mod reference;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

pub use auth::{Credentials, credentials_for, default_config_path};
pub use reference::{Reference, SCHEME, Target, is_oci, valid_digest};

/// The manifest's `artifactType`: a capstan bundle.
pub const ARTIFACT_TYPE: &str = "application/vnd.capstan.bundle.v1";
/// The config blob's media type: JSON with the bundle's name, version and
/// signer (for people browsing a registry; never trusted).
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.capstan.bundle.config.v1+json";
/// The one layer's media type: the signed bundle archive, byte for byte.
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.capstan.bundle.v1.tar+gzip";
/// The manifest's media type (an OCI image manifest).
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The largest manifest accepted; a bundle's is well under 1 KiB.
pub const MAX_MANIFEST_BYTES: usize = 256 * 1024;
/// The largest bundle blob accepted: the daemon's upload limit.
pub const MAX_BLOB_BYTES: usize = crate::bundle::MAX_BUNDLE_BYTES;

/// A failure to move a bundle through a registry.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The text is not a usable `oci://` reference.
    #[error("{reference:?} {why}")]
    Reference {
        /// The text as given.
        reference: String,
        /// What is wrong with it.
        why: String,
    },
    /// The registry config file cannot be used.
    #[error("registry config {}: {why}", path.display())]
    RegistryConfig {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The registry refused the credentials, or asked for some and none
    /// were found.
    #[error("registry {host} refused access to {reference}: {why}")]
    AuthRefused {
        /// The registry host.
        host: String,
        /// The reference.
        reference: String,
        /// What the registry said, or that no credentials were configured.
        why: String,
    },
    /// The tag or digest is not in the repository.
    #[error("{reference} is not in the registry ({why})")]
    NotFound {
        /// The reference.
        reference: String,
        /// The registry's word.
        why: String,
    },
    /// The manifest is not a capstan bundle's.
    #[error("{reference} is not a capstan bundle: {why}")]
    WrongArtifact {
        /// The reference.
        reference: String,
        /// What it is instead.
        why: String,
    },
    /// A manifest or blob is larger than its limit.
    #[error("{what} of {reference} is {size} bytes, over the limit of {limit}")]
    TooLarge {
        /// `manifest` or `bundle blob`.
        what: &'static str,
        /// The reference.
        reference: String,
        /// Its size (declared or received).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// What the registry sent does not match the digest it was asked for.
    #[error("{what} of {reference} does not match its digest: expected {expected}, got {actual}")]
    DigestMismatch {
        /// `manifest` or `bundle blob`.
        what: &'static str,
        /// The reference.
        reference: String,
        /// The digest asked for.
        expected: String,
        /// The digest of what arrived.
        actual: String,
    },
    /// The file to push is not a bundle.
    #[error("not a capstan bundle: {0}")]
    NotABundle(String),
    /// Talking to the registry failed otherwise (connection, TLS, protocol).
    #[error("registry {host}: {why}")]
    Registry {
        /// The registry host.
        host: String,
        /// The error, on one line.
        why: String,
    },
}

/// How to reach registries.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Speak plain HTTP instead of HTTPS (a local or test registry).
    pub plain_http: bool,
    /// Accept any TLS certificate.
    pub insecure: bool,
    /// The Docker config file to take credentials from (default:
    /// [`default_config_path`]).
    pub registry_config: Option<PathBuf>,
}

/// What a push stored.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The manifest's digest (`sha256:…`).
    pub digest: String,
    /// The reference pinned to that digest.
    pub pinned: Reference,
    /// The bundle blob's size.
    pub size: u64,
}

/// What a pull fetched.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The bundle archive, byte for byte as pushed.
    pub bytes: Vec<u8>,
    /// The manifest's digest (`sha256:…`): the tag resolved once.
    pub digest: String,
    /// The reference pinned to that digest, as an app records it.
    pub pinned: Reference,
}

/// The config blob: what a person browsing the registry sees.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct BundleConfig {
    name: String,
    version: String,
    signer: String,
}

/// The parts of a manifest that are checked on pull.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    schema_version: u32,
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    artifact_type: Option<String>,
    config: Descriptor,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    media_type: String,
    digest: String,
    size: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

impl Descriptor {
    fn of(media_type: &str, bytes: &[u8]) -> Descriptor {
        Descriptor {
            media_type: media_type.to_owned(),
            digest: sha256(bytes),
            size: bytes.len() as i64,
            annotations: None,
        }
    }

    fn to_client(&self) -> oci_client::manifest::OciDescriptor {
        oci_client::manifest::OciDescriptor {
            media_type: self.media_type.clone(),
            digest: self.digest.clone(),
            size: self.size,
            ..Default::default()
        }
    }
}

/// `sha256:` and the hex digest of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The manifest pushed for a bundle: deterministic (no timestamps), so the
/// same bundle pushed twice has the same digest.
fn manifest_for(config: &[u8], bundle: &[u8], meta: &BundleConfig) -> Vec<u8> {
    let mut layer = Descriptor::of(LAYER_MEDIA_TYPE, bundle);
    layer.annotations = Some(
        [(
            "org.opencontainers.image.title".to_owned(),
            format!("{}-{}.tgz", meta.name, meta.version),
        )]
        .into(),
    );
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "artifactType": ARTIFACT_TYPE,
        "config": Descriptor::of(CONFIG_MEDIA_TYPE, config),
        "layers": [layer],
        "annotations": {
            "org.opencontainers.image.title": meta.name,
            "org.opencontainers.image.version": meta.version,
        },
    });
    serde_json::to_vec(&manifest).unwrap_or_default()
}

/// A client for one reference's registry.
struct Session {
    client: oci_client::Client,
    auth: oci_client::secrets::RegistryAuth,
    anonymous: bool,
    reference: Reference,
    runtime: tokio::runtime::Runtime,
}

impl Session {
    fn open(reference: &Reference, options: &Options) -> Result<Session, Error> {
        // reqwest is built without a default TLS provider; use ring, as
        // kube-rs does in this binary. A second install is a no-op.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let credentials = credentials_for(reference.host(), options.registry_config.as_deref())?;
        let config = oci_client::client::ClientConfig {
            protocol: if options.plain_http {
                oci_client::client::ClientProtocol::Http
            } else {
                oci_client::client::ClientProtocol::Https
            },
            accept_invalid_certificates: options.insecure,
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            ..Default::default()
        };
        let client = oci_client::Client::try_from(config).map_err(|e| Error::Registry {
            host: reference.host().to_owned(),
            why: one_line(&e),
        })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Registry {
                host: reference.host().to_owned(),
                why: format!("starting the async runtime: {e}"),
            })?;
        Ok(Session {
            client,
            anonymous: credentials == Credentials::Anonymous,
            auth: credentials.to_client(),
            reference: reference.clone(),
            runtime,
        })
    }

    /// Maps the client crate's error to ours, naming the step.
    fn error(&self, e: oci_client::errors::OciDistributionError) -> Error {
        use oci_client::errors::{OciDistributionError as E, OciErrorCode};
        let host = self.reference.host().to_owned();
        let reference = self.reference.to_string();
        let refused = |why: String| Error::AuthRefused {
            host: host.clone(),
            reference: reference.clone(),
            why: if self.anonymous {
                format!(
                    "{why}; no credentials for {host} were found (docker login, or --registry-config)"
                )
            } else {
                why
            },
        };
        match &e {
            E::AuthenticationFailure(why) => refused(token_service_refusal(why)),
            E::UnauthorizedError { .. } => refused("unauthorized".into()),
            E::ServerError {
                code: 401 | 403,
                message,
                ..
            } => refused(first_line(message)),
            E::RegistryError { envelope, .. } => {
                let codes: Vec<&OciErrorCode> = envelope.errors.iter().map(|e| &e.code).collect();
                let message = envelope
                    .errors
                    .iter()
                    .map(|e| e.message.clone())
                    .collect::<Vec<_>>()
                    .join("; ");
                if codes
                    .iter()
                    .any(|c| matches!(c, OciErrorCode::Unauthorized | OciErrorCode::Denied))
                {
                    refused(message)
                } else if codes.iter().any(|c| {
                    matches!(
                        c,
                        OciErrorCode::ManifestUnknown
                            | OciErrorCode::NameUnknown
                            | OciErrorCode::NotFound
                            | OciErrorCode::BlobUnknown
                    )
                }) {
                    Error::NotFound {
                        reference,
                        why: message,
                    }
                } else {
                    Error::Registry { host, why: message }
                }
            }
            E::ImageManifestNotFoundError(why) => Error::NotFound {
                reference,
                why: first_line(why),
            },
            E::ServerError {
                code: 404, message, ..
            } => Error::NotFound {
                reference,
                why: first_line(message),
            },
            E::DigestError(oci_client::errors::DigestError::VerificationError {
                expected,
                actual,
            }) => Error::DigestMismatch {
                what: "manifest",
                reference,
                expected: expected.clone(),
                actual: actual.clone(),
            },
            _ => {
                let mut why = one_line(&e);
                if why.contains("InvalidContentType") || why.contains("wrong version number") {
                    why.push_str(" (a plain-HTTP registry? --plain-http)");
                }
                Error::Registry { host, why }
            }
        }
    }
}

/// What a registry's token service said when it refused: the message of
/// its JSON answer (`details`, as Docker Hub's, `error_description`,
/// `message`, `error`, or distribution's `errors[].message`), else its
/// first line.
fn token_service_refusal(body: &str) -> String {
    let said = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|json| {
            ["details", "detail", "error_description", "message", "error"]
                .iter()
                .find_map(|key| json.get(key).and_then(|v| v.as_str()).map(str::to_owned))
                .or_else(|| {
                    let messages: Vec<&str> = json
                        .get("errors")?
                        .as_array()?
                        .iter()
                        .filter_map(|e| e.get("message").and_then(|m| m.as_str()))
                        .collect();
                    (!messages.is_empty()).then(|| messages.join("; "))
                })
        })
        .map(|text| first_line(&text))
        .unwrap_or_else(|| first_line(body));
    if said.is_empty() {
        "the token service refused the credentials".into()
    } else {
        format!("token service: {said}")
    }
}

/// An error and its causes on one line.
fn one_line(error: &dyn std::error::Error) -> String {
    let mut line = first_line(&error.to_string());
    let mut source = error.source();
    while let Some(cause) = source {
        let text = first_line(&cause.to_string());
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    line.chars().take(300).collect()
}

/// Pushes a bundle archive to `reference` (which must name a tag) and
/// returns the manifest's digest. The bundle is inspected first (its
/// signature is checked, not whether its key is trusted), so a file that
/// is not a bundle is never pushed.
///
/// # Errors
/// [`Error::Reference`] for a digest reference, [`Error::NotABundle`],
/// [`Error::AuthRefused`], [`Error::Registry`].
pub fn push(bundle: &[u8], reference: &Reference, options: &Options) -> Result<Pushed, Error> {
    if reference.tag().is_none() {
        return Err(Error::Reference {
            reference: reference.to_string(),
            why: "names a digest; push to a tag (REPO:TAG)".into(),
        });
    }
    if bundle.len() > MAX_BLOB_BYTES {
        return Err(Error::TooLarge {
            what: "bundle blob",
            reference: reference.to_string(),
            size: bundle.len() as u64,
            limit: MAX_BLOB_BYTES as u64,
        });
    }
    let inspection = crate::bundle::inspect(bundle, &crate::bundle::Limits::default())
        .map_err(|e| Error::NotABundle(one_line(&e)))?;
    let meta = BundleConfig {
        name: inspection.metadata.name.to_string(),
        version: inspection.metadata.version.to_string(),
        signer: inspection.signer.to_string(),
    };
    let config = serde_json::to_vec(&meta).unwrap_or_default();
    let manifest = manifest_for(&config, bundle, &meta);
    let digest = sha256(&manifest);
    let session = Session::open(reference, options)?;
    let image = reference.to_client();
    let client = &session.client;
    session.runtime.block_on(async {
        client
            .auth(&image, &session.auth, oci_client::RegistryOperation::Push)
            .await
            .map_err(|e| session.error(e))?;
        client
            .push_blob(&image, bundle.to_vec(), &sha256(bundle))
            .await
            .map_err(|e| session.error(e))?;
        client
            .push_blob(&image, config.clone(), &sha256(&config))
            .await
            .map_err(|e| session.error(e))?;
        let content_type = http::HeaderValue::from_static(MANIFEST_MEDIA_TYPE);
        client
            .push_manifest_raw(&image, manifest, content_type)
            .await
            .map_err(|e| session.error(e))?;
        Ok::<(), Error>(())
    })?;
    Ok(Pushed {
        pinned: reference.with_digest(&digest),
        digest,
        size: bundle.len() as u64,
    })
}

/// Pulls the bundle at `reference`: resolves a tag once to the manifest's
/// digest, checks the manifest (digest, size, artifact type, one bundle
/// layer), then fetches the blob and checks its size and digest. The bytes
/// are not verified as a bundle here: the caller verifies them as it
/// verifies a file.
///
/// # Errors
/// [`Error::NotFound`], [`Error::AuthRefused`], [`Error::WrongArtifact`],
/// [`Error::TooLarge`], [`Error::DigestMismatch`], [`Error::Registry`].
pub fn pull(reference: &Reference, options: &Options) -> Result<Pulled, Error> {
    let session = Session::open(reference, options)?;
    let image = reference.to_client();
    let client = &session.client;
    let shown = reference.to_string();
    session.runtime.block_on(async {
        client
            .auth(&image, &session.auth, oci_client::RegistryOperation::Pull)
            .await
            .map_err(|e| session.error(e))?;
        let (body, _) = client
            .pull_manifest_raw(&image, &session.auth, &[MANIFEST_MEDIA_TYPE])
            .await
            .map_err(|e| session.error(e))?;
        if body.len() > MAX_MANIFEST_BYTES {
            return Err(Error::TooLarge {
                what: "manifest",
                reference: shown.clone(),
                size: body.len() as u64,
                limit: MAX_MANIFEST_BYTES as u64,
            });
        }
        let digest = sha256(&body);
        if let Target::Digest(expected) = reference.target()
            && *expected != digest
        {
            return Err(Error::DigestMismatch {
                what: "manifest",
                reference: shown.clone(),
                expected: expected.clone(),
                actual: digest,
            });
        }
        let layer = bundle_layer(&body, &shown)?;
        let pinned = reference.with_digest(&digest);
        let bytes = fetch_blob(&session, &image, &layer, &shown).await?;
        Ok(Pulled {
            bytes,
            digest,
            pinned,
        })
    })
}

/// The bundle layer of a manifest, after checking it is a bundle's.
fn bundle_layer(body: &[u8], reference: &str) -> Result<Descriptor, Error> {
    let wrong = |why: String| Error::WrongArtifact {
        reference: reference.to_owned(),
        why,
    };
    let manifest: Manifest = serde_json::from_slice(body)
        .map_err(|e| wrong(format!("its manifest is not an OCI image manifest: {e}")))?;
    if manifest.schema_version != 2 {
        return Err(wrong(format!(
            "its manifest has schema version {}",
            manifest.schema_version
        )));
    }
    if let Some(media_type) = &manifest.media_type
        && media_type != MANIFEST_MEDIA_TYPE
    {
        return Err(wrong(format!("its manifest has media type {media_type}")));
    }
    let artifact = manifest
        .artifact_type
        .clone()
        .unwrap_or_else(|| manifest.config.media_type.clone());
    if artifact != ARTIFACT_TYPE && manifest.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(wrong(format!(
            "its artifact type is {artifact}, not {ARTIFACT_TYPE}"
        )));
    }
    let mut layers = manifest
        .layers
        .iter()
        .filter(|l| l.media_type == LAYER_MEDIA_TYPE);
    let layer = match (layers.next(), layers.next(), manifest.layers.len()) {
        (Some(layer), None, 1) => layer.clone(),
        _ => {
            let types: Vec<&str> = manifest
                .layers
                .iter()
                .map(|l| l.media_type.as_str())
                .collect();
            return Err(wrong(format!(
                "it has layers [{}], not one {LAYER_MEDIA_TYPE}",
                types.join(", ")
            )));
        }
    };
    if !valid_digest(&layer.digest) {
        return Err(wrong(format!(
            "its layer digest {:?} is not sha256",
            layer.digest
        )));
    }
    if layer.size < 0 || layer.size as u64 > MAX_BLOB_BYTES as u64 {
        return Err(Error::TooLarge {
            what: "bundle blob",
            reference: reference.to_owned(),
            size: layer.size.max(0) as u64,
            limit: MAX_BLOB_BYTES as u64,
        });
    }
    Ok(layer)
}

/// Fetches a blob, refusing more bytes than its descriptor declares and
/// any whose digest differs.
async fn fetch_blob(
    session: &Session,
    image: &oci_client::Reference,
    layer: &Descriptor,
    reference: &str,
) -> Result<Vec<u8>, Error> {
    use futures_util::StreamExt as _;
    let declared = layer.size as u64;
    let mut stream = session
        .client
        .pull_blob_stream(image, &layer.to_client())
        .await
        .map_err(|e| session.error(e))?;
    if let Some(length) = stream.content_length
        && length != declared
    {
        return Err(Error::DigestMismatch {
            what: "bundle blob",
            reference: reference.to_owned(),
            expected: format!("{} ({declared} bytes)", layer.digest),
            actual: format!("{length} bytes"),
        });
    }
    let mut bytes = Vec::with_capacity(declared.min(16 * 1024 * 1024) as usize);
    let mut hasher = Sha256::new();
    while let Some(chunk) = stream.stream.next().await {
        match chunk {
            Ok(chunk) => {
                if bytes.len() as u64 + chunk.len() as u64 > declared {
                    return Err(Error::DigestMismatch {
                        what: "bundle blob",
                        reference: reference.to_owned(),
                        expected: format!("{} ({declared} bytes)", layer.digest),
                        actual: format!("more than {declared} bytes"),
                    });
                }
                hasher.update(&chunk);
                bytes.extend_from_slice(&chunk);
            }
            // The client crate's own check at the end of the stream; ours
            // below names both digests.
            Err(e)
                if e.get_ref()
                    .is_some_and(|inner| inner.is::<oci_client::errors::DigestError>()) =>
            {
                break;
            }
            Err(e) => {
                return Err(Error::Registry {
                    host: session.reference.host().to_owned(),
                    why: format!("reading blob {}: {}", layer.digest, one_line(&e)),
                });
            }
        }
    }
    let actual = format!("sha256:{}", hex::encode(hasher.finalize()));
    if actual != layer.digest || bytes.len() as u64 != declared {
        return Err(Error::DigestMismatch {
            what: "bundle blob",
            reference: reference.to_owned(),
            expected: layer.digest.clone(),
            actual,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> BundleConfig {
        BundleConfig {
            name: "app".into(),
            version: "0.1.0".into(),
            signer: "SHA256:x".into(),
        }
    }

    #[test]
    fn a_token_services_refusal_is_its_message_on_one_line() {
        assert_eq!(
            token_service_refusal(r#"{"details":"incorrect username or password"}"#),
            "token service: incorrect username or password"
        );
        assert_eq!(
            token_service_refusal(
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"access denied"}]}"#
            ),
            "token service: access denied"
        );
        assert_eq!(
            token_service_refusal("<html>\nForbidden\n</html>"),
            "token service: <html>"
        );
        assert_eq!(
            token_service_refusal(""),
            "the token service refused the credentials"
        );
    }

    #[test]
    fn the_manifest_is_deterministic_and_reads_back_as_a_bundle() {
        let config = serde_json::to_vec(&meta()).unwrap();
        let one = manifest_for(&config, b"bundle bytes", &meta());
        assert_eq!(one, manifest_for(&config, b"bundle bytes", &meta()));
        let layer = bundle_layer(&one, "r").unwrap();
        assert_eq!(layer.digest, sha256(b"bundle bytes"));
        assert_eq!(layer.size, 12);
        let value: serde_json::Value = serde_json::from_slice(&one).unwrap();
        assert_eq!(value["artifactType"], ARTIFACT_TYPE);
        assert_eq!(value["config"]["mediaType"], CONFIG_MEDIA_TYPE);
    }

    #[test]
    fn other_artifacts_and_oversized_layers_are_refused() {
        let image = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha256(b"{}"), "size": 2},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": sha256(b"x"), "size": 1}],
        });
        let err = bundle_layer(&serde_json::to_vec(&image).unwrap(), "r").unwrap_err();
        assert!(
            err.to_string()
                .contains("artifact type is application/vnd.oci.image.config.v1+json"),
            "{err}"
        );
        let mut huge: serde_json::Value =
            serde_json::from_slice(&manifest_for(b"{}", b"x", &meta())).unwrap();
        huge["layers"][0]["size"] = serde_json::json!(MAX_BLOB_BYTES as u64 + 1);
        let err = bundle_layer(&serde_json::to_vec(&huge).unwrap(), "r").unwrap_err();
        assert!(matches!(err, Error::TooLarge { .. }), "{err}");
        let mut two = huge.clone();
        two["layers"][0]["size"] = serde_json::json!(1);
        let layer = two["layers"][0].clone();
        two["layers"] = serde_json::json!([layer.clone(), layer]);
        let err = bundle_layer(&serde_json::to_vec(&two).unwrap(), "r").unwrap_err();
        assert!(err.to_string().contains("not one"), "{err}");
        let err = bundle_layer(b"<html>", "r").unwrap_err();
        assert!(
            err.to_string().contains("not an OCI image manifest"),
            "{err}"
        );
    }
}
