//! Sync across devices through CouchDB's replication protocol, as a hub client: the document model
//! (`doc`), the hybrid logical clock (`hlc`), the one merge (`merge`), conversions from and to the
//! engine's model (`convert`), and the sans-IO replicator that turns documents and a checkpoint into
//! HTTP request descriptions and local writes (`replicate`), when the loop around it starts again
//! after it stopped (`restart`), which document a local change produces
//! and what a merged document asks of the local store (`track`), a merged batch turned into one
//! write plan (`batch`), the order a batch's merges are applied in (`order`), unifying one entity
//! learned separately on two devices (`unify`), the memory's summaries and graph (`memory`), and
//! what "Test connection" found wrong (`probe`), what a pulled document may hold (`check`), the
//! words of sync's status (`status`), end-to-end encryption's envelope, sealed ids and marker
//! (`seal`), how a passphrase becomes its keys and how strong it looks (`keys`), changing the passphrase
//! (`rotate`), images' bytes as blob documents (`blob`), which origin a saved sync password may go to (`origin`), and
//! the decisions of this device's side of the loop: what is tracked, the outbox, what a batch
//! reports and what the memory's effects change (`local`), and the table of register-like kinds
//! (facts about the user, projects) that tracks, applies and reports them all alike (`kinds`).
//! The session moves the bytes.
//! Must not import anything outside `crate::engine`: no web crates, no clock, no randomness.

pub mod batch;
pub mod blob;
pub mod check;
pub mod convert;
pub mod doc;
pub mod hlc;
pub mod keys;
pub mod kinds;
pub mod local;
pub mod memory;
pub mod merge;
pub mod order;
pub mod origin;
pub mod probe;
pub mod replicate;
pub mod restart;
pub mod rotate;
pub mod seal;
pub mod status;
pub mod track;
pub mod unify;
pub mod wire;

pub use doc::{Body, Couch, Doc, Kind};
pub use hlc::{Clock, Hlc, MAX_SKEW_MS};
pub use merge::{merge, merge_all};
pub use replicate::{
    apply_remote, Applied, Config, LocalDoc, Replicator, Status, SyncError, Write,
};
pub use wire::{Method, Reply, Request};
