//! Validation of the names and paths a local volume is made of.
//!
//! Kubernetes refuses bad names only when the object reaches the API server;
//! checking them here turns a late apply failure into an early, named error.

use super::Error;

/// The longest DNS-1123 label (a volume, claim or pod volume name).
const MAX_LABEL_LEN: usize = 63;
/// The longest DNS-1123 subdomain (a node or storage class name).
const MAX_SUBDOMAIN_LEN: usize = 253;

/// Checks that `name` is a DNS-1123 label: 1 to 63 lowercase letters, digits
/// and `-`, starting and ending with a letter or digit.
///
/// `what` names the input in the error (`"volume name"`).
///
/// # Errors
///
/// [`Error::InvalidName`] with the reason the name was refused.
pub fn validate_label(what: &'static str, name: &str) -> Result<(), Error> {
    label_problem(name).map_or(Ok(()), |reason| Err(invalid(what, name, reason)))
}

/// Checks that `name` is a DNS-1123 subdomain: at most 253 characters of
/// dot-separated labels (each as in [`validate_label`], without its length cap).
///
/// # Errors
///
/// [`Error::InvalidName`] with the reason the name was refused.
pub fn validate_subdomain(what: &'static str, name: &str) -> Result<(), Error> {
    if name.len() > MAX_SUBDOMAIN_LEN {
        return Err(invalid(what, name, "is longer than 253 characters"));
    }
    for part in name.split('.') {
        if let Some(reason) = part_problem(part) {
            return Err(invalid(what, name, reason));
        }
    }
    Ok(())
}

/// Checks a host path for a volume: absolute, not the root directory, no `..`
/// component, no NUL byte.
///
/// The path is not resolved or touched on disk; it lives on another node.
///
/// # Errors
///
/// [`Error::InvalidHostPath`] with the reason.
pub fn validate_host_path(path: &str) -> Result<(), Error> {
    path_problem(path).map_or(Ok(()), |reason| {
        Err(Error::InvalidHostPath {
            path: path.to_owned(),
            reason,
        })
    })
}

/// Checks a container mount path by the same rules as [`validate_host_path`].
///
/// # Errors
///
/// [`Error::InvalidMountPath`] with the reason.
pub fn validate_mount_path(path: &str) -> Result<(), Error> {
    path_problem(path).map_or(Ok(()), |reason| {
        Err(Error::InvalidMountPath {
            path: path.to_owned(),
            reason,
        })
    })
}

fn path_problem(path: &str) -> Option<&'static str> {
    if !path.starts_with('/') {
        Some("is not absolute")
    } else if path.contains('\0') {
        Some("contains a NUL byte")
    } else if path.split('/').any(|part| part == "..") {
        Some("contains a `..` component")
    } else if path.split('/').all(str::is_empty) {
        Some("is the root directory")
    } else {
        None
    }
}

fn label_problem(name: &str) -> Option<&'static str> {
    if name.len() > MAX_LABEL_LEN {
        return Some("is longer than 63 characters");
    }
    part_problem(name)
}

fn part_problem(part: &str) -> Option<&'static str> {
    let bytes = part.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return Some("is empty or has an empty part");
    };
    if !bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
    {
        return Some("may hold only lowercase letters, digits, `-` and `.`");
    }
    if *first == b'-' || *last == b'-' {
        return Some("must start and end with a letter or digit");
    }
    None
}

fn invalid(what: &'static str, name: &str, reason: &'static str) -> Error {
    Error::InvalidName {
        what,
        name: name.to_owned(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_dns_1123() {
        for good in ["a", "zk-data", "0data", "a1-b2"] {
            assert!(validate_label("volume name", good).is_ok(), "{good}");
        }
        for bad in ["", "-a", "a-", "Data", "a_b", "a.b", &"x".repeat(64)] {
            assert!(validate_label("volume name", bad).is_err(), "{bad}");
        }
        assert!(validate_label("volume name", &"x".repeat(63)).is_ok());
    }

    #[test]
    fn subdomains_allow_dots_but_not_empty_parts() {
        assert!(validate_subdomain("node name", "worker-1.example.com").is_ok());
        for bad in ["a..b", ".a", "a.", "A.b", "a.-b"] {
            assert!(validate_subdomain("node name", bad).is_err(), "{bad}");
        }
        let long = vec!["a".repeat(60); 5].join(".");
        assert!(validate_subdomain("node name", &long).is_err());
    }

    #[test]
    fn error_names_the_input() {
        let err = validate_label("volume name", "Bad").unwrap_err();
        assert_eq!(
            err.to_string(),
            "volume name \"Bad\" may hold only lowercase letters, digits, `-` and `.`"
        );
    }

    #[test]
    fn host_paths_are_absolute_without_parent_steps() {
        assert!(validate_host_path("/var/lib/zk").is_ok());
        assert!(validate_host_path("/data/./x").is_ok());
        for bad in ["var/lib", "/var/../etc", "/..", "/", "//", "/a\0b", ""] {
            assert!(validate_host_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn mount_paths_follow_the_host_path_rules() {
        assert!(validate_mount_path("/").is_err());
        assert!(validate_mount_path("/data").is_ok());
        assert!(validate_mount_path("data").is_err());
        assert!(validate_mount_path("/data/../etc").is_err());
    }
}
