//! [`ClusterBackend`]: the [`DocStore`]'s documents as custom resources on
//! a Kubernetes API server (`capstan serve --store cluster`), so the
//! daemon's state lives in etcd with the cluster's and any replica can
//! read it: one `App` (`capstan.dev/v1alpha1`, CRD `apps.capstan.dev`) per app, its
//! [`AppSpec`] as `spec` and its
//! [`AppStatus`] as the `status` subresource;
//! one `Volume` per local volume. The CRDs are `deploy/crds.yaml`, applied
//! at connect when missing.
//!
//! Every write is a `PUT` carrying the `resourceVersion` the store wrote
//! last, so the API server refuses (409) a write from a daemon that no
//! longer knows the latest state — a deposed leader's. A method changes
//! `spec` or `status`, never both, so it is one write; only an upload
//! (create, then its first status) takes two, and a lost second write
//! leaves an App with no status, which reads as `uploading` and is
//! reconciled to `upload-failed`.
//!
//! Size: etcd takes requests up to 1.5 MiB by default; a document is held
//! to [`MAX_DOCUMENT_BYTES`] (history trimmed first).
//!
//! The daemon's key is the Secret [`DAEMON_KEY_SECRET`] of the same
//! namespace, created by the first replica that asks and read by the
//! others.
//!
//! Must not touch: the rules of the store (they are [`DocStore`]'s) or
//! anything but the App and Volume objects and the key Secret of its
//! namespace.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::document::{AppDoc, AppSpec, AppStatus, Backend, DocStore, Stored};
use super::error::Error;
use super::records::{DaemonKey, VolumeRecord};
use crate::kube::ObjectRef;
use crate::kube::cluster::client::{self, Cluster};
use crate::kube::cluster::discovery::Kind;
use crate::kube::cluster::{Connect, RetryPolicy};
use crate::model::AppName;

/// The Secret of the store's namespace that holds the daemon's key
/// ([`crate::store::Store::daemon_key`]), shared by every replica.
pub const DAEMON_KEY_SECRET: &str = "capstan-daemon-key";

/// The API group and version of the App and Volume kinds.
pub const API_VERSION: &str = "capstan.dev/v1alpha1";

/// The CRDs, as shipped in `deploy/`.
pub const CRDS: &str = include_str!("../../../deploy/crds.yaml");

/// The largest App document (spec plus status, as JSON): under etcd's
/// default 1.5 MiB request limit with room for metadata and the
/// managed-fields record.
pub const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

/// How long applied CRDs may take to be Established.
const ESTABLISH_WAIT: Duration = Duration::from_secs(30);

/// The [`super::Store`] on an API server.
pub type ClusterStore = DocStore<ClusterBackend>;

/// Documents as App and Volume objects (see the module doc).
pub struct ClusterBackend {
    runtime: tokio::runtime::Runtime,
    cluster: Cluster,
    namespace: String,
    apps: Kind,
    volumes: Kind,
    max_bytes: usize,
}

impl std::fmt::Debug for ClusterBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterBackend")
            .field("url", &self.cluster.url())
            .field("namespace", &self.namespace)
            .finish()
    }
}

fn kind(kind: &str, plural: &str) -> Kind {
    Kind {
        api_version: API_VERSION.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    }
}

fn backend_error(context: impl Into<String>, source: crate::kube::cluster::Error) -> Error {
    Error::Backend {
        context: context.into(),
        source: Box::new(source),
    }
}

fn conflict(error: &crate::kube::cluster::Error) -> bool {
    matches!(
        error,
        crate::kube::cluster::Error::Refused {
            code: 409 | 404,
            ..
        }
    )
}

impl ClusterStore {
    /// Connects to the cluster `how` names, checks it answers, applies
    /// the CRDs when missing (and waits until they are Established), and
    /// checks `namespace` exists.
    ///
    /// # Errors
    /// [`Error::Backend`] naming what failed.
    pub fn connect(how: &Connect, namespace: &str) -> Result<ClusterStore, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("capstan-store")
            .enable_all()
            .build()
            .map_err(|source| Error::Backend {
                context: "starting the cluster store's runtime".into(),
                source: Box::new(source),
            })?;
        let cluster = runtime.block_on(async {
            let config = client::config(how).await?;
            let cluster = Cluster::new(config, RetryPolicy::default())?;
            cluster.probe().await?;
            Ok::<_, crate::kube::cluster::Error>(cluster)
        });
        let cluster = cluster.map_err(|e| backend_error("connecting the cluster store", e))?;
        let backend = ClusterBackend {
            runtime,
            cluster,
            namespace: namespace.to_string(),
            apps: kind("App", "apps"),
            volumes: kind("Volume", "volumes"),
            max_bytes: MAX_DOCUMENT_BYTES,
        };
        backend.install_crds()?;
        backend.check_namespace()?;
        Ok(DocStore::new(backend))
    }
}

impl ClusterBackend {
    /// The namespace the objects live in.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The API server's URL.
    pub fn url(&self) -> &str {
        self.cluster.url()
    }

    /// Sets the document limit (tests of trimming).
    pub fn set_max_bytes(&mut self, max_bytes: usize) {
        self.max_bytes = max_bytes;
    }

    /// Runs `work` on the store's runtime from any thread: one inside
    /// another runtime (the target's, whose progress reports write the
    /// store) hands it to a scoped thread, since a runtime cannot block
    /// inside another.
    fn run<T: Send>(&self, work: impl Future<Output = T> + Send) -> T {
        if tokio::runtime::Handle::try_current().is_err() {
            return self.runtime.block_on(work);
        }
        std::thread::scope(
            |scope| match scope.spawn(|| self.runtime.block_on(work)).join() {
                Ok(value) => value,
                Err(panic) => std::panic::resume_unwind(panic),
            },
        )
    }

    fn block_on<T: Send>(
        &self,
        context: impl FnOnce() -> String,
        work: impl Future<Output = Result<T, crate::kube::cluster::Error>> + Send,
    ) -> Result<T, Error> {
        self.run(work).map_err(|e| backend_error(context(), e))
    }

    fn id(&self, kind: &str, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: API_VERSION.into(),
            kind: kind.into(),
            namespace: Some(self.namespace.clone()),
            name: name.to_string(),
        }
    }

    /// Applies each CRD of [`CRDS`] that the server lacks, then waits
    /// for it to be Established.
    fn install_crds(&self) -> Result<(), Error> {
        let crd_kind = Kind {
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
            namespaced: false,
        };
        for document in serde_yaml_ng::Deserializer::from_str(CRDS) {
            let crd: Value =
                serde::Deserialize::deserialize(document).map_err(|source| Error::Backend {
                    context: "reading the shipped CRDs".into(),
                    source: Box::new(source),
                })?;
            let name = crd
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let id = ObjectRef {
                api_version: "apiextensions.k8s.io/v1".into(),
                kind: "CustomResourceDefinition".into(),
                namespace: None,
                name: name.clone(),
            };
            let context = || format!("installing the CRD {name}");
            let live = self.block_on(context, self.cluster.get(&crd_kind, None, &id))?;
            if live.is_none() {
                tracing::info!(crd = %name, "applying the cluster store's CRD");
                self.block_on(
                    context,
                    self.cluster.apply(&crd_kind, None, &id, &crd, false, true),
                )?;
            }
            let started = Instant::now();
            loop {
                let live = self.block_on(context, self.cluster.get(&crd_kind, None, &id))?;
                let established = live
                    .as_ref()
                    .and_then(|crd| crd.pointer("/status/conditions"))
                    .and_then(Value::as_array)
                    .is_some_and(|conditions| {
                        conditions.iter().any(|c| {
                            c.get("type").and_then(Value::as_str) == Some("Established")
                                && c.get("status").and_then(Value::as_str) == Some("True")
                        })
                    });
                if established {
                    break;
                }
                if started.elapsed() > ESTABLISH_WAIT {
                    return Err(Error::Invalid {
                        context: context(),
                        reason: format!("not Established after {}s", ESTABLISH_WAIT.as_secs()),
                    });
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        Ok(())
    }

    fn check_namespace(&self) -> Result<(), Error> {
        let kind = Kind {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            plural: "namespaces".into(),
            namespaced: false,
        };
        let id = ObjectRef {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            namespace: None,
            name: self.namespace.clone(),
        };
        let found = self.block_on(
            || format!("reading the store's namespace {}", self.namespace),
            self.cluster.get(&kind, None, &id),
        )?;
        match found {
            Some(_) => Ok(()),
            None => Err(Error::Invalid {
                context: "opening the cluster store".into(),
                reason: format!(
                    "namespace {} does not exist (create it, or name another with \
                     --store-namespace)",
                    self.namespace
                ),
            }),
        }
    }

    /// An App object as a document.
    fn parse(&self, object: &Value) -> Result<Stored<AppDoc>, Error> {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let bad = |reason: String| Error::Invalid {
            context: format!("reading App {}/{name}", self.namespace),
            reason,
        };
        let app = AppName::new(name).map_err(|e| bad(e.to_string()))?;
        let spec: AppSpec = match object.get("spec") {
            Some(spec) => serde_json::from_value(spec.clone()).map_err(|e| bad(e.to_string()))?,
            None => AppSpec::default(),
        };
        let status: AppStatus = match object.get("status") {
            Some(status) => {
                serde_json::from_value(status.clone()).map_err(|e| bad(e.to_string()))?
            }
            None => AppStatus::default(),
        };
        let version = object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut doc = AppDoc {
            name: app,
            spec,
            status,
        };
        doc.normalize();
        Ok(Stored { doc, version })
    }

    fn body(&self, doc: &AppDoc, resource_version: Option<&str>) -> Result<Value, Error> {
        let encode = |e: serde_json::Error| Error::Invalid {
            context: format!("writing App {}/{}", self.namespace, doc.name),
            reason: e.to_string(),
        };
        let mut metadata = json!({
            "name": doc.name.as_str(),
            "namespace": self.namespace,
            "labels": {"app.kubernetes.io/managed-by": "capstan"},
        });
        if let Some(rv) = resource_version {
            metadata["resourceVersion"] = json!(rv);
        }
        Ok(json!({
            "apiVersion": API_VERSION,
            "kind": "App",
            "metadata": metadata,
            "spec": serde_json::to_value(&doc.spec).map_err(encode)?,
            "status": serde_json::to_value(&doc.status).map_err(encode)?,
        }))
    }

    fn app_id(&self, app: &AppName) -> ObjectRef {
        self.id("App", app.as_str())
    }

    /// A guarded write refused: someone else wrote first.
    fn refused(
        &self,
        before: &Stored<AppDoc>,
        context: &str,
        error: crate::kube::cluster::Error,
    ) -> Error {
        if conflict(&error) {
            Error::Conflict {
                what: format!("app \"{}\"", before.doc.name),
                expected: before.version.clone(),
            }
        } else {
            backend_error(context.to_string(), error)
        }
    }
}

impl Backend for ClusterBackend {
    fn get(&self, app: &AppName) -> Result<Option<Stored<AppDoc>>, Error> {
        let object = self.block_on(
            || format!("reading App {}/{app}", self.namespace),
            self.cluster
                .get(&self.apps, Some(&self.namespace), &self.app_id(app)),
        )?;
        object.map(|o| self.parse(&o)).transpose()
    }

    fn list(&self) -> Result<Vec<Stored<AppDoc>>, Error> {
        let items = self.block_on(
            || format!("listing the Apps of {}", self.namespace),
            self.cluster
                .list_all(&self.apps, Some(&self.namespace), None),
        )?;
        let mut docs = items
            .iter()
            .map(|item| self.parse(item))
            .collect::<Result<Vec<_>, _>>()?;
        docs.sort_by(|a, b| a.doc.name.cmp(&b.doc.name));
        Ok(docs)
    }

    fn create(&self, doc: &AppDoc) -> Result<Stored<AppDoc>, Error> {
        let id = self.app_id(&doc.name);
        let context = || format!("creating App {}/{}", self.namespace, doc.name);
        let body = self.body(doc, None)?;
        let created = self
            .run(
                self.cluster
                    .create(&self.apps, Some(&self.namespace), &id, &body),
            )
            .map_err(|e| match e {
                crate::kube::cluster::Error::Refused { code: 409, .. } => Error::AppExists {
                    app: doc.name.clone(),
                },
                e => backend_error(context(), e),
            })?;
        let rv = created
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let with_status = self.body(doc, Some(&rv))?;
        match self.block_on(
            || {
                format!(
                    "writing the first status of App {}/{}",
                    self.namespace, doc.name
                )
            },
            self.cluster
                .replace_status(&self.apps, Some(&self.namespace), &id, &with_status),
        ) {
            Ok(written) => self.parse(&written),
            Err(e) => {
                // Best effort: an App with no status would read as an
                // interrupted upload until the next reconciliation.
                let _ =
                    self.run(
                        self.cluster
                            .delete_at(&self.apps, Some(&self.namespace), &id, &rv),
                    );
                Err(e)
            }
        }
    }

    fn update(&self, before: &Stored<AppDoc>, after: &AppDoc) -> Result<Stored<AppDoc>, Error> {
        let id = self.app_id(&after.name);
        let context = format!("writing App {}/{}", self.namespace, after.name);
        let mut rv = before.version.clone();
        let mut last = None;
        if after.spec != before.doc.spec {
            let body = self.body(after, Some(&rv))?;
            let written = self
                .run(
                    self.cluster
                        .replace(&self.apps, Some(&self.namespace), &id, &body),
                )
                .map_err(|e| self.refused(before, &context, e))?;
            rv = written
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            last = Some(written);
        }
        if after.status != before.doc.status {
            let body = self.body(after, Some(&rv))?;
            let written = self
                .run(
                    self.cluster
                        .replace_status(&self.apps, Some(&self.namespace), &id, &body),
                )
                .map_err(|e| self.refused(before, &context, e))?;
            last = Some(written);
        }
        match last {
            Some(written) => self.parse(&written),
            None => Ok(before.clone()),
        }
    }

    fn delete(&self, before: &Stored<AppDoc>) -> Result<(), Error> {
        let id = self.app_id(&before.doc.name);
        let context = format!("deleting App {}/{}", self.namespace, before.doc.name);
        let gone = self
            .run(
                self.cluster
                    .delete_at(&self.apps, Some(&self.namespace), &id, &before.version),
            )
            .map_err(|e| self.refused(before, &context, e))?;
        if gone {
            Ok(())
        } else {
            Err(Error::Conflict {
                what: format!("app \"{}\"", before.doc.name),
                expected: before.version.clone(),
            })
        }
    }

    fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    fn volume(&self, name: &str) -> Result<Option<VolumeRecord>, Error> {
        let object = self.block_on(
            || format!("reading Volume {}/{name}", self.namespace),
            self.cluster.get(
                &self.volumes,
                Some(&self.namespace),
                &self.id("Volume", name),
            ),
        )?;
        object
            .map(|o| parse_volume(&self.namespace, &o))
            .transpose()
    }

    fn volumes(&self) -> Result<Vec<VolumeRecord>, Error> {
        let items = self.block_on(
            || format!("listing the Volumes of {}", self.namespace),
            self.cluster
                .list_all(&self.volumes, Some(&self.namespace), None),
        )?;
        items
            .iter()
            .map(|item| parse_volume(&self.namespace, item))
            .collect()
    }

    /// The Secret [`DAEMON_KEY_SECRET`] of the store's namespace: created
    /// with `fresh` when missing; when another replica created it first
    /// (409), read.
    fn daemon_key(&self, fresh: &DaemonKey) -> Result<DaemonKey, Error> {
        use base64::Engine as _;
        let context = || {
            format!(
                "reading the daemon key (Secret {}/{DAEMON_KEY_SECRET})",
                self.namespace
            )
        };
        let secrets = Kind {
            api_version: "v1".into(),
            kind: "Secret".into(),
            plural: "secrets".into(),
            namespaced: true,
        };
        let id = ObjectRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            namespace: Some(self.namespace.clone()),
            name: DAEMON_KEY_SECRET.into(),
        };
        let encoded = base64::engine::general_purpose::STANDARD.encode(fresh.0);
        let body = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": DAEMON_KEY_SECRET,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/managed-by": "capstan"},
            },
            "type": "Opaque",
            "data": {"key": encoded},
        });
        let live = match self.runtime.block_on(self.cluster.create(
            &secrets,
            Some(&self.namespace),
            &id,
            &body,
        )) {
            Ok(created) => created,
            Err(crate::kube::cluster::Error::Refused { code: 409, .. }) => self
                .block_on(
                    context,
                    self.cluster.get(&secrets, Some(&self.namespace), &id),
                )?
                .unwrap_or_default(),
            Err(e) => return Err(backend_error(context(), e)),
        };
        let bytes = live
            .pointer("/data/key")
            .and_then(Value::as_str)
            .and_then(|text| base64::engine::general_purpose::STANDARD.decode(text).ok())
            .unwrap_or_default();
        DaemonKey::from_bytes(&bytes).map_err(|reason| Error::Invalid {
            context: context(),
            reason,
        })
    }

    fn create_volume(&self, volume: &VolumeRecord) -> Result<(), Error> {
        let id = self.id("Volume", &volume.name);
        let spec = serde_json::to_value(volume).map_err(|e| Error::Invalid {
            context: format!("writing Volume {}/{}", self.namespace, volume.name),
            reason: e.to_string(),
        })?;
        let body = json!({
            "apiVersion": API_VERSION,
            "kind": "Volume",
            "metadata": {
                "name": volume.name,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/managed-by": "capstan"},
            },
            "spec": spec,
        });
        self.runtime
            .block_on(
                self.cluster
                    .create(&self.volumes, Some(&self.namespace), &id, &body),
            )
            .map_err(|e| match e {
                crate::kube::cluster::Error::Refused { code: 409, .. } => Error::VolumeExists {
                    name: volume.name.clone(),
                },
                e => backend_error(
                    format!("creating Volume {}/{}", self.namespace, volume.name),
                    e,
                ),
            })?;
        Ok(())
    }

    fn delete_volume(&self, name: &str) -> Result<bool, Error> {
        self.block_on(
            || format!("deleting Volume {}/{name}", self.namespace),
            self.cluster.delete(
                &self.volumes,
                Some(&self.namespace),
                &self.id("Volume", name),
                false,
            ),
        )
        .map(|deleted| deleted.is_some())
    }
}

fn parse_volume(namespace: &str, object: &Value) -> Result<VolumeRecord, Error> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    serde_json::from_value(spec).map_err(|e| Error::Invalid {
        context: format!("reading Volume {namespace}/{name}"),
        reason: e.to_string(),
    })
}
