//! The one rule for paths inside a bundle, shared by the unpacker, the
//! manifest parser and the builder: plain relative UTF-8 paths with `/`
//! separators, nothing that can leave the bundle root.

use super::{Error, MAX_PATH_BYTES};

/// Checks raw entry path bytes and returns the path as text. A single
/// trailing `/` (as tar writes for folders) is removed first.
///
/// # Errors
///
/// [`Error::NonUtf8Path`], [`Error::AbsolutePath`], [`Error::ParentComponent`]
/// or [`Error::InvalidPath`].
pub(super) fn check_entry_path(raw: &[u8]) -> Result<String, Error> {
    let text = std::str::from_utf8(raw).map_err(|_| Error::NonUtf8Path {
        path: String::from_utf8_lossy(raw).into_owned(),
    })?;
    check_path(text.strip_suffix('/').unwrap_or(text))?;
    Ok(text.strip_suffix('/').unwrap_or(text).to_string())
}

/// Checks a path that is already text.
///
/// # Errors
///
/// As [`check_entry_path`], without the UTF-8 step.
pub(super) fn check_path(path: &str) -> Result<(), Error> {
    let invalid = |reason| Error::InvalidPath {
        path: path.to_string(),
        reason,
    };
    if path.is_empty() {
        return Err(invalid("it is empty"));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(invalid("it is too long"));
    }
    if path.starts_with('/') {
        return Err(Error::AbsolutePath {
            path: path.to_string(),
        });
    }
    if path.split('/').any(|component| component == "..") {
        return Err(Error::ParentComponent {
            path: path.to_string(),
        });
    }
    if path.chars().any(|c| c == '\\' || c.is_control()) {
        return Err(invalid("it has a backslash or control character"));
    }
    if path
        .split('/')
        .any(|component| component.is_empty() || component == ".")
    {
        return Err(invalid("it has an empty or '.' component"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_pass_and_lose_a_trailing_slash() {
        assert_eq!(
            check_entry_path(b"charts/hello/Chart.yaml").unwrap(),
            "charts/hello/Chart.yaml"
        );
        assert_eq!(check_entry_path(b"charts/").unwrap(), "charts");
    }

    #[test]
    fn each_escape_has_its_error() {
        assert!(matches!(
            check_entry_path(b"/etc/passwd"),
            Err(Error::AbsolutePath { .. })
        ));
        assert!(matches!(
            check_entry_path(b"a/../../x"),
            Err(Error::ParentComponent { .. })
        ));
        assert!(matches!(
            check_entry_path(b".."),
            Err(Error::ParentComponent { .. })
        ));
        assert!(
            matches!(check_entry_path(b"a\xffb"), Err(Error::NonUtf8Path { path }) if path == "a\u{fffd}b")
        );
        for bad in [&b""[..], b"./a", b"a//b", b"a\\b", b"a\nb", b"/"] {
            let result = check_entry_path(bad);
            assert!(
                matches!(
                    result,
                    Err(Error::InvalidPath { .. }) | Err(Error::AbsolutePath { .. })
                ),
                "{bad:?}: {result:?}"
            );
        }
        let long = "a".repeat(MAX_PATH_BYTES + 1);
        assert!(matches!(
            check_path(&long),
            Err(Error::InvalidPath {
                reason: "it is too long",
                ..
            })
        ));
    }
}
