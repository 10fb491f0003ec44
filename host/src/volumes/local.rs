//! A local volume and the PersistentVolume and claim that stand for it.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::names::{validate_host_path, validate_label, validate_subdomain};
use super::{Error, HOSTNAME_LABEL, Size};

/// The storage class local volumes get unless the operator names another.
///
/// The class needs no StorageClass object: the claim names its volume, so no
/// provisioner is ever asked. It should be reserved for capstan's volumes,
/// since any claim of this class without a `volumeName` could bind one.
pub const DEFAULT_STORAGE_CLASS: &str = "capstan-local";

/// The label on a local volume's PersistentVolume and claim that carries
/// the volume name; the claim selects its volume by it.
pub const VOLUME_LABEL: &str = "app.capstan.dev/local-volume";

/// A directory on one node, offered to workloads as a PersistentVolume.
///
/// Only [`LocalVolume::new`] (and deserializing, which calls it) makes one,
/// so every value holds a valid name, node, host path, size and class.
/// The volume, its PersistentVolume and its claim share the volume's name.
///
/// The fields are private, so no unchecked volume can be written out:
///
/// ```compile_fail
/// let volume = capstan::volumes::LocalVolume {
///     name: "../x".to_owned(),
///     node: "n1".to_owned(),
///     host_path: "relative".to_owned(),
///     size: capstan::volumes::Size::parse("1Gi").unwrap(),
///     storage_class: "capstan-local".to_owned(),
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawLocalVolume", rename_all = "camelCase")]
pub struct LocalVolume {
    name: String,
    node: String,
    host_path: String,
    size: Size,
    storage_class: String,
}

/// The unchecked shape of a stored [`LocalVolume`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLocalVolume {
    name: String,
    node: String,
    host_path: String,
    size: String,
    storage_class: Option<String>,
}

impl TryFrom<RawLocalVolume> for LocalVolume {
    type Error = Error;

    fn try_from(raw: RawLocalVolume) -> Result<Self, Error> {
        Self::new(
            &raw.name,
            &raw.node,
            &raw.host_path,
            &raw.size,
            raw.storage_class.as_deref(),
        )
    }
}

impl LocalVolume {
    /// Checks and builds a local volume; `storage_class` defaults to
    /// [`DEFAULT_STORAGE_CLASS`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] for a name that is not a DNS-1123 label or a
    /// node or class that is not a DNS-1123 subdomain,
    /// [`Error::InvalidHostPath`] for a relative path, the root or a path
    /// with `..`, [`Error::InvalidSize`] for a size that is not a positive
    /// quantity.
    pub fn new(
        name: &str,
        node: &str,
        host_path: &str,
        size: &str,
        storage_class: Option<&str>,
    ) -> Result<Self, Error> {
        validate_label("volume name", name)?;
        validate_subdomain("node name", node)?;
        validate_host_path(host_path)?;
        let storage_class = storage_class.unwrap_or(DEFAULT_STORAGE_CLASS);
        validate_subdomain("storage class", storage_class)?;
        Ok(Self {
            name: name.to_owned(),
            node: node.to_owned(),
            host_path: host_path.to_owned(),
            size: Size::parse(size)?,
            storage_class: storage_class.to_owned(),
        })
    }

    /// The volume's name, which is also its PersistentVolume's and claim's.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The node the directory lives on.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The directory on the node.
    pub fn host_path(&self) -> &str {
        &self.host_path
    }

    /// The capacity offered, which the claim also requests.
    pub fn size(&self) -> &Size {
        &self.size
    }

    /// The storage class shared by the volume and its claim.
    pub fn storage_class(&self) -> &str {
        &self.storage_class
    }

    /// The name of the claim workloads mount.
    pub fn claim_name(&self) -> &str {
        &self.name
    }
}

/// The PersistentVolume for a local volume: a `hostPath` directory created
/// if missing (`DirectoryOrCreate`), `ReadWriteOnce`, kept when released
/// (`Retain`, so data outlives the app), and usable only on its node
/// (required node affinity on `kubernetes.io/hostname`).
///
/// Cluster-scoped, named after the volume and labelled with [`VOLUME_LABEL`].
pub fn persistent_volume(volume: &LocalVolume) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": volume.name,
            "labels": volume_labels(volume),
        },
        "spec": {
            "capacity": { "storage": volume.size.as_str() },
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": volume.storage_class,
            "volumeMode": "Filesystem",
            "hostPath": { "path": volume.host_path, "type": "DirectoryOrCreate" },
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [{
                        "matchExpressions": [{
                            "key": HOSTNAME_LABEL,
                            "operator": "In",
                            "values": [volume.node],
                        }],
                    }],
                },
            },
        },
    })
}

/// The claim bound to a local volume's PersistentVolume, in `namespace`.
///
/// It binds by three agreeing keys, so it can bind nothing else: the same
/// storage class, `volumeName` naming the volume, and a selector on
/// [`VOLUME_LABEL`]. It requests the volume's full size.
///
/// # Errors
///
/// [`Error::InvalidName`] when `namespace` is not a DNS-1123 label.
pub fn persistent_volume_claim(volume: &LocalVolume, namespace: &str) -> Result<Value, Error> {
    validate_label("namespace", namespace)?;
    Ok(json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": volume.claim_name(),
            "namespace": namespace,
            "labels": volume_labels(volume),
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": volume.storage_class,
            "volumeName": volume.name,
            "volumeMode": "Filesystem",
            "selector": { "matchLabels": { VOLUME_LABEL: volume.name } },
            "resources": { "requests": { "storage": volume.size.as_str() } },
        },
    }))
}

fn volume_labels(volume: &LocalVolume) -> Value {
    json!({
        VOLUME_LABEL: volume.name,
        "app.kubernetes.io/managed-by": "capstan",
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};

    use super::*;

    fn zk_data() -> LocalVolume {
        match LocalVolume::new("zk-data", "worker-1", "/var/lib/zk", "10Gi", None) {
            Ok(volume) => volume,
            Err(err) => panic!("{err}"),
        }
    }

    #[test]
    fn new_checks_every_field() {
        let ok = LocalVolume::new("zk-data", "worker-1", "/var/lib/zk", "10Gi", None);
        assert_eq!(
            ok.map(|v| v.storage_class().to_owned()).ok(),
            Some(DEFAULT_STORAGE_CLASS.to_owned())
        );
        let cases = [
            ("ZK", "worker-1", "/d", "1Gi", None),
            ("zk", "Worker_1", "/d", "1Gi", None),
            ("zk", "worker-1", "d", "1Gi", None),
            ("zk", "worker-1", "/d/../e", "1Gi", None),
            ("zk", "worker-1", "/d", "0", None),
            ("zk", "worker-1", "/d", "1Gi", Some("Fast!")),
        ];
        for (name, node, path, size, class) in cases {
            assert!(
                LocalVolume::new(name, node, path, size, class).is_err(),
                "{name} {node} {path} {size} {class:?}"
            );
        }
    }

    #[test]
    fn deserializing_validates() {
        let good = json!({"name": "zk", "node": "n1", "hostPath": "/d", "size": "1Gi"});
        let volume: LocalVolume = serde_json::from_value(good).unwrap();
        assert_eq!(volume.storage_class(), DEFAULT_STORAGE_CLASS);
        let round = serde_json::to_value(&volume).unwrap();
        assert_eq!(round["hostPath"], "/d");
        assert_eq!(round["storageClass"], DEFAULT_STORAGE_CLASS);
        let bad = json!({"name": "zk", "node": "n1", "hostPath": "../d", "size": "1Gi"});
        assert!(serde_json::from_value::<LocalVolume>(bad).is_err());
    }

    #[test]
    fn persistent_volume_is_a_retained_host_path_pinned_to_its_node() {
        let pv = persistent_volume(&zk_data());
        let typed: PersistentVolume = serde_json::from_value(pv.clone()).unwrap();
        let spec = typed.spec.unwrap();
        assert_eq!(
            spec.persistent_volume_reclaim_policy.as_deref(),
            Some("Retain")
        );
        let host_path = spec.host_path.unwrap();
        assert_eq!(host_path.path, "/var/lib/zk");
        assert_eq!(host_path.type_.as_deref(), Some("DirectoryOrCreate"));
        assert_eq!(spec.storage_class_name.as_deref(), Some("capstan-local"));
        assert_eq!(spec.access_modes, Some(vec!["ReadWriteOnce".to_owned()]));
        assert_eq!(spec.capacity.unwrap()["storage"].0, "10Gi");
        let terms = spec
            .node_affinity
            .unwrap()
            .required
            .unwrap()
            .node_selector_terms;
        let expr = &terms[0].match_expressions.as_ref().unwrap()[0];
        assert_eq!(expr.key, HOSTNAME_LABEL);
        assert_eq!(expr.operator, "In");
        assert_eq!(expr.values, Some(vec!["worker-1".to_owned()]));
        assert_eq!(pv["metadata"]["labels"][VOLUME_LABEL], "zk-data");
    }

    #[test]
    fn claim_binds_to_its_volume_only() {
        let volume = zk_data();
        let pvc = persistent_volume_claim(&volume, "kafka").unwrap();
        let typed: PersistentVolumeClaim = serde_json::from_value(pvc).unwrap();
        assert_eq!(typed.metadata.namespace.as_deref(), Some("kafka"));
        assert_eq!(typed.metadata.name.as_deref(), Some(volume.claim_name()));
        let spec = typed.spec.unwrap();
        assert_eq!(spec.volume_name.as_deref(), Some("zk-data"));
        assert_eq!(spec.storage_class_name.as_deref(), Some("capstan-local"));
        let labels = spec.selector.unwrap().match_labels.unwrap();
        assert_eq!(labels[VOLUME_LABEL], "zk-data");
        assert_eq!(
            spec.resources.unwrap().requests.unwrap()["storage"].0,
            "10Gi"
        );
        let pv = persistent_volume(&volume);
        assert_eq!(pv["metadata"]["labels"][VOLUME_LABEL], labels[VOLUME_LABEL]);
        assert!(persistent_volume_claim(&volume, "Bad_NS").is_err());
    }
}
