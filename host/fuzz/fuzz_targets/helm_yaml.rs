//! Fuzzes the Helm (go-yaml v2) YAML reader: values files, multi-document
//! manifests, and the emitter on whatever parses (`toYaml` of the result
//! must read back).

#![no_main]

use capstan::values;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let _ = values::parse_values(text);
    let _ = values::parse_manifest_documents(text);
    if let Ok(docs) = values::parse_yaml_documents(text) {
        for doc in docs {
            if let Ok(yaml) = values::try_to_yaml(&doc) {
                assert!(
                    values::parse_yaml(&yaml).is_ok(),
                    "toYaml output does not read back: {yaml:?}"
                );
            }
        }
    }
});
