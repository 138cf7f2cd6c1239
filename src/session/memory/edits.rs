//! The memory pane's reads and edits: a conversation's summary versions and entities, restoring an
//! older summary, editing or deleting an entity (the graph surgery is `engine::memory::graph`).
//! The read is behind split point `memory_read` (reading and decoding the stored memory is a wasm
//! chunk fetched the first time a conversation's memory is shown, not part of the first download).
//! Must not import `ui`.

use super::service::{Memory, MemoryError, MemorySnapshot};
use super::update::memory_error;
use crate::engine::memory::graph::{put_entity, remove_entity};
use crate::engine::memory::restore_version;
use crate::engine::model::{EntityNode, EntityScope};
use crate::engine::tabs::Change;
use crate::session::shared::error::Boxed;
use crate::session::shared::now;

/// Split point `memory_read`: reading a conversation's memory (summaries, entities, the last
/// failure) and the facts about the user (`user.rs`), with the record decoding only they need.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(memory_read, fallible, return_wrapper(let future = _; { future.await } -> Result<MemorySnapshot, MemoryError>)))]
fn snapshot_split<'a>(memory: &'a Memory, id: &'a str) -> Boxed<'a, MemorySnapshot, MemoryError> {
    Box::pin(memory.snapshot_now(id))
}

impl Memory {
    /// Every summary version (oldest first) and the entities of a conversation (behind split point
    /// `memory_read`: the first call fetches its chunk; one that cannot be fetched is
    /// [`MemoryError::Unavailable`] and the next call tries again).
    pub async fn snapshot(&self, id: &str) -> Result<MemorySnapshot, MemoryError> {
        snapshot_split(self, id).await
    }

    async fn snapshot_now(&self, id: &str) -> Result<MemorySnapshot, MemoryError> {
        let mut versions = self.core.store.load_summaries(id).await?;
        crate::engine::sort::sort_by_key(&mut versions, |s| s.version);
        Ok(MemorySnapshot {
            versions,
            entities: self.core.entities_for(id).await?,
            failure: self.core.store.memory_failure(id).await?,
        })
    }

    /// Makes an older summary version current again (as a new version; history is kept).
    pub async fn restore_summary(&self, id: &str, version: u32) -> Result<(), MemoryError> {
        let versions = self.core.store.load_summaries(id).await?;
        let restored = restore_version(&versions, version, now()).map_err(memory_error)?;
        self.core.store.save_summary(&restored).await?;
        self.core.emit(Change::MemoryChanged(id.to_string()));
        Ok(())
    }

    /// Saves a user's edit of an entity.
    pub async fn save_entity(&self, id: &str, mut node: EntityNode) -> Result<(), MemoryError> {
        node.updated_at = now();
        let scope = node.scope.clone();
        let mut nodes = self.core.store.load_entities(&scope).await?;
        put_entity(&mut nodes, node);
        self.core.store.save_entities(&scope, &nodes).await?;
        self.core.emit(Change::MemoryChanged(id.to_string()));
        Ok(())
    }

    /// Deletes an entity and the relationships that point at it.
    pub async fn delete_entity(&self, id: &str, entity_id: &str) -> Result<(), MemoryError> {
        for scope in [
            EntityScope::Conversation(id.to_string()),
            EntityScope::Shared,
        ] {
            let mut nodes = self.core.store.load_entities(&scope).await?;
            if remove_entity(&mut nodes, entity_id) {
                self.core.store.save_entities(&scope, &nodes).await?;
            }
        }
        self.core.entity_deleted(id, entity_id);
        self.core.emit(Change::MemoryChanged(id.to_string()));
        Ok(())
    }
}
