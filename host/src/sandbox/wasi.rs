//! The WASI a plugin gets: just enough for a `wasm32-wasip2` component to
//! link, with nothing behind it.
//!
//! Linked: `wasi:io`, `wasi:clocks`, `wasi:random`, `wasi:cli`,
//! `wasi:filesystem` and `wasi:sockets`. The context built here grants
//! nothing: no preopened directories (every open fails), no environment or
//! arguments, closed stdin, bounded in-memory stdout and stderr, a wall
//! clock fixed at the call's instant, a monotonic clock that does not move,
//! random generators seeded from the call's seed, and no network: creating
//! a TCP or UDP socket and resolving a name are refused (`access-denied`)
//! before any host socket exists, and no address passes the address check.
//!
//! Why `wasi:sockets` is linked at all: CPython built for WASI (every
//! componentize-py component) imports it whether or not the plugin opens a
//! socket, so leaving it out would refuse every Python plugin. Linked and
//! empty, a socket call fails inside the plugin like a refused connection.
//!
//! Sleeping: the monotonic clock's `subscribe-duration` and
//! `subscribe-instant` pollables are ready at once (time does not pass for
//! a plugin, so every wait is already over). A `sleep` never blocks the
//! host outside wasm, where the epoch deadline could not reach it; a plugin
//! that sleeps in a loop spins until its deadline like any other loop.

use std::time::{Duration, SystemTime};

use rand::SeedableRng;
use rand::rngs::StdRng;
use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
use wasmtime_wasi::p2::DynPollable;
use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, random, sockets, sync};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::random::WasiRandom;
use wasmtime_wasi::sockets::{WasiSockets, WasiSocketsView as _};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiView};

/// Adds the WASI interfaces the sandbox provides to `linker`.
pub(crate) fn add_to_linker<T: WasiView>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    let l = linker;
    wasmtime_wasi_io::bindings::wasi::io::error::add_to_linker::<T, Table>(l, table_of)?;
    sync::io::poll::add_to_linker::<T, Table>(l, table_of)?;
    sync::io::streams::add_to_linker::<T, Table>(l, table_of)?;
    clocks::wall_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)?;
    clocks::monotonic_clock::add_to_linker::<T, FrozenClock>(l, |t| {
        FrozenClockView(t.ctx().table)
    })?;
    filesystem::preopens::add_to_linker::<T, WasiFilesystem>(l, T::filesystem)?;
    sync::filesystem::types::add_to_linker::<T, WasiFilesystem>(l, T::filesystem)?;
    sockets::tcp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sync::sockets::tcp::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sync::sockets::udp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sync::sockets::udp::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sockets::instance_network::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sockets::network::add_to_linker::<T, WasiSockets>(l, &Default::default(), T::sockets)?;
    sockets::ip_name_lookup::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    random::random::add_to_linker::<T, WasiRandom>(l, |t| t.ctx().ctx.random())?;
    random::insecure::add_to_linker::<T, WasiRandom>(l, |t| t.ctx().ctx.random())?;
    random::insecure_seed::add_to_linker::<T, WasiRandom>(l, |t| t.ctx().ctx.random())?;
    cli::exit::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::environment::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stdin::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stdout::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stderr::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_input::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_output::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stdin::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stdout::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stderr::add_to_linker::<T, WasiCli>(l, T::cli)?;
    Ok(())
}

struct Table;

impl HasData for Table {
    type Data<'a> = &'a mut ResourceTable;
}

fn table_of<T: WasiView>(t: &mut T) -> &mut ResourceTable {
    t.ctx().table
}

/// The stdout and stderr buffers of one call, kept by the host to read
/// after the call.
pub(crate) struct Output {
    pub(crate) stdout: MemoryOutputPipe,
    pub(crate) stderr: MemoryOutputPipe,
    pub(crate) capacity: usize,
}

/// Builds the empty WASI context of one call.
///
/// `now` is the wall-clock instant the plugin sees for the whole call;
/// `seed` seeds both random generators.
pub(crate) fn context(now: SystemTime, seed: [u8; 32], log_bytes: usize) -> (WasiCtx, Output) {
    let output = Output {
        stdout: MemoryOutputPipe::new(log_bytes),
        stderr: MemoryOutputPipe::new(log_bytes),
        capacity: log_bytes,
    };
    let since_epoch = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let mut insecure_seed = [0u8; 16];
    insecure_seed.copy_from_slice(&seed[..16]);
    let ctx = WasiCtxBuilder::new()
        .stdout(output.stdout.clone())
        .stderr(output.stderr.clone())
        .wall_clock(FixedWallClock(since_epoch))
        .monotonic_clock(FrozenMonotonicClock)
        .secure_random(StdRng::from_seed(seed))
        .insecure_random(StdRng::from_seed(reversed(seed)))
        .insecure_random_seed(u128::from_le_bytes(insecure_seed))
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build();
    (ctx, output)
}

fn reversed(mut seed: [u8; 32]) -> [u8; 32] {
    seed.reverse();
    seed
}

/// A wall clock stopped at one instant.
struct FixedWallClock(Duration);

impl HostWallClock for FixedWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        self.0
    }
}

/// A monotonic clock that never advances, so timing leaks nothing.
struct FrozenMonotonicClock;

impl HostMonotonicClock for FrozenMonotonicClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

/// The monotonic-clock interface a plugin gets: frozen at 0, and every
/// wait it subscribes to is ready at once.
struct FrozenClock;

impl HasData for FrozenClock {
    type Data<'a> = FrozenClockView<'a>;
}

/// The call's resource table, where the ready pollables go.
struct FrozenClockView<'a>(&'a mut ResourceTable);

impl clocks::monotonic_clock::Host for FrozenClockView<'_> {
    fn now(&mut self) -> wasmtime::Result<u64> {
        Ok(FrozenMonotonicClock.now())
    }

    fn resolution(&mut self) -> wasmtime::Result<u64> {
        Ok(FrozenMonotonicClock.resolution())
    }

    fn subscribe_instant(&mut self, _when: u64) -> wasmtime::Result<Resource<DynPollable>> {
        ready_now(self.0)
    }

    fn subscribe_duration(&mut self, _duration: u64) -> wasmtime::Result<Resource<DynPollable>> {
        ready_now(self.0)
    }
}

/// A wait that is already over.
struct Elapsed;

impl wasmtime_wasi_io::poll::Pollable for Elapsed {
    fn ready<'a, 'b>(
        &'a mut self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(std::future::ready(()))
    }
}

fn ready_now(table: &mut ResourceTable) -> wasmtime::Result<Resource<DynPollable>> {
    let elapsed = table.push(Elapsed)?;
    wasmtime_wasi_io::poll::subscribe(table, elapsed)
}
