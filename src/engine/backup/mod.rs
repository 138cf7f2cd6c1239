//! The backup exchange format: export (versioned JSON and a readable Markdown transcript) and the
//! checks and plan of an import before anything is written.
//! Owns the file format (`wire.rs`: its own serde types, which never change when `model.rs` changes,
//! and the one mapping between them and the model), the import limits, the import errors and the
//! import plan. Must not import anything outside `crate::engine` (serde/serde_json/thiserror are
//! the only crates it uses).
//!
//! - `wire.rs`: the file's types and the model <-> file conversions (one field table per mirrored
//!   type, `engine::shape`, or exhaustive destructuring: a new model field fails to compile there
//!   until it is handled)
//! - `export_json.rs`: [`export_json`]; `export_markdown.rs`: [`export_markdown`]
//! - `check.rs`: [`check_import`] and [`CheckedImport`] (everything that does not depend on what
//!   is stored), and the nesting-depth scan other importers share
//! - `plan.rs`: [`CheckedImport::plan`] against [`ExistingIds`] gives the [`ImportPlan`]
//!
//! Never exported: API keys and endpoint profiles (only a conversation's profile *id* travels).
//! The facts about the user travel (`user_facts`, added to version 1 as an optional field: a file
//! without it imports as before), forgotten ones as tombstones, and are merged by id on import.
//!
//! Import is check-then-plan-then-write: [`check_import`] checks the file (one parse), the store
//! looks up only the records the file names, [`CheckedImport::plan`] returns exactly what to
//! write, and the store writes it in one transaction.

mod check;
mod export_json;
mod export_markdown;
mod plan;
mod wire;

pub(crate) use check::{check_depth, Checker};
pub use check::{check_import, BackupBuilder, CheckBuilder, CheckedImport, MAX_FACT_TEXT_CHARS};
pub use export_json::{
    export_backup, export_json, export_with_images, export_with_projects, facts_for_export,
    image_hashes, projects_for_export,
};
pub use export_markdown::export_markdown;
pub use plan::{
    join_user_facts, ExistingIds, ExistingMessage, ImportCounts, ImportPlan, ImportReach,
    JoinedFacts,
};

use crate::engine::model::{Conversation, ConversationSummary, EntityNode, Message};

/// An image's stored bytes, as a backup carries them (base64 in the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageBlob {
    /// SHA-256 of `bytes`, lowercase hex.
    pub hash: String,
    pub mime: String,
    pub bytes: Vec<u8>,
}

/// The `format` field of every backup file.
pub const FORMAT: &str = "memoire-backup";
/// The version this code writes and reads.
pub const VERSION: u64 = 1;

/// One conversation with everything that belongs to it, as read from (or to be written to) the store.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationBundle {
    pub conversation: Conversation,
    pub messages: Vec<Message>,
    /// All versions.
    pub summaries: Vec<ConversationSummary>,
    /// Entities scoped to this conversation.
    pub entities: Vec<EntityNode>,
}

/// Limits an import must respect. `Default` gives the app's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportLimits {
    /// Largest file accepted, in bytes.
    pub max_bytes: usize,
    /// Deepest JSON nesting accepted (objects and arrays), checked before parsing.
    pub max_depth: usize,
    /// Longest id, in characters.
    pub max_id_chars: usize,
    /// Longest short string (title, names, model, keys...), in characters.
    pub max_short_chars: usize,
    /// Longest text (message content, tool arguments and results, summaries, descriptions), in chars.
    pub max_text_chars: usize,
}

impl Default for ImportLimits {
    fn default() -> Self {
        ImportLimits {
            max_bytes: 50 * 1024 * 1024,
            max_depth: 64,
            max_id_chars: 256,
            max_short_chars: 4096,
            max_text_chars: 1_000_000,
        }
    }
}

/// Why a file cannot be imported. Nothing has been written when this is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error("The file is empty. Choose a Memoire backup (.json) file.")]
    Empty,
    #[error(
        "The file is {size} bytes; the limit is {limit} bytes. Export fewer conversations at a time \
         and import them one by one."
    )]
    TooLarge { size: usize, limit: usize },
    #[error(
        "The file is not UTF-8 text (bad byte at offset {offset}). Choose the .json file Memoire \
         exported, not a compressed or binary file."
    )]
    NotUtf8 { offset: usize },
    #[error(
        "The file nests data more than {limit} levels deep, which no Memoire backup does. It is not \
         a backup or it was tampered with."
    )]
    TooDeep { limit: usize },
    #[error(
        "The file ends too early (line {line}, column {column}): it was cut off while downloading \
         or copying. Export it again."
    )]
    Truncated { line: usize, column: usize },
    #[error("The file is not valid JSON (line {line}, column {column}: {detail}).")]
    InvalidJson {
        line: usize,
        column: usize,
        detail: String,
    },
    #[error(
        "This is not a Memoire backup (format {found}). Choose a file made by Memoire's export."
    )]
    NotABackup { found: String },
    #[error(
        "This backup is format version {found}; this Memoire reads version 1. Update Memoire to \
         import it."
    )]
    UnsupportedVersion { found: String },
    #[error("The backup is missing a field (line {line}, column {column}: {detail}).")]
    MissingField {
        line: usize,
        column: usize,
        detail: String,
    },
    #[error("The backup has a value of the wrong type (line {line}, column {column}: {detail}).")]
    WrongType {
        line: usize,
        column: usize,
        detail: String,
    },
    #[error("The backup has an invalid value in {record}: {detail}.")]
    InvalidValue { record: String, detail: String },
    #[error("{field} of {record} is {len} characters long; the limit is {limit}.")]
    TooLong {
        record: String,
        field: &'static str,
        len: usize,
        limit: usize,
    },
    #[error(
        "Message {message_id} is listed under conversation {listed_under} but says it belongs to \
         {claims}. The file was edited by hand or is corrupt."
    )]
    ConversationMismatch {
        message_id: String,
        listed_under: String,
        claims: String,
    },
    #[error("The {kind} id {id} appears more than once in the file. The file is corrupt.")]
    DuplicateId { kind: &'static str, id: String },
    #[error(
        "Conversation {conversation_id} has two messages with seq {seq} in the file. The file is \
         corrupt."
    )]
    DuplicateSeq { conversation_id: String, seq: u64 },
    #[error(
        "The {kind} {id} already exists here in conversation {existing}, but the file puts it in \
         {incoming}. Nothing was imported; delete one of the two conversations first."
    )]
    IdCollision {
        kind: &'static str,
        id: String,
        existing: String,
        incoming: String,
    },
    #[error(
        "Conversation {conversation_id} already has a different message at position {seq} here: \
         the two copies have diverged. Nothing was imported; delete the local copy to import the \
         file's version."
    )]
    SeqCollision { conversation_id: String, seq: u64 },
}
