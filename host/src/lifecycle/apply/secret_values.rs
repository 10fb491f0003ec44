//! Secret values at render: values by reference to a Secret, and the
//! secrets the host generates for an app's plugins (named `NS/APP.NAME`,
//! bound to their app by a MAC under the daemon key).

use crate::kube::Resource;
use crate::lifecycle::Error;
use crate::lifecycle::OWNED_CHART;
use crate::lifecycle::job::{Job, Prepared};
use crate::lifecycle::owned::GENERATED_LABEL;
use crate::lifecycle::owned::ensure_owned;
use crate::lifecycle::owned::keep_owned;
use crate::lifecycle::owned::owned_release;
use crate::model::{GeneratedSecret, LookupQuery, SecretSource, SecretValue};
use crate::secrets::{self};
use crate::store::DaemonKey;
use base64::Engine as _;
use std::collections::BTreeMap;

/// The annotation holding a generated secret's shape (JSON).
pub const SHAPE_ANNOTATION: &str = "capstan.dev/generated-shape";

/// The annotation holding a generated secret's MAC (base64).
pub const MAC_ANNOTATION: &str = "capstan.dev/generated-mac";

/// The Secret keeping app `app`'s generated secret `secret`.
pub fn generated_name(app: &str, secret: &str) -> String {
    format!("{app}.{secret}")
}

/// Where a generated secret was kept before it was bound to its app.
pub(crate) fn legacy_name(app: &str, secret: &str) -> String {
    format!("{app}-{secret}")
}

/// The MAC binding a generated secret's values to its app, namespace,
/// name and shape, under the daemon's key.
pub(crate) fn mac(
    key: &DaemonKey,
    app: &str,
    namespace: &str,
    secret: &str,
    shape: &str,
    keys: &BTreeMap<String, String>,
) -> String {
    use hmac::Mac as _;
    let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key.0) else {
        return String::new();
    };
    for part in ["capstan generated secret v1", app, namespace, secret, shape] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part.as_bytes());
    }
    for (k, v) in keys {
        for part in [k, v] {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part.as_bytes());
        }
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `text` is the MAC of the rest, compared in constant time.
pub(crate) fn mac_matches(text: &str, expected: &str) -> bool {
    let (a, b) = (text.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What one chart's answers asked for by reference.
#[derive(Default)]
pub(crate) struct ChartSecrets {
    pub namespace: String,
    pub values: Vec<SecretValue>,
    pub generate: Vec<GeneratedSecret>,
}

/// The key of Secret `namespace/name`.
pub(crate) fn secret_key(namespace: &str, name: &str) -> crate::model::ObjectKey {
    crate::model::ObjectRef {
        api_version: "v1".into(),
        kind: "Secret".into(),
        namespace: Some(namespace.to_string()),
        name: name.to_string(),
    }
    .key()
}

/// An annotation of a live object.
pub(crate) fn annotation<'a>(live: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    live.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(serde_json::Value::as_str)
}

/// Whether a live generated secret has `shape`.
pub(crate) fn check_shape(live: &serde_json::Value, shape: &str) -> Result<(), ()> {
    match annotation(live, SHAPE_ANNOTATION) == Some(shape) {
        true => Ok(()),
        false => Err(()),
    }
}

/// The keys `shape` makes, as a live Secret holds them; the first one
/// missing when one is.
pub(crate) fn read_keys(
    live: &serde_json::Value,
    shape: &crate::model::SecretShape,
) -> Result<BTreeMap<String, String>, String> {
    let mut keys = BTreeMap::new();
    for key in shape.keys() {
        let value = data_key(live, key).ok_or_else(|| (*key).to_string())?;
        keys.insert((*key).to_string(), value);
    }
    Ok(keys)
}

/// The Secret that keeps a generated secret.
pub(crate) fn secret_object(
    namespace: &str,
    name: &str,
    secret: &str,
    shape: &str,
    sealed: &str,
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
            "annotations": {SHAPE_ANNOTATION: shape, MAC_ANNOTATION: sealed},
        },
        "type": "Opaque",
        "data": data,
    })
}

/// A key of a Secret as read: `data` (base64) or `stringData`.
pub(crate) fn data_key(live: &serde_json::Value, key: &str) -> Option<String> {
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

/// Resolves every chart's secret values into the layer its render
/// merges above the system overrides, generating the secrets asked for
/// that do not exist yet.
pub(crate) fn resolve_secrets(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
    plugin: &str,
    asked: &BTreeMap<String, ChartSecrets>,
) -> Result<BTreeMap<String, serde_json::Map<String, serde_json::Value>>, Error> {
    let mut layers = BTreeMap::new();
    for (chart, wanted) in asked {
        let mut generated: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for secret in &wanted.generate {
            let keys = generated_secret(job, prepared, plugin, &wanted.namespace, secret)?;
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
                    let policy = job.inner.policies.actions.for_app(job.app.as_str());
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
                    let live = read(job, &r.namespace, &r.name)?;
                    data_key(&live, &r.key).ok_or_else(|| Error::SecretValue {
                        plugin: plugin.to_string(),
                        chart: chart.clone(),
                        reason: format!("{} reads {}, which does not exist", value.path, value.source),
                    })?
                }
            };
            job.redactor().add(&text);
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
/// when it exists (and is this app's: held by its owned release, with
/// a right MAC), else generated and applied in the owned release.
/// Either way the Secret counts among what this apply ensured, so it
/// is not pruned at its end.
pub(crate) fn generated_secret(
    job: &Job<'_>,
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
    let app = job.app.as_str();
    let name = generated_name(app, &secret.name);
    let shape = serde_json::to_string(&secret.shape).unwrap_or_default();
    let key = job
        .inner
        .daemon_key()
        .map_err(|e| failed(format!("reading the daemon key: {e}")))?;
    let held = owned_ids(job, prepared)?;
    let live = read(job, namespace, &name)?;
    let exists = live.as_object().is_some_and(|m| !m.is_empty());
    let mut keys = BTreeMap::new();
    let mut moved_from = None;
    if exists {
        let not_ours = |why: &str| {
            failed(format!(
                "Secret {namespace}/{name} is not the generated secret {} capstan made for app {app} ({why}); delete it to generate the secret anew",
                secret.name
            ))
        };
        if !held.contains(&secret_key(namespace, &name)) {
            return Err(not_ours("the app's owned release does not hold it"));
        }
        check_shape(&live, &shape).map_err(|()| {
            failed(format!(
                "generated secret {} exists with another shape; delete the app's Secret {namespace}/{name} to generate it anew",
                secret.name
            ))
        })?;
        keys = read_keys(&live, &secret.shape).map_err(|k| {
            failed(format!(
                "generated secret {} lacks its key {k}",
                secret.name
            ))
        })?;
        let stored = annotation(&live, MAC_ANNOTATION).unwrap_or_default();
        let expected = mac(&key, app, namespace, &secret.name, &shape, &keys);
        if !mac_matches(stored, &expected) {
            return Err(not_ours("its MAC does not match"));
        }
    } else if let Some(old) = legacy(job, namespace, secret, &shape, &held)? {
        keys = old;
        moved_from = Some(legacy_name(app, &secret.name));
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
        job.redactor().add(value);
    }
    let sealed = mac(&key, app, namespace, &secret.name, &shape, &keys);
    let object = secret_object(namespace, &name, &secret.name, &shape, &sealed, &keys);
    let resource = Resource::from_value(object, format!("generated secret {}", secret.name))
        .map_err(|e| failed(e.to_string()))?;
    if exists {
        keep_owned(job, prepared, resource);
    } else {
        ensure_owned(job, prepared, resource)?;
        job.note(match moved_from {
            Some(old) => format!(
                "moved generated secret {} from Secret {namespace}/{old} to {namespace}/{name}, bound to the app",
                secret.name
            ),
            None => format!(
                "generated secret {} for the app (Secret {namespace}/{name})",
                secret.name
            ),
        });
    }
    Ok(keys)
}

/// The keys of a generated secret kept under its old name
/// (`APP-NAME`), when the app's owned release holds it with the label
/// naming it and the same shape.
pub(crate) fn legacy(
    job: &Job<'_>,
    namespace: &str,
    secret: &GeneratedSecret,
    shape: &str,
    held: &std::collections::BTreeSet<crate::model::ObjectKey>,
) -> Result<Option<BTreeMap<String, String>>, Error> {
    let old = legacy_name(job.app.as_str(), &secret.name);
    if !held.contains(&secret_key(namespace, &old)) {
        return Ok(None);
    }
    let live = read(job, namespace, &old)?;
    let labelled = live
        .pointer("/metadata/labels")
        .and_then(|l| l.get(GENERATED_LABEL))
        .and_then(serde_json::Value::as_str)
        == Some(secret.name.as_str());
    if !labelled || check_shape(&live, shape).is_err() {
        return Ok(None);
    }
    Ok(read_keys(&live, &secret.shape).ok())
}

/// The objects the app's owned release holds, by key.
pub(crate) fn owned_ids(
    job: &Job<'_>,
    prepared: &Prepared<'_>,
) -> Result<std::collections::BTreeSet<crate::model::ObjectKey>, Error> {
    let release = owned_release(job, prepared);
    let held = job
        .target()
        .applied(&release)
        .map_err(|source| Error::Kube {
            chart: OWNED_CHART.into(),
            source: Box::new(source),
        })?;
    Ok(held.iter().map(|r| r.id().key()).collect())
}

pub(crate) fn read(job: &Job<'_>, namespace: &str, name: &str) -> Result<serde_json::Value, Error> {
    job.view()
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
