//! Changing the branch on screen: regenerate a reply, edit any user message, page between
//! alternatives, delete a message; and continue a reply cut by the reply cap (the same message
//! grows, `engine::turn::Turn::continue_reply`). Each keeps every stored message (`engine::branch`; reading the
//! branch is `shared/branch.rs`) and reports `Change::BranchChanged`, after which views and
//! prompts read the branch on screen. Deleting a message is behind split point `edits`. Must not
//! import `ui`.

use super::service::{Begin, Chat, ChatError};
use crate::engine::branch::shown_messages;
use crate::engine::model::{Message, MessageMeta, Role};
use crate::engine::tabs::Change;
use crate::session::shared::error::Boxed;
use crate::session::shared::{new_id, now};
use crate::store::ConversationPatch;
use std::rc::Rc;

impl Chat {
    /// A message of conversation `id` that no running turn is writing.
    async fn message_to_change(&self, id: &str, message_id: &str) -> Result<Message, ChatError> {
        if self.running(id) {
            return Err(ChatError::Busy);
        }
        self.core
            .store
            .get_message(message_id)
            .await?
            .filter(|m| m.conversation_id == id && !m.meta.deleted)
            .ok_or_else(|| ChatError::Invalid("That message is gone.".into()))
    }

    /// After a change of branch: the agent's server-side session saw the old branch (it is dropped,
    /// so the next turn re-sends the branch on screen), the cached window goes, views reload.
    async fn branch_changed(&self, id: &str) -> Result<(), ChatError> {
        self.core.cache.borrow_mut().forget(id);
        let patch = ConversationPatch {
            remote_handle: Some(None),
            ..Default::default()
        };
        self.core.patch_conversation(id, &patch).await?;
        self.core.emit(Change::BranchChanged(id.to_string()));
        Ok(())
    }

    /// Asks the agent again for reply `reply_id`: the new reply is an alternative of it (the earlier
    /// one stays, a page away), answering the last user message before it on its branch.
    pub async fn regenerate(self: &Rc<Self>, id: &str, reply_id: &str) -> Result<(), ChatError> {
        let reply = self.message_to_change(id, reply_id).await?;
        if reply.role != Role::Assistant {
            return Err(ChatError::Invalid(
                "Only a reply can be regenerated.".into(),
            ));
        }
        if !self.core.settings.borrow().has_endpoint() {
            return Err(ChatError::NoEndpoint);
        }
        self.run_turn(
            id,
            Begin::Regenerate {
                replaces: reply_id.to_string(),
            },
        )
        .await
    }

    /// Continue: asks the agent for the rest of reply `reply_id`, which the reply cap cut
    /// (`MessageMeta::capped`); what comes is appended to the same reply.
    pub async fn continue_reply(
        self: &Rc<Self>,
        id: &str,
        reply_id: &str,
    ) -> Result<(), ChatError> {
        let reply = self.message_to_change(id, reply_id).await?;
        if reply.role != Role::Assistant || !reply.meta.capped {
            return Err(ChatError::Invalid(
                "Only a reply cut by the reply cap can be continued.".into(),
            ));
        }
        if !self.core.settings.borrow().has_endpoint() {
            return Err(ChatError::NoEndpoint);
        }
        let reply = reply_id.to_string();
        self.run_turn(id, Begin::Continue { reply }).await
    }

    /// The branch through message `to`, ending with it, and the last user message on it before `to`.
    pub(crate) async fn branch_to(
        &self,
        id: &str,
        to: &str,
    ) -> Result<(Message, Vec<Message>), ChatError> {
        let all = self.core.store.load_all_messages(id).await?;
        let mut branch = shown_messages(&all, Some(to));
        let at = branch.iter().position(|m| m.id == to);
        branch.truncate(at.map_or(0, |at| at + 1));
        let user = branch
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .cloned()
            .ok_or_else(|| {
                ChatError::Invalid("The message this reply answers was deleted.".into())
            })?;
        Ok((user, branch))
    }

    /// A new alternative (`m`, stored) is the one shown from now on.
    pub(crate) async fn alternative_added(&self, id: &str, m: &Message) -> Result<(), ChatError> {
        self.core.set_anchor(id, Some(&m.id)).await?;
        // Dropped before the event: the cached window would take the new message as the next one.
        self.core.cache.borrow_mut().forget(id);
        self.core.emit(Change::MessageAdded(m.clone()));
        self.branch_changed(id).await
    }

    /// Sends `text` in place of user message `message_id`: a new message that is an alternative of
    /// it (the old one and what followed it stay, a page away), then its reply.
    pub async fn edit(
        self: &Rc<Self>,
        id: &str,
        message_id: &str,
        text: String,
    ) -> Result<(), ChatError> {
        let old = self.message_to_change(id, message_id).await?;
        if old.role != Role::User {
            return Err(ChatError::Invalid(
                "Only your own messages can be edited.".into(),
            ));
        }
        if !self.core.settings.borrow().has_endpoint() {
            return Err(ChatError::NoEndpoint);
        }
        // The edit changes the words; the images and files stay with the message.
        let meta = MessageMeta {
            replaces: Some(message_id.to_string()),
            attachments: old.meta.attachments.clone(),
            ..Default::default()
        };
        let edited = Message::from_user(new_id("m"), id, text, now(), meta);
        let stored = self.core.store.append_message(&edited).await?.message;
        self.alternative_added(id, &stored).await?;
        self.after_user_message(id, &stored).await?;
        self.run_turn(id, Begin::Stored(stored.id)).await
    }

    /// Shows alternative `message_id` (and below it, the newest of what followed it).
    pub async fn show_alternative(&self, id: &str, message_id: &str) -> Result<(), ChatError> {
        self.message_to_change(id, message_id).await?;
        self.core.set_anchor(id, Some(message_id)).await?;
        self.branch_changed(id).await
    }

    /// Deletes one message: its text goes, its record stays as a tombstone so nothing else moves
    /// (the messages after it stay where they are, on their branch). Behind split point `edits`.
    pub async fn delete_message(&self, id: &str, message_id: &str) -> Result<(), ChatError> {
        delete_message_split(self, id, message_id).await
    }

    async fn delete_message_now(&self, id: &str, message_id: &str) -> Result<(), ChatError> {
        let mut m = self.message_to_change(id, message_id).await?;
        m.content.clear();
        let gone: Vec<String> = m.meta.attachments.iter().map(|a| a.hash.clone()).collect();
        m.meta = MessageMeta {
            deleted: true,
            tool_calls: Vec::new(),
            error: None,
            // Its images and files go with its text (an image no other message shows is freed).
            attachments: Vec::new(),
            ..m.meta
        };
        self.core
            .store
            .update_message(&m.id, &m.content, m.status, &m.meta)
            .await?;
        self.core.store.free_attachment_blobs(&gone).await?;
        self.core.emit(Change::MessageProgress(m));
        self.branch_changed(id).await
    }
}

/// Split point `edits` (`library/mod.rs`): deleting a message.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(edits, fallible, return_wrapper(let future = _; { future.await } -> Result<(), ChatError>)))]
fn delete_message_split<'a>(
    chat: &'a Chat,
    id: &'a str,
    message_id: &'a str,
) -> Boxed<'a, (), ChatError> {
    Box::pin(chat.delete_message_now(id, message_id))
}
