//! `capstan template`: renders a chart locally exactly as `helm template`
//! prints it, with no cluster and no `helm` binary.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use crate::render::{self, TemplateOptions, ValueSource};

/// Render chart templates locally and print the manifests.
#[derive(Debug, Args)]
pub struct TemplateArgs {
    /// `[NAME] CHART`: the release name (default "release-name") and the
    /// chart folder or .tgz.
    #[arg(value_name = "[NAME] CHART", num_args = 1..=2, required = true)]
    pub args: Vec<String>,
    /// Name the release with this Go template (Sprig functions, no data),
    /// as Helm's --name-template; not with a NAME argument.
    #[arg(long = "name-template", value_name = "TPL")]
    pub name_template: Option<String>,
    /// Accepted as `helm template` accepts it: the name stays
    /// "release-name" (Helm's template command presets it); not with a
    /// NAME argument.
    #[arg(short = 'g', long = "generate-name")]
    pub generate_name: bool,
    /// Values file (YAML); may be repeated, later files win.
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    pub values: Vec<PathBuf>,
    /// Set a value (`a.b=c`, `list[0]=x`); may be repeated.
    #[arg(long = "set", value_name = "K=V")]
    pub set: Vec<String>,
    /// Set a value as a string; may be repeated.
    #[arg(long = "set-string", value_name = "K=V")]
    pub set_string: Vec<String>,
    /// Set a value to the content of a file; may be repeated.
    #[arg(long = "set-file", value_name = "K=PATH")]
    pub set_file: Vec<String>,
    /// Set a value from JSON; may be repeated.
    #[arg(long = "set-json", value_name = "K=JSON")]
    pub set_json: Vec<String>,
    /// Namespace of the release.
    #[arg(short = 'n', long = "namespace", default_value = "default")]
    pub namespace: String,
    /// Kubernetes version for .Capabilities.KubeVersion.
    #[arg(long = "kube-version", value_name = "V")]
    pub kube_version: Option<String>,
    /// Extra API versions for .Capabilities.APIVersions; may be repeated.
    #[arg(short = 'a', long = "api-versions", value_name = "V")]
    pub api_versions: Vec<String>,
    /// Print only manifests from these templates (globs allowed).
    #[arg(short = 's', long = "show-only", value_name = "PATH")]
    pub show_only: Vec<String>,
    /// Also print the chart's CRDs.
    #[arg(long = "include-crds")]
    pub include_crds: bool,
    /// Leave out test hooks.
    #[arg(long = "skip-tests")]
    pub skip_tests: bool,
    /// Render as an upgrade (.Release.IsUpgrade true, IsInstall false).
    #[arg(long = "is-upgrade")]
    pub is_upgrade: bool,
    /// Render deadline in seconds (render limits; default 10).
    #[arg(long = "render-timeout", value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub render_timeout: Option<u64>,
    /// Cap on the chart's rendered output in MiB (default 64).
    #[arg(long = "render-max-output-mib", value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub render_max_output_mib: Option<u64>,
}

impl TemplateArgs {
    /// The render limits: the defaults with the flags given.
    pub fn limits(&self) -> render::RenderLimits {
        let mut limits = render::RenderLimits::default();
        if let Some(secs) = self.render_timeout {
            limits.deadline = std::time::Duration::from_secs(secs);
        }
        if let Some(mib) = self.render_max_output_mib {
            limits.max_output_bytes = usize::try_from(mib << 20).unwrap_or(usize::MAX);
        }
        limits
    }

    /// The render options these arguments ask for. The release name is
    /// picked as `helm template` picks it ([`render::names::name_and_chart`]
    /// with the name preset to "release-name").
    ///
    /// # Errors
    /// [`render::Error::ReleaseNameArgs`] when a NAME argument comes with
    /// `--generate-name` or `--name-template`,
    /// [`render::Error::NameTemplate`] when the name template fails.
    pub fn options(&self) -> Result<TemplateOptions, render::Error> {
        let flags = render::names::NameFlags {
            name_template: self.name_template.clone(),
            generate_name: self.generate_name,
            preset: Some(render::names::TEMPLATE_RELEASE_NAME.to_string()),
        };
        let (release_name, chart) = render::names::name_and_chart(&self.args, &flags)?;
        let mut values: Vec<ValueSource> =
            self.values.iter().cloned().map(ValueSource::File).collect();
        values.extend(self.set_json.iter().cloned().map(ValueSource::SetJson));
        values.extend(self.set.iter().cloned().map(ValueSource::Set));
        values.extend(self.set_string.iter().cloned().map(ValueSource::SetString));
        values.extend(self.set_file.iter().cloned().map(ValueSource::SetFile));
        Ok(TemplateOptions {
            chart: PathBuf::from(chart),
            release_name,
            namespace: self.namespace.clone(),
            values,
            kube_version: self.kube_version.clone(),
            api_versions: self.api_versions.clone(),
            show_only: self.show_only.clone(),
            include_crds: self.include_crds,
            skip_tests: self.skip_tests,
            is_upgrade: self.is_upgrade,
            limits: self.limits(),
        })
    }
}

/// Runs `capstan template`: manifests on stdout.
///
/// # Errors
/// The render error with the chart named as context.
pub fn run(args: TemplateArgs) -> anyhow::Result<ExitCode> {
    let opts = args.options()?;
    let out = render::template(&opts)
        .with_context(|| format!("rendering chart {}", opts.chart.display()))?;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e).context("writing manifests to stdout"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: TemplateArgs,
    }

    #[test]
    fn parses_helm_style_arguments() {
        let cli = Cli::parse_from([
            "t",
            "rel",
            "./chart",
            "-f",
            "a.yaml",
            "--set",
            "x=1",
            "-n",
            "apps",
            "--kube-version",
            "1.30.0",
            "-a",
            "v1/Foo",
            "--show-only",
            "templates/x.yaml",
            "--include-crds",
            "--skip-tests",
            "--is-upgrade",
        ]);
        let o = cli.args.options().unwrap();
        assert_eq!(o.release_name, "rel");
        assert_eq!(o.chart, PathBuf::from("./chart"));
        assert_eq!(o.namespace, "apps");
        assert_eq!(o.kube_version.as_deref(), Some("1.30.0"));
        assert_eq!(o.api_versions, vec!["v1/Foo".to_string()]);
        assert_eq!(
            o.values,
            vec![
                ValueSource::File("a.yaml".into()),
                ValueSource::Set("x=1".into())
            ]
        );
        assert!(o.include_crds && o.skip_tests && o.is_upgrade);
        let cli = Cli::parse_from(["t", "./chart"]);
        assert_eq!(cli.args.options().unwrap().release_name, "release-name");
    }

    #[test]
    fn names_come_from_the_name_flags_as_in_helm_template() {
        let cli = Cli::parse_from([
            "t",
            "--name-template",
            "{{ \"web\" }}-{{ add 1 2 }}",
            "./chart",
        ]);
        let o = cli.args.options().unwrap();
        assert_eq!(
            (o.release_name.as_str(), o.chart),
            ("web-3", PathBuf::from("./chart"))
        );
        let cli = Cli::parse_from(["t", "-g", "./chart"]);
        assert_eq!(cli.args.options().unwrap().release_name, "release-name");
        let cli = Cli::parse_from(["t", "--generate-name", "rel", "./chart"]);
        assert_eq!(
            cli.args.options().unwrap_err().to_string(),
            "cannot set --generate-name and also specify a name"
        );
    }
}
