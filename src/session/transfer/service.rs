//! The transfer service type, its error enum and the calls that need no file of their own.
//! Must not import `ui`.

use crate::engine::backup::ImportError;
use crate::session::shared::error::{from_read_error, NO_CONVERSATION, UNAVAILABLE};
use crate::session::shared::Core;
use crate::store::StoreError;
use std::rc::Rc;

/// What can go wrong in an export or import. Every message says what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TransferError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{}", NO_CONVERSATION)]
    NoConversation,
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Import(#[from] ImportError),
    /// The import or export chunk of the app could not be fetched; the next try fetches it again.
    #[error("{}", UNAVAILABLE)]
    Unavailable,
}

from_read_error!(TransferError);

impl From<wasm_split_helpers::SplitLoaderError> for TransferError {
    fn from(_: wasm_split_helpers::SplitLoaderError) -> Self {
        TransferError::Unavailable
    }
}

/// The export and import service. One per page.
pub struct Transfer {
    pub(super) core: Rc<Core>,
}

impl Transfer {
    pub(crate) fn new(core: Rc<Core>) -> Self {
        Transfer { core }
    }
}
