//! `oci://HOST[:PORT]/REPO:TAG` and `oci://HOST[:PORT]/REPO@sha256:DIGEST`:
//! parsing with one clear line for each malformed part.

use std::fmt;
use std::str::FromStr;

use super::Error;

/// The scheme every registry reference starts with.
pub const SCHEME: &str = "oci://";

/// A registry reference that names its registry host, a repository and
/// exactly one of a tag or a digest. Unlike Docker's short names there is
/// no default registry and no default tag: what is pulled is what was
/// written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    host: String,
    repository: String,
    target: Target,
}

/// What a reference points at in its repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A tag, resolved by the registry (and so able to move).
    Tag(String),
    /// A manifest digest, `sha256:` and 64 lowercase hex digits.
    Digest(String),
}

impl Reference {
    /// The registry host, with its port if one was given.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The repository path inside the registry.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag or digest.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The tag, if the reference names one.
    pub fn tag(&self) -> Option<&str> {
        match &self.target {
            Target::Tag(tag) => Some(tag),
            Target::Digest(_) => None,
        }
    }

    /// The same repository pinned to `digest`.
    pub fn with_digest(&self, digest: &str) -> Reference {
        Reference {
            host: self.host.clone(),
            repository: self.repository.clone(),
            target: Target::Digest(digest.to_owned()),
        }
    }

    /// The reference in the client crate's type.
    pub(super) fn to_client(&self) -> oci_client::Reference {
        match &self.target {
            Target::Tag(tag) => oci_client::Reference::with_tag(
                self.host.clone(),
                self.repository.clone(),
                tag.clone(),
            ),
            Target::Digest(digest) => oci_client::Reference::with_digest(
                self.host.clone(),
                self.repository.clone(),
                digest.clone(),
            ),
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            Target::Tag(tag) => write!(f, "{SCHEME}{}/{}:{tag}", self.host, self.repository),
            Target::Digest(d) => write!(f, "{SCHEME}{}/{}@{d}", self.host, self.repository),
        }
    }
}

/// Whether `text` is meant as a registry reference (starts with `oci://`).
pub fn is_oci(text: &str) -> bool {
    text.starts_with(SCHEME)
}

impl FromStr for Reference {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let bad = |why: &str| Error::Reference {
            reference: text.to_owned(),
            why: why.to_owned(),
        };
        if text.len() > 1024 {
            return Err(bad("is longer than 1024 characters"));
        }
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("does not start with oci://"))?;
        let (host, path) = rest
            .split_once('/')
            .ok_or_else(|| bad("names no repository (oci://HOST[:PORT]/REPO:TAG)"))?;
        if !valid_host(host) {
            return Err(bad(
                "has no valid registry host (oci://HOST[:PORT]/REPO:TAG)",
            ));
        }
        let (repository, target) = if let Some((repo, digest)) = path.split_once('@') {
            if !valid_digest(digest) {
                return Err(bad(
                    "has a digest that is not sha256: and 64 lowercase hex digits",
                ));
            }
            (repo, Target::Digest(digest.to_owned()))
        } else {
            let last = path.rsplit('/').next().unwrap_or(path);
            match last.rsplit_once(':') {
                Some((_, tag)) => {
                    if !valid_tag(tag) {
                        return Err(bad(
                            "has a tag that is not 1 to 128 of [A-Za-z0-9_.-] (not starting with . or -)",
                        ));
                    }
                    (
                        &path[..path.len() - tag.len() - 1],
                        Target::Tag(tag.to_owned()),
                    )
                }
                None => {
                    return Err(bad(
                        "names no tag or digest (REPO:TAG or REPO@sha256:DIGEST)",
                    ));
                }
            }
        };
        if !valid_repository(repository) {
            return Err(bad(
                "has a repository that is not lowercase path components of [a-z0-9._-]",
            ));
        }
        Ok(Reference {
            host: host.to_owned(),
            repository: repository.to_owned(),
            target,
        })
    }
}

fn valid_host(host: &str) -> bool {
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) if !name.ends_with(']') || host.starts_with('[') => (name, Some(port)),
        _ => (host, None),
    };
    let name_ok = if let Some(inner) = name.strip_prefix('[') {
        inner
            .strip_suffix(']')
            .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok())
    } else {
        !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            })
    };
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p > 0));
    name_ok && port_ok
}

fn valid_repository(repo: &str) -> bool {
    !repo.is_empty()
        && repo.len() <= 255
        && repo.split('/').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
                && part.starts_with(|c: char| c.is_ascii_alphanumeric())
                && part.ends_with(|c: char| c.is_ascii_alphanumeric())
        })
}

fn valid_tag(tag: &str) -> bool {
    (1..=128).contains(&tag.len())
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        && !tag.starts_with(['.', '-'])
}

/// `sha256:` and 64 lowercase hex digits.
pub fn valid_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn parses_tags_digests_ports_and_nested_repositories() {
        let r: Reference = "oci://127.0.0.1:5000/apps/vault:1.2.0".parse().unwrap();
        assert_eq!(r.host(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "apps/vault");
        assert_eq!(r.tag(), Some("1.2.0"));
        assert_eq!(r.to_string(), "oci://127.0.0.1:5000/apps/vault:1.2.0");
        let pinned: Reference = format!("oci://registry.example/vault@{DIGEST}")
            .parse()
            .unwrap();
        assert_eq!(pinned.target(), &Target::Digest(DIGEST.into()));
        assert_eq!(
            r.with_digest(DIGEST).to_string(),
            format!("oci://127.0.0.1:5000/apps/vault@{DIGEST}")
        );
        let v6: Reference = "oci://[::1]:5000/a:b".parse().unwrap();
        assert_eq!(v6.host(), "[::1]:5000");
    }

    #[test]
    fn refuses_each_malformed_part_with_its_reason() {
        for (text, why) in [
            ("https://h/r:t", "does not start with oci://"),
            ("oci://host", "names no repository"),
            ("oci://host/repo", "names no tag or digest"),
            ("oci://ho_st/repo:t", "no valid registry host"),
            ("oci://host:99999/repo:t", "no valid registry host"),
            ("oci:///repo:t", "no valid registry host"),
            ("oci://host/Repo:t", "repository that is not lowercase"),
            ("oci://host/a//b:t", "repository that is not lowercase"),
            ("oci://host/repo:-t", "tag that is not"),
            ("oci://host/repo@sha256:abc", "digest that is not"),
            ("oci://host/repo@md5:0123", "digest that is not"),
        ] {
            let err = text.parse::<Reference>().unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
            assert!(err.contains(text), "{text}: {err}");
        }
    }
}
