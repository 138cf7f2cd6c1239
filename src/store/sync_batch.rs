//! Sync's batch write path: a batch of merged documents applied in ONE readwrite transaction over
//! the synced documents, the conversations and the messages. The transaction reads what the
//! engine's `sync::batch::plan` needs (the stored documents, then the records only the documents
//! that change touch; every read of a kind queued at once), hands it the batch, and writes
//! the plan it returns: the synced documents, the conversations created or changed (with their
//! counters), the messages added (through the bulk message path, with their search terms), the
//! messages deleted elsewhere (blanked records), and the conversations deleted elsewhere (with
//! their messages, summaries and entities).
//! Either all of it is stored or none of it.
//!
//! The store decides nothing here: the plan is the engine's. Must not import `ui`, `session`,
//! `transport`.

use wasm_bindgen::JsValue;

use super::conversations::delete_contents;
use super::error::StoreError;
use super::idb::{from_js, js_error, request, to_js, Tx};
use super::messages::add_all;
use super::records::{ConversationRecord, MessageRecord};
use super::schema::{CONVERSATIONS, ENTITIES, MESSAGES, SUMMARIES, SYNC_DOCS};
use super::sync_docs::{record_of, synced_of, SLICE};
use super::Store;
use crate::engine::model::{Conversation, Message};
use crate::engine::sync::batch::{plan, wanted_docs, wanted_records, Held, Plan};
use crate::engine::sync::Doc;

/// Queues a `get` per key on `store`, then awaits them all (one round of requests).
async fn get_all(
    tx: &Tx,
    store: &str,
    keys: &[String],
) -> Result<Vec<(String, JsValue)>, StoreError> {
    let s = tx.store(store)?;
    let reqs = keys
        .iter()
        .map(|k| s.get(&JsValue::from_str(k)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(js_error)?;
    let mut out = Vec::with_capacity(keys.len());
    for (k, r) in keys.iter().zip(reqs) {
        let v = request(&r).await?;
        if !v.is_undefined() {
            out.push((k.clone(), v));
        }
    }
    Ok(out)
}

async fn held(tx: &Tx, batch: &[(Doc, String)]) -> Result<Held, StoreError> {
    let mut held = Held::default();
    for (id, v) in get_all(tx, SYNC_DOCS, &wanted_docs(batch)).await? {
        let d = synced_of(v)?;
        held.docs.insert(id, (d.local, d.dirty));
    }
    let (conversation_ids, message_ids) = wanted_records(batch, &held.docs);
    for (id, v) in get_all(tx, CONVERSATIONS, &conversation_ids).await? {
        let rec: ConversationRecord = from_js(v, "conversation")?;
        let last_seq = rec.last_seq;
        held.conversations
            .insert(id, (Conversation::try_from(rec)?, last_seq));
    }
    for (id, v) in get_all(tx, MESSAGES, &message_ids).await? {
        let rec: MessageRecord = from_js(v, "message")?;
        held.messages.insert(id, Message::try_from(rec)?);
    }
    Ok(held)
}

/// Writes the plan; every [`SLICE`] documents it waits for the last write, a yield to the page
/// that keeps the transaction alive.
async fn write(tx: &Tx, p: &Plan) -> Result<(), StoreError> {
    let docs = tx.store(SYNC_DOCS)?;
    for slice in p.docs.chunks(SLICE) {
        let mut last = None;
        for (d, dirty) in slice {
            last = Some(docs.put(&record_of(d, *dirty)?).map_err(js_error)?);
        }
        if let Some(r) = last {
            request(&r).await?;
        }
    }
    let convs = tx.store(CONVERSATIONS)?;
    for c in &p.changes {
        let mut rec = ConversationRecord::from(&c.conversation);
        rec.last_seq = c.last_seq;
        convs.put(&to_js(&rec)?).map_err(js_error)?;
    }
    let messages = tx.store(MESSAGES)?;
    add_all(
        &messages,
        p.changes.iter().flat_map(|c| {
            c.added
                .iter()
                .map(move |m| (m, c.conversation.id.as_str(), m.seq))
        }),
    )?;
    for m in &p.blanked {
        messages
            .put(&to_js(&MessageRecord::from(m))?)
            .map_err(js_error)?;
    }
    for id in &p.removed {
        delete_contents(tx, id).await?;
        convs.delete(&JsValue::from_str(id)).map_err(js_error)?;
    }
    Ok(())
}

impl Store {
    /// Applies a batch of merged documents (the server's copies with their revisions, in the order
    /// to apply) in one transaction, as the engine's `sync::batch::plan` decides; returns the plan,
    /// for the caller to report and to hand on what must be pushed again.
    pub async fn apply_sync_batch(&self, batch: Vec<(Doc, String)>) -> Result<Plan, StoreError> {
        let tx = self.tx(
            &[SYNC_DOCS, CONVERSATIONS, MESSAGES, SUMMARIES, ENTITIES],
            true,
        )?;
        let held = match held(&tx, &batch).await {
            Ok(h) => h,
            Err(e) => return tx.fail(e).await,
        };
        let p = plan(batch, &held);
        if let Err(e) = write(&tx, &p).await {
            return tx.fail(e).await;
        }
        tx.done().await?;
        Ok(p)
    }
}
