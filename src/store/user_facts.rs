//! Facts about the user (`user_facts` store, key path `id`): every fact, current, past and
//! forgotten (a tombstone keeps its text so the same sentence from the same message is not taken in
//! again; see `engine::memory::user`). Read whole: there are hundreds, not millions. The record is
//! the store's own shape, converted explicitly. Must not import `session` or `ui`.

use js_sys::Array;
use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::idb::{from_js, js_error, request, to_js};
use super::schema::USER_FACTS;
use super::Store;
use crate::engine::model::{FactKind, FactSource, Millis, UserFact};

/// A fact as stored. Fields added later need `#[serde(default)]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserFactRecord {
    pub id: String,
    pub text: String,
    pub kind: FactKind,
    pub claim_key: String,
    pub source: Option<FactSourceRecord>,
    pub valid_from: Millis,
    pub valid_to: Option<Millis>,
    pub forgotten: Option<Millis>,
    pub scope: Option<String>,
    pub updated_at: Millis,
}

/// Where a fact was said, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactSourceRecord {
    pub conversation_id: String,
    pub message_id: String,
    pub said_at: Millis,
}

impl From<&UserFact> for UserFactRecord {
    fn from(f: &UserFact) -> Self {
        let UserFact {
            id,
            text,
            kind,
            claim_key,
            source,
            valid_from,
            valid_to,
            forgotten,
            scope,
            updated_at,
        } = f.clone();
        UserFactRecord {
            id,
            text,
            kind,
            claim_key,
            source: source.map(|s| {
                let FactSource {
                    conversation_id,
                    message_id,
                    said_at,
                } = s;
                FactSourceRecord {
                    conversation_id,
                    message_id,
                    said_at,
                }
            }),
            valid_from,
            valid_to,
            forgotten,
            scope,
            updated_at,
        }
    }
}

impl From<UserFactRecord> for UserFact {
    fn from(r: UserFactRecord) -> Self {
        let UserFactRecord {
            id,
            text,
            kind,
            claim_key,
            source,
            valid_from,
            valid_to,
            forgotten,
            scope,
            updated_at,
        } = r;
        UserFact {
            id,
            text,
            kind,
            claim_key,
            source: source.map(|s| FactSource {
                conversation_id: s.conversation_id,
                message_id: s.message_id,
                said_at: s.said_at,
            }),
            valid_from,
            valid_to,
            forgotten,
            scope,
            updated_at,
        }
    }
}

impl Store {
    /// Every fact about the user (current, past and forgotten).
    pub async fn load_user_facts(&self) -> Result<Vec<UserFact>, StoreError> {
        let tx = self.tx(&[USER_FACTS], false)?;
        let req = tx.store(USER_FACTS)?.get_all().map_err(js_error)?;
        let all: Array = request(&req).await?.into();
        all.iter()
            .map(|v| from_js::<UserFactRecord>(v, "user fact").map(UserFact::from))
            .collect()
    }

    /// Writes these facts (new or changed), all or none.
    pub async fn save_user_facts(&self, facts: &[&UserFact]) -> Result<(), StoreError> {
        if facts.is_empty() {
            return Ok(());
        }
        let tx = self.tx(&[USER_FACTS], true)?;
        let s = tx.store(USER_FACTS)?;
        for f in facts {
            s.put(&to_js(&UserFactRecord::from(*f))?)
                .map_err(js_error)?;
        }
        tx.done().await
    }
}
