//! Turning rendered template files into manifests and into the text
//! `helm template` prints: documents split on `---` as Helm's
//! `SplitManifests` does, hooks told apart by their annotation, manifests
//! sorted in Helm's install order, `# Source:` headers.

use super::Error;
use crate::values::{self, Value};

/// Helm's install order by kind; unknown kinds go last, alphabetically.
/// Kept with the applier, which orders by it too.
pub use crate::kube::INSTALL_ORDER;

/// Hook events Helm knows; a document naming any other is dropped.
const HOOK_EVENTS: [&str; 10] = [
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
    "test-success",
];

/// One rendered Kubernetes document.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The template it came from (`chart/templates/x.yaml`).
    pub source: String,
    /// The document text, as Helm keeps it (leading space trimmed).
    pub content: String,
    /// `apiVersion`, if the document has one.
    pub api_version: String,
    /// `kind`, if the document has one.
    pub kind: String,
    /// `metadata.name`, if the document has one.
    pub name: String,
    /// The hook events for a hook document (`helm.sh/hook`); empty otherwise.
    pub hook_events: Vec<String>,
    /// `helm.sh/hook-weight` (0 when absent or not a number).
    pub hook_weight: i64,
}

impl Manifest {
    /// Whether this is a hook (printed after the other manifests).
    pub fn is_hook(&self) -> bool {
        !self.hook_events.is_empty()
    }

    /// Whether this is a test hook (`--skip-tests` drops these).
    pub fn is_test_hook(&self) -> bool {
        self.hook_events
            .iter()
            .any(|e| e == "test" || e == "test-success")
    }
}

/// One rendered document read the way Helm reads it before sending it to
/// the API server (`sigs.k8s.io/yaml`, go-yaml v2 rules, integers kept):
/// the seam between rendering and the workload transforms and the apply
/// targets, so that `capstan template` and an apply never disagree on what
/// `yes`, `on` or `0644` mean.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedObject {
    /// The template it came from (`chart/templates/x.yaml`), or the CRD
    /// file (`chart/crds/x.yaml`).
    pub source: String,
    /// The object as JSON, as the API server receives it.
    pub object: serde_json::Value,
    /// The hook events of a hook document (`helm.sh/hook`); empty
    /// otherwise.
    pub hook_events: Vec<String>,
    /// `helm.sh/hook-weight` (0 when absent or not a number).
    pub hook_weight: i64,
}

impl RenderedObject {
    /// Whether this object is a Helm hook.
    pub fn is_hook(&self) -> bool {
        !self.hook_events.is_empty()
    }
}

impl Manifest {
    /// Reads the document once with the Helm manifest reader; `None` for a
    /// document that is only comments or `null`.
    ///
    /// # Errors
    /// [`Error::ManifestYaml`] naming the template when it is not YAML.
    pub fn to_object(&self) -> Result<Option<RenderedObject>, Error> {
        // The text as Helm's kube client reads it: an ordinary object
        // from the release manifest, where each document is printed with
        // a line break after it; a hook from its own manifest, read to
        // its end, where a last line of only spaces (the indentation a
        // template's `{{- end }}` leaves) is neither content nor a break.
        // The document text keeps that last line (Helm 4 trims only the
        // left), and a block scalar must not read it as an empty line of
        // its own: `helm install` gives `metrics.conf: |` ending in one
        // `\n`, not two.
        let text = if self.is_hook() {
            std::borrow::Cow::Borrowed(without_blank_last_line(&self.content))
        } else {
            std::borrow::Cow::Owned(format!("{}\n", self.content))
        };
        let object = read_object(&self.source, &text)?;
        Ok(object.map(|object| RenderedObject {
            source: self.source.clone(),
            object,
            hook_events: self.hook_events.clone(),
            hook_weight: self.hook_weight,
        }))
    }
}

/// Every document of `text` (one file: a CRD file of `crds/`) read as
/// [`Manifest::to_object`] reads one, skipping empty documents.
///
/// # Errors
/// [`Error::ManifestYaml`] naming `source` when a document is not YAML.
pub fn read_objects(source: &str, text: &str) -> Result<Vec<RenderedObject>, Error> {
    let documents =
        values::parse_manifest_documents(text).map_err(|error| Error::ManifestYaml {
            source_path: source.to_string(),
            source: error,
        })?;
    Ok(documents
        .iter()
        .filter(|document| !matches!(document, Value::Null))
        .map(|document| RenderedObject {
            source: source.to_string(),
            object: serde_json::Value::from(document),
            hook_events: Vec::new(),
            hook_weight: 0,
        })
        .collect())
}

/// `text` without a last line (after its last line break) of only spaces
/// and tabs.
fn without_blank_last_line(text: &str) -> &str {
    match text.rfind('\n') {
        Some(at) if text[at + 1..].chars().all(|c| c == ' ' || c == '\t') => &text[..=at],
        _ => text,
    }
}

fn read_object(source: &str, text: &str) -> Result<Option<serde_json::Value>, Error> {
    let documents =
        values::parse_manifest_documents(text).map_err(|error| Error::ManifestYaml {
            source_path: source.to_string(),
            source: error,
        })?;
    Ok(documents
        .into_iter()
        .find(|document| !matches!(document, Value::Null))
        .map(|document| serde_json::Value::from(&document)))
}

/// Helm's `SplitManifests`: the documents of one rendered file, in order,
/// without blank ones, each with leading whitespace trimmed and trailing
/// whitespace kept.
pub fn split_documents(text: &str) -> Vec<String> {
    split_on_separators(text.trim_start())
        .into_iter()
        .filter(|d| !d.trim().is_empty())
        .map(|d| d.trim_start().to_string())
        .collect()
}

/// The pieces of `text` between separators: `---` at the start of a line
/// with the spaces and tabs after it (Helm's `(?m)^---[ \t]*`). Helm 4
/// keeps the previous document's trailing whitespace and still splits
/// `---` glued to content (what `{{-` after a separator produces).
fn split_on_separators(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let mut piece_start = 0;
    let mut line_start = 0;
    loop {
        if bytes[line_start..].starts_with(b"---") {
            parts.push(&text[piece_start..line_start]);
            let mut end = line_start + 3;
            while matches!(bytes.get(end), Some(b' ' | b'\t')) {
                end += 1;
            }
            piece_start = end;
        }
        match memchr::memchr(b'\n', &bytes[line_start..]) {
            Some(i) => line_start += i + 1,
            None => break,
        }
    }
    parts.push(&text[piece_start..]);
    parts
}

fn kind_rank(kind: &str) -> Option<usize> {
    INSTALL_ORDER.iter().position(|k| *k == kind)
}

/// Helm's `lessByKind`: known kinds by install order, unknown ones after
/// them alphabetically; a stable sort keeps file order within a kind.
fn kind_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (kind_rank(a), kind_rank(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// Helm's `SortManifests`: splits each rendered file (in path order,
/// skipping partials and blank files), reads each document's head, and
/// returns the hooks and the other manifests, each sorted by kind.
///
/// # Errors
/// [`Error::ManifestYaml`] when a document is not valid YAML.
pub fn sort_manifests(files: &[(String, String)]) -> Result<(Vec<Manifest>, Vec<Manifest>), Error> {
    let mut sorted: Vec<&(String, String)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hooks = Vec::new();
    let mut generic = Vec::with_capacity(files.len());
    for (path, content) in sorted {
        let base = path.rsplit('/').next().unwrap_or(path);
        if base.starts_with('_') || content.trim().is_empty() {
            continue;
        }
        for doc in split_documents(content) {
            let manifest = read_head(path, doc)?;
            if let Some(m) = manifest {
                if m.is_hook() {
                    hooks.push(m);
                } else {
                    generic.push(m);
                }
            }
        }
    }
    generic.sort_by(|a, b| kind_order(&a.kind, &b.kind));
    hooks.sort_by(|a, b| kind_order(&a.kind, &b.kind));
    Ok((hooks, generic))
}

/// Reads a document's head; `None` for a hook with an unknown event.
fn read_head(path: &str, doc: String) -> Result<Option<Manifest>, Error> {
    let head = super::head::read(&doc).map_err(|source| Error::ManifestYaml {
        source_path: path.to_string(),
        source,
    })?;
    let mut manifest = Manifest {
        source: path.to_string(),
        api_version: head.api_version,
        kind: head.kind,
        name: head.name,
        content: doc,
        hook_events: Vec::new(),
        hook_weight: 0,
    };
    if let Some(hook) = head.hook {
        let events: Vec<String> = hook
            .split(',')
            .map(|e| e.trim().to_ascii_lowercase())
            .collect();
        if events.iter().any(|e| !HOOK_EVENTS.contains(&e.as_str())) {
            return Ok(None);
        }
        manifest.hook_events = events;
        manifest.hook_weight = head.hook_weight.parse().unwrap_or(0);
    }
    Ok(Some(manifest))
}

/// What `helm template` prints and how.
#[derive(Debug, Clone, Default)]
pub struct PrintOptions {
    /// CRD files (`chart/crds/x.yaml`, content) to print first.
    pub crds: Vec<(String, String)>,
    /// Leave out test hooks.
    pub skip_tests: bool,
    /// Only these template paths (globs, relative to the chart).
    pub show_only: Vec<String>,
}

/// Formats manifests and hooks exactly as `helm template` prints them.
///
/// # Errors
/// [`Error::ShowOnlyMissing`] when a `--show-only` path matches nothing.
pub fn print(
    hooks: &[Manifest],
    generic: &[Manifest],
    opts: &PrintOptions,
) -> Result<String, Error> {
    let mut body = String::new();
    for (name, content) in &opts.crds {
        body.push_str(&format!("---\n# Source: {name}\n{content}\n"));
    }
    for m in generic {
        body.push_str(&format!("---\n# Source: {}\n{}\n", m.source, m.content));
    }
    let mut out = String::from(body.trim());
    out.push('\n');
    for h in hooks {
        if opts.skip_tests && h.is_test_hook() {
            continue;
        }
        out.push_str(&format!("---\n# Source: {}\n{}\n", h.source, h.content));
    }
    if opts.show_only.is_empty() {
        return Ok(out);
    }
    let docs = split_documents(&out);
    let mut selected = String::new();
    for pattern in &opts.show_only {
        let pattern = pattern.replace('\\', "/");
        let mut found = false;
        for doc in &docs {
            let Some(path) = source_of(doc) else {
                continue;
            };
            if super::template::objects::glob_match(&pattern, path) {
                selected.push_str(&format!("---\n{doc}\n"));
                found = true;
            }
        }
        if !found {
            return Err(Error::ShowOnlyMissing { path: pattern });
        }
    }
    Ok(selected)
}

/// The template path after the chart name in a `# Source: chart/...` line.
fn source_of(doc: &str) -> Option<&str> {
    let idx = doc.find("# Source: ")?;
    let rest = &doc[idx + "# Source: ".len()..];
    let line = rest.lines().next()?;
    let (chart, path) = line.split_once('/')?;
    if chart.is_empty() {
        return None;
    }
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_split_like_helms_pattern() {
        let re = regex::Regex::new(r"(?m)^---[ \t]*").unwrap();
        for text in [
            "",
            "---",
            "---\n---",
            "a\n--- \t\nb",
            "----x",
            "a---\n---b\n",
            "\n\n---\n",
            "x\r\n---\ny",
            "--\n-- -\n---",
        ] {
            let want: Vec<&str> = re.split(text).collect();
            assert_eq!(split_on_separators(text), want, "{text:?}");
        }
    }

    #[test]
    fn a_last_line_of_spaces_is_no_line_of_a_block_scalar() {
        // fluentd's configmap: a literal block, then the indentation a
        // template's `{{- end }}` leaves, at the end of the file.
        let doc =
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  m: |\n    x\n    ";
        let hook_doc = doc.replace(
            "name: c}",
            "name: c, annotations: {helm.sh/hook: pre-install}}",
        );
        for (hook, text) in [(false, doc.to_string()), (true, hook_doc)] {
            let (hooks, generic) =
                sort_manifests(&[("c/templates/cm.yaml".to_string(), text)]).unwrap();
            let manifest = if hook { &hooks[0] } else { &generic[0] };
            let object = manifest.to_object().unwrap().unwrap().object;
            assert_eq!(object["data"]["m"], "x\n", "hook: {hook}");
        }
        assert_eq!(without_blank_last_line("a\n  \t"), "a\n");
        assert_eq!(without_blank_last_line("a\n  b"), "a\n  b");
        assert_eq!(without_blank_last_line("  "), "  ");
    }

    #[test]
    fn splits_like_helm() {
        let docs = split_documents("\n---\na: 1\n---\n\n---\nb: 2  \n\n");
        assert_eq!(docs, vec!["a: 1\n".to_string(), "b: 2  \n\n".to_string()]);
        assert_eq!(
            split_documents("a: 1\n---b: 2"),
            vec!["a: 1\n".to_string(), "b: 2".to_string()]
        );
    }

    #[test]
    fn orders_by_kind_then_file() {
        let files = vec![
            (
                "c/templates/b.yaml".to_string(),
                "kind: Deployment\nmetadata:\n  name: d\n".to_string(),
            ),
            (
                "c/templates/a.yaml".to_string(),
                "kind: Service\n---\nkind: Zed\n---\nkind: Alpha\n".to_string(),
            ),
            (
                "c/templates/s.yaml".to_string(),
                "kind: Secret\n".to_string(),
            ),
            (
                "c/templates/h.yaml".to_string(),
                "kind: Job\nmetadata:\n  annotations:\n    helm.sh/hook: test\n".to_string(),
            ),
            (
                "c/templates/_p.tpl".to_string(),
                "kind: Secret\n".to_string(),
            ),
        ];
        let (hooks, generic) = sort_manifests(&files).unwrap();
        let kinds: Vec<&str> = generic.iter().map(|m| m.kind.as_str()).collect();
        assert_eq!(
            kinds,
            vec!["Secret", "Service", "Deployment", "Alpha", "Zed"]
        );
        assert_eq!(hooks.len(), 1);
        assert!(hooks[0].is_test_hook());
        let out = print(&hooks, &generic, &PrintOptions::default()).unwrap();
        assert!(out.starts_with("---\n# Source: c/templates/s.yaml\nkind: Secret\n\n---\n# Source: c/templates/a.yaml\nkind: Service\n\n---"));
        assert!(out.ends_with("---\n# Source: c/templates/h.yaml\nkind: Job\nmetadata:\n  annotations:\n    helm.sh/hook: test\n\n"));
        let skipped = print(
            &hooks,
            &generic,
            &PrintOptions {
                skip_tests: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(!skipped.contains("kind: Job"));
        let only = print(
            &hooks,
            &generic,
            &PrintOptions {
                show_only: vec!["templates/b.yaml".into()],
                ..Default::default()
            },
        )
        .unwrap();
        // Helm re-splits its own output and prints each match as "---\n%s\n";
        // the document keeps the blank line that separated it from the next.
        assert_eq!(
            only,
            "---\n# Source: c/templates/b.yaml\nkind: Deployment\nmetadata:\n  name: d\n\n\n"
        );
        let missing = print(
            &hooks,
            &generic,
            &PrintOptions {
                show_only: vec!["templates/none.yaml".into()],
                ..Default::default()
            },
        );
        assert!(missing.is_err());
    }
}
