//! The document against the router and against `docs/src/reference/openapi.json`.

use super::*;

#[test]
fn the_document_in_docs_is_the_one_the_server_serves() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/reference/openapi.json");
    if std::env::var_os("CAPSTAN_WRITE_OPENAPI").is_some() {
        // `cargo xtask openapi`.
        std::fs::write(&path, document_json()).unwrap();
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == document_json(),
        "{} is not what the daemon serves; run `cargo xtask openapi`",
        path.display()
    );
}

#[test]
fn every_code_is_in_the_document_and_every_route_names_its_statuses() {
    let json: serde_json::Value = serde_json::from_str(&document_json()).unwrap();
    let codes = &json["components"]["schemas"]["ErrorCode"]["enum"];
    for code in ErrorCode::ALL {
        assert!(
            codes.as_array().unwrap().contains(&code.as_str().into()),
            "{code}"
        );
    }
    for route in ROUTES {
        let method = method_name(&route.method).to_ascii_lowercase();
        let op = &json["paths"][route.path][&method];
        assert!(op.is_object(), "{method} {}", route.path);
        for status in ["401", "429", "500"] {
            assert!(op["responses"][status].is_object(), "{} {status}", route.id);
        }
    }
}

#[test]
fn every_link_names_an_operation_and_fills_its_path_parameters() {
    let mut linked = 0;
    for route in ROUTES {
        for (name, target, parameters) in links(route.id) {
            linked += 1;
            assert!(
                matches!(route.output, Output::Json(..)),
                "{}: links from a JSON answer",
                route.id
            );
            let target = ROUTES
                .iter()
                .find(|r| r.id == *target)
                .unwrap_or_else(|| panic!("{}: {name}: no operation {target}", route.id));
            let mut wanted: Vec<&str> = target
                .path
                .split('/')
                .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
                .collect();
            let mut given: Vec<&str> = parameters.iter().map(|(p, _)| *p).collect();
            wanted.sort_unstable();
            given.sort_unstable();
            assert_eq!(wanted, given, "{}: {name}", route.id);
        }
    }
    assert!(linked > 0);
    let json: serde_json::Value = serde_json::from_str(&document_json()).unwrap();
    let link = &json["paths"]["/v1/apps"]["post"]["responses"]["201"]["links"]["ApplyApp"];
    assert_eq!(link["operationId"], "applyApp");
    assert_eq!(link["parameters"]["app"], "$response.body#/name");
}

#[test]
fn every_reference_in_the_document_resolves() {
    fn refs<'a>(value: &'a serde_json::Value, found: &mut Vec<&'a str>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::String(target)) = map.get("$ref") {
                    found.push(target);
                }
                map.values().for_each(|v| refs(v, found));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
            _ => {}
        }
    }
    let json: serde_json::Value = serde_json::from_str(&document_json()).unwrap();
    let mut found = Vec::new();
    refs(&json, &mut found);
    assert!(!found.is_empty());
    for target in found {
        let name = target.strip_prefix("#/components/schemas/").unwrap();
        assert!(
            json["components"]["schemas"][name].is_object(),
            "{target} does not resolve"
        );
    }
}

#[test]
fn every_route_in_the_document_reaches_a_handler() {
    use tower::ServiceExt as _;
    let dir = tempfile::tempdir().unwrap();
    let target = std::sync::Arc::new(crate::kube::DirTarget::new(dir.path().join("applied")));
    let lifecycle = crate::lifecycle::Lifecycle::open(crate::lifecycle::Options::new(
        dir.path().join("state"),
        crate::trust::TrustStore::empty(),
        target,
    ))
    .unwrap();
    let router = crate::api::router(lifecycle, None);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for route in ROUTES {
        let path = route
            .path
            .replace("{app}", "nosuch")
            .replace("{chart}", "nosuch")
            .replace("{name}", "nosuch")
            .replace("{id}", "1");
        let method = method_name(&route.method);
        let request = axum::http::Request::builder()
            .method(method)
            .uri(&path)
            .header(header::CONTENT_TYPE, wire::JSON_CONTENT_TYPE)
            .body(axum::body::Body::from("{}"))
            .unwrap();
        let response = runtime.block_on(router.clone().oneshot(request)).unwrap();
        let status = response.status();
        let body = runtime
            .block_on(http_body_util::BodyExt::collect(response.into_body()))
            .unwrap()
            .to_bytes();
        let code = serde_json::from_slice::<wire::ErrorBody>(&body)
            .map(|error| error.code)
            .ok();
        assert!(
            !matches!(
                code,
                Some(ErrorCode::UnknownEndpoint | ErrorCode::MethodNotAllowed)
            ),
            "{method} {path}: {status} {code:?}"
        );
    }
}
