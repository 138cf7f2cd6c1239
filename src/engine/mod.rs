//! The engine: every decision Memoire makes, as pure deterministic Rust, tested natively.
//! Owns the data model, token estimation, context assembly, history formats, the turn state machine,
//! the memory protocol, stream decoders, request builders, markdown sanitising, backup validation,
//! reading other chat apps' exports,
//! an MCP client for tools (sans-IO, `mcp`),
//! the in-memory history window, the branch on screen, the chat's pages and the chat view's follow
//! rule.
//! Must not import anything outside `crate::engine`: no leptos, web_sys, js_sys, rexie, gloo,
//! wasm_bindgen, no clock and no randomness (`now`, ids and limits are arguments).
//! `tests/architecture.rs` enforces this.

pub mod assemble;
pub mod attach;
pub mod backup;
pub mod branch;
pub mod coalesce;
pub mod context_window;
pub mod decode;
pub mod failure;
pub mod follow;
pub mod format;
pub mod graph_layout;
pub mod highlight;
pub mod history;
pub mod import;
pub mod json_text;
pub mod keys;
pub mod markdown;
pub mod math;
pub mod mcp;
pub mod memory;
pub mod memory_tools;
pub mod model;
pub mod page;
pub mod pdf;
pub mod prefix;
pub mod project;
pub mod request;
pub mod search;
pub mod send;
pub mod settings;
pub mod shape;
pub mod slots;
pub mod sort;
pub mod sync;
pub mod tabs;
pub mod temporary;
pub mod title;
pub mod tokens;
pub mod tools;
pub mod turn;
pub mod window;
