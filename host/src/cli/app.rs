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
    AppDetails, AppRecord, ApplyRequest, ChartDiff, ChartOverrides, ErrorCode, HistoryEntry,
    OverrideSet, OverrideSummary, RemoveRequest, RollbackRequest, Started, UpdateQuery,
    VersionSummary, VolumeRemoveQuery, VolumeRequest, VolumeView,
};
use crate::api::{self, Address, Client, ClientError};
use crate::store::{OperationId, Outcome};

use super::{quiet, status};

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
    /// server (as is --tls-cert), that server is spoken to over TLS.
    #[arg(long, global = true, value_name = "FILE", env = "CAPSTAN_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// The client certificate (PEM, leaf first) presented to a TLS daemon
    /// that requires one (`serve --tls-client-ca`); needs --tls-key.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "CAPSTAN_TLS_CERT",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "CAPSTAN_TLS_KEY",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = Format::Table)]
    pub output: Format,
}

/// Output formats. A single result (one app, one volume, one chart's
/// layers) is one object, a listing is a list; keys keep their order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns for a person.
    Table,
    /// JSON, as the API returns it.
    Json,
    /// YAML.
    Yaml,
    /// `app/NAME` (or `volume/NAME`), one a line, as `kubectl -o name`.
    Name,
}

impl Connection {
    fn client(&self) -> anyhow::Result<Client> {
        let address = match &self.server {
            Some(address) => address.clone(),
            None => {
                Address::default_for(&self.state.clone().unwrap_or_else(api::default_state_dir))
            }
        };
        let identity = self.tls_cert.as_deref().zip(self.tls_key.as_deref());
        let address = match address {
            Address::Tcp(addr) if self.tls_ca.is_some() || identity.is_some() => {
                Address::Https(addr)
            }
            address => address,
        };
        // A busy daemon (429, or 503 with Retry-After) is waited out,
        // saying so on stderr; module api::retry bounds the waits.
        let client = Client::new(address.clone(), self.token.clone())?.with_retries(
            api::retry::Retries::default(),
            |wait| {
                eprintln!("{}", waiting_line(wait));
            },
        );
        Ok(match address {
            Address::Https(_) => {
                let what = if identity.is_some() {
                    "loading the daemon's CA (--tls-ca) and the client certificate (--tls-cert, --tls-key)"
                } else {
                    "loading the daemon's CA (--tls-ca)"
                };
                let tls = api::tls::client_tls(self.tls_ca.as_deref(), identity).context(what)?;
                client.with_client_tls(tls)
            }
            _ => client,
        })
    }
}

/// The stderr line before a wait for a busy daemon.
fn waiting_line(wait: &api::retry::Wait) -> String {
    let secs = wait.wait.as_secs_f64();
    format!(
        "waiting {secs:.1}s: the daemon answered {} ({}); then attempt {}",
        wait.status, wait.reason, wait.attempt
    )
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
    #[command(after_help = "Example: capstan app upload shop-1.0.0.tgz --name shop")]
    Upload {
        /// The bundle: a .tgz file, or `oci://HOST[:PORT]/REPO:TAG` (or
        /// `@sha256:DIGEST`) in a registry; the app records the digest.
        bundle: PathBuf,
        #[command(flatten)]
        registry: super::bundle::RegistryArgs,
        /// The app the bundle must be for (refused if it names another).
        #[arg(short = 'n', long)]
        name: Option<String>,
    },
    /// Apply (or re-apply) an app.
    #[command(after_help = "Example: capstan app apply shop --no-wait && capstan app wait shop")]
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
        /// Take back the fields other field managers changed (a `kubectl
        /// edit`, `kubectl scale`) for this apply, even where the app's
        /// `conflicts` policy is `fail`.
        #[arg(long)]
        force_conflicts: bool,
        /// Return once started instead of showing progress.
        #[arg(long)]
        no_wait: bool,
    },
    /// Remove an app's charts from the target; it stays uploaded.
    #[command(after_help = "Example: capstan app remove shop")]
    Remove {
        /// The app.
        name: String,
        /// Go on past failing charts and hooks; also from `uploaded`.
        #[arg(long)]
        force: bool,
        /// Keep the secrets the host generated for the app's plugins, so
        /// that applying it again hands out the same passwords and keys
        /// (`app delete` removes them).
        #[arg(long)]
        keep_secrets: bool,
        /// Return once started.
        #[arg(long)]
        no_wait: bool,
    },
    /// Delete an uploaded app and its files.
    #[command(after_help = "Example: capstan app delete shop --force")]
    Delete {
        /// The app.
        name: String,
        /// Remove it from the target first if it is applied (as `app
        /// remove --force`), then delete it.
        #[arg(long)]
        force: bool,
    },
    /// Move an applied app to a newer bundle version (rolls back on failure,
    /// unless on_failure says keep).
    #[command(after_help = "Example: capstan app update shop-1.1.0.tgz --reuse-user-overrides")]
    Update {
        /// The new bundle: a .tgz file or an `oci://` reference, as for upload.
        bundle: PathBuf,
        #[command(flatten)]
        registry: super::bundle::RegistryArgs,
        /// Also an older version (a downgrade) or one whose
        /// upgrades.from_versions does not list the active version (the
        /// active version itself is refused: `app apply` applies it again).
        #[arg(long)]
        force: bool,
        /// Keep user overrides (default: the bundle's maintain_user_overrides).
        #[arg(long, conflicts_with = "drop_user_overrides")]
        reuse_user_overrides: bool,
        /// Drop user overrides.
        #[arg(long)]
        drop_user_overrides: bool,
        /// What a failure leaves: `rollback` applies the version left
        /// again, `keep` leaves the new version applied as far as it got
        /// (default: the new bundle's on_failure, else rollback).
        #[arg(long, value_name = "keep|rollback")]
        on_failure: Option<crate::model::OnFailure>,
        /// Return once started.
        #[arg(long)]
        no_wait: bool,
    },
    /// Go back to a kept earlier version with the user overrides it had
    /// (default: the version most recently left; `app history` lists them).
    #[command(after_help = "Example: capstan app rollback shop 1.0.0")]
    Rollback {
        /// The app.
        name: String,
        /// The kept version to go back to.
        version: Option<String>,
        /// Return once started.
        #[arg(long)]
        no_wait: bool,
    },
    /// Follow the running operation of an app until it ends (re-attach
    /// after Ctrl-C or --no-wait); exits as the operation ends.
    #[command(after_help = "Example: capstan app wait shop")]
    Wait {
        /// The app.
        name: String,
    },
    /// An app's state; with --watch, follow its running operation.
    #[command(after_help = "Example: capstan app status shop --watch")]
    Status {
        /// The app.
        name: String,
        /// Follow the running operation until it ends.
        #[arg(short = 'w', long)]
        watch: bool,
    },
    /// Stop the daemon's automatic operations for an app (automatic
    /// re-apply, drift correction, retries, resuming a leader's
    /// operation) until `app resume`; what you ask for still runs.
    #[command(after_help = "Example: capstan app pause shop --reason \"disk replacement\"")]
    Pause {
        /// The app.
        name: String,
        /// Why, kept in the app's history (at most 256 characters).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Let the daemon start automatic operations for an app again.
    #[command(after_help = "Example: capstan app resume shop")]
    Resume {
        /// The app.
        name: String,
        /// Why, kept in the app's history (at most 256 characters).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Stop a running apply, update, remove or recover at its next step.
    #[command(after_help = "Example: capstan app abort shop")]
    Abort {
        /// The app.
        name: String,
    },
    /// Bring a failed app back to its active version, applied.
    #[command(after_help = "Example: capstan app recover shop")]
    Recover {
        /// The app.
        name: String,
        /// Return once started.
        #[arg(long)]
        no_wait: bool,
    },
    /// List apps.
    #[command(after_help = "Example: capstan app list -o name")]
    List,
    /// Show one app.
    #[command(after_help = "Example: capstan app show shop -o json")]
    Show {
        /// The app.
        name: String,
    },
    /// An app's operations, oldest first, and its kept versions (which
    /// `app rollback` can go back to).
    #[command(after_help = "Example: capstan app history shop")]
    History {
        /// The app.
        name: String,
    },
    /// What an apply would change against what is applied.
    #[command(
        after_help = "Exit status with --detailed-exitcode: 0 no changes, 2 changes, 1 error.\n\nExample: capstan app diff shop --bundle shop-1.1.0.tgz --detailed-exitcode"
    )]
    Diff {
        /// The app.
        name: String,
        /// What an update to this bundle would change instead (the bundle
        /// is verified, not stored).
        #[arg(long, value_name = "APP.tgz")]
        bundle: Option<PathBuf>,
        /// Exit 0 when nothing would change, 2 when something would, 1 on
        /// an error.
        #[arg(long)]
        detailed_exitcode: bool,
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
    #[command(after_help = "Example: capstan override list shop")]
    List {
        /// The app.
        app: String,
    },
    /// Each layer of a chart and the merged values.
    #[command(after_help = "Example: capstan override show shop web --layer user")]
    Show {
        /// The app.
        app: String,
        /// The chart.
        chart: String,
        /// Only this layer's values.
        #[arg(long, value_enum, conflicts_with = "merged")]
        layer: Option<LayerArg>,
        /// Only the merged values (what the chart is rendered with).
        #[arg(long)]
        merged: bool,
    },
    /// Set a chart's user overrides (effective at the next apply).
    #[command(
        after_help = "Example: capstan override set shop web --set replicaCount=3 -f prod.yaml --reuse-values"
    )]
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
        /// A value kept as a string; may be repeated.
        #[arg(long = "set-string", value_name = "K=V")]
        set_string: Vec<String>,
        /// A value set to a file's content; may be repeated.
        #[arg(long = "set-file", value_name = "K=PATH")]
        set_file: Vec<String>,
        /// A value given as JSON; may be repeated.
        #[arg(long = "set-json", value_name = "K=JSON")]
        set_json: Vec<String>,
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

/// A layer `override show --layer` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LayerArg {
    /// The chart's values.yaml.
    Defaults,
    /// Shipped in the bundle.
    Static,
    /// Computed by the app's plugins.
    System,
    /// Set by the operator.
    User,
}

impl LayerArg {
    fn wire_name(self) -> &'static str {
        match self {
            LayerArg::Defaults => "chart-defaults",
            LayerArg::Static => "static",
            LayerArg::System => "system",
            LayerArg::User => "user",
        }
    }
}

/// `capstan facts`.
#[derive(Debug, Args)]
pub struct FactsArgs {
    #[command(flatten)]
    connection: Connection,
    #[command(subcommand)]
    command: FactsCommand,
}

#[derive(Debug, Subcommand)]
enum FactsCommand {
    /// Print the facts in effect (as plugins get them) and where each
    /// field came from: the cluster, `--facts FILE`, a ConfigMap, or the
    /// default.
    #[command(after_help = "Example: capstan facts show -o yaml")]
    Show,
}

/// `capstan platform`.
#[derive(Debug, Args)]
pub struct PlatformArgs {
    #[command(flatten)]
    connection: Connection,
    #[command(subcommand)]
    command: PlatformCommand,
}

#[derive(Debug, Subcommand)]
enum PlatformCommand {
    /// Post a platform event: every applied app that declares a
    /// `platform-event` trigger for NAME in its `capstan.yaml` has its
    /// `evaluate-reapply` hook asked (handed `name=NAME` and each
    /// KEY=VALUE), and is marked reapply-needed if a plugin asks.
    #[command(
        after_help = "Example: capstan platform event storage-backend-changed backend=ceph-store"
    )]
    Event {
        /// The event's name.
        name: String,
        /// Details handed to the hooks, each KEY=VALUE.
        #[arg(value_name = "KEY=VALUE")]
        details: Vec<String>,
    },
}

/// Runs `capstan platform`.
///
/// # Errors
/// A detail without `=`, the daemon's, or an unreachable daemon.
pub fn run_platform(args: PlatformArgs) -> anyhow::Result<ExitCode> {
    let client = args.connection.client()?;
    let format = args.connection.output;
    match args.command {
        PlatformCommand::Event { name, details } => {
            let mut request = crate::api::wire::PlatformEventRequest {
                name,
                details: std::collections::BTreeMap::new(),
            };
            for detail in details {
                let Some((key, value)) = detail.split_once('=') else {
                    anyhow::bail!("detail {detail:?} is not KEY=VALUE");
                };
                request.details.insert(key.to_string(), value.to_string());
            }
            let outcome = client.platform_event(&request)?;
            print_value(format, &outcome, |o| {
                let list = |apps: &[String]| match apps {
                    [] => "none".to_string(),
                    apps => apps.join(", "),
                };
                let mut out = format!(
                    "event:            {}
evaluated:        {}
reapply-needed:   {}
",
                    o.event,
                    list(&o.evaluated),
                    list(&o.marked)
                );
                for failed in &o.failed {
                    out.push_str(&format!(
                        "failed:           {failed}
"
                    ));
                }
                out
            })?;
            if !outcome.failed.is_empty() {
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `capstan facts`.
///
/// # Errors
/// The daemon's, or an unreachable daemon.
pub fn run_facts(args: FactsArgs) -> anyhow::Result<ExitCode> {
    let client = args.connection.client()?;
    let format = args.connection.output;
    match args.command {
        FactsCommand::Show => {
            let view = client.facts()?;
            print_value(format, &view, facts_table)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The facts for a person: each field with its source, then the nodes.
fn facts_table(view: &crate::api::wire::FactsView) -> String {
    let facts = &view.facts;
    let source = |field: &str| view.source_of(field);
    let mut out = String::new();
    for row in view.summary() {
        out.push_str(&format!(
            "{:<18}{}  ({})\n",
            format!("{}:", row.label),
            row.value,
            row.source
        ));
    }
    out.push_str(&format!("{:<18}{}\n", "generation:", view.generation));
    if !view.changes.is_empty() {
        out.push_str(&format!(
            "{:<18}{}\n",
            "last change:",
            view.changes.join("; ")
        ));
    }
    if let Some(error) = &view.error {
        out.push_str(&format!("{:<18}{error}\n", "error:"));
    }
    out.push_str(&format!("nodes ({}):\n", source("nodes")));
    let rows: Vec<Vec<String>> = facts
        .nodes
        .iter()
        .map(|n| {
            vec![
                n.name.clone(),
                n.roles
                    .iter()
                    .map(|r| format!("{r:?}").to_lowercase())
                    .collect::<Vec<_>>()
                    .join(","),
                if n.schedulable {
                    "yes".into()
                } else {
                    "no".into()
                },
                n.labels.len().to_string(),
            ]
        })
        .collect();
    out.push_str(&table(&["NAME", "ROLES", "SCHEDULABLE", "LABELS"], &rows));
    out
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
            print_volume(format, &view)?;
        }
        VolumeCommand::List => {
            let views = client.volume_list()?;
            print_volumes(format, &views)?;
        }
        VolumeCommand::Remove { name, force } => {
            client.volume_remove(&name, &VolumeRemoveQuery { force })?;
            status(&format!(
                "volume {name} removed; its data stays on the node"
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_volume(format: Format, view: &VolumeView) -> anyhow::Result<()> {
    if matches!(format, Format::Json | Format::Yaml | Format::Name) {
        return print_named(
            format,
            view,
            |_| String::new(),
            |v| vec![format!("volume/{}", v.volume.name)],
        );
    }
    print_volumes(format, std::slice::from_ref(view))
}

fn print_volumes(format: Format, views: &[VolumeView]) -> anyhow::Result<()> {
    let names = |views: &&[VolumeView]| {
        views
            .iter()
            .map(|v| format!("volume/{}", v.volume.name))
            .collect()
    };
    print_named(
        format,
        &views,
        |views| {
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
        },
        names,
    )
}

/// Runs `capstan app`.
///
/// # Errors
/// The daemon's error line; exit 1 when an operation ends failed.
pub fn run(args: AppArgs) -> anyhow::Result<ExitCode> {
    let client = args.connection.client()?;
    let format = args.connection.output;
    match args.command {
        AppCommand::Upload {
            bundle,
            registry,
            name,
        } => {
            let (bytes, source) = fetch_bundle(&bundle, &registry)?;
            if let Some(name) = &name {
                check_bundle_name(&bundle, &bytes, name)?;
            }
            let uploaded = match &source {
                Some(source) => client.upload_from(bytes, source),
                None => client.upload(bytes),
            };
            let app = uploaded.map_err(|e| upload_hint(e, &bundle))?;
            print_app(format, &app)?;
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::Apply {
            name,
            rekind,
            adopt,
            recreate,
            force_conflicts,
            no_wait,
        } => {
            let request = ApplyRequest {
                rekind,
                adopt,
                recreate,
                force_conflicts,
            };
            let started = client.apply(&name, &request)?;
            follow(&client, format, &name, &started, no_wait)
        }
        AppCommand::Remove {
            name,
            force,
            keep_secrets,
            no_wait,
        } => {
            let started = client.remove(
                &name,
                &RemoveRequest {
                    force,
                    keep_secrets,
                },
            )?;
            follow(&client, format, &name, &started, no_wait)
        }
        AppCommand::Delete { name, force } => {
            if force {
                let app = client.show_app(&name)?.app;
                if !matches!(
                    app.state,
                    crate::store::AppState::Uploaded | crate::store::AppState::UploadFailed
                ) {
                    status(&format!(
                        "{name} is {}; removing it from the target first (--force)",
                        app.state
                    ));
                    let started = client.remove(
                        &name,
                        &RemoveRequest {
                            force: true,
                            keep_secrets: false,
                        },
                    )?;
                    let entry = wait_for(&client, &name, started.operation, format)?;
                    if entry.outcome != Outcome::Succeeded {
                        anyhow::bail!(
                            "removing {name} before deleting it {}: {}",
                            entry.outcome,
                            entry.message.as_deref().unwrap_or("no reason given")
                        );
                    }
                }
            }
            client.delete(&name)?;
            status(&format!("app {name} deleted"));
            if format == Format::Name {
                print_lines(&[format!("app/{name}")])?;
            }
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::Update {
            bundle,
            registry,
            force,
            reuse_user_overrides,
            drop_user_overrides,
            on_failure,
            no_wait,
        } => {
            let (bytes, source) = fetch_bundle(&bundle, &registry)?;
            let query = UpdateQuery {
                reuse_user_overrides: match (reuse_user_overrides, drop_user_overrides) {
                    (true, _) => Some(true),
                    (_, true) => Some(false),
                    _ => None,
                },
                force,
                on_failure,
            };
            let started = match source {
                Some(source) => client.update_from(bytes, &query, &source)?,
                None => client.update(bytes, &query)?,
            };
            let name = started.app.name.to_string();
            follow(&client, format, &name, &started, no_wait)
        }
        AppCommand::Rollback {
            name,
            version,
            no_wait,
        } => {
            let started = client.rollback(&name, &RollbackRequest { version })?;
            follow(&client, format, &name, &started, no_wait)
        }
        AppCommand::Wait { name } => wait(&client, format, &name),
        AppCommand::Status { name, watch } => {
            if watch {
                return wait(&client, format, &name);
            }
            let app = client.show_app(&name)?.app;
            print_app(format, &app)?;
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::Pause { name, reason } => {
            let app = client.pause(&name, &crate::api::wire::PauseRequest { reason })?;
            status(&format!(
                "automatic operations of {name} paused; `capstan app resume {name}` lifts it"
            ));
            print_app(format, &app)?;
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::Resume { name, reason } => {
            let app = client.resume(&name, &crate::api::wire::PauseRequest { reason })?;
            status(&format!("automatic operations of {name} resumed"));
            print_app(format, &app)?;
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::Abort { name } => {
            client.abort(&name)?;
            status(&format!("abort requested; {name} stops at its next step"));
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
            print_named(format, &details, show_table, |d| {
                vec![format!("app/{}", d.app.name)]
            })?;
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::History { name } => {
            let operations = client.history(&name)?;
            let versions = client.show_app(&name)?.versions;
            let view = HistoryView {
                app: name,
                operations,
                versions,
            };
            print_value(format, &view, history_text)?;
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::Diff {
            name,
            bundle,
            detailed_exitcode,
        } => {
            let diffs = match &bundle {
                Some(path) => client.diff_bundle(&name, read_bundle(path)?)?,
                None => client.diff(&name)?,
            };
            let colour = std::io::IsTerminal::is_terminal(&std::io::stdout());
            print_value(format, &diffs, |d| diff_text(d, colour))?;
            let changed = diffs.iter().any(|d| d.added + d.changed + d.removed > 0);
            Ok(if detailed_exitcode && changed {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

/// `app history`: one object, the app's operations and its kept versions.
#[derive(Debug, Serialize)]
struct HistoryView {
    app: String,
    operations: Vec<HistoryEntry>,
    versions: Vec<VersionSummary>,
}

/// Refuses a bundle that names another app than `--name` says.
fn check_bundle_name(path: &std::path::Path, bytes: &[u8], name: &str) -> anyhow::Result<()> {
    let inspection = crate::bundle::inspect(bytes, &crate::bundle::Limits::default())
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), super::one_line(&e)))?;
    let found = inspection.metadata.name.as_str();
    anyhow::ensure!(
        found == name,
        "{} is a bundle of app {found}, not {name}",
        path.display()
    );
    Ok(())
}

/// The upload's error, with what to do next when the app exists.
fn upload_hint(error: ClientError, bundle: &std::path::Path) -> anyhow::Error {
    if error.code() == Some(ErrorCode::AlreadyExists) {
        return anyhow::anyhow!(
            "{error}; to move it to this bundle run `capstan app update {}`; after a failed upload, `capstan app delete NAME` first",
            bundle.display()
        );
    }
    error.into()
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
        OverrideCommand::Show {
            app,
            chart,
            layer,
            merged,
        } => {
            let shown = client.override_show(&app, &chart)?;
            let only = if merged {
                Some(shown.merged.clone())
            } else if let Some(layer) = layer {
                let name = layer.wire_name();
                let found = shown.layers.iter().find(|l| l.layer == name);
                Some(found.map_or(serde_json::Value::Null, |l| l.values.clone()))
            } else {
                None
            };
            match only {
                Some(values) => print_value(format, &values, yaml_or_none)?,
                None => {
                    warn_all(&shown.warnings);
                    print_value(format, &shown, layers_text)?;
                }
            }
        }
        OverrideCommand::Set {
            app,
            chart,
            values,
            set,
            set_string,
            set_file,
            set_json,
            reuse_values,
        } => {
            let names: Vec<String> = values.iter().map(|p| p.display().to_string()).collect();
            let values = values
                .iter()
                .map(|p| {
                    std::fs::read_to_string(p)
                        .with_context(|| format!("reading values file {}", p.display()))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let mut file_contents = std::collections::BTreeMap::new();
            for expr in &set_file {
                let Some((_, path)) = expr.split_once('=') else {
                    anyhow::bail!("--set-file {expr:?} is not K=PATH");
                };
                let content = std::fs::read_to_string(path)
                    .with_context(|| format!("reading --set-file {path}"))?;
                file_contents.insert(path.to_owned(), content);
            }
            let request = OverrideSet {
                values,
                value_names: names,
                set,
                set_string,
                set_json,
                set_file,
                file_contents,
                reuse_values,
            };
            anyhow::ensure!(
                !request.is_empty(),
                "override set {app} {chart}: nothing to set; give -f FILE or --set K=V (`capstan override delete {app} {chart}` clears them)"
            );
            let shown = client.override_set(&app, &chart, &request)?;
            status(&format!(
                "user overrides of {app}/{chart} set; they take effect at the next apply"
            ));
            warn_all(&shown.warnings);
            print_value(format, &shown, layers_text)?;
        }
        OverrideCommand::Delete { app, chart } => {
            if client.override_delete(&app, &chart)?.deleted {
                status(&format!("user overrides of {app}/{chart} deleted"));
            } else {
                status(&format!("{app}/{chart} had no user overrides"));
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

fn warn_all(warnings: &[String]) {
    if !quiet() {
        for warning in warnings {
            eprintln!("warning: {warning}");
        }
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
/// line; exit 1 unless it succeeded. With `no_wait`, prints the app and
/// the operation (`{app, operation}` as JSON) and returns.
fn follow(
    client: &Client,
    format: Format,
    name: &str,
    started: &Started,
    no_wait: bool,
) -> anyhow::Result<ExitCode> {
    for warning in &started.warnings {
        eprintln!("warning: {warning}");
    }
    if no_wait {
        status(&format!(
            "{name}: {} started (operation {}); `capstan app wait {name}` follows it",
            started.app.state, started.operation
        ));
        let view = StartedView {
            app: name.to_owned(),
            operation: started.operation,
        };
        print_named(
            format,
            &view,
            |v| format!("{} {}\n", v.app, v.operation.0),
            |v| vec![format!("app/{}", v.app)],
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    status(&format!(
        "{name}: {} started (operation {})",
        started.app.state, started.operation
    ));
    finish(client, format, name, started.operation)
}

/// `--no-wait`'s answer: which operation to wait for.
#[derive(Debug, Serialize)]
struct StartedView {
    app: String,
    operation: OperationId,
}

/// `app wait`: follows the running operation, or reports the last one.
fn wait(client: &Client, format: Format, name: &str) -> anyhow::Result<ExitCode> {
    let history = client.history(name)?;
    let Some(last) = history.last() else {
        anyhow::bail!("app {name} has no operations");
    };
    let running = history.iter().rev().find(|e| e.outcome == Outcome::Running);
    match running {
        Some(entry) => {
            status(&format!(
                "{name}: following {} (operation {})",
                entry.operation, entry.id
            ));
            finish(client, format, name, entry.id)
        }
        None => {
            status(&format!(
                "{name}: nothing is running; its last operation, {} {}, {}",
                last.operation, last.id, last.outcome
            ));
            report(client, format, name, last)
        }
    }
}

/// Waits for operation `id` with progress, then reports how it ended.
fn finish(
    client: &Client,
    format: Format,
    name: &str,
    id: OperationId,
) -> anyhow::Result<ExitCode> {
    on_interrupt(format!(
        "interrupted; the operation goes on in the daemon. Follow it again with `capstan app wait {name}`"
    ));
    let entry = wait_for(client, name, id, format)?;
    report(client, format, name, &entry)
}

/// Prints the app as the operation left it; an error unless it succeeded.
fn report(
    client: &Client,
    format: Format,
    name: &str,
    entry: &HistoryEntry,
) -> anyhow::Result<ExitCode> {
    let app = client.show_app(name)?.app;
    print_app(format, &app)?;
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

/// Polls operation `id` until it ends, showing each chart as it starts
/// and finishes and each new step (see [`super::progress`]), unless
/// quiet: a block redrawn in place on a terminal with `-o table`, plain
/// lines otherwise. A last poll after the end shows what finished since
/// the one before.
fn wait_for(
    client: &Client,
    name: &str,
    id: OperationId,
    format: Format,
) -> anyhow::Result<HistoryEntry> {
    use super::progress::{Seen, Style, View};
    let began = std::time::Instant::now();
    let mut view = View::new(Style::for_output(format == Format::Table), id);
    let mut label: Option<String> = None;
    loop {
        let entry = client.operation(name, id)?;
        let running = entry.outcome == Outcome::Running;
        let details = client.show_app(name)?;
        let app = &details.app;
        // The state the operation runs in (`applying`), as first seen: a
        // poll racing the end may read the final state already.
        if running && label.is_none() {
            label = Some(app.state.to_string());
        }
        if !quiet() {
            let label = label.clone().unwrap_or_else(|| entry.operation.to_string());
            let seen = Seen {
                elapsed: began.elapsed(),
                label: &label,
                step: if running {
                    app.progress.as_deref()
                } else {
                    None
                },
                board: details.chart_progress.as_ref(),
            };
            view.update(&mut std::io::stderr().lock(), seen)?;
        }
        if !running {
            return Ok(entry);
        }
        std::thread::sleep(POLL_EVERY);
    }
}

/// On Ctrl-C, prints `message` and exits 130: leaving the client never
/// stops the daemon's operation.
fn on_interrupt(message: String) {
    let _ = std::thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async {
                if tokio::signal::ctrl_c().await.is_ok() {
                    eprintln!("\n{message}");
                    std::process::exit(130);
                }
            });
        });
}

/// Prints a result for `-o table|json|yaml`; `-o name` is refused (this
/// result has no kubectl-style name). Nothing with `-q`.
fn print_value<T: Serialize>(
    format: Format,
    value: &T,
    table: impl Fn(&T) -> String,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        format != Format::Name,
        "-o name is for commands that print apps or volumes"
    );
    print_named(format, value, table, |_| Vec::new())
}

/// Prints a result in any format; `names` gives its `-o name` lines.
fn print_named<T: Serialize>(
    format: Format,
    value: &T,
    table: impl Fn(&T) -> String,
    names: impl Fn(&T) -> Vec<String>,
) -> anyhow::Result<()> {
    if quiet() {
        return Ok(());
    }
    let text = match format {
        Format::Json => serde_json::to_string_pretty(value)? + "\n",
        Format::Yaml => serde_yaml_ng::to_string(value)?,
        Format::Table => table(value),
        Format::Name => names(value).iter().map(|n| format!("{n}\n")).collect(),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn print_lines(lines: &[String]) -> anyhow::Result<()> {
    if quiet() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    for line in lines {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

/// One app: an object in JSON and YAML, a one-row table.
fn print_app(format: Format, app: &AppRecord) -> anyhow::Result<()> {
    match format {
        Format::Table => print_apps(format, std::slice::from_ref(app)),
        _ => print_named(
            format,
            app,
            |_| String::new(),
            |a| vec![format!("app/{}", a.name)],
        ),
    }
}

fn print_apps(format: Format, apps: &[AppRecord]) -> anyhow::Result<()> {
    let names = |apps: &&[AppRecord]| apps.iter().map(|a| format!("app/{}", a.name)).collect();
    print_named(
        format,
        &apps,
        |apps| {
            let rows: Vec<Vec<String>> = apps
                .iter()
                .map(|a| {
                    let state = match &a.reapply_needed {
                        Some(_) => format!("{} (reapply-needed)", a.state),
                        None => a.state.to_string(),
                    };
                    vec![
                        a.name.to_string(),
                        a.active_version.clone(),
                        state,
                        a.target_version.clone().unwrap_or_default(),
                        a.progress
                            .clone()
                            .or_else(|| a.reapply_needed.clone())
                            .or_else(|| a.message.clone())
                            .unwrap_or_default(),
                    ]
                })
                .collect();
            table(&["NAME", "VERSION", "STATE", "TARGET", "MESSAGE"], &rows)
        },
        names,
    )
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
        ("reapply_needed", or_dash(&app.reapply_needed)),
        (
            "automatic",
            details
                .automatic_paused
                .as_ref()
                .map_or_else(|| "on".to_owned(), |why| format!("paused: {why}")),
        ),
        ("retry", or_dash(&details.automatic_retry)),
    ] {
        out.push_str(&format!("{:<16}{value}\n", format!("{key}:")));
    }
    if let Some(drifted) = &details.drifted {
        out.push_str("\ndrifted (app diff shows what a re-apply would do):\n");
        let mut rows: Vec<Vec<String>> = Vec::new();
        for object in &drifted.objects {
            if object.deleted {
                rows.push(vec![
                    object.object.clone(),
                    "(deleted)".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]);
            }
            for field in &object.fields {
                let manager = match (&field.manager, &field.subresource) {
                    (m, _) if m.is_empty() => "(none: removed)".to_owned(),
                    (m, Some(sub)) => format!("{m} ({sub})"),
                    (m, None) => m.clone(),
                };
                rows.push(vec![
                    object.object.clone(),
                    field.field.clone(),
                    manager,
                    field.operation.clone(),
                    field.time.clone().unwrap_or_else(|| "-".into()),
                ]);
            }
        }
        out.push_str(&table(
            &["OBJECT", "FIELD", "MANAGER", "OPERATION", "TIME"],
            &rows,
        ));
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

fn history_text(view: &HistoryView) -> String {
    let mut out = history_table(&view.operations);
    out.push_str("\nversions:\n");
    let rows: Vec<Vec<String>> = view
        .versions
        .iter()
        .map(|v| {
            let state = if v.active {
                "active"
            } else if v.rollback {
                "can roll back to"
            } else {
                "-"
            };
            vec![
                v.version.clone(),
                state.to_owned(),
                v.bundle_digest.chars().take(12).collect(),
            ]
        })
        .collect();
    out.push_str(&table(&["VERSION", "STATE", "DIGEST"], &rows));
    if view.versions.iter().any(|v| v.rollback) {
        out.push_str(&format!(
            "\n`capstan app rollback {} VERSION` goes back to a kept version with its user overrides.\n",
            view.app
        ));
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

/// The diffs as text; `colour` paints added lines green and removed ones
/// red (only for a terminal).
fn diff_text(diffs: &[ChartDiff], colour: bool) -> String {
    let mut out = String::new();
    for d in diffs {
        out.push_str(&format!(
            "chart {}: {} added, {} changed, {} removed\n",
            d.chart, d.added, d.changed, d.removed
        ));
        if colour {
            for line in d.text.lines() {
                let paint = match line.as_bytes().first() {
                    Some(b'+') if !line.starts_with("+++") => "\x1b[32m",
                    Some(b'-') if !line.starts_with("---") => "\x1b[31m",
                    _ => "",
                };
                if paint.is_empty() {
                    out.push_str(line);
                } else {
                    out.push_str(&format!("{paint}{line}\x1b[0m"));
                }
                out.push('\n');
            }
            continue;
        }
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
