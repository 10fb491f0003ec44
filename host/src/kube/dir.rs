//! The directory target (`--target dir:PATH`): each applied release is a
//! file `PATH/APP/CHART.yaml`, so the whole lifecycle runs with no cluster.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::Error;
use super::manifest::{Resource, parse_manifests};
use super::plan::{ApplyPlan, plan_remove};
use super::target::{Applied, ApplyTarget, Release};
use crate::model::{LookupQuery, ObjectRef};

/// Longest app or chart name: a DNS-1123 label.
const MAX_NAME_LEN: usize = 63;

/// Writes each release's objects to `ROOT/APP/CHART.yaml`: a comment
/// naming the release, then each object as a `---` document in apply
/// order. The same objects always give the same bytes.
///
/// Writes are atomic: a temporary file in the app's folder, synced, then
/// renamed over the old file, and the folder synced, so a crash leaves the
/// old file or the new one. Pruning is the new file no longer holding the
/// object. App and chart names must be DNS-1123 labels, so no name can
/// reach outside `ROOT`; a folder under `ROOT` that is a symbolic link is
/// refused rather than followed.
#[derive(Debug, Clone)]
pub struct DirTarget {
    root: PathBuf,
}

impl DirTarget {
    /// A target writing under `root`. Nothing is touched until the first
    /// apply, which creates `root` if it is missing.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DirTarget { root: root.into() }
    }

    /// The folder releases are written under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `release` is written: `ROOT/APP/CHART.yaml`.
    ///
    /// # Errors
    /// [`Error::InvalidName`] when the app or chart name is not a DNS-1123
    /// label (1 to 63 of `a-z`, `0-9`, `-`, not starting or ending with
    /// `-`), which rules out `/`, `..` and absolute paths.
    pub fn path_of(&self, release: &Release) -> Result<PathBuf, Error> {
        check_label("app", &release.app)?;
        check_label("chart", &release.chart)?;
        Ok(self
            .root
            .join(&release.app)
            .join(format!("{}.yaml", release.chart)))
    }

    fn app_dir(&self, release: &Release) -> PathBuf {
        self.root.join(&release.app)
    }
}

impl ApplyTarget for DirTarget {
    /// Writes `plan.to_apply()` as the release's file, replacing the old
    /// one; objects in `plan.to_prune()` are gone because the new file
    /// does not hold them, and are reported as pruned.
    ///
    /// # Errors
    /// [`Error::InvalidName`] for a bad app or chart name,
    /// [`Error::NotADirectory`] when the app's folder is a link or a file,
    /// [`Error::Serialize`] if an object cannot be written as YAML, and
    /// [`Error::Write`] when creating, writing, syncing or renaming fails
    /// (the old file is then left as it was).
    fn apply(&self, release: &Release, plan: &ApplyPlan) -> Result<Applied, Error> {
        let path = self.path_of(release)?;
        let text = file_text(release, plan.to_apply())?;
        let dir = self.app_dir(release);
        let write_error = |path: &Path| io_error(WRITE, release, path);
        fs::create_dir_all(&self.root).map_err(write_error(&self.root))?;
        if !dir_exists(release, &dir)? {
            std::os::unix::fs::DirBuilderExt::mode(&mut fs::DirBuilder::new(), 0o700)
                .create(&dir)
                .map_err(write_error(&dir))?;
            sync_dir(&self.root).map_err(write_error(&self.root))?;
        }
        write_atomically(&dir, &path, &release.chart, text.as_bytes())
            .map_err(write_error(&path))?;
        Ok(Applied {
            applied: plan.to_apply().iter().map(|r| r.id().clone()).collect(),
            pruned: plan.to_prune().to_vec(),
            unchanged: plan.unchanged(),
        })
    }

    /// Deletes the release's file (and temporary files a crash left
    /// beside it), then the app's folder if that leaves it empty. Returns
    /// the objects the file held, in removal order.
    ///
    /// # Errors
    /// [`Error::InvalidName`], [`Error::NotADirectory`]; [`Error::Read`] or
    /// [`Error::Corrupt`] when the file cannot be read or parsed (it is
    /// then kept); [`Error::Remove`] when deleting fails.
    fn remove(&self, release: &Release) -> Result<Vec<ObjectRef>, Error> {
        let removed = plan_remove(&self.applied(release)?);
        let path = self.path_of(release)?;
        let dir = self.app_dir(release);
        if !dir_exists(release, &dir)? {
            return Ok(removed);
        }
        let remove_error = |path: &Path| io_error(REMOVE, release, path);
        remove_stale_temp_files(&dir, &release.chart).map_err(remove_error(&dir))?;
        ignore_not_found(fs::remove_file(&path)).map_err(remove_error(&path))?;
        sync_dir(&dir).map_err(remove_error(&dir))?;
        match fs::remove_dir(&dir) {
            Ok(()) => sync_dir(&self.root).map_err(remove_error(&self.root))?,
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => {}
            Err(e) => ignore_not_found(Err(e)).map_err(remove_error(&dir))?,
        }
        Ok(removed)
    }

    /// Built-in kinds by their known scope; a kind defined by a
    /// CustomResourceDefinition the directory holds by its `spec.scope`.
    fn kind_scope(&self, api_version: &str, kind: &str) -> Result<Option<bool>, Error> {
        let group = api_version.split_once('/').map_or("", |(group, _)| group);
        for crd in self
            .held()?
            .iter()
            .filter(|r| r.id().kind == "CustomResourceDefinition")
        {
            let spec = crd.object().get("spec");
            let field = |key: &str| {
                spec.and_then(|s| s.get(key))
                    .and_then(serde_json::Value::as_str)
            };
            let crd_kind = spec
                .and_then(|s| s.pointer("/names/kind"))
                .and_then(serde_json::Value::as_str);
            if field("group") == Some(group) && crd_kind == Some(kind) {
                return Ok(Some(field("scope") != Some("Cluster")));
            }
        }
        Ok(Some(super::scope::builtin_namespaced(kind)))
    }

    /// Answers from what the directory holds: the object of any release
    /// that matches (an empty object when none does), or the list of them.
    fn read_live(&self, query: &LookupQuery) -> Result<serde_json::Value, Error> {
        let mut found = self.held()?.into_iter().filter(|r| matches(r, query));
        if !query.name.is_empty() {
            return Ok(found
                .next()
                .map_or_else(|| serde_json::json!({}), Resource::into_object));
        }
        let items: Vec<serde_json::Value> = found.map(Resource::into_object).collect();
        Ok(serde_json::json!({
            "apiVersion": query.api_version,
            "kind": format!("{}List", query.kind),
            "metadata": {},
            "items": items,
        }))
    }

    /// Reads the release's file back; empty when there is none.
    ///
    /// # Errors
    /// [`Error::InvalidName`], [`Error::NotADirectory`], [`Error::Read`]
    /// when the file exists but cannot be read, [`Error::Corrupt`] when it
    /// does not parse.
    fn applied(&self, release: &Release) -> Result<Vec<Resource>, Error> {
        let path = self.path_of(release)?;
        if !dir_exists(release, &self.app_dir(release))? {
            return Ok(Vec::new());
        }
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(io_error(READ, release, &path)(source)),
        };
        parse_manifests(&text).map_err(|source| Error::Corrupt {
            release: release.to_string(),
            path,
            source: Box::new(source),
        })
    }
}

impl DirTarget {
    /// Every object every release file under the root holds, in file
    /// order; a folder or file that is not a release is passed over.
    ///
    /// # Errors
    /// [`Error::Read`] or [`Error::Corrupt`] for a release file that
    /// cannot be read or parsed.
    fn held(&self) -> Result<Vec<Resource>, Error> {
        let mut out = Vec::new();
        let Ok(apps) = fs::read_dir(&self.root) else {
            return Ok(out);
        };
        let mut apps: Vec<_> = apps.filter_map(Result::ok).map(|e| e.path()).collect();
        apps.sort();
        for app in apps {
            let Ok(meta) = fs::symlink_metadata(&app) else {
                continue;
            };
            if !meta.is_dir() {
                continue;
            }
            let Ok(files) = fs::read_dir(&app) else {
                continue;
            };
            let mut files: Vec<_> = files.filter_map(Result::ok).map(|e| e.path()).collect();
            files.sort();
            for file in files {
                let (Some(app_name), Some(chart)) = (
                    app.file_name().and_then(|n| n.to_str()),
                    file.file_name()
                        .and_then(|n| n.to_str())
                        .and_then(|n| n.strip_suffix(".yaml")),
                ) else {
                    continue;
                };
                let release = Release {
                    app: app_name.to_string(),
                    chart: chart.to_string(),
                    namespace: String::new(),
                    release_name: String::new(),
                };
                if check_label("app", app_name).is_err() || check_label("chart", chart).is_err() {
                    continue;
                }
                out.extend(self.applied(&release)?);
            }
        }
        Ok(out)
    }
}

/// Whether `resource` is what `query` names (any name for a list; any
/// namespace for an empty one).
fn matches(resource: &Resource, query: &LookupQuery) -> bool {
    let id = resource.id();
    id.api_version == query.api_version
        && id.kind == query.kind
        && (query.namespace.is_empty() || id.namespace.as_deref() == Some(&*query.namespace))
        && (query.name.is_empty() || id.name == query.name)
}

/// The file's bytes: a comment naming the release, then each object as a
/// `---` document.
fn file_text(release: &Release, resources: &[Resource]) -> Result<String, Error> {
    let mut text = format!(
        "# capstan release {} of app {}, chart {}, namespace {}\n",
        release.release_name, release.app, release.chart, release.namespace
    );
    for resource in resources {
        text.push_str("---\n");
        text.push_str(&resource.to_yaml()?);
    }
    Ok(text)
}

fn check_label(what: &'static str, name: &str) -> Result<(), Error> {
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.chars().all(allowed)
        && !name.starts_with('-')
        && !name.ends_with('-');
    if valid {
        Ok(())
    } else {
        Err(Error::InvalidName {
            what,
            name: name.to_string(),
        })
    }
}

/// Whether `dir` exists as a real folder (not a link to one).
fn dir_exists(release: &Release, dir: &Path) -> Result<bool, Error> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(true),
        Ok(_) => Err(Error::NotADirectory {
            path: dir.to_path_buf(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(io_error(READ, release, dir)(source)),
    }
}

/// Builds one of the I/O variants of [`Error`] from its fields.
type IoVariant = fn(String, PathBuf, io::Error) -> Error;
const WRITE: IoVariant = |release, path, source| Error::Write {
    release,
    path,
    source,
};
const READ: IoVariant = |release, path, source| Error::Read {
    release,
    path,
    source,
};
const REMOVE: IoVariant = |release, path, source| Error::Remove {
    release,
    path,
    source,
};

/// Wraps an I/O error as `variant`, naming `release` and `path`.
fn io_error(
    variant: IoVariant,
    release: &Release,
    path: &Path,
) -> impl FnOnce(io::Error) -> Error + use<> {
    let (release, path) = (release.to_string(), path.to_path_buf());
    move |source| variant(release, path, source)
}

/// The prefix of the temporary files written beside `CHART.yaml`.
fn temp_prefix(chart: &str) -> String {
    format!(".{chart}.yaml.tmp")
}

fn write_atomically(dir: &Path, path: &Path, chart: &str, bytes: &[u8]) -> io::Result<()> {
    let mut file = tempfile::Builder::new()
        .prefix(&temp_prefix(chart))
        .tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
}

fn remove_stale_temp_files(dir: &Path, chart: &str) -> io::Result<()> {
    let prefix = temp_prefix(chart);
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            ignore_not_found(fs::remove_file(entry.path()))?;
        }
    }
    Ok(())
}

/// Makes a rename or removal in `dir` durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn ignore_not_found(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::plan_apply;

    const CHART: &str = "---
# Source: web/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 2}
---
# Source: web/templates/service.yaml
apiVersion: v1
kind: Service
metadata: {name: web}
---
# Source: web/templates/config.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: shop}
data: {mode: fast}
";

    fn release(app: &str, chart: &str) -> Release {
        Release {
            app: app.into(),
            chart: chart.into(),
            namespace: "shop".into(),
            release_name: format!("{app}-{chart}"),
        }
    }

    fn apply(target: &dyn ApplyTarget, release: &Release, desired: &[Resource]) -> Applied {
        let plan = plan_apply(&target.applied(release).unwrap(), desired).unwrap();
        target.apply(release, &plan).unwrap()
    }

    #[test]
    fn apply_prune_and_remove_round_trip() {
        let root = tempfile::tempdir().unwrap();
        let target: Box<dyn ApplyTarget> = Box::new(DirTarget::new(root.path().join("out")));
        let web = release("shop", "web");
        let desired = parse_manifests(CHART).unwrap();

        let first = apply(target.as_ref(), &web, &desired);
        assert_eq!(first.applied.len(), 3);
        assert_eq!(first.applied[0].kind, "ConfigMap");
        assert!(first.pruned.is_empty());
        let path = root.path().join("out/shop/web.yaml");
        assert_eq!(
            DirTarget::new(root.path().join("out"))
                .path_of(&web)
                .unwrap(),
            path
        );
        let back = target.applied(&web).unwrap();
        let objects: Vec<_> = back.iter().map(Resource::object).collect();
        let expected: Vec<_> = plan_apply(&[], &desired).unwrap().to_apply().to_vec();
        let expected: Vec<_> = expected.iter().map(Resource::object).collect();
        assert_eq!(objects, expected);

        let again = apply(target.as_ref(), &web, &desired);
        assert_eq!(again.unchanged, 3);

        let fewer: Vec<Resource> = desired
            .into_iter()
            .filter(|r| r.id().kind != "Service")
            .collect();
        let second = apply(target.as_ref(), &web, &fewer);
        assert_eq!(second.pruned.len(), 1);
        assert_eq!(second.pruned[0].kind, "Service");
        assert_eq!(second.unchanged, 2);
        let text = fs::read_to_string(&path).unwrap();
        assert!(!text.contains("kind: Service"));
        assert_eq!(target.applied(&web).unwrap().len(), 2);

        let removed = target.remove(&web).unwrap();
        let kinds: Vec<&str> = removed.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(kinds, ["Deployment", "ConfigMap"]);
        assert!(!path.exists());
        assert!(!root.path().join("out/shop").exists());
        assert!(target.applied(&web).unwrap().is_empty());
        assert!(target.remove(&web).unwrap().is_empty());
    }

    #[test]
    fn removing_one_chart_keeps_the_others() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path());
        let desired = parse_manifests(CHART).unwrap();
        apply(&target, &release("shop", "web"), &desired);
        apply(&target, &release("shop", "db"), &desired);
        target.remove(&release("shop", "web")).unwrap();
        assert!(root.path().join("shop/db.yaml").exists());
        assert!(!root.path().join("shop/web.yaml").exists());
        assert_eq!(target.applied(&release("shop", "db")).unwrap().len(), 3);
    }

    #[test]
    fn bytes_are_deterministic() {
        let first = tempfile::tempdir().unwrap();
        let second = tempfile::tempdir().unwrap();
        let web = release("shop", "web");
        apply(
            &DirTarget::new(first.path()),
            &web,
            &parse_manifests(CHART).unwrap(),
        );
        let mut reversed = parse_manifests(CHART).unwrap();
        reversed.reverse();
        apply(&DirTarget::new(second.path()), &web, &reversed);
        let a = fs::read(first.path().join("shop/web.yaml")).unwrap();
        let b = fs::read(second.path().join("shop/web.yaml")).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            String::from_utf8(a).unwrap(),
            "# capstan release shop-web of app shop, chart web, namespace shop
---
apiVersion: v1
data:
  mode: fast
kind: ConfigMap
metadata:
  name: web
  namespace: shop
---
apiVersion: v1
kind: Service
metadata:
  name: web
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
"
        );
    }

    #[test]
    fn hostile_names_are_refused_and_nothing_is_written() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path().join("out"));
        let plan = plan_apply(&[], &parse_manifests(CHART).unwrap()).unwrap();
        let long = "a".repeat(64);
        let hostile = [
            ("..", "web"),
            ("shop", ".."),
            ("../escape", "web"),
            ("shop", "../../escape"),
            ("/etc", "web"),
            ("shop", "a/b"),
            ("", "web"),
            ("shop", ""),
            ("Shop", "web"),
            ("-shop", "web"),
            ("shop", "web-"),
            ("shop", "web.yaml"),
            (long.as_str(), "web"),
        ];
        for (app, chart) in hostile {
            let r = release(app, chart);
            assert!(
                matches!(target.apply(&r, &plan), Err(Error::InvalidName { .. })),
                "{app}/{chart}"
            );
            assert!(matches!(target.remove(&r), Err(Error::InvalidName { .. })));
            assert!(matches!(target.applied(&r), Err(Error::InvalidName { .. })));
        }
        let err = target.apply(&release("shop", "../x"), &plan).unwrap_err();
        assert_eq!(
            err.to_string(),
            "chart name \"../x\" is not a DNS-1123 label"
        );
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
        assert!(target.path_of(&release(&"a".repeat(63), "0")).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_app_folder_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.path().join("shop")).unwrap();
        let target = DirTarget::new(root.path());
        let plan = plan_apply(&[], &parse_manifests(CHART).unwrap()).unwrap();
        let err = target.apply(&release("shop", "web"), &plan).unwrap_err();
        assert!(matches!(err, Error::NotADirectory { .. }));
        assert!(matches!(
            target.applied(&release("shop", "web")),
            Err(Error::NotADirectory { .. })
        ));
        assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_corrupt_file_is_a_typed_error_naming_it() {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir(root.path().join("shop")).unwrap();
        fs::write(root.path().join("shop/web.yaml"), "---\n- not an object\n").unwrap();
        let target = DirTarget::new(root.path());
        let err = target.applied(&release("shop", "web")).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }));
        assert!(
            err.to_string()
                .starts_with("applied manifests of shop/web at ")
        );
        assert!(target.remove(&release("shop", "web")).is_err());
        assert!(root.path().join("shop/web.yaml").exists());
    }

    #[test]
    fn remove_clears_temp_files_a_crash_left() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path());
        let web = release("shop", "web");
        apply(&target, &web, &parse_manifests(CHART).unwrap());
        fs::write(root.path().join("shop/.web.yaml.tmpAbC123"), "partial").unwrap();
        target.remove(&web).unwrap();
        assert!(!root.path().join("shop").exists());
    }
}
