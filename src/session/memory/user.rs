//! Facts about the user, across conversations: taken in from what the user says (each stored user
//! message, when "Remember me across conversations" is on) and the Memory page's reads and edits
//! (forget, edit, add). Which sentences are facts, what a new one makes past and what forgetting
//! means are the engine's (`engine::memory::user`). Every change runs under one Web Lock for every
//! tab, reading the facts from the store inside it, so two messages (or two tabs) never write over
//! each other's facts. Must not import `ui`.

use super::service::{Memory, MemoryError};
use crate::engine::memory::user;
use crate::engine::model::{Message, UserFact};
use crate::session::shared::events::SessionEvent;
use crate::session::shared::{new_id, now, tabs};
use std::collections::HashMap;

impl Memory {
    /// Takes in what the user said in `m` (a stored user message), when memory about the user is
    /// on.
    pub(crate) async fn user_said(&self, m: &Message) -> Result<(), MemoryError> {
        if !self.core.settings.borrow().memory.user_memory {
            return Ok(());
        }
        self.change_facts(|facts| {
            user::handle_said(
                facts,
                &m.conversation_id,
                &m.id,
                &m.content,
                m.created_at,
                || new_id("f"),
            )
        })
        .await
        .map(|_| ())
    }

    /// Takes in what the user said in a memory update's span, when memory about the user is on.
    pub(crate) async fn user_span(&self, messages: &[Message]) -> Result<(), MemoryError> {
        if !self.core.settings.borrow().memory.user_memory {
            return Ok(());
        }
        self.change_facts(|facts| user::handle_messages(facts, messages, || new_id("f")))
            .await
            .map(|_| ())
    }

    /// Every fact about the user (current, past and forgotten), for the Memory page.
    pub async fn user_facts(&self) -> Result<Vec<UserFact>, MemoryError> {
        Ok(self.core.user_facts().await?.to_vec())
    }

    /// Forgets a fact: it leaves every prompt and every synced device, and the same sentence from
    /// the same message is not taken in again.
    pub async fn forget_fact(&self, id: &str) -> Result<(), MemoryError> {
        let at = now();
        self.change_facts(|facts| user::forget(facts, id, at))
            .await?;
        Ok(())
    }

    /// Replaces a fact's text with the user's words.
    pub async fn edit_fact(&self, id: &str, text: &str) -> Result<(), MemoryError> {
        let at = now();
        self.change_facts(|facts| user::edit(facts, id, text, at))
            .await?;
        Ok(())
    }

    /// Adds a fact the user wrote ("Remember that I …"); an empty one, or one already current, is
    /// said so.
    pub async fn add_fact(&self, text: &str) -> Result<(), MemoryError> {
        let at = now();
        let added = self
            .change_facts(|facts| user::add(facts, text, at, new_id("f")))
            .await?;
        if !added {
            return Err(MemoryError::Invalid(
                "Nothing to add: write a sentence about you that is not there yet.".into(),
            ));
        }
        Ok(())
    }

    /// Applies `change` to the facts as stored (under the lock), writes the ones it changed and
    /// reports it; returns whether anything changed.
    async fn change_facts(
        &self,
        change: impl FnOnce(&mut Vec<UserFact>) -> bool,
    ) -> Result<bool, MemoryError> {
        let store = &self.core.store;
        let _lock = tabs::lock(&format!("memoire-user-facts:{}", store.name())).await;
        let mut facts = store.load_user_facts().await?;
        let before: HashMap<String, UserFact> =
            facts.iter().map(|f| (f.id.clone(), f.clone())).collect();
        if !change(&mut facts) {
            return Ok(false);
        }
        let changed: Vec<&UserFact> = facts
            .iter()
            .filter(|f| before.get(&f.id) != Some(*f))
            .collect();
        store.save_user_facts(&changed).await?;
        self.core.emit(SessionEvent::UserFactsChanged);
        Ok(true)
    }
}
