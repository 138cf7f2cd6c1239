//! The session: the driver between the UI and everything else. It moves data
//! store -> engine -> transport -> engine -> store and reports what happened as [`SessionEvent`]s;
//! every decision (what to send, resume or re-inject, when to save, when memory is due, how to
//! merge) is the engine's. It reads the clock and makes ids, and passes them in.
//!
//! [`Session`] opens the shared core (`shared/`: store, events out, settings in force, caches,
//! clock) and the domain services over it, and hands them out: [`Chat`] (`chat/`), [`Library`]
//! (`library/`), [`Memory`] (`memory/`), [`Projects`] (`projects/`), [`Transfer`] (`transfer/`),
//! [`Replication`] (`sync/`), [`Preferences`] (`settings/`), [`Tools`] (`tools/`: what a turn offers,
//! the memory tools, approvals) and [`McpServers`] (`mcp/`, Settings → Tools; the tool loop's runner
//! `McpTools` is there too). Each has its own error enum; [`SessionError`] is any of them.
//! Must not import `ui`.

mod chat;
mod library;
mod mcp;
mod memory;
mod projects;
mod settings;
mod shared;
mod sync;
mod tools;
mod transfer;

pub use crate::engine::page::Page;
pub use crate::store::SyncSettings;
pub use chat::{
    Chat, ChatError, Prepared, Preview, PreviewDropped, PreviewSection, PreviewSource,
    NEW_CHAT_DRAFT,
};
pub use library::{Library, LibraryError, SearchHit, SearchResults};
pub use mcp::{McpError, McpServers, ServerState, ServerView, ToolView};
pub use memory::{Memory, MemoryError, MemorySnapshot};
pub use projects::{Projects, ProjectsError};
pub use settings::{Preferences, SettingsError, StorageInfo};
pub use shared::error::ErrorKind;
pub use shared::events::{BuildStatus, EventSink, Local, SessionEvent, SyncView};
pub use sync::{Replication, SyncError};
pub use tools::{Tools, ToolsError};
pub use transfer::{ImportCancel, ImportStep, PreparedImport, Transfer, TransferError};

use crate::store::StoreError;
use futures_util::future::join;
use shared::Core;
use std::rc::Rc;

/// The database every tab of this origin shares.
pub const DB_NAME: &str = "memoire";

/// Any service's error, for the one place errors are shown. Every message says what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Chat(#[from] ChatError),
    #[error(transparent)]
    Library(#[from] LibraryError),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Projects(#[from] ProjectsError),
    #[error(transparent)]
    Transfer(#[from] TransferError),
    #[error(transparent)]
    Sync(#[from] SyncError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// Opening the database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SessionError {
    /// What the error is about (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            SessionError::Chat(e) | SessionError::Library(LibraryError::Chat(e)) => e.kind(),
            SessionError::Memory(e) => e.kind(),
            SessionError::Settings(e) => e.kind(),
            _ => ErrorKind::Other,
        }
    }
}

/// The session. One per page; shared by the UI through `Rc`.
pub struct Session {
    chat: Rc<Chat>,
    library: Library,
    memory: Rc<Memory>,
    projects: Projects,
    transfer: Transfer,
    sync: Replication,
    preferences: Preferences,
    mcp: McpServers,
    tools: Rc<Tools>,
}

impl Session {
    /// Opens the database, loads settings (deployment `config.json` defaults, then what the user
    /// saved), marks replies left streaming by a crash as interrupted, and asks for persistent
    /// storage; then the services, and sync if it is on. The sync state is read together with the
    /// settings: one round of IndexedDB reads, not two one after the other, before the first screen.
    pub async fn open(db_name: &str, sink: EventSink) -> Result<Rc<Session>, SessionError> {
        let opening = Core::begin(db_name).await?;
        let store = opening.store.clone();
        let (core, sync) = join(
            Core::finish(opening, db_name, sink),
            Replication::open(store),
        )
        .await;
        let (core, sync) = (core?, sync?);
        core.set_capture(Rc::new(sync.clone()));
        let weak = Rc::downgrade(&core);
        sync.start(Rc::new(move |e| {
            if let Some(core) = weak.upgrade() {
                core.applied(e)
            }
        }));
        let memory = Rc::new(Memory::new(core.clone()));
        let tools = Rc::new(Tools::new(core.clone()));
        let chat = Rc::new(Chat::new(core.clone(), memory.clone(), tools.clone()));
        Ok(Rc::new(Session {
            library: Library::new(core.clone(), chat.clone()),
            projects: Projects::new(core.clone()),
            transfer: Transfer::new(core.clone()),
            mcp: McpServers::new(core.clone()),
            preferences: Preferences::new(core),
            chat,
            memory,
            sync,
            tools,
        }))
    }

    /// Chat and turns.
    pub fn chat(&self) -> &Rc<Chat> {
        &self.chat
    }

    /// The conversation list, search, opening and managing conversations.
    pub fn library(&self) -> &Library {
        &self.library
    }

    /// Memory updates, builds and the memory pane's edits.
    pub fn memory(&self) -> &Rc<Memory> {
        &self.memory
    }

    /// Projects: create, rename, instructions, delete, moving conversations.
    pub fn projects(&self) -> &Projects {
        &self.projects
    }

    /// Export and import.
    pub fn transfer(&self) -> &Transfer {
        &self.transfer
    }

    /// Sync with a CouchDB-compatible server.
    pub fn sync(&self) -> &Replication {
        &self.sync
    }

    /// Tool calls: the user's answers to a call waiting for approval.
    pub fn tools(&self) -> &Rc<Tools> {
        &self.tools
    }

    /// Settings, the connection test, the storage figure.
    pub fn preferences(&self) -> &Preferences {
        &self.preferences
    }

    /// MCP servers (Settings → Tools).
    pub fn mcp(&self) -> &McpServers {
        &self.mcp
    }
}
