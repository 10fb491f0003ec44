//! `capstan serve`: the daemon.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use crate::api::{self, Address};
use crate::kube::cluster::tenancy::{ServiceAccount, Tenancy, TenantTarget};
use crate::kube::{ApplyTarget, ClusterOptions, ClusterTarget, Connect, DirTarget};
use crate::lifecycle::{Lifecycle, Options};
use crate::model::Facts;
use crate::trust::TrustStore;

/// Run the daemon: the app lifecycle behind an HTTP JSON API.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The state folder (database, bundles, plugin cache, socket).
    #[arg(long, value_name = "DIR", env = "CAPSTAN_STATE")]
    pub state: Option<PathBuf>,
    /// Folder of trusted public keys (`*.pub`); only bundles they signed
    /// are accepted.
    #[arg(long, value_name = "KEYDIR")]
    pub trust: PathBuf,
    /// Where to listen: `unix:PATH` (default: STATE/capstan.sock) or
    /// `tcp:HOST:PORT` (needs --token-file).
    #[arg(long, value_name = "ADDRESS")]
    pub listen: Option<Address>,
    /// Serve HTTPS on the TCP listener with this certificate chain (PEM,
    /// leaf first); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Require clients to present a certificate signed by this CA (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// Allow plain HTTP on a TCP address other than loopback (the token
    /// then crosses the network in clear).
    #[arg(long, conflicts_with = "tls_cert")]
    pub insecure_plain_http: bool,
    /// File holding the bearer token clients must send (first line).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Where charts are applied: `dir:PATH` writes each release's objects to
    /// PATH/APP/CHART.yaml (the default, STATE/applied).
    #[arg(long, value_name = "TARGET", conflicts_with = "kubeconfig")]
    pub target: Option<String>,
    /// Apply to the cluster of this kubeconfig.
    #[arg(long, value_name = "FILE", conflicts_with = "in_cluster")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long, value_name = "NAME", requires = "kubeconfig")]
    pub context: Option<String>,
    /// Apply to the cluster this daemon runs in, with its Pod's service
    /// account.
    #[arg(long, conflicts_with = "target")]
    pub in_cluster: bool,
    /// Facts about the platform handed to plugins (YAML); default: one
    /// all-in-one node.
    #[arg(long, value_name = "FILE")]
    pub facts: Option<PathBuf>,
    /// With a cluster target: a ConfigMap (`NAMESPACE/NAME`) whose
    /// `facts.yaml` is laid over the facts derived from the cluster, read
    /// at every poll (after `--facts FILE`).
    #[arg(long = "facts-configmap", value_name = "NS/NAME", value_parser = configmap_ref)]
    pub facts_configmap: Option<(String, String)>,
    /// With a cluster target: a node label whose value names the node's
    /// roles (`controller`, `worker`, `storage`, comma-separated), besides
    /// the `node-role.kubernetes.io/*` labels.
    #[arg(long = "facts-role-label", value_name = "KEY")]
    pub facts_role_label: Option<String>,
    /// A namespace every app's charts may read with `lookup` when
    /// rendering for the target, besides the app's own (repeat it; `*`
    /// for every namespace).
    #[arg(long = "lookup-namespace", value_name = "NS", value_parser = lookup_namespace)]
    pub lookup_namespaces: Vec<String>,
    /// Whether `lookup` may read cluster-scoped kinds (Nodes, Namespaces,
    /// StorageClasses, CRDs).
    #[arg(long = "lookup-cluster-scoped", value_name = "BOOL", default_value_t = true,
          action = clap::ArgAction::Set)]
    pub lookup_cluster_scoped: bool,
    /// A YAML file of what plugins' hook actions may do (contract 0.2):
    /// `default:` and `apps: {NAME: ...}`, each with `namespaces`,
    /// `clusterScoped`, `rbac`, `mirrorFrom` and `maxOwned` (the
    /// plugin authors' guide, Policy). Without it: each app's own
    /// namespaces only.
    #[arg(long = "action-policy", value_name = "FILE")]
    pub action_policy: Option<std::path::PathBuf>,
    /// Deadline of one chart render in seconds (render limits; default 10).
    #[arg(long = "render-timeout", value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub render_timeout: Option<u64>,
    /// Plugin calls that may run at once, across all apps (the size of the
    /// plugin instance pool; one app may hold a quarter of it, at least
    /// one). A call waits for a free slot within its own deadline, else it
    /// fails with `pool-exhausted`.
    #[arg(long, value_name = "N", default_value_t = crate::sandbox::DEFAULT_POOL_SIZE as u64,
          value_parser = clap::value_parser!(u64).range(1..=crate::sandbox::MAX_POOL_SIZE as u64))]
    pub plugin_pool_size: u64,
    /// Wall-clock deadline of one plugin call in milliseconds (default
    /// 2000); waiting for a pool slot counts.
    #[arg(long = "plugin-deadline", value_name = "MS",
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub plugin_deadline: Option<u64>,
    /// How many versions of each app to keep, the active one included
    /// (the others are what `app rollback` can go back to).
    #[arg(long, value_name = "N", default_value_t = crate::lifecycle::DEFAULT_KEEP_VERSIONS,
          value_parser = clap::value_parser!(usize))]
    pub keep_versions: usize,
    /// Largest bundle an upload, update or diff may send, in MiB, counted
    /// as it streams (413 past it).
    #[arg(long, value_name = "MIB", default_value_t = api::limits::DEFAULT_MAX_BUNDLE_BYTES >> 20,
          value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub max_bundle_size: u64,
    /// Bundle uploads (upload, update, diff --bundle) that may stream at
    /// once; past it, 429 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = api::limits::DEFAULT_MAX_UPLOADS as u64,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub max_uploads: u64,
    /// Operations (apply, remove, update, rollback, recover) that may run
    /// at once across all apps; the others are accepted (202) and wait
    /// their turn, in the order they were started.
    #[arg(long, value_name = "N", default_value_t = crate::lifecycle::DEFAULT_MAX_OPERATIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub max_operations: u64,
    /// Start no operation on its own, for any app: no automatic re-apply
    /// when the facts change, no resumption of what a leader left
    /// running. What an operator asks for runs as always; `app show`
    /// says `automatic: paused`.
    #[arg(long)]
    pub pause_automatic: bool,
    /// Connections the listener holds open at once; past it, new ones are
    /// closed and a warning is logged.
    #[arg(long, value_name = "N", default_value_t = api::limits::DEFAULT_MAX_CONNECTIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_connections: u64,
    /// Seconds a request body may send nothing before it is cut off (408).
    #[arg(long, value_name = "SECS", default_value_t = api::limits::DEFAULT_BODY_TIMEOUT.as_secs_f64(),
          value_parser = seconds)]
    pub body_timeout: f64,
    /// Seconds from a request's first byte (or the connection's start) to
    /// the end of its headers.
    #[arg(long, value_name = "SECS", default_value_t = api::limits::DEFAULT_HEADER_TIMEOUT.as_secs_f64(),
          value_parser = seconds)]
    pub header_timeout: f64,
    /// Seconds a kept-alive connection may sit idle before it is closed.
    #[arg(long, value_name = "SECS", default_value_t = api::limits::DEFAULT_IDLE_TIMEOUT.as_secs_f64(),
          value_parser = seconds)]
    pub idle_timeout: f64,
    /// Where the state lives: `sqlite` (a database in --state, one
    /// daemon) or `cluster` (App objects on the API server of --kubeconfig
    /// or --in-cluster, shared by replicas that elect a leader on a Lease).
    #[arg(long, value_enum, default_value_t = StoreKind::Sqlite)]
    pub store: StoreKind,
    /// With --store cluster: the namespace of the App objects and the
    /// Lease (default: the Pod's namespace in a cluster, else
    /// capstan-system).
    #[arg(long, value_name = "NAMESPACE", value_parser = super::serve_cluster::namespace)]
    pub store_namespace: Option<String>,
    /// With --store cluster: the Lease the replicas elect a leader on.
    #[arg(long, value_name = "NAME", default_value = "capstan")]
    pub lease: String,
    /// With --store cluster: this replica's identity in the Lease
    /// (default: $POD_NAME, else host name and process id).
    #[arg(long, value_name = "NAME")]
    pub identity: Option<String>,
    /// Seconds a Lease not renewed stays its holder's (client-go: 15).
    #[arg(long, value_name = "SECS", default_value_t = 15.0, value_parser = seconds)]
    pub lease_duration: f64,
    /// Seconds a leader may fail to renew before it stops leading
    /// (client-go: 10); less than --lease-duration.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, value_parser = seconds)]
    pub renew_deadline: f64,
    /// Seconds between two attempts to take or renew the Lease
    /// (client-go: 2).
    #[arg(long, value_name = "SECS", default_value_t = 2.0, value_parser = seconds)]
    pub retry_period: f64,
    /// With --store cluster: seconds a SIGTERM waits for running
    /// operations to stop at their next checkpoint before the Lease is
    /// released and the daemon exits; the next leader resumes them.
    #[arg(long, value_name = "SECS", default_value_t = 30.0, value_parser = seconds)]
    pub shutdown_grace: f64,
    /// Keep every uploaded bundle in this OCI registry
    /// (`oci://HOST[:PORT]/REPO`; one repository per app under it), so
    /// replicas sharing a cluster store pull what their folder lacks,
    /// verified by digest and signature. The state folder is then a cache.
    #[arg(long, value_name = "OCI")]
    pub bundle_registry: Option<String>,
    #[command(flatten)]
    pub registry: super::bundle::RegistryArgs,
    /// With a cluster target: apply the app APP as this ServiceAccount
    /// (`APP=NAMESPACE/NAME`; repeat it), by impersonation, so the API
    /// server holds the app to that account's rights.
    #[arg(long = "service-account", value_name = "APP=NAMESPACE/NAME", value_parser = app_account)]
    pub service_accounts: Vec<(String, ServiceAccount)>,
    /// With a cluster target: the ServiceAccount of every app not named
    /// by --service-account (default: the daemon's own rights).
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub default_service_account: Option<ServiceAccount>,
}

/// `APP=NAMESPACE/NAME`.
fn app_account(text: &str) -> Result<(String, ServiceAccount), String> {
    let (app, account) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not APP=NAMESPACE/NAME"))?;
    let app = crate::model::AppName::new(app).map_err(|e| e.to_string())?;
    Ok((app.to_string(), account.parse()?))
}

/// Where the daemon's state lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StoreKind {
    /// A SQLite database in the state folder.
    Sqlite,
    /// App objects on the cluster's API server.
    Cluster,
}

/// `NAMESPACE/NAME` of a ConfigMap.
fn configmap_ref(text: &str) -> Result<(String, String), String> {
    crate::model::namespaced_name(text, "ConfigMap")
}

/// A namespace name (a DNS-1123 label) or `*`.
fn lookup_namespace(text: &str) -> Result<String, String> {
    if text == "*" {
        return Ok(text.to_string());
    }
    super::serve_cluster::namespace(text)
}

/// A timeout in seconds (fractions allowed): above zero, at most a day.
fn seconds(text: &str) -> Result<f64, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 {
        Ok(secs)
    } else {
        Err(format!("{text} is not between 0 and 86400 seconds"))
    }
}

impl ServeArgs {
    /// The listener's limits from the flags.
    fn limits(&self) -> api::Limits {
        api::Limits {
            max_bundle_bytes: self.max_bundle_size << 20,
            max_uploads: usize::try_from(self.max_uploads).unwrap_or(usize::MAX),
            max_connections: usize::try_from(self.max_connections).unwrap_or(usize::MAX),
            body_timeout: std::time::Duration::from_secs_f64(self.body_timeout),
            header_timeout: std::time::Duration::from_secs_f64(self.header_timeout),
            idle_timeout: std::time::Duration::from_secs_f64(self.idle_timeout),
        }
    }
}

/// Runs the daemon until SIGINT or SIGTERM.
///
/// # Errors
/// Unreadable keys, facts or token, a state folder in use, a bind failure.
pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    if let Some(secs) = args.render_timeout {
        crate::render::RenderLimits {
            deadline: std::time::Duration::from_secs(secs),
            ..crate::render::RenderLimits::default()
        }
        .configure();
    }
    let state = args.state.clone().unwrap_or_else(api::default_state_dir);
    // The state folder first, private, so nothing below (the default
    // directory target inside it) makes it with the umask's mode.
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&state)
        .with_context(|| format!("creating state folder {}", state.display()))?;
    let trust = TrustStore::load_dir(&args.trust)
        .with_context(|| format!("loading trusted keys from {}", args.trust.display()))?;
    let (target, cluster_target) = target(&args, &state)?;
    let mut options = Options::new(state.clone(), trust, target);
    if let Some(base) = &args.bundle_registry {
        let home = crate::lifecycle::RegistryHome::new(base, args.registry.options())
            .map_err(|e| anyhow::anyhow!(e))?;
        options.bundle_home = Some(Arc::new(home));
    }
    let election = match (args.store, &cluster_target) {
        (StoreKind::Sqlite, _) => None,
        (StoreKind::Cluster, None) => {
            anyhow::bail!("--store cluster needs a cluster (--kubeconfig or --in-cluster)")
        }
        (StoreKind::Cluster, Some(cluster_target)) => Some(super::serve_cluster::join(
            &args,
            cluster_target,
            &mut options,
        )?),
    };
    options.checkpoints_from_env = true;
    anyhow::ensure!(
        args.keep_versions >= 1,
        "--keep-versions must be at least 1"
    );
    options.keep_versions = args.keep_versions;
    options.max_operations = usize::try_from(args.max_operations).unwrap_or(usize::MAX);
    options.pause_automatic = args.pause_automatic;
    if args.pause_automatic {
        tracing::warn!(target: "capstan::audit", "automatic operations are paused (--pause-automatic): no automatic re-apply, no resumption; operators' requests run as always");
    }
    options.policy = options
        .policy
        .pool_size(usize::try_from(args.plugin_pool_size).unwrap_or(crate::sandbox::MAX_POOL_SIZE));
    if let Some(ms) = args.plugin_deadline {
        options.policy = options
            .policy
            .deadline(std::time::Duration::from_millis(ms));
    }
    options.lookup_policy = crate::model::LookupPolicy {
        namespaces: args.lookup_namespaces.iter().cloned().collect(),
        cluster_scoped: args.lookup_cluster_scoped,
    };
    if let Some(path) = &args.action_policy {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading the action policy {}: {e}", path.display()))?;
        options.action_policies = serde_yaml_ng::from_str(&text)
            .map_err(|e| anyhow::anyhow!("the action policy {}: {e}", path.display()))?;
    }
    let cluster = args.kubeconfig.is_some() || args.in_cluster;
    anyhow::ensure!(
        cluster || (args.facts_configmap.is_none() && args.facts_role_label.is_none()),
        "--facts-configmap and --facts-role-label need a cluster target (--kubeconfig or --in-cluster)"
    );
    if cluster {
        let mut overlays = Vec::new();
        if let Some(path) = &args.facts {
            overlays.push(crate::lifecycle::Overlay::File(path.clone()));
        }
        if let Some((namespace, name)) = &args.facts_configmap {
            overlays.push(crate::lifecycle::Overlay::ConfigMap {
                namespace: namespace.clone(),
                name: name.clone(),
            });
        }
        let source = crate::lifecycle::ClusterFacts::start(
            options.target.view(),
            crate::lifecycle::ClusterFactsOptions {
                overlays,
                role_label: args.facts_role_label.clone(),
            },
        )
        .map_err(|e| anyhow::anyhow!("facts from the cluster: {e}"))?;
        options.facts_source = Some(source);
    } else if let Some(path) = &args.facts {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading facts {}", path.display()))?;
        let facts =
            Facts::from_yaml(&text).with_context(|| format!("parsing facts {}", path.display()))?;
        options.facts = Some(facts);
    }
    let token = match &args.token_file {
        Some(path) => Some(read_token(path)?),
        None => None,
    };
    let address = args
        .listen
        .clone()
        .unwrap_or_else(|| Address::default_for(&state));
    let mut listen = api::Listen {
        tls: None,
        insecure_plain_http: args.insecure_plain_http,
        limits: args.limits(),
    };
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        listen.tls = Some(api::tls::server_config(
            cert,
            key,
            args.tls_client_ca.as_deref(),
        )?);
    }
    let lifecycle = Lifecycle::open(options)
        .map_err(|e| anyhow::anyhow!(e.one_line()))
        .with_context(|| format!("opening state folder {}", state.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(api::serve_with(
        lifecycle.clone(),
        &address,
        token,
        listen,
        shutdown_signal(),
    ))?;
    if let Some(election) = election {
        super::serve_cluster::drain(
            &lifecycle,
            &election,
            std::time::Duration::from_secs_f64(args.shutdown_grace),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The target, and the same as a cluster target when it is one.
type Targets = (Arc<dyn ApplyTarget>, Option<Arc<ClusterTarget>>);

fn target(args: &ServeArgs, state: &std::path::Path) -> anyhow::Result<Targets> {
    let connect = Connect::from_flags(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
        args.in_cluster,
    );
    if let Some(connect) = connect {
        let target = ClusterTarget::connect(&connect, ClusterOptions::default())
            .map_err(|e| anyhow::anyhow!(one_line(&e)))?;
        tracing::info!(url = target.url(), "applying to the cluster");
        let target = Arc::new(target);
        let tenancy = Tenancy {
            default: args.default_service_account.clone(),
            apps: args.service_accounts.iter().cloned().collect(),
        };
        if tenancy == Tenancy::default() {
            return Ok((target.clone(), Some(target)));
        }
        for (app, account) in &tenancy.apps {
            tracing::info!(app, account = %account, "applying as a ServiceAccount");
        }
        let tenants = TenantTarget::new(
            Arc::clone(&target),
            tenancy,
            connect,
            ClusterOptions::default(),
        );
        return Ok((Arc::new(tenants), Some(target)));
    }
    anyhow::ensure!(
        args.service_accounts.is_empty() && args.default_service_account.is_none(),
        "--service-account and --default-service-account need a cluster target (--kubeconfig or --in-cluster)"
    );
    let dir = match &args.target {
        None => state.join("applied"),
        Some(spec) => match spec.strip_prefix("dir:") {
            Some(path) if !path.is_empty() => PathBuf::from(path),
            _ => anyhow::bail!("target {spec:?} is not dir:PATH"),
        },
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating target {}", dir.display()))?;
    Ok((Arc::new(DirTarget::new(dir)), None))
}

/// An error and its causes on one line, each cause once.
pub(super) fn one_line(error: &dyn std::error::Error) -> String {
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

fn read_token(path: &std::path::Path) -> anyhow::Result<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .with_context(|| format!("reading token file {}", path.display()))?
        .permissions()
        .mode();
    anyhow::ensure!(
        mode & 0o077 == 0,
        "token file {} is open to group or others (mode {:o}); make it 0600",
        path.display(),
        mode & 0o777
    );
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading token file {}", path.display()))?;
    let token = text.lines().next().unwrap_or_default().trim().to_owned();
    anyhow::ensure!(
        token.len() >= 16,
        "token in {} is shorter than 16 characters",
        path.display()
    );
    Ok(token)
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("shutting down");
}
