//! Certificate check plugin (contract 0.2): a `status` hook that proves
//! cert-manager issues certificates before the release `issuer-test` is
//! called ready.
//!
//! Modelled on what StarlingX's cert-manager app checks once its release is
//! up (it applies a self-signed Issuer and a Certificate, then polls for the
//! Certificate's Secret), without touching the cluster itself: the plugin
//! asks the host to ensure the two objects and to observe the Secret, and
//! answers from what the host observed.
//!
//! - First `status` call for `issuer-test` (the Secret not yet observed):
//!   ensure the Issuer `capstan-test-issuer` (self-signed) and the
//!   Certificate `capstan-test-cert`, observe the Secret
//!   `capstan-test-cert-tls`, and ask again in a second.
//! - Later calls: ready once the Secret exists; otherwise ask again in a
//!   second, and after [`MAX_CHECKS`] checks, fail.
//!
//! Where the objects go: in the namespace [`NAMESPACE`] (`certs`), a
//! constant. A hook call does not say which namespace a release is
//! installed in, and the observed objects are only those this plugin named
//! itself, so the plugin names the namespace and the app must install
//! `issuer-test` there.
//!
//! How checks are counted: in the hook's state (`checks=N`), which each
//! answer hands on. The contract documents state for a pre hook's post
//! hook; where the host does not hand it from one `status` call to the
//! next, every call counts as the first retry and the host's own deadline
//! for the release is what ends the wait.
//!
//! It reads no fact section.

use capstan_plugin_sdk::v0_2::export_plugin;
use capstan_plugin_sdk::v0_2::{
    Facts, Hook, HookAnswer, HookCall, Info, ObjectRef, Plugin, PluginError, log,
};
use serde_json::{Value, json};

/// The release whose status this plugin answers.
pub const RELEASE: &str = "issuer-test";
/// The namespace of the test objects.
pub const NAMESPACE: &str = "certs";
/// The self-signed Issuer.
pub const ISSUER: &str = "capstan-test-issuer";
/// The Certificate.
pub const CERTIFICATE: &str = "capstan-test-cert";
/// The Secret cert-manager writes the Certificate's key pair to.
pub const SECRET: &str = "capstan-test-cert-tls";
/// The Certificate's only DNS name.
pub const DNS_NAME: &str = "test.example.invalid";
/// Checks without the Secret before the release is failed.
pub const MAX_CHECKS: u32 = 60;
/// Seconds between two checks.
pub const CHECK_EVERY_SECS: u32 = 1;

/// The certificate check plugin.
pub struct Certs;

impl Plugin for Certs {
    fn info() -> Info {
        Info::new("certs", env!("CARGO_PKG_VERSION")).with_hooks([Hook::Status])
    }

    fn lifecycle(call: &HookCall, _facts: &Facts) -> Result<HookAnswer, PluginError> {
        if call.hook != Hook::Status || call.release.as_deref() != Some(RELEASE) {
            return Ok(HookAnswer::proceed());
        }
        Ok(status(call))
    }
}

export_plugin!(Certs);

/// The Secret the Certificate is issued into.
pub fn secret() -> ObjectRef {
    ObjectRef::namespaced("v1", "Secret", NAMESPACE, SECRET)
}

/// The self-signed Issuer, as the host is to apply it.
pub fn issuer() -> Value {
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Issuer",
        "metadata": {"name": ISSUER, "namespace": NAMESPACE},
        "spec": {"selfSigned": {}},
    })
}

/// The Certificate, as the host is to apply it.
pub fn certificate() -> Value {
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": CERTIFICATE, "namespace": NAMESPACE},
        "spec": {
            "secretName": SECRET,
            "issuerRef": {"name": ISSUER, "kind": "Issuer", "group": "cert-manager.io"},
            "dnsNames": [DNS_NAME],
        },
    })
}

fn status(call: &HookCall) -> HookAnswer {
    let observed = call.observed(&secret());
    if observed.is_some_and(|o| o.exists) {
        log::info(&format!("secret {NAMESPACE}/{SECRET} issued"));
        return HookAnswer::ready();
    }
    let checks = checks_so_far(call.state.as_deref());
    if checks >= MAX_CHECKS {
        return HookAnswer::failed(format!(
            "certificate {NAMESPACE}/{CERTIFICATE} was not issued into secret {SECRET} \
             after {checks} checks: is cert-manager running?"
        ));
    }
    let answer = HookAnswer::retry_after(CHECK_EVERY_SECS)
        .with_state(format!("checks={}", checks + 1).into_bytes());
    if observed.is_some() {
        return answer;
    }
    log::info(&format!(
        "asking for issuer {ISSUER} and certificate {CERTIFICATE} in {NAMESPACE}"
    ));
    answer
        .ensure(issuer())
        .ensure(certificate())
        .observe(secret())
}

/// The checks counted in the state an earlier answer left: 0 when there is
/// none, or when it is not this plugin's `checks=N` (logged).
fn checks_so_far(state: Option<&[u8]>) -> u32 {
    let Some(state) = state else {
        return 0;
    };
    let parsed = std::str::from_utf8(state)
        .ok()
        .and_then(|s| s.strip_prefix("checks="))
        .and_then(|n| n.parse().ok());
    parsed.unwrap_or_else(|| {
        log::warn("hook state is not checks=N; counting checks anew");
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_plugin_sdk::v0_2::{Action, ObservedObject, ReleaseStatus, testing};

    fn status_call() -> HookCall {
        testing::hook_call(Hook::Status).with_release(RELEASE)
    }

    fn answer(call: &HookCall) -> HookAnswer {
        testing::lifecycle::<Certs>(call, &testing::simplex()).unwrap()
    }

    #[test]
    fn the_first_check_ensures_the_issuer_and_certificate_and_observes_the_secret() {
        let answer = answer(&status_call());
        assert!(!answer.is_veto());
        assert_eq!(answer.status, Some(ReleaseStatus::RetryAfter(1)));
        assert_eq!(
            answer.actions,
            vec![
                Action::Ensure(issuer()),
                Action::Ensure(certificate()),
                Action::Observe(ObjectRef::namespaced(
                    "v1",
                    "Secret",
                    "certs",
                    "capstan-test-cert-tls"
                )),
            ]
        );
        assert_eq!(answer.state.as_deref(), Some(&b"checks=1"[..]));
    }

    #[test]
    fn the_certificate_names_its_issuer_secret_and_dns_name() {
        let cert = certificate();
        assert_eq!(
            cert["spec"]["issuerRef"]["name"],
            json!("capstan-test-issuer")
        );
        assert_eq!(cert["spec"]["secretName"], json!("capstan-test-cert-tls"));
        assert_eq!(cert["spec"]["dnsNames"], json!(["test.example.invalid"]));
        assert_eq!(issuer()["spec"], json!({"selfSigned": {}}));
    }

    #[test]
    fn a_missing_secret_is_checked_again_without_new_actions() {
        let call = status_call()
            .with_observed(ObservedObject::missing(secret()))
            .with_state("checks=5");
        let answer = answer(&call);
        assert_eq!(answer.status, Some(ReleaseStatus::RetryAfter(1)));
        assert!(answer.actions.is_empty());
        assert_eq!(answer.state.as_deref(), Some(&b"checks=6"[..]));
    }

    #[test]
    fn the_release_is_ready_once_the_secret_exists() {
        for observed in [
            ObservedObject::ready(secret()),
            ObservedObject::not_ready(secret()),
        ] {
            let call = status_call().with_observed(observed).with_state("checks=3");
            let answer = answer(&call);
            assert_eq!(answer.status, Some(ReleaseStatus::Ready));
            assert!(answer.actions.is_empty());
        }
    }

    #[test]
    fn sixty_checks_without_the_secret_fail_the_release() {
        let call = status_call()
            .with_observed(ObservedObject::missing(secret()))
            .with_state(format!("checks={MAX_CHECKS}"));
        match answer(&call).status {
            Some(ReleaseStatus::Failed(reason)) => {
                assert!(reason.contains("after 60 checks"), "{reason}");
                assert!(reason.contains("certs/capstan-test-cert"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        let call = status_call()
            .with_observed(ObservedObject::missing(secret()))
            .with_state(format!("checks={}", MAX_CHECKS - 1));
        assert_eq!(answer(&call).status, Some(ReleaseStatus::RetryAfter(1)));
    }

    #[test]
    fn state_that_is_not_a_count_starts_the_count_anew() {
        testing::take_logs();
        let call = status_call()
            .with_observed(ObservedObject::missing(secret()))
            .with_state(vec![0xff, 0x00]);
        assert_eq!(answer(&call).state.as_deref(), Some(&b"checks=1"[..]));
        assert!(
            testing::take_logs()
                .iter()
                .any(|(_, line)| line.contains("counting checks anew"))
        );
    }

    #[test]
    fn other_releases_and_hooks_proceed_as_ready() {
        let other = testing::hook_call(Hook::Status).with_release("web");
        let answer_other = answer(&other);
        assert_eq!(answer_other, HookAnswer::proceed());
        assert_eq!(
            answer(&testing::hook_call(Hook::PostApply)),
            HookAnswer::proceed()
        );
    }

    #[test]
    fn declares_the_status_hook_and_reads_nothing() {
        let info = testing::info::<Certs>();
        assert_eq!(info.hooks, vec![Hook::Status]);
        assert!(info.sections.is_empty());
        assert!(info.charts.is_empty());
        assert!(matches!(
            testing::overrides::<Certs>(&testing::chart_call(RELEASE), &testing::simplex()),
            Err(PluginError::Unsupported(_))
        ));
    }
}
