//! The `Status` objects the double answers with on failure, in the shape and
//! wording of the real API server. Every error a handler returns is an
//! [`ApiError`]; nothing else decides what a failing client sees.

use serde_json::{Value, json};

/// One failed request: an HTTP code, a `reason`, a message and optional details.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status code, also the Status object's `code`.
    pub code: u16,
    /// The machine-readable `reason` (`NotFound`, `Conflict`, ...).
    pub reason: &'static str,
    /// The human-readable `message`.
    pub message: String,
    /// The `details` object, if any.
    pub details: Option<Value>,
    /// Seconds for a `Retry-After` header (429).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with no details.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// Adds a `details` object.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 404 NotFound for a named object of a resource (`deployments.apps "x" not found`).
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        let resource = qualified(group, plural);
        Self::new(404, "NotFound", format!("{resource} \"{name}\" not found"))
            .with_details(json!({"name": name, "group": group, "kind": plural}))
    }

    /// 404 NotFound for a path that names no resource.
    pub fn no_route() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        let resource = qualified(group, plural);
        Self::new(
            409,
            "AlreadyExists",
            format!("{resource} \"{name}\" already exists"),
        )
        .with_details(json!({"name": name, "group": group, "kind": plural}))
    }

    /// 422 Invalid: `Kind.group "name" is invalid: field: detail`.
    pub fn invalid(
        group: &str,
        kind: &str,
        name: &str,
        field: &str,
        reason: &str,
        detail: &str,
    ) -> Self {
        let qualified_kind = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let message = format!("{qualified_kind} \"{name}\" is invalid: {field}: {detail}");
        Self::new(422, "Invalid", message).with_details(json!({
            "name": name, "group": group, "kind": kind,
            "causes": [{"reason": reason, "message": detail, "field": field}],
        }))
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details(json!({}))
    }

    /// The reason the real server gives for a bare code (used by injected faults).
    pub fn from_code(code: u16) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Expired",
            413 => "RequestEntityTooLarge",
            415 => "UnsupportedMediaType",
            422 => "Invalid",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ if code >= 500 => "InternalError",
            _ => "Unknown",
        };
        Self::new(code, reason, format!("injected fault: {reason}"))
    }

    /// The `Status` object to send.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let (Some(details), Some(map)) = (&self.details, status.as_object_mut()) {
            map.insert("details".into(), details.clone());
        }
        if let (Some(secs), Some(map)) = (self.retry_after, status.as_object_mut()) {
            let details = map.entry("details").or_insert_with(|| json!({}));
            if let Some(d) = details.as_object_mut() {
                d.insert("retryAfterSeconds".into(), json!(secs));
            }
        }
        status
    }
}

/// A success `Status` (what a DELETE may answer).
pub fn success(group: &str, plural: &str, name: &str, uid: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": name, "group": group, "kind": plural, "uid": uid},
    })
}

/// `deployments.apps`, or `configmaps` for the core group.
pub fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_has_the_real_wording() {
        let s = ApiError::not_found("apps", "deployments", "x").to_status();
        assert_eq!(s["message"], "deployments.apps \"x\" not found");
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["kind"], "deployments");
    }
}
