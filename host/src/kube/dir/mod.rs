//! The directory target (`--target dir:PATH`): each applied release is a
//! file `PATH/APP/CHART.yaml`, so the whole lifecycle runs with no cluster.
//!
//! Owns: writing, reading back and removing those files; refusing, before
//! any write, what a real API server would refuse (List kinds, invalid
//! CustomResourceDefinitions, an object another release holds unless the
//! apply adopts it or takes that release over) and what its own reader
//! could not read back (an object nested past the YAML reader's limit);
//! answering kind scopes (the built-in table of [`super::scope`] first,
//! then the valid CustomResourceDefinitions the folder holds, never one
//! shadowing a built-in kind) and lookups from the folder, as its
//! [`ClusterView`]; and the index
//! that keeps those answers cheap as the folder grows: per release file,
//! its stamp and the identities and definitions it holds, read again only
//! when the file changed.
//!
//! Must not touch: anything outside `PATH`. Other releases' files are
//! only read, never written.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use serde_json::Value;

use super::Error;
use super::hooks::HookEvent;
use super::live_diff::LiveDiff;
use super::manifest::{Resource, parse_manifests};
use super::plan::{ApplyPlan, plan_remove};
use super::scope::{builtin_scope, group_of, is_builtin_group};
use super::target::{
    Applied, ApplyOptions, ApplyTarget, NoProgress, ProgressSink, Release, ReleaseEvent,
    RemoveOptions,
};
use super::view::ClusterView;
use crate::model::{LookupQuery, ObjectKey, ObjectRef};

/// Longest app or chart name: a DNS-1123 label.
const MAX_NAME_LEN: usize = 63;

/// The group and kind of a CustomResourceDefinition.
const CRD_GROUP: &str = "apiextensions.k8s.io";
const CRD_KIND: &str = "CustomResourceDefinition";

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
///
/// Before it writes, an apply is checked as an API server would check it
/// ([`ApplyTarget::admit`]): nothing of a refused apply is written.
///
/// Clones share one index of the folder (behind a lock): per release
/// file, its modification time, length and inode, and the identities and
/// CustomResourceDefinitions it holds. A file is parsed again only when
/// one of those three changed; writes through the target update the
/// index themselves. So a scope, a lookup or an ownership check costs a
/// `stat` per release file, not a parse of the folder.
#[derive(Debug, Clone)]
pub struct DirTarget {
    root: PathBuf,
    index: Arc<Mutex<Index>>,
}

impl DirTarget {
    /// A target writing under `root`. Nothing is touched until the first
    /// apply, which creates `root` if it is missing.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DirTarget {
            root: root.into(),
            index: Arc::default(),
        }
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
    /// [`ApplyTarget::apply_with`] with default options: no adoption.
    fn apply(&self, release: &Release, plan: &ApplyPlan) -> Result<Applied, Error> {
        self.apply_with(release, plan, &ApplyOptions::default(), &NoProgress)
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
        self.lock().set(&path, None);
        sync_dir(&dir).map_err(remove_error(&dir))?;
        match fs::remove_dir(&dir) {
            Ok(()) => sync_dir(&self.root).map_err(remove_error(&self.root))?,
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => {}
            Err(e) => ignore_not_found(Err(e)).map_err(remove_error(&dir))?,
        }
        Ok(removed)
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
        Ok(load(release, &path)?.unwrap_or_default().resources)
    }

    /// Refuses, writing nothing, what [`ApplyTarget::apply_with`] would
    /// refuse of `objects` for `release` (see `DirTarget::admit_objects`).
    ///
    /// # Errors
    /// [`Error::InvalidName`], [`Error::ListKind`],
    /// [`Error::InvalidDefinition`], [`Error::Serialize`],
    /// [`Error::Unreadable`] or [`Error::Ownership`] for the first object
    /// refused.
    fn admit(
        &self,
        release: &Release,
        objects: &[Resource],
        options: &ApplyOptions,
    ) -> Result<(), Error> {
        self.path_of(release)?;
        self.admit_objects(release, objects, options).map(drop)
    }

    /// Checks `plan.to_apply()` as [`ApplyTarget::admit`] does, then
    /// writes it as the release's file, replacing the old one; objects in
    /// `plan.to_prune()` are gone because the new file does not hold
    /// them, and are reported as pruned. Of `options`, only
    /// [`ApplyOptions::adopt`] and [`ApplyOptions::take_over`] count.
    ///
    /// # Errors
    /// [`Error::InvalidName`] for a bad app or chart name, what
    /// [`ApplyTarget::admit`] refuses (nothing is then written),
    /// [`Error::NotADirectory`] when the app's folder is a link or a file,
    /// and [`Error::Write`] when creating, writing, syncing or renaming
    /// fails (the old file is then left as it was).
    fn apply_with(
        &self,
        release: &Release,
        plan: &ApplyPlan,
        options: &ApplyOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Applied, Error> {
        let _ = progress;
        let path = self.path_of(release)?;
        let documents = self.admit_objects(release, plan.to_apply(), options)?;
        let text = file_text(release, &documents);
        let dir = self.app_dir(release);
        let write_error = |path: &Path| io_error(WRITE, release, path);
        fs::create_dir_all(&self.root).map_err(write_error(&self.root))?;
        if !dir_exists(release, &dir)? {
            std::os::unix::fs::DirBuilderExt::mode(&mut fs::DirBuilder::new(), 0o700)
                .create(&dir)
                .map_err(write_error(&dir))?;
            sync_dir(&self.root).map_err(write_error(&self.root))?;
        }
        if let Err(source) = write_atomically(&dir, &path, &release.chart, text.as_bytes()) {
            // The file may or may not have been replaced: read it next time.
            self.lock().set(&path, None);
            return Err(write_error(&path)(source));
        }
        self.record(release, &path, plan.to_apply());
        Ok(Applied {
            applied: plan.to_apply().iter().map(|r| r.id().clone()).collect(),
            pruned: plan.to_prune().to_vec(),
            unchanged: plan.unchanged(),
            held: Vec::new(),
        })
    }

    fn apply_method(&self) -> &'static str {
        "file"
    }

    /// `None`: a directory keeps no revision; the lifecycle counts with
    /// the store's copy.
    fn revision(&self, release: &Release) -> Result<Option<u64>, Error> {
        let _ = release;
        Ok(None)
    }

    /// A clone of the target (clones share the folder's index).
    fn view(&self) -> Arc<dyn ClusterView> {
        Arc::new(self.clone())
    }

    /// The file holds whole objects: applies them again around `objects`
    /// ([`super::apply_some_whole`]).
    fn apply_some(
        &self,
        release: &Release,
        objects: &[Resource],
        prune: &[ObjectRef],
    ) -> Result<Applied, Error> {
        super::apply_some_whole(self, release, objects, prune)
    }

    /// A directory runs nothing: refused as [`ApplyTarget::restart`] is.
    fn admit_restart(&self, object: &ObjectRef) -> Result<(), Error> {
        Err(Error::CannotRestart {
            object: object.to_string(),
        })
    }

    /// A directory runs nothing: always [`Error::CannotRestart`].
    fn restart(&self, object: &ObjectRef) -> Result<(), Error> {
        Err(Error::CannotRestart {
            object: object.to_string(),
        })
    }

    /// A directory has no events: records nothing.
    fn record_event(&self, event: &ReleaseEvent) -> Result<(), Error> {
        let _ = event;
        Ok(())
    }

    /// [`ApplyTarget::remove`]: nothing to wait for, nothing to report.
    fn remove_with(
        &self,
        release: &Release,
        options: &RemoveOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Vec<ObjectRef>, Error> {
        let _ = (options, progress);
        self.remove(release)
    }

    /// A directory runs no workloads: runs no hook and succeeds.
    fn run_hooks(
        &self,
        release: &Release,
        event: HookEvent,
        hooks: &[Resource],
        options: &ApplyOptions,
        progress: &dyn ProgressSink,
    ) -> Result<Vec<ObjectRef>, Error> {
        let _ = (release, event, hooks, options, progress);
        Ok(Vec::new())
    }

    /// `None`: the file is all the live state there is; the caller diffs
    /// against [`ApplyTarget::applied`].
    fn diff_live(
        &self,
        release: &Release,
        desired: &[Resource],
        options: &ApplyOptions,
    ) -> Result<Option<Vec<LiveDiff>>, Error> {
        let _ = (release, desired, options);
        Ok(None)
    }
}

/// Kind scopes and lookups answered from the folder. A directory is no
/// API server: it serves no `.Capabilities` of its own and cannot watch
/// (the trait's defaults for [`ClusterView::served`],
/// [`ClusterView::collection_version`] and
/// [`ClusterView::wait_for_change`]).
impl ClusterView for DirTarget {
    /// A built-in kind by the fixed table, without reading the folder;
    /// any other kind of a built-in group is not served (`None`); a kind
    /// of another group by the valid CustomResourceDefinition the folder
    /// holds for it (the first, in path order), `None` when there is none.
    ///
    /// # Errors
    /// [`Error::Read`] or [`Error::Corrupt`] naming a release file that
    /// cannot be read, when no readable file defines the kind (the
    /// unreadable one might).
    fn kind_scope(&self, api_version: &str, kind: &str) -> Result<Option<bool>, Error> {
        let group = group_of(api_version);
        if let Some(namespaced) = builtin_scope(group, kind) {
            return Ok(Some(namespaced));
        }
        if is_builtin_group(group) {
            return Ok(None);
        }
        let index = self.refresh();
        if let Some(namespaced) = index.crds.get(&(group.to_string(), kind.to_string())) {
            return Ok(Some(*namespaced));
        }
        let unreadable = index.unreadable();
        drop(index);
        match first_error(&unreadable) {
            Some(err) => Err(err),
            None => Ok(None),
        }
    }

    /// Answers from what the directory holds: the object of any release
    /// that matches (an empty object when none does), or the list of them.
    /// Only the files the index says hold a match are parsed.
    ///
    /// # Errors
    /// [`Error::Read`] or [`Error::Corrupt`] naming a file that holds a
    /// match but no longer reads; also naming an unreadable release file
    /// when the answer could be missing what it holds (an object not
    /// found, or a list).
    fn read_live(&self, query: &LookupQuery) -> Result<Value, Error> {
        let index = self.refresh();
        let holding: Vec<(PathBuf, Release)> = index
            .files
            .iter()
            .filter(|(_, entry)| {
                entry
                    .held
                    .as_ref()
                    .is_some_and(|held| held.ids.iter().any(|id| id_matches(id, query)))
            })
            .map(|(path, entry)| (path.clone(), entry.release.clone()))
            .collect();
        let unreadable = index.unreadable();
        drop(index);
        let mut items = Vec::new();
        for (path, release) in holding {
            let loaded = load(&release, &path)?.unwrap_or_default();
            for resource in loaded.resources {
                if !matches(&resource, query) {
                    continue;
                }
                if !query.name.is_empty() {
                    return Ok(resource.into_object());
                }
                items.push(resource.into_object());
            }
        }
        if let Some(err) = first_error(&unreadable) {
            return Err(err);
        }
        if !query.name.is_empty() {
            return Ok(serde_json::json!({}));
        }
        Ok(serde_json::json!({
            "apiVersion": query.api_version,
            "kind": format!("{}List", query.kind),
            "metadata": {},
            "items": items,
        }))
    }
}

impl DirTarget {
    /// The checks of [`ApplyTarget::admit`], returning each object's YAML
    /// document as the file will hold it:
    ///
    /// - a List kind is refused ([`Error::ListKind`]): kind `List`, a
    ///   kind ending in `List` of a built-in group, or any kind ending in
    ///   `List` with a top-level `items` array;
    /// - a CustomResourceDefinition an API server would refuse
    ///   ([`Error::InvalidDefinition`]): `spec.group` empty, without a
    ///   dot, or built-in; `spec.names.kind` or `spec.names.plural`
    ///   missing; `spec.scope` not `Namespaced` or `Cluster`; a name other
    ///   than `PLURAL.GROUP`;
    /// - an object whose written document [`parse_manifests`] (the reader
    ///   of [`ApplyTarget::applied`]) does not read back as that one
    ///   object ([`Error::Unreadable`]);
    /// - unless [`ApplyOptions::adopt`], an object that another release's
    ///   file holds and this release's does not, when that release is not
    ///   in [`ApplyOptions::take_over`] ([`Error::Ownership`]). Objects are
    ///   matched by group, kind, namespace and name, the namespace as a
    ///   cluster would place it (the release's for a namespaced object
    ///   naming none, none for a cluster-scoped one).
    fn admit_objects(
        &self,
        release: &Release,
        objects: &[Resource],
        options: &ApplyOptions,
    ) -> Result<Vec<String>, Error> {
        let mut documents = Vec::with_capacity(objects.len());
        for resource in objects {
            refuse_list(resource)?;
            if let Some(reason) = definition_problem(resource) {
                return Err(Error::InvalidDefinition {
                    object: Box::new(resource.id().clone()),
                    reason,
                });
            }
            let document = resource.to_yaml()?;
            read_back(resource, &document)?;
            documents.push(document);
        }
        if !options.adopt {
            self.check_owners(release, objects, options)?;
        }
        Ok(documents)
    }

    /// The ownership rule of [`DirTarget::admit_objects`].
    fn check_owners(
        &self,
        release: &Release,
        objects: &[Resource],
        options: &ApplyOptions,
    ) -> Result<(), Error> {
        let path = self.path_of(release)?;
        let own = release.to_string();
        let batch: Vec<Definition> = objects.iter().filter_map(definition).collect();
        let index = self.refresh();
        for (unreadable, _) in index.unreadable() {
            tracing::warn!(
                file = %unreadable.display(),
                "a release file cannot be read: the objects it holds are not checked for ownership"
            );
        }
        for resource in objects {
            let key = index.key_of(resource.id(), &release.namespace, &batch);
            let Some(holders) = index.holders.get(&key) else {
                continue;
            };
            if holders.contains(&path) {
                continue;
            }
            let refused = holders
                .iter()
                .filter_map(|holder| index.files.get(holder))
                .map(|entry| entry.release.to_string())
                .filter(|holder| *holder != own && !options.take_over.contains(holder))
                .min();
            if let Some(holder) = refused {
                return Err(Error::Ownership {
                    object: Box::new(resource.id().clone()),
                    release: holder,
                });
            }
        }
        Ok(())
    }

    /// The index, brought up to date with the folder: files gone are
    /// dropped, and files new or changed (by their [`Stamp`]) are read and
    /// parsed; the others are not opened.
    fn refresh(&self) -> MutexGuard<'_, Index> {
        let mut index = self.lock();
        let found = release_files(&self.root);
        let gone: Vec<PathBuf> = index
            .files
            .keys()
            .filter(|path| !found.contains_key(*path))
            .cloned()
            .collect();
        let mut changed = !gone.is_empty();
        for path in gone {
            index.files.remove(&path);
        }
        for (path, release) in found {
            let stamp = match fs::metadata(&path) {
                Ok(meta) => Stamp::of(&meta),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    changed |= index.files.remove(&path).is_some();
                    continue;
                }
                Err(_) => Stamp::default(),
            };
            if index.files.get(&path).is_some_and(|e| e.stamp == stamp) {
                continue;
            }
            index.parses += 1;
            let held = match load(&release, &path) {
                Ok(Some(loaded)) => Some(Held::of(&loaded.resources, loaded.namespace)),
                Ok(None) => Some(Held::default()),
                Err(_) => None,
            };
            index.files.insert(
                path,
                Entry {
                    release,
                    stamp,
                    held,
                },
            );
            changed = true;
        }
        if changed {
            index.rebuild();
        }
        index
    }

    /// Records in the index what was just written to `path` for
    /// `release`, with the file's stamp now (dropping the entry when the
    /// file cannot be looked at, so the next refresh reads it).
    fn record(&self, release: &Release, path: &Path, objects: &[Resource]) {
        let mut index = self.lock();
        let entry = fs::metadata(path).ok().map(|meta| Entry {
            release: bare(release),
            stamp: Stamp::of(&meta),
            held: Some(Held::of(objects, release.namespace.clone())),
        });
        index.set(path, entry);
    }

    fn lock(&self) -> MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many release files the index has parsed so far.
    #[cfg(test)]
    fn parses(&self) -> usize {
        self.lock().parses
    }
}

/// How a release file's first line starts.
const HEADER: &str = "# capstan release ";

/// Refuses a List kind, as an API server does (see
/// [`DirTarget::admit_objects`]).
fn refuse_list(resource: &Resource) -> Result<(), Error> {
    let id = resource.id();
    let listy = id.kind == "List"
        || id.kind.ends_with("List")
            && (is_builtin_group(id.group())
                || resource.object().get("items").is_some_and(Value::is_array));
    match listy {
        true => Err(Error::ListKind {
            object: Box::new(id.clone()),
        }),
        false => Ok(()),
    }
}

/// Whether `resource` is a CustomResourceDefinition (of
/// `apiextensions.k8s.io`; a kind of that name in another group is a
/// custom resource like any other).
fn is_definition(resource: &Resource) -> bool {
    resource.id().kind == CRD_KIND && resource.id().group() == CRD_GROUP
}

/// Why an API server would refuse `resource` as a
/// CustomResourceDefinition; `None` when it would not (or when it is no
/// definition).
fn definition_problem(resource: &Resource) -> Option<String> {
    if !is_definition(resource) {
        return None;
    }
    let text = |pointer: &str| {
        resource
            .object()
            .pointer(pointer)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let Some(group) = text("/spec/group") else {
        return Some("spec.group is empty".into());
    };
    if !group.contains('.') {
        return Some(format!(
            "spec.group {group:?} has no dot (it must be a domain, such as example.com)"
        ));
    }
    if is_builtin_group(group) {
        return Some(format!(
            "spec.group {group:?} is a built-in API group, which no definition may extend"
        ));
    }
    let Some(kind) = text("/spec/names/kind") else {
        return Some("spec.names.kind is missing".into());
    };
    if kind == "List" {
        return Some("spec.names.kind may not be List".into());
    }
    let Some(plural) = text("/spec/names/plural") else {
        return Some("spec.names.plural is missing".into());
    };
    match text("/spec/scope") {
        Some("Namespaced" | "Cluster") => {}
        Some(other) => {
            return Some(format!(
                "spec.scope is {other:?}, not Namespaced or Cluster"
            ));
        }
        None => return Some("spec.scope is missing".into()),
    }
    let name = format!("{plural}.{group}");
    if resource.id().name != name {
        return Some(format!(
            "its name must be spec.names.plural.spec.group, {name}"
        ));
    }
    None
}

/// The kind `resource` defines, when it is a valid
/// CustomResourceDefinition.
fn definition(resource: &Resource) -> Option<Definition> {
    if !is_definition(resource) || definition_problem(resource).is_some() {
        return None;
    }
    let text = |pointer: &str| resource.object().pointer(pointer).and_then(Value::as_str);
    Some(Definition {
        group: text("/spec/group")?.to_string(),
        kind: text("/spec/names/kind")?.to_string(),
        namespaced: text("/spec/scope")? == "Namespaced",
    })
}

/// Refuses `resource` unless `document`, its YAML as the file will hold
/// it, reads back with the file's reader as one object of the same
/// identity.
fn read_back(resource: &Resource, document: &str) -> Result<(), Error> {
    let refuse = |source| Error::Unreadable {
        object: Box::new(resource.id().clone()),
        source,
    };
    match parse_manifests(&format!("---\n{document}")) {
        Ok(back) if back.len() == 1 && back.first().map(Resource::id) == Some(resource.id()) => {
            Ok(())
        }
        Ok(_) => Err(refuse(None)),
        Err(err) => Err(refuse(Some(Box::new(err)))),
    }
}

/// Whether `id` is what `query` names (see [`matches`]).
fn id_matches(id: &ObjectRef, query: &LookupQuery) -> bool {
    id.api_version == query.api_version
        && id.kind == query.kind
        && (query.namespace.is_empty() || id.namespace.as_deref() == Some(&*query.namespace))
        && (query.name.is_empty() || id.name == query.name)
}

/// Whether `resource` is what `query` names (any name for a list; any
/// namespace for an empty one).
fn matches(resource: &Resource, query: &LookupQuery) -> bool {
    id_matches(resource.id(), query)
}

/// The file's bytes: a comment naming the release, then each document
/// after a `---` line.
fn file_text(release: &Release, documents: &[String]) -> String {
    let mut text = format!(
        "{HEADER}{} of app {}, chart {}, namespace {}\n",
        release.release_name, release.app, release.chart, release.namespace
    );
    for document in documents {
        text.push_str("---\n");
        text.push_str(document);
    }
    text
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

mod index;
use index::*;

#[cfg(test)]
mod tests;
