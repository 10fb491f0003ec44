//! The bindings generated from `wit/v0.2/plugin.wit`
//! (`capstan:plugin@0.2.0`), re-exported by `capstan-plugin-sdk` as
//! `capstan_plugin_sdk::v0_2::bindings`. Plugin authors use that crate, never
//! this one.
//!
//! Why a crate of its own, apart from 0.1's: wit-bindgen names its
//! crate-level export macros after the world, and both contracts' worlds are
//! `override-plugin`; and the custom section describing a world's imports
//! must reach only components of that contract (see the 0.1 bindings crate,
//! `capstan-plugin-sdk-wit-v0-1`, for the linking details).

#![allow(missing_docs)]

/// The generated bindings (a module, so that the export macros wit-bindgen
/// places at the crate root do not clash with its re-exports of them).
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/v0.2",
        world: "capstan:plugin/override-plugin@0.2.0",
        pub_export_macro: true,
        export_macro_name: "__export_override_plugin",
        default_bindings_module: "capstan_plugin_sdk::v0_2::bindings",
        disable_custom_section_link_helpers: true,
    });
}
