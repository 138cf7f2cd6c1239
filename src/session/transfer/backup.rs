//! Backup: export one conversation or all of them (versioned JSON without API keys, or a Markdown
//! transcript; the JSON carries the images' bytes, base64). The format is the engine's (`engine::backup`); this file gathers the records. A
//! backup is imported like any other file, through `import.rs` (preview, then one transaction).
//! Both exports are behind split point `export` (a wasm chunk fetched on first use, see
//! scripts/build-wasm.sh). Must not import `ui`.

use super::service::{Transfer, TransferError};
use crate::engine::backup::{
    export_markdown, export_with_images, facts_for_export, image_hashes, projects_for_export,
    ConversationBundle, ImageBlob,
};
use crate::engine::model::EntityScope;
use crate::session::shared::error::Boxed;
use crate::session::shared::{digest, now};

/// Split point `export`: the JSON backup (the file's types and their serialisation).
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(export, fallible, return_wrapper(let future = _; { future.await } -> Result<String, TransferError>)))]
fn export_json_split<'a>(
    session: &'a Transfer,
    id: Option<&'a str>,
) -> Boxed<'a, String, TransferError> {
    Box::pin(session.export_json_now(id))
}

/// Split point `export`: the Markdown transcript.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(export, fallible, return_wrapper(let future = _; { future.await } -> Result<String, TransferError>)))]
fn export_markdown_split<'a>(
    session: &'a Transfer,
    id: &'a str,
) -> Boxed<'a, String, TransferError> {
    Box::pin(session.export_markdown_now(id))
}

impl Transfer {
    async fn bundle(&self, id: &str) -> Result<ConversationBundle, TransferError> {
        let conversation = self.core.conversation(id).await?;
        Ok(ConversationBundle {
            messages: self.core.store.load_all_messages(id).await?,
            summaries: self.core.store.load_summaries(id).await?,
            entities: self
                .core
                .store
                .load_entities(&EntityScope::Conversation(id.to_string()))
                .await?,
            conversation,
        })
    }

    /// Versioned JSON of one conversation (`Some(id)`) or of everything, with the facts about the
    /// user the engine says go with it (`facts_for_export`). Never contains API keys.
    pub async fn export_json(&self, id: Option<&str>) -> Result<String, TransferError> {
        export_json_split(self, id).await
    }

    async fn export_json_now(&self, id: Option<&str>) -> Result<String, TransferError> {
        let ids: Vec<String> = match id {
            Some(id) => vec![id.to_string()],
            None => self
                .core
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
        let shared = self.core.store.load_entities(&EntityScope::Shared).await?;
        let facts = self.core.store.load_user_facts().await?;
        let facts = facts_for_export(&facts, id);
        let projects = self.core.store.load_projects().await?;
        let one = id.and_then(|_| bundles.first().map(|b| &b.conversation));
        let projects = projects_for_export(&projects, one);
        let images = self.stored_images(&image_hashes(&bundles)).await?;
        Ok(export_with_images(
            &bundles,
            &shared,
            &facts,
            &projects,
            &images,
            now(),
        ))
    }

    /// The bytes of the stored images among `hashes` (one not stored here is left out: its
    /// message keeps its name).
    async fn stored_images(&self, hashes: &[String]) -> Result<Vec<ImageBlob>, TransferError> {
        let mut out = Vec::new();
        for b in self
            .core
            .store
            .attachment_blobs(hashes)
            .await?
            .into_iter()
            .flatten()
        {
            let bytes = digest::bytes_of(&b.blob)
                .await
                .map_err(|e| TransferError::Invalid(format!("An image could not be read: {e}")))?;
            out.push(ImageBlob {
                hash: b.hash,
                mime: b.mime,
                bytes,
            });
        }
        Ok(out)
    }

    /// A readable Markdown transcript of one conversation.
    pub async fn export_markdown(&self, id: &str) -> Result<String, TransferError> {
        export_markdown_split(self, id).await
    }

    async fn export_markdown_now(&self, id: &str) -> Result<String, TransferError> {
        let b = self.bundle(id).await?;
        // The transcript is the branch on screen; the JSON backup keeps every alternative.
        let shown = self.core.on_branch(id, b.messages).await?;
        Ok(export_markdown(&b.conversation, &shown))
    }
}
