//! Who is on the other end of a connection, for the audit line: the unix
//! socket peer's credentials (`SO_PEERCRED`, read once per connection by
//! tokio's [`tokio::net::UnixStream::peer_cred`]) or a TCP peer's address.
//!
//! Must not decide anything: the bearer token decides who may do what; a
//! [`Peer`] only says who did it.

use std::net::SocketAddr;

/// The other end of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// A local process on the unix socket; `None` where the kernel did not
    /// say (which Linux always does).
    Unix {
        /// Its effective user id.
        uid: Option<u32>,
        /// Its process id.
        pid: Option<i32>,
    },
    /// A TCP (or TLS) client at this address.
    Tcp(SocketAddr),
}

impl Peer {
    /// `uid=N pid=P` for a unix peer, `ADDR` for a TCP one.
    pub fn describe(&self) -> String {
        match self {
            Peer::Unix { uid, pid } => {
                let uid = uid.map_or_else(|| "unknown".to_owned(), |u| u.to_string());
                match pid {
                    Some(pid) => format!("uid={uid} pid={pid}"),
                    None => format!("uid={uid}"),
                }
            }
            Peer::Tcp(addr) => addr.to_string(),
        }
    }
}

impl Peer {
    /// The credentials of the process at the other end of `stream`.
    pub(super) fn of_unix(stream: &tokio::net::UnixStream) -> Peer {
        match stream.peer_cred() {
            Ok(cred) => Peer::Unix {
                uid: Some(cred.uid()),
                pid: cred.pid(),
            },
            Err(e) => {
                tracing::warn!(error = %e, "reading the socket peer's credentials failed");
                Peer::Unix {
                    uid: None,
                    pid: None,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Peer;

    #[test]
    fn a_peer_is_described_by_uid_and_pid_or_by_address() {
        let unix = Peer::Unix {
            uid: Some(1000),
            pid: Some(42),
        };
        assert_eq!(unix.describe(), "uid=1000 pid=42");
        let unknown = Peer::Unix {
            uid: None,
            pid: None,
        };
        assert_eq!(unknown.describe(), "uid=unknown");
        let tcp = Peer::Tcp("127.0.0.1:8443".parse().unwrap());
        assert_eq!(tcp.describe(), "127.0.0.1:8443");
    }
}
