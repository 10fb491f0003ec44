//! The command line: parses arguments, runs one command, prints results on
//! stdout and status and errors on stderr, and owns the exit status.
//!
//! Exit status: 0 when the command did what was asked, 1 when the operation
//! failed (a plugin fault, a rejected bundle, a veto, a request the daemon
//! refused), 2 for bad usage or when no daemon answers at the address.
//! Errors print once, on one line: `error: <message>: <cause>: ...`, each
//! cause once; `-v` prints the chain one cause a line. `-q` prints nothing
//! but errors (no results, no status lines).

mod app;
mod bundle;
mod embedded;
mod examples;
mod lint;
mod plugin;
mod plugin_build;
mod progress;
mod reference;
mod scaffold;
mod serve;
mod serve_cluster;
mod store;
mod template;

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

pub use reference::reference_markdown;

/// The exit status of a command that failed.
pub const EXIT_FAILED: u8 = 1;
/// The exit status of a command line that could not be understood, or of
/// a client command that found no daemon to talk to.
pub const EXIT_USAGE: u8 = 2;

/// capstan: signed app bundles with sandboxed WebAssembly override plugins,
/// rendered like Helm and applied to Kubernetes.
#[derive(Debug, Parser)]
#[command(name = "capstan", version, about, long_about = None)]
#[command(
    after_help = "Exit status: 0 done, 1 the operation failed or was vetoed, 2 bad usage or no daemon.\n\nExample: capstan app list -o json"
)]
struct Cli {
    /// Show more detail: info logs once, debug logs twice.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Show only errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run and inspect override plugins.
    #[command(subcommand)]
    Plugin(plugin::PluginCommand),
    /// Build, verify and inspect signed app bundles.
    Bundle(bundle::BundleArgs),
    /// Render a chart locally, exactly as `helm template` prints it.
    Template(template::TemplateArgs),
    /// Write a new ed25519 signing key pair (`NAME.key`, mode 0600, and `NAME.pub`).
    Keygen(bundle::KeygenArgs),
    /// Run the daemon: app lifecycle behind an HTTP JSON API.
    Serve(Box<serve::ServeArgs>),
    /// Upload, apply, update, remove and inspect apps (talks to the daemon).
    App(app::AppArgs),
    /// List, show, set and delete an app's override layers (talks to the daemon).
    Override(app::OverrideArgs),
    /// Create, list and remove local volumes (talks to the daemon).
    Volume(app::VolumeArgs),
    /// Show the facts plugins get and where they came from (talks to the daemon).
    Facts(app::FactsArgs),
    /// Tell the daemon what changed on the platform (talks to the daemon).
    Platform(app::PlatformArgs),
    /// Export a store's apps to a file and import them into another
    /// (SQLite to the cluster store and back; no daemon may be writing).
    Store(store::StoreArgs),
    /// Print a shell completion script (bash, zsh or fish) on stdout.
    #[command(after_help = "Example: capstan completions bash > /etc/bash_completion.d/capstan")]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Set once at start from `-q`.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Whether `-q` was given: print nothing but errors.
pub(crate) fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// A status line on stderr, unless quiet.
pub(crate) fn status(line: &str) {
    if !quiet() {
        eprintln!("{line}");
    }
}

/// An error and its causes on one line, each cause once.
pub(crate) fn one_line(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

/// Runs the command line of this process and returns its exit status.
pub fn main() -> ExitCode {
    let parsed = examples::with_examples(Cli::command())
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    QUIET.store(cli.quiet, Ordering::Relaxed);
    init_logging(cli.verbose, cli.quiet);
    let verbose = cli.verbose;
    let result = match cli.command {
        Command::Plugin(command) => plugin::run(command),
        Command::Bundle(args) => {
            let validator = plugin::ComponentValidator::default();
            bundle::run(args, &|plugin, wasm| validator.validate(plugin, wasm))
        }
        Command::Keygen(args) => bundle::run_keygen(args),
        Command::Template(args) => template::run(args),
        Command::Serve(args) => serve::run(*args),
        Command::App(args) => app::run(args),
        Command::Override(args) => app::run_override(args),
        Command::Volume(args) => app::run_volume(args),
        Command::Store(args) => store::run(args),
        Command::Facts(args) => app::run_facts(args),
        Command::Platform(args) => app::run_platform(args),
        Command::Completions { shell } => {
            let mut command = examples::with_examples(Cli::command());
            clap_complete::generate(shell, &mut command, "capstan", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            print_error(&error, verbose);
            ExitCode::from(exit_status_of(&error))
        }
    }
}

/// [`EXIT_USAGE`] when no daemon answered, else [`EXIT_FAILED`].
fn exit_status_of(error: &anyhow::Error) -> u8 {
    let unreachable = error.chain().any(|cause| {
        cause
            .downcast_ref::<crate::api::ClientError>()
            .is_some_and(crate::api::ClientError::is_unreachable)
    });
    if unreachable { EXIT_USAGE } else { EXIT_FAILED }
}

fn init_logging(verbose: u8, quiet: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => {
            "warn,capstan::sandbox=info,capstan::audit=info,capstan::facts=info,capstan::lease=info"
        }
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("CAPSTAN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

/// Prints `error: <message>: <cause>: ...` on one line (a cause the line
/// already holds is not repeated); with `-v`, also each cause on a
/// `Caused by:` line.
fn print_error(error: &anyhow::Error, verbose: u8) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "error: {}", error_line(error));
    if verbose > 0 {
        let mut causes = error.chain().skip(1).peekable();
        if causes.peek().is_some() {
            let _ = writeln!(stderr, "\nCaused by:");
            for cause in causes {
                let _ = writeln!(stderr, "  {cause}");
            }
        }
    }
}

/// An anyhow chain on one line, each cause once.
fn error_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Whether `error` is stdout's broken pipe (the reader went away: exit 0
/// as ripgrep does). A broken pipe to the daemon is not: issue 45 found
/// uploads refused mid-body exiting 0 with nothing printed.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    let to_daemon = error
        .chain()
        .any(|cause| cause.downcast_ref::<crate::api::ClientError>().is_some());
    !to_daemon
        && error.chain().any(|cause| {
            cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
        })
}
