//! Owns the release inventory: what capstan applied for one release, as
//! the cluster itself records it, and the ownership metadata stamped on
//! every applied object.
//!
//! One Secret per release, like Helm's release Secrets, in the release's
//! namespace:
//!
//! - name `capstan.release.v1.APP.CHART` ([`secret_name`]): a fixed prefix
//!   with a format version, then the app and the chart. Both are DNS-1123
//!   labels, which hold no `.`, so the name parses back unambiguously and
//!   stays a valid Secret name (at most 19 + 63 + 1 + 63 characters);
//! - type `capstan.dev/release.v1` ([`SECRET_TYPE`]), labels
//!   `app.capstan.dev/app`, `app.capstan.dev/chart` and
//!   `app.capstan.dev/inventory: "true"`;
//! - `data.release`: JSON ([`Inventory`]) with the object ids, each with its
//!   apply method and whether it is known applied or only about to be.
//!
//! The apply writes entries as `pending` before it sends a stage and marks
//! them `applied` after, so after a crash or a failure the inventory names
//! every object that may exist: nothing capstan created is ever orphaned,
//! and what is certain is told apart from what may have happened. An
//! entry leaves the inventory only once a GET of its object gives 404.
//!
//! Pure: encoding and decoding; the I/O is in [`super::apply`].

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::kube::{ObjectRef, Release, Resource};

/// The Secret type of a release inventory.
pub const SECRET_TYPE: &str = "capstan.dev/release.v1";
/// Label naming the app, on every applied object and on the inventory.
pub const APP_LABEL: &str = "app.capstan.dev/app";
/// Label naming the chart, on every applied object and on the inventory.
pub const CHART_LABEL: &str = "app.capstan.dev/chart";
/// Annotation `APP/CHART` naming the release of an applied object.
pub const RELEASE_ANNOTATION: &str = "app.capstan.dev/release";
/// Label marking inventory Secrets.
pub const INVENTORY_LABEL: &str = "app.capstan.dev/inventory";
/// The key of `data` holding the inventory JSON.
pub const DATA_KEY: &str = "release";
/// Version of the JSON in [`DATA_KEY`]; readers accept newer documents
/// and ignore fields they do not know.
pub const FORMAT_VERSION: u32 = 1;

/// The inventory Secret's name for `release`: `capstan.release.v1.APP.CHART`.
pub fn secret_name(release: &Release) -> String {
    format!("capstan.release.v1.{}.{}", release.app, release.chart)
}

/// How an object was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    /// Server-side apply under field manager `capstan`.
    ServerSideApply,
}

/// Whether an entry's object is known to be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryState {
    /// Recorded before its apply was sent: it may or may not exist.
    Pending,
    /// The server accepted its apply.
    Applied,
}

/// One object of the inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// `apiVersion` it was applied with.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// The namespace it lives in; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
    /// How it was written.
    pub method: Method,
    /// Known applied, or only about to be.
    pub state: EntryState,
    /// Left by a remove unless purged: a CRD from the chart's `crds/`
    /// folder ([`crate::kube::Resource::is_install_only`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub install_only: bool,
}

impl Entry {
    /// The object's identity.
    pub fn id(&self) -> ObjectRef {
        ObjectRef {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// What the cluster records for one release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inventory {
    /// [`FORMAT_VERSION`] when written.
    pub version: u32,
    /// The app.
    pub app: String,
    /// The chart.
    pub chart: String,
    /// The release's namespace (where this Secret lives).
    pub namespace: String,
    /// The Helm release name.
    pub release_name: String,
    /// How many applies of the release wrote or deleted something, the
    /// first being 1 (an apply that changes nothing does not count).
    #[serde(default)]
    pub revision: u64,
    /// The objects, in the order they were first recorded.
    #[serde(default)]
    pub objects: Vec<Entry>,
}

impl Inventory {
    /// An empty inventory for `release`, revision 0.
    pub fn new(release: &Release) -> Self {
        Inventory {
            version: FORMAT_VERSION,
            app: release.app.clone(),
            chart: release.chart.clone(),
            namespace: release.namespace.clone(),
            release_name: release.release_name.clone(),
            revision: 0,
            objects: Vec::new(),
        }
    }

    /// Records `id` as about to be applied, unless it is there (matched
    /// by group, kind, namespace and name); a recorded entry takes `id`'s
    /// API version and keeps its state.
    pub fn add_pending(&mut self, id: &ObjectRef) {
        match self.position(id) {
            Some(index) => self.objects[index].api_version = id.api_version.clone(),
            None => self.objects.push(Entry {
                api_version: id.api_version.clone(),
                kind: id.kind.clone(),
                namespace: id.namespace.clone(),
                name: id.name.clone(),
                method: Method::ServerSideApply,
                state: EntryState::Pending,
                install_only: false,
            }),
        }
    }

    /// Records whether `id` (recorded already) is install-only.
    pub fn set_install_only(&mut self, id: &ObjectRef, install_only: bool) {
        if let Some(index) = self.position(id) {
            self.objects[index].install_only = install_only;
        }
    }

    /// Whether `id` is recorded as install-only.
    pub fn is_install_only(&self, id: &ObjectRef) -> bool {
        self.position(id)
            .is_some_and(|index| self.objects[index].install_only)
    }

    /// Marks `id` applied (adding it if missing).
    pub fn mark_applied(&mut self, id: &ObjectRef) {
        self.add_pending(id);
        if let Some(index) = self.position(id) {
            self.objects[index].state = EntryState::Applied;
        }
    }

    /// Forgets `id`; call only once its object is confirmed gone (or
    /// deliberately left behind, for `keep`).
    pub fn forget(&mut self, id: &ObjectRef) {
        if let Some(index) = self.position(id) {
            self.objects.remove(index);
        }
    }

    /// Whether `id` is recorded (in any state).
    pub fn contains(&self, id: &ObjectRef) -> bool {
        self.position(id).is_some()
    }

    /// The recorded objects as identity-only resources (apiVersion, kind,
    /// metadata.name and namespace), which is what
    /// [`crate::kube::plan_apply`] needs to find the prune set.
    pub fn resources(&self) -> Vec<Resource> {
        self.objects
            .iter()
            .filter_map(|entry| {
                let mut metadata = json!({"name": entry.name});
                if let Some(namespace) = &entry.namespace {
                    metadata["namespace"] = json!(namespace);
                }
                let object = json!({
                    "apiVersion": entry.api_version,
                    "kind": entry.kind,
                    "metadata": metadata,
                });
                let source = format!("inventory of {}/{}", self.app, self.chart);
                Resource::from_value(object, source).ok()
            })
            .collect()
    }

    fn position(&self, id: &ObjectRef) -> Option<usize> {
        let key = id.key();
        self.objects.iter().position(|e| e.id().key() == key)
    }

    /// The inventory as the Secret to apply.
    pub fn to_secret(&self) -> Value {
        let text = serde_json::to_string(self).unwrap_or_default();
        let encoded = base64::engine::general_purpose::STANDARD.encode(text);
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "type": SECRET_TYPE,
            "metadata": {
                "name": format!("capstan.release.v1.{}.{}", self.app, self.chart),
                "namespace": self.namespace,
                "labels": {
                    APP_LABEL: self.app,
                    CHART_LABEL: self.chart,
                    INVENTORY_LABEL: "true",
                },
            },
            "data": { DATA_KEY: encoded },
        })
    }

    /// Reads an inventory back from its live Secret.
    ///
    /// # Errors
    /// A [`DecodeError`] saying what is wrong: another type, no
    /// `data.release`, bad base64, or JSON that is not an inventory.
    pub fn from_secret(secret: &Value) -> Result<Inventory, DecodeError> {
        let kind = secret.get("type").and_then(Value::as_str).unwrap_or("");
        if kind != SECRET_TYPE {
            return Err(DecodeError::WrongType(kind.to_string()));
        }
        let data = secret
            .pointer(&format!("/data/{DATA_KEY}"))
            .and_then(Value::as_str)
            .ok_or(DecodeError::NoData)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(DecodeError::Base64)?;
        serde_json::from_slice(&bytes).map_err(DecodeError::Json)
    }
}

/// Why an inventory Secret could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The Secret has another type: it is not an inventory.
    #[error("secret has type {0:?}, not {SECRET_TYPE}")]
    WrongType(String),
    /// No `data.release`.
    #[error("secret has no data.{DATA_KEY}")]
    NoData,
    /// `data.release` is not base64.
    #[error("data.{DATA_KEY} is not base64")]
    Base64(#[source] base64::DecodeError),
    /// The decoded text is not an inventory.
    #[error("data.{DATA_KEY} is not an inventory")]
    Json(#[source] serde_json::Error),
}

/// Who owns a live object, as its ownership metadata says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// It carries the release annotation of `APP/CHART`.
    Release(String),
    /// It carries capstan's app label of another app (and chart).
    App {
        /// The app label.
        app: String,
        /// The chart label, if any.
        chart: Option<String>,
    },
    /// No capstan metadata: someone else created it.
    NotCapstan,
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::Release(release) => write!(f, "owned by capstan release {release}"),
            Owner::App {
                app,
                chart: Some(chart),
            } => write!(f, "owned by app {app} (chart {chart})"),
            Owner::App { app, chart: None } => write!(f, "owned by app {app}"),
            Owner::NotCapstan => f.write_str("not created by capstan"),
        }
    }
}

/// Who owns `live` according to its labels and annotations.
pub fn owner(live: &Value) -> Owner {
    let annotation = live
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(RELEASE_ANNOTATION))
        .and_then(Value::as_str);
    let label = |key: &str| {
        live.pointer("/metadata/labels")
            .and_then(|l| l.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    match (annotation, label(APP_LABEL)) {
        (Some(release), _) => Owner::Release(release.to_string()),
        (None, Some(app)) => Owner::App {
            app,
            chart: label(CHART_LABEL),
        },
        (None, None) => Owner::NotCapstan,
    }
}

/// `object` with capstan's ownership metadata for `release` added: the
/// app and chart labels and the release annotation. Other metadata is
/// kept; a label or annotation of the same key is overwritten.
pub fn with_ownership(mut object: Value, release: &Release) -> Value {
    let Some(map) = object.as_object_mut() else {
        return object;
    };
    let metadata = map.entry("metadata").or_insert_with(|| json!({}));
    let Some(metadata) = metadata.as_object_mut() else {
        return object;
    };
    let mut set = |field: &str, entries: BTreeMap<&str, String>| {
        let slot = metadata.entry(field).or_insert_with(|| json!({}));
        if !slot.is_object() {
            *slot = json!({});
        }
        if let Some(slot) = slot.as_object_mut() {
            for (key, value) in entries {
                slot.insert(key.to_string(), Value::String(value));
            }
        }
    };
    set(
        "labels",
        BTreeMap::from([
            (APP_LABEL, release.app.clone()),
            (CHART_LABEL, release.chart.clone()),
        ]),
    );
    set(
        "annotations",
        BTreeMap::from([(RELEASE_ANNOTATION, release.to_string())]),
    );
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release() -> Release {
        Release {
            app: "shop".into(),
            chart: "web".into(),
            namespace: "shop-ns".into(),
            release_name: "web".into(),
        }
    }

    fn id(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: namespace.map(str::to_string),
            name: name.into(),
        }
    }

    #[test]
    fn secret_round_trips_with_its_documented_shape() {
        let mut inventory = Inventory::new(&release());
        inventory.revision = 3;
        inventory.add_pending(&id("apps/v1", "Deployment", Some("shop-ns"), "web"));
        inventory.mark_applied(&id("v1", "Namespace", None, "shop-ns"));
        let secret = inventory.to_secret();
        assert_eq!(secret["type"], SECRET_TYPE);
        assert_eq!(secret["metadata"]["name"], "capstan.release.v1.shop.web");
        assert_eq!(secret_name(&release()), "capstan.release.v1.shop.web");
        assert_eq!(secret["metadata"]["namespace"], "shop-ns");
        assert_eq!(secret["metadata"]["labels"][APP_LABEL], "shop");
        let data = secret["data"][DATA_KEY].as_str().unwrap();
        let text = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        let json: Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(
            json["objects"][0],
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop-ns",
                   "name": "web", "method": "ServerSideApply", "state": "pending"})
        );
        assert_eq!(
            json["objects"][1],
            json!({"apiVersion": "v1", "kind": "Namespace", "name": "shop-ns",
                   "method": "ServerSideApply", "state": "applied"})
        );
        assert_eq!(json["revision"], 3);
        assert_eq!(json["releaseName"], "web");
        assert_eq!(Inventory::from_secret(&secret).unwrap(), inventory);
    }

    #[test]
    fn newer_fields_are_ignored_and_bad_secrets_are_typed_errors() {
        let doc = json!({"version": 2, "app": "a", "chart": "c", "namespace": "n",
            "releaseName": "r", "future": true,
            "objects": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x",
                         "method": "ServerSideApply", "state": "applied", "hash": "abc"}]});
        let encoded = base64::engine::general_purpose::STANDARD.encode(doc.to_string());
        let secret = json!({"type": SECRET_TYPE, "data": {"release": encoded}});
        let inventory = Inventory::from_secret(&secret).unwrap();
        assert_eq!(inventory.objects.len(), 1);
        assert_eq!(inventory.revision, 0);

        let opaque = json!({"type": "Opaque", "data": {}});
        assert!(matches!(
            Inventory::from_secret(&opaque),
            Err(DecodeError::WrongType(_))
        ));
        let empty = json!({"type": SECRET_TYPE});
        assert!(matches!(
            Inventory::from_secret(&empty),
            Err(DecodeError::NoData)
        ));
        let garbage = json!({"type": SECRET_TYPE, "data": {"release": "!!"}});
        assert!(matches!(
            Inventory::from_secret(&garbage),
            Err(DecodeError::Base64(_))
        ));
        let not_json = json!({"type": SECRET_TYPE, "data": {"release": "aGVsbG8="}});
        assert!(matches!(
            Inventory::from_secret(&not_json),
            Err(DecodeError::Json(_))
        ));
    }

    #[test]
    fn entries_match_by_key_and_leave_only_when_forgotten() {
        let mut inventory = Inventory::new(&release());
        inventory.mark_applied(&id("apps/v1beta2", "Deployment", Some("n"), "web"));
        inventory.add_pending(&id("apps/v1", "Deployment", Some("n"), "web"));
        assert_eq!(inventory.objects.len(), 1);
        assert_eq!(inventory.objects[0].api_version, "apps/v1");
        assert_eq!(inventory.objects[0].state, EntryState::Applied);
        assert!(!inventory.contains(&id("apps/v1", "Deployment", Some("m"), "web")));
        let resources = inventory.resources();
        assert_eq!(
            resources[0].id(),
            &id("apps/v1", "Deployment", Some("n"), "web")
        );
        inventory.forget(&id("apps/v1", "Deployment", Some("n"), "web"));
        assert!(inventory.objects.is_empty());
    }

    #[test]
    fn ownership_metadata_is_added_and_read() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"tier": "web"}, "annotations": null}});
        let stamped = with_ownership(object, &release());
        assert_eq!(stamped["metadata"]["labels"]["tier"], "web");
        assert_eq!(stamped["metadata"]["labels"][CHART_LABEL], "web");
        assert_eq!(
            stamped["metadata"]["annotations"][RELEASE_ANNOTATION],
            "shop/web"
        );
        assert_eq!(owner(&stamped), Owner::Release("shop/web".into()));
        let other = json!({"metadata": {"labels": {APP_LABEL: "bank", CHART_LABEL: "db"}}});
        assert_eq!(owner(&other).to_string(), "owned by app bank (chart db)");
        assert_eq!(
            owner(&json!({"metadata": {}})).to_string(),
            "not created by capstan"
        );
    }
}
