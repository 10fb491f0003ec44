//! `kube-double`: runs the Kubernetes API-server test double standalone,
//! for kubectl and demos. Writes a kubeconfig, prints the URL, serves until
//! SIGTERM or SIGINT (then exits 0).

use clap::Parser;
use kube_double::{KubeDouble, Options};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio::signal::unix::{SignalKind, signal};

/// A test double of the Kubernetes API server (not a real one) on loopback HTTP.
#[derive(Parser)]
#[command(name = "kube-double", version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Where to write a kubeconfig for kubectl and kube-rs.
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// Do not simulate controllers (nothing becomes ready by itself).
    #[arg(long)]
    no_controllers: bool,
    /// Require this bearer token on every request.
    #[arg(long)]
    token: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let options = Options {
        simulate_controllers: !args.no_controllers,
        token: args.token,
        ..Options::default()
    };
    let double = match KubeDouble::start_on(args.listen, options) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: starting kube-double on {}: {e}", args.listen);
            return ExitCode::from(2);
        }
    };
    if let Some(path) = &args.kubeconfig_out
        && let Err(e) = double.write_kubeconfig(path)
    {
        eprintln!("error: writing kubeconfig {}: {e}", path.display());
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: building the signal runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // Handlers go in before the URL is printed, so a caller that signals as
    // soon as it reads the URL still gets a clean exit.
    let signals = {
        let _context = runtime.enter();
        signal(SignalKind::terminate()).and_then(|t| Ok((t, signal(SignalKind::interrupt())?)))
    };
    let (mut term, mut int) = match signals {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: installing signal handlers: {e}");
            return ExitCode::from(2);
        }
    };
    println!("{}", double.url());
    runtime.block_on(async {
        tokio::select! {
            _ = term.recv() => {},
            _ = int.recv() => {},
        }
    });
    drop(double);
    ExitCode::SUCCESS
}
