//! Settings: JSON values by key (`settings` store, key path `key`). The store does not interpret them.

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;

use super::error::StoreError;
use super::idb::{from_js, js_error, request, to_js};
use super::schema::SETTINGS;
use super::Store;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SettingRecord {
    key: String,
    value: serde_json::Value,
}

/// The value under `key` in `settings` (an object store of a transaction open on it).
pub(super) async fn setting_in(
    settings: &web_sys::IdbObjectStore,
    key: &str,
) -> Result<Option<serde_json::Value>, StoreError> {
    let v = request(&settings.get(&JsValue::from_str(key)).map_err(js_error)?).await?;
    if v.is_undefined() {
        return Ok(None);
    }
    Ok(Some(from_js::<SettingRecord>(v, "setting")?.value))
}

/// Puts `value` under `key` in `settings` (an object store of a read-write transaction).
pub(super) fn put_setting_in(
    settings: &web_sys::IdbObjectStore,
    key: &str,
    value: &serde_json::Value,
) -> Result<(), StoreError> {
    let rec = SettingRecord {
        key: key.to_string(),
        value: value.clone(),
    };
    settings.put(&to_js(&rec)?).map_err(js_error)?;
    Ok(())
}

impl Store {
    pub async fn get_setting(&self, key: &str) -> Result<Option<serde_json::Value>, StoreError> {
        let tx = self.tx(&[SETTINGS], false)?;
        let v = request(
            &tx.store(SETTINGS)?
                .get(&JsValue::from_str(key))
                .map_err(js_error)?,
        )
        .await?;
        if v.is_undefined() {
            return Ok(None);
        }
        Ok(Some(from_js::<SettingRecord>(v, "setting")?.value))
    }

    pub async fn set_setting(
        &self,
        key: &str,
        value: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let rec = SettingRecord {
            key: key.to_string(),
            value: value.clone(),
        };
        let tx = self.tx(&[SETTINGS], true)?;
        tx.store(SETTINGS)?.put(&to_js(&rec)?).map_err(js_error)?;
        tx.done().await
    }

    pub async fn delete_setting(&self, key: &str) -> Result<(), StoreError> {
        let tx = self.tx(&[SETTINGS], true)?;
        tx.store(SETTINGS)?
            .delete(&JsValue::from_str(key))
            .map_err(js_error)?;
        tx.done().await
    }
}
