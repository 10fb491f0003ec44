//! Owns the bounds of every string a plugin hands the host in an answer:
//! names at Kubernetes' own lengths (253 for an object name, 63 for a
//! namespace, a chart or a label), reasons at [`MAX_REASON_BYTES`],
//! paths at [`MAX_PATH_BYTES`], and no control characters in any of
//! them (a reason may hold line breaks and tabs). A string over its
//! bound refuses the answer whole; an error names it by a
//! [`preview`] of at most [`PREVIEW_CHARS`] characters and its length,
//! so nothing unbounded is logged or stored.

/// The longest reason (a veto, a `status` failure, a `request-reapply`).
pub const MAX_REASON_BYTES: usize = 1024;

/// The longest object name (a DNS-1123 subdomain), a Secret key, a DNS
/// name in a certificate.
pub const MAX_NAME_BYTES: usize = 253;

/// The longest namespace, chart name, kind or generated secret name (a
/// DNS-1123 label's length).
pub const MAX_LABEL_BYTES: usize = 63;

/// The longest `apiVersion` (a group, which is a DNS subdomain, a slash
/// and a version).
pub const MAX_API_VERSION_BYTES: usize = MAX_NAME_BYTES + 1 + MAX_LABEL_BYTES;

/// The longest dot-separated values path (a secret value's place).
pub const MAX_PATH_BYTES: usize = 1024;

/// The longest certificate common name (X.509's `ub-common-name`).
pub const MAX_COMMON_NAME_BYTES: usize = 64;

/// How many characters of a refused string an error shows.
pub const PREVIEW_CHARS: usize = 64;

/// The bytes an answer's action counts besides its strings (its tag and
/// framing), so that many empty actions still add up against the
/// output cap.
pub const ACTION_OVERHEAD_BYTES: usize = 16;

use crate::model::{Action, GeneratedSecret, ObjectRef, SecretShape, SecretSource, SecretValue};

/// What kind of string a bound applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An object name, a Secret key, a DNS name.
    Name,
    /// A namespace, a chart name, a kind, a generated secret's name.
    Label,
    /// An `apiVersion`.
    ApiVersion,
    /// A values path.
    Path,
    /// A certificate's common name.
    CommonName,
    /// Free text: a reason.
    Reason,
}

impl Kind {
    /// The bound in bytes.
    pub fn max_bytes(self) -> usize {
        match self {
            Kind::Name => MAX_NAME_BYTES,
            Kind::Label => MAX_LABEL_BYTES,
            Kind::ApiVersion => MAX_API_VERSION_BYTES,
            Kind::Path => MAX_PATH_BYTES,
            Kind::CommonName => MAX_COMMON_NAME_BYTES,
            Kind::Reason => MAX_REASON_BYTES,
        }
    }
}

/// Checks `text`, which the answer calls `what`, against the bound of
/// `kind`.
///
/// # Errors
/// One line naming `what`, a preview of `text` and its length, and the
/// bound or the control character it breaks.
pub fn check(what: &str, text: &str, kind: Kind) -> Result<(), String> {
    let max = kind.max_bytes();
    if text.len() > max {
        return Err(format!(
            "{what} {} is {} bytes, more than {max}",
            preview(text),
            text.len()
        ));
    }
    let allowed = |c: char| kind == Kind::Reason && matches!(c, '\n' | '\t');
    if let Some(c) = text.chars().find(|c| c.is_control() && !allowed(*c)) {
        return Err(format!(
            "{what} {} holds the control character {:?}",
            preview(text),
            c
        ));
    }
    Ok(())
}

/// `text` quoted for an error: at most [`PREVIEW_CHARS`] characters,
/// control characters escaped, `…` when cut.
pub fn preview(text: &str) -> String {
    let shown: String = text.chars().take(PREVIEW_CHARS).collect();
    let quoted = format!("{shown:?}");
    match shown.len() < text.len() {
        true => format!("{quoted}…"),
        false => quoted,
    }
}

/// The strings of an action that carries no JSON, each with what an
/// error calls it and its bound.
pub fn action_strings(action: &Action) -> Vec<(&'static str, &str, Kind)> {
    fn object(o: &ObjectRef) -> Vec<(&'static str, &str, Kind)> {
        let mut out = vec![
            ("the apiVersion", o.api_version.as_str(), Kind::ApiVersion),
            ("the kind", o.kind.as_str(), Kind::Label),
            ("the name", o.name.as_str(), Kind::Name),
        ];
        if let Some(ns) = &o.namespace {
            out.push(("the namespace", ns.as_str(), Kind::Label));
        }
        out
    }
    match action {
        Action::Mirror(m) => vec![
            (
                "the source namespace",
                m.from_namespace.as_str(),
                Kind::Label,
            ),
            ("the source name", m.from_name.as_str(), Kind::Name),
            ("the copy's namespace", m.to_namespace.as_str(), Kind::Label),
            ("the copy's name", m.to_name.as_str(), Kind::Name),
        ],
        Action::Delete(o) | Action::Restart(o) | Action::Observe(o) => object(o),
        Action::RequestReapply(reason) => vec![("the reason", reason.as_str(), Kind::Reason)],
        Action::PatchOverrides { chart, .. } => vec![("the chart", chart.as_str(), Kind::Label)],
        Action::Ensure(_) => Vec::new(),
    }
}

/// The strings of a chart answer's secret value, as [`action_strings`].
pub fn secret_value_strings(value: &SecretValue) -> Vec<(&'static str, &str, Kind)> {
    let mut out = vec![("a secret value's path", value.path.as_str(), Kind::Path)];
    match &value.source {
        SecretSource::Existing(r) => out.extend([
            (
                "a secret value's namespace",
                r.namespace.as_str(),
                Kind::Label,
            ),
            ("a secret value's Secret", r.name.as_str(), Kind::Name),
            ("a secret value's key", r.key.as_str(), Kind::Name),
        ]),
        SecretSource::Generated(g) => out.extend([
            (
                "a secret value's generated secret",
                g.name.as_str(),
                Kind::Label,
            ),
            ("a secret value's key", g.key.as_str(), Kind::Name),
        ]),
    }
    out
}

/// The strings of a generated secret's request, as [`action_strings`].
pub fn generated_strings(secret: &GeneratedSecret) -> Vec<(&'static str, &str, Kind)> {
    let mut out = vec![(
        "a generated secret's name",
        secret.name.as_str(),
        Kind::Label,
    )];
    if let SecretShape::Certificate {
        common_name,
        dns_names,
        ..
    } = &secret.shape
    {
        out.push((
            "a certificate's common name",
            common_name.as_str(),
            Kind::CommonName,
        ));
        out.extend(
            dns_names
                .iter()
                .map(|n| ("a certificate's DNS name", n.as_str(), Kind::Name)),
        );
    }
    out
}

/// `text` cut to at most `max` bytes on a character boundary, saying
/// how long it was: for text that is kept even when too long (a
/// plugin's own error message).
pub fn cap(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}… ({} bytes)", &text[..end], text.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_over_their_bound_are_refused_with_a_bounded_preview() {
        assert_eq!(check("name", &"a".repeat(253), Kind::Name), Ok(()));
        let long = "a".repeat(20 << 20);
        let err = check("reason", &long, Kind::Reason).unwrap_err();
        assert!(err.len() < 200, "{err}");
        assert!(err.contains("20971520 bytes, more than 1024"), "{err}");
        assert!(check("namespace", &"n".repeat(64), Kind::Label).is_err());
        assert!(check("name", &"n".repeat(254), Kind::Name).is_err());
        assert!(check("path", &"p".repeat(1025), Kind::Path).is_err());
    }

    #[test]
    fn control_characters_are_refused_but_a_reason_keeps_its_lines() {
        assert!(check("name", "a\0b", Kind::Name).is_err());
        assert!(check("name", "a\nb", Kind::Name).is_err());
        assert_eq!(
            check("reason", "line one\n\tline two", Kind::Reason),
            Ok(())
        );
        let err = check("reason", "bell\u{7}", Kind::Reason).unwrap_err();
        assert!(err.contains("'\\u{7}'"), "{err}");
    }

    #[test]
    fn every_string_of_a_plain_action_is_listed() {
        let action = Action::Mirror(crate::model::Mirror {
            kind: crate::model::MirrorKind::Secret,
            from_namespace: "a".into(),
            from_name: "b".into(),
            to_namespace: "c".into(),
            to_name: "d".repeat(300),
        });
        let strings = action_strings(&action);
        assert_eq!(strings.len(), 4);
        let refused: Vec<_> = strings
            .iter()
            .filter_map(|(what, text, kind)| check(what, text, *kind).err())
            .collect();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].starts_with("the copy's name"), "{refused:?}");
        assert_eq!(cap("abcdef", 3), "abc… (6 bytes)");
        assert_eq!(cap("éé", 3), "é… (4 bytes)");
    }

    #[test]
    fn a_preview_cuts_on_a_character_boundary() {
        let text = "é".repeat(100);
        let shown = preview(&text);
        assert!(shown.ends_with("\"…"), "{shown}");
        assert_eq!(shown.chars().count(), PREVIEW_CHARS + 3);
        assert_eq!(preview("short"), "\"short\"");
    }
}
