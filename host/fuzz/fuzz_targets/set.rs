//! Fuzzes the `--set` family of parsers (`--set`, `--set-string`,
//! `--set-json`, `--set-literal`) into a map that already holds values.

#![no_main]

use capstan::values::{self, Map, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let Ok(expr) = std::str::from_utf8(rest) else {
        return;
    };
    let mut into = Map::new();
    into.insert("a".into(), Value::List(vec![Value::Int(1)]));
    let _ = match mode % 4 {
        0 => values::parse_set(expr, &mut into),
        1 => values::parse_set_string(expr, &mut into),
        2 => values::parse_set_json(expr, &mut into),
        _ => values::parse_set_literal(expr, &mut into),
    };
});
