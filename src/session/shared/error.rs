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
/// chunk fetched on first use, scripts/build-wasm.sh). The split points and where each is are
/// ARCHITECTURE.md's table, "The split build" (`tests/docs.rs` holds it to the code).
pub(crate) type Boxed<'a, T, E> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, E>> + 'a>>;

/// What a conversation that is gone says (every service's `NoConversation`).
pub(crate) const NO_CONVERSATION: &str =
    "This conversation no longer exists (it may have been deleted in another tab).";
/// What a call that needs an agent endpoint says when none is set.
pub(crate) use crate::engine::send::NO_ENDPOINT;
/// What a call says when the wasm chunk it needs could not be fetched (the next try fetches again).
pub(crate) const UNAVAILABLE: &str = "This part of the app could not be loaded (are you offline, or was the app updated?). Check the connection and try again, or reload the page.";

/// `From<ReadError>` for a service's error enum, which has `Store` and `NoConversation` variants.
macro_rules! from_read_error {
    ($e:ident) => {
        impl From<$crate::session::shared::error::ReadError> for $e {
            fn from(e: $crate::session::shared::error::ReadError) -> Self {
                match e {
                    $crate::session::shared::error::ReadError::Store(e) => $e::Store(e),
                    $crate::session::shared::error::ReadError::NoConversation => $e::NoConversation,
                }
            }
        }
    };
}
pub(crate) use from_read_error;

/// A reading of the shared state failed: the conversation is gone, or the database failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{}", NO_CONVERSATION)]
    NoConversation,
}
