//! Parsed templates of recently rendered charts, kept process-wide.
//!
//! The daemon renders the same loaded chart again and again (every values
//! change, every reconcile), and parsing its templates is about a third of
//! a render. A [`TemplateSet`] depends only on its sources, the template
//! paths and bytes in parse order, and never changes once built, so sets
//! are shared between renders (renders run on whichever threads call them,
//! hence a process-wide cache rather than a thread-local one).
//!
//! A set is reused only for exactly the same sources: the same paths with
//! the same bytes (usually the same shared buffers of a loaded chart, which
//! makes the comparison cheap). The cache is small and bounded by entries
//! and by source bytes; the least recently used set goes first. A poisoned
//! lock only turns caching off. Must not hold anything but parsed sets:
//! values, outputs and engines stay per render.

use std::sync::{Arc, Mutex};

use super::template::TemplateSet;

/// Most template sets kept.
const MAX_SETS: usize = 8;

/// Most source bytes kept over all sets (parsed trees take a few times
/// more); a larger chart is parsed on every render.
const MAX_SOURCE_BYTES: usize = 4 << 20;

/// One template source: its full path and its bytes.
pub type Source = (String, Arc<[u8]>);

/// A parsed set and the sources it was parsed from.
struct Entry {
    sources: Vec<Source>,
    set: Arc<TemplateSet>,
}

/// Cached sets, least recently used first.
type Cache = Mutex<Vec<Entry>>;

/// The process-wide cache.
static CACHE: Cache = Mutex::new(Vec::new());

/// The set parsed from `sources` (in parse order): a cached one when the
/// same sources were parsed before, otherwise the result of `parse`, which
/// is then kept. Parsing runs outside the lock.
///
/// # Errors
/// Whatever `parse` returns; failures are not cached.
pub fn get_or_parse<E>(
    sources: Vec<Source>,
    parse: impl FnOnce() -> Result<TemplateSet, E>,
) -> Result<Arc<TemplateSet>, E> {
    get_or_parse_in(&CACHE, sources, parse)
}

fn get_or_parse_in<E>(
    cache: &Cache,
    sources: Vec<Source>,
    parse: impl FnOnce() -> Result<TemplateSet, E>,
) -> Result<Arc<TemplateSet>, E> {
    if let Some(set) = lookup(cache, &sources) {
        return Ok(set);
    }
    let set = Arc::new(parse()?);
    store(cache, sources, set.clone());
    Ok(set)
}

/// A cached set for `sources`, marked as most recently used.
fn lookup(cache: &Cache, sources: &[Source]) -> Option<Arc<TemplateSet>> {
    let mut cache = cache.lock().ok()?;
    let index = cache
        .iter()
        .position(|e| same_sources(&e.sources, sources))?;
    let entry = cache.remove(index);
    let set = entry.set.clone();
    cache.push(entry);
    Some(set)
}

/// Keeps `set`, dropping the least recently used sets past the bounds.
/// Another render may have stored the same sources meanwhile; the newer
/// set then replaces it.
fn store(cache: &Cache, sources: Vec<Source>, set: Arc<TemplateSet>) {
    if source_bytes(&sources) > MAX_SOURCE_BYTES {
        return;
    }
    let Ok(mut cache) = cache.lock() else {
        return;
    };
    cache.retain(|e| !same_sources(&e.sources, &sources));
    cache.push(Entry { sources, set });
    while cache.len() > MAX_SETS || cached_bytes(&cache) > MAX_SOURCE_BYTES {
        cache.remove(0);
    }
}

fn cached_bytes(entries: &[Entry]) -> usize {
    entries.iter().map(|e| source_bytes(&e.sources)).sum()
}

fn source_bytes(sources: &[Source]) -> usize {
    sources
        .iter()
        .map(|(path, data)| path.len() + data.len())
        .sum()
}

/// The same paths with the same bytes, in the same order.
fn same_sources(a: &[Source], b: &[Source]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((pa, da), (pb, db))| pa == pb && (Arc::ptr_eq(da, db) || da[..] == db[..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(text: &str) -> Vec<Source> {
        vec![("c/templates/a.yaml".to_string(), Arc::from(text.as_bytes()))]
    }

    fn parse(text: &str) -> Result<TemplateSet, String> {
        let mut set = TemplateSet::new();
        set.add("c/templates/a.yaml", text)
            .map_err(|e| e.to_string())?;
        Ok(set)
    }

    #[test]
    fn parsed_sets_can_be_shared_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<TemplateSet>();
    }

    #[test]
    fn the_same_sources_reuse_the_set_and_others_do_not() {
        let cache = Cache::default();
        let text = "a: {{ .x }}";
        let first = get_or_parse_in(&cache, sources(text), || parse(text)).unwrap();
        // Equal bytes in another buffer are the same source.
        let again = get_or_parse_in(&cache, sources(text), || Err("parsed again".to_string()));
        assert!(Arc::ptr_eq(&first, &again.unwrap()));
        let other = "b: {{ .y }}";
        let second = get_or_parse_in(&cache, sources(other), || parse(other)).unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        let renamed = vec![("c/templates/b.yaml".to_string(), Arc::from(text.as_bytes()))];
        let third = get_or_parse_in(&cache, renamed, || parse(text)).unwrap();
        assert!(!Arc::ptr_eq(&first, &third));
    }

    #[test]
    fn failures_are_not_kept() {
        let cache = Cache::default();
        let text = "a: {{ .x ";
        assert!(get_or_parse_in(&cache, sources(text), || parse(text)).is_err());
        let parsed_again = get_or_parse_in(&cache, sources(text), || Err("again".to_string()));
        assert_eq!(parsed_again.err().as_deref(), Some("again"));
    }

    #[test]
    fn the_cache_is_bounded_and_drops_the_oldest() {
        let cache = Cache::default();
        for i in 0..MAX_SETS + 3 {
            let text = format!("set {i}");
            get_or_parse_in(&cache, sources(&text), || parse(&text)).unwrap();
        }
        let entries = cache.lock().unwrap();
        assert_eq!(entries.len(), MAX_SETS);
        let oldest_kept = String::from_utf8_lossy(&entries[0].sources[0].1).into_owned();
        assert_eq!(oldest_kept, "set 3");
        drop(entries);
        let big = "x".repeat(MAX_SOURCE_BYTES + 1);
        get_or_parse_in(&cache, sources(&big), || parse("x")).unwrap();
        assert_eq!(cache.lock().unwrap().len(), MAX_SETS);
    }
}
