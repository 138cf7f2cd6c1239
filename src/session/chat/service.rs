//! The chat service type, its error enum and the calls that need no file of their own.
//! Must not import `ui`.

use crate::engine::model::{Conversation, Message};
use crate::engine::tabs::Change;
use crate::engine::title;
use crate::engine::turn::{failed_turn, retry_plan};
use crate::session::memory::Memory;
use crate::session::shared::error::{
    from_read_error, ErrorKind, NO_CONVERSATION, NO_ENDPOINT, UNAVAILABLE,
};
use crate::session::shared::held::Held;
use crate::session::shared::{new_id, now, Core};
use crate::session::tools::Tools;
use crate::store::{ConversationPatch, StoreError};
use crate::transport::Stopper;
use std::collections::HashMap;
use std::rc::Rc;

const DRAFT_PREFIX: &str = "draft:";

/// The draft key of the new chat (no conversation yet): its draft is kept like a conversation's.
pub const NEW_CHAT_DRAFT: &str = "";

/// What can go wrong in a chat call. Every message says what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ChatError {
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A request failed; the text is the engine's actionable message.
    #[error("{0}")]
    Request(String),
    #[error("{}", NO_ENDPOINT)]
    NoEndpoint,
    #[error("A reply is still being written in this conversation. Wait for it, or press Stop.")]
    Busy,
    #[error("{}", NO_CONVERSATION)]
    NoConversation,
    #[error("{0}")]
    Invalid(String),
    /// The conversation changed (in another tab) while a message was being sent ahead; nothing was
    /// stored, and the send is repeated on the ordinary path.
    #[error("This conversation changed in another tab while sending. Send your message again.")]
    Conflict,
    /// A chunk of the app (turn, attach, pdf or edits) could not be fetched; the next try fetches it
    /// again.
    #[error("{}", UNAVAILABLE)]
    Unavailable,
    /// The server refused the prompt as longer than its context and said how much it holds: the
    /// turn goes again at once, fitted to that (never shown: `Chat::run_turn` sends again).
    #[error("The server's context is smaller than Settings say; sending again, fitted to it.")]
    Refitted,
}

impl From<wasm_split_helpers::SplitLoaderError> for ChatError {
    fn from(_: wasm_split_helpers::SplitLoaderError) -> Self {
        ChatError::Unavailable
    }
}

from_read_error!(ChatError);

impl ChatError {
    /// What the error is about (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            ChatError::Request(_) | ChatError::NoEndpoint => ErrorKind::Request,
            _ => ErrorKind::Other,
        }
    }
}

/// Why a temporary chat takes no attachment.
const TEMPORARY_ATTACHMENTS: &str = "A temporary chat keeps nothing in storage, so it cannot carry images or files. Remove them, or send them in an ordinary conversation.";

/// How a turn begins.
pub(crate) enum Begin {
    /// The user message (this id) is stored: a send on the ordinary path, a retry, an edit.
    Stored(String),
    /// A retry of user message `user` whose reply takes the place of the failed reply `replaces`
    /// (see `engine::turn::retry_plan`).
    Retry { user: String, replaces: String },
    /// A regeneration of reply `replaces`: the prompt is the branch up to it (its last user message
    /// is the one answered), and the new reply is an alternative of it.
    Regenerate { replaces: String },
    /// A new user message, not stored yet: it is written together with the reply placeholder, at
    /// the seqs the cached window predicts, while the request goes out (see [`Session::write_ahead`]).
    Ahead(Message),
    /// A message (this id) of the temporary chat, kept in memory: its reply is too, and nothing of
    /// the turn is stored (see `temporary.rs`).
    Temporary(String),
    /// Continue reply `reply` (cut by the reply cap): the prompt is the branch up to the user
    /// message it answers, and what comes is appended to it (`engine::turn::Turn::continue_reply`).
    Continue { reply: String },
}

/// The temporary chat (`temporary.rs`): its record and every message, ascending.
#[derive(Default)]
pub(crate) struct Temporary {
    pub(super) conversation: Option<Conversation>,
    pub(super) messages: Vec<Message>,
}

/// The chat service. One per page.
pub struct Chat {
    pub(super) core: Rc<Core>,
    pub(super) memory: Rc<Memory>,
    /// The tools a turn offers, their calls and the user's answers (`session/tools/`).
    pub(super) tools: Rc<Tools>,
    /// What the service remembers between its awaits.
    pub(super) state: Held<ChatState>,
}

/// What the chat service remembers between its awaits, in one value.
#[derive(Default)]
pub(super) struct ChatState {
    /// Turns in flight, by conversation.
    pub(super) inflight: HashMap<String, Stopper>,
    /// The temporary chat, if one is open (never stored).
    pub(super) temporary: Temporary,
    /// Each conversation's draft as this tab last read or stored it: saving the same text again
    /// writes nothing. The composer's pause and the page's hiding save what is there, which is
    /// most often what is stored already (a readwrite transaction at every start, and one in the
    /// way of the next page's start at every reload).
    drafts: HashMap<String, String>,
}

impl Chat {
    pub(crate) fn new(core: Rc<Core>, memory: Rc<Memory>, tools: Rc<Tools>) -> Self {
        Chat {
            core,
            memory,
            tools,
            state: Held::default(),
        }
    }

    /// The stored draft of conversation `id` (empty: the new chat's; a temporary chat has none).
    pub async fn draft(&self, id: &str) -> Result<String, ChatError> {
        if self.is_temporary(id) {
            return Ok(String::new());
        }
        let text = self
            .core
            .store
            .get_setting(&format!("{DRAFT_PREFIX}{id}"))
            .await?
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let kept = text.clone();
        self.state.with(|s| s.drafts.insert(id.to_string(), kept));
        Ok(text)
    }

    /// Keeps the composer's draft of conversation `id` (not a temporary chat's: nothing of it is
    /// stored); nothing is written when it is the text this tab last read or stored there.
    pub async fn set_draft(&self, id: &str, text: &str) -> Result<(), ChatError> {
        let same = self
            .state
            .with(|s| s.drafts.get(id).map(String::as_str) == Some(text));
        if self.is_temporary(id) || same {
            return Ok(());
        }
        let key = format!("{DRAFT_PREFIX}{id}");
        if text.is_empty() {
            self.core.store.delete_setting(&key).await?;
        } else {
            self.core
                .store
                .set_setting(&key, &serde_json::Value::from(text))
                .await?;
        }
        (self.state).with(|s| s.drafts.insert(id.to_string(), text.to_string()));
        Ok(())
    }

    /// Deletes the stored draft of conversation `id`, whatever this tab last knew of it (the
    /// conversation is going: another tab may have stored a draft since).
    pub async fn drop_draft(&self, id: &str) -> Result<(), ChatError> {
        self.state.with(|s| s.drafts.remove(id));
        self.set_draft(id, "").await
    }

    /// Whether a turn of conversation `id` runs in this tab.
    pub(super) fn running(&self, id: &str) -> bool {
        self.state.with(|s| s.inflight.contains_key(id))
    }

    /// Stops the reply being written in a conversation (the partial text is kept).
    pub fn stop(&self, id: &str) {
        // Stopped outside the state: what stopping wakes may call back into the service.
        if let Some(s) = self.state.with(|s| s.inflight.get(id).cloned()) {
            s.stop();
        }
    }

    /// Stores the user message, then runs the turn.
    pub async fn send(self: &Rc<Self>, id: &str, text: String) -> Result<(), ChatError> {
        self.send_with(id, text, Vec::new()).await
    }

    /// [`Chat::send`] with images and files (made by [`Chat::attach`], whose Blobs are stored).
    pub async fn send_with(
        self: &Rc<Self>,
        id: &str,
        text: String,
        attachments: Vec<crate::engine::model::Attachment>,
    ) -> Result<(), ChatError> {
        if self.running(id) {
            return Err(ChatError::Busy);
        }
        if !self.core.settings.borrow().has_endpoint() {
            return Err(ChatError::NoEndpoint);
        }
        if self.is_temporary(id) {
            if !attachments.is_empty() {
                return Err(ChatError::Invalid(TEMPORARY_ATTACHMENTS.into()));
            }
            return self.send_temporary(id, text).await;
        }
        let t = now();
        // On the branch on screen, which need not end at the newest message.
        let after = self.core.branch_tip(id).await?;
        if attachments.is_empty() {
            if let Some(failed) = self.failed_question(id, after.is_none()).await? {
                return self.edit(id, &failed, text).await;
            }
        }
        let meta = crate::engine::model::MessageMeta {
            after: after.clone(),
            attachments,
            ..Default::default()
        };
        let user = Message::from_user(new_id("m"), id, text, t, meta);
        // With the recent history in memory, the request goes out while the message is written;
        // not on a branch, whose last message need not be the newest (the seqs predicted for the
        // write would be taken, and the request sent twice).
        let ahead = after.is_none()
            && self
                .core
                .cache
                .borrow()
                .window(id)
                .is_some_and(|w| !w.messages().is_empty());
        // Without the turn chunk (split point `turn`), the message is stored first: the turn then
        // fails with nothing sent, and Retry sends it once the chunk can be fetched.
        if ahead && self.preload_turn().await.is_ok() {
            match self.run_turn(id, Begin::Ahead(user.clone())).await {
                Err(ChatError::Conflict) => {}
                other => return other,
            }
        }
        let stored = self.core.store.append_message(&user).await?.message;
        self.user_message_stored(id, &stored).await?;
        self.run_turn(id, Begin::Stored(stored.id)).await
    }

    /// Reports a stored user message, then [`Session::after_user_message`].
    pub(crate) async fn user_message_stored(
        self: &Rc<Self>,
        id: &str,
        m: &Message,
    ) -> Result<(), ChatError> {
        self.core.emit(Change::MessageAdded(m.clone()));
        self.after_user_message(id, m).await
    }

    /// Drops a stored user message's draft and takes in what it says about the user (in the
    /// background: the request must not wait), and names the conversation after its first message.
    pub(crate) async fn after_user_message(
        self: &Rc<Self>,
        id: &str,
        m: &Message,
    ) -> Result<(), ChatError> {
        let (this, said) = (self.clone(), m.clone());
        let draft_of = id.to_string();
        wasm_bindgen_futures::spawn_local(async move {
            this.set_draft(&draft_of, "").await.ok();
            // What it says about the user is theirs in every conversation (a failure here loses
            // nothing: the message is stored, and the next memory update reads it again).
            this.memory.user_said(&said).await.ok();
        });
        self.auto_title(id, &m.content).await
    }

    /// Re-sends the last user turn (after an error, a stop, or a cut-off reply); a failed reply
    /// that ends the branch is replaced by the new one (`engine::turn::retry_plan`).
    pub async fn retry(self: &Rc<Self>, id: &str) -> Result<(), ChatError> {
        if self.is_temporary(id) {
            if self.running(id) {
                return Err(ChatError::Busy);
            }
            let user = self.last_temporary_user(id)?;
            return self.run_turn(id, Begin::Temporary(user)).await;
        }
        if self.running(id) {
            return Err(ChatError::Busy);
        }
        let branch = self.core.branch_tail(id, 50).await?;
        let plan = retry_plan(&branch)
            .ok_or_else(|| ChatError::Invalid("There is no message to retry.".into()))?;
        let begin = match plan.replaces {
            Some(replaces) => Begin::Retry {
                user: plan.user_id,
                replaces,
            },
            None => Begin::Stored(plan.user_id),
        };
        self.run_turn(id, begin).await
    }

    /// The question of a failed turn that ends the branch on screen, if one does
    /// (`engine::turn::failed_turn`): a new message takes its place. `newest`: the branch ends at
    /// the newest message, so the cached window (when there is one) says.
    async fn failed_question(&self, id: &str, newest: bool) -> Result<Option<String>, ChatError> {
        let cached = newest
            .then(|| {
                let cache = self.core.cache.borrow();
                let w = cache.window(id)?;
                Some(failed_turn(w.messages()).map(|m| m.id.clone()))
            })
            .flatten();
        Ok(match cached {
            Some(found) => found,
            None => failed_turn(&self.core.branch_tail(id, 8).await?).map(|m| m.id.clone()),
        })
    }

    async fn auto_title(&self, id: &str, first_text: &str) -> Result<(), ChatError> {
        let cached = self
            .core
            .cache
            .borrow()
            .window(id)
            .map(|w| w.conversation().clone());
        let c = match cached {
            Some(c) => c,
            None => self.core.conversation(id).await?,
        };
        if !c.title.is_empty() || c.title_is_custom {
            self.core.emit(Change::Conversation(c));
            return Ok(());
        }
        let patch = ConversationPatch {
            title: Some((title::auto_title(first_text), false)),
            ..Default::default()
        };
        Ok(self.core.patch_conversation(id, &patch).await?)
    }
}
