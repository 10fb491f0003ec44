//! The `capstan` binary: the daemon and its command-line client.

fn main() -> std::process::ExitCode {
    capstan::cli::main()
}
