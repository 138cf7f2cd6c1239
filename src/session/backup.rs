//! Backup: export one conversation or all of them (versioned JSON without API keys, or a Markdown
//! transcript). The format is the engine's (`engine::backup`); this file gathers the records. A
//! backup is imported like any other file, through `import.rs` (preview, then one transaction).
//! Must not import `ui`.

use super::{now, Session, SessionError};
use crate::engine::backup::{export_json, export_markdown, ConversationBundle};
use crate::engine::model::EntityScope;

impl Session {
    async fn bundle(&self, id: &str) -> Result<ConversationBundle, SessionError> {
        let conversation = self
            .store
            .get_conversation(id)
            .await?
            .ok_or(SessionError::NoConversation)?;
        Ok(ConversationBundle {
            messages: self.store.load_all_messages(id).await?,
            summaries: self.store.load_summaries(id).await?,
            entities: self
                .store
                .load_entities(&EntityScope::Conversation(id.to_string()))
                .await?,
            conversation,
        })
    }

    /// Versioned JSON of one conversation (`Some(id)`) or of everything. Never contains API keys.
    pub async fn export_json(&self, id: Option<&str>) -> Result<String, SessionError> {
        let ids: Vec<String> = match id {
            Some(id) => vec![id.to_string()],
            None => self
                .store
                .list_conversations(usize::MAX)
                .await?
                .into_iter()
                .map(|c| c.id)
                .collect(),
        };
        let mut bundles = Vec::with_capacity(ids.len());
        for id in &ids {
            bundles.push(self.bundle(id).await?);
        }
        let shared = self.store.load_entities(&EntityScope::Shared).await?;
        Ok(export_json(&bundles, &shared, now()))
    }

    /// A readable Markdown transcript of one conversation.
    pub async fn export_markdown(&self, id: &str) -> Result<String, SessionError> {
        let b = self.bundle(id).await?;
        // The transcript is the branch on screen; the JSON backup keeps every alternative.
        let shown = self.on_branch(id, b.messages).await?;
        Ok(export_markdown(&b.conversation, &shown))
    }
}
