//! What the session reports to this tab's UI ([`SessionEvent`]) and the payloads of its status
//! events. Must not import `ui`.

use super::error::ErrorKind;
use crate::engine::tabs::Change;
use std::rc::Rc;

/// What the session reports: a change of shared data, or what belongs to this tab alone. The UI
/// applies both to its signals; a shared change is also what the other tabs hear (as it is, over a
/// `BroadcastChannel`, see `tabs.rs`) and what sync captures, so each is written once, in
/// `engine::tabs::Change`.
#[derive(Debug, Clone)]
pub enum SessionEvent {
    /// Stored data changed, here or in another tab (or on another device, through sync).
    Shared(Change),
    /// This tab's own news: a "Stop" button in another tab could not stop the turn.
    Local(Local),
}

/// What belongs to this tab alone: turn state, errors, notices and progress.
#[derive(Debug, Clone)]
pub enum Local {
    TurnRunning {
        conversation_id: String,
        running: bool,
    },
    /// Where building memory from a history stands (this tab's run, see `memory/catchup.rs`).
    MemoryBuild(BuildStatus),
    Error {
        conversation_id: Option<String>,
        message: String,
        kind: ErrorKind,
    },
    Notice(String),
    /// Sync's state in this tab changed (see `sync/`).
    SyncStatus(SyncView),
    /// How far the import running in this tab is (see `transfer/import.rs`).
    ImportProgress(crate::engine::import::slice::Progress),
}

impl From<Change> for SessionEvent {
    fn from(c: Change) -> Self {
        SessionEvent::Shared(c)
    }
}

impl From<Local> for SessionEvent {
    fn from(l: Local) -> Self {
        SessionEvent::Local(l)
    }
}

/// A sink for events.
pub type EventSink = Rc<dyn Fn(SessionEvent)>;

/// Where a memory build stands, for the progress line.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum BuildStatus {
    /// Conversation `conversation` of `conversations` (1-based), chunk `chunk` of `chunks`.
    Running {
        conversation_id: String,
        title: String,
        conversation: usize,
        conversations: usize,
        chunk: usize,
        chunks: usize,
    },
    /// Every queued conversation's memory covers its history.
    Done(String),
    /// The run ended with conversations not built: which and why, and the ids a retry builds
    /// (those, and any the run did not reach when it gave up).
    Failed { text: String, retry: Vec<String> },
    /// Cancelled, or memory is off: what happened and what to do.
    Stopped(String),
}

/// What the sidebar shows: `state` is `off`, `synced`, `syncing` or `error` (the UI contract's
/// `data-state`), `label` its few words with the next retry (empty: the state's own word), `detail`
/// the whole story (the tooltip).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SyncView {
    pub state: String,
    #[serde(default)]
    pub label: String,
    pub detail: String,
}

impl SyncView {
    pub(crate) fn off() -> SyncView {
        SyncView {
            state: "off".into(),
            label: String::new(),
            detail: "Sync is off".into(),
        }
    }
}
