//! Registry credentials as people already keep them: Docker's
//! `config.json` (`auths` entries written by `docker login`, `helm registry
//! login`, `oras login`), found at `--registry-config`, else
//! `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`; with none of
//! them, anonymous. Basic credentials are sent as the registry asks: as
//! HTTP basic auth, or to its token service for a bearer token (the client
//! crate does the token exchange).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::Deserialize;

use super::Error;

/// The largest config file read.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// What is sent to one registry.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// Nothing: anonymous access (a token service may still hand out an
    /// anonymous token).
    Anonymous,
    /// A user name and password (or an access token used as one).
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
    /// A registry bearer token, sent as it is.
    Bearer(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Anonymous => f.write_str("Anonymous"),
            Credentials::Basic { username, .. } => write!(f, "Basic({username}, ***)"),
            Credentials::Bearer(_) => f.write_str("Bearer(***)"),
        }
    }
}

impl Credentials {
    pub(super) fn to_client(&self) -> oci_client::secrets::RegistryAuth {
        use oci_client::secrets::RegistryAuth;
        match self {
            Credentials::Anonymous => RegistryAuth::Anonymous,
            Credentials::Basic { username, password } => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
            Credentials::Bearer(token) => RegistryAuth::Bearer(token.clone()),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

/// The config file used when `--registry-config` is not given:
/// `$DOCKER_CONFIG/config.json`, else `$HOME/.docker/config.json`.
pub fn default_config_path() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("DOCKER_CONFIG") {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".docker/config.json"))
}

/// The credentials for `host` (`HOST[:PORT]`) from the config file at
/// `explicit`, or from the default file when it exists.
///
/// # Errors
/// [`Error::RegistryConfig`] when the file given cannot be read, the file
/// found is not JSON of Docker's shape, or its entry for the host cannot be
/// used (a malformed `auth`, an identity token, a credential helper).
pub fn credentials_for(host: &str, explicit: Option<&Path>) -> Result<Credentials, Error> {
    let path = match explicit {
        Some(path) => path.to_path_buf(),
        None => match default_config_path() {
            Some(path) if path.is_file() => path,
            _ => return Ok(Credentials::Anonymous),
        },
    };
    let bad = |why: String| Error::RegistryConfig {
        path: path.clone(),
        why,
    };
    let file = std::fs::File::open(&path).map_err(|e| bad(e.to_string()))?;
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut std::io::Read::take(file, MAX_CONFIG_BYTES + 1),
        &mut text,
    )
    .map_err(|e| bad(e.to_string()))?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(bad(format!("is larger than {MAX_CONFIG_BYTES} bytes")));
    }
    let config: ConfigFile = serde_json::from_str(&text)
        .map_err(|e| bad(format!("is not a Docker config file: {e}")))?;
    lookup(&config, host).map_err(bad)
}

/// The `auths` key for a host: Docker writes `host`, `https://host` or
/// `https://host/v1/`.
fn key_host(key: &str) -> &str {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    key.split('/').next().unwrap_or(key)
}

fn lookup(config: &ConfigFile, host: &str) -> Result<Credentials, String> {
    let entry = config
        .auths
        .iter()
        .find(|(key, _)| key_host(key) == host)
        .map(|(_, entry)| entry);
    let Some(entry) = entry else {
        if let Some(helper) = config
            .cred_helpers
            .iter()
            .find(|(key, _)| key_host(key) == host)
            .map(|(_, helper)| helper)
        {
            return Err(format!(
                "keeps the credentials of {host} in credential helper docker-credential-{helper}, \
                 which capstan does not run; give a config file holding them with --registry-config"
            ));
        }
        if let Some(store) = &config.creds_store {
            tracing::warn!(
                registry = host,
                store = store.as_str(),
                "credentials in a credential store are not read; trying anonymous access"
            );
        }
        return Ok(Credentials::Anonymous);
    };
    if let Some(token) = entry.registrytoken.as_deref().filter(|t| !t.is_empty()) {
        return Ok(Credentials::Bearer(token.to_owned()));
    }
    if entry
        .identitytoken
        .as_deref()
        .is_some_and(|t| !t.is_empty())
    {
        return Err(format!(
            "holds an identity token for {host}, which capstan cannot exchange; \
             log in with a user name and password or token instead"
        ));
    }
    if let Some(auth) = entry.auth.as_deref().filter(|a| !a.is_empty()) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| {
                format!("has an \"auth\" for {host} that is not base64 of USER:PASSWORD")
            })?;
        let (username, password) = decoded.split_once(':').ok_or_else(|| {
            format!("has an \"auth\" for {host} that is not base64 of USER:PASSWORD")
        })?;
        return Ok(Credentials::Basic {
            username: username.to_owned(),
            password: password.to_owned(),
        });
    }
    match (&entry.username, &entry.password) {
        (Some(username), Some(password)) => Ok(Credentials::Basic {
            username: username.clone(),
            password: password.clone(),
        }),
        _ => Ok(Credentials::Anonymous),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("config.json");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn reads_the_entries_docker_login_writes() {
        let dir = tempfile::tempdir().unwrap();
        let auth = base64::engine::general_purpose::STANDARD.encode("alice:s3cret:with-colon");
        let path = write(
            dir.path(),
            &format!(
                r#"{{"auths": {{
                    "https://127.0.0.1:5000/v1/": {{"auth": "{auth}"}},
                    "tok.example": {{"registrytoken": "abc"}},
                    "plain.example": {{"username": "bob", "password": "pw"}}
                }}}}"#
            ),
        );
        assert_eq!(
            credentials_for("127.0.0.1:5000", Some(&path)).unwrap(),
            Credentials::Basic {
                username: "alice".into(),
                password: "s3cret:with-colon".into()
            }
        );
        assert_eq!(
            credentials_for("tok.example", Some(&path)).unwrap(),
            Credentials::Bearer("abc".into())
        );
        assert!(matches!(
            credentials_for("plain.example", Some(&path)).unwrap(),
            Credentials::Basic { .. }
        ));
        assert_eq!(
            credentials_for("other.example", Some(&path)).unwrap(),
            Credentials::Anonymous
        );
        assert!(
            !format!(
                "{:?}",
                credentials_for("127.0.0.1:5000", Some(&path)).unwrap()
            )
            .contains("s3cret")
        );
    }

    #[test]
    fn refuses_what_it_cannot_use_with_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.json");
        let err = credentials_for("h", Some(&missing))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nope.json"), "{err}");
        for (text, why) in [
            ("not json", "is not a Docker config file"),
            (
                r#"{"auths": {"h": {"auth": "!!!"}}}"#,
                "not base64 of USER:PASSWORD",
            ),
            (
                r#"{"auths": {"h": {"identitytoken": "x"}}}"#,
                "identity token",
            ),
            (
                r#"{"credHelpers": {"h": "ecr-login"}}"#,
                "docker-credential-ecr-login",
            ),
        ] {
            let path = write(dir.path(), text);
            let err = credentials_for("h", Some(&path)).unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }
}
