//! Branches, as the session carries them out: regenerate a reply, edit any user message, page
//! between alternatives, delete a message. Each keeps every stored message (a regeneration or an
//! edit is a new message naming the one it replaces, a delete is a tombstone: `engine::branch`) and
//! reports `SessionEvent::BranchChanged`, after which views and prompts read the branch on screen.
//!
//! Which alternative is shown is this browser's choice, kept with the settings under
//! `branch:<conversation>` (the anchor: the alternative chosen last, or null for the newest); a
//! conversation without that key has no alternatives and is read as its messages in seq order
//! (deleted ones left out), without loading all of them. Must not import `ui`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::rc::Rc;

use super::turn::Begin;
use super::{new_id, now, Session, SessionError, SessionEvent};
use crate::engine::branch::{has_alternatives, shown_branch, shown_messages, Alternatives};
use crate::engine::model::{Message, MessageMeta, Role};
use crate::store::{ConversationPatch, Store, StoreError};

const BRANCH_PREFIX: &str = "branch:";

/// The settings key of a conversation's chosen branch.
pub(crate) fn branch_key(conversation_id: &str) -> String {
    format!("{BRANCH_PREFIX}{conversation_id}")
}

/// The branch a conversation with alternatives shows.
pub(crate) struct Shown {
    /// Root first, deleted messages left out.
    pub messages: Vec<Message>,
    /// Where each shown message with alternatives stands among them.
    pub alternatives: BTreeMap<String, Alternatives>,
}

/// Marks a conversation as having alternatives (kept: the anchor the user chose, if any).
pub(crate) async fn mark_branched(store: &Store, id: &str) -> Result<(), StoreError> {
    if store.get_setting(&branch_key(id)).await?.is_none() {
        store
            .set_setting(&branch_key(id), &serde_json::Value::Null)
            .await?;
    }
    Ok(())
}

impl Session {
    /// `Some(anchor)` when the conversation has alternatives (the anchor: the one chosen last).
    async fn anchor(&self, id: &str) -> Result<Option<Option<String>>, SessionError> {
        Ok(self
            .store
            .get_setting(&branch_key(id))
            .await?
            .map(|v| v.as_str().map(str::to_string)))
    }

    async fn set_anchor(&self, id: &str, anchor: Option<&str>) -> Result<(), SessionError> {
        let v = anchor.map_or(serde_json::Value::Null, serde_json::Value::from);
        Ok(self.store.set_setting(&branch_key(id), &v).await?)
    }

    /// Marks the conversations of messages that just arrived (an import) as having alternatives, if
    /// any of them is one; the newest alternative is then shown.
    pub(crate) async fn note_alternatives(&self, messages: &[Message]) -> Result<(), SessionError> {
        let branched: BTreeSet<&str> = messages
            .iter()
            .filter(|m| has_alternatives(std::slice::from_ref(m)))
            .map(|m| m.conversation_id.as_str())
            .collect();
        for id in branched {
            mark_branched(&self.store, id).await?;
        }
        Ok(())
    }

    /// The branch on screen of a conversation with alternatives (`None`: it has none, and its
    /// messages in seq order are the branch).
    pub(crate) async fn shown(&self, id: &str) -> Result<Option<Shown>, SessionError> {
        let Some(anchor) = self.anchor(id).await? else {
            return Ok(None);
        };
        let all = self.store.load_all_messages(id).await?;
        let b = shown_branch(&all, anchor.as_deref());
        Ok(Some(Shown {
            messages: b.shown.iter().map(|&i| all[i].clone()).collect(),
            alternatives: b.alternatives,
        }))
    }

    /// The last message on the branch on screen of a conversation with alternatives (a new message
    /// follows it); `None` without alternatives (a new message follows the newest one).
    pub(crate) async fn branch_tip(&self, id: &str) -> Result<Option<String>, SessionError> {
        Ok(self
            .shown(id)
            .await?
            .and_then(|s| s.messages.last().map(|m| m.id.clone())))
    }

    /// The last `k` messages of the branch on screen, ascending.
    pub(crate) async fn branch_tail(
        &self,
        id: &str,
        k: usize,
    ) -> Result<Vec<Message>, SessionError> {
        let mut messages = match self.shown(id).await? {
            Some(s) => s.messages,
            None => self.store.load_last(id, k).await?,
        };
        messages.retain(|m| !m.meta.deleted);
        let excess = messages.len().saturating_sub(k);
        messages.drain(..excess);
        Ok(messages)
    }

    /// `messages` (ascending) without those off the branch on screen or deleted.
    pub(crate) async fn on_branch(
        &self,
        id: &str,
        mut messages: Vec<Message>,
    ) -> Result<Vec<Message>, SessionError> {
        if let Some(s) = self.shown(id).await? {
            let ids: HashSet<&str> = s.messages.iter().map(|m| m.id.as_str()).collect();
            messages.retain(|m| ids.contains(m.id.as_str()));
        }
        messages.retain(|m| !m.meta.deleted);
        Ok(messages)
    }

    /// A message of conversation `id` that no running turn is writing.
    async fn message_to_change(&self, id: &str, message_id: &str) -> Result<Message, SessionError> {
        if self.inflight.borrow().contains_key(id) {
            return Err(SessionError::Busy);
        }
        self.store
            .get_message(message_id)
            .await?
            .filter(|m| m.conversation_id == id && !m.meta.deleted)
            .ok_or_else(|| SessionError::Invalid("That message is gone.".into()))
    }

    /// After a change of branch: the agent's server-side session saw the old branch (it is dropped,
    /// so the next turn re-sends the branch on screen), the cached window goes, views reload.
    async fn branch_changed(&self, id: &str) -> Result<(), SessionError> {
        self.cache.borrow_mut().forget(id);
        let patch = ConversationPatch {
            remote_handle: Some(None),
            ..Default::default()
        };
        self.patch_conversation(id, &patch).await?;
        self.emit(SessionEvent::BranchChanged(id.to_string()));
        Ok(())
    }

    /// Asks the agent again for reply `reply_id`: the new reply is an alternative of it (the earlier
    /// one stays, a page away), answering the last user message before it on its branch.
    pub async fn regenerate(self: &Rc<Self>, id: &str, reply_id: &str) -> Result<(), SessionError> {
        let reply = self.message_to_change(id, reply_id).await?;
        if reply.role != Role::Assistant {
            return Err(SessionError::Invalid(
                "Only a reply can be regenerated.".into(),
            ));
        }
        if !self.settings.borrow().has_endpoint() {
            return Err(SessionError::NoEndpoint);
        }
        self.run_turn(
            id,
            Begin::Regenerate {
                replaces: reply_id.to_string(),
            },
        )
        .await
    }

    /// The branch through message `to`, ending with it, and the last user message on it before `to`.
    pub(crate) async fn branch_to(
        &self,
        id: &str,
        to: &str,
    ) -> Result<(Message, Vec<Message>), SessionError> {
        let all = self.store.load_all_messages(id).await?;
        let mut branch = shown_messages(&all, Some(to));
        let at = branch.iter().position(|m| m.id == to);
        branch.truncate(at.map_or(0, |at| at + 1));
        let user = branch
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .cloned()
            .ok_or_else(|| {
                SessionError::Invalid("The message this reply answers was deleted.".into())
            })?;
        Ok((user, branch))
    }

    /// A new alternative (`m`, stored) is the one shown from now on.
    pub(crate) async fn alternative_added(
        &self,
        id: &str,
        m: &Message,
    ) -> Result<(), SessionError> {
        self.set_anchor(id, Some(&m.id)).await?;
        // Dropped before the event: the cached window would take the new message as the next one.
        self.cache.borrow_mut().forget(id);
        self.emit(SessionEvent::MessageAdded(m.clone()));
        self.branch_changed(id).await
    }

    /// Sends `text` in place of user message `message_id`: a new message that is an alternative of
    /// it (the old one and what followed it stay, a page away), then its reply.
    pub async fn edit(
        self: &Rc<Self>,
        id: &str,
        message_id: &str,
        text: String,
    ) -> Result<(), SessionError> {
        let old = self.message_to_change(id, message_id).await?;
        if old.role != Role::User {
            return Err(SessionError::Invalid(
                "Only your own messages can be edited.".into(),
            ));
        }
        if !self.settings.borrow().has_endpoint() {
            return Err(SessionError::NoEndpoint);
        }
        let meta = MessageMeta {
            replaces: Some(message_id.to_string()),
            ..Default::default()
        };
        let edited = Message::from_user(new_id("m"), id, text, now(), meta);
        let stored = self.store.append_message(&edited).await?.message;
        self.alternative_added(id, &stored).await?;
        self.after_user_message(id, &stored).await?;
        self.run_turn(id, Begin::Stored(stored.id)).await
    }

    /// Shows alternative `message_id` (and below it, the newest of what followed it).
    pub async fn show_alternative(&self, id: &str, message_id: &str) -> Result<(), SessionError> {
        self.message_to_change(id, message_id).await?;
        self.set_anchor(id, Some(message_id)).await?;
        self.branch_changed(id).await
    }

    /// Deletes one message: its text goes, its record stays as a tombstone so nothing else moves
    /// (the messages after it stay where they are, on their branch).
    pub async fn delete_message(&self, id: &str, message_id: &str) -> Result<(), SessionError> {
        let mut m = self.message_to_change(id, message_id).await?;
        m.content.clear();
        m.meta = MessageMeta {
            deleted: true,
            tool_calls: Vec::new(),
            error: None,
            ..m.meta
        };
        self.store
            .update_message(&m.id, &m.content, m.status, &m.meta)
            .await?;
        self.emit(SessionEvent::MessageProgress(m));
        self.branch_changed(id).await
    }

    /// The branch choice of a conversation that was deleted or cleared goes with it.
    pub(crate) async fn forget_branch(&self, id: &str) {
        self.store.delete_setting(&branch_key(id)).await.ok();
    }
}
