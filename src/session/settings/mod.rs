//! Settings ([`Preferences`]): the settings in force and the deployment's defaults, saving them,
//! testing the connection to an endpoint (behind split point `models`), and the storage figure.
//! What is valid and what a preset holds are the engine's (`engine::settings`). Must not import
//! `ui`.

use crate::engine::request;
use crate::engine::settings::Settings;
use crate::engine::tabs::Change;
use crate::session::shared::error::{Boxed, ErrorKind, NO_ENDPOINT, UNAVAILABLE};
use crate::session::shared::{transport_failure, Core, SETTINGS_KEY};
use crate::store::{Store, StoreError};
use crate::transport::{self, Stopper, Timeouts};
use std::rc::Rc;

/// What can go wrong in a settings call. Every message says what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SettingsError {
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A request failed; the text is the engine's actionable message.
    #[error("{0}")]
    Request(String),
    #[error("{}", NO_ENDPOINT)]
    NoEndpoint,
    #[error("{0}")]
    Invalid(String),
    /// A chunk of the app it needs (the settings dialog's, or `models`) could not be fetched; the
    /// next try fetches it again.
    #[error("{}", UNAVAILABLE)]
    Unavailable,
}

impl From<wasm_split_helpers::SplitLoaderError> for SettingsError {
    fn from(_: wasm_split_helpers::SplitLoaderError) -> Self {
        SettingsError::Unavailable
    }
}

impl SettingsError {
    /// What the error is about (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            SettingsError::Request(_) | SettingsError::NoEndpoint => ErrorKind::Request,
            _ => ErrorKind::Other,
        }
    }
}

/// Storage usage of this origin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StorageInfo {
    pub usage: u64,
    pub quota: u64,
    pub persisted: bool,
    /// The stored images (each content once) and their bytes, part of `usage`.
    pub images: u32,
    pub image_bytes: u64,
}

/// The settings service. One per page.
pub struct Preferences {
    core: Rc<Core>,
}

impl Preferences {
    pub(crate) fn new(core: Rc<Core>) -> Self {
        Preferences { core }
    }

    /// The settings in force.
    pub fn current(&self) -> Settings {
        self.core.settings()
    }

    /// The deployment's defaults (what "reset" goes back to).
    pub fn defaults(&self) -> Settings {
        self.core.defaults.clone()
    }

    /// Validates and saves settings.
    pub async fn save_settings(&self, s: Settings) -> Result<(), SettingsError> {
        s.validate().map_err(SettingsError::Invalid)?;
        let s = s.settle_keys();
        let v = serde_json::to_value(&s).map_err(|e| SettingsError::Invalid(e.to_string()))?;
        self.core.store.set_setting(SETTINGS_KEY, &v).await?;
        *self.core.settings.borrow_mut() = s.clone();
        self.core.emit(Change::Settings(Box::new(s)));
        Ok(())
    }

    pub async fn storage(&self) -> Result<StorageInfo, SettingsError> {
        let u = Store::storage_usage().await?;
        let images = self.core.store.attachment_usage().await?;
        Ok(StorageInfo {
            usage: u.usage_bytes as u64,
            quota: u.quota_bytes as u64,
            persisted: self.core.persisted.get(),
            images: images.count,
            image_bytes: images.bytes as u64,
        })
    }

    /// Lists the endpoint's models, proving the connection works (behind split point `models`: the
    /// first call fetches its chunk; one that cannot be fetched is [`SettingsError::Unavailable`]
    /// and the next call tries again).
    pub async fn test_connection(&self, s: &Settings) -> Result<Vec<String>, SettingsError> {
        test_connection_split(s).await
    }
}

/// Split point `models`: listing an endpoint's models (Settings' "Test connection" and the chat
/// header's model picker) with the request, the model-list readers and the failure texts only it
/// reaches in the first screen's code.
#[cfg_attr(feature = "split", wasm_split_helpers::wasm_split(models, fallible, return_wrapper(let future = _; { future.await } -> Result<Vec<String>, SettingsError>)))]
fn test_connection_split(s: &Settings) -> Boxed<'_, Vec<String>, SettingsError> {
    Box::pin(list_models(s))
}

/// Lists the endpoint's models.
async fn list_models(s: &Settings) -> Result<Vec<String>, SettingsError> {
    s.validate().map_err(SettingsError::Invalid)?;
    if !s.has_endpoint() {
        return Err(SettingsError::NoEndpoint);
    }
    let req = request::models_request(&s.endpoint)
        .map_err(|refused| SettingsError::Request(refused.to_string()))?;
    let stopper = Stopper::new();
    let timeouts = Timeouts {
        first_byte_ms: 15_000,
        idle_ms: 15_000,
    };
    let mut body = transport::open(&req, &stopper, timeouts)
        .await
        .map_err(|e| {
            SettingsError::Request(transport_failure(e, &s.endpoint.base_url, false).text())
        })?;
    let text = body.read_text(4 * 1024 * 1024).await.map_err(|e| {
        SettingsError::Request(transport_failure(e, &s.endpoint.base_url, false).text())
    })?;
    request::parse_models(s.endpoint.protocol, &text).map_err(|e| {
        SettingsError::Request(format!(
            "The endpoint answered, but not with a model list: {e}"
        ))
    })
}
