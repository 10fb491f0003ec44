//! The bindings generated from `wit/v0.1/plugin.wit` (`capstan:plugin@0.1.0`),
//! re-exported by `capstan-plugin-sdk` as `capstan_plugin_sdk::bindings`.
//! Plugin authors use that crate, never this one.
//!
//! Why a crate of its own: wit-bindgen puts a description of the world's
//! imports in a custom section next to these bindings, and the linker keeps
//! it whenever it links the object that holds it. Inside the SDK's crate
//! that object also holds ordinary SDK code, so every plugin, 0.2 ones too,
//! would carry 0.1's types as imports. Here, with wit-bindgen's link helpers
//! off, the section reaches only components that call into these bindings,
//! and a 0.1 plugin's export macro carries the whole world itself.

#![allow(missing_docs)]

/// The generated bindings (a module, so that the export macros wit-bindgen
/// places at the crate root do not clash with its re-exports of them).
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/v0.1",
        world: "capstan:plugin/override-plugin",
        pub_export_macro: true,
        export_macro_name: "__export_override_plugin",
        default_bindings_module: "capstan_plugin_sdk::bindings",
        disable_custom_section_link_helpers: true,
    });
}
