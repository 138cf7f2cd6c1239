//! Sync ([`Replication`]): replicating conversations, messages and memory with a CouchDB-compatible
//! server the user chose. `replication.rs` is the handle (the `Replication` service the session
//! calls: settings, passphrase, "Test connection", its own changes into the outbox); `driver.rs` is
//! the loop that drives the engine's replicator and its local decisions (`engine::sync::local`);
//! the handle starts and wakes the loop, the loop never imports the handle. They own one `State`
//! value (`state.rs`, with the moves every part makes: the clock, recording, reporting);
//! `browser.rs` is the one adapter to the page (the `online` listener, `AbortController`, wake-ups,
//! `btoa`, `fetch`); `registers.rs` is the one path of the register-like kinds (the facts about the
//! user, the projects), `memory.rs` carries the summaries and entity graphs (not register-like),
//! `blobs.rs` the images' bytes, `seal.rs` end-to-end encryption through WebCrypto, `rotate.rs`
//! sealing every document again when its passphrase changes, `error.rs` what can go wrong. No file
//! here imports one that imports it back (`tests/architecture.rs`). Off by default. It captures
//! this tab's local changes through `shared::Capture`, and reports what it applied through
//! `Core::applied`, which it never captures: nothing echoes.
//!
//! Adding a register-like synced kind (a whole set of records, each one document merged as
//! registers, as the facts and the projects are): in the engine, its `Kind` and document
//! (`engine/sync/doc.rs`, with its merge and checks), its conversion (`convert.rs`) and its row in
//! the kind table (`engine/sync/kinds.rs`: a line in `registers!` and its `Register` impl); here,
//! its one store impl (`Shelf` in `registers.rs`). Nothing else in this module changes: tracking,
//! the seed, applying and reporting go through `registers.rs` for every kind of the table. Any
//! other kind (not a whole set merged as registers) also needs its arms in `engine::sync::local`
//! and `track.rs` and its moves here, as the memory's are in `memory.rs`. Must not import `ui`;
//! imports no other service.

mod blobs;
mod browser;
mod driver;
mod error;
mod memory;
mod registers;
mod replication;
mod rotate;
mod seal;
mod state;

pub use error::SyncError;
pub use replication::Replication;
