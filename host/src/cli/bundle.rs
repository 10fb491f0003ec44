//! `capstan keygen` and `capstan bundle build|verify|inspect`: work on bundle
//! files locally, without a daemon. Results go to stdout, status to stderr.

use std::fs;
use std::io::{self, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::bundle::{self, Inspection, Limits, Metadata, PluginValidator};
use crate::oci;
use crate::trust::{SigningKey, TrustStore};

/// `capstan keygen`: write a new ed25519 signing key pair.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// The key's name: files NAME.key (private, mode 0600) and NAME.pub.
    #[arg(long)]
    pub name: String,
    /// The folder to write both files into (must exist).
    #[arg(long)]
    pub out: PathBuf,
}

/// `capstan bundle`: build, verify or inspect an app bundle.
#[derive(Debug, clap::Args)]
pub struct BundleArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: BundleCommand,
}

/// The `bundle` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum BundleCommand {
    /// Validate an app folder, sign it and pack it into a bundle.
    Build(BuildArgs),
    /// Check a bundle's signature against trusted keys and every file's digest.
    Verify(VerifyArgs),
    /// Show a bundle's metadata, files, digests and signer (trust not checked).
    Inspect(InspectArgs),
    /// Render every chart of an app folder with its static overrides and
    /// its plugins' overrides on example facts (`build` runs this first).
    Lint(LintArgs),
    /// Store a bundle in an OCI registry (`oci://HOST[:PORT]/REPO:TAG`);
    /// prints the pushed manifest digest.
    Push(PushArgs),
    /// Fetch a bundle from an OCI registry (by tag or `@sha256:DIGEST`),
    /// checking the manifest and blob digests.
    Pull(PullArgs),
}

/// How to reach OCI registries (`bundle push|pull`, `app upload|update oci://…`).
#[derive(Debug, Clone, clap::Args)]
pub struct RegistryArgs {
    /// Talk to the registry over plain HTTP (a local or test registry).
    #[arg(long)]
    pub plain_http: bool,
    /// Accept any TLS certificate from the registry.
    #[arg(long)]
    pub insecure: bool,
    /// The Docker config file holding registry credentials (default:
    /// $DOCKER_CONFIG/config.json, else ~/.docker/config.json; none: anonymous).
    #[arg(long, value_name = "FILE", env = "CAPSTAN_REGISTRY_CONFIG")]
    pub registry_config: Option<PathBuf>,
}

impl RegistryArgs {
    /// The options of the `oci` module.
    pub fn options(&self) -> oci::Options {
        oci::Options {
            plain_http: self.plain_http,
            insecure: self.insecure,
            registry_config: self.registry_config.clone(),
        }
    }
}

/// `capstan bundle push APP.tgz oci://HOST/REPO:TAG`.
#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The bundle file.
    pub archive: PathBuf,
    /// Where to store it: `oci://HOST[:PORT]/REPO:TAG`.
    pub reference: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// `capstan bundle pull oci://HOST/REPO:TAG|@sha256:DIGEST [-o FILE]`.
#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The artifact: `oci://HOST[:PORT]/REPO:TAG` or `…/REPO@sha256:DIGEST`.
    pub reference: String,
    /// Where to write the bundle (default: NAME-VERSION.tgz in the current
    /// folder, from the bundle's own metadata).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// `capstan bundle lint APPDIR [--facts FILE]`.
#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// The app folder holding capstan.yaml.
    pub app_dir: PathBuf,
    /// Facts the plugins compute overrides for (YAML); default: one
    /// all-in-one node.
    #[arg(long, value_name = "FILE")]
    pub facts: Option<PathBuf>,
}

/// `capstan bundle build APPDIR --key NAME.key --out APP.tgz`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The app folder holding capstan.yaml.
    pub app_dir: PathBuf,
    /// The OpenSSH ed25519 private key to sign with.
    #[arg(long)]
    pub key: PathBuf,
    /// Where to write the bundle.
    #[arg(long)]
    pub out: PathBuf,
    /// Do not render the charts first (`bundle lint`).
    #[arg(long)]
    pub no_lint: bool,
}

/// `capstan bundle verify APP.tgz --trust DIR`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The bundle file.
    pub archive: PathBuf,
    /// Folder of trusted *.pub keys.
    #[arg(long)]
    pub trust: PathBuf,
}

/// `capstan bundle inspect APP.tgz`.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// The bundle file.
    pub archive: PathBuf,
}

/// Runs `capstan keygen`.
///
/// # Errors
///
/// When the name is invalid or a key file exists or cannot be written.
pub fn run_keygen(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    let key = SigningKey::generate(&args.name).context("generating a signing key")?;
    let (private_path, public_path) = key.write_pair(&args.out).with_context(|| {
        format!(
            "writing key pair {:?} into {}",
            args.name,
            args.out.display()
        )
    })?;
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "private key: {}", private_path.display())?;
    writeln!(stdout, "public key:  {}", public_path.display())?;
    writeln!(stdout, "fingerprint: {}", key.fingerprint())?;
    Ok(ExitCode::SUCCESS)
}

/// Runs a `capstan bundle` subcommand. `validate_plugin` checks each plugin
/// at build time (the daemon's sandbox check that it exports the capstan world).
///
/// # Errors
///
/// When the operation fails; the chain names the file and the rejection.
pub fn run(args: BundleArgs, validate_plugin: PluginValidator<'_>) -> anyhow::Result<ExitCode> {
    match args.command {
        BundleCommand::Build(args) => run_build(args, validate_plugin),
        BundleCommand::Verify(args) => run_verify(args),
        BundleCommand::Inspect(args) => run_inspect(args),
        BundleCommand::Push(args) => run_push(args),
        BundleCommand::Pull(args) => run_pull(args),
        BundleCommand::Lint(args) => {
            let facts = match &args.facts {
                Some(path) => {
                    let text = fs::read_to_string(path)
                        .with_context(|| format!("reading facts {}", path.display()))?;
                    Some(
                        crate::model::Facts::from_yaml(&text)
                            .with_context(|| format!("parsing facts {}", path.display()))?,
                    )
                }
                None => None,
            };
            let charts = super::lint::check(&args.app_dir, facts.as_ref())?;
            eprintln!(
                "{:>12} {} ({charts} charts rendered)",
                "Linted",
                args.app_dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn run_push(args: PushArgs) -> anyhow::Result<ExitCode> {
    let reference: oci::Reference = args.reference.parse()?;
    let meta = fs::metadata(&args.archive)
        .with_context(|| format!("reading bundle {}", args.archive.display()))?;
    anyhow::ensure!(
        meta.len() <= oci::MAX_BLOB_BYTES as u64,
        "bundle {} is larger than the {} MiB a bundle may be",
        args.archive.display(),
        oci::MAX_BLOB_BYTES / (1024 * 1024)
    );
    let bytes = fs::read(&args.archive)
        .with_context(|| format!("reading bundle {}", args.archive.display()))?;
    let pushed = oci::push(&bytes, &reference, &args.registry.options())
        .with_context(|| format!("pushing {} to {reference}", args.archive.display()))?;
    eprintln!(
        "{:>12} {} ({} bytes) to {reference}",
        "Pushed",
        args.archive.display(),
        pushed.size
    );
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{}", pushed.digest)?;
    Ok(ExitCode::SUCCESS)
}

/// Fetches a bundle from a registry for `bundle pull` and `app upload|update`.
///
/// # Errors
/// A malformed reference, or the registry step that failed.
pub fn pull(reference: &str, registry: &RegistryArgs) -> anyhow::Result<oci::Pulled> {
    let parsed: oci::Reference = reference.parse()?;
    let pulled =
        oci::pull(&parsed, &registry.options()).with_context(|| format!("pulling {parsed}"))?;
    eprintln!(
        "{:>12} {} ({} bytes)",
        "Pulled",
        pulled.pinned,
        pulled.bytes.len()
    );
    Ok(pulled)
}

fn run_pull(args: PullArgs) -> anyhow::Result<ExitCode> {
    let pulled = pull(&args.reference, &args.registry)?;
    let out = match args.out {
        Some(out) => out,
        None => {
            let inspection = bundle::inspect(&pulled.bytes[..], &Limits::default())
                .with_context(|| format!("inspecting the bundle of {}", pulled.pinned))?;
            PathBuf::from(format!(
                "{}-{}.tgz",
                inspection.metadata.name, inspection.metadata.version
            ))
        }
    };
    fs::write(&out, &pulled.bytes).with_context(|| format!("writing {}", out.display()))?;
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{}", out.display())?;
    writeln!(stdout, "{}", pulled.digest)?;
    Ok(ExitCode::SUCCESS)
}

fn run_build(args: BuildArgs, validate_plugin: PluginValidator<'_>) -> anyhow::Result<ExitCode> {
    let key = SigningKey::load(&args.key).context("loading the signing key")?;
    if !args.no_lint {
        super::lint::check(&args.app_dir, None)?;
    }
    let report = bundle::build(&args.app_dir, &key, &args.out, validate_plugin)
        .with_context(|| format!("building a bundle from {}", args.app_dir.display()))?;
    eprintln!(
        "{:>12} {} {} ({} files, {} bytes) signed by {}",
        "Built",
        report.metadata.name,
        report.metadata.version,
        report.manifest.len(),
        report.archive_bytes,
        report.signer
    );
    writeln!(io::stdout().lock(), "{}", report.out.display())?;
    Ok(ExitCode::SUCCESS)
}

fn open_archive(path: &PathBuf) -> anyhow::Result<BufReader<fs::File>> {
    let file =
        fs::File::open(path).with_context(|| format!("opening bundle {}", path.display()))?;
    Ok(BufReader::new(file))
}

fn run_verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let trust = TrustStore::load_dir(&args.trust).context("loading trusted keys")?;
    let archive = open_archive(&args.archive)?;
    let verified = bundle::verify(archive, &trust, &Limits::default())
        .with_context(|| format!("verifying bundle {}", args.archive.display()))?;
    let key_file = trust
        .get(&verified.signer)
        .map(|key| key.file().display().to_string())
        .unwrap_or_default();
    eprintln!(
        "{:>12} {} {} signed by {} ({key_file})",
        "Verified", verified.metadata.name, verified.metadata.version, verified.signer
    );
    writeln!(io::stdout().lock(), "ok")?;
    Ok(ExitCode::SUCCESS)
}

fn run_inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let archive = open_archive(&args.archive)?;
    let inspection = bundle::inspect(archive, &Limits::default())
        .with_context(|| format!("inspecting bundle {}", args.archive.display()))?;
    let mut stdout = io::stdout().lock();
    stdout.write_all(render_inspection(&inspection).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn render_inspection(inspection: &Inspection) -> String {
    let Inspection {
        metadata,
        signer,
        manifest,
    } = inspection;
    let mut text = render_metadata(metadata);
    text.push_str(&format!("signer:      {signer} (trust not checked)\n"));
    text.push_str(&format!("files ({}):\n", manifest.len()));
    for entry in manifest.entries() {
        text.push_str(&format!("  {}  {}\n", entry.digest, entry.path));
    }
    text
}

fn render_metadata(metadata: &Metadata) -> String {
    let mut text = format!(
        "name:        {}\nversion:     {}\n",
        metadata.name, metadata.version
    );
    if !metadata.description.is_empty() {
        text.push_str(&format!("description: {}\n", metadata.description));
    }
    if let Some(range) = &metadata.kubernetes {
        let show =
            |bound: Option<bundle::KubeVersion>| bound.map_or("any".to_string(), |v| v.to_string());
        text.push_str(&format!(
            "kubernetes:  {} to {}\n",
            show(range.min),
            show(range.max)
        ));
    }
    text.push_str("chart groups:\n");
    for group in &metadata.chart_groups {
        text.push_str(&format!("  {} ({}):\n", group.name, group.mode.as_str()));
        for name in &group.charts {
            if let Some(chart) = metadata.chart(name) {
                let state = if chart.enabled { "" } else { " (disabled)" };
                text.push_str(&format!(
                    "    {} -> release {} in {} from {}{state}\n",
                    chart.name, chart.release, chart.namespace, chart.path
                ));
            }
        }
    }
    for plugin in &metadata.plugins {
        let hooks: Vec<String> = plugin.hooks.iter().map(|hook| hook.to_string()).collect();
        let charts: Vec<&str> = plugin.charts.iter().map(|chart| chart.as_str()).collect();
        text.push_str(&format!(
            "plugin:      {} hooks [{}] charts [{}]\n",
            plugin.path,
            hooks.join(", "),
            charts.join(", ")
        ));
    }
    let from: Vec<String> = metadata
        .upgrades
        .from_versions
        .iter()
        .map(ToString::to_string)
        .collect();
    text.push_str(&format!(
        "upgrades:    from [{}], user overrides {}\n",
        from.join(", "),
        if metadata.maintain_user_overrides {
            "kept"
        } else {
            "reset"
        }
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(_: &crate::bundle::Plugin, _: &[u8]) -> Result<(), String> {
        Ok(())
    }

    fn write_app(dir: &std::path::Path) {
        fs::create_dir_all(dir.join("charts/c")).unwrap();
        fs::write(
            dir.join("capstan.yaml"),
            "name: app\nversion: 0.1.0\ncharts:\n  - {name: c, path: charts/c, namespace: ns, release: c}\n\
             chart_groups:\n  - {name: g, mode: sequential, charts: [c]}\n",
        )
        .unwrap();
        fs::write(dir.join("charts/c/Chart.yaml"), "name: c\n").unwrap();
    }

    #[test]
    fn keygen_build_verify_inspect() {
        let work = tempfile::tempdir().unwrap();
        let keys = work.path().join("keys");
        let untrusted = work.path().join("untrusted");
        fs::create_dir_all(&keys).unwrap();
        fs::create_dir_all(&untrusted).unwrap();
        let keygen = |name: &str, out: &std::path::Path| {
            run_keygen(KeygenArgs {
                name: name.to_string(),
                out: out.to_path_buf(),
            })
        };
        keygen("builder", &keys).unwrap();
        keygen("other", &untrusted).unwrap();
        fs::remove_file(untrusted.join("other.key")).unwrap();
        let app = work.path().join("app");
        write_app(&app);
        let archive = work.path().join("app.tgz");
        let build = BundleCommand::Build(BuildArgs {
            app_dir: app,
            key: keys.join("builder.key"),
            out: archive.clone(),
            no_lint: true,
        });
        run(BundleArgs { command: build }, &accept).unwrap();

        let verify = |trust: &std::path::Path| {
            let command = BundleCommand::Verify(VerifyArgs {
                archive: archive.clone(),
                trust: trust.to_path_buf(),
            });
            run(BundleArgs { command }, &accept)
        };
        verify(&keys).unwrap();
        let err = verify(&untrusted).unwrap_err();
        assert!(format!("{err:#}").contains("not a trusted key"), "{err:#}");

        let inspection =
            bundle::inspect(fs::File::open(&archive).unwrap(), &Limits::default()).unwrap();
        let text = render_inspection(&inspection);
        assert!(
            text.starts_with("name:        app\nversion:     0.1.0\n"),
            "{text}"
        );
        assert!(
            text.contains("c -> release c in ns from charts/c"),
            "{text}"
        );
        assert!(text.contains("  charts/c/Chart.yaml\n"), "{text}");
    }
}
