//! The crate's layout rules (issue 44), read off the source tree: no
//! non-test file over 1,000 lines in `lifecycle/`, `kube/` or `api/`, and
//! no import circle among `lifecycle/`'s files.
//!
//! A file's imports are the paths it names: `super::…`,
//! `crate::lifecycle::…`, and a child module's name followed by `::` in
//! a `mod.rs` (its own children); each resolves to the deepest module file
//! it names. Comments are left out, and so are `#[cfg(test)] mod tests`
//! blocks and test files (`tests.rs`, `tests_*.rs`, `*/tests/…`): tests
//! may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 1_000;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs"
        || name.starts_with("tests_")
        || name.ends_with("_tests.rs")
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// Every `.rs` file under `dir`, as (path relative to `dir`, text).
fn files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path.strip_prefix(dir).unwrap().to_path_buf(), text));
            }
        }
    }
    out.sort();
    out
}

/// `a/b/mod.rs` and `a/b.rs` are module `a::b`; `mod.rs` is `""`.
fn module_of(relative: &Path) -> String {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_owned());
    }
    parts.join("::")
}

/// The text without comments and without a trailing `#[cfg(test)] mod
/// tests { … }` block.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let code = match line.find("//") {
            // A `//` inside a string (a URL) is kept: it never names a module.
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    match out.find("#[cfg(test)]\nmod tests {") {
        Some(at) => out[..at].to_owned(),
        None => out,
    }
}

/// The identifiers after each occurrence of `prefix` (`a::b::{c, d::e}`
/// gives `[a, b]` — braces end the path; a brace group's first-level
/// names are added as paths of their own).
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().last();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut path = Vec::new();
        let mut tail = rest;
        loop {
            let ident: String = tail
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if ident.is_empty() {
                break;
            }
            tail = &tail[ident.len()..];
            path.push(ident);
            if let Some(next) = tail.strip_prefix("::") {
                tail = next;
            } else {
                break;
            }
        }
        if let Some(group) = tail.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let mut grouped = path.clone();
                for part in item.trim().split("::") {
                    let name: String = part
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if name.is_empty() {
                        break;
                    }
                    grouped.push(name);
                }
                if grouped.len() > path.len() {
                    found.push(grouped);
                }
            }
        }
        found.push(path);
    }
    found
}

/// The deepest module among `modules` that `start` followed by `path`
/// names, if it names one below `start`.
fn resolve(modules: &BTreeSet<String>, start: &str, path: &[String]) -> Option<String> {
    let mut at = start.to_owned();
    let mut hit = None;
    for part in path {
        let next = if at.is_empty() {
            part.clone()
        } else {
            format!("{at}::{part}")
        };
        if !modules.contains(&next) {
            break;
        }
        hit = Some(next.clone());
        at = next;
    }
    hit
}

fn imports(modules: &BTreeSet<String>, module: &str, code: &str) -> BTreeSet<String> {
    let parent = module.rsplit_once("::").map_or("", |(p, _)| p);
    let mut out = BTreeSet::new();
    for path in paths_after(code, "super::") {
        out.extend(resolve(modules, parent, &path));
    }
    for path in paths_after(code, "crate::lifecycle::") {
        out.extend(resolve(modules, "", &path));
    }
    for child in modules.iter().filter_map(|m| {
        let (p, name) = m.rsplit_once("::").unwrap_or(("", m));
        (p == module && !m.is_empty()).then_some(name)
    }) {
        if !paths_after(code, &format!("{child}::")).is_empty() {
            out.insert(if module.is_empty() {
                child.to_owned()
            } else {
                format!("{module}::{child}")
            });
        }
    }
    out.remove(module);
    out
}

/// A circle in `graph`, as the modules along it, if there is one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        at: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        trail: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(at.to_owned(), 1);
        trail.push(at.to_owned());
        for next in graph.get(at).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let from = trail.iter().position(|m| m == next).unwrap_or(0);
                    let mut found = trail[from..].to_vec();
                    found.push(next.clone());
                    return Some(found);
                }
                Some(_) => {}
                None => {
                    if let Some(found) = visit(next, graph, state, trail) {
                        return Some(found);
                    }
                }
            }
        }
        trail.pop();
        state.insert(at.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for start in graph.keys() {
        if !state.contains_key(start.as_str()) {
            let mut trail = Vec::new();
            if let Some(found) = visit(start, graph, &mut state, &mut trail) {
                return Some(found);
            }
        }
    }
    None
}

/// The import graph of the non-test files under `dir`.
fn graph_of(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let sources: Vec<(String, String)> = files(dir)
        .into_iter()
        .filter(|(path, _)| !is_test_file(path))
        .map(|(path, text)| (module_of(&path), code_of(&text)))
        .collect();
    let modules: BTreeSet<String> = sources.iter().map(|(m, _)| m.clone()).collect();
    sources
        .iter()
        .map(|(module, code)| (module.clone(), imports(&modules, module, code)))
        .collect()
}

#[test]
fn no_non_test_file_in_lifecycle_kube_or_api_passes_1000_lines() {
    let mut long = Vec::new();
    for folder in ["lifecycle", "kube", "api"] {
        for (path, text) in files(&src().join(folder)) {
            let lines = text.lines().count();
            if !is_test_file(&path) && lines > MAX_LINES {
                long.push(format!("{folder}/{}: {lines} lines", path.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split them by concern): {long:?}"
    );
}

#[test]
fn no_import_circle_among_the_lifecycles_files() {
    let graph = graph_of(&src().join("lifecycle"));
    assert!(graph.len() > 30, "read too few files: {:?}", graph.keys());
    // The reader sees what it must: the engine imports the apply pipeline,
    // and the pipeline's steps import the job.
    assert!(graph["engine"].contains("apply"), "{:?}", graph["engine"]);
    assert!(
        graph["apply::render"].contains("job"),
        "{:?}",
        graph["apply::render"]
    );
    if let Some(found) = circle(&graph) {
        panic!(
            "import circle among lifecycle's files: {}",
            found.join(" -> ")
        );
    }
}

#[test]
fn the_circle_finder_finds_a_circle_and_reads_grouped_and_child_imports() {
    let modules: BTreeSet<String> = ["", "a", "a::x", "a::y", "b"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    let code = "use super::{b, a::y};\nfn f() { x::run(); }\n// super::nothing\n";
    let found = imports(&modules, "a", &code_of(code));
    assert_eq!(
        found,
        ["a::x", "a::y", "b"]
            .into_iter()
            .map(str::to_owned)
            .collect()
    );
    let mut graph = BTreeMap::new();
    graph.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    graph.insert("b".to_owned(), BTreeSet::from(["c".to_owned()]));
    graph.insert("c".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(
        circle(&graph).map(|c| c.join(" -> ")).as_deref(),
        Some("a -> b -> c -> a")
    );
    graph.insert("c".to_owned(), BTreeSet::new());
    assert_eq!(circle(&graph), None);
}
