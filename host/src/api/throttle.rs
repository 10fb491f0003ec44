//! Failed authentications, counted per peer, and the wait a peer that
//! keeps failing is given: after [`AUTH_FAILURES_FREE`] failures, each
//! further one doubles a wait (from [`AUTH_FIRST_WAIT`] up to
//! [`AUTH_MAX_WAIT`]) during which that peer's credentials are not even
//! compared, and it is answered `429` with `Retry-After`. Nothing is
//! held while a peer waits (no sleeping request, no open connection), so
//! a guesser slows only itself; other peers are answered as before.
//!
//! A peer is a TCP client's IP address (not its port: a guesser opens
//! many connections) or a unix socket client's uid. A success from a
//! peer forgets its failures.
//!
//! Must not decide who may do what: that is the token's; this only says
//! when a peer may try again.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::limits::{AUTH_FAILURES_FREE, AUTH_FIRST_WAIT, AUTH_MAX_WAIT};
use super::peer::Peer;

/// Failures older than this are forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);
/// Peers remembered at most; past it, those not waiting are forgotten.
const MAX_PEERS: usize = 10_000;

/// Who failed, as counted: see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Ip(IpAddr),
    Uid(Option<u32>),
    /// No connection info (a router driven in process).
    Unknown,
}

impl Key {
    fn of(peer: Option<&Peer>) -> Key {
        match peer {
            Some(Peer::Tcp(addr)) => Key::Ip(addr.ip()),
            Some(Peer::Unix { uid, .. }) => Key::Uid(*uid),
            None => Key::Unknown,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
    wait_until: Option<Instant>,
}

/// The failed authentications of every peer; shared by a router's
/// requests.
#[derive(Debug, Default)]
pub(super) struct Throttle {
    peers: Mutex<HashMap<Key, Failures>>,
}

impl Throttle {
    /// How long `peer` must still wait before its credentials are looked
    /// at again; `None` when it may try now.
    pub(super) fn wait(&self, peer: Option<&Peer>) -> Option<Duration> {
        let now = Instant::now();
        let peers = self.peers.lock().ok()?;
        let until = peers.get(&Key::of(peer))?.wait_until?;
        until.checked_duration_since(now).filter(|d| !d.is_zero())
    }

    /// Counts a failure of `peer`; returns its count and the wait it now
    /// has, if any.
    pub(super) fn failed(&self, peer: Option<&Peer>) -> (u32, Option<Duration>) {
        let now = Instant::now();
        let Ok(mut peers) = self.peers.lock() else {
            return (0, None);
        };
        if peers.len() >= MAX_PEERS {
            peers.retain(|_, f| {
                f.wait_until.is_some_and(|until| until > now)
                    || now.duration_since(f.last) < FORGET_AFTER
            });
            if peers.len() >= MAX_PEERS {
                peers.retain(|_, f| f.wait_until.is_some_and(|until| until > now));
            }
        }
        let entry = peers.entry(Key::of(peer)).or_insert(Failures {
            count: 0,
            last: now,
            wait_until: None,
        });
        if now.duration_since(entry.last) >= FORGET_AFTER {
            entry.count = 0;
            entry.wait_until = None;
        }
        entry.count = entry.count.saturating_add(1);
        entry.last = now;
        let wait = wait_after(entry.count);
        entry.wait_until = wait.map(|wait| now + wait);
        (entry.count, wait)
    }

    /// Forgets the failures of `peer` (it authenticated).
    pub(super) fn succeeded(&self, peer: Option<&Peer>) {
        if let Ok(mut peers) = self.peers.lock()
            && !peers.is_empty()
        {
            peers.remove(&Key::of(peer));
        }
    }
}

/// The wait after the `count`th failure in a row.
fn wait_after(count: u32) -> Option<Duration> {
    let doublings = count.checked_sub(AUTH_FAILURES_FREE + 1)?.min(16);
    Some(
        AUTH_FIRST_WAIT
            .saturating_mul(1 << doublings)
            .min(AUTH_MAX_WAIT),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_starts_after_the_free_failures_and_doubles_to_its_cap() {
        let waits: Vec<Option<u64>> = (1..=14)
            .map(|n| wait_after(n).map(|d| d.as_secs()))
            .collect();
        assert_eq!(
            waits,
            [
                None,
                None,
                None,
                None,
                None,
                Some(1),
                Some(2),
                Some(4),
                Some(8),
                Some(16),
                Some(30),
                Some(30),
                Some(30),
                Some(30)
            ]
        );
        assert_eq!(wait_after(u32::MAX), Some(AUTH_MAX_WAIT));
    }

    #[test]
    fn one_peer_waits_and_another_does_not_and_a_success_forgets() {
        let throttle = Throttle::default();
        let guesser = Peer::Tcp("127.0.0.2:40000".parse().unwrap());
        let same_host_other_port = Peer::Tcp("127.0.0.2:40001".parse().unwrap());
        let operator = Peer::Tcp("127.0.0.1:40000".parse().unwrap());
        for _ in 0..AUTH_FAILURES_FREE {
            throttle.failed(Some(&guesser));
            assert_eq!(throttle.wait(Some(&guesser)), None);
        }
        let (count, wait) = throttle.failed(Some(&guesser));
        assert_eq!(
            (count, wait),
            (AUTH_FAILURES_FREE + 1, Some(AUTH_FIRST_WAIT))
        );
        assert!(throttle.wait(Some(&same_host_other_port)).is_some());
        assert_eq!(throttle.wait(Some(&operator)), None);
        throttle.succeeded(Some(&guesser));
        assert_eq!(throttle.wait(Some(&guesser)), None);
    }
}
