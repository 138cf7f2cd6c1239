//! Sync's storage: the synced documents (`sync_docs`, one record per `_id` with the server revision
//! its content is based on and a sparse `dirty` marker while it waits to be pushed) and sync's own
//! records (`sync_state`: this device's id, the clock's last stamp, the pull checkpoint, the sync
//! settings, and the password kept in a record of its own, never in the plain settings).
//!
//! Records are the store's format: the engine's `Doc`/`LocalDoc`/`Hlc` convert to and from them
//! explicitly here. Reading a damaged record is [`StoreError::BadRecord`], never a panic.
//! Must not import `ui`, `session`, `transport`; only `crate::engine::{model, sync}` types.

use js_sys::Array;
use serde::{Deserialize, Serialize};
use wasm_bindgen::{JsCast, JsValue};

use super::error::StoreError;
use super::idb::{from_js, get_each, js_error, request, to_js, Span};
use super::schema::{BY_DIRTY, SYNC_DOCS, SYNC_STATE};
use super::{Store, WritePace};
use crate::engine::sync::{Body, Doc, Hlc, LocalDoc};

/// A synced document as the store keeps it: the content, its server revision, and whether it must
/// be pushed.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncedDoc {
    pub local: LocalDoc,
    pub dirty: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SyncDocRecord {
    id: String,
    /// The document's content (`Body` as JSON), without `_id`/`_rev`.
    body: serde_json::Value,
    rev: Option<String>,
    /// `Some(1)` while the document waits to be pushed; absent otherwise (sparse index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dirty: Option<u8>,
}

impl SyncDocRecord {
    fn from_doc(d: &LocalDoc, dirty: bool) -> Result<SyncDocRecord, StoreError> {
        Ok(SyncDocRecord {
            id: d.doc.id.clone(),
            body: serde_json::to_value(&d.doc.body)
                .map_err(|e| StoreError::Encode(e.to_string()))?,
            rev: d.rev.clone(),
            dirty: dirty.then_some(1),
        })
    }

    fn into_doc(self) -> Result<SyncedDoc, StoreError> {
        let body = Body::from_value(self.body).map_err(|e| StoreError::BadRecord {
            what: "sync document",
            detail: format!("{}: {e}", self.id),
        })?;
        Ok(SyncedDoc {
            local: LocalDoc {
                doc: Doc { id: self.id, body },
                rev: self.rev,
            },
            dirty: self.dirty.is_some(),
        })
    }
}

/// A clock stamp as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StampRecord {
    wall: i64,
    counter: u32,
    device: String,
}

/// This device's sync identity and progress.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SyncState {
    /// This device's id (stamps' tie-break, names the checkpoint); empty until first chosen.
    pub device: String,
    /// The clock's last stamp, so stamps never repeat across reloads.
    pub last_stamp: Option<Hlc>,
    /// The pull checkpoint (CouchDB's opaque `since`) and the server URL + database it belongs to.
    pub since: Option<String>,
    pub since_for: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StateRecord {
    key: String,
    device: String,
    last_stamp: Option<StampRecord>,
    since: Option<String>,
    #[serde(default)]
    since_for: Option<String>,
}

/// Where to sync to; the password is kept apart (see [`Store::sync_password`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SyncSettings {
    pub url: String,
    pub database: String,
    pub user: String,
    pub enabled: bool,
    /// End-to-end encryption (issue 28): documents leave sealed under a key from a passphrase
    /// (the keys are kept apart, see `sync_keys.rs`).
    pub encrypt: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SettingsRecord {
    key: String,
    url: String,
    database: String,
    user: String,
    enabled: bool,
    #[serde(default)]
    encrypt: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PasswordRecord {
    key: String,
    password: String,
    /// The origin the password was given for (issue 28, item 4); absent in records saved before:
    /// then it belongs to the saved sync URL.
    #[serde(default)]
    origin: Option<String>,
}

/// The saved sync password and the origin it was given for (`None`: saved before origins were
/// kept, so it belongs to the saved sync URL).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SavedPassword {
    pub password: String,
    pub origin: Option<String>,
}

/// Records handled between two yields to the page (each a few milliseconds of work): long
/// writes and reads are sliced so no single task holds the main thread for a whole batch.
const SLICE: usize = 256;

/// A stored record as a synced document.
pub(super) fn synced_of(v: JsValue) -> Result<SyncedDoc, StoreError> {
    from_js::<SyncDocRecord>(v, "sync document")?.into_doc()
}

/// A synced document as the record to store.
pub(super) fn record_of(d: &LocalDoc, dirty: bool) -> Result<JsValue, StoreError> {
    to_js(&SyncDocRecord::from_doc(d, dirty)?)
}

/// Key ranges covering the sorted primary `keys` [`SLICE`] at a time: each page is one `getAll`
/// (records stored between a page's keys come with it; callers filter them).
fn pages(keys: &Array) -> Result<Vec<web_sys::IdbKeyRange>, StoreError> {
    let n = keys.length();
    let mut out = Vec::new();
    let mut k = 0;
    while k < n {
        let end = (k + SLICE as u32).min(n) - 1;
        out.push(web_sys::IdbKeyRange::bound(&keys.get(k), &keys.get(end)).map_err(js_error)?);
        k = end + 1;
    }
    Ok(out)
}

/// Every document a cursor walks to, decoded as it walks (each step is its own task), never all
/// at once.
async fn walk(req: &web_sys::IdbRequest) -> Result<Vec<SyncedDoc>, StoreError> {
    let mut out = Vec::new();
    loop {
        let c = request(req).await?;
        if c.is_null() || c.is_undefined() {
            return Ok(out);
        }
        let cursor: web_sys::IdbCursorWithValue = c.unchecked_into();
        out.push(synced_of(cursor.value().map_err(js_error)?)?);
        cursor.continue_().map_err(js_error)?;
    }
}

const STATE_KEY: &str = "state";
const SETTINGS_KEY: &str = "settings";
const PASSWORD_KEY: &str = "password";

impl Store {
    /// The stored copies of documents `ids` (absent ones are skipped), in the order given.
    pub async fn sync_docs(&self, ids: &[String]) -> Result<Vec<SyncedDoc>, StoreError> {
        let tx = self.tx(&[SYNC_DOCS], false)?;
        let s = tx.store(SYNC_DOCS)?;
        let mut out = Vec::new();
        // One round trip per slice, and each slice's decoding is its own short task.
        for slice in ids.chunks(SLICE) {
            for v in get_each(&s, slice).await? {
                if !v.is_undefined() {
                    out.push(synced_of(v)?);
                }
            }
        }
        Ok(out)
    }

    /// The `_id` of every stored document (one `getAllKeys`: no document is read).
    pub async fn sync_doc_ids(&self) -> Result<std::collections::HashSet<String>, StoreError> {
        let tx = self.tx(&[SYNC_DOCS], false)?;
        let keys =
            Array::from(&request(&tx.store(SYNC_DOCS)?.get_all_keys().map_err(js_error)?).await?);
        Ok(keys.iter().filter_map(|k| k.as_string()).collect())
    }

    /// Every stored document whose `_id` starts with `prefix` (e.g. one entity's relationships).
    pub async fn sync_docs_with_prefix(&self, prefix: &str) -> Result<Vec<SyncedDoc>, StoreError> {
        let tx = self.tx(&[SYNC_DOCS], false)?;
        let range = web_sys::IdbKeyRange::bound(
            &JsValue::from_str(prefix),
            &JsValue::from_str(&format!("{prefix}\u{ffff}")),
        )
        .map_err(js_error)?;
        let req = tx
            .store(SYNC_DOCS)?
            .open_cursor_with_range(&range)
            .map_err(js_error)?;
        walk(&req).await
    }

    /// Documents waiting to be pushed.
    ///
    /// Their keys first (one `getAllKeys` on the sparse index), then their records a page at a
    /// time ([`pages`]): a cursor would cost a round trip to the storage backend per document
    /// (seconds for a first sync of 10,000), one `getAll` one long task to build and decode them all.
    pub async fn dirty_sync_docs(&self) -> Result<Vec<LocalDoc>, StoreError> {
        let tx = self.tx(&[SYNC_DOCS], false)?;
        let s = tx.store(SYNC_DOCS)?;
        let index = s.index(BY_DIRTY).map_err(js_error)?;
        let keys = Array::from(&request(&index.get_all_keys().map_err(js_error)?).await?);
        let mut out = Vec::with_capacity(keys.length() as usize);
        for range in pages(&keys)? {
            let page = Array::from(&request(&s.get_all_with_key(&range).map_err(js_error)?).await?);
            let _span = Span::new("dirty.page");
            for v in page.iter() {
                let d = synced_of(v)?;
                if d.dirty {
                    out.push(d.local);
                }
            }
        }
        Ok(out)
    }

    /// Writes documents (each replaces its stored copy) in one transaction, in slices `pace`
    /// sizes: each queued once the storage has taken the first write of the one before, a yield to
    /// the page that keeps the transaction alive.
    pub async fn put_sync_docs(
        &self,
        docs: &[SyncedDoc],
        pace: &mut dyn WritePace,
    ) -> Result<(), StoreError> {
        if docs.is_empty() {
            return Ok(());
        }
        let tx = self.tx(&[SYNC_DOCS], true)?;
        let s = tx.store(SYNC_DOCS)?;
        let mut done = 0;
        while done < docs.len() {
            let Some(n) = pace.next(done, docs.len()) else {
                return tx.fail(StoreError::Cancelled).await;
            };
            let end = (done + n.max(1)).min(docs.len());
            let span = Span::new("put.slice");
            let mut first = None;
            for d in &docs[done..end] {
                let r = s.put(&record_of(&d.local, d.dirty)?).map_err(js_error)?;
                first.get_or_insert(r);
            }
            pace.issued(end - done);
            done = end;
            drop(span);
            if let Some(r) = first {
                request(&r).await?;
            }
        }
        tx.done().await
    }

    /// The server lost its copy of everything: every document forgets its revision and waits to be
    /// pushed again. Returns them all.
    pub async fn mark_all_sync_docs_dirty(&self) -> Result<Vec<LocalDoc>, StoreError> {
        let tx = self.tx(&[SYNC_DOCS], true)?;
        let s = tx.store(SYNC_DOCS)?;
        let keys = Array::from(&request(&s.get_all_keys().map_err(js_error)?).await?);
        let mut out = Vec::with_capacity(keys.length() as usize);
        // A page at a time, each read, decoded and written back in its own task.
        for range in pages(&keys)? {
            let page = Array::from(&request(&s.get_all_with_key(&range).map_err(js_error)?).await?);
            for v in page.iter() {
                let mut rec = from_js::<SyncDocRecord>(v, "sync document")?;
                // Never pushed and already waiting: nothing to write (a first sync's every one).
                if rec.rev.is_some() || rec.dirty.is_none() {
                    rec.rev = None;
                    rec.dirty = Some(1);
                    s.put(&to_js(&rec)?).map_err(js_error)?;
                }
                out.push(rec.into_doc()?.local);
            }
        }
        tx.done().await?;
        Ok(out)
    }

    /// Forgets every synced document and the checkpoint (keeps device, clock and settings): the
    /// next sync starts from scratch, e.g. against another server.
    pub async fn clear_sync_docs(&self) -> Result<(), StoreError> {
        let tx = self.tx(&[SYNC_DOCS], true)?;
        tx.store(SYNC_DOCS)?.clear().map_err(js_error)?;
        tx.done().await
    }

    async fn get_sync_record<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
        what: &'static str,
    ) -> Result<Option<T>, StoreError> {
        let tx = self.tx(&[SYNC_STATE], false)?;
        let v = request(
            &tx.store(SYNC_STATE)?
                .get(&JsValue::from_str(key))
                .map_err(js_error)?,
        )
        .await?;
        if v.is_undefined() {
            return Ok(None);
        }
        from_js(v, what).map(Some)
    }

    async fn put_sync_record<T: Serialize>(&self, rec: &T) -> Result<(), StoreError> {
        let tx = self.tx(&[SYNC_STATE], true)?;
        tx.store(SYNC_STATE)?.put(&to_js(rec)?).map_err(js_error)?;
        tx.done().await
    }

    /// Device, clock and checkpoint (all empty before the first sync).
    pub async fn sync_state(&self) -> Result<SyncState, StoreError> {
        let Some(r) = self
            .get_sync_record::<StateRecord>(STATE_KEY, "sync state")
            .await?
        else {
            return Ok(SyncState::default());
        };
        Ok(SyncState {
            device: r.device,
            last_stamp: r.last_stamp.map(|s| Hlc::new(s.wall, s.counter, &s.device)),
            since: r.since,
            since_for: r.since_for,
        })
    }

    pub async fn set_sync_state(&self, s: &SyncState) -> Result<(), StoreError> {
        self.put_sync_record(&StateRecord {
            key: STATE_KEY.into(),
            device: s.device.clone(),
            // A clock that never ticked says "before everything" (`i64::MIN`), which a JS number
            // cannot hold exactly: that is no stamp at all.
            last_stamp: s
                .last_stamp
                .as_ref()
                .filter(|h| h.wall >= 0)
                .map(|h| StampRecord {
                    wall: h.wall,
                    counter: h.counter,
                    device: h.device.clone(),
                }),
            since: s.since.clone(),
            since_for: s.since_for.clone(),
        })
        .await
    }

    /// The sync settings (defaults: empty and disabled).
    pub async fn sync_settings(&self) -> Result<SyncSettings, StoreError> {
        Ok(self
            .get_sync_record::<SettingsRecord>(SETTINGS_KEY, "sync settings")
            .await?
            .map(|r| SyncSettings {
                url: r.url,
                database: r.database,
                user: r.user,
                enabled: r.enabled,
                encrypt: r.encrypt,
            })
            .unwrap_or_default())
    }

    pub async fn set_sync_settings(&self, s: &SyncSettings) -> Result<(), StoreError> {
        self.put_sync_record(&SettingsRecord {
            key: SETTINGS_KEY.into(),
            url: s.url.clone(),
            database: s.database.clone(),
            user: s.user.clone(),
            enabled: s.enabled,
            encrypt: s.encrypt,
        })
        .await
    }

    /// The sync password ("" when none is saved).
    pub async fn sync_password(&self) -> Result<String, StoreError> {
        Ok(self
            .get_sync_record::<PasswordRecord>(PASSWORD_KEY, "sync password")
            .await?
            .map(|r| r.password)
            .unwrap_or_default())
    }

    pub async fn set_sync_password(&self, password: &str) -> Result<(), StoreError> {
        self.set_sync_password_for(password, None).await
    }

    /// The sync password with the origin it was given for.
    pub async fn saved_sync_password(&self) -> Result<SavedPassword, StoreError> {
        Ok(self
            .get_sync_record::<PasswordRecord>(PASSWORD_KEY, "sync password")
            .await?
            .map(|r| SavedPassword {
                password: r.password,
                origin: r.origin,
            })
            .unwrap_or_default())
    }

    /// Saves the sync password for `origin` (the sync URL's origin it was typed for).
    pub async fn set_sync_password_for(
        &self,
        password: &str,
        origin: Option<&str>,
    ) -> Result<(), StoreError> {
        self.put_sync_record(&PasswordRecord {
            key: PASSWORD_KEY.into(),
            password: password.into(),
            origin: origin.map(str::to_string),
        })
        .await
    }
}
