//! The images' Blobs (`schema::ATTACHMENTS`): stored once per content hash however many messages
//! use them, read back for a request, a thumbnail or a backup, and freed when no message uses them
//! any more (a deleted conversation: [`free_unused`], run inside the deleting transaction against
//! the `by_attachment` index, which the browser keeps up to date on every message write).
//!
//! Images no message uses (one attached and removed before sending, a draft abandoned) are freed
//! when the composer lets go of them ([`Store::free_attachment_blobs`]) and by a sweep at start-up
//! ([`Store::sweep_attachment_blobs`]) once older than a grace (`engine::attach::sweep` decides).
//!
//! A stored Blob is `{hash, mime, size, blob, stored_at}`: built field by field (a Blob cannot
//! cross as JSON); one stored before `stored_at` was kept has none (the sweep stamps it).
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
use crate::engine::attach::{self, BlobAge, Sweep};
use crate::engine::model::{Attachment, Message, Millis};

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

fn set(o: &JsValue, k: &str, v: &JsValue) -> Result<(), StoreError> {
    Reflect::set(o, &JsValue::from_str(k), v)
        .map(|_| ())
        .map_err(js_error)
}

fn blob_record(
    hash: &str,
    mime: &str,
    blob: &Blob,
    stored_at: Millis,
) -> Result<JsValue, StoreError> {
    let o: JsValue = Object::new().into();
    set(&o, "hash", &JsValue::from_str(hash))?;
    set(&o, "mime", &JsValue::from_str(mime))?;
    set(&o, "size", &JsValue::from_f64(blob.size()))?;
    set(&o, "blob", blob)?;
    set(&o, "stored_at", &JsValue::from_f64(stored_at as f64))?;
    Ok(o)
}

/// Queues a put of each Blob whose hash `store` does not hold yet (one stored copy per content),
/// as stored now ([`put_new_at`]).
pub(crate) async fn put_new(
    store: &web_sys::IdbObjectStore,
    blobs: &[(String, String, Blob)],
) -> Result<(), StoreError> {
    put_new_at(store, blobs, js_sys::Date::now() as Millis).await
}

/// [`put_new`], stored at `stored_at`; a Blob already held is stamped `stored_at` again (stored
/// anew, it may be a draft's: the unused-image sweep gives it its grace from then).
pub(crate) async fn put_new_at(
    store: &web_sys::IdbObjectStore,
    blobs: &[(String, String, Blob)],
    stored_at: Millis,
) -> Result<(), StoreError> {
    for (hash, mime, blob) in blobs {
        let key = JsValue::from_str(hash);
        let held = request(&store.get(&key).map_err(js_error)?).await?;
        if held.is_undefined() {
            store
                .put(&blob_record(hash, mime, blob, stored_at)?)
                .map_err(js_error)?;
        } else {
            set(&held, "stored_at", &JsValue::from_f64(stored_at as f64))?;
            store.put(&held).map_err(js_error)?;
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

/// The sweep's reads, decision and writes inside `tx`.
async fn sweep_in(tx: &Tx, now: Millis, grace: Millis) -> Result<usize, StoreError> {
    let blobs = tx.store(ATTACHMENTS)?;
    let index = tx.store(MESSAGES)?.index(BY_ATTACHMENT).map_err(js_error)?;
    let all: js_sys::Array = request(&blobs.get_all().map_err(js_error)?).await?.into();
    let mut seen = Vec::with_capacity(all.length() as usize);
    for record in all.iter() {
        let Some(hash) = field(&record, "hash").as_string() else {
            continue;
        };
        let key = JsValue::from_str(&hash);
        let users = request(&index.count_with_key(&key).map_err(js_error)?).await?;
        seen.push(BlobAge {
            hash,
            stored_at: field(&record, "stored_at").as_f64().map(|t| t as Millis),
            users: users.as_f64().unwrap_or(0.0) as u32,
        });
    }
    let Sweep { delete, stamp } = attach::sweep(&seen, now, grace);
    for h in &delete {
        blobs.delete(&JsValue::from_str(h)).map_err(js_error)?;
    }
    for record in all.iter() {
        let hash = field(&record, "hash").as_string().unwrap_or_default();
        if stamp.contains(&hash) {
            set(&record, "stored_at", &JsValue::from_f64(now as f64))?;
            blobs.put(&record).map_err(js_error)?;
        }
    }
    Ok(delete.len())
}

impl Store {
    /// Stores images' Blobs `(hash, mime, blob)`, each only if its hash is not stored yet, as
    /// stored now.
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

    /// [`Store::put_attachment_blobs`], as stored at `stored_at`.
    pub async fn put_attachment_blobs_at(
        &self,
        blobs: &[(String, String, Blob)],
        stored_at: Millis,
    ) -> Result<(), StoreError> {
        let tx = self.tx(&[ATTACHMENTS], true)?;
        if let Err(e) = put_new_at(&tx.store(ATTACHMENTS)?, blobs, stored_at).await {
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

    /// The start-up sweep of images no message uses (`engine::attach::sweep` decides, at `now`
    /// with `grace`): in one transaction over the messages and the Blobs, so a message written
    /// meanwhile either counts as a user or waits; returns how many were deleted.
    pub async fn sweep_attachment_blobs(
        &self,
        now: Millis,
        grace: Millis,
    ) -> Result<usize, StoreError> {
        let tx = self.tx(&[MESSAGES, ATTACHMENTS], true)?;
        match sweep_in(&tx, now, grace).await {
            Ok(n) => tx.done().await.map(|_| n),
            Err(e) => tx.fail(e).await,
        }
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
