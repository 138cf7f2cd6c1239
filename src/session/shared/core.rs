//! [`Core`]: the state every service shares, and the clock and ids. Must not import `ui`.

use super::cache::Cache;
use super::error::ReadError;
use super::events::{EventSink, SessionEvent};
use super::tabs;
use crate::engine::failure;
use crate::engine::model::{Conversation, EntityNode, EntityScope};
use crate::engine::prefix::{Anchor, LastPrompt};
use crate::engine::settings::Settings;
use crate::engine::slots::LlamaServer;
use crate::engine::tabs::Change;
use crate::engine::tokens::Calibration;
use crate::store::{ConversationPatch, Store, StoreError};
use crate::transport::TransportError;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// Settings keys.
pub(crate) const SETTINGS_KEY: &str = "settings";
pub(crate) const CALIBRATION_KEY: &str = "calibration";

/// What sees the local changes of this tab (sync, which captures them to replicate): never the
/// changes sync itself applied ([`Core::applied`]), so nothing echoes back.
pub(crate) trait Capture {
    /// This tab changed shared data.
    fn changed(&self, c: &Change);
    /// The user deleted entity `entity` of conversation `conversation`'s scope (or shared).
    fn entity_deleted(&self, conversation: &str, entity: &str);
}

/// What is known of each server (`super::slots`), by its `/props` URL and the key sent there.
pub(crate) type Servers = Rc<RefCell<HashMap<String, Known>>>;

/// The context windows servers said they hold when they refused a prompt, by
/// `EndpointProfile::key`.
pub(crate) type Windows = RefCell<HashMap<String, u32>>;

/// What a server said, or that it is being asked.
pub(crate) enum Known {
    Asking,
    Answered(Option<LlamaServer>),
    /// No answer at all, at this time.
    Unreachable(i64),
}

/// The shared core. One per page, behind an `Rc` every service holds.
pub(crate) struct Core {
    pub store: Store,
    pub(super) sink: EventSink,
    /// Shared with the channel's receiver, which applies settings saved in another tab.
    pub settings: Rc<RefCell<Settings>>,
    /// The deployment's defaults (what "reset" goes back to).
    pub defaults: Settings,
    pub calibration: RefCell<Calibration>,
    /// Whether the browser granted persistent storage (false until it answers: the opening does
    /// not wait for that).
    pub persisted: Rc<Cell<bool>>,
    /// Carries shared events to the other tabs of this database (None without BroadcastChannel).
    pub(super) channel: Option<tabs::Channel>,
    /// Sync's capture of local changes (set when sync starts).
    pub(super) capture: RefCell<Option<Rc<dyn Capture>>>,
    /// Held (shared) while this tab lives, so other tabs know it may be streaming.
    pub(super) _presence: tabs::LockGuard,
    /// Recent history and memory per conversation, so prompts are built without reading storage.
    pub cache: Rc<RefCell<Cache>>,
    /// Per conversation, what its prompt holds from turn to turn and the chat prompt its server
    /// last read (`engine::prefix`); never stored: a reload starts afresh.
    pub prompts: RefCell<HashMap<String, Prompts>>,
    /// What each endpoint's server said about its slots (`super::slots`); never stored.
    pub(super) servers: Servers,
    /// What each server said its context holds when it refused a prompt; never stored.
    pub(super) windows: Windows,
    /// The MCP servers' connections (`session/mcp`'s, made on first use); never stored.
    pub mcp: std::cell::OnceCell<Rc<dyn std::any::Any>>,
}

/// What a conversation's prompts keep between requests (`engine::prefix`).
#[derive(Default)]
pub(crate) struct Prompts {
    /// What the next chat prompt holds to.
    pub anchor: Option<Anchor>,
    /// The chat prompt the server last read and its reply: what a memory update continues.
    pub last: Option<LastPrompt>,
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

impl Core {
    /// Sync's capture of local changes, from now on.
    pub(crate) fn set_capture(&self, capture: Rc<dyn Capture>) {
        *self.capture.borrow_mut() = Some(capture);
    }

    /// Reports a change this tab made: to the cache, to sync's capture, to the other tabs (when it
    /// describes shared data) and to this tab's UI.
    pub(crate) fn emit(&self, e: impl Into<SessionEvent>) {
        let e = e.into();
        if let (SessionEvent::Shared(c), Some(capture)) = (&e, self.capture.borrow().clone()) {
            capture.changed(c);
        }
        self.deliver(e)
    }

    /// Reports to this tab's UI only what belongs to no stored data (a temporary chat's messages):
    /// no cache, other tab or sync hears it.
    pub(crate) fn show(&self, e: impl Into<SessionEvent>) {
        (self.sink)(e.into())
    }

    /// Reports a change sync applied from another device: as [`Core::emit`], but not captured
    /// again.
    pub(crate) fn applied(&self, e: impl Into<SessionEvent>) {
        self.deliver(e.into())
    }

    /// An event of this tab to its audiences: the cache and the other tabs (a change of shared
    /// data), this tab's UI.
    fn deliver(&self, e: SessionEvent) {
        if let SessionEvent::Shared(c) = &e {
            self.cache.borrow_mut().observe_own(c);
            // What a conversation's prompts held goes with its messages.
            if let Change::ConversationRemoved(id) | Change::MessagesCleared(id) = c {
                self.prompts.borrow_mut().remove(id);
            }
            if let Some(channel) = &self.channel {
                channel.post(c.clone());
            }
        }
        (self.sink)(e)
    }

    /// The user deleted an entity: sync captures its tombstone.
    pub(crate) fn entity_deleted(&self, conversation: &str, entity: &str) {
        let capture = self.capture.borrow().clone();
        if let Some(capture) = capture {
            capture.entity_deleted(conversation, entity);
        }
    }

    /// A stored conversation's record; [`ReadError::NoConversation`] when it is gone.
    pub(crate) async fn conversation(&self, id: &str) -> Result<Conversation, ReadError> {
        self.store
            .get_conversation(id)
            .await?
            .ok_or(ReadError::NoConversation)
    }

    /// The settings in force.
    pub(crate) fn settings(&self) -> Settings {
        self.settings.borrow().clone()
    }

    /// Writes a change of a conversation record and reports the record as stored.
    pub(crate) async fn patch_conversation(
        &self,
        id: &str,
        patch: &ConversationPatch,
    ) -> Result<(), StoreError> {
        let c = self.store.update_conversation(id, patch).await?;
        self.emit(Change::Conversation(c));
        Ok(())
    }

    /// Saves what the calibration learned.
    pub(crate) async fn save_calibration(&self) {
        let v = serde_json::to_value(&*self.calibration.borrow()).ok();
        if let Some(v) = v {
            self.store.set_setting(CALIBRATION_KEY, &v).await.ok();
        }
    }

    /// Entities in scope for a conversation: its own, then the shared ones.
    pub(crate) async fn entities_for(&self, id: &str) -> Result<Vec<EntityNode>, StoreError> {
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
        TransportError::TooSlow { .. } => failure::timeout(false),
        TransportError::TooLarge { limit } => {
            failure::connection_dropped(&format!("the answer was larger than {limit} bytes"))
        }
        TransportError::Redirected => failure::redirected(base_url),
    }
}
