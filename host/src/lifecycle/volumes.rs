//! Local volumes as objects of their own: `volume create` records one and
//! applies its PersistentVolume (host path on one node, `Retain`) and its
//! PersistentVolumeClaim (bound by storage class and volume name) through
//! the target as a release of the pseudo-app `capstan-volumes`, so they
//! outlive any app that mounts them; `volume remove` is refused while an
//! app that is on the target mounts the volume.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::kube::{self, Release, Resource};
use crate::store::{AppState, Store, VolumeRecord};
use crate::volumes::{self, LocalVolume};

use super::Error;
use super::stored::StoredVersion;

/// The pseudo-app whose releases hold the volumes' objects on the target.
pub const VOLUMES_APP: &str = "capstan-volumes";

/// A request to create a local volume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VolumeRequest {
    /// The volume's name (a DNS-1123 label); also its claim's name.
    pub name: String,
    /// The node whose disk holds it.
    pub node: String,
    /// The absolute directory on that node.
    pub path: String,
    /// The size, a Kubernetes quantity such as `10Gi`.
    pub size: String,
    /// The storage class its claim binds through (default `local-storage`).
    #[serde(default)]
    pub storage_class: Option<String>,
    /// The namespace of its claim (default `default`); the workloads that
    /// mount it must run there.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// A volume and who uses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VolumeView {
    /// The stored volume.
    #[serde(flatten)]
    pub volume: VolumeRecord,
    /// Its claim, `namespace/name`.
    pub claim: String,
    /// `app/component` of every app on the target that mounts it.
    pub used_by: Vec<String>,
}

/// The checked volume of a record.
pub fn local_volume(record: &VolumeRecord) -> Result<LocalVolume, Error> {
    LocalVolume::new(
        &record.name,
        &record.node,
        &record.host_path.to_string_lossy(),
        &record.size,
        Some(&record.storage_class),
    )
    .map_err(|e| Error::Volume {
        name: record.name.clone(),
        reason: e.to_string(),
    })
}

/// Checks a request and turns it into a record.
pub fn record_of(request: &VolumeRequest) -> Result<VolumeRecord, Error> {
    let invalid = |e: volumes::Error| Error::Volume {
        name: request.name.clone(),
        reason: e.to_string(),
    };
    let volume = LocalVolume::new(
        &request.name,
        &request.node,
        &request.path,
        &request.size,
        request.storage_class.as_deref(),
    )
    .map_err(invalid)?;
    let namespace = request
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    volumes::persistent_volume_claim(&volume, &namespace).map_err(invalid)?;
    Ok(VolumeRecord {
        name: volume.name().to_owned(),
        node: volume.node().to_owned(),
        host_path: volume.host_path().into(),
        size: volume.size().to_string(),
        storage_class: volume.storage_class().to_owned(),
        created_at: 0,
        namespace,
    })
}

/// The release that holds a volume's objects.
pub fn release_of(record: &VolumeRecord) -> Release {
    Release {
        app: VOLUMES_APP.to_owned(),
        chart: record.name.clone(),
        namespace: record.namespace.clone(),
        release_name: record.name.clone(),
    }
}

/// The PersistentVolume and the PersistentVolumeClaim of a volume.
pub fn objects_of(record: &VolumeRecord) -> Result<Vec<Resource>, Error> {
    let volume = local_volume(record)?;
    let claim = volumes::persistent_volume_claim(&volume, &record.namespace).map_err(|e| {
        Error::Volume {
            name: record.name.clone(),
            reason: e.to_string(),
        }
    })?;
    [volumes::persistent_volume(&volume), claim]
        .into_iter()
        .map(|object| {
            Resource::from_value(object, format!("volume {}", record.name)).map_err(|source| {
                Error::Kube {
                    chart: VOLUMES_APP.to_owned(),
                    source: Box::new(source),
                }
            })
        })
        .collect()
}

/// Applies a volume's objects through the target.
pub fn apply_objects(target: &dyn kube::ApplyTarget, record: &VolumeRecord) -> Result<(), Error> {
    let kube_err = |source| Error::Kube {
        chart: format!("{VOLUMES_APP}/{}", record.name),
        source: Box::new(source),
    };
    let release = release_of(record);
    let desired = objects_of(record)?;
    let live = target.applied(&release).map_err(kube_err)?;
    let plan = kube::plan_apply(&live, &desired).map_err(kube_err)?;
    target.apply(&release, &plan).map_err(kube_err)?;
    Ok(())
}

/// For each mounted volume, `app/component` of every app on the target
/// whose active version mounts it. Reads each app's metadata once.
pub fn users_by_volume(store: &dyn Store) -> Result<BTreeMap<String, Vec<String>>, Error> {
    let mut users: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for app in store.list_apps()? {
        if matches!(app.state, AppState::Uploaded | AppState::UploadFailed) {
            continue;
        }
        let Ok(version) = StoredVersion::load_metadata(store, &app.name, &app.active_version)
        else {
            continue;
        };
        for component in &version.metadata.components {
            for mount in &component.traits.local_volumes {
                let user = format!("{}/{}", app.name, component.name);
                let list = users.entry(mount.volume.clone()).or_default();
                if !list.contains(&user) {
                    list.push(user);
                }
            }
        }
    }
    Ok(users)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> VolumeRequest {
        VolumeRequest {
            name: "zk-data".into(),
            node: "worker-1".into(),
            path: "/var/lib/zk".into(),
            size: "10Gi".into(),
            storage_class: None,
            namespace: Some("kafka".into()),
        }
    }

    #[test]
    fn a_request_becomes_a_pinned_volume_and_a_claim_in_its_namespace() {
        let record = record_of(&request()).unwrap();
        assert_eq!(record.namespace, "kafka");
        let objects = objects_of(&record).unwrap();
        let pv = objects[0].object();
        assert_eq!(pv["kind"], "PersistentVolume");
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(pv["spec"]["hostPath"]["type"], "DirectoryOrCreate");
        let terms = &pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0];
        assert_eq!(terms["matchExpressions"][0]["values"][0], "worker-1");
        let pvc = objects[1].object();
        assert_eq!(pvc["kind"], "PersistentVolumeClaim");
        assert_eq!(pvc["metadata"]["namespace"], "kafka");
        assert_eq!(pvc["spec"]["volumeName"], "zk-data");
        assert_eq!(
            pvc["spec"]["storageClassName"],
            pv["spec"]["storageClassName"]
        );
    }

    #[test]
    fn bad_requests_name_what_is_wrong() {
        for (field, bad) in [
            ("name", "Bad_Name"),
            ("path", "relative/path"),
            ("size", "ten"),
            ("namespace", "-x"),
        ] {
            let mut r = request();
            match field {
                "name" => r.name = bad.into(),
                "path" => r.path = bad.into(),
                "size" => r.size = bad.into(),
                _ => r.namespace = Some(bad.into()),
            }
            let e = record_of(&r).unwrap_err();
            assert!(matches!(e, Error::Volume { .. }), "{field}: {e}");
        }
    }
}
