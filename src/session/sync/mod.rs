//! Sync ([`Replication`]): replicating conversations, messages and memory with a CouchDB-compatible
//! server the user chose (`replication.rs` drives the engine's replicator, `memory.rs` carries the
//! memory documents, `projects.rs` the projects, `blobs.rs` the images' bytes, `seal.rs` end-to-end encryption through WebCrypto, `rotate.rs` sealing every document again
//! when its passphrase changes). Off by default. It captures this tab's local changes through
//! `shared::Capture`, and reports what it applied through `Core::applied`, which it never captures:
//! nothing echoes. Must not import `ui`; imports no other service.

mod blobs;
mod memory;
mod projects;
mod replication;
mod rotate;
mod seal;

pub use replication::{Replication, SyncError};
