//! Reading the branch on screen. Every stored message is kept (a regeneration or an edit is a new
//! message naming the one it replaces, a delete is a tombstone: `engine::branch`); which alternative
//! is shown is this browser's choice, kept with the settings under `branch:<conversation>` (the
//! anchor: the alternative chosen last, or null for the newest). A conversation without that key
//! has no alternatives and is read as its messages in seq order (deleted ones left out), without
//! loading all of them. Chat changes the branch (`chat/branch.rs`); prompts, pages, memory updates
//! and exports read it here. Must not import `ui`.

use super::core::Core;
use crate::engine::branch::{has_alternatives, shown_branch, Alternatives};
use crate::engine::model::Message;
use crate::store::{Store, StoreError};
use std::collections::{BTreeMap, BTreeSet, HashSet};

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

/// The anchor in the value stored under [`branch_key`]: `None` without the key.
pub(crate) fn anchor_of(value: Option<serde_json::Value>) -> Option<Option<String>> {
    value.map(|v| v.as_str().map(str::to_string))
}

impl Core {
    /// `Some(anchor)` when the conversation has alternatives (the anchor: the one chosen last).
    pub(crate) async fn anchor(&self, id: &str) -> Result<Option<Option<String>>, StoreError> {
        Ok(anchor_of(self.store.get_setting(&branch_key(id)).await?))
    }

    pub(crate) async fn set_anchor(
        &self,
        id: &str,
        anchor: Option<&str>,
    ) -> Result<(), StoreError> {
        let v = anchor.map_or(serde_json::Value::Null, serde_json::Value::from);
        self.store.set_setting(&branch_key(id), &v).await
    }

    /// Marks the conversations of messages that just arrived (an import) as having alternatives, if
    /// any of them is one; the newest alternative is then shown.
    pub(crate) async fn note_alternatives(&self, messages: &[Message]) -> Result<(), StoreError> {
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
    pub(crate) async fn shown(&self, id: &str) -> Result<Option<Shown>, StoreError> {
        let anchor = self.anchor(id).await?;
        self.shown_at(id, anchor).await
    }

    /// [`Core::shown`] with the anchor already read (the value under [`branch_key`]).
    async fn shown_at(
        &self,
        id: &str,
        anchor: Option<Option<String>>,
    ) -> Result<Option<Shown>, StoreError> {
        let Some(anchor) = anchor else {
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
    pub(crate) async fn branch_tip(&self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .shown(id)
            .await?
            .and_then(|s| s.messages.last().map(|m| m.id.clone())))
    }

    /// The last `k` messages of the branch on screen, ascending.
    pub(crate) async fn branch_tail(&self, id: &str, k: usize) -> Result<Vec<Message>, StoreError> {
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
        messages: Vec<Message>,
    ) -> Result<Vec<Message>, StoreError> {
        let anchor = self.anchor(id).await?;
        self.on_branch_at(id, anchor, messages).await
    }

    /// [`Core::on_branch`] with the value under [`branch_key`] already read (`None`: no such key;
    /// the conversation has no alternatives, and nothing more is read).
    pub(crate) async fn on_branch_at(
        &self,
        id: &str,
        anchor: Option<Option<String>>,
        mut messages: Vec<Message>,
    ) -> Result<Vec<Message>, StoreError> {
        if let Some(s) = self.shown_at(id, anchor).await? {
            let ids: HashSet<&str> = s.messages.iter().map(|m| m.id.as_str()).collect();
            messages.retain(|m| ids.contains(m.id.as_str()));
        }
        messages.retain(|m| !m.meta.deleted);
        Ok(messages)
    }

    /// The branch choice of a conversation that was deleted or cleared goes with it.
    pub(crate) async fn forget_branch(&self, id: &str) {
        self.store.delete_setting(&branch_key(id)).await.ok();
    }
}
