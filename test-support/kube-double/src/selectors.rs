//! Label and field selectors as `LIST` and `WATCH` take them in the query
//! (`labelSelector=app=x,tier in (web,api),!legacy`,
//! `fieldSelector=metadata.name=x,involvedObject.name=y`). A selector that does
//! not parse is an error the server turns into a 400.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum LabelReq {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<LabelReq>);

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/'))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// Splits at commas outside parentheses.
fn split_top(s: &str) -> Result<Vec<String>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unbalanced parenthesis in selector {s:?}"));
                }
                cur.push(c);
            }
            ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced parenthesis in selector {s:?}"));
    }
    parts.push(cur);
    Ok(parts.into_iter().map(|p| p.trim().to_string()).collect())
}

fn set_values(rest: &str, whole: &str) -> Result<Vec<String>, String> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| {
            format!("unable to parse requirement: expected a set of values in {whole:?}")
        })?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
    if let Some(bad) = values.iter().find(|v| !valid_value(v)) {
        return Err(format!("invalid label value: {bad:?}"));
    }
    Ok(values)
}

impl LabelSelector {
    /// Parses a selector string.
    ///
    /// # Errors
    /// A message naming the part that does not parse.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector(reqs));
        }
        for part in split_top(s)? {
            if part.is_empty() {
                return Err(format!("found empty requirement in selector {s:?}"));
            }
            let req = if let Some(key) = part.strip_prefix('!') {
                LabelReq::NotExists(key.trim().to_string())
            } else if let Some((k, v)) = part.split_once("!=") {
                LabelReq::NotEq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = part.split_once("==") {
                LabelReq::Eq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = part.split_once('=') {
                LabelReq::Eq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, rest)) = part.split_once(" notin ") {
                LabelReq::NotIn(k.trim().to_string(), set_values(rest, &part)?)
            } else if let Some((k, rest)) = part.split_once(" in ") {
                LabelReq::In(k.trim().to_string(), set_values(rest, &part)?)
            } else {
                LabelReq::Exists(part.clone())
            };
            let (key, value) = match &req {
                LabelReq::Eq(k, v) | LabelReq::NotEq(k, v) => (k, Some(v)),
                LabelReq::In(k, _) | LabelReq::NotIn(k, _) => (k, None),
                LabelReq::Exists(k) | LabelReq::NotExists(k) => (k, None),
            };
            if !valid_key(key) {
                return Err(format!(
                    "unable to parse requirement: invalid label key {key:?} in selector {s:?}"
                ));
            }
            if let Some(v) = value
                && !valid_value(v)
            {
                return Err(format!("invalid label value: {v:?} in selector {s:?}"));
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        self.0.iter().all(|req| match req {
            LabelReq::Eq(k, v) => get(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => get(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed field selector: dotted paths compared with `=`, `==` or `!=`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(Vec<String>, bool, String)>);

impl FieldSelector {
    /// Parses a selector string.
    ///
    /// # Errors
    /// A message naming the part that does not parse.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector(reqs));
        }
        for part in s.split(',') {
            let (path, equal, value) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, true, v)
            } else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                ));
            };
            let path = path.trim();
            if path.is_empty() || path.split('.').any(str::is_empty) {
                return Err(format!("invalid field path {path:?} in selector {s:?}"));
            }
            reqs.push((
                path.split('.').map(str::to_string).collect(),
                equal,
                value.trim().to_string(),
            ));
        }
        Ok(FieldSelector(reqs))
    }

    /// Whether the object's fields satisfy every requirement (a missing field is `""`).
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(path, equal, want)| {
            let mut v = object;
            for p in path {
                v = &v[p.as_str()];
            }
            let got = match v {
                Value::Null => String::new(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (got == *want) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj() -> Value {
        json!({"metadata": {"name": "a", "labels": {"app": "x", "tier": "web"}},
               "involvedObject": {"name": "pod-1"}, "type": "Warning"})
    }

    #[test]
    fn label_operators() {
        let o = obj();
        for (sel, want) in [
            ("app=x", true),
            ("app==x", true),
            ("app!=x", false),
            ("app in (x,y)", true),
            ("app notin (x,y)", false),
            ("tier", true),
            ("!tier", false),
            ("!missing", true),
            ("app=x,tier in (api)", false),
            ("", true),
        ] {
            let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(s.matches(&o), want, "{sel}");
        }
    }

    #[test]
    fn bad_label_selectors_are_errors() {
        for sel in ["app in (x", "a b c=d", "=x", "app=x,,b=c", "app in x"] {
            assert!(LabelSelector::parse(sel).is_err(), "{sel}");
        }
    }

    #[test]
    fn field_paths() {
        let o = obj();
        let s = FieldSelector::parse("metadata.name=a,involvedObject.name=pod-1,type!=Normal");
        assert!(s.is_ok_and(|s| s.matches(&o)));
        let s = FieldSelector::parse("metadata.namespace=x");
        assert!(s.is_ok_and(|s| !s.matches(&o)));
        assert!(FieldSelector::parse("nonsense").is_err());
    }
}
