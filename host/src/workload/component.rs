//! Checks on components and their traits (the types are
//! [`crate::model::ComponentSpec`] and its parts): what can be checked
//! before the rendered workload is seen.

use std::collections::BTreeSet;

use super::Error;
use crate::model::{ComponentSpec, VolumeTrait};
use crate::volumes;

impl VolumeTrait {
    /// The volume's name: `name` when given, else `path` turned into a
    /// DNS-1123 label (`/var/lib/kafka` becomes `var-lib-kafka`). Deriving
    /// from the path keeps the name, and so the claims, stable when trait
    /// entries are reordered.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTrait`] when the given or derived name is not a label
    /// (for a derived one: the path has no letters or digits, or is longer
    /// than 63 characters; give a `name` then).
    pub fn volume_name(&self, component: &str) -> Result<String, Error> {
        let name = match &self.name {
            Some(name) => name.clone(),
            None => name_from_path(&self.path),
        };
        volumes::validate_label("volume name", &name)
            .map_err(|source| invalid(component, source))?;
        Ok(name)
    }
}

fn name_from_path(path: &str) -> String {
    let mut name = String::new();
    for c in path.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_lowercase());
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    name.trim_end_matches('-').to_owned()
}

impl ComponentSpec {
    /// Checks what can be checked without the rendered workload: the
    /// workload name, every trait's mount path, volume name
    /// and storage class, and that no two volumes share a name and no two
    /// mounts share a container path.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTrait`] naming the component and the bad input;
    /// [`Error::DuplicateVolume`] and [`Error::DuplicateMountPath`] for clashes
    /// among the traits themselves.
    pub fn validate(&self) -> Result<(), Error> {
        let check =
            |result: Result<(), volumes::Error>| result.map_err(|e| invalid(self.name.as_str(), e));
        check(volumes::validate_subdomain(
            "workload name",
            &self.workload.name,
        ))?;
        let mut names = BTreeSet::new();
        let mut mounts = BTreeSet::new();
        for volume in &self.traits.volumes {
            check(volumes::validate_mount_path(&volume.path))?;
            check(volumes::validate_subdomain(
                "storage class",
                &volume.storage_class_name,
            ))?;
            let name = volume.volume_name(self.name.as_str())?;
            self.claim_name_once(&mut names, name)?;
            self.mount_once(&mut mounts, volume.container, &volume.path)?;
        }
        let mut local_names = BTreeSet::new();
        for local in &self.traits.local_volumes {
            check(volumes::validate_mount_path(&local.path))?;
            check(volumes::validate_label("volume name", &local.volume))?;
            if local_names.insert(local.volume.clone()) {
                self.claim_name_once(&mut names, local.volume.clone())?;
            }
            self.mount_once(&mut mounts, local.container, &local.path)?;
        }
        Ok(())
    }

    fn claim_name_once(&self, names: &mut BTreeSet<String>, name: String) -> Result<(), Error> {
        if names.insert(name.clone()) {
            return Ok(());
        }
        Err(Error::DuplicateVolume {
            component: self.name.to_string(),
            volume: name,
        })
    }

    fn mount_once(
        &self,
        mounts: &mut BTreeSet<(usize, String)>,
        container: usize,
        path: &str,
    ) -> Result<(), Error> {
        if mounts.insert((container, path.to_owned())) {
            return Ok(());
        }
        Err(Error::DuplicateMountPath {
            component: self.name.to_string(),
            container,
            path: path.to_owned(),
        })
    }
}

fn invalid(component: &str, source: volumes::Error) -> Error {
    Error::InvalidTrait {
        component: component.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::WorkloadKind;

    fn component(yaml: &str) -> ComponentSpec {
        match serde_yaml_ng::from_str(yaml) {
            Ok(component) => component,
            Err(err) => panic!("{err}"),
        }
    }

    const BROKER: &str = "
name: broker
chart: kafka
workload: { kind: Deployment, name: kafka-broker }
traits:
  volumes:
    - { container: 0, storageClassName: fast, size: 10Gi, path: /var/lib/kafka }
    - { container: 1, storageClassName: fast, size: 1Gi, path: /logs, name: logs }
  localVolumes:
    - { volume: zk-data, container: 0, path: /zk }
";

    #[test]
    fn parses_capstan_yaml_components() {
        let broker = component(BROKER);
        assert_eq!(broker.workload.kind, WorkloadKind::Deployment);
        assert_eq!(broker.traits.volumes[0].size.bytes(), 10 << 30);
        assert_eq!(broker.traits.volumes[1].name.as_deref(), Some("logs"));
        assert_eq!(broker.traits.local_volumes[0].volume, "zk-data");
        assert!(broker.validate().is_ok());
    }

    #[test]
    fn refuses_misspelt_traits_and_bad_sizes() {
        let misspelt = BROKER.replace("storageClassName", "storageClass");
        assert!(serde_yaml_ng::from_str::<ComponentSpec>(&misspelt).is_err());
        let bad_size = BROKER.replace("10Gi", "10GB");
        assert!(serde_yaml_ng::from_str::<ComponentSpec>(&bad_size).is_err());
        let bad_kind = BROKER.replace("kind: Deployment", "kind: DaemonSet");
        assert!(serde_yaml_ng::from_str::<ComponentSpec>(&bad_kind).is_err());
    }

    #[test]
    fn derives_volume_names_from_paths() {
        let mut broker = component(BROKER);
        assert_eq!(
            broker.traits.volumes[0].volume_name("broker").unwrap(),
            "var-lib-kafka"
        );
        broker.traits.volumes[0].path = "/Data_Dir/".to_owned();
        assert_eq!(
            broker.traits.volumes[0].volume_name("broker").unwrap(),
            "data-dir"
        );
        broker.traits.volumes[0].path = "/".to_owned();
        assert!(broker.traits.volumes[0].volume_name("broker").is_err());
    }

    #[test]
    fn validate_refuses_clashes_and_bad_paths() {
        let same_name = component(&BROKER.replace("name: logs", "name: var-lib-kafka"));
        assert_eq!(
            same_name.validate().unwrap_err().to_string(),
            "component \"broker\" asks twice for volume \"var-lib-kafka\""
        );
        let same_mount = component(&BROKER.replace("path: /zk", "path: /var/lib/kafka"));
        assert_eq!(
            same_mount.validate().unwrap_err().to_string(),
            "component \"broker\" mounts two volumes at \"/var/lib/kafka\" in container 0"
        );
        let relative = component(&BROKER.replace("path: /logs", "path: logs"));
        assert_eq!(
            relative.validate().unwrap_err().to_string(),
            "component \"broker\" has an invalid trait"
        );
        let bad_class =
            component(&BROKER.replace("storageClassName: fast,", "storageClassName: Fast,"));
        assert!(bad_class.validate().is_err());
    }
}
