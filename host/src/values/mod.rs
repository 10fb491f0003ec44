//! Helm values: the value model, parsing, printing, coalescing, `--set`
//! syntax and the daemon's override layers.
//!
//! Owns how values are read, printed and merged, with Helm's exact rules,
//! because `capstan template` must match `helm template` byte for byte:
//!
//! - YAML as Helm reads it through `sigs.k8s.io/yaml` (go-yaml v2, then
//!   JSON): [`parse_yaml`] (one document, every number a float, YAML 1.1
//!   booleans), [`parse_yaml_documents`], [`parse_values`] (a values file:
//!   its documents merged, empty is `{}`), and [`parse_manifest_documents`]
//!   for rendered manifests on their way to the API server (integers kept,
//!   as `sigs.k8s.io/yaml.YAMLToJSON` keeps them).
//! - YAML as Helm prints it: [`to_yaml`] is Go's `yaml.Marshal` output
//!   with its final newline; Helm's `toYaml` trims that newline, which
//!   [`to_yaml_trimmed`] does; [`try_to_yaml`] reports why a value cannot
//!   be printed (`mustToYaml`).
//! - JSON as Go's `encoding/json`: [`to_json`], [`to_pretty_json`],
//!   [`to_raw_json`], [`try_to_json`], [`parse_json`].
//! - Coalescing: [`coalesce`] and [`merge_values`] for two values,
//!   [`merge_maps`] for `-f` files, [`coalesce_chart_values`] and
//!   [`merge_chart_values`] for a chart with its subcharts (Helm's
//!   `CoalesceValues`/`MergeValues`), [`coalesce_globals`].
//! - The `--set` family: [`parse_set`], [`parse_set_string`],
//!   [`parse_set_json`], [`parse_set_file`], [`parse_set_literal`], and
//!   [`merge_value_flags`] for a whole command line in Helm's order.
//! - Override layers ([`crate::model::Layer`]): [`merge_override_layers`],
//!   [`merge_layers`].
//!
//! Hostile input is bounded: nesting past [`MAX_DEPTH`], alias expansion
//! past [`MAX_ALIAS_NODES`], list indexes past [`MAX_LIST_INDEX`] and
//! printing past [`MAX_EMIT_DEPTH`] are typed errors, never a crash.
//!
//! Everything here is pure: text and values in, values out. This module
//! never renders templates, never reads files (callers pass contents or a
//! reader), and never touches the store or the cluster.

mod coalesce;
mod emit;
mod json;
mod layers;
mod resolve;
mod strvals;
#[cfg(test)]
mod test_support;
mod value;
mod yaml;

pub use coalesce::{
    ChartValues, Coalesced, GLOBAL_KEY, coalesce, coalesce_chart_values, coalesce_globals,
    merge_chart_values, merge_maps, merge_values,
};
pub use emit::{MAX_EMIT_DEPTH, to_yaml, to_yaml_trimmed, try_to_yaml};
pub use json::{parse_json, to_json, to_pretty_json, to_raw_json, try_to_json};
pub use layers::{merge_layers, merge_override_layers};
pub use resolve::{PlainScalar, plain_key_kind, plain_value_kind};
pub use strvals::{
    MAX_LIST_INDEX, MAX_NAME_LEVELS, ValueFlags, merge_value_flags, merge_value_flags_onto,
    parse_set, parse_set_file, parse_set_json, parse_set_literal, parse_set_string,
};
pub use value::{
    EMPTY_OBJECT_KEY, Map, NIL_MAP_KEY, VERSION_KEY, VERSION_ORIGINAL_KEY, VERSION_VALUE_KEY,
    Value, format_go_float, is_nil_map, version_text,
};
pub use yaml::{
    MAX_ALIAS_EXPANSION_BYTES, MAX_ALIAS_NODES, MAX_DEPTH, parse_manifest_documents, parse_values,
    parse_yaml, parse_yaml_documents,
};

/// What can go wrong reading or merging values.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum Error {
    /// The YAML text is not well-formed.
    #[error("invalid yaml at line {line}, column {column}: {message}")]
    YamlSyntax {
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What the parser found wrong.
        message: String,
    },
    /// The YAML nests maps and lists deeper than [`MAX_DEPTH`].
    #[error("yaml nests deeper than {limit} levels at line {line}, column {column}")]
    YamlTooDeep {
        /// 1-based line where the limit was passed.
        line: usize,
        /// 1-based column where the limit was passed.
        column: usize,
        /// The depth limit.
        limit: usize,
    },
    /// An alias names an anchor that was not defined before it.
    #[error("yaml alias at line {line}, column {column} refers to an unknown anchor")]
    YamlUnknownAnchor {
        /// 1-based line of the alias.
        line: usize,
        /// 1-based column of the alias.
        column: usize,
    },
    /// Expanding aliases would build a value larger than the limit (a
    /// "billion laughs" document).
    #[error("yaml aliases at line {line}, column {column} expand past {limit} nodes")]
    YamlAliasExpansion {
        /// 1-based line of the alias that passed the limit.
        line: usize,
        /// 1-based column of the alias that passed the limit.
        column: usize,
        /// The node limit.
        limit: usize,
    },
    /// Expanding aliases would copy more text than the limit (one huge
    /// string aliased many times).
    #[error("yaml aliases at line {line}, column {column} expand past {limit} bytes")]
    YamlAliasBytes {
        /// 1-based line of the alias that passed the limit.
        line: usize,
        /// 1-based column of the alias that passed the limit.
        column: usize,
        /// The byte limit.
        limit: usize,
    },
    /// A map key that JSON cannot name (a list, a map or null), which
    /// `sigs.k8s.io/yaml` refuses too.
    #[error("yaml map key at line {line}, column {column} is not a scalar json can hold")]
    YamlKey {
        /// 1-based line of the key.
        line: usize,
        /// 1-based column of the key.
        column: usize,
    },
    /// A merge key `<<` whose value is not a map or a list of maps.
    #[error("yaml merge key at line {line}, column {column} needs a map or a list of maps")]
    YamlMerge {
        /// 1-based line of the merge key.
        line: usize,
        /// 1-based column of the merge key.
        column: usize,
    },
    /// A scalar whose core tag (`!!int`, `!!bool`, ...) does not fit its
    /// text.
    #[error("yaml scalar at line {line}, column {column} cannot be read as {tag}")]
    YamlTag {
        /// The tag as written.
        tag: String,
        /// 1-based line of the scalar.
        line: usize,
        /// 1-based column of the scalar.
        column: usize,
    },
    /// A number JSON cannot hold (`.inf`, `.nan`), which Helm rejects when
    /// it turns YAML into JSON.
    #[error("yaml number {text:?} at line {line}, column {column} is not finite")]
    YamlNotFinite {
        /// The scalar as written.
        text: String,
        /// 1-based line of the scalar.
        line: usize,
        /// 1-based column of the scalar.
        column: usize,
    },
    /// A document held something other than a map where a map was needed
    /// (a values file must be a map).
    #[error("yaml document {index} is a {found}, not a map")]
    NotAMap {
        /// 0-based position of the document in the stream.
        index: usize,
        /// The kind that was found.
        found: &'static str,
    },
    /// The JSON text is not well-formed.
    #[error("invalid json at line {line}, column {column}")]
    JsonSyntax {
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
    },
    /// A value to print as YAML nests deeper than [`MAX_EMIT_DEPTH`].
    #[error("value nests deeper than {limit} levels and cannot be printed as yaml")]
    YamlOutputTooDeep {
        /// The depth limit.
        limit: usize,
    },
    /// A float is NaN or infinite, which JSON cannot hold.
    #[error("a NaN or infinite number cannot be written as json")]
    JsonNotFinite,
    /// The JSON nests deeper than [`MAX_DEPTH`].
    #[error("json nests deeper than {limit} levels")]
    JsonTooDeep {
        /// The depth limit.
        limit: usize,
    },
    /// The value under a subchart's name is not a map (Helm's "type
    /// mismatch").
    #[error("values for subchart {chart:?} are a {found}, not a map")]
    SubchartValuesNotAMap {
        /// The subchart's name (or alias).
        chart: String,
        /// The kind that was found.
        found: &'static str,
    },
    /// A `--set` style expression could not be parsed.
    #[error("failed parsing --set expression {expr:?}: {reason}")]
    SetSyntax {
        /// The whole expression as the user wrote it.
        expr: String,
        /// What is wrong with it, in Helm's words.
        reason: String,
    },
    /// A `--set` list index is larger than [`MAX_LIST_INDEX`] or negative.
    #[error("--set expression {expr:?} uses list index {index}, outside 0..={limit}")]
    SetListIndex {
        /// The whole expression as the user wrote it.
        expr: String,
        /// The index that was asked for.
        index: i64,
        /// The largest index allowed.
        limit: usize,
    },
    /// A `--set-json` value is not valid JSON.
    #[error("--set-json expression {expr:?} holds invalid json")]
    SetJson {
        /// The whole expression as the user wrote it.
        expr: String,
        /// What was wrong with the JSON.
        #[source]
        source: Box<Error>,
    },
    /// A `--set-file` path could not be read.
    #[error("reading {path:?} for --set-file expression {expr:?}: {reason}")]
    SetFile {
        /// The whole expression as the user wrote it.
        expr: String,
        /// The path given.
        path: String,
        /// The reader's message.
        reason: String,
    },
    /// A `--set`-family expression of a command line or request is not
    /// valid.
    #[error("{flag} {expr:?}")]
    ValueExpression {
        /// The flag (`--set`, `--set-json`...).
        flag: &'static str,
        /// The expression as given.
        expr: String,
        /// What is wrong with it.
        #[source]
        source: Box<Error>,
    },
    /// A `-f` values file did not parse.
    #[error("values file {name}")]
    ValuesFile {
        /// The file's name as given.
        name: String,
        /// Why it did not parse.
        #[source]
        source: Box<Error>,
    },
}
