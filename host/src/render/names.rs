//! Release names as Helm's install action picks and checks them
//! (`action.Install.NameAndChart`, `TemplateName`, `ValidateReleaseName`):
//! the `NAME` argument, `--name-template` rendered with the template
//! engine, `--generate-name`, and the rule every release name must meet.
//!
//! Owns only the name; rendering the chart is the caller's.

use std::rc::Rc;

use super::Error;
use super::template::{Engine, TemplateSet};
use crate::values::Value;

/// The longest release name Helm accepts (`maxReleaseNameLen`): object
/// names derived from it must still fit Kubernetes' 63-character labels.
pub const MAX_RELEASE_NAME_LEN: usize = 53;

/// The name `helm template` presets before it picks one (so that
/// `--generate-name` alone leaves it, as Helm does).
pub const TEMPLATE_RELEASE_NAME: &str = "release-name";

/// Helm's reason for a name that breaks the rule (`errInvalidName`).
const INVALID_NAME: &str = "invalid release name, must match regex \
     ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ \
     and the length must not be longer than 53";

/// How the release name is asked for on the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameFlags {
    /// `--name-template`: a Go template whose output is the name.
    pub name_template: Option<String>,
    /// `--generate-name`: `<chart file's base name>-<Unix seconds>`.
    pub generate_name: bool,
    /// A name set before the arguments are read (`helm template` presets
    /// [`TEMPLATE_RELEASE_NAME`]); it wins over `--generate-name` but not
    /// over `--name-template` or a `NAME` argument.
    pub preset: Option<String>,
}

/// Helm's `NameAndChart`: the release name and the chart reference from
/// `[NAME] CHART` and the flags.
///
/// With two arguments the first is the name, and `--generate-name` or
/// `--name-template` is an error. With one, the name comes from
/// `--name-template`, else the preset name, else `--generate-name`
/// (`base-<seconds>`, where `base` is the chart path's last element up to
/// its first `.`, or `chart` for `.`); without any of them it is an error.
/// The name is not validated here: see [`validate_release_name`].
///
/// # Errors
/// [`Error::ReleaseNameArgs`] for the conflicts and omissions above (and
/// more than two arguments); [`Error::NameTemplate`] when the template does
/// not parse or fails.
pub fn name_and_chart(args: &[String], flags: &NameFlags) -> Result<(String, String), Error> {
    let (first, chart) = match args {
        [chart] => (None, chart.clone()),
        [name, chart] => (Some(name.clone()), chart.clone()),
        [] => return Err(Error::ReleaseNameArgs("no chart given".into())),
        [_, _, rest @ ..] => {
            return Err(Error::ReleaseNameArgs(format!(
                "expected at most two arguments, unexpected arguments: {}",
                rest.join(", ")
            )));
        }
    };
    if let Some(name) = first {
        if flags.generate_name {
            return Err(Error::ReleaseNameArgs(
                "cannot set --generate-name and also specify a name".into(),
            ));
        }
        if flags
            .name_template
            .as_deref()
            .is_some_and(|t| !t.is_empty())
        {
            return Err(Error::ReleaseNameArgs(
                "cannot set --name-template and also specify a name".into(),
            ));
        }
        return Ok((name, chart));
    }
    if let Some(template) = flags.name_template.as_deref().filter(|t| !t.is_empty()) {
        return Ok((render_name_template(template)?, chart));
    }
    if let Some(preset) = flags.preset.as_deref().filter(|p| !p.is_empty()) {
        return Ok((preset.to_string(), chart));
    }
    if !flags.generate_name {
        return Err(Error::ReleaseNameArgs(
            "must either provide a name or specify --generate-name".into(),
        ));
    }
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Ok((generated_name(&chart, seconds), chart))
}

/// Helm's generated name for the chart reference `chart` at Unix time
/// `seconds`: `filepath.Base(chart)` cut at its first `.` (`chart` when
/// the base is `.` or empty), then `-` and the seconds.
pub fn generated_name(chart: &str, seconds: u64) -> String {
    let mut base = go_base(chart);
    if base == "." || base.is_empty() {
        base = "chart";
    }
    if let Some(dot) = base.find('.') {
        base = &base[..dot];
    }
    format!("{base}-{seconds}")
}

/// Go's `filepath.Base` on a `/`-separated path: the last element, with
/// trailing slashes dropped; `.` for an empty path and `/` for slashes only.
fn go_base(path: &str) -> &str {
    if path.is_empty() {
        return ".";
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/";
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// Helm's `TemplateName`: executes `template` (named `name-template`) with
/// no data, and its output is the name. Helm gives it Sprig's functions;
/// the engine here also has Helm's own (`include`, `toYaml`...), which a
/// name template has no use for.
///
/// # Errors
/// [`Error::NameTemplate`] with Go's message when the template does not
/// parse or fails; the render limits apply while it runs.
pub fn render_name_template(template: &str) -> Result<String, Error> {
    super::template::with_big_stack(|| {
        let _budget = super::limits::start(super::RenderLimits::configured());
        let mut set = TemplateSet::new();
        set.add("name-template", template)
            .map_err(|e| Error::NameTemplate(e.to_string()))?;
        Engine::new(&set)
            .execute("name-template", Rc::new(Value::Null))
            .map_err(|e| Error::NameTemplate(e.to_string()))
    })
    .unwrap_or(Err(Error::Panicked))
}

/// Helm's `ValidateReleaseName`: at most [`MAX_RELEASE_NAME_LEN`] bytes,
/// dot-separated DNS-1123 labels (lowercase letters, digits and inner
/// `-`).
///
/// # Errors
/// [`Error::ReleaseName`] with Helm's reason.
pub fn validate_release_name(name: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::ReleaseName {
            name: String::new(),
            reason: "no name provided",
        });
    }
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        bytes.first().is_some_and(alnum)
            && bytes.last().is_some_and(alnum)
            && bytes.iter().all(|b| alnum(b) || *b == b'-')
    };
    if name.len() > MAX_RELEASE_NAME_LEN || !name.split('.').all(label_ok) {
        return Err(Error::ReleaseName {
            name: name.to_string(),
            reason: INVALID_NAME,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn template_flags() -> NameFlags {
        NameFlags {
            preset: Some(TEMPLATE_RELEASE_NAME.into()),
            ..NameFlags::default()
        }
    }

    #[test]
    fn a_name_argument_wins_and_conflicts_with_the_name_flags() {
        let flags = template_flags();
        assert_eq!(
            name_and_chart(&args(&["web", "./c"]), &flags).unwrap(),
            ("web".to_string(), "./c".to_string())
        );
        let generate = NameFlags {
            generate_name: true,
            ..template_flags()
        };
        let err = name_and_chart(&args(&["web", "./c"]), &generate).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot set --generate-name and also specify a name"
        );
        let named = NameFlags {
            name_template: Some("x".into()),
            ..template_flags()
        };
        let err = name_and_chart(&args(&["web", "./c"]), &named).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot set --name-template and also specify a name"
        );
    }

    #[test]
    fn helm_template_keeps_its_preset_name_under_generate_name() {
        // `helm template` sets ReleaseName = "release-name" before
        // NameAndChart, which returns it ahead of --generate-name.
        let generate = NameFlags {
            generate_name: true,
            ..template_flags()
        };
        assert_eq!(
            name_and_chart(&args(&["./c"]), &generate).unwrap().0,
            "release-name"
        );
        assert_eq!(
            name_and_chart(&args(&["./c"]), &template_flags())
                .unwrap()
                .0,
            "release-name"
        );
    }

    #[test]
    fn generated_names_are_the_chart_base_and_the_unix_seconds() {
        assert_eq!(
            generated_name("./charts/web", 1_700_000_000),
            "web-1700000000"
        );
        assert_eq!(
            generated_name("web-1.2.3.tgz", 1_700_000_000),
            "web-1-1700000000"
        );
        assert_eq!(generated_name("/srv/web/", 5), "web-5");
        assert_eq!(generated_name(".", 5), "chart-5");
        assert_eq!(generated_name("", 5), "chart-5");
        let install = NameFlags {
            generate_name: true,
            ..NameFlags::default()
        };
        let (name, chart) = name_and_chart(&args(&["./web"]), &install).unwrap();
        assert_eq!(chart, "./web");
        let digits = name.strip_prefix("web-").unwrap();
        assert_eq!(digits.len(), 10, "{name}");
        assert!(digits.bytes().all(|b| b.is_ascii_digit()), "{name}");
        let err = name_and_chart(&args(&["./web"]), &NameFlags::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "must either provide a name or specify --generate-name"
        );
    }

    #[test]
    fn name_templates_run_in_the_template_engine() {
        let named = |t: &str| NameFlags {
            name_template: Some(t.into()),
            ..template_flags()
        };
        let (name, _) =
            name_and_chart(&args(&["./c"]), &named("{{ printf \"%s-%d\" \"web\" 7 }}")).unwrap();
        assert_eq!(name, "web-7");
        let (name, _) =
            name_and_chart(&args(&["./c"]), &named("db-{{ \"ABC\" | lower }}")).unwrap();
        assert_eq!(name, "db-abc");
        let (name, _) = name_and_chart(
            &args(&["./c"]),
            &named("{{ randAlpha 6 | lower | printf \"x-%s\" }}"),
        )
        .unwrap();
        assert!(name.starts_with("x-") && name.len() == 8, "{name}");
        let err = name_and_chart(&args(&["./c"]), &named("{{ nope }}")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("template: name-template:1: function \"nope\" not defined"),
            "{err}"
        );
    }

    #[test]
    fn release_names_follow_helms_rule() {
        for good in ["a", "web", "web-1", "a.b", "x9.y-z", &"a".repeat(53)] {
            assert!(validate_release_name(good).is_ok(), "{good}");
        }
        for bad in [
            "Web",
            "-a",
            "a-",
            "a..b",
            ".a",
            "a_b",
            "a b",
            &"a".repeat(54),
        ] {
            let err = validate_release_name(bad).unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "release name {bad:?}: invalid release name, must match regex \
                     ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ \
                     and the length must not be longer than 53"
                )
            );
        }
        assert_eq!(
            validate_release_name("").unwrap_err().to_string(),
            "release name \"\": no name provided"
        );
    }
}
