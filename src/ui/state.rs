//! UI state: the signals the views read, and how session events update them. Signals hold state,
//! not logic: every decision was made in the engine, the session only reports outcomes.
//! Must not import `store` or `transport`; reaches the session only through `controller`.

use crate::engine::branch::Alternatives;
use crate::engine::import::slice::Progress;
use crate::engine::model::{
    Conversation, ConversationSummary, EntityNode, Message, MessageMeta, MessageStatus, Role,
};
use crate::engine::settings::Settings;
use crate::engine::window::{place, upsert_listed, Placement};
use crate::session::{
    BuildStatus, ErrorKind, ImportCancel, PreparedImport, Preview, SearchHit, SessionEvent,
    StorageInfo,
};
use leptos::prelude::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// One message as the chat pane shows it. Content and status are signals of their own so a
/// streaming token re-renders one message, never the list.
#[derive(Clone)]
pub struct MessageItem {
    pub id: String,
    pub seq: u64,
    pub role: Role,
    pub created_at: i64,
    pub content: RwSignal<String>,
    pub status: RwSignal<MessageStatus>,
    pub meta: RwSignal<MessageMeta>,
    /// Where it stands among its alternatives (regenerated replies, edits), if it has any.
    pub alternatives: RwSignal<Option<Alternatives>>,
}

impl MessageItem {
    pub fn from_message(m: &Message) -> Self {
        MessageItem {
            id: m.id.clone(),
            seq: m.seq,
            role: m.role,
            created_at: m.created_at,
            content: RwSignal::new(m.content.clone()),
            status: RwSignal::new(m.status),
            meta: RwSignal::new(m.meta.clone()),
            alternatives: RwSignal::new(None),
        }
    }

    /// The items of a page of messages, each with where it stands among its alternatives.
    pub fn from_page(page: &crate::session::Page) -> Vec<MessageItem> {
        page.messages
            .iter()
            .map(|m| {
                let item = MessageItem::from_message(m);
                item.alternatives.set(page.alternatives.get(&m.id).cloned());
                item
            })
            .collect()
    }
}

/// The memory pane's data for the open conversation.
#[derive(Clone, Default, PartialEq)]
pub struct MemoryView {
    pub summary: Option<ConversationSummary>,
    pub versions: Vec<ConversationSummary>,
    pub entities: Vec<EntityNode>,
    /// The latest memory update failed: when, why, what came back.
    pub failure: Option<crate::engine::memory::MemoryFailure>,
}

/// Something went wrong: what to tell the user, and what it is about (which decides the action the
/// banner offers: Settings and Retry for a request, "Retry memory update" for a memory update).
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub text: String,
    pub kind: ErrorKind,
}

/// The endpoint's models, for the header's model picker (listed when it is first opened).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ModelList {
    #[default]
    Unknown,
    Loading,
    Loaded(Vec<String>),
    /// Listing failed; the text says why.
    Failed(String),
}

/// Where an import stands.
#[derive(Clone, Default)]
pub enum ImportState {
    #[default]
    Idle,
    /// A file is being read or written: how far it is, and the switch its Cancel sets.
    Running(Progress, ImportCancel),
    /// A file read and checked, waiting for the user to confirm.
    Preview(PreparedImport),
}

/// Most conversations mounted in the sidebar at once (what is on screen plus a margin; the
/// controller reads the list a page of a third of this at a time).
pub const LIST_CAP: usize = 90;

/// Where the sidebar's window of the conversation list sits in the whole list (most recent first):
/// only the window is read and mounted; scrolling moves it a page at a time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ListWindow {
    /// Conversations above the window (unmounted after scrolling down).
    pub above: usize,
    /// More conversations exist below the window.
    pub more_below: bool,
    /// A page is being read.
    pub loading: bool,
}

/// Every signal of the app. `Copy`, provided as context.
#[derive(Clone, Copy)]
pub struct AppState {
    /// False until the database is open.
    pub ready: RwSignal<bool>,
    /// The sidebar's window of the conversation list, most recent first.
    pub conversations: RwSignal<Vec<Conversation>>,
    pub list_window: RwSignal<ListWindow>,
    /// The open conversation's record when the window does not hold it (opened from a search or
    /// the address of an old conversation).
    pub opened: RwSignal<Option<Conversation>>,
    pub current: RwSignal<Option<String>>,
    /// The mounted window of the open conversation's messages, oldest first.
    pub messages: RwSignal<Vec<MessageItem>>,
    /// True while older messages exist above the mounted window.
    pub has_older: RwSignal<bool>,
    /// The window ends before the latest message (the user went far up, or opened a search hit).
    pub has_newer: RwSignal<bool>,
    pub loading_messages: RwSignal<bool>,
    pub memory: RwSignal<MemoryView>,
    /// Conversations whose memory update is running.
    pub memory_updating: RwSignal<Vec<String>>,
    /// Conversations with a turn in flight.
    pub streaming: RwSignal<Vec<String>>,
    pub preview: RwSignal<Option<Preview>>,
    pub settings: RwSignal<Settings>,
    pub settings_open: RwSignal<bool>,
    /// A message the user can act on, shown in the error banner.
    pub error: RwSignal<Option<Problem>>,
    /// A transient, non-error notice.
    pub notice: RwSignal<Option<String>>,
    pub search_query: RwSignal<String>,
    pub search_hits: RwSignal<Vec<SearchHit>>,
    /// Conversations whose title matches the search.
    pub search_titles: RwSignal<Vec<Conversation>>,
    pub online: RwSignal<bool>,
    pub storage: RwSignal<Option<StorageInfo>>,
    /// Memory pane shown on narrow screens.
    pub memory_open: RwSignal<bool>,
    /// The first screen (composer and conversation list) is shown and the page has been idle since:
    /// what it does not need (the memory pane's sections) mounts then.
    pub settled: RwSignal<bool>,
    /// Draft text per conversation (kept across switches and reloads).
    pub draft: RwSignal<String>,
    /// The conversation whose stored draft `draft` was loaded for; `None` while that read is under
    /// way after a switch (nothing is saved then, so a late save cannot clobber another draft).
    pub draft_of: RwSignal<Option<String>>,
    /// Message to scroll to after opening a conversation from a search hit.
    pub focus_message: RwSignal<Option<String>>,
    /// The user message whose text is in the composer to be edited and sent again.
    pub editing: RwSignal<Option<String>>,
    /// The conversation list is shown as a drawer (phones).
    pub sidebar_open: RwSignal<bool>,
    pub import: RwSignal<ImportState>,
    /// Conversations an import just wrote, offered to have their memory built.
    pub build_offer: RwSignal<Vec<String>>,
    /// Where building memory from a history stands (`None`: no build since the page opened).
    pub memory_build: RwSignal<Option<BuildStatus>>,
    /// Sync's state in this tab (`None` until the session reports it).
    pub sync: RwSignal<Option<crate::session::SyncView>>,
    /// The endpoint's models (the header's picker); listed again after settings change.
    pub models: RwSignal<ModelList>,
    /// The model picked in the new chat before its first message creates the conversation.
    pub new_chat_model: RwSignal<Option<String>>,
}

impl AppState {
    pub fn new() -> Self {
        AppState {
            ready: RwSignal::new(false),
            conversations: RwSignal::new(Vec::new()),
            list_window: RwSignal::new(ListWindow::default()),
            opened: RwSignal::new(None),
            current: RwSignal::new(None),
            messages: RwSignal::new(Vec::new()),
            has_older: RwSignal::new(false),
            has_newer: RwSignal::new(false),
            loading_messages: RwSignal::new(false),
            memory: RwSignal::new(MemoryView::default()),
            memory_updating: RwSignal::new(Vec::new()),
            streaming: RwSignal::new(Vec::new()),
            preview: RwSignal::new(None),
            settings: RwSignal::new(Settings::builtin()),
            settings_open: RwSignal::new(false),
            error: RwSignal::new(None),
            notice: RwSignal::new(None),
            search_query: RwSignal::new(String::new()),
            search_hits: RwSignal::new(Vec::new()),
            search_titles: RwSignal::new(Vec::new()),
            online: RwSignal::new(true),
            storage: RwSignal::new(None),
            memory_open: RwSignal::new(false),
            settled: RwSignal::new(false),
            draft: RwSignal::new(String::new()),
            draft_of: RwSignal::new(None),
            focus_message: RwSignal::new(None),
            editing: RwSignal::new(None),
            sidebar_open: RwSignal::new(false),
            import: RwSignal::new(ImportState::Idle),
            build_offer: RwSignal::new(Vec::new()),
            memory_build: RwSignal::new(None),
            sync: RwSignal::new(None),
            models: RwSignal::new(ModelList::Unknown),
            new_chat_model: RwSignal::new(None),
        }
    }

    /// Shows conversation `id` (or none) with nothing of the one before: the one reset of everything
    /// that belongs to the open conversation, used to open, close and lose one.
    pub fn show_conversation(&self, id: Option<String>) {
        self.current.set(id);
        self.clear_messages();
        self.memory.set(MemoryView::default());
        self.preview.set(None);
        self.error.set(None);
        self.focus_message.set(None);
        self.editing.set(None);
        // The composer belongs to the new conversation at once; its stored draft follows.
        self.draft_of.set(None);
        self.draft.set(String::new());
    }

    /// Shows an error in the banner (the one place errors are shown; it replaces any notice).
    pub fn fail(&self, text: impl Into<String>, kind: ErrorKind) {
        self.notice.set(None);
        self.error.set(Some(Problem {
            text: text.into(),
            kind,
        }));
    }

    /// The memory settings in force for the open conversation (its overrides on the global ones).
    pub fn memory_config(&self) -> crate::engine::model::MemoryConfig {
        let overrides = self
            .current_conversation()
            .map(|c| c.memory_overrides)
            .unwrap_or_default();
        self.settings.with(|s| overrides.apply(&s.memory))
    }

    /// [`Self::current_conversation`] without subscribing (for event handlers).
    pub fn current_conversation_untracked(&self) -> Option<Conversation> {
        untrack(|| self.current_conversation())
    }

    /// The open conversation, as the list (or, outside its window, `opened`) has it.
    pub fn current_conversation(&self) -> Option<Conversation> {
        let cur = self.current.get()?;
        self.conversations
            .with(|l| l.iter().find(|c| c.id == cur).cloned())
            .or_else(|| self.opened.get().filter(|c| c.id == cur))
    }

    pub fn is_current(&self, conversation_id: &str) -> bool {
        self.current
            .with_untracked(|c| c.as_deref() == Some(conversation_id))
    }

    /// True while the open conversation has a turn in flight.
    pub fn current_streaming(&self) -> bool {
        let cur = self.current.get();
        self.streaming.with(|s| cur.is_some_and(|c| s.contains(&c)))
    }

    /// [`Self::current_streaming`] without subscribing (for event handlers).
    pub fn current_streaming_untracked(&self) -> bool {
        let cur = self.current.get_untracked();
        self.streaming
            .with_untracked(|s| cur.is_some_and(|c| s.contains(&c)))
    }

    fn set_flag(list: RwSignal<Vec<String>>, id: &str, on: bool) {
        list.update(|l| {
            l.retain(|x| x != id);
            if on {
                l.push(id.to_string());
            }
        });
    }

    /// A conversation deleted (here or in another tab) leaves the list and the search results; if
    /// it was open, it is closed rather than shown as a ghost.
    fn remove_conversation(&self, id: &str) {
        self.conversations.update(|l| l.retain(|c| c.id != id));
        self.search_titles.update(|l| l.retain(|c| c.id != id));
        if self.is_current(id) {
            self.show_conversation(None);
        }
    }

    /// A changed (or new) conversation: in the window where its activity puts it, unless that is
    /// above or below the window (then the page that holds it is read when scrolled to).
    fn upsert_conversations(&self, cs: Vec<Conversation>) {
        let opened = self
            .opened
            .with_untracked(|o| o.as_ref().map(|o| o.id.clone()));
        if let Some(c) = cs.iter().rev().find(|c| Some(&c.id) == opened.as_ref()) {
            self.opened.set(Some(c.clone()));
        }
        let w = self.list_window.get_untracked();
        // One update (one render of the list) for the whole batch; an import reports thousands.
        let mut more_below = w.more_below;
        self.conversations
            .update(|list| more_below = upsert_listed(list, cs, w.above, w.more_below, LIST_CAP));
        if more_below && !w.more_below {
            self.list_window.update(|w| w.more_below = true);
        }
    }

    /// Mounts `page` as the open conversation's window. Messages already mounted keep their view
    /// (their signals are updated in place), so reloading a window never rebuilds unchanged nodes and
    /// an edited message shows its new text.
    /// With a page that ends at the latest message, messages shown after the page's last one (added
    /// while the page was being read) stay. After a change of branch (`branch_changed`) they go (they
    /// were the old branch's), and messages already mounted keep their state: every save reached
    /// them, so it is at least as new as the page's (a reply that finished while the page was read).
    pub fn replace_window(&self, page: &crate::session::Page, branch_changed: bool) {
        let latest = !page.has_newer && !branch_changed;
        let (alternatives, page) = (&page.alternatives, page.messages.as_slice());
        let old: HashMap<String, MessageItem> = self
            .messages
            .with_untracked(|l| l.iter().map(|m| (m.id.clone(), m.clone())).collect());
        let page_end = page.last().map_or(0, |m| m.seq);
        let arrived: Vec<MessageItem> = self.messages.with_untracked(|l| {
            l.iter()
                .filter(|m| latest && m.seq > page_end && !page.iter().any(|p| p.id == m.id))
                .cloned()
                .collect()
        });
        let items = page
            .iter()
            .map(|m| {
                let item = match old.get(&m.id) {
                    Some(item) => {
                        if !branch_changed {
                            self.set_progress(&m.id, &m.content, m.status, Some(&m.meta));
                        }
                        item.clone()
                    }
                    None => MessageItem::from_message(m),
                };
                let alt = alternatives.get(&m.id);
                if item.alternatives.with_untracked(|a| a.as_ref() != alt) {
                    item.alternatives.set(alt.cloned());
                }
                item
            })
            .chain(arrived)
            .collect();
        self.messages.set(items);
    }

    /// Shows a stored message in the open conversation's window, per `engine::window::place`; true
    /// when the window missed messages before it and must be reloaded.
    /// The open conversation was cleared: no messages, nothing older or newer to load.
    fn clear_messages(&self) {
        self.messages.set(Vec::new());
        self.has_older.set(false);
        self.has_newer.set(false);
    }

    fn append_message(&self, m: &Message) -> bool {
        if !self.is_current(&m.conversation_id) {
            return false;
        }
        let (last_seq, shown) = self.messages.with_untracked(|l| {
            (
                l.last().map(|x| x.seq),
                l.iter().rev().any(|x| x.id == m.id),
            )
        });
        let placement = place(last_seq, !self.has_newer.get_untracked(), m.seq, shown);
        if placement == Placement::Beyond {
            return false;
        }
        if shown {
            self.set_progress(&m.id, &m.content, m.status, Some(&m.meta));
        } else {
            self.messages.update(|l| {
                let at = l.iter().rposition(|x| x.seq < m.seq).map_or(0, |i| i + 1);
                l.insert(at, MessageItem::from_message(m));
            });
        }
        placement == Placement::Behind
    }

    fn set_progress(
        &self,
        id: &str,
        content: &str,
        status: MessageStatus,
        meta: Option<&MessageMeta>,
    ) {
        let item = self
            .messages
            .with_untracked(|l| l.iter().rev().find(|x| x.id == id).cloned());
        if let Some(item) = item {
            if item.content.with_untracked(|c| c != content) {
                item.content.set(content.to_string());
            }
            if item.status.get_untracked() != status {
                item.status.set(status);
            }
            if let Some(meta) = meta {
                if item.meta.with_untracked(|m| m != meta) {
                    item.meta.set(meta.clone());
                }
            }
        }
    }
}

impl Default for AppState {
    fn default() -> Self {
        Self::new()
    }
}

/// Applies session events to the signals. Streaming progress is batched to animation frames: many
/// chunks within one frame cost one render.
#[derive(Clone)]
pub struct EventApplier {
    state: AppState,
    pending: Rc<RefCell<HashMap<String, Message>>>,
    scheduled: Rc<RefCell<bool>>,
    /// Called when the open conversation's memory changed, to reload the memory pane.
    on_memory_changed: Rc<dyn Fn(String)>,
    /// Called when a conversation changed in a way that may change the next request.
    on_context_changed: Rc<dyn Fn(String)>,
    /// Called when the open conversation's window missed stored messages, to reload it.
    on_view_behind: Rc<dyn Fn(String)>,
    /// Called when the open conversation's branch on screen changed, to read it again.
    on_branch_changed: Rc<dyn Fn(String)>,
}

impl EventApplier {
    pub fn new(
        state: AppState,
        on_memory_changed: Rc<dyn Fn(String)>,
        on_context_changed: Rc<dyn Fn(String)>,
        on_view_behind: Rc<dyn Fn(String)>,
        on_branch_changed: Rc<dyn Fn(String)>,
    ) -> Self {
        EventApplier {
            state,
            pending: Rc::default(),
            scheduled: Rc::default(),
            on_memory_changed,
            on_context_changed,
            on_view_behind,
            on_branch_changed,
        }
    }

    pub fn apply(&self, event: SessionEvent) {
        let s = self.state;
        match event {
            SessionEvent::ConversationChanged(c) => self.conversations_changed(vec![c]),
            SessionEvent::ConversationsChanged(cs) => self.conversations_changed(cs),
            SessionEvent::ConversationRemoved(id) => s.remove_conversation(&id),
            SessionEvent::MessageAdded(m) => {
                self.flush();
                // Stored messages this view never heard of (another tab whose events did not
                // arrive): the window is reloaded.
                if s.append_message(&m) {
                    (self.on_view_behind)(m.conversation_id);
                }
            }
            SessionEvent::MessageProgress(m) => self.progress(m),
            SessionEvent::MessagesCleared(id) => {
                if s.is_current(&id) {
                    s.clear_messages();
                }
            }
            SessionEvent::BranchChanged(id) => {
                if s.is_current(&id) {
                    (self.on_branch_changed)(id.clone());
                    (self.on_context_changed)(id);
                }
            }
            SessionEvent::TurnRunning {
                conversation_id,
                running,
            } => {
                AppState::set_flag(s.streaming, &conversation_id, running);
                if !running && s.is_current(&conversation_id) {
                    (self.on_context_changed)(conversation_id);
                }
            }
            SessionEvent::MemoryUpdating {
                conversation_id,
                running,
            } => AppState::set_flag(s.memory_updating, &conversation_id, running),
            SessionEvent::MemoryChanged(id) => {
                if s.is_current(&id) {
                    (self.on_memory_changed)(id);
                }
            }
            SessionEvent::Error {
                conversation_id,
                message,
                kind,
            } => {
                if conversation_id.as_deref().is_none_or(|c| s.is_current(c)) {
                    s.fail(message, kind);
                }
            }
            SessionEvent::MemoryBuild(b) => {
                // Done, or ended with its own Retry of what failed: the import's offer is spent.
                if matches!(b, BuildStatus::Done(_) | BuildStatus::Failed { .. }) {
                    s.build_offer.set(Vec::new());
                }
                s.memory_build.set(Some(b));
            }
            SessionEvent::Notice(text) => s.notice.set(Some(text)),
            SessionEvent::SyncStatus(v) => s.sync.set(Some(v)),
            SessionEvent::ImportProgress(p) => s.import.update(|i| {
                if let ImportState::Running(progress, _) = i {
                    *progress = p;
                }
            }),
            SessionEvent::SettingsChanged(settings) => self.settings_changed(*settings),
            SessionEvent::UserFactsChanged => {}
        }
    }

    /// Conversations stored or changed (here or in another tab): the list takes them in one update,
    /// and the open one's next request is previewed again.
    fn conversations_changed(&self, cs: Vec<Conversation>) {
        let s = self.state;
        let current = cs
            .iter()
            .find(|c| s.is_current(&c.id))
            .map(|c| c.id.clone());
        s.upsert_conversations(cs);
        if let Some(id) = current {
            (self.on_context_changed)(id);
        }
    }

    /// Saved settings (here or in another tab): the model list is asked again when needed, and the
    /// open conversation's next request is previewed with them.
    fn settings_changed(&self, settings: Settings) {
        let s = self.state;
        s.settings.set(settings);
        s.models.set(ModelList::Unknown);
        if let Some(id) = s.current.get_untracked() {
            (self.on_context_changed)(id);
        }
    }

    /// A streaming reply's growth waits for the next frame (coalesced); a settled one applies now.
    fn progress(&self, m: Message) {
        if m.status == MessageStatus::Streaming {
            self.pending.borrow_mut().insert(m.id.clone(), m);
            self.schedule();
        } else {
            self.pending.borrow_mut().remove(&m.id);
            self.state.append_message(&m);
        }
    }

    fn schedule(&self) {
        if *self.scheduled.borrow() {
            return;
        }
        *self.scheduled.borrow_mut() = true;
        let this = self.clone();
        request_animation_frame(move || {
            *this.scheduled.borrow_mut() = false;
            this.flush();
        });
    }

    fn flush(&self) {
        let pending: Vec<Message> = self.pending.borrow_mut().drain().map(|(_, m)| m).collect();
        for m in pending {
            self.state.append_message(&m);
        }
    }
}
