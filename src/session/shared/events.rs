//! What the session reports to this tab's UI ([`SessionEvent`]) and the payloads of its status
//! events. Must not import `ui`.

use super::error::ErrorKind;
use crate::engine::model::{Conversation, Message};
use crate::engine::settings::Settings;
use crate::engine::tabs::Change;
use std::rc::Rc;

/// What the session reports. The UI applies these to its signals; other tabs' changes arrive the
/// same way (serialised over a `BroadcastChannel`, see `tabs.rs`).
#[derive(Debug, Clone)]
pub enum SessionEvent {
    ConversationChanged(Conversation),
    /// Many conversations changed at once (an import's, in slices): each as `ConversationChanged`
    /// says, applied as one change (one update of the list, one message to the other tabs).
    ConversationsChanged(Vec<Conversation>),
    ConversationRemoved(String),
    MessageAdded(Message),
    /// A message's content, status or metadata changed (a streaming reply growing or finishing).
    MessageProgress(Message),
    MessagesCleared(String),
    /// The branch on screen changed (a regeneration, an edit, a page to another alternative, a
    /// deleted message): views read the conversation's messages again.
    BranchChanged(String),
    TurnRunning {
        conversation_id: String,
        running: bool,
    },
    MemoryUpdating {
        conversation_id: String,
        running: bool,
    },
    MemoryChanged(String),
    /// Where building memory from a history stands (this tab's run, see `memory/catchup.rs`).
    MemoryBuild(BuildStatus),
    Error {
        conversation_id: Option<String>,
        message: String,
        kind: ErrorKind,
    },
    Notice(String),
    /// The facts about the user changed (here or in another tab).
    UserFactsChanged,
    /// The projects changed (here or in another tab): read them again.
    ProjectsChanged,
    /// Settings were saved (in this tab or another); they are in force from now on.
    SettingsChanged(Box<Settings>),
    /// Sync's state in this tab changed (see `sync/`).
    SyncStatus(SyncView),
    /// How far the import running in this tab is (see `transfer/import.rs`).
    ImportProgress(crate::engine::import::slice::Progress),
}

impl SessionEvent {
    /// The change of shared data this event reports, for the other tabs and sync; `None` for what
    /// belongs to this tab (turn state, errors, notices, progress: a "Stop" button in another tab
    /// could not stop the turn).
    pub(crate) fn change(&self) -> Option<Change> {
        Some(match self {
            SessionEvent::ConversationChanged(c) => Change::Conversation(c.clone()),
            SessionEvent::ConversationsChanged(cs) => Change::Conversations(cs.clone()),
            SessionEvent::ConversationRemoved(id) => Change::ConversationRemoved(id.clone()),
            SessionEvent::MessageAdded(m) => Change::MessageAdded(m.clone()),
            SessionEvent::MessageProgress(m) => Change::MessageProgress(m.clone()),
            SessionEvent::MessagesCleared(id) => Change::MessagesCleared(id.clone()),
            SessionEvent::BranchChanged(id) => Change::BranchChanged(id.clone()),
            SessionEvent::MemoryUpdating {
                conversation_id,
                running,
            } => Change::MemoryUpdating {
                conversation_id: conversation_id.clone(),
                running: *running,
            },
            SessionEvent::MemoryChanged(id) => Change::MemoryChanged(id.clone()),
            SessionEvent::SettingsChanged(s) => Change::Settings(s.clone()),
            SessionEvent::UserFactsChanged => Change::UserFacts,
            SessionEvent::ProjectsChanged => Change::Projects,
            _ => return None,
        })
    }
}

impl From<Change> for SessionEvent {
    /// Another tab's change, as this tab's UI hears it.
    fn from(c: Change) -> Self {
        match c {
            Change::Conversation(c) => SessionEvent::ConversationChanged(c),
            Change::Conversations(cs) => SessionEvent::ConversationsChanged(cs),
            Change::ConversationRemoved(id) => SessionEvent::ConversationRemoved(id),
            Change::MessageAdded(m) => SessionEvent::MessageAdded(m),
            Change::MessageProgress(m) => SessionEvent::MessageProgress(m),
            Change::MessagesCleared(id) => SessionEvent::MessagesCleared(id),
            Change::BranchChanged(id) => SessionEvent::BranchChanged(id),
            Change::MemoryUpdating {
                conversation_id,
                running,
            } => SessionEvent::MemoryUpdating {
                conversation_id,
                running,
            },
            Change::MemoryChanged(id) => SessionEvent::MemoryChanged(id),
            Change::Settings(s) => SessionEvent::SettingsChanged(s),
            Change::UserFacts => SessionEvent::UserFactsChanged,
            Change::Projects => SessionEvent::ProjectsChanged,
        }
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
