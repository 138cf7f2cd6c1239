//! The memory service type, its error enum and the calls that need no file of their own.
//! Must not import `ui`.

use crate::engine::memory::Scheduler;
use crate::engine::model::{ConversationSummary, EntityNode};
use crate::session::shared::error::{
    from_read_error, ErrorKind, NO_CONVERSATION, NO_ENDPOINT, UNAVAILABLE,
};
use crate::session::shared::held::Held;
use crate::session::shared::Core;
use crate::store::StoreError;
use crate::transport::Stopper;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// What can go wrong in a memory call. Every message says what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MemoryError {
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A request failed; the text is the engine's actionable message.
    #[error("{0}")]
    Request(String),
    #[error("{}", NO_ENDPOINT)]
    NoEndpoint,
    #[error("The memory is already being updated. Wait for it to finish.")]
    Busy,
    /// A memory update gave way to a chat turn on the same server; it runs again after the turn.
    #[error("A reply is being written on the same server and goes first; update the memory again once it is done.")]
    Deferred,
    #[error("{}", NO_CONVERSATION)]
    NoConversation,
    #[error("{0}")]
    Invalid(String),
    /// A failure already shown where it belongs (the memory pane), not repeated as a banner.
    #[error("{0}")]
    Quiet(String),
    /// A memory update the user asked for failed; the text says why.
    #[error("The memory update failed; the previous memory is kept. {0}")]
    Failed(String),
    /// A memory chunk of the app (`memory`, `memory_read`) could not be fetched; the next try fetches
    /// it again.
    #[error("{}", UNAVAILABLE)]
    Unavailable,
}

from_read_error!(MemoryError);

impl MemoryError {
    /// What the error is about (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            MemoryError::Request(_) | MemoryError::NoEndpoint => ErrorKind::Request,
            MemoryError::Failed(_) => ErrorKind::Memory,
            _ => ErrorKind::Other,
        }
    }
}

impl From<wasm_split_helpers::SplitLoaderError> for MemoryError {
    fn from(_: wasm_split_helpers::SplitLoaderError) -> Self {
        MemoryError::Unavailable
    }
}

/// The queue of conversations whose memory is being built in this tab (`catchup.rs`).
#[derive(Default)]
pub(super) struct Queue {
    /// Conversations waiting, in order (the one being built included, first).
    pub(super) waiting: Vec<String>,
    /// How many the run has taken so far (built or being built).
    pub(super) taken: usize,
    /// Stops the request in flight; `Some` while a run goes on.
    pub(super) stopper: Option<Stopper>,
}

/// The memory of a conversation: every summary version (oldest first) and its entities.
#[derive(Debug, Clone, Default)]
pub struct MemorySnapshot {
    pub versions: Vec<ConversationSummary>,
    pub entities: Vec<EntityNode>,
    /// The latest memory update failed: when, why, and what came back.
    pub failure: Option<crate::engine::memory::MemoryFailure>,
}

/// The memory service. One per page.
pub struct Memory {
    pub(super) core: Rc<Core>,
    /// What the service remembers between its awaits.
    pub(super) state: Held<MemoryState>,
}

/// What the memory service remembers between its awaits, in one value.
#[derive(Default)]
pub(super) struct MemoryState {
    /// Conversations whose memory update is running in this tab.
    pub(super) running: HashSet<String>,
    /// Which live memory updates may talk to their server, against this tab's chat turns
    /// (`engine::memory::schedule`).
    pub(super) schedule: Scheduler,
    /// The stoppers of the live memory updates running, by conversation.
    pub(super) stops: HashMap<String, Stopper>,
    /// Conversations whose memory is being built from their history (see `catchup.rs`).
    pub(super) building: Queue,
}

impl Memory {
    /// Runs `f` on the queue of the memory build.
    pub(super) fn building<R>(&self, f: impl FnOnce(&mut Queue) -> R) -> R {
        self.state.with(|s| f(&mut s.building))
    }

    pub(crate) fn new(core: Rc<Core>) -> Self {
        Memory {
            core,
            state: Held::default(),
        }
    }
}
