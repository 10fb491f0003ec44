//! Where the daemon listens and the CLI connects: `unix:PATH`,
//! `tcp:HOST:PORT` (listen), `http://HOST:PORT` or `https://HOST:PORT`
//! (connect; a TLS listener is `tcp:` with `--tls-cert`).

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A daemon address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A unix socket.
    Unix(PathBuf),
    /// A TCP address.
    Tcp(SocketAddr),
    /// A TCP address spoken to over TLS (`https://HOST:PORT`).
    Https(SocketAddr),
}

impl Address {
    /// The default address for a state folder: its `capstan.sock`.
    pub fn default_for(state: &Path) -> Address {
        Address::Unix(state.join("capstan.sock"))
    }
}

impl FromStr for Address {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if let Some(path) = text.strip_prefix("unix:") {
            if path.is_empty() {
                return Err("unix: needs a socket path".into());
            }
            return Ok(Address::Unix(PathBuf::from(path)));
        }
        if let Some(addr) = text.strip_prefix("https://") {
            let addr = addr.trim_end_matches('/');
            return addr
                .parse()
                .map(Address::Https)
                .map_err(|e| format!("{addr:?} is not HOST:PORT with an IP host: {e}"));
        }
        let addr = text
            .strip_prefix("tcp:")
            .or_else(|| text.strip_prefix("http://"))
            .map(|a| a.trim_end_matches('/'));
        match addr {
            Some(addr) => addr
                .parse()
                .map(Address::Tcp)
                .map_err(|e| format!("{addr:?} is not HOST:PORT with an IP host: {e}")),
            None => Err(format!(
                "{text:?} is not unix:PATH, tcp:HOST:PORT, http://HOST:PORT or https://HOST:PORT"
            )),
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Unix(path) => write!(f, "unix:{}", path.display()),
            Address::Tcp(addr) => write!(f, "tcp:{addr}"),
            Address::Https(addr) => write!(f, "https://{addr}"),
        }
    }
}

/// The state folder used when none is given: `$CAPSTAN_STATE`, else
/// `$XDG_STATE_HOME/capstan`, else `$HOME/.local/state/capstan`, else
/// `./capstan-state`.
pub fn default_state_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("CAPSTAN_STATE") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = var("XDG_STATE_HOME") {
        return PathBuf::from(dir).join("capstan");
    }
    if let Some(home) = var("HOME") {
        return PathBuf::from(home).join(".local/state/capstan");
    }
    PathBuf::from("capstan-state")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_spelling_and_refuses_the_rest() {
        assert_eq!(
            "unix:/run/c.sock".parse(),
            Ok(Address::Unix("/run/c.sock".into()))
        );
        let tcp: SocketAddr = "127.0.0.1:7070".parse().unwrap();
        assert_eq!("tcp:127.0.0.1:7070".parse(), Ok(Address::Tcp(tcp)));
        assert_eq!("http://127.0.0.1:7070/".parse(), Ok(Address::Tcp(tcp)));
        assert!("unix:".parse::<Address>().is_err());
        assert!("localhost:80".parse::<Address>().is_err());
        assert!("tcp:nohost".parse::<Address>().is_err());
        assert_eq!(Address::Tcp(tcp).to_string(), "tcp:127.0.0.1:7070");
        assert_eq!("https://127.0.0.1:7070".parse(), Ok(Address::Https(tcp)));
        assert_eq!(Address::Https(tcp).to_string(), "https://127.0.0.1:7070");
        assert!("https://localhost:1".parse::<Address>().is_err());
    }
}
