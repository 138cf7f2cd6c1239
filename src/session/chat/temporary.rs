//! Temporary chats, held in this page's memory only (what one may use: `engine::temporary`). One at
//! a time: starting another, or leaving it, ends it and stops its reply. Its messages reach this
//! tab's UI and nothing else (`Core::show`): no store write, no cache, no other tab, no sync. It has
//! no draft, title, memory update or fact taken from what is said in it. Must not import `ui`.

use super::service::{Begin, Chat, ChatError, Temporary};
use super::turn::Context;
use crate::engine::model::{Conversation, EntityScope, Message, Role};
use crate::engine::settings::history_load_limit;
use crate::engine::tabs::Change;
use crate::engine::temporary;
use crate::session::shared::cache::MemoryParts;
use crate::session::shared::{new_id, now};
use std::rc::Rc;

impl Chat {
    /// Starts a temporary chat (ending the one before) answering with `model` (`None`: as in
    /// Settings). Nothing of it is ever stored.
    pub fn start_temporary(&self, model: Option<String>) -> Conversation {
        self.end_temporary();
        let c = temporary::conversation(new_id("t"), now(), model);
        let open = Temporary {
            conversation: Some(c.clone()),
            messages: Vec::new(),
        };
        self.state.with(|s| s.temporary = open);
        c
    }

    /// Ends the temporary chat, if one is open: its reply stops and its messages are gone.
    pub fn end_temporary(&self) {
        let ended = self
            .state
            .with(|s| std::mem::take(&mut s.temporary).conversation);
        if let Some(c) = ended {
            self.stop(&c.id);
        }
    }

    /// True when `id` is the temporary chat.
    pub fn is_temporary(&self, id: &str) -> bool {
        self.state.with(|s| {
            s.temporary
                .conversation
                .as_ref()
                .is_some_and(|c| c.id == id)
        })
    }

    /// "Use memory about me" in the temporary chat `id`; the record as it now is.
    pub fn use_memory_in_temporary(&self, id: &str, on: bool) -> Result<Conversation, ChatError> {
        self.change_temporary(id, |c| temporary::use_memory(c, on))
    }

    /// The model the temporary chat `id` answers with from its next turn (`None`: as in Settings);
    /// the record as it now is.
    pub fn set_temporary_model(
        &self,
        id: &str,
        model: Option<String>,
    ) -> Result<Conversation, ChatError> {
        self.change_temporary(id, |c| c.memory_overrides.model = model)
    }

    /// Sends `text` in the temporary chat `id`: kept in memory, shown, answered.
    pub(super) async fn send_temporary(
        self: &Rc<Self>,
        id: &str,
        text: String,
    ) -> Result<(), ChatError> {
        let (seq, meta) = self
            .state
            .with(|s| temporary::next_meta(&s.temporary.messages));
        let mut user = Message::from_user(new_id("m"), id, text, now(), meta);
        user.seq = seq;
        self.keep_temporary(&user, true);
        self.run_turn(id, Begin::Temporary(user.id)).await
    }

    /// The temporary chat's last user message, for a retry.
    pub(super) fn last_temporary_user(&self, id: &str) -> Result<String, ChatError> {
        let last = self.state.with(|s| {
            let t = &s.temporary;
            crate::engine::history::last_user_at(&t.messages, |m| m.role)
                .filter(|_| t.conversation.as_ref().is_some_and(|c| c.id == id))
                .map(|at| t.messages[at].id.clone())
        });
        last.ok_or_else(|| ChatError::Invalid("There is no message to retry.".into()))
    }

    /// Message `message_id` of the temporary chat `id`, if it is a user's.
    pub(super) fn temporary_message(
        &self,
        id: &str,
        message_id: &str,
    ) -> Result<Message, ChatError> {
        let found = self.state.with(|s| {
            (s.temporary.messages.iter())
                .find(|m| m.id == message_id && m.conversation_id == id && m.role == Role::User)
                .cloned()
        });
        found.ok_or_else(|| ChatError::Invalid("The message to send is gone.".into()))
    }

    /// Keeps message `m` of the temporary chat (new, or a new state of one) and shows it. A message
    /// of a temporary chat that has ended is dropped.
    pub(crate) fn keep_temporary(&self, m: &Message, added: bool) {
        let kept = self.state.with(|s| {
            let Temporary {
                conversation,
                messages,
            } = &mut s.temporary;
            let Some(c) = conversation.as_mut().filter(|c| c.id == m.conversation_id) else {
                return false;
            };
            temporary::keep(c, messages, m);
            true
        });
        if !kept {
            return;
        }
        self.core.show(if added {
            Change::MessageAdded(m.clone())
        } else {
            Change::MessageProgress(m.clone())
        });
    }

    /// Changes the temporary chat `id`'s record; the record as it now is.
    pub(crate) fn change_temporary(
        &self,
        id: &str,
        change: impl FnOnce(&mut Conversation),
    ) -> Result<Conversation, ChatError> {
        self.state.with(|s| {
            let c = (s.temporary.conversation.as_mut())
                .filter(|c| c.id == id)
                .ok_or(ChatError::NoConversation)?;
            change(c);
            Ok(c.clone())
        })
    }

    /// The prompt of the temporary chat `id` for `new_message` (one of its messages, or the draft):
    /// its own messages, and memory only when asked for and Settings allow it.
    pub(super) async fn temporary_context(
        &self,
        id: &str,
        new_message: &Message,
    ) -> Result<Context, ChatError> {
        let (conversation, messages) = self.state.with(|s| {
            let t = &s.temporary;
            let c = (t.conversation.clone())
                .filter(|c| c.id == id)
                .ok_or(ChatError::NoConversation)?;
            let config = self.core.config_for(&c);
            let history = temporary::history(&t.messages, history_load_limit(&config));
            Ok::<_, ChatError>((c, history))
        })?;
        let config = self.core.config_for(&conversation);
        // The facts about the user and recall follow the same switch (`about_user` reads `config`).
        let memory = MemoryParts {
            summary: None,
            entities: if temporary::uses_memory(&conversation, &self.core.settings.borrow().memory)
            {
                self.core.store.load_entities(&EntityScope::Shared).await?
            } else {
                Vec::new()
            },
        };
        let about = self.about_user(&conversation, &config, new_message).await?;
        Ok(self.assemble_context(
            conversation,
            messages,
            config,
            new_message,
            (&memory, &about),
        ))
    }
}
