//! Sync ([`Replication`]): replicating conversations, messages and memory with a CouchDB-compatible
//! server the user chose. `replication.rs` is the loop that drives the engine's replicator and
//! its local decisions (`engine::sync::local`); it owns one `State` value (`state.rs`, with the
//! moves every part makes: the clock, recording, reporting); `browser.rs` is the one adapter to
//! the page (the `online` listener, `AbortController`, wake-ups, `btoa`, `fetch`); `memory.rs`
//! carries the memory documents, `projects.rs` the projects, `blobs.rs` the images' bytes,
//! `seal.rs` end-to-end encryption through WebCrypto, `rotate.rs` sealing every document again
//! when its passphrase changes, `error.rs` what can go wrong. No file here imports one that
//! imports it back (`tests/architecture.rs`). Off by default. It captures this tab's local changes
//! through `shared::Capture`, and reports what it applied through `Core::applied`, which it never
//! captures: nothing echoes.
//!
//! Adding a synced kind: in the engine, its document body and `Kind` (`engine/sync/doc.rs`), its
//! conversion (`convert.rs`, its `track_*` and `Effect` in `track.rs`) and its arm in
//! `engine::sync::local` (`Reads`, `group`); here, its moves in a file of its own, as
//! `projects.rs` is for the projects (the store's records `track_*` read, the write of what `group`
//! hands back), called from one arm each in `replication.rs`'s `track_change`, `seed` and
//! `apply_later`. Must not import `ui`; imports no other service.

mod blobs;
mod browser;
mod error;
mod memory;
mod projects;
mod replication;
mod rotate;
mod seal;
mod state;

pub use error::SyncError;
pub use replication::Replication;
