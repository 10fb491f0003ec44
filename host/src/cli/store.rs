//! `capstan store export FILE` / `capstan store import FILE`: a whole
//! store as one JSON document and back, to move a daemon's state from
//! SQLite into the cluster store and back ([`crate::store::transfer`]).
//! Run them with no daemon writing the store: the SQLite folder's lock
//! is taken; in the cluster, scale the daemons to zero first.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::kube::Connect;
use crate::store::cluster::ClusterStore;
use crate::store::transfer::{self, Dump};
use crate::store::{SqliteStore, Store};

/// Move a store's apps and volumes out to a file and into another store.
#[derive(Debug, Args)]
pub struct StoreArgs {
    #[command(subcommand)]
    command: StoreCommand,
}

#[derive(Debug, Subcommand)]
enum StoreCommand {
    /// Write every app (versions, overrides, decisions, history,
    /// inventories) and volume of a store to FILE as JSON.
    Export {
        /// Where to write (`-` for stdout).
        file: PathBuf,
        #[command(flatten)]
        from: Which,
    },
    /// Write the apps and volumes of FILE into a store in which none of
    /// them exists yet.
    Import {
        /// The file an export wrote.
        file: PathBuf,
        #[command(flatten)]
        into: Which,
    },
}

/// Which store: a state folder's SQLite, or the cluster's App objects.
#[derive(Debug, Args)]
struct Which {
    /// The state folder of a SQLite store (used when neither
    /// --kubeconfig nor --in-cluster names the cluster store).
    #[arg(long, value_name = "DIR", env = "CAPSTAN_STATE")]
    state: Option<PathBuf>,
    /// The cluster store on the cluster of this kubeconfig.
    #[arg(long, value_name = "FILE", conflicts_with = "in_cluster")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current one).
    #[arg(long, value_name = "NAME", requires = "kubeconfig")]
    context: Option<String>,
    /// The cluster store of the cluster this runs in.
    #[arg(long)]
    in_cluster: bool,
    /// The cluster store's namespace.
    #[arg(long, value_name = "NAMESPACE", default_value = super::serve_cluster::DEFAULT_NAMESPACE,
          value_parser = super::serve_cluster::namespace)]
    store_namespace: String,
}

/// The store named, and for SQLite the folder's lock and path.
struct Opened {
    store: Arc<dyn Store>,
    sqlite_state: Option<PathBuf>,
    _lock: Option<std::fs::File>,
}

impl Which {
    fn open(&self) -> anyhow::Result<Opened> {
        let connect = Connect::from_flags(
            self.kubeconfig.as_deref(),
            self.context.as_deref(),
            self.in_cluster,
        );
        if let Some(connect) = connect {
            let store = ClusterStore::connect(&connect, &self.store_namespace)
                .map_err(|e| anyhow::anyhow!(super::serve::one_line(&e)))?;
            return Ok(Opened {
                store: Arc::new(store),
                sqlite_state: None,
                _lock: None,
            });
        }
        let state = self
            .state
            .clone()
            .unwrap_or_else(crate::api::default_state_dir);
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(&state)
            .with_context(|| format!("creating state folder {}", state.display()))?;
        let lock = crate::lifecycle::lock_folder(&state)
            .map_err(|e| anyhow::anyhow!(e.one_line()))
            .with_context(|| format!("opening state folder {}", state.display()))?;
        let store = SqliteStore::open(&state)
            .with_context(|| format!("opening the store in {}", state.display()))?;
        Ok(Opened {
            store: Arc::new(store),
            sqlite_state: Some(state),
            _lock: Some(lock),
        })
    }
}

/// Runs `capstan store`.
///
/// # Errors
/// An unreadable file or store, a refused import.
pub fn run(args: StoreArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        StoreCommand::Export { file, from } => {
            let opened = from.open()?;
            let dump = transfer::export(opened.store.as_ref())?;
            let text = serde_json::to_string_pretty(&dump)?;
            if file.as_os_str() == "-" {
                println!("{text}");
            } else {
                write_new(&file, text.as_bytes())?;
            }
            super::status(&format!(
                "{:>12} {} app(s) and {} volume(s) to {}",
                "Exported",
                dump.apps.len(),
                dump.volumes.len(),
                file.display()
            ));
            Ok(ExitCode::SUCCESS)
        }
        StoreCommand::Import { file, into } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let mut dump: Dump = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a store export", file.display()))?;
            let opened = into.open()?;
            if let Some(state) = &opened.sqlite_state {
                // A single daemon reads bundles from its own folder.
                let paths = crate::lifecycle::StatePaths::new(state);
                for app in &mut dump.apps {
                    for version in &mut app.spec.versions {
                        version.bundle_dir = paths.bundle_dir(app.name.as_str(), &version.version);
                    }
                }
            }
            let done = transfer::import(opened.store.as_ref(), &dump)?;
            super::status(&format!(
                "{:>12} {} app(s) and {} volume(s) from {}",
                "Imported",
                done.apps,
                done.volumes,
                file.display()
            ));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Writes `bytes` to `path` through a temporary file renamed into place
/// (mode 0600: the dump holds every override), so nothing half-written
/// is left.
fn write_new(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let partial = path.with_extension("partial");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .with_context(|| format!("writing {}", partial.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
