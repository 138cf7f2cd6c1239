//! The keys of end-to-end encrypted sync (issue 28, item 6), kept in `sync_state` under `keys`:
//! the AES-256-GCM key and the HMAC key for document ids, as non-extractable WebCrypto `CryptoKey`s
//! (IndexedDB stores them as they are; their bytes can be used by this origin but never read, even
//! by a script running in the page), with the sync database and the salt they were derived for.
//! Kept so a reload does not ask for the passphrase again: this device holds the plaintext anyway;
//! the passphrase itself is never stored. No schema change: a record of its own in `sync_state`.
//! While this device changes the passphrase (`engine::sync::rotate`), the record holds the old
//! keys too (`old_salt`, `old_aes`, `old_mac`), so a reload goes on without asking again.
//! Must not import `ui`, `session`, `transport`.

use js_sys::{Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::CryptoKey;

use super::error::StoreError;
use super::idb::{js_error, request};
use super::schema::SYNC_STATE;
use super::Store;

const KEYS_KEY: &str = "keys";

/// The derived keys and what they belong to.
#[derive(Debug, Clone)]
pub struct SyncKeys {
    /// The sync URL and database (`{base}/{db}`) the keys open.
    pub database: String,
    /// The marker's salt (base64), to tell a marker made again with another passphrase.
    pub salt: String,
    pub aes: CryptoKey,
    pub mac: CryptoKey,
    /// The old keys while this device changes the passphrase.
    pub old: Option<OldKeys>,
}

/// The keys a change of passphrase is leaving, and their salt (base64).
#[derive(Debug, Clone)]
pub struct OldKeys {
    pub salt: String,
    pub aes: CryptoKey,
    pub mac: CryptoKey,
}

fn field(o: &JsValue, k: &str) -> Option<JsValue> {
    Reflect::get(o, &JsValue::from_str(k))
        .ok()
        .filter(|v| !v.is_undefined())
}

impl Store {
    /// The kept keys (`None`: none kept, or kept by an older version in another shape).
    pub async fn sync_keys(&self) -> Result<Option<SyncKeys>, StoreError> {
        let tx = self.tx(&[SYNC_STATE], false)?;
        let v = request(
            &tx.store(SYNC_STATE)?
                .get(&JsValue::from_str(KEYS_KEY))
                .map_err(js_error)?,
        )
        .await?;
        if v.is_undefined() {
            return Ok(None);
        }
        let text = |k: &str| field(&v, k).and_then(|s| s.as_string());
        let key = |k: &str| field(&v, k).and_then(|s| s.dyn_into::<CryptoKey>().ok());
        let old = match (text("old_salt"), key("old_aes"), key("old_mac")) {
            (Some(salt), Some(aes), Some(mac)) => Some(OldKeys { salt, aes, mac }),
            _ => None,
        };
        Ok(
            match (text("database"), text("salt"), key("aes"), key("mac")) {
                (Some(database), Some(salt), Some(aes), Some(mac)) => Some(SyncKeys {
                    database,
                    salt,
                    aes,
                    mac,
                    old,
                }),
                _ => None,
            },
        )
    }

    /// Keeps `keys` (replacing any kept before).
    pub async fn set_sync_keys(&self, keys: &SyncKeys) -> Result<(), StoreError> {
        let o = Object::new();
        let set = |k: &str, v: &JsValue| Reflect::set(&o, &JsValue::from_str(k), v).map(|_| ());
        set("key", &JsValue::from_str(KEYS_KEY)).map_err(js_error)?;
        set("database", &JsValue::from_str(&keys.database)).map_err(js_error)?;
        set("salt", &JsValue::from_str(&keys.salt)).map_err(js_error)?;
        set("aes", &keys.aes).map_err(js_error)?;
        set("mac", &keys.mac).map_err(js_error)?;
        if let Some(old) = &keys.old {
            set("old_salt", &JsValue::from_str(&old.salt)).map_err(js_error)?;
            set("old_aes", &old.aes).map_err(js_error)?;
            set("old_mac", &old.mac).map_err(js_error)?;
        }
        let tx = self.tx(&[SYNC_STATE], true)?;
        tx.store(SYNC_STATE)?.put(&o).map_err(js_error)?;
        tx.done().await
    }

    /// Forgets the kept keys (encryption turned off, or another database).
    pub async fn delete_sync_keys(&self) -> Result<(), StoreError> {
        let tx = self.tx(&[SYNC_STATE], true)?;
        tx.store(SYNC_STATE)?
            .delete(&JsValue::from_str(KEYS_KEY))
            .map_err(js_error)?;
        tx.done().await
    }
}
