//! The downgrade guard: which applied versions a bundle may update.

use semver::Version;

use super::Error;
use super::metadata::Metadata;

/// Checks that `candidate` may update an app whose applied version is `current`.
///
/// Without `force`, the candidate's version must be strictly newer than
/// `current` (semver precedence, so `1.0.0-rc.1` < `1.0.0`), and when
/// `upgrades.from_versions` is non-empty `current` must match one of its
/// items; an empty list accepts any version. `force` (the operator's
/// `app update --force`) waives both: a downgrade, a reinstall, or a
/// version whose author did not list the active one. The caller says so
/// loudly; this check only decides.
///
/// # Errors
///
/// [`Error::NotNewer`] or [`Error::NotUpgradableFrom`].
pub fn check_upgrade(current: &Version, candidate: &Metadata, force: bool) -> Result<(), Error> {
    if !force && candidate.version <= *current {
        return Err(Error::NotNewer {
            current: current.clone(),
            candidate: candidate.version.clone(),
        });
    }
    let from = &candidate.upgrades.from_versions;
    if !force && !from.is_empty() && !from.iter().any(|spec| spec.matches(current)) {
        return Err(Error::NotUpgradableFrom {
            current: current.clone(),
            candidate: candidate.version.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(version: &str, from: &str) -> Metadata {
        let text = format!(
            "name: app\nversion: {version}\ncharts: []\nchart_groups: []\nupgrades:\n  from_versions: {from}\n"
        );
        Metadata::parse(&text).unwrap()
    }

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn newer_versions_pass_older_fail_unless_forced() {
        let candidate = metadata("1.2.0", "[]");
        check_upgrade(&v("1.1.9"), &candidate, false).unwrap();
        check_upgrade(&v("1.2.0-rc.1"), &candidate, false).unwrap();
        assert!(matches!(
            check_upgrade(&v("1.2.0"), &candidate, false),
            Err(Error::NotNewer { .. })
        ));
        assert!(matches!(
            check_upgrade(&v("2.0.0"), &candidate, false),
            Err(Error::NotNewer { .. })
        ));
        check_upgrade(&v("2.0.0"), &candidate, true).unwrap();
    }

    #[test]
    fn from_versions_binds_unless_forced() {
        let candidate = metadata("2.0.0", "[\"1.5.0\", \">=1.0, <1.2\"]");
        check_upgrade(&v("1.5.0"), &candidate, false).unwrap();
        check_upgrade(&v("1.1.3"), &candidate, false).unwrap();
        for current in ["1.3.0", "1.5.1", "0.9.0"] {
            assert!(
                matches!(
                    check_upgrade(&v(current), &candidate, false),
                    Err(Error::NotUpgradableFrom { .. })
                ),
                "{current}"
            );
        }
        check_upgrade(&v("1.3.0"), &candidate, true).unwrap();
    }
}
