//! Conversations: create, get, list (most recent first, through the `updated_at` index), rename,
//! update (patch of the fields the session changes) and delete (cascading to messages, summaries and
//! entities in one transaction). `message_count` and `last_seq` are only ever changed by message
//! writes, inside their own transactions, so a patch never clobbers them.

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{IdbCursorDirection, IdbCursorWithValue, IdbKeyRange};

use super::error::StoreError;
use super::idb::{collect_cursor, from_js, js_error, prefix_range, request, to_js, Tx};
use super::records::{scope_key, ConversationRecord};
use super::schema::{
    ATTACHMENTS, BY_CONV_SEQ, BY_UPDATED, CONVERSATIONS, ENTITIES, MESSAGES, SUMMARIES,
};
use super::Store;
use crate::engine::model::{
    Conversation, EntityScope, MemoryOverrides, Millis, RemoteHandle, TurnPath,
};

/// Changes to a conversation; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConversationPatch {
    /// New title and whether the user chose it.
    pub title: Option<(String, bool)>,
    pub endpoint_profile_id: Option<Option<String>>,
    pub remote_handle: Option<Option<RemoteHandle>>,
    pub last_path: Option<Option<TurnPath>>,
    pub memory_overrides: Option<MemoryOverrides>,
    /// Bumps `updated_at` (never moves it backwards).
    pub updated_at: Option<Millis>,
}

pub(crate) fn not_found(id: &str) -> StoreError {
    StoreError::NotFound {
        what: "conversation",
        id: id.to_string(),
    }
}

pub(crate) async fn get_record(
    store: &web_sys::IdbObjectStore,
    id: &str,
) -> Result<Option<ConversationRecord>, StoreError> {
    let v = request(&store.get(&JsValue::from_str(id)).map_err(js_error)?).await?;
    if v.is_undefined() {
        return Ok(None);
    }
    from_js(v, "conversation").map(Some)
}

impl Store {
    /// Stores a new conversation. Its seqs start at 1 and its counters at `c.message_count`.
    /// An existing id is [`StoreError::AlreadyExists`] (nothing is overwritten).
    pub async fn create_conversation(&self, c: &Conversation) -> Result<(), StoreError> {
        let tx = self.tx(&[CONVERSATIONS], true)?;
        let store = tx.store(CONVERSATIONS)?;
        if get_record(&store, &c.id).await?.is_some() {
            return tx
                .fail(StoreError::AlreadyExists {
                    what: "conversation",
                    id: c.id.clone(),
                })
                .await;
        }
        store
            .add(&to_js(&ConversationRecord::from(c))?)
            .map_err(js_error)?;
        tx.done().await
    }

    pub async fn get_conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError> {
        let tx = self.tx(&[CONVERSATIONS], false)?;
        let rec = get_record(&tx.store(CONVERSATIONS)?, id).await?;
        rec.map(Conversation::try_from).transpose()
    }

    /// Conversations, most recently updated first, at most `limit`.
    pub async fn list_conversations(&self, limit: usize) -> Result<Vec<Conversation>, StoreError> {
        let tx = self.tx(&[CONVERSATIONS], false)?;
        let index = tx
            .store(CONVERSATIONS)?
            .index(BY_UPDATED)
            .map_err(js_error)?;
        let req = index
            .open_cursor_with_range_and_direction(&JsValue::UNDEFINED, IdbCursorDirection::Prev)
            .map_err(js_error)?;
        let mut out = Vec::new();
        for v in collect_cursor(&req, limit).await? {
            out.push(Conversation::try_from(from_js::<ConversationRecord>(
                v,
                "conversation",
            )?)?);
        }
        Ok(out)
    }

    /// A page of the list (most recently updated first, ties by id, highest first): up to `limit`
    /// conversations that come after `after` (its `updated_at` and id), or from the top with `None`.
    /// Reads only the page, through the `updated_at` index.
    pub async fn list_conversations_after(
        &self,
        after: Option<(Millis, &str)>,
        limit: usize,
    ) -> Result<Vec<Conversation>, StoreError> {
        let range = match after {
            None => JsValue::UNDEFINED,
            Some((u, _)) => IdbKeyRange::upper_bound(&JsValue::from_f64(u as f64))
                .map_err(js_error)?
                .into(),
        };
        // Ties on `updated_at` come in descending id order: skip those at or before `after`.
        let skip = |key: f64, id: &str| after.is_some_and(|(u, a)| key == u as f64 && id >= a);
        self.list_page(range, IdbCursorDirection::Prev, skip, limit)
            .await
    }

    /// The page just above `before` in the list: up to `limit` conversations that come before it
    /// (the nearest ones), most recently updated first.
    pub async fn list_conversations_before(
        &self,
        before: (Millis, &str),
        limit: usize,
    ) -> Result<Vec<Conversation>, StoreError> {
        let (u, b) = before;
        let range = IdbKeyRange::lower_bound(&JsValue::from_f64(u as f64)).map_err(js_error)?;
        let skip = |key: f64, id: &str| key == u as f64 && id <= b;
        let mut page = self
            .list_page(range.into(), IdbCursorDirection::Next, skip, limit)
            .await?;
        page.reverse();
        Ok(page)
    }

    async fn list_page(
        &self,
        range: JsValue,
        direction: IdbCursorDirection,
        skip: impl Fn(f64, &str) -> bool,
        limit: usize,
    ) -> Result<Vec<Conversation>, StoreError> {
        let tx = self.tx(&[CONVERSATIONS], false)?;
        let index = tx
            .store(CONVERSATIONS)?
            .index(BY_UPDATED)
            .map_err(js_error)?;
        let req = index
            .open_cursor_with_range_and_direction(&range, direction)
            .map_err(js_error)?;
        let mut out = Vec::new();
        while out.len() < limit {
            let c = request(&req).await?;
            if c.is_null() || c.is_undefined() {
                break;
            }
            let cursor: IdbCursorWithValue = c.unchecked_into();
            let key = cursor.key().map_err(js_error)?.as_f64().unwrap_or(f64::NAN);
            let id = cursor.primary_key().map_err(js_error)?.as_string();
            if !skip(key, id.as_deref().unwrap_or_default()) {
                let rec = from_js::<ConversationRecord>(
                    cursor.value().map_err(js_error)?,
                    "conversation",
                )?;
                out.push(Conversation::try_from(rec)?);
            }
            if out.len() < limit {
                cursor.continue_().map_err(js_error)?;
            }
        }
        Ok(out)
    }

    /// Renames; the title is marked as the user's own (auto-titling keeps off it).
    pub async fn rename_conversation(
        &self,
        id: &str,
        title: &str,
        now: Millis,
    ) -> Result<Conversation, StoreError> {
        let patch = ConversationPatch {
            title: Some((title.to_string(), true)),
            updated_at: Some(now),
            ..Default::default()
        };
        self.update_conversation(id, &patch).await
    }

    /// Applies `patch` in one read-modify-write transaction and returns the result.
    pub async fn update_conversation(
        &self,
        id: &str,
        patch: &ConversationPatch,
    ) -> Result<Conversation, StoreError> {
        let tx = self.tx(&[CONVERSATIONS], true)?;
        let store = tx.store(CONVERSATIONS)?;
        let Some(rec) = get_record(&store, id).await? else {
            return tx.fail(not_found(id)).await;
        };
        let last_seq = rec.last_seq;
        let mut c = match Conversation::try_from(rec) {
            Ok(c) => c,
            Err(e) => return tx.fail(e).await,
        };
        if let Some((t, custom)) = &patch.title {
            c.title = t.clone();
            c.title_is_custom = *custom;
        }
        if let Some(p) = &patch.endpoint_profile_id {
            c.endpoint_profile_id = p.clone();
        }
        if let Some(h) = &patch.remote_handle {
            c.remote_handle = h.clone();
        }
        if let Some(p) = patch.last_path {
            c.last_path = p;
        }
        if let Some(o) = &patch.memory_overrides {
            c.memory_overrides = o.clone();
        }
        if let Some(t) = patch.updated_at {
            c.updated_at = c.updated_at.max(t);
        }
        let mut rec = ConversationRecord::from(&c);
        rec.last_seq = last_seq;
        store.put(&to_js(&rec)?).map_err(js_error)?;
        tx.done().await?;
        Ok(c)
    }

    /// Deletes a conversation with its messages, summaries and conversation-scoped entities, all in
    /// one transaction. Returns false if it did not exist (nothing is deleted then... except orphans).
    pub async fn delete_conversation(&self, id: &str) -> Result<bool, StoreError> {
        let tx = self.tx(
            &[CONVERSATIONS, MESSAGES, SUMMARIES, ENTITIES, ATTACHMENTS],
            true,
        )?;
        let convs = tx.store(CONVERSATIONS)?;
        let existed = get_record(&convs, id).await?.is_some();
        delete_contents(&tx, id).await?;
        convs.delete(&JsValue::from_str(id)).map_err(js_error)?;
        tx.done().await?;
        Ok(existed)
    }
}

/// The part of a message record a deletion reads.
#[derive(serde::Deserialize)]
struct HashesOnly {
    #[serde(default)]
    attachment_hashes: Vec<String>,
}

/// Deletes everything a conversation holds (its messages, summaries and conversation-scoped
/// entities, and the images' Blobs no other message uses) inside `tx`, which must cover those
/// stores and `attachments`; the conversation record is the caller's.
pub(crate) async fn delete_contents(tx: &Tx, id: &str) -> Result<(), StoreError> {
    let messages = tx.store(MESSAGES)?;
    let index = messages.index(BY_CONV_SEQ).map_err(js_error)?;
    let range = prefix_range(id)?;
    let keys_req = index.get_all_keys_with_key(&range).map_err(js_error)?;
    let values_req = index.get_all_with_key(&range).map_err(js_error)?;
    let keys: js_sys::Array = request(&keys_req).await?.into();
    let values: js_sys::Array = request(&values_req).await?.into();
    let mut hashes: Vec<String> = Vec::new();
    for v in values.iter() {
        // Only the hashes are read; a damaged record's are skipped (its Blobs stay, never lost).
        if let Ok(rec) = from_js::<HashesOnly>(v, "message") {
            hashes.extend(rec.attachment_hashes);
        }
    }
    for k in keys.iter() {
        messages.delete(&k).map_err(js_error)?;
    }
    hashes.sort();
    hashes.dedup();
    super::attachments::free_unused(tx, &hashes).await?;
    let scope = scope_key(&EntityScope::Conversation(id.to_string())).to_string();
    tx.store(SUMMARIES)?
        .delete(&prefix_range(id)?)
        .map_err(js_error)?;
    tx.store(ENTITIES)?
        .delete(&prefix_range(&scope)?)
        .map_err(js_error)?;
    Ok(())
}
