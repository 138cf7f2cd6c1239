//! [`SyncError`]: what can go wrong in sync, in words a user can act on, and whether the loop
//! that stopped on it starts again by itself (`engine::sync::restart`). Must not import `ui`.

use super::seal::SealError;
use crate::engine::sync::origin;
use crate::engine::sync::probe::Problem;
use crate::engine::sync::restart::Stop;
use crate::store::StoreError;

/// What can go wrong in the sync driver, in words a user can act on.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SyncError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Problem(#[from] Problem),
    #[error("{0}")]
    Seal(#[from] SealError),
    /// The password would go over plain http to another machine (`engine::sync::origin`).
    #[error("{0}")]
    InsecurePassword(#[from] origin::InsecurePassword),
    /// The sync URL's origin changed and no password was typed: the saved one stays with its origin.
    #[error("The sync server's address changed to {origin}: type its password again (the saved one is only sent to {saved}).")]
    PasswordForOtherOrigin { origin: String, saved: String },
    /// The sync chunk (split point `sync`) could not be fetched; the next try (`engine::sync::restart`)
    /// fetches it again.
    #[error("Sync could not start: its part of the app could not be loaded (are you offline?). It starts again when the connection is back.")]
    Unavailable,
}

impl SyncError {
    /// Whether the loop stopped on this can start again without the user (`engine::sync::restart`).
    pub(super) fn stop(&self) -> Stop {
        use SealError as S;
        match self {
            SyncError::Store(_)
            | SyncError::Unavailable
            | SyncError::Seal(
                S::Unreachable(_)
                | S::Server(_)
                | S::Store(_)
                | S::Unsealable(_)
                | S::RotationStuck,
            ) => Stop::Passing,
            SyncError::Problem(_)
            | SyncError::Seal(_)
            | SyncError::InsecurePassword(_)
            | SyncError::PasswordForOtherOrigin { .. } => Stop::UserMustAct,
        }
    }
}

impl From<wasm_split_helpers::SplitLoaderError> for SyncError {
    fn from(_: wasm_split_helpers::SplitLoaderError) -> Self {
        SyncError::Unavailable
    }
}
