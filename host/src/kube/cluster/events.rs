//! Owns the Kubernetes Events capstan writes: one `core/v1` Event per
//! [`ReleaseEvent`], on the release's inventory Secret (the one object
//! every release has in its namespace), so `kubectl get events -n NS`
//! and `kubectl describe secret capstan.release.v1.APP.CHART` show it, as
//! Flux's controllers write theirs on the objects they reconcile.
//!
//! Pure but for [`record`]; each Event has a name of its own (the Secret's
//! and the time in hex, as client-go's recorder names them), so nothing
//! is overwritten and the API server's TTL removes them.

use serde_json::{Value, json};

use super::client::Cluster;
use super::discovery::Kind;
use super::error::Error;
use super::inventory;
use crate::kube::ReleaseEvent;
use crate::model::ObjectRef;

/// The component Events are reported by.
pub const COMPONENT: &str = "capstan";

/// The longest message written: `events.k8s.io/v1`, the newer view of the
/// same Events, limits its `note` to 1 KiB.
const MAX_MESSAGE: usize = 1024;

/// The Event for `event` at `now` (RFC 3339, seconds) with the name suffix
/// `unique`.
pub fn body(event: &ReleaseEvent, now: &str, unique: u128) -> (ObjectRef, Value) {
    let secret = inventory::secret_name(&event.release);
    let name = format!("{secret}.{unique:x}");
    let mut message = event.message.clone();
    if message.len() > MAX_MESSAGE {
        let mut cut = MAX_MESSAGE - 3;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push_str("...");
    }
    let namespace = event.release.namespace.clone();
    let id = ObjectRef {
        api_version: "v1".into(),
        kind: "Event".into(),
        namespace: Some(namespace.clone()),
        name: name.clone(),
    };
    let body = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                inventory::APP_LABEL: event.release.app,
                inventory::CHART_LABEL: event.release.chart,
            },
        },
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Secret",
            "namespace": namespace,
            "name": secret,
        },
        "reason": event.reason,
        "message": message,
        "type": if event.warning { "Warning" } else { "Normal" },
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    });
    (id, body)
}

/// Writes `event` as a new Event.
///
/// # Errors
/// The request's error.
pub async fn record(cluster: &Cluster, event: &ReleaseEvent) -> Result<(), Error> {
    let now = k8s_openapi::jiff::Timestamp::now();
    let stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let unique = u128::try_from(now.as_nanosecond()).unwrap_or_default();
    let (id, body) = body(event, &stamp, unique);
    let kind = Kind::core("Event", "events");
    cluster
        .apply(&kind, id.namespace.as_deref(), &id, &body, false, true)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::Release;

    fn event(message: &str) -> ReleaseEvent {
        ReleaseEvent {
            release: Release {
                app: "shop".into(),
                chart: "db".into(),
                namespace: "shop-ns".into(),
                release_name: "shop-db".into(),
            },
            reason: "ReapplyNeeded".into(),
            message: message.into(),
            warning: false,
        }
    }

    #[test]
    fn an_event_is_on_the_inventory_secret_with_a_name_of_its_own() {
        let (id, body) = body(&event("facts changed"), "2026-12-03T18:00:00Z", 0xabc);
        assert_eq!(id.name, "capstan.release.v1.shop.db.abc");
        assert_eq!(id.namespace.as_deref(), Some("shop-ns"));
        assert_eq!(
            body["involvedObject"],
            json!({"apiVersion": "v1", "kind": "Secret", "namespace": "shop-ns",
                   "name": "capstan.release.v1.shop.db"})
        );
        assert_eq!(body["type"], "Normal");
        assert_eq!(body["reason"], "ReapplyNeeded");
        assert_eq!(body["message"], "facts changed");
        assert_eq!(body["firstTimestamp"], "2026-12-03T18:00:00Z");
        assert_eq!(body["metadata"]["labels"][inventory::APP_LABEL], "shop");
    }

    #[test]
    fn a_long_message_is_cut_on_a_character_boundary() {
        let long = "é".repeat(1000);
        let (_, body) = body(&event(&long), "2026-12-03T18:00:00Z", 1);
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.len() <= MAX_MESSAGE, "{}", message.len());
        assert!(message.ends_with("..."));
        let mut warning = event("x");
        warning.warning = true;
        assert_eq!(body_type(&warning), "Warning");
    }

    fn body_type(event: &ReleaseEvent) -> String {
        body(event, "t", 0).1["type"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}
