//! Contract 0.2's values by reference, at render: the secrets a chart's
//! plugins asked the host to generate (created once in a Secret of the
//! app's owned release, read back on every later apply, update and
//! rollback), and the keys of existing Secrets they named (read under the
//! action policy), placed at their paths in a layer that exists only for
//! the render. The values are never stored with the overrides, and every
//! one goes into the operation's [`Redactor`], so diffs, messages and notes
//! show `<redacted>` instead.
//!
//! The generated secret `NAME` of app `APP`, asked for by a chart in
//! namespace `NS`, is the Secret `NS/APP-NAME`, labelled
//! `capstan.dev/generated-secret: NAME` and annotated with its shape; a
//! later answer asking for `NAME` with another shape is refused.

use std::collections::BTreeMap;

use base64::Engine as _;

use crate::kube::Resource;
use crate::model::{GeneratedSecret, LookupQuery, SecretSource, SecretValue};
use crate::secrets::{self, Redactor};

use super::Error;
use super::actions::OWNED_CHART;
use super::run::{Job, Prepared};

/// The annotation holding a generated secret's shape (JSON).
pub const SHAPE_ANNOTATION: &str = "capstan.dev/generated-shape";

/// The label naming a generated secret.
pub const GENERATED_LABEL: &str = "capstan.dev/generated-secret";

/// What one chart's answers asked for by reference.
#[derive(Default)]
pub(super) struct ChartSecrets {
    pub namespace: String,
    pub values: Vec<SecretValue>,
    pub generate: Vec<GeneratedSecret>,
}

impl Job<'_> {
    /// Resolves every chart's secret values into the layer its render
    /// merges above the system overrides, generating the secrets asked for
    /// that do not exist yet.
    pub(super) fn resolve_secrets(
        &self,
        prepared: &Prepared<'_>,
        plugin: &str,
        asked: &BTreeMap<String, ChartSecrets>,
    ) -> Result<BTreeMap<String, serde_json::Map<String, serde_json::Value>>, Error> {
        let mut layers = BTreeMap::new();
        for (chart, wanted) in asked {
            let mut generated: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
            for secret in &wanted.generate {
                let keys = self.generated(prepared, plugin, &wanted.namespace, secret)?;
                generated.insert(secret.name.clone(), keys);
            }
            let mut layer = serde_json::Map::new();
            for value in &wanted.values {
                let text = match &value.source {
                    SecretSource::Generated(key) => generated
                        .get(&key.name)
                        .and_then(|keys| keys.get(&key.key))
                        .cloned()
                        .ok_or_else(|| Error::SecretValue {
                            plugin: plugin.to_string(),
                            chart: chart.clone(),
                            reason: format!(
                                "{} names {}, which the answer did not ask to generate or which has no such key",
                                value.path, value.source
                            ),
                        })?,
                    SecretSource::Existing(r) => {
                        let own = prepared.namespaces().iter().any(|n| n == &r.namespace);
                        let policy = self.inner.action_policies.for_app(self.app.as_str());
                        if !own && !policy.may_mirror_from(&r.namespace, &r.name) {
                            return Err(Error::SecretValue {
                                plugin: plugin.to_string(),
                                chart: chart.clone(),
                                reason: format!(
                                    "{} reads {}: denied by rule mirror-source: outside the app's namespaces and not in the policy's mirrorFrom",
                                    value.path, value.source
                                ),
                            });
                        }
                        let live = self.read(&r.namespace, &r.name)?;
                        data_key(&live, &r.key).ok_or_else(|| Error::SecretValue {
                            plugin: plugin.to_string(),
                            chart: chart.clone(),
                            reason: format!("{} reads {}, which does not exist", value.path, value.source),
                        })?
                    }
                };
                self.redactor().add(&text);
                let path = secrets::parse_path(&value.path).map_err(|e| Error::SecretValue {
                    plugin: plugin.to_string(),
                    chart: chart.clone(),
                    reason: e.to_string(),
                })?;
                secrets::set(&mut layer, &path, serde_json::Value::String(text)).map_err(|e| {
                    Error::SecretValue {
                        plugin: plugin.to_string(),
                        chart: chart.clone(),
                        reason: e.to_string(),
                    }
                })?;
            }
            if !layer.is_empty() {
                layers.insert(chart.clone(), layer);
            }
        }
        Ok(layers)
    }

    /// The keys of generated secret `secret` in `namespace`: read back
    /// when it exists, else generated and applied in the owned release.
    /// Either way the Secret counts among what this apply ensured, so it
    /// is not pruned at its end.
    fn generated(
        &self,
        prepared: &Prepared<'_>,
        plugin: &str,
        namespace: &str,
        secret: &GeneratedSecret,
    ) -> Result<BTreeMap<String, String>, Error> {
        let failed = |reason: String| Error::SecretValue {
            plugin: plugin.to_string(),
            chart: OWNED_CHART.into(),
            reason,
        };
        let name = format!("{}-{}", self.app, secret.name);
        let shape = serde_json::to_string(&secret.shape).unwrap_or_default();
        let live = self.read(namespace, &name)?;
        let exists = live.as_object().is_some_and(|m| !m.is_empty());
        let mut keys = BTreeMap::new();
        if exists {
            let held = live
                .pointer(&format!(
                    "/metadata/annotations/{}",
                    SHAPE_ANNOTATION.replace('/', "~1")
                ))
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default();
            if held != shape {
                return Err(failed(format!(
                    "generated secret {} exists with another shape; delete the app's Secret {namespace}/{name} to generate it anew",
                    secret.name
                )));
            }
            for key in secret.shape.keys() {
                let value = data_key(&live, key).ok_or_else(|| {
                    failed(format!(
                        "generated secret {} lacks its key {key}",
                        secret.name
                    ))
                })?;
                keys.insert((*key).to_string(), value);
            }
        } else {
            let made = secrets::generate(&secret.shape, &mut rand_core::OsRng)
                .map_err(|e| failed(format!("generating {}: {e}", secret.name)))?;
            for (key, bytes) in &made {
                keys.insert(
                    key.clone(),
                    String::from_utf8_lossy(bytes.as_bytes()).into_owned(),
                );
            }
        }
        for value in keys.values() {
            self.redactor().add(value);
        }
        let object = secret_object(namespace, &name, &secret.name, &shape, &keys);
        let resource = Resource::from_value(object, format!("generated secret {}", secret.name))
            .map_err(|e| failed(e.to_string()))?;
        if exists {
            self.keep_owned(prepared, resource);
        } else {
            self.ensure_owned(prepared, resource)?;
            self.note(format!(
                "generated secret {} for the app (Secret {namespace}/{name})",
                secret.name
            ));
        }
        Ok(keys)
    }

    fn read(&self, namespace: &str, name: &str) -> Result<serde_json::Value, Error> {
        self.target()
            .read_live(&LookupQuery {
                api_version: "v1".into(),
                kind: "Secret".into(),
                namespace: namespace.to_string(),
                name: name.to_string(),
            })
            .map_err(|source| Error::Kube {
                chart: OWNED_CHART.into(),
                source: Box::new(source),
            })
    }

    /// The operation's redactor.
    pub(super) fn redactor(&self) -> std::sync::MutexGuard<'_, Redactor> {
        self.redactor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `text` with every secret value this operation placed replaced.
    pub fn redact(&self, text: &str) -> String {
        self.redactor().redact(text).into_owned()
    }
}

/// The Secret that keeps a generated secret.
fn secret_object(
    namespace: &str,
    name: &str,
    secret: &str,
    shape: &str,
    keys: &BTreeMap<String, String>,
) -> serde_json::Value {
    let data: serde_json::Map<String, serde_json::Value> = keys
        .iter()
        .map(|(key, value)| {
            (
                key.clone(),
                base64::engine::general_purpose::STANDARD
                    .encode(value.as_bytes())
                    .into(),
            )
        })
        .collect();
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {GENERATED_LABEL: secret},
            "annotations": {SHAPE_ANNOTATION: shape},
        },
        "type": "Opaque",
        "data": data,
    })
}

/// A key of a Secret as read: `data` (base64) or `stringData`.
fn data_key(live: &serde_json::Value, key: &str) -> Option<String> {
    if let Some(text) = live
        .pointer("/stringData")
        .and_then(|d| d.get(key))
        .and_then(serde_json::Value::as_str)
    {
        return Some(text.to_string());
    }
    let encoded = live.get("data")?.get(key)?.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    String::from_utf8(bytes).ok()
}
