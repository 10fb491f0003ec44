//! The `capstan` binary: the daemon and its command-line client.

/// mimalloc serves the renderer's many small, short-lived strings faster
/// than the system allocator (docs/src/developing/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    capstan::cli::main()
}
