//! Workload kinds and the component spec: a workload an app's chart renders,
//! and the traits that shape it, as `capstan.yaml` declares them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

use super::names::{ChartName, ComponentName};
use super::size::Size;

/// The two workload kinds a component can run as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
pub enum WorkloadKind {
    /// An `apps/v1` Deployment: interchangeable pods.
    Deployment,
    /// An `apps/v1` StatefulSet: pods with stable names and their own claims.
    StatefulSet,
}

impl WorkloadKind {
    /// The Kubernetes `kind` string, which is also how the store and
    /// `capstan.yaml` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deployment => "Deployment",
            Self::StatefulSet => "StatefulSet",
        }
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no [`WorkloadKind`] (a stored decision that no
/// longer decodes, a kind a plugin cannot choose).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown workload kind {0:?}; expected Deployment or StatefulSet")]
pub struct UnknownWorkloadKind(pub String);

impl FromStr for WorkloadKind {
    type Err = UnknownWorkloadKind;

    fn from_str(text: &str) -> Result<Self, UnknownWorkloadKind> {
        match text {
            "Deployment" => Ok(Self::Deployment),
            "StatefulSet" => Ok(Self::StatefulSet),
            _ => Err(UnknownWorkloadKind(text.to_string())),
        }
    }
}

/// One component of an app: a workload rendered by one of its charts, and
/// the traits that shape it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComponentSpec {
    /// The component's name, unique in the app.
    pub name: ComponentName,
    /// The chart that renders the workload.
    pub chart: ChartName,
    /// The rendered workload this component is about, written
    /// `Deployment/NAME` (or as a map `{kind, name}`).
    pub workload: WorkloadRef,
    /// What the component asks of the platform.
    #[serde(default)]
    pub traits: Traits,
}

/// A rendered workload, by kind and `metadata.name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkloadRef {
    /// The kind the chart renders.
    pub kind: WorkloadKind,
    /// The workload's `metadata.name` as rendered.
    pub name: String,
}

/// A workload reference that is not `Deployment/NAME` or `StatefulSet/NAME`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("workload {0:?} is not Deployment/NAME or StatefulSet/NAME")]
pub struct InvalidWorkloadRef(pub String);

impl WorkloadRef {
    /// Parses `Kind/name`.
    ///
    /// # Errors
    ///
    /// [`InvalidWorkloadRef`] when the kind is unknown or the name empty.
    pub fn parse(text: &str) -> Result<Self, InvalidWorkloadRef> {
        let bad = || InvalidWorkloadRef(text.to_string());
        let (kind, name) = text.split_once('/').ok_or_else(bad)?;
        let kind = kind.parse().map_err(|_| bad())?;
        if name.is_empty() || name.contains('/') {
            return Err(bad());
        }
        Ok(Self {
            kind,
            name: name.to_string(),
        })
    }
}

impl<'de> Deserialize<'de> for WorkloadRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Parts {
            kind: WorkloadKind,
            name: String,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Text(String),
            Parts(Parts),
        }
        match Written::deserialize(deserializer)? {
            Written::Text(text) => Self::parse(&text).map_err(serde::de::Error::custom),
            Written::Parts(Parts { kind, name }) if !name.is_empty() => Ok(Self { kind, name }),
            Written::Parts(_) => Err(serde::de::Error::custom("workload name is empty")),
        }
    }
}

/// A component's traits. Unknown trait names are refused, so a misspelt
/// trait fails at load instead of being silently ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Traits {
    /// Per-container persistent volumes provisioned by a storage class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<VolumeTrait>,
    /// Named local volumes (made with `capstan volume create`) to mount.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub local_volumes: Vec<LocalVolumeMount>,
}

/// A persistent volume mounted into one container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeTrait {
    /// Index into the pod template's `containers` (init containers are not
    /// counted).
    pub container: usize,
    /// The storage class that provisions the claim.
    pub storage_class_name: String,
    /// The size requested.
    pub size: Size,
    /// Where the volume is mounted in the container.
    pub path: String,
    /// The pod volume (and claim template) name; derived from `path` when
    /// absent (see `workload`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A named local volume mounted into one container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalVolumeMount {
    /// The local volume's name.
    pub volume: String,
    /// Index into the pod template's `containers`.
    #[serde(default)]
    pub container: usize,
    /// Where the volume is mounted in the container.
    pub path: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_refs_are_written_either_way() {
        let text: WorkloadRef = serde_json::from_str("\"StatefulSet/db\"").unwrap();
        let map: WorkloadRef =
            serde_json::from_str(r#"{"kind": "StatefulSet", "name": "db"}"#).unwrap();
        assert_eq!(text, map);
        assert_eq!(text.kind, WorkloadKind::StatefulSet);
        for bad in [
            "\"DaemonSet/x\"",
            "\"Deployment/\"",
            "\"Deployment\"",
            r#"{"kind": "Deployment", "name": ""}"#,
            r#"{"kind": "Job", "name": "x"}"#,
        ] {
            assert!(serde_json::from_str::<WorkloadRef>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn stored_kinds_decode_or_fail() {
        assert_eq!("StatefulSet".parse(), Ok(WorkloadKind::StatefulSet));
        assert_eq!(
            "Statefulset"
                .parse::<WorkloadKind>()
                .unwrap_err()
                .to_string(),
            "unknown workload kind \"Statefulset\"; expected Deployment or StatefulSet"
        );
    }
}
