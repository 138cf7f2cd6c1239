//! The store's one error type. Every message says what happened and what the user can do about it.
//! Owns: mapping of IndexedDB `DOMException` names to [`StoreError`]. Imports no engine decision code.

use thiserror::Error;

/// Everything that can go wrong in the store.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StoreError {
    /// IndexedDB is missing or disabled (private mode in some browsers, blocked storage).
    #[error("browser storage (IndexedDB) is not available: {0}. Memoire cannot keep conversations; check that site data is allowed for this page")]
    Unavailable(String),
    /// Another tab holds an older connection open and did not let the upgrade proceed.
    #[error("Memoire is open in another tab with an older version; close that tab (or reload it) and try again")]
    Blocked,
    /// Another tab upgraded the database; this connection was closed so the upgrade could proceed.
    #[error("Memoire was updated in another tab — reload this page to continue")]
    ClosedByOtherTab,
    /// The database on disk is newer than this code.
    #[error("the stored data was written by a newer version of Memoire; reload the page to get the new version")]
    TooNew,
    /// This handle was closed (by `Store::close`).
    #[error("the storage connection is closed; reload the page")]
    Closed,
    /// The disk or the browser's quota is full. The write was aborted and nothing was saved.
    #[error("storage is full: the last change was not saved. Free disk space, or export and delete old conversations, then try again")]
    Full,
    /// A referenced record does not exist.
    #[error("{what} '{id}' was not found (it may have been deleted in another tab)")]
    NotFound { what: &'static str, id: String },
    /// Creating something whose id is already taken.
    #[error("{what} '{id}' already exists")]
    AlreadyExists { what: &'static str, id: String },
    /// A record read from disk does not make sense (hand-edited, corrupted, or from a bug).
    #[error("a stored {what} is damaged and was skipped: {detail}")]
    BadRecord { what: &'static str, detail: String },
    /// A value could not be turned into a storable record.
    #[error("could not prepare data for storage: {0}")]
    Encode(String),
    /// The caller stopped a write between two of its slices (an import's Cancel); the transaction
    /// was aborted and nothing of it was saved.
    #[error("cancelled: nothing was saved")]
    Cancelled,
    /// Any other IndexedDB failure.
    #[error("browser storage failed ({name}): {message}. Reload the page; if it persists, export your data")]
    Idb { name: String, message: String },
}

impl StoreError {
    /// A write refused because a record with its key (or a unique index entry) is already stored:
    /// what was planned against collides with what another tab stored meanwhile.
    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Idb { name, .. } if name == "ConstraintError")
    }

    /// Maps a `DOMException` (from a failed request or an aborted transaction) to an error.
    pub fn from_dom(name: &str, message: &str) -> StoreError {
        match name {
            "QuotaExceededError" => StoreError::Full,
            "VersionError" => StoreError::TooNew,
            "InvalidStateError" if message.contains("closing") || message.contains("closed") => {
                StoreError::ClosedByOtherTab
            }
            _ => StoreError::Idb {
                name: name.to_string(),
                message: message.to_string(),
            },
        }
    }
}
