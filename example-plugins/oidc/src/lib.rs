//! OIDC plugin (contract 0.2): values for the Dex identity provider
//! (chart `dex`, renamed `oidc-dex` in the app's version 2), a CA mirrored
//! in before apply, state carried from pre-apply to post-apply, and user
//! overrides moved to the renamed chart on update.
//!
//! Modelled on what StarlingX's oidc-auth app computes for Dex, with what
//! its plugins did behind the platform's back asked of the host instead:
//!
//! - Overrides (both chart names): `issuer` is
//!   `https://<OAM floating address>:30556/dex` (an IPv6 address within
//!   brackets); `web.tlsMinVersion` and `web.tlsCipherSuites` come from the
//!   service parameters `platform`/`config`/`tls-min-version` and
//!   `tls-ciphers` (comma-separated); `replicaCount` is the number of ready
//!   controllers; `clientSecret` is filled in by the host from a 32-character
//!   alphanumeric password it generates once for the app (`client-secret`),
//!   so the plugin never sees it.
//! - `pre-apply` asks the host to mirror the platform CA Secret
//!   (`platform-ca/ca`) into the app's namespace as `oidc/oidc-ca`, and
//!   leaves the state `pre-apply-ran`. An automatic apply while the platform
//!   is still being installed is vetoed, as StarlingX's check does.
//! - `post-apply` vetoes unless it is handed that state.
//! - `pre-update` from 1.x to 2.x moves the user overrides of `dex` to
//!   `oidc-dex`: a merge patch of `oidc-dex` with them, and one on `dex`
//!   that deletes each of their top-level keys.
//!
//! It reads the sections `system`, `hosts`, `networks` and
//! `service-parameters`.

use capstan_plugin_sdk::v0_2::export_plugin;
use capstan_plugin_sdk::v0_2::{
    Answer, Charset, ChartCall, Facts, Hook, HookAnswer, HookCall, Info, Mode, Plugin, PluginError,
    Section, Shape, Values, key, log, merge_patch_deleting,
};

/// The Dex chart of the app's version 1.
pub const DEX: &str = "dex";
/// The same chart, renamed in the app's version 2.
pub const OIDC_DEX: &str = "oidc-dex";
/// The app's namespace, where the CA is mirrored to.
pub const NAMESPACE: &str = "oidc";
/// The NodePort Dex is reached on.
pub const NODE_PORT: u16 = 30556;
/// The generated password Dex's client authenticates with.
pub const CLIENT_SECRET: &str = "client-secret";
/// The state `pre-apply` leaves for `post-apply`.
pub const PRE_APPLY_STATE: &[u8] = b"pre-apply-ran";
/// The lowest TLS version when the platform sets none.
pub const DEFAULT_TLS_MIN_VERSION: &str = "VersionTLS12";

/// The OIDC plugin.
pub struct Oidc;

impl Plugin for Oidc {
    fn info() -> Info {
        Info::new("oidc", env!("CARGO_PKG_VERSION"))
            .serving_charts([DEX, OIDC_DEX])
            .with_hooks([Hook::PreApply, Hook::PostApply, Hook::PreUpdate])
            .reading([
                Section::System,
                Section::Hosts,
                Section::Networks,
                Section::ServiceParameters,
            ])
    }

    fn overrides(call: &ChartCall, facts: &Facts) -> Result<Answer, PluginError> {
        match call.chart.as_str() {
            DEX | OIDC_DEX => dex(facts),
            other => Err(PluginError::Unsupported(format!("chart {other}"))),
        }
    }

    fn lifecycle(call: &HookCall, facts: &Facts) -> Result<HookAnswer, PluginError> {
        match call.hook {
            Hook::PreApply => pre_apply(call, facts),
            Hook::PostApply => Ok(post_apply(call)),
            Hook::PreUpdate => Ok(pre_update(call)),
            _ => Ok(HookAnswer::proceed()),
        }
    }
}

export_plugin!(Oidc);

/// The issuer URL: Dex's NodePort on the OAM floating address.
///
/// # Errors
/// [`PluginError::InvalidFacts`] when the networks were not declared, or
/// there is no OAM network or it has no floating address.
pub fn issuer(facts: &Facts) -> Result<String, PluginError> {
    let host = facts.network("oam")?.floating_url_host()?;
    Ok(format!("https://{host}:{NODE_PORT}/dex"))
}

fn dex(facts: &Facts) -> Result<Answer, PluginError> {
    let min_version = facts
        .service_parameter("platform", "config", "tls-min-version")?
        .unwrap_or(DEFAULT_TLS_MIN_VERSION);
    let mut values = Values::new()
        .set("issuer", issuer(facts)?)
        .set("replicaCount", facts.ready_controllers()?)
        .set("web.tlsMinVersion", min_version);
    match facts.service_parameter_list("platform", "config", "tls-ciphers")? {
        Some(ciphers) if !ciphers.is_empty() => {
            values = values.set("web.tlsCipherSuites", ciphers);
        }
        _ => log::debug("no tls-ciphers service parameter; Dex keeps its default suites"),
    }
    Ok(Answer::new(values)
        .generate(CLIENT_SECRET, Shape::password(32, Charset::Alphanumeric))
        .secret_generated("clientSecret", CLIENT_SECRET, key::PASSWORD))
}

fn pre_apply(call: &HookCall, facts: &Facts) -> Result<HookAnswer, PluginError> {
    if call.mode == Mode::Auto && facts.require_system()?.bootstrap_in_progress {
        return Ok(HookAnswer::veto(
            "the platform is still being installed: apply oidc by hand once it is done",
        ));
    }
    Ok(HookAnswer::proceed()
        .mirror_secret("platform-ca", "ca", NAMESPACE, "oidc-ca")
        .with_state(PRE_APPLY_STATE))
}

fn post_apply(call: &HookCall) -> HookAnswer {
    if call.state.as_deref() == Some(PRE_APPLY_STATE) {
        HookAnswer::proceed()
    } else {
        HookAnswer::veto("post-apply was not handed the state pre-apply leaves: did pre-apply run?")
    }
}

fn pre_update(call: &HookCall) -> HookAnswer {
    if !call.is_update_between(1, 2) {
        return HookAnswer::proceed();
    }
    let Some(old) = call
        .user_overrides_of(DEX)
        .filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
    else {
        return HookAnswer::proceed();
    };
    log::info(&format!(
        "moving the user overrides of chart {DEX} to {OIDC_DEX}"
    ));
    HookAnswer::proceed()
        .patch_overrides(OIDC_DEX, old.clone())
        .patch_overrides(DEX, merge_patch_deleting(old))
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_plugin_sdk::v0_2::{
        Action, AddressFamily, GeneratedKey, Mirror, MirrorKind, Network, OverridePatch,
        SecretSource, testing,
    };
    use serde_json::json;

    fn values(facts: &Facts, chart: &str) -> Values {
        testing::overrides::<Oidc>(&testing::chart_call(chart), facts)
            .unwrap()
            .values
    }

    fn with_tls(facts: Facts) -> Facts {
        facts
            .with_service_parameter("platform", "config", "tls-min-version", "VersionTLS13")
            .with_service_parameter(
                "platform",
                "config",
                "tls-ciphers",
                "TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384",
            )
    }

    #[test]
    fn the_issuer_is_on_the_oam_floating_address() {
        let v = values(&testing::simplex(), DEX);
        assert_eq!(
            v.get("issuer"),
            Some(&json!("https://10.10.10.2:30556/dex"))
        );
    }

    #[test]
    fn an_ipv6_issuer_is_within_brackets() {
        let facts = testing::duplex().with_network(Network::new(
            "oam",
            AddressFamily::Ipv6,
            "fd00::/64",
            "fd00::2",
        ));
        assert_eq!(
            values(&facts, DEX).get("issuer"),
            Some(&json!("https://[fd00::2]:30556/dex"))
        );
    }

    #[test]
    fn tls_settings_come_from_the_service_parameters() {
        let v = values(&with_tls(testing::simplex()), DEX);
        assert_eq!(v.get("web.tlsMinVersion"), Some(&json!("VersionTLS13")));
        assert_eq!(
            v.get("web.tlsCipherSuites"),
            Some(&json!(["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"]))
        );
    }

    #[test]
    fn without_service_parameters_tls_keeps_its_defaults() {
        let v = values(&testing::simplex(), DEX);
        assert_eq!(v.get("web.tlsMinVersion"), Some(&json!("VersionTLS12")));
        assert_eq!(v.get("web.tlsCipherSuites"), None);
    }

    #[test]
    fn replicas_follow_ready_controllers() {
        assert_eq!(
            values(&testing::simplex(), DEX).get("replicaCount"),
            Some(&json!(1))
        );
        assert_eq!(
            values(&testing::standard(3, 2), OIDC_DEX).get("replicaCount"),
            Some(&json!(3))
        );
    }

    #[test]
    fn the_client_secret_is_a_generated_password_filled_in_by_the_host() {
        let answer =
            testing::overrides::<Oidc>(&testing::chart_call(DEX), &testing::simplex()).unwrap();
        assert_eq!(
            answer.generate[0].shape,
            Shape::password(32, Charset::Alphanumeric)
        );
        assert_eq!(answer.generate[0].name, "client-secret");
        assert_eq!(
            answer.secret_at("clientSecret"),
            Some(&SecretSource::Generated(GeneratedKey {
                name: "client-secret".into(),
                key: "password".into(),
            }))
        );
        assert_eq!(answer.values.get("clientSecret"), None);
    }

    #[test]
    fn both_chart_names_get_the_same_answer() {
        let facts = with_tls(testing::duplex());
        assert_eq!(
            testing::overrides::<Oidc>(&testing::chart_call(DEX), &facts),
            testing::overrides::<Oidc>(&testing::chart_call(OIDC_DEX), &facts)
        );
        assert!(matches!(
            testing::overrides::<Oidc>(&testing::chart_call("nginx"), &facts),
            Err(PluginError::Unsupported(_))
        ));
    }

    #[test]
    fn no_oam_network_is_invalid_facts() {
        let mut facts = testing::simplex();
        facts.networks = Some(Vec::new());
        assert_eq!(
            testing::overrides::<Oidc>(&testing::chart_call(DEX), &facts),
            Err(PluginError::InvalidFacts(
                "no network oam in the facts".into()
            ))
        );
    }

    #[test]
    fn pre_apply_mirrors_the_ca_and_leaves_state() {
        let answer =
            testing::lifecycle::<Oidc>(&testing::hook_call(Hook::PreApply), &testing::simplex())
                .unwrap();
        assert!(!answer.is_veto());
        assert_eq!(
            answer.actions,
            vec![Action::Mirror(Mirror {
                kind: MirrorKind::Secret,
                from_namespace: "platform-ca".into(),
                from_name: "ca".into(),
                to_namespace: "oidc".into(),
                to_name: "oidc-ca".into(),
            })]
        );
        assert_eq!(answer.state.as_deref(), Some(&b"pre-apply-ran"[..]));
    }

    #[test]
    fn an_automatic_apply_during_bootstrap_is_vetoed() {
        let mut facts = testing::simplex();
        if let Some(system) = facts.system.as_mut() {
            system.bootstrap_in_progress = true;
        }
        let auto = testing::hook_call(Hook::PreApply).auto();
        assert!(testing::lifecycle::<Oidc>(&auto, &facts).unwrap().is_veto());
        let manual = testing::hook_call(Hook::PreApply);
        assert!(
            !testing::lifecycle::<Oidc>(&manual, &facts)
                .unwrap()
                .is_veto()
        );
    }

    #[test]
    fn post_apply_needs_the_state_pre_apply_left() {
        let facts = testing::simplex();
        let handed = testing::hook_call(Hook::PostApply).with_state(PRE_APPLY_STATE);
        assert_eq!(
            testing::lifecycle::<Oidc>(&handed, &facts),
            Ok(HookAnswer::proceed())
        );
        for call in [
            testing::hook_call(Hook::PostApply),
            testing::hook_call(Hook::PostApply).with_state("something-else"),
        ] {
            let answer = testing::lifecycle::<Oidc>(&call, &facts).unwrap();
            assert!(
                answer
                    .veto_reason()
                    .is_some_and(|r| r.contains("pre-apply"))
            );
        }
    }

    #[test]
    fn an_update_to_2_moves_the_dex_overrides_to_oidc_dex() {
        let old = json!({"replicaCount": 3, "web": {"tlsMinVersion": "VersionTLS13"}});
        let call = testing::hook_call(Hook::PreUpdate)
            .with_versions("1.4.0", "2.0.0")
            .with_user_overrides(DEX, old.clone())
            .with_user_overrides(OIDC_DEX, json!({}));
        let answer = testing::lifecycle::<Oidc>(&call, &testing::duplex()).unwrap();
        assert!(!answer.is_veto());
        assert_eq!(
            answer.actions,
            vec![
                Action::PatchOverrides(OverridePatch {
                    chart: "oidc-dex".into(),
                    patch: old,
                }),
                Action::PatchOverrides(OverridePatch {
                    chart: "dex".into(),
                    patch: json!({"replicaCount": null, "web": null}),
                }),
            ]
        );
    }

    #[test]
    fn other_updates_and_empty_overrides_move_nothing() {
        let facts = testing::duplex();
        let cases = [
            testing::hook_call(Hook::PreUpdate)
                .with_versions("1.4.0", "1.5.0")
                .with_user_overrides(DEX, json!({"a": 1})),
            testing::hook_call(Hook::PreUpdate)
                .with_versions("2.0.0", "2.1.0")
                .with_user_overrides(DEX, json!({"a": 1})),
            testing::hook_call(Hook::PreUpdate)
                .with_versions("1.4.0", "2.0.0")
                .with_user_overrides(DEX, json!({})),
            testing::hook_call(Hook::PreUpdate).with_versions("1.4.0", "2.0.0"),
        ];
        for call in cases {
            assert_eq!(
                testing::lifecycle::<Oidc>(&call, &facts),
                Ok(HookAnswer::proceed()),
                "{call:?}"
            );
        }
    }

    #[test]
    fn declares_what_it_reads() {
        let info = testing::info::<Oidc>();
        assert_eq!(
            info.sections,
            vec![
                Section::System,
                Section::Hosts,
                Section::Networks,
                Section::ServiceParameters
            ]
        );
        assert_eq!(info.charts, vec!["dex".to_string(), "oidc-dex".to_string()]);
    }
}
