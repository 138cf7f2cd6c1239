//! What the memory updates remember between runs, kept in the `settings` store under their own keys:
//! the last failed update of each conversation (`memory-failure:<conversation id>`) and the output
//! form that worked for each memory endpoint (`memory-forms`, keyed by protocol + URL + model, so a
//! new URL or model starts from the best form again). Owns these records and their conversion to
//! engine types. Must not import `ui`, `session`, `transport`.

use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::Store;
use crate::engine::memory::{MemoryFailure, MemoryForm};
use crate::engine::model::Millis;

const FAILURE_PREFIX: &str = "memory-failure:";
pub(super) const FORMS_KEY: &str = "memory-forms";
/// Endpoints whose form is remembered (the most recently used are kept).
const MAX_REMEMBERED_FORMS: usize = 32;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct MemoryFailureRecord {
    at: Millis,
    reason: String,
    raw_reply: String,
    form: String,
    /// Added with the back-off; records written before read as one failure of an unknown endpoint
    /// (so the next automatic update is tried).
    #[serde(default = "one")]
    attempts: u32,
    #[serde(default)]
    seq: u64,
    #[serde(default)]
    endpoint_key: String,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct RememberedForm {
    endpoint_key: String,
    form: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct MemoryFormsRecord {
    /// Most recently used last.
    forms: Vec<RememberedForm>,
}

fn read<T: serde::de::DeserializeOwned>(
    value: Option<serde_json::Value>,
    what: &'static str,
) -> Result<Option<T>, StoreError> {
    value
        .map(|v| {
            serde_json::from_str(&v.to_string()).map_err(|e| StoreError::BadRecord {
                what,
                detail: e.to_string(),
            })
        })
        .transpose()
}

fn write<T: Serialize>(v: &T, what: &'static str) -> Result<serde_json::Value, StoreError> {
    serde_json::to_value(v).map_err(|e| StoreError::BadRecord {
        what,
        detail: e.to_string(),
    })
}

impl Store {
    /// The last failed memory update of a conversation, if the latest one failed.
    pub async fn memory_failure(&self, id: &str) -> Result<Option<MemoryFailure>, StoreError> {
        failure_of(self.get_setting(&failure_key(id)).await?)
    }

    /// Records (or with `None`, clears) a conversation's failed memory update.
    pub async fn set_memory_failure(
        &self,
        id: &str,
        failure: Option<&MemoryFailure>,
    ) -> Result<(), StoreError> {
        match failure {
            None => self.delete_setting(&failure_key(id)).await,
            Some(f) => self.set_setting(&failure_key(id), &failure_value(f)?).await,
        }
    }

    /// The form that last worked for this memory endpoint (`EndpointProfile::key`).
    pub async fn memory_form(&self, endpoint_key: &str) -> Result<Option<MemoryForm>, StoreError> {
        form_of(self.get_setting(FORMS_KEY).await?, endpoint_key)
    }

    /// Remembers the form that worked for this memory endpoint.
    pub async fn remember_memory_form(
        &self,
        endpoint_key: &str,
        form: MemoryForm,
    ) -> Result<(), StoreError> {
        let v = self.get_setting(FORMS_KEY).await?;
        self.set_setting(FORMS_KEY, &forms_with(v, endpoint_key, form)?)
            .await
    }
}

/// The settings key of a conversation's failed update.
pub(super) fn failure_key(id: &str) -> String {
    format!("{FAILURE_PREFIX}{id}")
}

/// A stored failure record's value as the engine's failure.
pub(super) fn failure_of(
    v: Option<serde_json::Value>,
) -> Result<Option<MemoryFailure>, StoreError> {
    let Some(r) = read::<MemoryFailureRecord>(v, "memory failure")? else {
        return Ok(None);
    };
    Ok(Some(MemoryFailure {
        at: r.at,
        reason: r.reason,
        raw_reply: r.raw_reply,
        form: MemoryForm::parse(&r.form).unwrap_or(MemoryForm::Sections),
        attempts: r.attempts,
        seq: r.seq,
        endpoint_key: r.endpoint_key,
    }))
}

/// A failure as the value stored under [`failure_key`].
pub(super) fn failure_value(f: &MemoryFailure) -> Result<serde_json::Value, StoreError> {
    // Destructured without `..`: a new field fails to compile here until it is stored.
    let MemoryFailure {
        at,
        reason,
        raw_reply,
        form,
        attempts,
        seq,
        endpoint_key,
    } = f;
    let rec = MemoryFailureRecord {
        at: *at,
        reason: reason.clone(),
        raw_reply: raw_reply.clone(),
        form: form.as_str().to_string(),
        attempts: *attempts,
        seq: *seq,
        endpoint_key: endpoint_key.clone(),
    };
    write(&rec, "memory failure")
}

/// The form remembered for `endpoint_key` in the forms record's value `v`.
pub(super) fn form_of(
    v: Option<serde_json::Value>,
    endpoint_key: &str,
) -> Result<Option<MemoryForm>, StoreError> {
    let rec = read::<MemoryFormsRecord>(v, "memory forms")?.unwrap_or_default();
    Ok(rec
        .forms
        .iter()
        .find(|f| f.endpoint_key == endpoint_key)
        .and_then(|f| MemoryForm::parse(&f.form)))
}

/// The forms record's value `v` with `form` remembered for `endpoint_key` (most recent last).
pub(super) fn forms_with(
    v: Option<serde_json::Value>,
    endpoint_key: &str,
    form: MemoryForm,
) -> Result<serde_json::Value, StoreError> {
    let mut rec = read::<MemoryFormsRecord>(v, "memory forms")?.unwrap_or_default();
    rec.forms.retain(|f| f.endpoint_key != endpoint_key);
    rec.forms.push(RememberedForm {
        endpoint_key: endpoint_key.to_string(),
        form: form.as_str().to_string(),
    });
    let excess = rec.forms.len().saturating_sub(MAX_REMEMBERED_FORMS);
    rec.forms.drain(..excess);
    write(&rec, "memory forms")
}
