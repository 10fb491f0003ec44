//! The directory target's index of its release files: each file's stamp
//! (modification time, length, inode), the objects it holds and the
//! CRDs' scopes, so that a file is parsed again only when it changed and
//! ownership is a map lookup.

use super::*;

/// What identifies a release file's version: a rewrite renames a new file
/// in (a new inode), an edit in place changes the length or the time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Stamp {
    pub(super) modified: Option<SystemTime>,
    pub(super) len: u64,
    pub(super) inode: u64,
}

impl Stamp {
    pub(super) fn of(meta: &fs::Metadata) -> Self {
        Stamp {
            modified: meta.modified().ok(),
            len: meta.len(),
            inode: std::os::unix::fs::MetadataExt::ino(meta),
        }
    }
}

/// A CustomResourceDefinition's kind and scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Definition {
    pub(super) group: String,
    pub(super) kind: String,
    pub(super) namespaced: bool,
}

/// What one release file holds, as the index keeps it.
#[derive(Debug, Default)]
pub(super) struct Held {
    /// The namespace its header names (the release's), empty when none.
    pub(super) namespace: String,
    /// Every object's identity, in file order.
    pub(super) ids: Vec<ObjectRef>,
    /// The valid CustomResourceDefinitions among them.
    pub(super) crds: Vec<Definition>,
}

impl Held {
    pub(super) fn of(resources: &[Resource], namespace: String) -> Self {
        Held {
            namespace,
            ids: resources.iter().map(|r| r.id().clone()).collect(),
            crds: resources.iter().filter_map(definition).collect(),
        }
    }
}

/// One release file in the index.
#[derive(Debug)]
pub(super) struct Entry {
    /// The release it is (its app and chart; namespace and name empty).
    pub(super) release: Release,
    pub(super) stamp: Stamp,
    /// `None` when the file cannot be read or parsed.
    pub(super) held: Option<Held>,
}

/// The directory target's index of its folder (see [`DirTarget`]).
#[derive(Debug, Default)]
pub(super) struct Index {
    /// Every release file, in path order (app, then chart).
    pub(super) files: BTreeMap<PathBuf, Entry>,
    /// The scope of each kind a valid CustomResourceDefinition defines:
    /// the first file's, in path order.
    pub(super) crds: HashMap<(String, String), bool>,
    /// The files holding each object, by its placed key
    /// ([`Index::key_of`]).
    pub(super) holders: HashMap<ObjectKey, Vec<PathBuf>>,
    /// How many times a file was parsed to fill the index.
    pub(super) parses: usize,
}

impl Index {
    /// The scope of `group`/`kind`: the built-in table, then the folder's
    /// definitions, then those of `batch`; `None` when unknown.
    pub(super) fn scope(&self, group: &str, kind: &str, batch: &[Definition]) -> Option<bool> {
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
    pub(super) fn key_of(
        &self,
        id: &ObjectRef,
        namespace: &str,
        batch: &[Definition],
    ) -> ObjectKey {
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
    pub(super) fn rebuild(&mut self) {
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
    pub(super) fn set(&mut self, path: &Path, entry: Option<Entry>) {
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

    pub(super) fn keys_of(&self, entry: Option<&Entry>) -> Vec<ObjectKey> {
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
    pub(super) fn unreadable(&self) -> Vec<(PathBuf, Release)> {
        self.files
            .iter()
            .filter(|(_, entry)| entry.held.is_none())
            .map(|(path, entry)| (path.clone(), entry.release.clone()))
            .collect()
    }
}

/// The error reading the first of `unreadable` gives now, naming the file
/// (`None` when each reads by now).
pub(super) fn first_error(unreadable: &[(PathBuf, Release)]) -> Option<Error> {
    unreadable
        .iter()
        .find_map(|(path, release)| load(release, path).err())
}

/// Every release file under `root`, in path order, with its release (app
/// and chart only). Folders that are links, and names that are not
/// DNS-1123 labels (temporary files among them), are passed over.
pub(super) fn release_files(root: &Path) -> BTreeMap<PathBuf, Release> {
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
pub(super) fn bare(release: &Release) -> Release {
    Release {
        app: release.app.clone(),
        chart: release.chart.clone(),
        namespace: String::new(),
        release_name: String::new(),
    }
}

/// One release file, read and parsed.
#[derive(Debug, Default)]
pub(super) struct Loaded {
    /// The namespace its header names; empty when it names none.
    pub(super) namespace: String,
    pub(super) resources: Vec<Resource>,
}

/// Reads and parses `path`, `release`'s file; `None` when there is none.
///
/// # Errors
/// [`Error::Read`] when it cannot be read, [`Error::Corrupt`] when it
/// does not parse; both name the release and the file.
pub(super) fn load(release: &Release, path: &Path) -> Result<Option<Loaded>, Error> {
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
