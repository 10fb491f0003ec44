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
//! shadowing a built-in kind) and lookups from the folder; and the index
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
use super::manifest::{Resource, parse_manifests};
use super::plan::{ApplyPlan, plan_remove};
use super::scope::{builtin_scope, group_of, is_builtin_group};
use super::target::{Applied, ApplyOptions, ApplyTarget, NoProgress, ProgressSink, Release};
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
        })
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

/// What identifies a release file's version: a rewrite renames a new file
/// in (a new inode), an edit in place changes the length or the time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Self {
        Stamp {
            modified: meta.modified().ok(),
            len: meta.len(),
            inode: std::os::unix::fs::MetadataExt::ino(meta),
        }
    }
}

/// A CustomResourceDefinition's kind and scope.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Definition {
    group: String,
    kind: String,
    namespaced: bool,
}

/// What one release file holds, as the index keeps it.
#[derive(Debug, Default)]
struct Held {
    /// The namespace its header names (the release's), empty when none.
    namespace: String,
    /// Every object's identity, in file order.
    ids: Vec<ObjectRef>,
    /// The valid CustomResourceDefinitions among them.
    crds: Vec<Definition>,
}

impl Held {
    fn of(resources: &[Resource], namespace: String) -> Self {
        Held {
            namespace,
            ids: resources.iter().map(|r| r.id().clone()).collect(),
            crds: resources.iter().filter_map(definition).collect(),
        }
    }
}

/// One release file in the index.
#[derive(Debug)]
struct Entry {
    /// The release it is (its app and chart; namespace and name empty).
    release: Release,
    stamp: Stamp,
    /// `None` when the file cannot be read or parsed.
    held: Option<Held>,
}

/// The directory target's index of its folder (see [`DirTarget`]).
#[derive(Debug, Default)]
struct Index {
    /// Every release file, in path order (app, then chart).
    files: BTreeMap<PathBuf, Entry>,
    /// The scope of each kind a valid CustomResourceDefinition defines:
    /// the first file's, in path order.
    crds: HashMap<(String, String), bool>,
    /// The files holding each object, by its placed key
    /// ([`Index::key_of`]).
    holders: HashMap<ObjectKey, Vec<PathBuf>>,
    /// How many times a file was parsed to fill the index.
    parses: usize,
}

impl Index {
    /// The scope of `group`/`kind`: the built-in table, then the folder's
    /// definitions, then those of `batch`; `None` when unknown.
    fn scope(&self, group: &str, kind: &str, batch: &[Definition]) -> Option<bool> {
        if let Some(namespaced) = builtin_scope(group, kind) {
            return Some(namespaced);
        }
        if is_builtin_group(group) {
            return None;
        }
        self.crds
            .get(&(group.to_string(), kind.to_string()))
            .copied()
            .or_else(|| {
                batch
                    .iter()
                    .find(|d| d.group == group && d.kind == kind)
                    .map(|d| d.namespaced)
            })
    }

    /// `id`'s key where a cluster would place it for a release in
    /// `namespace`: no namespace for a cluster-scoped kind, the release's
    /// for a namespaced object naming none, as written for a kind of
    /// unknown scope.
    fn key_of(&self, id: &ObjectRef, namespace: &str, batch: &[Definition]) -> ObjectKey {
        let mut key = id.key();
        match self.scope(&key.group, &key.kind, batch) {
            Some(false) => key.namespace = None,
            Some(true) if key.namespace.is_none() && !namespace.is_empty() => {
                key.namespace = Some(namespace.to_string());
            }
            _ => {}
        }
        key
    }

    /// Recomputes the definitions and holders from every entry.
    fn rebuild(&mut self) {
        self.crds.clear();
        for held in self.files.values().filter_map(|e| e.held.as_ref()) {
            for d in &held.crds {
                self.crds
                    .entry((d.group.clone(), d.kind.clone()))
                    .or_insert(d.namespaced);
            }
        }
        let mut holders: HashMap<ObjectKey, Vec<PathBuf>> = HashMap::new();
        for (path, held) in self
            .files
            .iter()
            .filter_map(|(path, e)| Some((path, e.held.as_ref()?)))
        {
            for id in &held.ids {
                holders
                    .entry(self.key_of(id, &held.namespace, &[]))
                    .or_default()
                    .push(path.clone());
            }
        }
        self.holders = holders;
    }

    /// Replaces the entry of `path` (removes it for `None`): in place
    /// when the definitions stay as they were, else by a rebuild.
    fn set(&mut self, path: &Path, entry: Option<Entry>) {
        fn definitions(e: Option<&Entry>) -> Option<&Vec<Definition>> {
            e.and_then(|e| e.held.as_ref()).map(|h| &h.crds)
        }
        let same_definitions = {
            let old = definitions(self.files.get(path));
            let new = definitions(entry.as_ref());
            (old.is_none_or(Vec::is_empty) && new.is_none_or(Vec::is_empty)) || old == new
        };
        if !same_definitions {
            match entry {
                Some(entry) => self.files.insert(path.to_path_buf(), entry),
                None => self.files.remove(path),
            };
            self.rebuild();
            return;
        }
        let old_keys = self.keys_of(self.files.get(path));
        for key in old_keys {
            if let Some(paths) = self.holders.get_mut(&key) {
                paths.retain(|p| p != path);
                if paths.is_empty() {
                    self.holders.remove(&key);
                }
            }
        }
        let new_keys = self.keys_of(entry.as_ref());
        for key in new_keys {
            let paths = self.holders.entry(key).or_default();
            if !paths.iter().any(|p| p == path) {
                paths.push(path.to_path_buf());
            }
        }
        match entry {
            Some(entry) => self.files.insert(path.to_path_buf(), entry),
            None => self.files.remove(path),
        };
    }

    fn keys_of(&self, entry: Option<&Entry>) -> Vec<ObjectKey> {
        let Some(held) = entry.and_then(|e| e.held.as_ref()) else {
            return Vec::new();
        };
        held.ids
            .iter()
            .map(|id| self.key_of(id, &held.namespace, &[]))
            .collect()
    }

    /// The release files that cannot be read or parsed, with their
    /// releases.
    fn unreadable(&self) -> Vec<(PathBuf, Release)> {
        self.files
            .iter()
            .filter(|(_, entry)| entry.held.is_none())
            .map(|(path, entry)| (path.clone(), entry.release.clone()))
            .collect()
    }
}

/// The error reading the first of `unreadable` gives now, naming the file
/// (`None` when each reads by now).
fn first_error(unreadable: &[(PathBuf, Release)]) -> Option<Error> {
    unreadable
        .iter()
        .find_map(|(path, release)| load(release, path).err())
}

/// Every release file under `root`, in path order, with its release (app
/// and chart only). Folders that are links, and names that are not
/// DNS-1123 labels (temporary files among them), are passed over.
fn release_files(root: &Path) -> BTreeMap<PathBuf, Release> {
    let mut out = BTreeMap::new();
    let Ok(apps) = fs::read_dir(root) else {
        return out;
    };
    for app in apps.filter_map(Result::ok).map(|e| e.path()) {
        let Ok(meta) = fs::symlink_metadata(&app) else {
            continue;
        };
        let Some(app_name) = app.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !meta.is_dir() || check_label("app", app_name).is_err() {
            continue;
        }
        let Ok(files) = fs::read_dir(&app) else {
            continue;
        };
        for file in files.filter_map(Result::ok).map(|e| e.path()) {
            let Some(chart) = file
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".yaml"))
            else {
                continue;
            };
            if check_label("chart", chart).is_err() {
                continue;
            }
            let release = Release {
                app: app_name.to_string(),
                chart: chart.to_string(),
                namespace: String::new(),
                release_name: String::new(),
            };
            out.insert(file, release);
        }
    }
    out
}

/// `release` with only what names its file (app and chart).
fn bare(release: &Release) -> Release {
    Release {
        app: release.app.clone(),
        chart: release.chart.clone(),
        namespace: String::new(),
        release_name: String::new(),
    }
}

/// One release file, read and parsed.
#[derive(Debug, Default)]
struct Loaded {
    /// The namespace its header names; empty when it names none.
    namespace: String,
    resources: Vec<Resource>,
}

/// Reads and parses `path`, `release`'s file; `None` when there is none.
///
/// # Errors
/// [`Error::Read`] when it cannot be read, [`Error::Corrupt`] when it
/// does not parse; both name the release and the file.
fn load(release: &Release, path: &Path) -> Result<Option<Loaded>, Error> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(io_error(READ, release, path)(source)),
    };
    let resources = parse_manifests(&text).map_err(|source| Error::Corrupt {
        release: release.to_string(),
        path: path.to_path_buf(),
        source: Box::new(source),
    })?;
    let namespace = text
        .lines()
        .next()
        .filter(|line| line.starts_with(HEADER))
        .and_then(|line| line.rsplit_once(", namespace "))
        .map_or_else(String::new, |(_, namespace)| namespace.to_string());
    Ok(Some(Loaded {
        namespace,
        resources,
    }))
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
        let db = parse_manifests(&CHART.replace("name: web", "name: db")).unwrap();
        apply(&target, &release("shop", "db"), &db);
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

    fn resource(object: serde_json::Value) -> Resource {
        Resource::from_value(object, "test").unwrap()
    }

    fn config_map(namespace: Option<&str>, name: &str) -> Resource {
        let mut object = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"k": "v"},
        });
        if let Some(namespace) = namespace {
            object["metadata"]["namespace"] = namespace.into();
        }
        resource(object)
    }

    fn crd(name: &str, group: &str, kind: &str, scope: &str) -> Resource {
        resource(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "scope": scope,
                     "names": {"kind": kind, "plural": name.split('.').next().unwrap_or("")},
                     "versions": [{"name": "v1", "served": true, "storage": true}]},
        }))
    }

    fn try_apply(
        target: &DirTarget,
        release: &Release,
        desired: &[Resource],
        options: &ApplyOptions,
    ) -> Result<Applied, Error> {
        let plan = plan_apply(&target.applied(release)?, desired)?;
        target.apply_with(release, &plan, options, &NoProgress)
    }

    /// Every file under `root` with its bytes.
    fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for app in fs::read_dir(root).into_iter().flatten().flatten() {
            for file in fs::read_dir(app.path()).into_iter().flatten().flatten() {
                out.push((file.path(), fs::read(file.path()).unwrap()));
            }
        }
        out.sort();
        out
    }

    /// A ConfigMap whose `data` nests `depth` maps deep.
    fn nested(depth: usize) -> Resource {
        let mut inner = serde_json::json!("leaf");
        for _ in 0..depth {
            inner = serde_json::json!({ "x": inner });
        }
        resource(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "deep", "namespace": "shop"}, "data": inner,
        }))
    }

    #[test]
    fn a_definition_cannot_claim_a_builtin_kind() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path());
        let ops = release("ops", "crds");
        let refused = [
            (
                crd("secrets", "", "Secret", "Cluster"),
                "spec.group is empty",
            ),
            (
                crd("secrets.apps", "apps", "Secret", "Cluster"),
                "has no dot",
            ),
            (
                crd(
                    "widgets.networking.k8s.io",
                    "networking.k8s.io",
                    "Widget",
                    "Cluster",
                ),
                "is a built-in API group",
            ),
            (
                crd("widgets.example.com", "example.com", "Widget", ""),
                "spec.scope is missing",
            ),
            (
                crd("widgets.example.com", "example.com", "Widget", "Global"),
                "not Namespaced",
            ),
            (
                crd("widgets.example.com", "example.com", "", "Cluster"),
                "spec.names.kind",
            ),
            (
                crd(".example.com", "example.com", "Widget", "Cluster"),
                "spec.names.plural",
            ),
            (
                crd("gadgets.example.com", "other.com", "Widget", "Cluster"),
                "its name must be",
            ),
        ];
        for (definition, reason) in refused {
            let admitted = target.admit(
                &ops,
                std::slice::from_ref(&definition),
                &ApplyOptions::default(),
            );
            assert!(
                matches!(admitted, Err(Error::InvalidDefinition { .. })),
                "{reason}"
            );
            let err =
                try_apply(&target, &ops, &[definition], &ApplyOptions::default()).unwrap_err();
            assert!(matches!(err, Error::InvalidDefinition { .. }), "{err}");
            assert!(err.to_string().contains(reason), "{err}");
        }
        assert!(snapshot(root.path()).is_empty(), "nothing written");

        // Planted by hand, such definitions still change no answer.
        fs::create_dir(root.path().join("evil")).unwrap();
        let planted: Vec<Resource> = vec![
            crd("secrets", "", "Secret", "Cluster"),
            crd("secrets.apps", "apps", "Deployment", "Cluster"),
            crd("widgets.apps", "apps", "Widget", "Cluster"),
            crd(
                "widgets.networking.k8s.io",
                "networking.k8s.io",
                "Widget",
                "Cluster",
            ),
        ];
        let documents: Vec<String> = planted.iter().map(|r| r.to_yaml().unwrap()).collect();
        fs::write(
            root.path().join("evil/x.yaml"),
            file_text(&release("evil", "x"), &documents),
        )
        .unwrap();
        assert_eq!(target.kind_scope("v1", "Secret").unwrap(), Some(true));
        assert_eq!(
            target.kind_scope("apps/v1", "Deployment").unwrap(),
            Some(true)
        );
        assert_eq!(target.kind_scope("apps/v1", "Widget").unwrap(), None);
        assert_eq!(
            target.kind_scope("networking.k8s.io/v1", "Widget").unwrap(),
            None
        );

        // A valid definition serves its kind, in its group only.
        try_apply(
            &target,
            &ops,
            &[crd(
                "widgets.example.com",
                "example.com",
                "Widget",
                "Cluster",
            )],
            &ApplyOptions::default(),
        )
        .unwrap();
        assert_eq!(
            target.kind_scope("example.com/v1", "Widget").unwrap(),
            Some(false)
        );
        assert_eq!(target.kind_scope("example.com/v1", "Gadget").unwrap(), None);
        assert_eq!(target.kind_scope("other.com/v1", "Widget").unwrap(), None);
    }

    #[test]
    fn list_kinds_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path());
        let web = release("shop", "web");
        let item = config_map(Some("shop"), "a").into_object();
        let lists = [
            serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {"name": "l"}, "items": [item]}),
            serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {"name": "l"}}),
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"name": "l"}, "items": []}),
            serde_json::json!({"apiVersion": "v1", "kind": "SecretList", "metadata": {"name": "l"}}),
            serde_json::json!({"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {"name": "l"}}),
            serde_json::json!({"apiVersion": "example.com/v1", "kind": "WidgetList", "metadata": {"name": "l"}, "items": []}),
        ];
        for list in lists {
            let list = resource(list);
            let err = try_apply(
                &target,
                &web,
                &[config_map(Some("shop"), "b"), list.clone()],
                &ApplyOptions::default(),
            )
            .unwrap_err();
            assert!(matches!(err, Error::ListKind { .. }), "{err}");
            assert_eq!(
                err.to_string(),
                format!(
                    "{} is a list, which an API server does not store; apply its items one by one",
                    list.id()
                )
            );
            assert!(
                target
                    .admit(&web, &[list], &ApplyOptions::default())
                    .is_err()
            );
        }
        assert!(snapshot(root.path()).is_empty(), "nothing written");
        // A custom kind that only ends in List, without items, is no list.
        let wish = resource(serde_json::json!({
            "apiVersion": "example.com/v1", "kind": "WishList", "metadata": {"name": "w", "namespace": "shop"},
        }));
        try_apply(&target, &web, &[wish], &ApplyOptions::default()).unwrap();
    }

    #[test]
    fn newer_cluster_scoped_kinds_are_cluster_scoped() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path());
        for (api_version, kind) in [
            ("storage.k8s.io/v1", "VolumeAttributesClass"),
            ("networking.k8s.io/v1", "ServiceCIDR"),
            ("networking.k8s.io/v1", "IPAddress"),
            ("resource.k8s.io/v1", "DeviceClass"),
            ("resource.k8s.io/v1", "ResourceSlice"),
            ("certificates.k8s.io/v1beta1", "ClusterTrustBundle"),
            ("storagemigration.k8s.io/v1beta1", "StorageVersionMigration"),
            ("internal.apiserver.k8s.io/v1alpha1", "StorageVersion"),
        ] {
            assert_eq!(
                target.kind_scope(api_version, kind).unwrap(),
                Some(false),
                "{kind}"
            );
        }
        assert_eq!(target.kind_scope("v1", "ConfigMap").unwrap(), Some(true));
        assert_eq!(target.kind_scope("v1", "Widget").unwrap(), None);
        assert_eq!(target.kind_scope("apps/v1", "Secret").unwrap(), None);
        assert_eq!(target.kind_scope("example.com/v1", "Widget").unwrap(), None);
    }

    #[test]
    fn an_object_too_deep_to_read_back_is_refused_and_nothing_written() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path());
        let web = release("shop", "web");
        apply(&target, &web, &parse_manifests(CHART).unwrap());
        apply(
            &target,
            &release("other", "app"),
            &[config_map(Some("other"), "o")],
        );
        let before = snapshot(root.path());

        let mut desired = parse_manifests(CHART).unwrap();
        desired.push(nested(120));
        let err = try_apply(&target, &web, &desired, &ApplyOptions::default()).unwrap_err();
        assert!(matches!(err, Error::Unreadable { .. }), "{err}");
        assert!(
            err.to_string()
                .starts_with("ConfigMap shop/deep (v1) cannot be written"),
            "{err}"
        );
        assert!(matches!(
            target.admit(
                &release("new", "app"),
                &[nested(120)],
                &ApplyOptions::default()
            ),
            Err(Error::Unreadable { .. })
        ));
        assert_eq!(snapshot(root.path()), before, "files unchanged");
        assert_eq!(target.applied(&web).unwrap().len(), 3);
        assert_eq!(target.kind_scope("example.com/v1", "Widget").unwrap(), None);

        // Within the reader's limit, it is written and reads back.
        desired.pop();
        desired.push(nested(90));
        try_apply(&target, &web, &desired, &ApplyOptions::default()).unwrap();
        assert_eq!(target.applied(&web).unwrap().len(), 4);
    }

    #[test]
    fn an_object_another_release_holds_needs_adopt_or_take_over() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path());
        let (a, b) = (release("a", "x"), release("b", "y"));
        let shared = config_map(Some("shop"), "shared");
        apply(&target, &a, std::slice::from_ref(&shared));
        let before = snapshot(root.path());

        let err = try_apply(
            &target,
            &b,
            std::slice::from_ref(&shared),
            &ApplyOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "ConfigMap shop/shared (v1) already exists and is owned by capstan release a/x; pass --adopt to take it over"
        );
        // Placed in the release's namespace, the same object.
        let unplaced = config_map(None, "shared");
        assert!(matches!(
            try_apply(&target, &b, &[unplaced], &ApplyOptions::default()),
            Err(Error::Ownership { .. })
        ));
        // apply, and the default apply_some, do not adopt.
        let plan = plan_apply(&[], std::slice::from_ref(&shared)).unwrap();
        assert!(matches!(
            target.apply(&b, &plan),
            Err(Error::Ownership { .. })
        ));
        assert!(matches!(
            target.apply_some(&b, std::slice::from_ref(&shared), &[]),
            Err(Error::Ownership { .. })
        ));
        let err = target
            .admit(&b, std::slice::from_ref(&shared), &ApplyOptions::default())
            .unwrap_err();
        assert!(matches!(err, Error::Ownership { ref release, .. } if release == "a/x"));
        assert_eq!(snapshot(root.path()), before, "nothing written");

        // The holder itself may apply it again; another object is free.
        apply(&target, &a, std::slice::from_ref(&shared));
        apply(&target, &b, &[config_map(Some("shop"), "mine")]);

        let adopt = ApplyOptions {
            adopt: true,
            ..ApplyOptions::default()
        };
        target
            .admit(&b, std::slice::from_ref(&shared), &adopt)
            .unwrap();
        try_apply(&target, &b, std::slice::from_ref(&shared), &adopt).unwrap();
        // Once held, b re-applies it without adopting (as a cluster's
        // inventory allows), and so may a.
        try_apply(
            &target,
            &b,
            std::slice::from_ref(&shared),
            &ApplyOptions::default(),
        )
        .unwrap();
        apply(&target, &a, std::slice::from_ref(&shared));

        let c = release("c", "z");
        let take_a = ApplyOptions {
            take_over: vec!["a/x".into()],
            ..ApplyOptions::default()
        };
        // b holds it as well now: taking a over is not enough.
        assert!(matches!(
            try_apply(&target, &c, std::slice::from_ref(&shared), &take_a),
            Err(Error::Ownership { ref release, .. }) if release == "b/y"
        ));
        target.remove(&b).unwrap();
        target
            .admit(&c, std::slice::from_ref(&shared), &take_a)
            .unwrap();
        try_apply(&target, &c, std::slice::from_ref(&shared), &take_a).unwrap();

        // An update renaming a chart hands its objects over in one app.
        let (old, new) = (release("shop", "web"), release("shop", "web2"));
        apply(&target, &old, &parse_manifests(CHART).unwrap());
        assert!(
            try_apply(
                &target,
                &new,
                &parse_manifests(CHART).unwrap(),
                &ApplyOptions::default()
            )
            .is_err()
        );
        let take_old = ApplyOptions {
            take_over: vec!["shop/web".into()],
            ..ApplyOptions::default()
        };
        try_apply(&target, &new, &parse_manifests(CHART).unwrap(), &take_old).unwrap();
        target.remove(&old).unwrap();
        try_apply(
            &target,
            &new,
            &parse_manifests(CHART).unwrap(),
            &ApplyOptions::default(),
        )
        .unwrap();
    }

    #[test]
    fn cluster_scoped_objects_conflict_across_namespaces() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path());
        let class = |namespace: &str| {
            resource(serde_json::json!({
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": "fast", "namespace": namespace},
            }))
        };
        apply(&target, &release("a", "x"), &[class("one")]);
        let mut b = release("b", "y");
        b.namespace = "two".into();
        assert!(matches!(
            try_apply(&target, &b, &[class("two")], &ApplyOptions::default()),
            Err(Error::Ownership { .. })
        ));
        // A namespaced object of the same name in another namespace is not.
        apply(&target, &release("a", "x"), &[config_map(None, "cm")]);
        try_apply(
            &target,
            &b,
            &[config_map(None, "cm")],
            &ApplyOptions::default(),
        )
        .unwrap();
    }

    #[test]
    fn the_index_sees_a_file_changed_behind_its_back() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path());
        let ops = release("ops", "crds");
        apply(
            &target,
            &ops,
            &[crd(
                "widgets.example.com",
                "example.com",
                "Widget",
                "Namespaced",
            )],
        );
        assert_eq!(
            target.kind_scope("example.com/v1", "Widget").unwrap(),
            Some(true)
        );
        assert_eq!(target.parses(), 0, "the write filled the index");

        // Another process rewrites the file: longer, and cluster-scoped.
        let path = target.path_of(&ops).unwrap();
        let old = fs::read_to_string(&path).unwrap();
        let documents = [
            crd("widgets.example.com", "example.com", "Widget", "Cluster")
                .to_yaml()
                .unwrap(),
            config_map(Some("ops"), "planted").to_yaml().unwrap(),
        ];
        let new = file_text(&ops, &documents);
        assert_ne!(old.len(), new.len());
        fs::write(&path, new).unwrap();
        assert_eq!(
            target.kind_scope("example.com/v1", "Widget").unwrap(),
            Some(false)
        );
        assert_eq!(target.parses(), 1);
        // Its objects now count for ownership and lookups.
        let err = try_apply(
            &target,
            &release("b", "y"),
            &[config_map(Some("ops"), "planted")],
            &ApplyOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(err, Error::Ownership { ref release, .. } if release == "ops/crds"));
        let query = LookupQuery {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "ops".into(),
            name: "planted".into(),
        };
        assert_eq!(
            target.read_live(&query).unwrap()["metadata"]["name"],
            "planted"
        );
        assert_eq!(target.parses(), 1, "parsed once");

        // A clone shares the index; a removed file leaves it.
        let clone = target.clone();
        fs::remove_file(&path).unwrap();
        assert_eq!(clone.kind_scope("example.com/v1", "Widget").unwrap(), None);
        assert_eq!(target.read_live(&query).unwrap(), serde_json::json!({}));
        try_apply(
            &target,
            &release("b", "y"),
            &[config_map(Some("ops"), "planted")],
            &ApplyOptions::default(),
        )
        .unwrap();
    }

    #[test]
    fn scopes_and_lookups_do_not_parse_the_folder_again() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path());
        let big: Vec<Resource> = (0..2000)
            .map(|i| config_map(Some("big"), &format!("cm-{i}")))
            .collect();
        apply(&target, &release("big", "all"), &big);
        apply(
            &target,
            &release("ops", "crds"),
            &[crd(
                "widgets.example.com",
                "example.com",
                "Widget",
                "Namespaced",
            )],
        );
        // Written by another process: parsed once.
        let fresh = DirTarget::new(root.path());
        for i in 0..100 {
            assert_eq!(fresh.kind_scope("v1", "Secret").unwrap(), Some(true));
            assert_eq!(
                fresh.kind_scope("example.com/v1", "Widget").unwrap(),
                Some(true)
            );
            let mine = release("small", "app");
            try_apply(
                &fresh,
                &mine,
                &[config_map(Some("small"), &format!("s-{i}"))],
                &ApplyOptions::default(),
            )
            .unwrap();
        }
        assert_eq!(fresh.parses(), 2, "each file parsed once");
        let query = LookupQuery {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "small".into(),
            name: String::new(),
        };
        assert_eq!(
            fresh.read_live(&query).unwrap()["items"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        assert_eq!(fresh.parses(), 2);
    }

    #[test]
    fn kind_scope_reads_no_file_for_a_builtin_kind() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path());
        fs::create_dir(root.path().join("shop")).unwrap();
        fs::write(root.path().join("shop/web.yaml"), "a: [unclosed\n").unwrap();
        assert_eq!(target.kind_scope("v1", "Secret").unwrap(), Some(true));
        assert_eq!(target.kind_scope("apps/v1", "Widget").unwrap(), None);
        assert_eq!(target.parses(), 0);
    }

    #[test]
    fn another_apps_corrupt_file_is_named_and_does_not_stop_this_one() {
        let root = tempfile::tempdir().unwrap();
        let target = DirTarget::new(root.path());
        let web = release("shop", "web");
        apply(&target, &web, &parse_manifests(CHART).unwrap());
        apply(
            &target,
            &release("ops", "crds"),
            &[crd(
                "widgets.example.com",
                "example.com",
                "Widget",
                "Cluster",
            )],
        );
        fs::create_dir(root.path().join("other")).unwrap();
        let bad = root.path().join("other/bad.yaml");
        fs::write(&bad, "---\n- not an object\n").unwrap();

        apply(&target, &web, &parse_manifests(CHART).unwrap());
        assert_eq!(target.kind_scope("v1", "Secret").unwrap(), Some(true));
        assert_eq!(
            target.kind_scope("example.com/v1", "Widget").unwrap(),
            Some(false)
        );
        let query = LookupQuery {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "shop".into(),
            name: "web".into(),
        };
        assert_eq!(target.read_live(&query).unwrap()["data"]["mode"], "fast");

        // Answers the bad file could change are errors naming it.
        let err = target.kind_scope("example.com/v1", "Gadget").unwrap_err();
        assert!(
            matches!(err, Error::Corrupt { ref path, .. } if *path == bad),
            "{err}"
        );
        assert!(
            err.to_string()
                .starts_with("applied manifests of other/bad at ")
        );
        let missing = LookupQuery {
            name: "nope".into(),
            ..query.clone()
        };
        assert!(
            matches!(target.read_live(&missing), Err(Error::Corrupt { ref path, .. }) if *path == bad)
        );
        let list = LookupQuery {
            name: String::new(),
            ..query
        };
        assert!(matches!(
            target.read_live(&list),
            Err(Error::Corrupt { .. })
        ));

        // Repaired, it is read again.
        fs::write(&bad, "# empty\n").unwrap();
        assert_eq!(target.kind_scope("example.com/v1", "Gadget").unwrap(), None);
        assert_eq!(target.read_live(&missing).unwrap(), serde_json::json!({}));
    }
}
