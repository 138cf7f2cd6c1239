//! The images' Blobs (`schema::ATTACHMENTS`): stored once per content hash however many messages
//! use them, read back for a request, a thumbnail or a backup, and freed when no message uses them
//! any more (a deleted conversation: [`free_unused`], run inside the deleting transaction against
//! the `by_attachment` index, which the browser keeps up to date on every message write).
//!
//! A stored Blob is `{hash, mime, size, blob}`: built field by field (a Blob cannot cross as JSON).
//! Also what sync compares ([`Store::blob_inventory`], [`Store::blob_user`]).
//! Must not import: `ui`, `session`, `transport`; engine types only.

use js_sys::{Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::Blob;

use super::error::StoreError;
use super::idb::{from_js, js_error, request, Tx};
use super::records::MessageRecord;
use super::schema::{ATTACHMENTS, BY_ATTACHMENT, MESSAGES};
use super::Store;
use crate::engine::model::{Attachment, Message};

/// One stored Blob, as read back.
#[derive(Debug, Clone)]
pub struct StoredBlob {
    pub hash: String,
    pub mime: String,
    pub size: u64,
    pub blob: Blob,
}

/// The images messages use and the Blobs stored ([`Store::blob_inventory`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlobInventory {
    /// Hashes of the images messages use, each once, sorted.
    pub used: Vec<String>,
    /// Hashes of the Blobs stored.
    pub stored: Vec<String>,
}

/// How many Blobs are stored and their bytes (the Settings storage figure).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BlobUsage {
    pub count: u32,
    pub bytes: f64,
}

fn field(o: &JsValue, name: &str) -> JsValue {
    Reflect::get(o, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
}

fn damaged(detail: &str) -> StoreError {
    StoreError::BadRecord {
        what: "image",
        detail: detail.to_string(),
    }
}

fn read_blob(v: JsValue) -> Result<StoredBlob, StoreError> {
    let blob: Blob = field(&v, "blob")
        .dyn_into()
        .map_err(|_| damaged("its bytes are not a Blob"))?;
    Ok(StoredBlob {
        hash: field(&v, "hash")
            .as_string()
            .ok_or_else(|| damaged("no hash"))?,
        mime: field(&v, "mime").as_string().unwrap_or_default(),
        size: blob.size() as u64,
        blob,
    })
}

fn blob_record(hash: &str, mime: &str, blob: &Blob) -> Result<JsValue, StoreError> {
    let o = Object::new();
    let set = |k: &str, v: &JsValue| Reflect::set(&o, &JsValue::from_str(k), v).map_err(js_error);
    set("hash", &JsValue::from_str(hash))?;
    set("mime", &JsValue::from_str(mime))?;
    set("size", &JsValue::from_f64(blob.size()))?;
    set("blob", blob)?;
    Ok(o.into())
}

/// Queues a put of each Blob whose hash `store` does not hold yet (one stored copy per content).
pub(crate) async fn put_new(
    store: &web_sys::IdbObjectStore,
    blobs: &[(String, String, Blob)],
) -> Result<(), StoreError> {
    for (hash, mime, blob) in blobs {
        let key = JsValue::from_str(hash);
        let count = request(&store.count_with_key(&key).map_err(js_error)?).await?;
        if count.as_f64().unwrap_or(0.0) == 0.0 {
            store
                .put(&blob_record(hash, mime, blob)?)
                .map_err(js_error)?;
        }
    }
    Ok(())
}

/// Deletes the Blobs among `hashes` that no message uses any more, inside `tx` (which covers
/// `messages` and `attachments`, after the messages were deleted in it).
pub(crate) async fn free_unused(tx: &Tx, hashes: &[String]) -> Result<(), StoreError> {
    if hashes.is_empty() {
        return Ok(());
    }
    let index = tx.store(MESSAGES)?.index(BY_ATTACHMENT).map_err(js_error)?;
    let blobs = tx.store(ATTACHMENTS)?;
    for h in hashes {
        let key = JsValue::from_str(h);
        let users = request(&index.count_with_key(&key).map_err(js_error)?).await?;
        if users.as_f64().unwrap_or(0.0) == 0.0 {
            blobs.delete(&key).map_err(js_error)?;
        }
    }
    Ok(())
}

impl Store {
    /// Stores images' Blobs `(hash, mime, blob)`, each only if its hash is not stored yet.
    pub async fn put_attachment_blobs(
        &self,
        blobs: &[(String, String, Blob)],
    ) -> Result<(), StoreError> {
        let tx = self.tx(&[ATTACHMENTS], true)?;
        if let Err(e) = put_new(&tx.store(ATTACHMENTS)?, blobs).await {
            return tx.fail(e).await;
        }
        tx.done().await
    }

    /// Deletes the Blobs among `hashes` that no message uses any more (after a message let go of
    /// its images).
    pub async fn free_attachment_blobs(&self, hashes: &[String]) -> Result<(), StoreError> {
        if hashes.is_empty() {
            return Ok(());
        }
        let tx = self.tx(&[MESSAGES, ATTACHMENTS], true)?;
        if let Err(e) = free_unused(&tx, hashes).await {
            return tx.fail(e).await;
        }
        tx.done().await
    }

    /// The stored Blob of each hash, in order; `None` where none is stored.
    pub async fn attachment_blobs(
        &self,
        hashes: &[String],
    ) -> Result<Vec<Option<StoredBlob>>, StoreError> {
        let tx = self.tx(&[ATTACHMENTS], false)?;
        let values = super::idb::get_each(&tx.store(ATTACHMENTS)?, hashes).await?;
        tx.done().await?;
        values
            .into_iter()
            .map(|v| {
                if v.is_undefined() {
                    Ok(None)
                } else {
                    read_blob(v).map(Some)
                }
            })
            .collect()
    }

    /// How many messages use the Blob `hash` (0: it is free to go).
    pub async fn attachment_users(&self, hash: &str) -> Result<u32, StoreError> {
        let tx = self.tx(&[MESSAGES], false)?;
        let index = tx.store(MESSAGES)?.index(BY_ATTACHMENT).map_err(js_error)?;
        let n = request(
            &index
                .count_with_key(&JsValue::from_str(hash))
                .map_err(js_error)?,
        )
        .await?;
        tx.done().await?;
        Ok(n.as_f64().unwrap_or(0.0) as u32)
    }

    /// The image hashes messages use (each once, sorted) and the hashes of the Blobs stored here:
    /// what sync compares to know which images to push and which to fetch.
    pub async fn blob_inventory(&self) -> Result<BlobInventory, StoreError> {
        let tx = self.tx(&[MESSAGES, ATTACHMENTS], false)?;
        let index = tx.store(MESSAGES)?.index(BY_ATTACHMENT).map_err(js_error)?;
        let req = index
            .open_key_cursor_with_range_and_direction(
                &JsValue::UNDEFINED,
                web_sys::IdbCursorDirection::Nextunique,
            )
            .map_err(js_error)?;
        let mut used = Vec::new();
        loop {
            let c = request(&req).await?;
            if c.is_null() || c.is_undefined() {
                break;
            }
            let cursor: web_sys::IdbCursor = c.unchecked_into();
            used.extend(cursor.key().map_err(js_error)?.as_string());
            cursor.continue_().map_err(js_error)?;
        }
        let keys: js_sys::Array =
            request(&tx.store(ATTACHMENTS)?.get_all_keys().map_err(js_error)?)
                .await?
                .into();
        tx.done().await?;
        Ok(BlobInventory {
            used,
            stored: keys.iter().filter_map(|k| k.as_string()).collect(),
        })
    }

    /// The image `hash` as a message that uses it names it, with that message's conversation;
    /// `None` when no message uses it.
    pub async fn blob_user(&self, hash: &str) -> Result<Option<(String, Attachment)>, StoreError> {
        let tx = self.tx(&[MESSAGES], false)?;
        let index = tx.store(MESSAGES)?.index(BY_ATTACHMENT).map_err(js_error)?;
        let v = request(&index.get(&JsValue::from_str(hash)).map_err(js_error)?).await?;
        tx.done().await?;
        if v.is_undefined() {
            return Ok(None);
        }
        let m: Message = from_js::<MessageRecord>(v, "message")?.try_into()?;
        let a = m.meta.attachments.into_iter().find(|a| a.hash == hash);
        Ok(a.map(|a| (m.conversation_id, a)))
    }

    /// The stored Blobs' count and bytes.
    pub async fn attachment_usage(&self) -> Result<BlobUsage, StoreError> {
        let tx = self.tx(&[ATTACHMENTS], false)?;
        let all: js_sys::Array = request(&tx.store(ATTACHMENTS)?.get_all().map_err(js_error)?)
            .await?
            .into();
        tx.done().await?;
        let bytes = all
            .iter()
            .map(|v| field(&v, "size").as_f64().unwrap_or(0.0))
            .sum();
        Ok(BlobUsage {
            count: all.length(),
            bytes,
        })
    }
}
