//! Memoire: a chat engine that lives in the browser.
//! Layer map (imports only point down): `ui -> session -> {store, transport} -> engine`.
//! `engine` is pure Rust and the only layer compiled natively; the shells exist only in the wasm build.
pub mod engine;
#[cfg(target_arch = "wasm32")]
pub mod store;
