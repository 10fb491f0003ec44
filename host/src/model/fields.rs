//! Field ownership by policy: what an app says of the fields other
//! managers (people, controllers, autoscalers) touch on its objects.
//!
//! Owns the types `capstan.yaml` declares ([`Conflicts`], [`IgnoreRule`],
//! [`FieldPolicy`]), the JSON pointers ignore rules name ([`Pointer`],
//! RFC 6901, bounded) and the rule that a chart's own
//! HorizontalPodAutoscaler leaves its workload's `/spec/replicas` alone
//! ([`autoscaled`]). Pure values; the cluster target applies them.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// What an apply does when another field manager holds a field capstan
/// sets (a `kubectl edit`, `kubectl scale`, another applier).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Conflicts {
    /// Take the fields back (server-side apply with `force`), as Flux and
    /// Argo CD's server-side sync do: the app is kept as declared. The
    /// default.
    #[default]
    Force,
    /// Fail the apply naming each field and its manager, as Helm 4 does
    /// without `--force-conflicts`; `app apply --force-conflicts` takes
    /// them for one operation.
    Fail,
}

impl fmt::Display for Conflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Force => "force",
            Self::Fail => "fail",
        })
    }
}

/// What the daemon does when an applied app's objects drift (another
/// manager changed a field capstan set, or deleted an object).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DriftMode {
    /// Nothing: no watch, no condition.
    Off,
    /// Watch and report: the app's `drifted` condition, an Event, a
    /// metric. The default.
    #[default]
    Detect,
    /// Report, then apply the app again (which writes only the objects
    /// that differ), at most once per `drift_correction_interval`, each
    /// correction in the history.
    Correct,
}

impl fmt::Display for DriftMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Off => "off",
            Self::Detect => "detect",
            Self::Correct => "correct",
        })
    }
}

/// The most ignore rules an app may declare.
pub const MAX_IGNORE_RULES: usize = 64;
/// The most JSON pointers one rule may name.
pub const MAX_RULE_PATHS: usize = 32;
/// The longest JSON pointer, in bytes.
pub const MAX_POINTER_LEN: usize = 512;
/// The deepest JSON pointer, in segments.
pub const MAX_POINTER_DEPTH: usize = 32;

/// Fields of some objects that capstan neither applies nor compares, so
/// it never fights the manager that owns them (an HPA's `/spec/replicas`,
/// a webhook configuration's `caBundle` that a controller fills in).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IgnoreRule {
    /// The kind, as Kubernetes spells it (`Deployment`), matched without
    /// regard to case; `*` for every kind.
    pub kind: String,
    /// The object's name: exact, or a pattern with `*` for any run of
    /// characters (`web-*`). Every name when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The object's namespace; every namespace when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The fields, as JSON pointers (`/spec/replicas`,
    /// `/metadata/annotations/example.com~1note`).
    #[schema(value_type = Vec<String>)]
    pub paths: Vec<Pointer>,
}

impl IgnoreRule {
    /// Whether the rule covers the object `kind` `namespace/name`.
    pub fn covers(&self, kind: &str, namespace: Option<&str>, name: &str) -> bool {
        (self.kind == "*" || self.kind.eq_ignore_ascii_case(kind))
            && self
                .name
                .as_deref()
                .is_none_or(|p| pattern_matches(p, name))
            && self
                .namespace
                .as_deref()
                .is_none_or(|n| namespace == Some(n))
    }

    /// The rule's problem, if any: an empty or overlong kind or pattern,
    /// no path or too many.
    pub fn problem(&self) -> Option<String> {
        let bounded = |what: &str, text: &str, max: usize| {
            (text.is_empty() || text.len() > max || text.chars().any(char::is_control)).then(|| {
                format!(
                    "ignore rule {what} {:?} must be 1 to {max} printable bytes",
                    {
                        let mut shown: String = text.chars().take(64).collect();
                        if shown.len() < text.len() {
                            shown.push('…');
                        }
                        shown
                    }
                )
            })
        };
        bounded("kind", &self.kind, 63)
            .or_else(|| self.name.as_deref().and_then(|n| bounded("name", n, 253)))
            .or_else(|| {
                self.namespace
                    .as_deref()
                    .and_then(|n| bounded("namespace", n, 63))
            })
            .or_else(|| {
                (self.paths.is_empty() || self.paths.len() > MAX_RULE_PATHS).then(|| {
                    format!(
                        "ignore rule for {} names {} paths; 1 to {MAX_RULE_PATHS} allowed",
                        self.kind,
                        self.paths.len()
                    )
                })
            })
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any run of
/// characters (none included) and every other character for itself.
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return pattern == name;
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// What an app says of field ownership (`conflicts`, `ignore` in
/// `capstan.yaml`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FieldPolicy {
    /// What an apply does with a field another manager holds.
    pub conflicts: Conflicts,
    /// Fields left out of what is applied and compared.
    pub ignore: Vec<IgnoreRule>,
    /// What the daemon does when the app's objects drift.
    #[serde(default)]
    pub drift: DriftMode,
}

impl FieldPolicy {
    /// The pointers that the rules name for one object, in rule order,
    /// without repeats.
    pub fn ignored(&self, kind: &str, namespace: Option<&str>, name: &str) -> Vec<&Pointer> {
        let mut found: Vec<&Pointer> = Vec::new();
        for rule in self
            .ignore
            .iter()
            .filter(|r| r.covers(kind, namespace, name))
        {
            for path in &rule.paths {
                if !found.contains(&path) {
                    found.push(path);
                }
            }
        }
        found
    }
}

/// A JSON pointer (RFC 6901): `/` then segments separated by `/`, with
/// `~1` for `/` and `~0` for `~` inside a segment. At most
/// `MAX_POINTER_LEN` (512) bytes and `MAX_POINTER_DEPTH` (32) segments; the
/// empty pointer (the whole object) is refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pointer {
    text: String,
    segments: Vec<String>,
}

impl Pointer {
    /// Parses `text`.
    ///
    /// # Errors
    /// A message naming what is wrong (shown at most 64 characters).
    pub fn parse(text: &str) -> Result<Self, String> {
        let shown = || {
            let mut shown: String = text.chars().take(64).collect();
            if shown.len() < text.len() {
                shown.push('…');
            }
            shown
        };
        if text.len() > MAX_POINTER_LEN {
            return Err(format!(
                "JSON pointer {:?} is longer than {MAX_POINTER_LEN} bytes",
                shown()
            ));
        }
        let Some(body) = text.strip_prefix('/') else {
            return Err(format!(
                "JSON pointer {:?} must start with / (such as /spec/replicas)",
                shown()
            ));
        };
        if text.chars().any(char::is_control) {
            return Err(format!(
                "JSON pointer {:?} holds a control character",
                shown()
            ));
        }
        let mut segments = Vec::new();
        for raw in body.split('/') {
            let mut segment = String::with_capacity(raw.len());
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    segment.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => segment.push('~'),
                    Some('1') => segment.push('/'),
                    _ => {
                        return Err(format!(
                            "JSON pointer {:?}: ~ must be followed by 0 or 1",
                            shown()
                        ));
                    }
                }
            }
            segments.push(segment);
        }
        if segments.len() > MAX_POINTER_DEPTH {
            return Err(format!(
                "JSON pointer {:?} is deeper than {MAX_POINTER_DEPTH} segments",
                shown()
            ));
        }
        Ok(Pointer {
            text: text.to_string(),
            segments,
        })
    }

    /// The segments, unescaped.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// The pointer as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The value at this pointer in `object`.
    pub fn get<'v>(&self, object: &'v Value) -> Option<&'v Value> {
        self.segments
            .iter()
            .try_fold(object, |node, segment| step(node, segment))
    }

    /// Removes the value at this pointer from `object` and returns it.
    pub fn remove(&self, object: &mut Value) -> Option<Value> {
        let (last, parents) = self.segments.split_last()?;
        let mut node = object;
        for segment in parents {
            node = step_mut(node, segment)?;
        }
        match node {
            Value::Object(map) => map.remove(last.as_str()),
            Value::Array(items) => {
                let index = index_of(last, items.len())?;
                Some(items.remove(index))
            }
            _ => None,
        }
    }

    /// Sets the value at this pointer in `object`, making the objects on
    /// the way when they are missing. Does nothing where a parent is not
    /// an object (or an array holding the index).
    pub fn set(&self, object: &mut Value, value: Value) {
        let Some((last, parents)) = self.segments.split_last() else {
            return;
        };
        let mut node = object;
        for segment in parents {
            if let Value::Object(map) = node {
                node = map
                    .entry(segment.clone())
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
            } else if let Some(next) = step_mut(node, segment) {
                node = next;
            } else {
                return;
            }
        }
        match node {
            Value::Object(map) => {
                map.insert(last.clone(), value);
            }
            Value::Array(items) => {
                if let Some(index) = index_of(last, items.len()) {
                    items[index] = value;
                }
            }
            _ => {}
        }
    }
}

fn index_of(segment: &str, len: usize) -> Option<usize> {
    if segment.len() > 1 && segment.starts_with('0') {
        return None;
    }
    segment.parse::<usize>().ok().filter(|i| *i < len)
}

fn step<'v>(node: &'v Value, segment: &str) -> Option<&'v Value> {
    match node {
        Value::Object(map) => map.get(segment),
        Value::Array(items) => items.get(index_of(segment, items.len())?),
        _ => None,
    }
}

fn step_mut<'v>(node: &'v mut Value, segment: &str) -> Option<&'v mut Value> {
    match node {
        Value::Object(map) => map.get_mut(segment),
        Value::Array(items) => {
            let index = index_of(segment, items.len())?;
            items.get_mut(index)
        }
        _ => None,
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Pointer {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Pointer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Pointer::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// One field of a live object that a re-apply would change and that a
/// manager other than capstan holds: who drifted it, how and when (read
/// from the object's `managedFields`; every string bounded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DriftedField {
    /// The field as kubectl prints it (`.spec.replicas`,
    /// `.spec.template.spec.containers[name="web"].image`).
    pub field: String,
    /// The manager holding it (`kubectl`, `kubectl-edit`, an HPA's).
    pub manager: String,
    /// How it wrote it: `Update` or `Apply`.
    pub operation: String,
    /// The subresource it wrote through (`scale`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
    /// When it last wrote (RFC 3339), as the server recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
}

impl fmt::Display for DriftedField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.manager.is_empty() {
            return write!(f, "{} removed (no manager holds it now)", self.field);
        }
        write!(
            f,
            "{} changed by {:?} ({}",
            self.field, self.manager, self.operation
        )?;
        if let Some(subresource) = &self.subresource {
            write!(f, " through {subresource}")?;
        }
        if let Some(time) = &self.time {
            write!(f, " at {time}")?;
        }
        f.write_str(")")
    }
}

/// One object other managers drifted from what capstan applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ObjectDrift {
    /// The object, as `Kind namespace/name (apiVersion)`.
    pub object: String,
    /// Whether it was deleted (then `fields` is empty).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// Each drifted field, who changed it, how and when.
    pub fields: Vec<DriftedField>,
}

impl fmt::Display for ObjectDrift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.deleted {
            return write!(f, "{} deleted", self.object);
        }
        let fields: Vec<String> = self.fields.iter().map(ToString::to_string).collect();
        write!(f, "{}: {}", self.object, fields.join("; "))
    }
}

/// The ignore rules a chart implies by itself: a HorizontalPodAutoscaler
/// (`autoscaling/v1` or `v2`) among `objects` scaling a workload that is
/// also among them leaves that workload's `/spec/replicas` to the
/// autoscaler. `objects` are the rendered manifests; `namespace` is the
/// release's, for objects that name none.
pub fn autoscaled<'a>(
    objects: impl IntoIterator<Item = &'a Value> + Clone,
    namespace: &str,
) -> Vec<IgnoreRule> {
    let text = |v: &'a Value, p: &str| v.pointer(p).and_then(Value::as_str);
    let namespace_of = |v: &'a Value| text(v, "/metadata/namespace").unwrap_or(namespace);
    let mut rules: Vec<IgnoreRule> = Vec::new();
    for hpa in objects.clone().into_iter().filter(|o| {
        text(o, "/kind") == Some("HorizontalPodAutoscaler")
            && text(o, "/apiVersion").is_some_and(|v| v.starts_with("autoscaling/"))
    }) {
        let (Some(kind), Some(name)) = (
            text(hpa, "/spec/scaleTargetRef/kind"),
            text(hpa, "/spec/scaleTargetRef/name"),
        ) else {
            continue;
        };
        let target_api = text(hpa, "/spec/scaleTargetRef/apiVersion");
        let ns = namespace_of(hpa);
        let scaled = objects.clone().into_iter().any(|o| {
            text(o, "/kind") == Some(kind)
                && text(o, "/metadata/name") == Some(name)
                && namespace_of(o) == ns
                && target_api.is_none_or(|api| text(o, "/apiVersion") == Some(api))
        });
        let Ok(replicas) = Pointer::parse("/spec/replicas") else {
            continue;
        };
        let rule = IgnoreRule {
            kind: kind.to_string(),
            name: Some(name.to_string()),
            namespace: Some(ns.to_string()),
            paths: vec![replicas],
        };
        if scaled && !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_follow_rfc_6901_and_are_bounded() {
        let p = Pointer::parse("/metadata/annotations/example.com~1note~0x").unwrap();
        assert_eq!(
            p.segments(),
            ["metadata", "annotations", "example.com/note~x"]
        );
        let mut object = json!({"metadata": {"annotations": {"example.com/note~x": "a", "b": "c"}},
                                "spec": {"ports": [{"port": 1}, {"port": 2}]}});
        assert_eq!(p.get(&object), Some(&json!("a")));
        assert_eq!(p.remove(&mut object), Some(json!("a")));
        assert_eq!(p.get(&object), None);
        p.set(&mut object, json!("z"));
        assert_eq!(p.get(&object), Some(&json!("z")));
        let port = Pointer::parse("/spec/ports/1/port").unwrap();
        assert_eq!(port.get(&object), Some(&json!(2)));
        assert_eq!(
            Pointer::parse("/spec/ports/01/port").unwrap().get(&object),
            None
        );
        Pointer::parse("/spec/new/deep")
            .unwrap()
            .set(&mut object, json!(1));
        assert_eq!(object.pointer("/spec/new/deep"), Some(&json!(1)));
        for bad in ["spec", "", "/a~2", "/a~"] {
            assert!(Pointer::parse(bad).is_err(), "{bad}");
        }
        assert!(
            Pointer::parse(&"/a".repeat(40))
                .unwrap_err()
                .contains("deeper")
        );
        assert!(
            Pointer::parse(&format!("/{}", "x".repeat(600)))
                .unwrap_err()
                .contains("longer than 512")
        );
        assert!(Pointer::parse("/a\u{7}").unwrap_err().contains("control"));
    }

    #[test]
    fn name_patterns_match_runs_of_characters() {
        for (pattern, name, expected) in [
            ("web", "web", true),
            ("web", "web-1", false),
            ("web-*", "web-1", true),
            ("web-*", "web-", true),
            ("*-hook", "pre-hook", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "acb", false),
            ("*", "anything", true),
            ("a*a", "a", false),
        ] {
            assert_eq!(pattern_matches(pattern, name), expected, "{pattern} {name}");
        }
    }

    #[test]
    fn rules_cover_kinds_names_and_namespaces() {
        let policy: FieldPolicy = serde_json::from_value(json!({
            "conflicts": "fail",
            "ignore": [
                {"kind": "deployment", "name": "web*", "paths": ["/spec/replicas"]},
                {"kind": "*", "namespace": "ops", "paths": ["/metadata/labels/team", "/spec/replicas"]},
            ]
        }))
        .unwrap();
        assert_eq!(policy.conflicts, Conflicts::Fail);
        let paths = |kind, ns, name| {
            policy
                .ignored(kind, ns, name)
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            paths("Deployment", Some("shop"), "web-1"),
            ["/spec/replicas"]
        );
        assert!(paths("Deployment", Some("shop"), "db").is_empty());
        assert_eq!(
            paths("Deployment", Some("ops"), "web"),
            ["/spec/replicas", "/metadata/labels/team"]
        );
        let bad: Result<FieldPolicy, _> = serde_json::from_value(json!({
            "conflicts": "force", "ignore": [{"kind": "X", "paths": ["nope"]}]
        }));
        assert!(bad.unwrap_err().to_string().contains("must start with /"));
        let rule = IgnoreRule {
            kind: String::new(),
            name: None,
            namespace: None,
            paths: Vec::new(),
        };
        assert!(rule.problem().unwrap().contains("kind"));
    }

    #[test]
    fn a_charts_own_autoscaler_leaves_its_workloads_replicas_alone() {
        let objects = [
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "db"}}),
            json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                   "metadata": {"name": "web"},
                   "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}),
            // Scales something the chart does not hold: no rule.
            json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                   "metadata": {"name": "other"},
                   "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "elsewhere"}}}),
        ];
        let rules = autoscaled(objects.iter(), "shop");
        assert_eq!(rules.len(), 1);
        assert!(rules[0].covers("Deployment", Some("shop"), "web"));
        assert!(!rules[0].covers("Deployment", Some("shop"), "db"));
        assert!(!rules[0].covers("Deployment", Some("other"), "web"));
        assert_eq!(rules[0].paths[0].as_str(), "/spec/replicas");
    }
}
