//! Facts about the user (`user_facts` store, key path `id`): every fact, current, past and
//! forgotten (a tombstone keeps its text so the same sentence from the same message is not taken in
//! again; see `engine::memory::user`). Read whole: there are hundreds, not millions. The record is
//! the store's own shape (`records.rs`), converted explicitly. Must not import `session` or `ui`.

use js_sys::Array;

use super::error::StoreError;
use super::idb::{from_js, js_error, request, to_js};
use super::records::{read, UserFactRecord};
use super::schema::USER_FACTS;
use super::Store;
use crate::engine::model::UserFact;

impl Store {
    /// Every fact about the user (current, past and forgotten).
    pub async fn load_user_facts(&self) -> Result<Vec<UserFact>, StoreError> {
        let tx = self.tx(&[USER_FACTS], false)?;
        let req = tx.store(USER_FACTS)?.get_all().map_err(js_error)?;
        let all: Array = request(&req).await?.into();
        all.iter()
            .map(|v| read(from_js::<UserFactRecord>(v, "user fact")?, "user fact"))
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
