//! Chart loading: a chart folder or `.tgz` into a [`Chart`], with its
//! `Chart.yaml`, `values.yaml`, `values.schema.json`, templates, other
//! files, and subcharts from `charts/` (folders and archives), as Helm's
//! `loader` package reads them.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use super::Error;
use super::template::objects::glob_match;
use crate::values::{self, Map, Value};

/// Largest chart archive or folder we read, decompressed (Helm's limit).
pub const MAX_CHART_BYTES: u64 = 100 * 1024 * 1024;
/// Largest single file in a chart (Helm's limit).
pub const MAX_FILE_BYTES: u64 = 5 * 1024 * 1024;
/// Deepest subchart nesting we load.
pub const MAX_NESTING: usize = 16;
/// Deepest folder nesting we walk in a chart folder (guards symlink loops).
pub const MAX_DIR_DEPTH: usize = 64;

/// One file of a chart, by its path inside the chart (`templates/x.yaml`).
#[derive(Debug, Clone)]
pub struct ChartFile {
    /// Path relative to the chart root, with `/` separators.
    pub name: String,
    /// The bytes.
    pub data: Arc<[u8]>,
}

/// A dependency as `Chart.yaml` (or v1's `requirements.yaml`) lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Dependency {
    /// The chart name.
    pub name: String,
    /// The version constraint.
    pub version: String,
    /// Where it comes from (unused when rendering).
    pub repository: String,
    /// Comma-separated value paths whose first boolean enables it.
    pub condition: String,
    /// Tags that enable or disable it through `tags.<tag>`.
    pub tags: Vec<String>,
    /// The name it is rendered and configured under.
    pub alias: String,
    /// `import-values` entries (strings or `{child, parent}` maps).
    pub import_values: Vec<Value>,
}

/// A loaded chart.
#[derive(Debug, Clone)]
pub struct Chart {
    /// `Chart.yaml` as parsed.
    pub metadata: Map,
    /// The dependencies it declares.
    pub dependencies: Vec<Dependency>,
    /// `values.yaml`.
    pub values: Map,
    /// `values.schema.json`, if any.
    pub schema: Option<Value>,
    /// Files under `templates/`.
    pub templates: Vec<ChartFile>,
    /// Every other file (including `crds/`), which `.Files` serves.
    pub files: Vec<ChartFile>,
    /// Subcharts found under `charts/`.
    pub subcharts: Vec<Chart>,
}

impl Chart {
    /// `Chart.yaml`'s `name` (renamed to the alias for aliased dependencies).
    pub fn name(&self) -> &str {
        self.meta_str("name")
    }

    /// A string field of `Chart.yaml`, or "".
    pub fn meta_str(&self, key: &str) -> &str {
        self.metadata.get(key).and_then(Value::as_str).unwrap_or("")
    }

    /// Whether this is a library chart (`type: library`).
    pub fn is_library(&self) -> bool {
        self.meta_str("type") == "library"
    }

    /// The files under `crds/`.
    pub fn crd_files(&self) -> impl Iterator<Item = &ChartFile> {
        self.files.iter().filter(|f| f.name.starts_with("crds/"))
    }
}

/// Loads a chart from a folder or a `.tgz` archive.
///
/// # Errors
/// [`Error::ReadChart`] when the path cannot be read, [`Error::Archive`]
/// for a broken archive, [`Error::ChartTooLarge`] past the size limits and
/// [`Error::ChartYaml`] / [`Error::ValuesYaml`] for bad chart files.
pub fn load(path: &Path) -> Result<Chart, Error> {
    let meta = std::fs::metadata(path).map_err(|e| Error::ReadChart {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    if meta.is_dir() {
        load_dir(path)
    } else {
        let bytes = std::fs::read(path).map_err(|e| Error::ReadChart {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        load_archive(&bytes, &path.display().to_string())
    }
}

/// Loads a chart folder, honouring its `.helmignore`.
///
/// # Errors
/// As [`load`].
pub fn load_dir(root: &Path) -> Result<Chart, Error> {
    let ignore = match std::fs::read_to_string(root.join(".helmignore")) {
        Ok(text) => Ignore::parse(&text),
        Err(_) => Ignore::parse(""),
    };
    let mut files = Vec::new();
    let mut total = 0u64;
    walk(root, root, &ignore, &mut files, &mut total, 0)?;
    load_files(files, &root.display().to_string(), 0, &mut total)
}

fn walk(
    root: &Path,
    dir: &Path,
    ignore: &Ignore,
    out: &mut Vec<(String, Vec<u8>)>,
    total: &mut u64,
    depth: usize,
) -> Result<(), Error> {
    if depth > MAX_DIR_DEPTH {
        return Err(Error::ChartTooLarge {
            what: format!(
                "{} (folders nest deeper than {MAX_DIR_DEPTH})",
                dir.display()
            ),
        });
    }
    let read_err = |p: &Path, e: std::io::Error| Error::ReadChart {
        path: p.display().to_string(),
        reason: e.to_string(),
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| read_err(dir, e))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        let ft = std::fs::metadata(&path).map_err(|e| read_err(&path, e))?;
        if ft.is_dir() {
            if ignore.ignored(&rel, true) {
                continue;
            }
            walk(root, &path, ignore, out, total, depth + 1)?;
        } else if ft.is_file() {
            if ignore.ignored(&rel, false) {
                continue;
            }
            if ft.len() > MAX_FILE_BYTES {
                return Err(Error::ChartTooLarge {
                    what: path.display().to_string(),
                });
            }
            *total += ft.len();
            if *total > MAX_CHART_BYTES {
                return Err(Error::ChartTooLarge {
                    what: root.display().to_string(),
                });
            }
            let data = std::fs::read(&path).map_err(|e| read_err(&path, e))?;
            out.push((rel, data));
        }
    }
    Ok(())
}

/// Loads a chart from the bytes of a `.tgz`; `origin` names it in errors.
///
/// # Errors
/// As [`load`]; also [`Error::Archive`] for entries outside the chart.
pub fn load_archive(bytes: &[u8], origin: &str) -> Result<Chart, Error> {
    load_archive_at(bytes, origin, 0, &mut 0)
}

/// Loads an archive; `total` counts the bytes of the whole chart tree so
/// far, so that nested archives share one [`MAX_CHART_BYTES`] budget.
fn load_archive_at(
    bytes: &[u8],
    origin: &str,
    depth: usize,
    total: &mut u64,
) -> Result<Chart, Error> {
    let archive_err = |reason: String| Error::Archive {
        origin: origin.to_string(),
        reason,
    };
    let gz = flate2::read::GzDecoder::new(bytes);
    let mut tar = tar::Archive::new(gz.take(MAX_CHART_BYTES + 1));
    let mut files = Vec::new();
    let entries = tar.entries().map_err(|e| archive_err(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| archive_err(e.to_string()))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path().map_err(|e| archive_err(e.to_string()))?;
        let name = path.to_string_lossy().replace('\\', "/");
        if name.split('/').any(|part| part == "..") || name.starts_with('/') {
            return Err(archive_err(format!(
                "entry {name:?} points outside the chart"
            )));
        }
        // Drop the chart's top folder.
        let Some((_, rel)) = name.split_once('/') else {
            continue;
        };
        let rel = rel.to_string();
        let size = entry.header().size().unwrap_or(0);
        if size > MAX_FILE_BYTES {
            return Err(Error::ChartTooLarge {
                what: format!("{origin}:{rel}"),
            });
        }
        *total += size;
        if *total > MAX_CHART_BYTES {
            return Err(Error::ChartTooLarge {
                what: origin.to_string(),
            });
        }
        let mut data = Vec::with_capacity(size as usize);
        entry
            .by_ref()
            .take(MAX_FILE_BYTES)
            .read_to_end(&mut data)
            .map_err(|e| archive_err(e.to_string()))?;
        files.push((rel, data));
    }
    if files.is_empty() {
        return Err(archive_err("no files in archive".into()));
    }
    load_files(files, origin, depth, total)
}

/// Builds a chart from its files (paths relative to the chart root).
fn load_files(
    files: Vec<(String, Vec<u8>)>,
    origin: &str,
    depth: usize,
    total: &mut u64,
) -> Result<Chart, Error> {
    if depth > MAX_NESTING {
        return Err(Error::ChartTooLarge {
            what: format!("{origin} (subcharts nest deeper than {MAX_NESTING})"),
        });
    }
    let mut chart = Chart {
        metadata: Map::new(),
        dependencies: Vec::new(),
        values: Map::new(),
        schema: None,
        templates: Vec::new(),
        files: Vec::new(),
        subcharts: Vec::new(),
    };
    let mut has_chart_yaml = false;
    let mut requirements: Option<Vec<u8>> = None;
    let mut sub_files: BTreeMap<String, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    for (name, data) in files {
        match name.as_str() {
            "Chart.yaml" => {
                has_chart_yaml = true;
                chart.metadata =
                    parse_map(&data, origin, "Chart.yaml").map_err(|reason| Error::ChartYaml {
                        origin: origin.to_string(),
                        reason,
                    })?;
            }
            "values.yaml" => {
                let text = String::from_utf8_lossy(&data);
                chart.values = values::parse_values(&text).map_err(|source| Error::ValuesYaml {
                    origin: format!("{origin}/values.yaml"),
                    source,
                })?;
            }
            "values.schema.json" => {
                let text = String::from_utf8_lossy(&data);
                chart.schema =
                    Some(
                        values::parse_json(&text).map_err(|source| Error::ValuesYaml {
                            origin: format!("{origin}/values.schema.json"),
                            source,
                        })?,
                    );
            }
            "requirements.yaml" => requirements = Some(data),
            "Chart.lock" | "requirements.lock" => {}
            n if n.starts_with("templates/") => chart.templates.push(ChartFile {
                name,
                data: Arc::from(data),
            }),
            n if n.starts_with("charts/") && !n.ends_with(".prov") => {
                let rest = &n["charts/".len()..];
                let (sub, inner) = rest.split_once('/').unwrap_or((rest, ""));
                sub_files
                    .entry(sub.to_string())
                    .or_default()
                    .push((inner.to_string(), data));
            }
            _ => chart.files.push(ChartFile {
                name,
                data: Arc::from(data),
            }),
        }
    }
    if !has_chart_yaml {
        return Err(Error::ChartYaml {
            origin: origin.to_string(),
            reason: "Chart.yaml file is missing".into(),
        });
    }
    if chart.name().is_empty() {
        return Err(Error::ChartYaml {
            origin: origin.to_string(),
            reason: "chart.metadata.name is required".into(),
        });
    }
    let deps_source = match (chart.meta_str("apiVersion"), requirements) {
        ("v1", Some(req)) | ("", Some(req)) => {
            let m = parse_map(&req, origin, "requirements.yaml").map_err(|reason| {
                Error::ChartYaml {
                    origin: origin.to_string(),
                    reason,
                }
            })?;
            m.get("dependencies").cloned()
        }
        _ => chart.metadata.get("dependencies").cloned(),
    };
    if let Some(Value::List(deps)) = deps_source {
        chart.dependencies = deps.iter().filter_map(parse_dependency).collect();
    }
    for (sub, entries) in sub_files {
        let sub_origin = format!("{origin}/charts/{sub}");
        if sub.ends_with(".tgz") || sub.ends_with(".tar.gz") {
            for (inner, data) in &entries {
                if inner.is_empty() {
                    chart
                        .subcharts
                        .push(load_archive_at(data, &sub_origin, depth + 1, total)?);
                }
            }
        } else if entries.iter().any(|(inner, _)| inner == "Chart.yaml") {
            chart
                .subcharts
                .push(load_files(entries, &sub_origin, depth + 1, total)?);
        }
    }
    Ok(chart)
}

fn parse_map(data: &[u8], origin: &str, file: &str) -> Result<Map, String> {
    let text = String::from_utf8_lossy(data);
    match values::parse_yaml(&text) {
        Ok(Value::Map(m)) => Ok(m),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(_) => Err(format!("{origin}/{file} is not a map")),
        Err(e) => Err(format!("{file}: {e}")),
    }
}

fn parse_dependency(v: &Value) -> Option<Dependency> {
    let m = v.as_map()?;
    let s = |k: &str| m.get(k).map(scalar_string).unwrap_or_default();
    let list = |k: &str| match m.get(k) {
        Some(Value::List(l)) => l.iter().map(scalar_string).collect(),
        _ => Vec::new(),
    };
    Some(Dependency {
        name: s("name"),
        version: s("version"),
        repository: s("repository"),
        condition: s("condition"),
        tags: list("tags"),
        alias: s("alias"),
        import_values: match m.get("import-values") {
            Some(Value::List(l)) => l.clone(),
            _ => Vec::new(),
        },
    })
}

fn scalar_string(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `.helmignore` rules (Helm's `ignore` package): gitignore-like globs,
/// `!` negation, a trailing `/` for folders, and the default rule that
/// hides dot files under `templates/`.
#[derive(Debug, Default)]
pub struct Ignore {
    rules: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    pattern: String,
    negate: bool,
    dir_only: bool,
}

impl Ignore {
    /// Parses the text of a `.helmignore`.
    pub fn parse(text: &str) -> Ignore {
        let mut rules = vec![Rule {
            pattern: "templates/.?*".into(),
            negate: false,
            dir_only: false,
        }];
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negate, line) = match line.strip_prefix('!') {
                Some(rest) => (true, rest.trim()),
                None => (false, line),
            };
            let (dir_only, line) = match line.strip_suffix('/') {
                Some(rest) => (true, rest),
                None => (false, line),
            };
            if line.is_empty() {
                continue;
            }
            rules.push(Rule {
                pattern: line.to_string(),
                negate,
                dir_only,
            });
        }
        Ignore { rules }
    }

    /// Whether the file or folder at `rel` (relative, `/`-separated) is ignored.
    pub fn ignored(&self, rel: &str, is_dir: bool) -> bool {
        if rel == "." || rel.is_empty() {
            return false;
        }
        let base = rel.rsplit('/').next().unwrap_or(rel);
        let mut ignored = false;
        for rule in &self.rules {
            if rule.dir_only && !is_dir {
                continue;
            }
            let hit = if let Some(anchored) = rule.pattern.strip_prefix('/') {
                glob_match(anchored, rel)
            } else if rule.pattern.contains('/') {
                glob_match(&rule.pattern, rel)
            } else {
                glob_match(&rule.pattern, base)
            };
            if hit {
                ignored = !rule.negate;
            }
        }
        ignored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helmignore_rules() {
        let ig = Ignore::parse("# c\n*.swp\n.git/\nCHANGELOG.md\n!keep.swp\n/top.txt\n");
        assert!(ig.ignored("a.swp", false));
        assert!(ig.ignored("x/b.swp", false));
        assert!(!ig.ignored("keep.swp", false));
        assert!(ig.ignored(".git", true));
        assert!(!ig.ignored(".git", false));
        assert!(ig.ignored("CHANGELOG.md", false));
        assert!(ig.ignored("top.txt", false));
        assert!(!ig.ignored("sub/top.txt", false));
        assert!(ig.ignored("templates/.hidden", false));
        assert!(!ig.ignored("templates/x.yaml", false));
    }

    #[test]
    fn loads_files_into_their_places() {
        let files = vec![
            ("Chart.yaml".to_string(), b"apiVersion: v2\nname: a\nversion: 1.0.0\ndependencies:\n- name: b\n  alias: c\n  condition: c.on\n".to_vec()),
            ("values.yaml".to_string(), b"x: 1\n".to_vec()),
            ("templates/t.yaml".to_string(), b"k: v\n".to_vec()),
            ("README.md".to_string(), b"hi".to_vec()),
            ("charts/b/Chart.yaml".to_string(), b"name: b\nversion: 0.1.0\n".to_vec()),
            ("charts/b/templates/u.yaml".to_string(), b"u: 1\n".to_vec()),
        ];
        let chart = load_files(files, "a", 0, &mut 0).unwrap();
        assert_eq!(chart.name(), "a");
        assert_eq!(chart.values.get("x"), Some(&Value::Float(1.0)));
        assert_eq!(chart.templates.len(), 1);
        assert_eq!(chart.files.len(), 1);
        assert_eq!(chart.subcharts.len(), 1);
        assert_eq!(chart.subcharts[0].templates[0].name, "templates/u.yaml");
        assert_eq!(chart.dependencies[0].alias, "c");
        assert_eq!(chart.dependencies[0].condition, "c.on");
    }

    #[test]
    fn missing_chart_yaml_is_an_error() {
        let err = load_files(
            vec![("values.yaml".into(), b"a: 1".to_vec())],
            "x",
            0,
            &mut 0,
        )
        .unwrap_err();
        assert!(err.to_string().contains("x"), "{err}");
    }
}
