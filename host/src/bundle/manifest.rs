//! `MANIFEST`: one line per bundle file, `<sha256 hex>  <path>\n`, sorted by
//! path bytes, with one exact spelling so that the signed bytes have a single
//! meaning.

use std::collections::BTreeMap;
use std::fmt;

use sha2::{Digest as _, Sha256};

use super::paths::check_path;
use super::{Error, MANIFEST_PATH, SIGNATURE_PATH};

/// A sha256 digest.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest([u8; 32]);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    pub(super) fn from_hasher(hasher: Sha256) -> Self {
        Self(hasher.finalize().into())
    }

    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lowercase hex, as in `MANIFEST` and `sha256sum`.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

/// One `MANIFEST` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    /// The file's path inside the bundle.
    pub path: String,
    /// Its sha256.
    pub digest: Digest,
}

/// The parsed `MANIFEST`: every bundle file except `MANIFEST` and
/// `MANIFEST.sig`, with its digest, ordered by path bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    entries: BTreeMap<String, Digest>,
}

impl Manifest {
    /// Parses `MANIFEST` bytes, accepting only the exact format: each line is
    /// 64 lowercase hex digits, two spaces, a plain relative path (see
    /// `docs/src/apps/bundle-format.md`) and `\n`; lines strictly increasing by path
    /// bytes (so no duplicates); no blank line; a final newline; neither
    /// `MANIFEST` nor `MANIFEST.sig` listed. An empty manifest is valid.
    ///
    /// # Errors
    ///
    /// [`Error::ManifestFormat`] with the 1-based line and the rule broken.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let text = std::str::from_utf8(bytes).map_err(|_| format_error(0, "it is not UTF-8"))?;
        let mut entries = BTreeMap::new();
        let mut previous: Option<&str> = None;
        let mut rest = text;
        let mut line_number = 0;
        while !rest.is_empty() {
            line_number += 1;
            let Some((line, after)) = rest.split_once('\n') else {
                return Err(format_error(line_number, "the last line has no newline"));
            };
            rest = after;
            let (digest, path) = parse_line(line, line_number)?;
            if previous.is_some_and(|prev| prev.as_bytes() >= path.as_bytes()) {
                return Err(format_error(
                    line_number,
                    "paths are not strictly sorted (out of order or duplicate)",
                ));
            }
            previous = Some(path);
            entries.insert(path.to_string(), digest);
        }
        Ok(Self { entries })
    }

    /// Builds a manifest from entries in any order.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateEntry`] for a path given twice, [`Error::ReservedPath`]
    /// for `MANIFEST` or `MANIFEST.sig`, or a path error from the path rule.
    pub fn from_entries(entries: impl IntoIterator<Item = ManifestEntry>) -> Result<Self, Error> {
        let mut map = BTreeMap::new();
        for entry in entries {
            check_path(&entry.path)?;
            if is_reserved(&entry.path) {
                return Err(Error::ReservedPath { path: entry.path });
            }
            if map.contains_key(&entry.path) {
                return Err(Error::DuplicateEntry { path: entry.path });
            }
            map.insert(entry.path, entry.digest);
        }
        Ok(Self { entries: map })
    }

    /// The exact `MANIFEST` text for these entries.
    pub fn render(&self) -> String {
        let mut text = String::with_capacity(self.entries.len() * 100);
        for (path, digest) in &self.entries {
            text.push_str(&digest.to_hex());
            text.push_str("  ");
            text.push_str(path);
            text.push('\n');
        }
        text
    }

    /// The digest listed for `path`, if listed.
    pub fn digest(&self, path: &str) -> Option<&Digest> {
        self.entries.get(path)
    }

    /// Whether any listed file lies under folder `dir` (given without a trailing `/`).
    pub fn has_dir(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        self.entries
            .range(prefix.clone()..)
            .next()
            .is_some_and(|(path, _)| path.starts_with(&prefix))
    }

    /// Every entry, ordered by path bytes.
    pub fn entries(&self) -> impl Iterator<Item = ManifestEntry> + '_ {
        self.entries.iter().map(|(path, digest)| ManifestEntry {
            path: path.clone(),
            digest: *digest,
        })
    }

    /// Every listed path, ordered by path bytes.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// How many files are listed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no file is listed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Whether `path` is one of the two files the manifest cannot list.
pub(super) fn is_reserved(path: &str) -> bool {
    path == MANIFEST_PATH || path == SIGNATURE_PATH
}

fn parse_line(line: &str, line_number: usize) -> Result<(Digest, &str), Error> {
    if line.is_empty() {
        return Err(format_error(line_number, "blank line"));
    }
    let (hex_part, rest) = line
        .split_at_checked(64)
        .ok_or_else(|| format_error(line_number, "line is shorter than a digest"))?;
    if !hex_part
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(format_error(
            line_number,
            "digest is not 64 lowercase hex digits",
        ));
    }
    let path = rest
        .strip_prefix("  ")
        .ok_or_else(|| format_error(line_number, "digest is not followed by two spaces"))?;
    check_path(path).map_err(|err| format_error(line_number, &err.to_string()))?;
    if is_reserved(path) {
        return Err(format_error(
            line_number,
            "it lists MANIFEST or MANIFEST.sig",
        ));
    }
    let mut digest = [0u8; 32];
    hex::decode_to_slice(hex_part, &mut digest)
        .map_err(|_| format_error(line_number, "digest is not 64 lowercase hex digits"))?;
    Ok((Digest(digest), path))
}

fn format_error(line: usize, reason: &str) -> Error {
    Error::ManifestFormat {
        line,
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, content: &[u8]) -> ManifestEntry {
        ManifestEntry {
            path: path.to_string(),
            digest: Digest::of(content),
        }
    }

    fn line(content: &[u8], path: &str) -> String {
        format!("{}  {path}\n", Digest::of(content).to_hex())
    }

    #[test]
    fn render_sorts_by_path_and_parses_back() {
        let manifest =
            Manifest::from_entries([entry("b/x", b"2"), entry("a", b"1"), entry("B", b"3")])
                .unwrap();
        let text = manifest.render();
        let expected = format!(
            "{}{}{}",
            line(b"3", "B"),
            line(b"1", "a"),
            line(b"2", "b/x")
        );
        assert_eq!(text, expected);
        assert_eq!(Manifest::parse(text.as_bytes()).unwrap(), manifest);
        assert_eq!(manifest.digest("a"), Some(&Digest::of(b"1")));
        assert!(manifest.has_dir("b"));
        assert!(!manifest.has_dir("a"));
    }

    #[test]
    fn sha256_hex_matches_the_known_value() {
        assert_eq!(
            Digest::of(b"abc").to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn empty_manifest_is_valid() {
        assert!(Manifest::parse(b"").unwrap().is_empty());
    }

    fn reason_of(text: &str) -> (usize, String) {
        match Manifest::parse(text.as_bytes()) {
            Err(Error::ManifestFormat { line, reason }) => (line, reason),
            other => panic!("expected a format error for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn every_format_rule_is_enforced() {
        let good_a = line(b"1", "a");
        let good_b = line(b"2", "b");
        let upper = good_a.to_uppercase().replace("  A", "  a");
        let cases: Vec<(String, usize, &str)> = vec![
            (good_a.trim_end().to_string(), 1, "newline"),
            (format!("{good_a}\n"), 2, "blank"),
            (format!("{good_b}{good_a}"), 2, "sorted"),
            (format!("{good_a}{good_a}"), 2, "sorted"),
            (upper, 1, "lowercase hex"),
            (good_a.replace("  a", " a"), 1, "two spaces"),
            (good_a.replace("  a", "\ta"), 1, "two spaces"),
            ("abc  a\n".to_string(), 1, "shorter"),
            (good_a.replace("  a", "  ../a"), 1, "outside"),
            (good_a.replace("  a", "  /a"), 1, "absolute"),
            (good_a.replace("  a", "  MANIFEST"), 1, "MANIFEST"),
            (good_a.replace('\n', "\r\n"), 1, "control"),
        ];
        for (text, want_line, want_reason) in cases {
            let (line, reason) = reason_of(&text);
            assert_eq!(line, want_line, "{text:?}: {reason}");
            assert!(reason.contains(want_reason), "{text:?}: {reason}");
        }
    }

    #[test]
    fn from_entries_rejects_duplicates_and_reserved_names() {
        let dup = Manifest::from_entries([entry("a", b"1"), entry("a", b"2")]);
        assert!(matches!(dup, Err(Error::DuplicateEntry { .. })));
        let reserved = Manifest::from_entries([entry("MANIFEST.sig", b"1")]);
        assert!(matches!(reserved, Err(Error::ReservedPath { .. })));
    }
}
