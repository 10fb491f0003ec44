//! One rendered object and its identity, and parsing a rendered manifest
//! stream (what `capstan template` prints) into objects.

use serde_json::Value;

use super::Error;
use crate::model::ObjectRef;
use crate::values;

/// One rendered Kubernetes object, with the identity read from it and a
/// label saying where it came from (for error messages).
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    object: Value,
    id: ObjectRef,
    source: String,
    /// Installed and updated but never deleted by a remove (a
    /// CustomResourceDefinition from a chart's `crds/` folder, which
    /// Helm installs and never deletes).
    install_only: bool,
}

impl Resource {
    /// Reads the identity of `object`; `source` names where it came from
    /// (a template path, `document 3`) and appears in errors.
    ///
    /// # Errors
    /// [`Error::NotAnObject`] when `object` is not a mapping;
    /// [`Error::MissingField`] when `apiVersion`, `kind` or `metadata.name`
    /// is missing, empty or not a string, or `metadata.namespace` is set to
    /// something other than a string (an empty or null namespace counts as
    /// none).
    pub fn from_value(object: Value, source: impl Into<String>) -> Result<Self, Error> {
        let source = source.into();
        let id = object_ref(&object, &source)?;
        Ok(Resource {
            object,
            id,
            source,
            install_only: false,
        })
    }

    /// The same resource marked install-only: a remove leaves it unless
    /// purged (see [`Resource::is_install_only`]).
    #[must_use]
    pub fn install_only(mut self) -> Self {
        self.install_only = true;
        self
    }

    /// Whether a remove leaves this object (a CRD from a chart's `crds/`
    /// folder) unless `--purge`.
    pub fn is_install_only(&self) -> bool {
        self.install_only
    }

    /// The object as rendered.
    pub fn object(&self) -> &Value {
        &self.object
    }

    /// Its identity.
    pub fn id(&self) -> &ObjectRef {
        &self.id
    }

    /// Where it came from, as given to [`Resource::from_value`].
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Gives the object back.
    pub fn into_object(self) -> Value {
        self.object
    }

    /// The object as a YAML document (no `---`) as Go's `yaml.Marshal`
    /// prints it (keys sorted, strings that go-yaml v2 would read as
    /// something else quoted), so the same object always gives the same
    /// text and [`parse_manifests`] reads it back unchanged.
    ///
    /// # Errors
    /// [`Error::Serialize`] if the serializer refuses the value (not
    /// expected for a value that came from YAML or JSON).
    pub fn to_yaml(&self) -> Result<String, Error> {
        values::try_to_yaml(&values::Value::from_manifest_json(&self.object)).map_err(|source| {
            Error::Serialize {
                object: Box::new(self.id.clone()),
                source,
            }
        })
    }
}

fn object_ref(object: &Value, document: &str) -> Result<ObjectRef, Error> {
    let Value::Object(map) = object else {
        return Err(Error::NotAnObject {
            document: document.to_string(),
        });
    };
    let metadata = map.get("metadata");
    let field = |value: Option<&Value>, field: &'static str| match value {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(Error::MissingField {
            document: document.to_string(),
            field,
        }),
    };
    let namespace = match metadata.and_then(|m| m.get("namespace")) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(Error::MissingField {
                document: document.to_string(),
                field: "metadata.namespace",
            });
        }
    };
    Ok(ObjectRef {
        api_version: field(map.get("apiVersion"), "apiVersion")?,
        kind: field(map.get("kind"), "kind")?,
        namespace,
        name: field(metadata.and_then(|m| m.get("name")), "metadata.name")?,
    })
}

/// Parses a multi-document manifest stream, as `capstan template` (and
/// `helm template`) prints it, into resources in stream order.
///
/// Documents are split at lines starting with `---` (or `...`); documents
/// holding only blank lines and comments, and documents that are YAML
/// `null`, are skipped. Each resource's source is `document N` (counting
/// the documents kept, from 1), followed by the path of its
/// `# Source: PATH` comment when it has one.
///
/// # Errors
/// [`Error::ManifestYaml`] for a document that is not valid YAML,
/// [`Error::NotAnObject`] for one that is not a mapping, and
/// [`Error::MissingField`] for one without a usable identity (see
/// [`Resource::from_value`]); each names the document. Duplicate objects
/// are not an error here (see [`super::plan_apply`]).
pub fn parse_manifests(text: &str) -> Result<Vec<Resource>, Error> {
    let mut resources = Vec::new();
    let documents = split_documents(text).into_iter().filter(|d| !is_blank(d));
    for (index, document) in documents.enumerate() {
        let label = match source_comment(document) {
            Some(path) => format!("document {} ({path})", index + 1),
            None => format!("document {}", index + 1),
        };
        let parsed =
            values::parse_manifest_documents(document).map_err(|source| Error::ManifestYaml {
                document: label.clone(),
                source,
            })?;
        let Some(value) = parsed.first().filter(|v| !matches!(v, values::Value::Null)) else {
            continue;
        };
        resources.push(Resource::from_value(Value::from(value), label)?);
    }
    Ok(resources)
}

/// Splits at document markers: a line that is `---` or `...`, or starts
/// with one of them and a space or tab. Text after `---` on its line starts
/// the next document.
fn split_documents(text: &str) -> Vec<&str> {
    let mut documents = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if let Some(marker) = document_marker(line) {
            documents.push(&text[start..offset]);
            start = offset + marker;
        }
        offset += line.len();
    }
    documents.push(&text[start..]);
    documents
}

/// The length of the marker if `line` opens with one.
fn document_marker(line: &str) -> Option<usize> {
    let rest = line.strip_prefix("---").or(line.strip_prefix("..."))?;
    match rest.chars().next() {
        None | Some(' ' | '\t' | '\r' | '\n') => Some(3),
        Some(_) => None,
    }
}

fn is_blank(document: &str) -> bool {
    document.lines().all(|line| {
        let line = line.trim();
        line.is_empty() || line.starts_with('#')
    })
}

fn source_comment(document: &str) -> Option<&str> {
    document
        .lines()
        .find_map(|line| line.trim().strip_prefix("# Source:"))
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "---
# Source: web/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  ports:
  - port: 80
---
# Source: web/templates/empty.yaml
# nothing rendered here
---
# Source: web/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        args: [\"--\", \"---x\"]
---
";

    #[test]
    fn parses_a_stream_skipping_empty_documents() {
        let resources = parse_manifests(STREAM).unwrap();
        let ids: Vec<String> = resources.iter().map(|r| r.id().to_string()).collect();
        assert_eq!(ids, ["Service shop/web (v1)", "Deployment web (apps/v1)"]);
        assert_eq!(
            resources[1].source(),
            "document 2 (web/templates/deployment.yaml)"
        );
        assert_eq!(
            resources[1].object()["spec"]["template"]["spec"]["containers"][0]["args"][1],
            "---x"
        );
        assert_eq!(resources[0].id().namespace.as_deref(), Some("shop"));
        assert_eq!(resources[1].id().namespace, None);
    }

    #[test]
    fn null_and_marker_only_documents_are_skipped() {
        let text = "--- \n~\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n...\n";
        let resources = parse_manifests(text).unwrap();
        assert_eq!(resources.len(), 1);
        assert_eq!(resources[0].source(), "document 2");
    }

    #[test]
    fn missing_identity_names_the_document() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# Source: c/templates/bad.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {}}\n";
        let err = parse_manifests(text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "manifest document 2 (c/templates/bad.yaml) has no string metadata.name"
        );
        let err = parse_manifests("apiVersion: 1\nkind: X\nmetadata: {name: a}\n").unwrap_err();
        assert!(matches!(
            err,
            Error::MissingField {
                field: "apiVersion",
                ..
            }
        ));
        let err = parse_manifests("apiVersion: v1\nmetadata: {name: a}\n").unwrap_err();
        assert!(matches!(err, Error::MissingField { field: "kind", .. }));
        let text = "apiVersion: v1\nkind: X\nmetadata: {name: a, namespace: [x]}\n";
        let err = parse_manifests(text).unwrap_err();
        assert!(matches!(
            err,
            Error::MissingField {
                field: "metadata.namespace",
                ..
            }
        ));
    }

    #[test]
    fn non_mappings_and_bad_yaml_are_typed_errors() {
        let err = parse_manifests("---\n- a\n- b\n").unwrap_err();
        assert_eq!(err.to_string(), "manifest document 1 is not a mapping");
        let err = parse_manifests("a: [unclosed\n").unwrap_err();
        assert!(
            matches!(err, Error::ManifestYaml { ref document, .. } if document == "document 1")
        );
    }

    #[test]
    fn key_ignores_the_version() {
        let old =
            parse_manifests("apiVersion: apps/v1beta2\nkind: Deployment\nmetadata: {name: a}\n")
                .unwrap();
        let new = parse_manifests("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n")
            .unwrap();
        assert_ne!(old[0].id(), new[0].id());
        assert_eq!(old[0].id().key(), new[0].id().key());
        assert_eq!(new[0].id().group(), "apps");
        let core = parse_manifests("apiVersion: v1\nkind: Secret\nmetadata: {name: a}\n").unwrap();
        assert_eq!(core[0].id().group(), "");
    }

    #[test]
    fn yaml_text_round_trips() {
        let resources = parse_manifests(STREAM).unwrap();
        let text = resources[1].to_yaml().unwrap();
        let again = parse_manifests(&text).unwrap();
        assert_eq!(again[0].object(), resources[1].object());
    }
}
