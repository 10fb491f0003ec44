//! A minimal OpenAPI v3 index and per group-version documents: just enough
//! for kubectl to see that each kind's PATCH takes the `fieldValidation`
//! query parameter, so `kubectl apply` leaves validation to the server
//! instead of downloading a schema. Holds no schemas; `/openapi/v2` is 404.

use crate::discovery::ResourceInfo;
use serde_json::{Map, Value, json};

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `GET /openapi/v3`: the group-versions and where their documents are.
pub fn index(all: &[ResourceInfo]) -> Value {
    let mut paths = Map::new();
    for r in all {
        let p = gv_path(&r.group, &r.version);
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}")}),
        );
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/api/v1` or `/openapi/v3/apis/G/V`, if served.
pub fn document(all: &[ResourceInfo], group: &str, version: &str) -> Option<Value> {
    let mut paths = Map::new();
    for r in all
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let prefix = format!("/{}", gv_path(group, version));
        let path = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{prefix}/{}/{{name}}", r.plural)
        };
        let params: Vec<Value> = ["dryRun", "fieldManager", "fieldValidation", "force"]
            .iter()
            .map(|n| json!({"name": n, "in": "query", "schema": {"type": "string"}}))
            .collect();
        paths.insert(path, json!({"patch": {
            "operationId": format!("patch{}", r.kind),
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
            "parameters": params,
            "responses": {"200": {"description": "OK"}},
        }}));
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (kube-double)", "version": "v1.33.0"},
        "paths": paths,
        "components": {},
    }))
}
