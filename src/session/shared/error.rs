//! What can go wrong in a session call, and what it is about. Every message says what to do.
//! Must not import `ui`.

use crate::store::StoreError;

/// What an error is about, so the one place errors are shown offers the action that fits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ErrorKind {
    /// A request to the agent failed: Settings may fix it, and the turn may be sent again.
    Request,
    /// A memory update failed: it may be run again.
    Memory,
    /// Anything else (a file, the database): neither Settings nor a retry fixes it.
    Other,
}

/// A future boxed so it can cross a split point (`#[wasm_split(name)]`: the code behind it is a wasm
/// chunk fetched on first use, scripts/build-wasm.sh). Split points: `import`
/// (transfer/import.rs), `sync` (sync/mod.rs), `memory` (memory/update.rs, memory/catchup.rs),
/// `export` (transfer/backup.rs).
pub(crate) type Boxed<'a, T, E> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, E>> + 'a>>;

/// A reading of the shared state failed: the conversation is gone, or the database failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("This conversation no longer exists (it may have been deleted in another tab).")]
    NoConversation,
}
