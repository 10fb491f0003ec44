//! Validation of values against a chart's `values.schema.json`: the parts of
//! JSON Schema (draft 4 to 2020-12) that charts use: `type`, `enum`,
//! `const`, `properties`, `required`, `additionalProperties`,
//! `patternProperties`, `items`, `minItems`/`maxItems`, `uniqueItems`,
//! `minimum`/`maximum` (and their exclusive forms), `minLength`/
//! `maxLength`, `pattern`, `allOf`/`anyOf`/`oneOf`/`not`, `if`/`then`/
//! `else`, and local `$ref`s (`#/definitions/...`, `#/$defs/...`).
//!
//! Unknown keywords are ignored, as validators do; `format` is not checked.

use regex::Regex;

use crate::values::Value;

/// Validates `value` against `schema`; returns one line per violation,
/// each naming the JSON pointer of the offending value.
pub fn validate(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, schema, value, "", &mut errors, 0);
    errors
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Int(_) => "integer",
        Value::Float(f) if f.fract() == 0.0 => "integer",
        Value::Float(_) => "number",
        Value::String(_) => "string",
        Value::List(_) => "array",
        Value::Map(_) => "object",
    }
}

fn type_matches(want: &str, v: &Value) -> bool {
    let got = kind(v);
    want == got || (want == "number" && got == "integer")
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let path = reference.strip_prefix('#')?;
    let mut cur = root;
    for part in path.split('/').filter(|p| !p.is_empty()) {
        let part = part.replace("~1", "/").replace("~0", "~");
        cur = cur.as_map()?.get(&part)?;
    }
    Some(cur)
}

fn equal(a: &Value, b: &Value) -> bool {
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn check(
    root: &Value,
    schema: &Value,
    v: &Value,
    at: &str,
    errors: &mut Vec<String>,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    let s = match schema {
        Value::Bool(false) => {
            errors.push(format!("at '{at}': not allowed"));
            return;
        }
        Value::Map(m) => m,
        _ => return,
    };
    let here = if at.is_empty() { "" } else { at };
    if let Some(Value::String(r)) = s.get("$ref")
        && let Some(target) = resolve(root, r)
    {
        check(root, target, v, at, errors, depth + 1);
    }
    match s.get("type") {
        Some(Value::String(t)) if !type_matches(t, v) => {
            errors.push(format!("at '{here}': got {}, want {t}", kind(v)));
            return;
        }
        Some(Value::List(ts)) => {
            let names: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
            if !names.iter().any(|t| type_matches(t, v)) {
                errors.push(format!(
                    "at '{here}': got {}, want {}",
                    kind(v),
                    names.join(" or ")
                ));
                return;
            }
        }
        _ => {}
    }
    if let Some(Value::List(options)) = s.get("enum")
        && !options.iter().any(|o| equal(o, v))
    {
        let shown: Vec<String> = options.iter().map(crate::values::to_json).collect();
        errors.push(format!(
            "at '{here}': value must be one of {}",
            shown.join(", ")
        ));
    }
    if let Some(c) = s.get("const")
        && !equal(c, v)
    {
        errors.push(format!(
            "at '{here}': value must be {}",
            crate::values::to_json(c)
        ));
    }
    check_number(s, v, here, errors);
    check_string(s, v, here, errors);
    match v {
        Value::Map(obj) => check_object(root, s, obj, at, errors, depth),
        Value::List(items) => check_array(root, s, items, at, errors, depth),
        _ => {}
    }
    check_combinators(root, s, v, at, errors, depth);
}

fn check_number(s: &crate::values::Map, v: &Value, here: &str, errors: &mut Vec<String>) {
    let Some(x) = num(v) else {
        return;
    };
    let bound = |k: &str| s.get(k).and_then(num);
    if let Some(min) = bound("minimum") {
        let exclusive = matches!(s.get("exclusiveMinimum"), Some(Value::Bool(true)));
        if x < min || (exclusive && x == min) {
            errors.push(format!("at '{here}': must be >= {min} but found {x}"));
        }
    }
    if let Some(max) = bound("maximum") {
        let exclusive = matches!(s.get("exclusiveMaximum"), Some(Value::Bool(true)));
        if x > max || (exclusive && x == max) {
            errors.push(format!("at '{here}': must be <= {max} but found {x}"));
        }
    }
    if let Some(min) = bound("exclusiveMinimum")
        && x <= min
    {
        errors.push(format!("at '{here}': must be > {min} but found {x}"));
    }
    if let Some(max) = bound("exclusiveMaximum")
        && x >= max
    {
        errors.push(format!("at '{here}': must be < {max} but found {x}"));
    }
}

fn check_string(s: &crate::values::Map, v: &Value, here: &str, errors: &mut Vec<String>) {
    let Value::String(text) = v else {
        return;
    };
    let len = text.chars().count() as f64;
    if let Some(min) = s.get("minLength").and_then(num)
        && len < min
    {
        errors.push(format!(
            "at '{here}': length must be >= {min}, but got {len}"
        ));
    }
    if let Some(max) = s.get("maxLength").and_then(num)
        && len > max
    {
        errors.push(format!(
            "at '{here}': length must be <= {max}, but got {len}"
        ));
    }
    if let Some(Value::String(p)) = s.get("pattern")
        && let Ok(re) = Regex::new(p)
        && !re.is_match(text)
    {
        errors.push(format!(
            "at '{here}': '{text}' does not match pattern '{p}'"
        ));
    }
}

fn check_object(
    root: &Value,
    s: &crate::values::Map,
    obj: &crate::values::Map,
    at: &str,
    errors: &mut Vec<String>,
    depth: usize,
) {
    if let Some(Value::List(req)) = s.get("required") {
        let missing: Vec<String> = req
            .iter()
            .filter_map(Value::as_str)
            .filter(|k| !obj.contains_key(*k))
            .map(|k| format!("'{k}'"))
            .collect();
        if !missing.is_empty() {
            errors.push(format!(
                "at '{at}': missing property {}",
                missing.join(", ")
            ));
        }
    }
    let props = s.get("properties").and_then(Value::as_map);
    let patterns: Vec<(Regex, &Value)> = s
        .get("patternProperties")
        .and_then(Value::as_map)
        .map(|m| {
            m.iter()
                .filter_map(|(p, sch)| Regex::new(p).ok().map(|re| (re, sch)))
                .collect()
        })
        .unwrap_or_default();
    for (key, val) in obj {
        let child = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
        let mut matched = false;
        if let Some(sch) = props.and_then(|p| p.get(key)) {
            matched = true;
            check(root, sch, val, &child, errors, depth + 1);
        }
        for (re, sch) in &patterns {
            if re.is_match(key) {
                matched = true;
                check(root, sch, val, &child, errors, depth + 1);
            }
        }
        if !matched {
            match s.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    errors.push(format!(
                        "at '{at}': additional properties '{key}' not allowed"
                    ));
                }
                Some(sch @ Value::Map(_)) => check(root, sch, val, &child, errors, depth + 1),
                _ => {}
            }
        }
    }
}

fn check_array(
    root: &Value,
    s: &crate::values::Map,
    items: &[Value],
    at: &str,
    errors: &mut Vec<String>,
    depth: usize,
) {
    let count = items.len() as f64;
    if let Some(min) = s.get("minItems").and_then(num)
        && count < min
    {
        errors.push(format!("at '{at}': minItems: got {count}, want {min}"));
    }
    if let Some(max) = s.get("maxItems").and_then(num)
        && count > max
    {
        errors.push(format!("at '{at}': maxItems: got {count}, want {max}"));
    }
    if matches!(s.get("uniqueItems"), Some(Value::Bool(true))) {
        for (i, a) in items.iter().enumerate() {
            if items[..i].iter().any(|b| equal(a, b)) {
                errors.push(format!("at '{at}': items at index {i} are not unique"));
                break;
            }
        }
    }
    match s.get("items") {
        Some(Value::List(tuple)) => {
            for (i, (item, sch)) in items.iter().zip(tuple).enumerate() {
                check(root, sch, item, &format!("{at}/{i}"), errors, depth + 1);
            }
        }
        Some(sch) => {
            for (i, item) in items.iter().enumerate() {
                check(root, sch, item, &format!("{at}/{i}"), errors, depth + 1);
            }
        }
        None => {}
    }
}

fn check_combinators(
    root: &Value,
    s: &crate::values::Map,
    v: &Value,
    at: &str,
    errors: &mut Vec<String>,
    depth: usize,
) {
    let passes = |sch: &Value| {
        let mut e = Vec::new();
        check(root, sch, v, at, &mut e, depth + 1);
        e.is_empty()
    };
    if let Some(Value::List(all)) = s.get("allOf") {
        for sch in all {
            check(root, sch, v, at, errors, depth + 1);
        }
    }
    if let Some(Value::List(any)) = s.get("anyOf")
        && !any.iter().any(passes)
    {
        errors.push(format!("at '{at}': anyOf failed"));
    }
    if let Some(Value::List(one)) = s.get("oneOf") {
        let n = one.iter().filter(|sch| passes(sch)).count();
        if n != 1 {
            errors.push(format!("at '{at}': oneOf failed, {n} subschemas matched"));
        }
    }
    if let Some(not) = s.get("not")
        && passes(not)
    {
        errors.push(format!("at '{at}': not failed"));
    }
    if let Some(cond) = s.get("if") {
        let branch = if passes(cond) {
            s.get("then")
        } else {
            s.get("else")
        };
        if let Some(sch) = branch {
            check(root, sch, v, at, errors, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Value {
        Value::from(serde_json::from_str::<serde_json::Value>(json).unwrap())
    }

    #[test]
    fn finds_type_required_enum_and_bounds() {
        let schema = parse(
            r##"{"type":"object","required":["image"],"properties":{
                "replicas":{"type":"integer","minimum":1},
                "mode":{"enum":["a","b"]},
                "name":{"type":"string","pattern":"^[a-z]+$"},
                "strict":{"type":"object","additionalProperties":false,"properties":{"x":{"type":"boolean"}}},
                "ref":{"$ref":"#/definitions/port"}},
              "definitions":{"port":{"type":"number","maximum":65535}}}"##,
        );
        let good = parse(
            r#"{"image":"x","replicas":2,"mode":"a","name":"abc","strict":{"x":true},"ref":80}"#,
        );
        assert!(
            validate(&schema, &good).is_empty(),
            "{:?}",
            validate(&schema, &good)
        );
        let bad = parse(r#"{"replicas":0.5,"mode":"c","name":"A1","strict":{"y":1},"ref":70000}"#);
        let errors = validate(&schema, &bad);
        assert_eq!(errors.len(), 6, "{errors:?}");
        assert!(
            errors
                .iter()
                .any(|e| e.contains("missing property 'image'"))
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("/replicas") && e.contains("want integer"))
        );
    }
}
