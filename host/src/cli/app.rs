//! `capstan app ...` and `capstan override ...`: clients of the daemon's
//! API. Long operations show their progress (chart group, chart, step)
//! on stderr until they end; the exit status says how they ended.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;

use crate::api::wire::{
    AppDetails, AppRecord, ApplyRequest, ChartDiff, ChartOverrides, HistoryEntry, OverrideSet,
    OverrideSummary, RemoveRequest, Started, UpdateQuery, VolumeRemoveQuery, VolumeRequest,
    VolumeView,
};
use crate::api::{self, Address, Client};
use crate::store::Outcome;

/// How often a waiting client asks for progress.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// How to reach the daemon.
#[derive(Debug, Args)]
pub struct Connection {
    /// The daemon: `unix:PATH`, `https://HOST:PORT` or `http://HOST:PORT`.
    /// Default: the socket in the state folder.
    #[arg(long, global = true, value_name = "ADDRESS", env = "CAPSTAN_SERVER")]
    pub server: Option<Address>,
    /// The state folder whose socket is the default server.
    #[arg(long, global = true, value_name = "DIR", env = "CAPSTAN_STATE")]
    pub state: Option<PathBuf>,
    /// Bearer token for a TCP daemon.
    #[arg(
        long,
        global = true,
        value_name = "TOKEN",
        env = "CAPSTAN_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// The CA certificate (PEM) that signed a TLS daemon's certificate;
    /// default: the system's roots. Given with an `http://` or `tcp:`
    /// server, that server is spoken to over TLS.
    #[arg(long, global = true, value_name = "FILE", env = "CAPSTAN_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = Format::Table)]
    pub output: Format,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns for a person.
    Table,
    /// JSON, as the API returns it.
    Json,
    /// YAML.
    Yaml,
}

impl Connection {
    fn client(&self) -> anyhow::Result<Client> {
        let address = match &self.server {
            Some(address) => address.clone(),
            None => {
                Address::default_for(&self.state.clone().unwrap_or_else(api::default_state_dir))
            }
        };
        let address = match (address, &self.tls_ca) {
            (Address::Tcp(addr), Some(_)) => Address::Https(addr),
            (address, _) => address,
        };
        let client = Client::new(address.clone(), self.token.clone())?;
        Ok(match address {
            Address::Https(_) => {
                let config = api::tls::client_config(self.tls_ca.as_deref())
                    .context("loading the daemon's CA (--tls-ca)")?;
                client.with_tls(config)
            }
            _ => client,
        })
    }
}

/// `capstan app`.
#[derive(Debug, Args)]
pub struct AppArgs {
    #[command(flatten)]
    connection: Connection,
    #[command(subcommand)]
    command: AppCommand,
}

#[derive(Debug, Subcommand)]
enum AppCommand {
    /// Verify a bundle and store it as a new app.
    Upload {
        /// The bundle: a .tgz file, or `oci://HOST[:PORT]/REPO:TAG` (or
        /// `@sha256:DIGEST`) in a registry; the app records the digest.
        bundle: PathBuf,
        #[command(flatten)]
        registry: super::bundle::RegistryArgs,
    },
    /// Apply (or re-apply) an app.
    Apply {
        /// The app.
        name: String,
        /// Decide this component's workload kind again; may be repeated.
        #[arg(long, value_name = "COMPONENT")]
        rekind: Vec<String>,
        /// Take over live objects that no release of this app owns yet
        /// (objects made by hand or by another tool); without it such an
        /// object is a conflict naming its owner.
        #[arg(long)]
        adopt: bool,
        /// Delete and create this object again if the cluster refuses a
        /// change to it as immutable (`Kind/name`, e.g. `StatefulSet/db`;
        /// StatefulSets keep their Pods and claims); may be repeated.
        #[arg(long, value_name = "KIND/NAME")]
        recreate: Vec<String>,
        /// Return once started instead of showing progress.
        #[arg(long)]
        no_wait: bool,
    },
    /// Remove an app's charts from the target; it stays uploaded.
    Remove {
        /// The app.
        name: String,
        /// Go on past failing charts and hooks; also from `uploaded`.
        #[arg(long)]
        force: bool,
        /// Return once started.
        #[arg(long)]
        no_wait: bool,
    },
    /// Delete an uploaded app and its files.
    Delete {
        /// The app.
        name: String,
    },
    /// Move an applied app to a newer bundle version (rolls back on failure).
    Update {
        /// The new bundle: a .tgz file or an `oci://` reference, as for upload.
        bundle: PathBuf,
        #[command(flatten)]
        registry: super::bundle::RegistryArgs,
        /// Keep user overrides (default: the bundle's maintain_user_overrides).
        #[arg(long, conflicts_with = "drop_user_overrides")]
        reuse_user_overrides: bool,
        /// Drop user overrides.
        #[arg(long)]
        drop_user_overrides: bool,
        /// Return once started.
        #[arg(long)]
        no_wait: bool,
    },
    /// Stop a running apply, update, remove or recover at its next step.
    Abort {
        /// The app.
        name: String,
    },
    /// Bring a failed app back to its active version, applied.
    Recover {
        /// The app.
        name: String,
        /// Return once started.
        #[arg(long)]
        no_wait: bool,
    },
    /// List apps.
    List,
    /// Show one app.
    Show {
        /// The app.
        name: String,
    },
    /// An app's operations, oldest first.
    History {
        /// The app.
        name: String,
    },
    /// What an apply would change against what is applied.
    Diff {
        /// The app.
        name: String,
    },
}

/// `capstan override`.
#[derive(Debug, Args)]
pub struct OverrideArgs {
    #[command(flatten)]
    connection: Connection,
    #[command(subcommand)]
    command: OverrideCommand,
}

#[derive(Debug, Subcommand)]
enum OverrideCommand {
    /// Which override layers each chart has.
    List {
        /// The app.
        app: String,
    },
    /// Each layer of a chart and the merged values.
    Show {
        /// The app.
        app: String,
        /// The chart.
        chart: String,
    },
    /// Set a chart's user overrides (effective at the next apply).
    Set {
        /// The app.
        app: String,
        /// The chart.
        chart: String,
        /// Values file (YAML); may be repeated, later files win.
        #[arg(short = 'f', long = "values", value_name = "FILE")]
        values: Vec<PathBuf>,
        /// A value (`a.b=c`); may be repeated.
        #[arg(long = "set", value_name = "K=V")]
        set: Vec<String>,
        /// Merge onto the current user overrides instead of replacing them.
        #[arg(long)]
        reuse_values: bool,
    },
    /// Delete a chart's user overrides.
    Delete {
        /// The app.
        app: String,
        /// The chart.
        chart: String,
    },
}

/// `capstan volume`.
#[derive(Debug, Args)]
pub struct VolumeArgs {
    #[command(flatten)]
    connection: Connection,
    #[command(subcommand)]
    command: VolumeCommand,
}

#[derive(Debug, Subcommand)]
enum VolumeCommand {
    /// Create a local volume: a PersistentVolume on a host path pinned to
    /// a node, and a claim bound to it.
    Create {
        /// The volume's name (also its claim's).
        name: String,
        /// The node whose disk holds it.
        #[arg(long)]
        node: String,
        /// The absolute directory on that node.
        #[arg(long)]
        path: String,
        /// The size, e.g. 10Gi.
        #[arg(long)]
        size: String,
        /// The storage class the claim binds through.
        #[arg(long)]
        storage_class: Option<String>,
        /// The namespace of the claim (the apps that mount it run there).
        #[arg(short = 'n', long)]
        namespace: Option<String>,
    },
    /// List volumes with their node, path, size, claim and users.
    List,
    /// Remove a volume's objects; the data on the node stays.
    Remove {
        /// The volume.
        name: String,
        /// Remove it even while apps mount it.
        #[arg(long)]
        force: bool,
    },
}

/// Runs `capstan volume`.
///
/// # Errors
/// The daemon's error line.
pub fn run_volume(args: VolumeArgs) -> anyhow::Result<ExitCode> {
    let client = args.connection.client()?;
    let format = args.connection.output;
    match args.command {
        VolumeCommand::Create {
            name,
            node,
            path,
            size,
            storage_class,
            namespace,
        } => {
            let request = VolumeRequest {
                name,
                node,
                path,
                size,
                storage_class,
                namespace,
            };
            let view = client.volume_create(&request)?;
            print_volumes(format, &[view])?;
        }
        VolumeCommand::List => {
            let views = client.volume_list()?;
            print_volumes(format, &views)?;
        }
        VolumeCommand::Remove { name, force } => {
            client.volume_remove(&name, &VolumeRemoveQuery { force })?;
            eprintln!("volume {name} removed; its data stays on the node");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_volumes(format: Format, views: &[VolumeView]) -> anyhow::Result<()> {
    print_value(format, &views, |views| {
        let rows: Vec<Vec<String>> = views
            .iter()
            .map(|v| {
                vec![
                    v.volume.name.clone(),
                    v.volume.node.clone(),
                    v.volume.host_path.display().to_string(),
                    v.volume.size.clone(),
                    v.claim.clone(),
                    if v.used_by.is_empty() {
                        "-".into()
                    } else {
                        v.used_by.join(",")
                    },
                ]
            })
            .collect();
        table(
            &["NAME", "NODE", "PATH", "SIZE", "CLAIM", "IN USE BY"],
            &rows,
        )
    })
}

/// Runs `capstan app`.
///
/// # Errors
/// The daemon's error line; exit 1 when an operation ends failed.
pub fn run(args: AppArgs) -> anyhow::Result<ExitCode> {
    let client = args.connection.client()?;
    let format = args.connection.output;
    match args.command {
        AppCommand::Upload { bundle, registry } => {
            let app = match fetch_bundle(&bundle, &registry)? {
                (bytes, Some(source)) => client.upload_from(bytes, &source)?,
                (bytes, None) => client.upload(bytes)?,
            };
            print_apps(format, &[app])?;
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::Apply {
            name,
            rekind,
            adopt,
            recreate,
            no_wait,
        } => {
            let request = ApplyRequest {
                rekind,
                adopt,
                recreate,
            };
            let started = client.apply(&name, &request)?;
            follow(&client, format, &name, &started, no_wait)
        }
        AppCommand::Remove {
            name,
            force,
            no_wait,
        } => {
            let started = client.remove(&name, &RemoveRequest { force })?;
            follow(&client, format, &name, &started, no_wait)
        }
        AppCommand::Delete { name } => {
            client.delete(&name)?;
            eprintln!("app {name} deleted");
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::Update {
            bundle,
            registry,
            reuse_user_overrides,
            drop_user_overrides,
            no_wait,
        } => {
            let (bytes, source) = fetch_bundle(&bundle, &registry)?;
            let query = UpdateQuery {
                reuse_user_overrides: match (reuse_user_overrides, drop_user_overrides) {
                    (true, _) => Some(true),
                    (_, true) => Some(false),
                    _ => None,
                },
            };
            let started = match source {
                Some(source) => client.update_from(bytes, &query, &source)?,
                None => client.update(bytes, &query)?,
            };
            let name = started.app.name.to_string();
            follow(&client, format, &name, &started, no_wait)
        }
        AppCommand::Abort { name } => {
            client.abort(&name)?;
            eprintln!("abort requested; {name} stops at its next step");
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::Recover { name, no_wait } => {
            let started = client.recover(&name)?;
            follow(&client, format, &name, &started, no_wait)
        }
        AppCommand::List => {
            let apps = client.list_apps()?;
            print_apps(format, &apps)?;
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::Show { name } => {
            let details = client.show_app(&name)?;
            print_value(format, &details, show_table)?;
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::History { name } => {
            let history = client.history(&name)?;
            print_value(format, &history, |h| history_table(h))?;
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::Diff { name } => {
            let diffs = client.diff(&name)?;
            print_value(format, &diffs, |d| diff_text(d))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Runs `capstan override`.
///
/// # Errors
/// The daemon's error line, unreadable values files.
pub fn run_override(args: OverrideArgs) -> anyhow::Result<ExitCode> {
    let client = args.connection.client()?;
    let format = args.connection.output;
    match args.command {
        OverrideCommand::List { app } => {
            let list = client.override_list(&app)?;
            print_value(format, &list, |l| override_table(l))?;
        }
        OverrideCommand::Show { app, chart } => {
            let shown = client.override_show(&app, &chart)?;
            print_value(format, &shown, layers_text)?;
        }
        OverrideCommand::Set {
            app,
            chart,
            values,
            set,
            reuse_values,
        } => {
            let values = values
                .iter()
                .map(|p| {
                    std::fs::read_to_string(p)
                        .with_context(|| format!("reading values file {}", p.display()))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let request = OverrideSet {
                values,
                set,
                reuse_values,
            };
            let shown = client.override_set(&app, &chart, &request)?;
            eprintln!("user overrides of {app}/{chart} set; they take effect at the next apply");
            print_value(format, &shown, layers_text)?;
        }
        OverrideCommand::Delete { app, chart } => {
            if client.override_delete(&app, &chart)?.deleted {
                eprintln!("user overrides of {app}/{chart} deleted");
            } else {
                eprintln!("{app}/{chart} had no user overrides");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A bundle's bytes from a file, or from a registry with the reference
/// pinned to the manifest digest the tag resolved to.
fn fetch_bundle(
    bundle: &std::path::Path,
    registry: &super::bundle::RegistryArgs,
) -> anyhow::Result<(Vec<u8>, Option<String>)> {
    match bundle.to_str().filter(|text| crate::oci::is_oci(text)) {
        Some(reference) => {
            let pulled = super::bundle::pull(reference, registry)?;
            Ok((pulled.bytes, Some(pulled.pinned.to_string())))
        }
        None => Ok((read_bundle(bundle)?, None)),
    }
}

fn read_bundle(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    anyhow::ensure!(
        meta.len() <= api::MAX_BUNDLE_BYTES as u64,
        "{} is larger than the {} MiB a bundle may be",
        path.display(),
        api::MAX_BUNDLE_BYTES / (1024 * 1024)
    );
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// Follows a started operation until it ends, printing each new progress
/// line; exit 1 unless it succeeded.
fn follow(
    client: &Client,
    format: Format,
    name: &str,
    started: &Started,
    no_wait: bool,
) -> anyhow::Result<ExitCode> {
    eprintln!(
        "{name}: {} started (operation {})",
        started.app.state, started.operation
    );
    if no_wait {
        return Ok(ExitCode::SUCCESS);
    }
    let mut last_progress = None;
    let entry = loop {
        let entry = client.operation(name, started.operation)?;
        if entry.outcome != Outcome::Running {
            break entry;
        }
        let app = client.show_app(name)?.app;
        if app.progress.is_some() && app.progress != last_progress {
            eprintln!("  {}: {}", app.state, app.progress.as_deref().unwrap_or(""));
            last_progress = app.progress;
        }
        std::thread::sleep(POLL_EVERY);
    };
    let app = client.show_app(name)?.app;
    print_apps(format, std::slice::from_ref(&app))?;
    if entry.outcome == Outcome::Succeeded {
        return Ok(ExitCode::SUCCESS);
    }
    anyhow::bail!(
        "{} of {name} {}: {}",
        entry.operation,
        entry.outcome,
        entry.message.as_deref().unwrap_or("no reason given")
    )
}

fn print_value<T: Serialize>(
    format: Format,
    value: &T,
    table: impl Fn(&T) -> String,
) -> anyhow::Result<()> {
    let text = match format {
        Format::Json => serde_json::to_string_pretty(value)? + "\n",
        Format::Yaml => serde_yaml_ng::to_string(value)?,
        Format::Table => table(value),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn print_apps(format: Format, apps: &[AppRecord]) -> anyhow::Result<()> {
    print_value(format, &apps, |apps| {
        let rows: Vec<Vec<String>> = apps
            .iter()
            .map(|a| {
                vec![
                    a.name.to_string(),
                    a.active_version.clone(),
                    a.state.to_string(),
                    a.target_version.clone().unwrap_or_default(),
                    a.progress
                        .clone()
                        .or_else(|| a.message.clone())
                        .unwrap_or_default(),
                ]
            })
            .collect();
        table(&["NAME", "VERSION", "STATE", "TARGET", "MESSAGE"], &rows)
    })
}

fn show_table(details: &AppDetails) -> String {
    let app = &details.app;
    let or_dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let mut out = String::new();
    for (key, value) in [
        ("name", app.name.to_string()),
        ("state", app.state.to_string()),
        ("active_version", app.active_version.clone()),
        ("target_version", or_dash(&app.target_version)),
        ("progress", or_dash(&app.progress)),
        ("message", or_dash(&app.message)),
    ] {
        out.push_str(&format!("{:<16}{value}\n", format!("{key}:")));
    }
    if !details.versions.is_empty() {
        out.push_str("\nversions:\n");
        let rows: Vec<Vec<String>> = details
            .versions
            .iter()
            .map(|v| {
                vec![
                    v.version.clone(),
                    v.source.clone().unwrap_or_else(|| "file".into()),
                    format!("sha256:{}", v.bundle_digest),
                    v.signer.clone(),
                ]
            })
            .collect();
        out.push_str(&table(
            &["VERSION", "SOURCE", "BUNDLE DIGEST", "SIGNER"],
            &rows,
        ));
    }
    out.push_str("\ncharts:\n");
    let rows: Vec<Vec<String>> = details
        .charts
        .iter()
        .map(|c| {
            let release = details.releases.iter().find(|r| r.chart == c.name);
            vec![
                c.group.clone(),
                c.name.clone(),
                c.namespace.clone(),
                c.release.clone(),
                c.enabled.to_string(),
                release.map_or_else(|| "-".into(), |r| r.revision.to_string()),
                release.map_or_else(|| "-".into(), |r| r.objects.len().to_string()),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            "GROUP",
            "CHART",
            "NAMESPACE",
            "RELEASE",
            "ENABLED",
            "REVISION",
            "OBJECTS",
        ],
        &rows,
    ));
    if !details.decisions.is_empty() {
        out.push_str("\nworkload decisions:\n");
        let rows: Vec<Vec<String>> = details
            .decisions
            .iter()
            .map(|d| {
                vec![
                    d.component.clone(),
                    d.kind.to_string(),
                    d.decided_by.clone(),
                ]
            })
            .collect();
        out.push_str(&table(&["COMPONENT", "KIND", "DECIDED BY"], &rows));
    }
    out
}

fn history_table(history: &[HistoryEntry]) -> String {
    let rows: Vec<Vec<String>> = history
        .iter()
        .map(|h| {
            vec![
                h.id.0.to_string(),
                h.operation.to_string(),
                h.from_state
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "-".into()),
                h.to_state
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "-".into()),
                h.outcome.to_string(),
                h.message.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(
        &["ID", "OPERATION", "FROM", "TO", "OUTCOME", "MESSAGE"],
        &rows,
    )
}

fn diff_text(diffs: &[ChartDiff]) -> String {
    let mut out = String::new();
    for d in diffs {
        out.push_str(&format!(
            "chart {}: {} added, {} changed, {} removed\n",
            d.chart, d.added, d.changed, d.removed
        ));
        out.push_str(&d.text);
        if !d.text.is_empty() && !d.text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

fn override_table(list: &[OverrideSummary]) -> String {
    let yes = |b: bool| if b { "yes" } else { "-" }.to_owned();
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|o| vec![o.chart.clone(), yes(o.r#static), yes(o.system), yes(o.user)])
        .collect();
    table(&["CHART", "STATIC", "SYSTEM", "USER"], &rows)
}

fn layers_text(shown: &ChartOverrides) -> String {
    let mut out = format!(
        "# {}/{} (version {})\n",
        shown.app, shown.chart, shown.version
    );
    for layer in &shown.layers {
        out.push_str(&format!("\n## {}\n", layer.layer));
        out.push_str(&yaml_or_none(&layer.values));
    }
    out.push_str("\n## merged\n");
    out.push_str(&yaml_or_none(&shown.merged));
    out
}

fn yaml_or_none(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "(not set)\n".into(),
        serde_json::Value::Object(m) if m.is_empty() => "{}\n".into(),
        other => serde_yaml_ng::to_string(other).unwrap_or_else(|_| other.to_string() + "\n"),
    }
}

/// Left-aligned columns separated by two spaces.
fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line(headers.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns_and_trims_trailing_space() {
        let t = table(
            &["A", "BB"],
            &[
                vec!["long".into(), "x".into()],
                vec!["s".into(), String::new()],
            ],
        );
        assert_eq!(t, "A     BB\nlong  x\ns\n");
    }
}
