//! Memory: every version of a conversation's rolling summary (key `[conversation_id, version]`, so
//! a bad summary can be rolled back) and the entity graph of a scope (key `[scope, id]`), saved by
//! replacing the whole scope in one transaction so readers never see half a graph.

use js_sys::Array;
use web_sys::IdbCursorDirection;

use super::error::StoreError;
use super::idb::{collect_cursor, from_js, js_error, prefix_range, request, to_js};
use super::records::{read, scope_key, EntityRecord, SummaryRecord};
use super::schema::{ENTITIES, SUMMARIES};
use super::Store;
use crate::engine::model::{ConversationSummary, EntityNode, EntityScope};

impl Store {
    /// Stores a summary version (a version already stored under the same number is replaced).
    pub async fn save_summary(&self, s: &ConversationSummary) -> Result<(), StoreError> {
        let tx = self.tx(&[SUMMARIES], true)?;
        tx.store(SUMMARIES)?
            .put(&to_js(&SummaryRecord::from(s))?)
            .map_err(js_error)?;
        tx.done().await
    }

    /// Deletes summary versions `versions` of a conversation, in one transaction.
    pub async fn delete_summaries(
        &self,
        conversation_id: &str,
        versions: &[u32],
    ) -> Result<(), StoreError> {
        if versions.is_empty() {
            return Ok(());
        }
        let tx = self.tx(&[SUMMARIES], true)?;
        let s = tx.store(SUMMARIES)?;
        for v in versions {
            let key = Array::of2(&conversation_id.into(), &(*v).into());
            s.delete(&key).map_err(js_error)?;
        }
        tx.done().await
    }

    /// Every summary version of a conversation, oldest first.
    pub async fn load_summaries(
        &self,
        conversation_id: &str,
    ) -> Result<Vec<ConversationSummary>, StoreError> {
        let tx = self.tx(&[SUMMARIES], false)?;
        let req = tx
            .store(SUMMARIES)?
            .get_all_with_key(&prefix_range(conversation_id)?)
            .map_err(js_error)?;
        let all: Array = request(&req).await?.into();
        all.iter()
            .map(|v| read(from_js::<SummaryRecord>(v, "summary")?, "summary"))
            .collect()
    }

    /// The highest summary version of a conversation, if any.
    pub async fn latest_summary(
        &self,
        conversation_id: &str,
    ) -> Result<Option<ConversationSummary>, StoreError> {
        let tx = self.tx(&[SUMMARIES], false)?;
        let req = tx
            .store(SUMMARIES)?
            .open_cursor_with_range_and_direction(
                &prefix_range(conversation_id)?,
                IdbCursorDirection::Prev,
            )
            .map_err(js_error)?;
        match collect_cursor(&req, 1).await?.into_iter().next() {
            None => Ok(None),
            Some(v) => Ok(Some(read(
                from_js::<SummaryRecord>(v, "summary")?,
                "summary",
            )?)),
        }
    }

    /// Replaces the entity graph of `scope` with `nodes` in one transaction. Nodes whose own scope
    /// differs from `scope` are rejected (nothing is written).
    pub async fn save_entities(
        &self,
        scope: &EntityScope,
        nodes: &[EntityNode],
    ) -> Result<(), StoreError> {
        self.save_memory(None, scope, nodes).await
    }

    /// The entity graph of `scope`, ordered by id.
    pub async fn load_entities(&self, scope: &EntityScope) -> Result<Vec<EntityNode>, StoreError> {
        let tx = self.tx(&[ENTITIES], false)?;
        let req = tx
            .store(ENTITIES)?
            .get_all_with_key(&prefix_range(scope_key(scope))?)
            .map_err(js_error)?;
        let all: Array = request(&req).await?.into();
        all.iter()
            .map(|v| EntityNode::try_from(from_js::<EntityRecord>(v, "entity")?))
            .collect()
    }
}
