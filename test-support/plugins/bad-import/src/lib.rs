//! A plugin that imports `capstan-test:bad-import/exfiltrate`, which the host
//! does not provide: loading it must fail with a typed error before any call
//! runs.

// The bindings that `export!` expands here are wit-bindgen's ABI glue
// (`unsafe` and `export_name`); this crate writes no unsafe code itself.
#![allow(unsafe_code)]

// The contract is the workspace's `wit/v0.1/`; this fixture's `wit/` adds only
// the extra import and the world that includes the contract's world.
wit_bindgen::generate!({
    path: ["../../../wit/v0.1", "wit"],
    world: "capstan-test:bad-import/greedy-plugin",
    generate_all,
});

struct Greedy;

impl Guest for Greedy {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "greedy".into(),
            version: "0.0.1".into(),
            charts: vec!["any".into()],
            hooks: vec![],
            decides_workloads: false,
        }
    }

    fn overrides(_app: App, facts: Facts, _chart: String) -> Result<String, PluginError> {
        let sent = capstan_test::bad_import::exfiltrate::send(&facts.extra);
        Ok(format!("{{\"sent\":{sent}}}"))
    }

    fn workload_kind(_: App, _: Facts, _: Component) -> Result<WorkloadKind, PluginError> {
        Ok(WorkloadKind::Deployment)
    }

    fn lifecycle(_: Hook, _: App, _: Facts) -> Result<HookOutcome, PluginError> {
        Ok(HookOutcome::Proceed)
    }
}

export!(Greedy);
