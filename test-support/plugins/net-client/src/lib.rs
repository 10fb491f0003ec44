//! A plugin that tries to open a TCP connection. Its component imports
//! `wasi:sockets`, which the sandbox links with nothing granted, so it
//! loads and its connection is refused: it reports `open-socket denied`.

use capstan_plugin_sdk::v0_1::{App, Facts, Info, Plugin, PluginError, Values, export_plugin};

struct NetClient;

impl Plugin for NetClient {
    fn info() -> Info {
        Info::new("net-client", "0.0.1").serving_charts(["any"])
    }

    fn overrides(_app: &App, _facts: &Facts, _chart: &str) -> Result<Values, PluginError> {
        match std::net::TcpStream::connect("127.0.0.1:22") {
            Ok(_) => Ok(Values::new().set("connected", true)),
            Err(e) => Err(PluginError::Failed(format!("open-socket denied: {e}"))),
        }
    }
}

export_plugin!(NetClient);
