//! Persistence and quota: asks the browser to keep our data (`navigator.storage.persist()`) and
//! reports usage and quota (`navigator.storage.estimate()`). Works in windows and workers.

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{StorageEstimate, StorageManager};

use super::error::StoreError;
use super::idb::js_error;
use super::Store;

/// Bytes used and available to this origin, as estimated by the browser.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StorageUsage {
    pub usage_bytes: f64,
    pub quota_bytes: f64,
}

impl StorageUsage {}

fn manager() -> Result<StorageManager, StoreError> {
    let nav = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("navigator"))
        .map_err(js_error)?;
    let storage = js_sys::Reflect::get(&nav, &JsValue::from_str("storage")).map_err(js_error)?;
    storage.dyn_into::<StorageManager>().map_err(|_| {
        StoreError::Unavailable(
            "navigator.storage is not available (needs a secure context)".into(),
        )
    })
}

impl Store {
    /// Asks the browser not to evict our data. Returns whether storage is now persistent
    /// (browsers may say no, e.g. before the user engaged with the site).
    pub async fn request_persistence() -> Result<bool, StoreError> {
        let p = manager()?.persist().map_err(js_error)?;
        Ok(JsFuture::from(p)
            .await
            .map_err(js_error)?
            .as_bool()
            .unwrap_or(false))
    }

    /// Current usage and quota for this origin.
    pub async fn storage_usage() -> Result<StorageUsage, StoreError> {
        let p = manager()?.estimate().map_err(js_error)?;
        let e: StorageEstimate = JsFuture::from(p).await.map_err(js_error)?.unchecked_into();
        Ok(StorageUsage {
            usage_bytes: e.get_usage().unwrap_or(0.0),
            quota_bytes: e.get_quota().unwrap_or(0.0),
        })
    }
}
