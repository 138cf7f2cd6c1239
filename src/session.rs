//! The session: the driver between the UI and everything else. It moves data
//! store -> engine -> transport -> engine -> store and reports what happened as [`SessionEvent`]s;
//! every decision (what to send, resume or re-inject, when to save, when memory is due, how to
//! merge) is the engine's. It reads the clock and makes ids, and passes them in.
//! Must not import `ui`.

mod backup;
mod branch;
mod cache;
mod catchup;
mod import;
mod memory;
mod pace;
mod replicate;
mod stream;
mod sync;
mod turn;

pub use crate::store::SyncSettings;
pub use catchup::BuildStatus;
pub use import::{ImportCancel, ImportStep, PreparedImport};
pub use replicate::SyncView;
use turn::Begin;

use crate::engine::history::last_user_at;
use crate::engine::model::{
    Conversation, ConversationSummary, EntityNode, EntityScope, MemoryConfig, MemoryOverrides,
    Message, Millis, Role, TurnPath,
};
pub use crate::engine::page::Page;
use crate::engine::page::{self, page_of_branch, PageAsk};
use crate::engine::settings::{self, Settings};
use crate::engine::tokens::Calibration;
use crate::engine::{failure, request, title};
use crate::store::{ConversationPatch, Store, StoreError};
use crate::transport::{self, Stopper, Timeouts, TransportError};
use futures_util::future::join;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// The database every tab of this origin shares.
pub const DB_NAME: &str = "memoire";
/// Settings keys.
const SETTINGS_KEY: &str = "settings";
const CALIBRATION_KEY: &str = "calibration";
const DRAFT_PREFIX: &str = "draft:";
/// Most search hits returned.
const SEARCH_LIMIT: usize = 50;

/// What the session reports. The UI applies these to its signals; other tabs' changes arrive the
/// same way (serialised over a `BroadcastChannel`, see `sync.rs`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
    /// Where building memory from a history stands (this tab's run, see `catchup.rs`).
    MemoryBuild(BuildStatus),
    Error {
        conversation_id: Option<String>,
        message: String,
        kind: ErrorKind,
    },
    Notice(String),
    /// Settings were saved (in this tab or another); they are in force from now on.
    SettingsChanged(Box<Settings>),
    /// Sync's state in this tab changed (see `replicate.rs`).
    SyncStatus(SyncView),
    /// How far the import running in this tab is (see `import.rs`).
    ImportProgress(crate::engine::import::slice::Progress),
}

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

/// A sink for events.
pub type EventSink = Rc<dyn Fn(SessionEvent)>;

/// What can go wrong in a session call. Every message says what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SessionError {
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A request failed; the text is the engine's actionable message.
    #[error("{0}")]
    Request(String),
    #[error("No agent endpoint is set. Open Settings, pick a preset or enter the URL of your agent, and save.")]
    NoEndpoint,
    #[error("A reply is still being written in this conversation. Wait for it, or press Stop.")]
    Busy,
    #[error("The memory is already being updated. Wait for it to finish.")]
    MemoryBusy,
    /// A memory update gave way to a chat turn on the same server; it runs again after the turn.
    #[error("A reply is being written on the same server and goes first; update the memory again once it is done.")]
    MemoryDeferred,
    #[error("This conversation no longer exists (it may have been deleted in another tab).")]
    NoConversation,
    #[error("{0}")]
    Invalid(String),
    /// A failure already shown where it belongs (the memory pane), not repeated as a banner.
    #[error("{0}")]
    Quiet(String),
    /// A memory update the user asked for failed; the text says why.
    #[error("The memory update failed; the previous memory is kept. {0}")]
    Memory(String),
    #[error("{0}")]
    Import(#[from] crate::engine::backup::ImportError),
    /// The conversation changed (in another tab) while a message was being sent ahead; nothing was
    /// stored, and the send is repeated on the ordinary path.
    #[error("This conversation changed in another tab while sending. Send your message again.")]
    Conflict,
    /// A part of the app fetched on first use (a wasm chunk: import, sync, memory, export) could
    /// not be loaded; the next try fetches it again.
    #[error("This part of the app could not be loaded (are you offline, or was the app updated?). Check the connection and try again, or reload the page.")]
    Unavailable,
}

/// A future boxed so it can cross a split point (`#[wasm_split(name)]`: the code behind it is a wasm
/// chunk fetched on first use, scripts/build-wasm.sh). Split points: `import` (session/import.rs),
/// `sync` (session/replicate.rs), `memory` (session/memory.rs, session/catchup.rs), `export`
/// (session/backup.rs).
pub(crate) type Boxed<'a, T, E = SessionError> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, E>> + 'a>>;

impl From<wasm_split_helpers::SplitLoaderError> for SessionError {
    fn from(_: wasm_split_helpers::SplitLoaderError) -> Self {
        SessionError::Unavailable
    }
}

impl SessionError {
    /// What the error is about (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            SessionError::Request(_) | SessionError::NoEndpoint => ErrorKind::Request,
            SessionError::Memory(_) => ErrorKind::Memory,
            _ => ErrorKind::Other,
        }
    }
}

/// The memory of a conversation: every summary version (oldest first) and its entities.
#[derive(Debug, Clone, Default)]
pub struct MemorySnapshot {
    pub versions: Vec<ConversationSummary>,
    pub entities: Vec<EntityNode>,
    /// The latest memory update failed: when, why, and what came back.
    pub failure: Option<crate::engine::memory::MemoryFailure>,
}

/// A search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    pub conversation_id: String,
    /// Its conversation's title.
    pub title: String,
    pub message_id: String,
    /// Who wrote the message, for the row's "You" or "Agent".
    pub role: Option<Role>,
    pub snippet: String,
}

/// What a search found: conversations by title, and messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchResults {
    pub titles: Vec<Conversation>,
    pub hits: Vec<SearchHit>,
}

/// Storage usage of this origin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StorageInfo {
    pub usage: u64,
    pub quota: u64,
    pub persisted: bool,
}

/// One row of the context inspector.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewSection {
    pub key: String,
    pub label: String,
    pub detail: String,
    pub tokens: u32,
}

/// A message the next request leaves out.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewDropped {
    pub seq: u64,
    pub reason: String,
}

/// What the next request will contain.
#[derive(Debug, Clone, PartialEq)]
pub struct Preview {
    pub path: TurnPath,
    pub path_explanation: String,
    pub format: String,
    pub protocol: String,
    pub sections: Vec<PreviewSection>,
    pub dropped: Vec<PreviewDropped>,
    pub total_tokens: u32,
    pub budget: u32,
    pub over_budget: bool,
    pub request_bytes: usize,
}

/// The session. One per page; shared by the UI through `Rc`.
pub struct Session {
    store: Store,
    sink: EventSink,
    /// Shared with the channel's receiver, which applies settings saved in another tab.
    settings: Rc<RefCell<Settings>>,
    defaults: Settings,
    calibration: RefCell<Calibration>,
    /// Turns in flight, by conversation.
    inflight: RefCell<HashMap<String, Stopper>>,
    /// Conversations whose memory update is running in this tab.
    memory_running: RefCell<HashSet<String>>,
    /// Which live memory updates may talk to their server, against this tab's chat turns
    /// (`engine::memory::schedule`).
    schedule: RefCell<crate::engine::memory::Scheduler>,
    /// The stoppers of the live memory updates running, by conversation.
    memory_stops: RefCell<HashMap<String, Stopper>>,
    /// Conversations whose memory is being built from their history (see `catchup.rs`).
    building: catchup::BuildQueue,
    persisted: RefCell<bool>,
    /// Carries shared events to the other tabs of this database (None without BroadcastChannel).
    channel: Option<sync::Channel>,
    /// Held (shared) while this tab lives, so other tabs know it may be streaming.
    _presence: sync::LockGuard,
    /// Recent history and memory per conversation, so prompts are built without reading storage.
    cache: Rc<RefCell<cache::Cache>>,
    /// Sync across devices (does nothing while disabled, the default).
    replication: replicate::Replication,
}

/// The browser's clock.
pub(crate) fn now() -> i64 {
    js_sys::Date::now() as i64
}

/// A new unique id: time, then random bits (ids only need to be unique, not secret).
pub(crate) fn new_id(prefix: &str) -> String {
    let r1 = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    let r2 = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    format!("{prefix}{:x}{:08x}{:08x}", now(), r1, r2)
}

impl Session {
    /// Opens the database, loads settings (deployment `config.json` defaults, then what the user
    /// saved), marks replies left streaming by a crash as interrupted, and asks for persistent storage.
    /// The `config.json` request and the storage request go out while the database opens: on a slow
    /// link that round trip would otherwise come after it, before the first screen.
    pub async fn open(db_name: &str, sink: EventSink) -> Result<Rc<Session>, SessionError> {
        let ((opened, defaults), persisted) = join(
            join(open_store(db_name), load_deployment_config()),
            Store::request_persistence(),
        )
        .await;
        let (store, interrupted, presence) = opened?;
        // The settings and the sync state are read together: one round of IndexedDB reads, not four
        // one after the other, before the first screen.
        let (loaded, replication) = join(
            load_settings(&store, &sink, defaults),
            replicate::Replication::open(store.clone()),
        )
        .await;
        let (defaults, settings, calibration) = loaded?;
        let replication = replication?;
        if interrupted > 0 {
            sink(SessionEvent::Notice(format!(
                "{interrupted} reply was cut off when the page closed; the partial text is kept and marked interrupted."
            )));
        }
        let persisted = persisted.unwrap_or(false);
        let closed_sink = sink.clone();
        store.on_closed_by_other_tab(move || {
            closed_sink(SessionEvent::Error {
                conversation_id: None,
                message: StoreError::ClosedByOtherTab.to_string(),
                kind: ErrorKind::Other,
            })
        });
        let cache = Rc::new(RefCell::new(cache::Cache::default()));
        let settings = Rc::new(RefCell::new(settings));
        let remote_sink: EventSink = {
            let (cache, settings, sink) = (cache.clone(), settings.clone(), sink.clone());
            Rc::new(move |e| {
                cache.borrow_mut().observe_remote(&e);
                if let SessionEvent::SettingsChanged(s) = &e {
                    // Checked again: another tab may run another build.
                    if s.validate().is_err() {
                        return;
                    }
                    *settings.borrow_mut() = (**s).clone();
                }
                sink(e)
            })
        };
        let channel = sync::Channel::open(db_name, remote_sink);
        let session = Rc::new(Session {
            store,
            sink,
            settings,
            defaults,
            calibration: RefCell::new(calibration),
            inflight: RefCell::default(),
            memory_running: RefCell::default(),
            schedule: RefCell::default(),
            memory_stops: RefCell::default(),
            building: Default::default(),
            persisted: RefCell::new(persisted),
            channel,
            _presence: presence,
            cache,
            replication,
        });
        session.replication.start(replicate::emitter(&session));
        Ok(session)
    }

    /// Reports an event to this tab's sink and, when it describes shared data, to the other tabs.
    pub(crate) fn emit(&self, e: SessionEvent) {
        self.cache.borrow_mut().observe_own(&e);
        self.replication.observe(&e);
        if let Some(c) = &self.channel {
            c.post(&e);
        }
        (self.sink)(e)
    }

    /// The settings in force.
    pub fn settings(&self) -> Settings {
        self.settings.borrow().clone()
    }

    /// The deployment's defaults (what "reset" goes back to).
    pub fn defaults(&self) -> Settings {
        self.defaults.clone()
    }

    /// Validates and saves settings.
    pub async fn save_settings(&self, s: Settings) -> Result<(), SessionError> {
        s.validate().map_err(SessionError::Invalid)?;
        let v = serde_json::to_value(&s).map_err(|e| SessionError::Invalid(e.to_string()))?;
        self.store.set_setting(SETTINGS_KEY, &v).await?;
        *self.settings.borrow_mut() = s.clone();
        self.emit(SessionEvent::SettingsChanged(Box::new(s)));
        Ok(())
    }

    /// Writes a change of a conversation record and reports the record as stored.
    pub(crate) async fn patch_conversation(
        &self,
        id: &str,
        patch: &ConversationPatch,
    ) -> Result<(), SessionError> {
        let c = self.store.update_conversation(id, patch).await?;
        self.emit(SessionEvent::ConversationChanged(c));
        Ok(())
    }

    /// The effective memory config of a conversation.
    pub(crate) fn config_for(&self, conv: &Conversation) -> MemoryConfig {
        conv.memory_overrides.apply(&self.settings.borrow().memory)
    }

    /// A page of the conversation list (most recent activity first): up to `limit` conversations
    /// after `after` (a conversation's `updated_at` and id), or from the top.
    pub async fn list_page(
        &self,
        after: Option<(Millis, &str)>,
        limit: usize,
    ) -> Result<Vec<Conversation>, SessionError> {
        Ok(self.store.list_conversations_after(after, limit).await?)
    }

    /// The page of the list just above `before`, most recent first.
    pub async fn list_page_before(
        &self,
        before: (Millis, &str),
        limit: usize,
    ) -> Result<Vec<Conversation>, SessionError> {
        Ok(self.store.list_conversations_before(before, limit).await?)
    }

    pub async fn conversation(&self, id: &str) -> Result<Option<Conversation>, SessionError> {
        Ok(self.store.get_conversation(id).await?)
    }

    /// Stores a new conversation, with the choices made in the new chat before its first message
    /// (the model picked in the header). The app calls this for a first message, never for New.
    pub async fn create_conversation(
        &self,
        memory_overrides: MemoryOverrides,
    ) -> Result<Conversation, SessionError> {
        let t = now();
        let c = Conversation {
            id: new_id("c"),
            title: String::new(),
            title_is_custom: false,
            created_at: t,
            updated_at: t,
            message_count: 0,
            endpoint_profile_id: Some(self.settings.borrow().endpoint.id.clone()),
            remote_handle: None,
            last_path: None,
            memory_overrides,
        };
        self.store.create_conversation(&c).await?;
        self.emit(SessionEvent::ConversationChanged(c.clone()));
        Ok(c)
    }

    pub async fn rename(&self, id: &str, title: &str) -> Result<(), SessionError> {
        let c = self
            .store
            .rename_conversation(id, title.trim(), now())
            .await?;
        self.emit(SessionEvent::ConversationChanged(c));
        Ok(())
    }

    pub async fn set_overrides(&self, id: &str, o: MemoryOverrides) -> Result<(), SessionError> {
        let patch = ConversationPatch {
            memory_overrides: Some(o),
            ..Default::default()
        };
        self.patch_conversation(id, &patch).await
    }

    /// The model a conversation's next turns use (`None`: the one in Settings), kept with its
    /// overrides; read from the store so a change made elsewhere in them is kept.
    pub async fn set_model(&self, id: &str, model: Option<String>) -> Result<(), SessionError> {
        let c = self
            .store
            .get_conversation(id)
            .await?
            .ok_or(SessionError::NoConversation)?;
        let o = MemoryOverrides {
            model,
            ..c.memory_overrides
        };
        self.set_overrides(id, o).await
    }

    /// Deletes a conversation with its messages, summaries and entities (one transaction).
    pub async fn delete(&self, id: &str) -> Result<(), SessionError> {
        self.stop(id);
        self.store.delete_conversation(id).await?;
        self.store
            .delete_setting(&format!("{DRAFT_PREFIX}{id}"))
            .await
            .ok();
        self.store.set_memory_failure(id, None).await.ok();
        self.forget_branch(id).await;
        self.emit(SessionEvent::ConversationRemoved(id.to_string()));
        Ok(())
    }

    /// Clears a conversation's messages and memory, keeping the conversation itself.
    pub async fn clear(&self, id: &str) -> Result<(), SessionError> {
        self.stop(id);
        let c = self.store.clear_conversation(id, now()).await?;
        self.forget_branch(id).await;
        self.emit(SessionEvent::MessagesCleared(id.to_string()));
        self.emit(SessionEvent::ConversationChanged(c));
        self.emit(SessionEvent::MemoryChanged(id.to_string()));
        Ok(())
    }

    /// A page of messages: the last `k` (`before` = None) or the `k` before a seq. With `focus` (a
    /// message that is not among the last `k`), the `k` messages around that message instead.
    pub async fn load_page(
        &self,
        id: &str,
        before: Option<u64>,
        k: usize,
        focus: Option<&str>,
    ) -> Result<Page, SessionError> {
        if let Some(shown) = self.shown(id).await? {
            let ask = PageAsk {
                before,
                after: None,
                k,
                focus,
            };
            return Ok(page_of_branch(&shown.messages, &shown.alternatives, ask));
        }
        let read = match before {
            None => self.store.load_last(id, k + 1).await?,
            Some(seq) => self.store.load_before(id, seq, k + 1).await?,
        };
        let page = page::page_before(read, before, k);
        let Some(target) = page::focus_outside(&page, focus) else {
            return Ok(page);
        };
        match self.store.get_message(target).await? {
            Some(m) if m.conversation_id == id => {
                let half = page::half_around(k);
                let older = self.store.load_before(id, m.seq + 1, half + 1).await?;
                let newer = self.store.load_after(id, m.seq, half + 1).await?;
                Ok(page::page_around(older, newer, half))
            }
            _ => Ok(page),
        }
    }

    /// The `k` messages after seq `after` (the page below what is shown).
    pub async fn load_page_after(
        &self,
        id: &str,
        after: u64,
        k: usize,
    ) -> Result<Page, SessionError> {
        if let Some(shown) = self.shown(id).await? {
            let ask = PageAsk {
                after: Some(after),
                k,
                ..Default::default()
            };
            return Ok(page_of_branch(&shown.messages, &shown.alternatives, ask));
        }
        let read = self.store.load_after(id, after, k + 1).await?;
        Ok(page::page_after(read, k))
    }

    /// Conversations whose title matches and messages whose text matches, from the store's term
    /// indexes.
    pub async fn search(&self, query: &str) -> Result<SearchResults, SessionError> {
        let titles = self.store.search_titles(query, SEARCH_LIMIT).await?;
        let hits = self
            .store
            .search_messages(query, SEARCH_LIMIT)
            .await?
            .into_iter()
            .map(|h| SearchHit {
                conversation_id: h.conversation_id,
                title: h.title,
                message_id: h.message_id,
                role: h.role,
                snippet: h.snippet,
            })
            .collect();
        Ok(SearchResults { titles, hits })
    }

    pub async fn draft(&self, id: &str) -> Result<String, SessionError> {
        Ok(self
            .store
            .get_setting(&format!("{DRAFT_PREFIX}{id}"))
            .await?
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default())
    }

    pub async fn set_draft(&self, id: &str, text: &str) -> Result<(), SessionError> {
        let key = format!("{DRAFT_PREFIX}{id}");
        if text.is_empty() {
            self.store.delete_setting(&key).await?;
        } else {
            self.store
                .set_setting(&key, &serde_json::Value::from(text))
                .await?;
        }
        Ok(())
    }

    pub async fn storage(&self) -> Result<StorageInfo, SessionError> {
        let u = Store::storage_usage().await?;
        Ok(StorageInfo {
            usage: u.usage_bytes as u64,
            quota: u.quota_bytes as u64,
            persisted: *self.persisted.borrow(),
        })
    }

    /// Stops the reply being written in a conversation (the partial text is kept).
    pub fn stop(&self, id: &str) {
        if let Some(s) = self.inflight.borrow().get(id) {
            s.stop();
        }
    }

    /// Stores the user message, then runs the turn.
    pub async fn send(self: &Rc<Self>, id: &str, text: String) -> Result<(), SessionError> {
        if self.inflight.borrow().contains_key(id) {
            return Err(SessionError::Busy);
        }
        if !self.settings.borrow().has_endpoint() {
            return Err(SessionError::NoEndpoint);
        }
        let t = now();
        // On the branch on screen, which need not end at the newest message.
        let after = self.branch_tip(id).await?;
        let meta = crate::engine::model::MessageMeta {
            after: after.clone(),
            ..Default::default()
        };
        let user = Message::from_user(new_id("m"), id, text, t, meta);
        // With the recent history in memory, the request goes out while the message is written;
        // not on a branch, whose last message need not be the newest (the seqs predicted for the
        // write would be taken, and the request sent twice).
        let ahead = after.is_none()
            && self
                .cache
                .borrow()
                .window(id)
                .is_some_and(|w| !w.messages().is_empty());
        if ahead {
            match self.run_turn(id, Begin::Ahead(user.clone())).await {
                Err(SessionError::Conflict) => {}
                other => return other,
            }
        }
        let stored = self.store.append_message(&user).await?.message;
        self.user_message_stored(id, &stored).await?;
        self.run_turn(id, Begin::Stored(stored.id)).await
    }

    /// Reports a stored user message, then [`Session::after_user_message`].
    pub(crate) async fn user_message_stored(
        self: &Rc<Self>,
        id: &str,
        m: &Message,
    ) -> Result<(), SessionError> {
        self.emit(SessionEvent::MessageAdded(m.clone()));
        self.after_user_message(id, m).await
    }

    /// Drops a stored user message's draft (in the background: the request must not wait) and names
    /// the conversation after its first message.
    pub(crate) async fn after_user_message(
        self: &Rc<Self>,
        id: &str,
        m: &Message,
    ) -> Result<(), SessionError> {
        let this = self.clone();
        let draft_of = id.to_string();
        wasm_bindgen_futures::spawn_local(async move {
            this.set_draft(&draft_of, "").await.ok();
        });
        self.auto_title(id, &m.content).await
    }

    /// Re-sends the last user turn (after an error, a stop, or a cut-off reply).
    pub async fn retry(self: &Rc<Self>, id: &str) -> Result<(), SessionError> {
        let last_user = self.last_user_message(id, "retry").await?;
        self.run_turn(id, Begin::Stored(last_user.id)).await
    }

    /// The last user message among the recent ones, when no turn is running (`what`: the action
    /// that needs it, for the error).
    async fn last_user_message(&self, id: &str, what: &str) -> Result<Message, SessionError> {
        if self.inflight.borrow().contains_key(id) {
            return Err(SessionError::Busy);
        }
        let mut recent = self.branch_tail(id, 50).await?;
        let at = last_user_at(&recent, |m| m.role)
            .ok_or_else(|| SessionError::Invalid(format!("There is no message to {what}.")))?;
        Ok(recent.swap_remove(at))
    }

    async fn auto_title(&self, id: &str, first_text: &str) -> Result<(), SessionError> {
        let cached = self
            .cache
            .borrow()
            .window(id)
            .map(|w| w.conversation().clone());
        let c = match cached {
            Some(c) => c,
            None => self
                .store
                .get_conversation(id)
                .await?
                .ok_or(SessionError::NoConversation)?,
        };
        if !c.title.is_empty() || c.title_is_custom {
            self.emit(SessionEvent::ConversationChanged(c));
            return Ok(());
        }
        let patch = ConversationPatch {
            title: Some((title::auto_title(first_text), false)),
            ..Default::default()
        };
        self.patch_conversation(id, &patch).await
    }

    /// Lists the endpoint's models, proving the connection works.
    pub async fn test_connection(&self, s: &Settings) -> Result<Vec<String>, SessionError> {
        s.validate().map_err(SessionError::Invalid)?;
        if !s.has_endpoint() {
            return Err(SessionError::NoEndpoint);
        }
        let req = request::models_request(&s.endpoint);
        let stopper = Stopper::new();
        let timeouts = Timeouts {
            first_byte_ms: 15_000,
            idle_ms: 15_000,
        };
        let mut body = transport::open(&req, &stopper, timeouts)
            .await
            .map_err(|e| {
                SessionError::Request(transport_failure(e, &s.endpoint.base_url, false).message)
            })?;
        let text = body.read_text(4 * 1024 * 1024).await.map_err(|e| {
            SessionError::Request(transport_failure(e, &s.endpoint.base_url, false).message)
        })?;
        request::parse_models(s.endpoint.protocol, &text).map_err(|e| {
            SessionError::Request(format!(
                "The endpoint answered, but not with a model list: {e}"
            ))
        })
    }

    /// Saves what the calibration learned.
    pub(crate) async fn save_calibration(&self) {
        let v = serde_json::to_value(&*self.calibration.borrow()).ok();
        if let Some(v) = v {
            self.store.set_setting(CALIBRATION_KEY, &v).await.ok();
        }
    }

    /// Entities in scope for a conversation: its own, then the shared ones.
    pub(crate) async fn entities_for(&self, id: &str) -> Result<Vec<EntityNode>, SessionError> {
        let mut own = self
            .store
            .load_entities(&EntityScope::Conversation(id.to_string()))
            .await?;
        own.extend(self.store.load_entities(&EntityScope::Shared).await?);
        Ok(own)
    }
}

/// Turns a transport failure into the engine's classified failure.
pub(crate) fn transport_failure(
    e: TransportError,
    base_url: &str,
    resuming: bool,
) -> failure::Failure {
    match e {
        TransportError::Network(_) => failure::network_failure(base_url),
        TransportError::Http {
            status,
            retry_after,
            body,
        } => failure::classify_http(status, retry_after.as_deref(), &body, resuming, now()),
        TransportError::Timeout { first_byte } => failure::timeout(first_byte),
        TransportError::Aborted => failure::aborted(),
        TransportError::Body(detail) => failure::connection_dropped(&detail),
    }
}

/// Opens the store, one tab at a time (so one tab migrates), and marks replies left streaming as
/// interrupted, but only when no other tab is alive (another tab may be writing them right now).
/// Returns the store, how many replies were marked, and this tab's presence lock.
async fn open_store(db_name: &str) -> Result<(Store, usize, sync::LockGuard), SessionError> {
    let opening = sync::lock(&format!("memoire-open:{db_name}")).await;
    let tabs = format!("memoire-tabs:{db_name}");
    let others_alive = sync::held_elsewhere(&tabs).await == Some(true);
    let presence = sync::lock_shared(&tabs).await;
    let store = Store::open(db_name).await?;
    let interrupted = if others_alive {
        0
    } else {
        store.mark_interrupted_streams().await?
    };
    drop(opening);
    Ok((store, interrupted, presence))
}

/// Fetches the deployment's optional `config.json` (next to index.html). Missing is fine; garbage
/// is reported.
async fn load_deployment_config() -> Result<Settings, String> {
    let req = request::HttpRequest {
        method: "GET".into(),
        url: "config.json".into(),
        headers: vec![],
        body: String::new(),
    };
    let timeouts = Timeouts {
        first_byte_ms: 5_000,
        idle_ms: 5_000,
    };
    let text = match transport::open(&req, &Stopper::new(), timeouts).await {
        Ok(mut body) => body
            .read_text(256 * 1024)
            .await
            .map_err(|e| e.to_string())?,
        Err(TransportError::Http { status: 404, .. }) => return Ok(Settings::builtin()),
        Err(_) => return Ok(Settings::builtin()),
    };
    let config = settings::parse_deployment_config(&text)?;
    Ok(settings::deployment_defaults(&config))
}

/// A stored setting as `T`, read through its JSON text (see `Session::open`'s settings).
fn from_json_value<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Option<T> {
    serde_json::from_str(&serde_json::to_string(v).ok()?).ok()
}

/// The deployment's defaults (a notice when `config.json` is unusable), the settings in force, and
/// the saved token calibration.
async fn load_settings(
    store: &Store,
    sink: &EventSink,
    deployment: Result<Settings, String>,
) -> Result<(Settings, Settings, Calibration), SessionError> {
    let defaults = match deployment {
        Ok(d) => d,
        Err(e) => {
            sink(SessionEvent::Notice(e));
            Settings::builtin()
        }
    };
    // Read back through JSON text, not `from_value`: settings also arrive as text from other
    // tabs (session/sync.rs), so their deserializer is compiled once for both.
    let (saved, calibration) = join(
        store.get_setting(SETTINGS_KEY),
        store.get_setting(CALIBRATION_KEY),
    )
    .await;
    let saved: Option<Settings> = saved?.and_then(|v| from_json_value(&v));
    let settings = settings::effective(&defaults, saved.as_ref());
    let calibration: Calibration = calibration?
        .and_then(|v| from_json_value(&v))
        .unwrap_or_default();
    Ok((defaults, settings, calibration))
}
