//! Memoire: a chat engine that lives in the browser.
//!
//! Layer map (imports only point down): `ui -> session -> {store, transport} -> engine`.
//! `engine` is pure Rust and the only layer compiled natively (`cargo test`); the shells exist only
//! in the wasm build, where their web crates are available. `tests/architecture.rs` enforces both.
pub mod engine;

#[cfg(target_arch = "wasm32")]
pub mod session;
#[cfg(target_arch = "wasm32")]
pub mod store;
#[cfg(target_arch = "wasm32")]
pub mod transport;
#[cfg(target_arch = "wasm32")]
pub mod ui;
