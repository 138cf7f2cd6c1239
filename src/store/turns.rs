//! Appending a whole turn — the user's message and the reply placeholder — in ONE transaction, when
//! the caller already knows the conversation's last seq. Because the seqs are then known before the
//! write commits, the session can build and send the request while IndexedDB commits, and still
//! cannot store anything out of order: if the conversation moved on (another tab appended, an edit
//! removed its tail), nothing is written and the caller takes the ordinary path.
//! Must not import: `ui`, `session`, `transport`, leptos.

use wasm_bindgen::prelude::*;

use super::conversations::get_record;
use super::error::StoreError;
use super::idb::{js_error, request, to_js};
use super::records::MessageRecord;
use super::schema::{CONVERSATIONS, MESSAGES};
use super::Store;
use crate::engine::model::Message;

impl Store {
    /// Appends `user` and then `reply` to `user`'s conversation with seqs `expected_last_seq + 1` and
    /// `+ 2` (the seqs they carry are ignored), updating the conversation's counters, in one
    /// transaction. Writes nothing and returns false when the conversation's last seq is not
    /// `expected_last_seq`, or when either id is already stored. A full disk is
    /// [`StoreError::Full`] with nothing written.
    pub async fn append_turn(
        &self,
        user: &Message,
        reply: &Message,
        expected_last_seq: u64,
    ) -> Result<bool, StoreError> {
        let tx = self.tx(&[CONVERSATIONS, MESSAGES], true)?;
        let messages = tx.store(MESSAGES)?;
        let convs = tx.store(CONVERSATIONS)?;
        // One request at a time: `request` listens from its first poll on.
        let conv = get_record(&convs, &user.conversation_id).await?;
        let mut taken = 0.0;
        for id in [&user.id, &reply.id] {
            let count = messages
                .count_with_key(&JsValue::from_str(id))
                .map_err(js_error)?;
            taken += request(&count).await?.as_f64().unwrap_or(1.0);
        }
        let same_conversation = reply.conversation_id == user.conversation_id;
        let Some(mut conv) =
            conv.filter(|c| c.last_seq == expected_last_seq && taken == 0.0 && same_conversation)
        else {
            tx.done().await?;
            return Ok(false);
        };
        for (m, seq) in [
            (user, expected_last_seq + 1),
            (reply, expected_last_seq + 2),
        ] {
            let mut rec = MessageRecord::from(m);
            rec.seq = seq;
            messages.add(&to_js(&rec)?).map_err(js_error)?;
            conv.updated_at = conv.updated_at.max(m.created_at);
        }
        conv.last_seq = expected_last_seq + 2;
        conv.message_count += 2;
        convs.put(&to_js(&conv)?).map_err(js_error)?;
        tx.done().await?;
        Ok(true)
    }
}
