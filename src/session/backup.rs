//! Backup: export one conversation or all of them (versioned JSON without API keys, or a Markdown
//! transcript) and import a JSON backup. The format and every validation are the engine's
//! (`engine::backup`); this file gathers records and writes the validated plan in one transaction.
//! Must not import `ui`.

use super::{now, Session, SessionError, SessionEvent};
use crate::engine::backup::{
    check_import, export_json, export_markdown, ConversationBundle, ImportLimits,
};
use crate::engine::model::EntityScope;
use wasm_bindgen_futures::JsFuture;

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

    /// Imports a backup file: validates everything first, then writes it in one transaction. Returns
    /// a report for the user ("added …, skipped …").
    pub async fn import_file(&self, file: web_sys::File) -> Result<String, SessionError> {
        let limits = ImportLimits::default();
        if file.size() > limits.max_bytes as f64 {
            return Err(crate::engine::backup::ImportError::TooLarge {
                size: file.size() as usize,
                limit: limits.max_bytes,
            }
            .into());
        }
        let buf = JsFuture::from(file.array_buffer()).await.map_err(|e| {
            SessionError::Invalid(format!(
                "Could not read the file: {}",
                crate::transport::js_text(e)
            ))
        })?;
        let bytes = js_sys::Uint8Array::new(&buf).to_vec();
        self.import_bytes(&bytes).await
    }

    /// Imports backup bytes (see [`Session::import_file`]).
    pub async fn import_bytes(&self, bytes: &[u8]) -> Result<String, SessionError> {
        // Check the whole file, look up only the records it names, plan against them, then write.
        self.import_checked(check_import(bytes, &ImportLimits::default())?)
            .await
    }

    /// Writes a checked backup (see [`Session::import_file`]).
    pub(super) async fn import_checked(
        &self,
        checked: crate::engine::backup::CheckedImport,
    ) -> Result<String, SessionError> {
        let existing = self.store.existing_ids_for(&checked).await?;
        let plan = checked.plan(&existing)?;
        // The conversations the write touched, as it stored them: no second read to announce them.
        let written = self.store.write_import(&plan).await?;
        self.note_alternatives(&plan.messages).await?;
        self.cache.borrow_mut().forget_all();
        for c in written {
            self.emit(SessionEvent::ConversationChanged(c));
        }
        Ok(plan.report())
    }
}
