//! Loading what a prompt needs into the cache ([`super::cache`]): a conversation's recent history on
//! the branch on screen, its latest summary and the entities in scope, the facts about the user.
//! Chat turns, previews and
//! memory updates read through here. Must not import `ui`.

use super::cache::MemoryParts;
use super::core::Core;
use super::error::ReadError;
use crate::engine::model::{Conversation, MemoryConfig, Message, UserFact};
use crate::engine::settings::history_load_limit;
use crate::engine::window::HistoryWindow;
use std::rc::Rc;

impl Core {
    /// The conversation, its recent history on the branch on screen (as much as its config asks
    /// for, deleted messages left out) and that config: from the cached window, else from the store
    /// (and then cached).
    pub(crate) async fn recent(
        &self,
        id: &str,
    ) -> Result<(Conversation, Vec<Message>, MemoryConfig), ReadError> {
        if let Some(w) = self.cache.borrow().window(id) {
            let config = self.config_for(w.conversation());
            let limit = history_load_limit(&config);
            if w.serves(limit) {
                let shown = w.last(limit).iter().filter(|m| !m.meta.deleted);
                return Ok((w.conversation().clone(), shown.cloned().collect(), config));
            }
        }
        let since = self.cache.borrow().generation();
        let conversation = self.conversation(id).await?;
        let config = self.config_for(&conversation);
        let limit = history_load_limit(&config);
        let messages = self.branch_tail(id, limit).await?;
        let window = HistoryWindow::new(conversation.clone(), messages, limit);
        let messages = window.messages().to_vec();
        self.cache.borrow_mut().keep_window(since, window);
        Ok((conversation, messages, config))
    }

    /// The latest summary and the entities in scope: cached, else from the store (and then cached).
    pub(crate) async fn memory_parts(&self, id: &str) -> Result<Rc<MemoryParts>, ReadError> {
        if let Some(m) = self.cache.borrow().memory(id) {
            return Ok(m);
        }
        let since = self.cache.borrow().generation();
        let parts = Rc::new(MemoryParts {
            summary: self.store.latest_summary(id).await?,
            entities: self.entities_for(id).await?,
        });
        self.cache
            .borrow_mut()
            .keep_memory(since, id, parts.clone());
        Ok(parts)
    }

    /// Loads what the next prompt needs into the cache ahead of time (errors surface on use).
    pub(crate) async fn warm(&self, id: &str) {
        if self.recent(id).await.is_ok() {
            self.memory_parts(id).await.ok();
        }
    }

    /// Every fact about the user: cached, else from the store (and then cached).
    pub(crate) async fn user_facts(&self) -> Result<Rc<Vec<UserFact>>, ReadError> {
        if let Some(f) = self.cache.borrow().user_facts() {
            return Ok(f);
        }
        let since = self.cache.borrow().generation();
        let facts = Rc::new(self.store.load_user_facts().await?);
        self.cache
            .borrow_mut()
            .keep_user_facts(since, facts.clone());
        Ok(facts)
    }
}
