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
use super::schema::{ATTACHMENTS, CONVERSATIONS, ENTITIES, MESSAGES, SUMMARIES, SYNC_DOCS};
use super::sync_docs::{record_of, synced_of};
use super::{Span, Store, WritePace};
use crate::engine::model::{Conversation, Message};
use crate::engine::sync::batch::{plan, wanted_docs, wanted_records, Held, Plan};
use crate::engine::sync::Doc;

/// Reads `keys` from `store`, handing each record found to `each`, in slices `pace` sizes: a
/// slice's `get`s are queued at once and only its last one is awaited (a transaction's requests
/// complete in order), and each task reads the slice that came back and queues the next one, so
/// decoding a page of records is never one task.
async fn read_each(
    tx: &Tx,
    store: &str,
    keys: &[String],
    pace: &mut dyn WritePace,
    mut each: impl FnMut(&str, JsValue) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let s = tx.store(store)?;
    let mut pending: Option<(usize, Vec<web_sys::IdbRequest>)> = None;
    let mut done = 0;
    loop {
        if let Some(last) = pending.as_ref().and_then(|(_, reqs)| reqs.last()) {
            request(last).await?;
        }
        if done >= keys.len() && pending.is_none() {
            return Ok(());
        }
        let n = pace
            .next(done, keys.len())
            .ok_or(StoreError::Cancelled)?
            .max(1);
        let mut units = 0;
        if let Some((from, reqs)) = pending.take() {
            units += reqs.len();
            for (k, r) in keys[from..].iter().zip(&reqs) {
                let v = r.result().map_err(js_error)?;
                if !v.is_undefined() {
                    each(k, v)?;
                }
            }
        }
        if done < keys.len() {
            let end = (done + n).min(keys.len());
            let reqs = keys[done..end]
                .iter()
                .map(|k| s.get(&JsValue::from_str(k)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(js_error)?;
            pending = Some((done, reqs));
            done = end;
        }
        pace.issued(units.max(1));
    }
}

async fn held(
    tx: &Tx,
    batch: &[(Doc, String)],
    pace: &mut dyn WritePace,
) -> Result<Held, StoreError> {
    let mut held = Held::default();
    read_each(tx, SYNC_DOCS, &wanted_docs(batch), pace, |id, v| {
        let d = synced_of(v)?;
        held.docs.insert(id.to_string(), (d.local, d.dirty));
        Ok(())
    })
    .await?;
    let (conversation_ids, message_ids) = wanted_records(batch, &held.docs);
    read_each(tx, CONVERSATIONS, &conversation_ids, pace, |id, v| {
        let rec: ConversationRecord = from_js(v, "conversation")?;
        let last_seq = rec.last_seq;
        held.conversations
            .insert(id.to_string(), (Conversation::try_from(rec)?, last_seq));
        Ok(())
    })
    .await?;
    read_each(tx, MESSAGES, &message_ids, pace, |id, v| {
        let rec: MessageRecord = from_js(v, "message")?;
        held.messages
            .insert(id.to_string(), Message::try_from(rec)?);
        Ok(())
    })
    .await?;
    Ok(held)
}

/// Writes the plan in slices `pace` sizes (the synced documents, then the messages added), each
/// queued once the storage has taken the first write of the one before: that wait is a yield to
/// the page that keeps the transaction alive.
async fn write(tx: &Tx, p: &Plan, pace: &mut dyn WritePace) -> Result<(), StoreError> {
    let docs = tx.store(SYNC_DOCS)?;
    let messages = tx.store(MESSAGES)?;
    let added: Vec<(&Message, &str, u64)> = p
        .changes
        .iter()
        .flat_map(|c| {
            c.added
                .iter()
                .map(move |m| (m, c.conversation.id.as_str(), m.seq))
        })
        .collect();
    let total = p.docs.len() + added.len();
    let mut done = 0;
    while done < total {
        let n = pace.next(done, total).ok_or(StoreError::Cancelled)?.max(1);
        let end = (done + n).min(total);
        let span = Span::new("apply.slice");
        let mut first = None;
        for (d, dirty) in p
            .docs
            .get(done.min(p.docs.len())..end.min(p.docs.len()))
            .unwrap_or(&[])
        {
            let r = docs.put(&record_of(d, *dirty)?).map_err(js_error)?;
            first.get_or_insert(r);
        }
        let from = done.max(p.docs.len()) - p.docs.len();
        let to = end.max(p.docs.len()) - p.docs.len();
        if from < to {
            let r = add_all(&messages, added[from..to].iter().copied())?;
            first = first.or(r);
        }
        pace.issued(end - done);
        done = end;
        drop(span);
        if let Some(r) = first {
            request(&r).await?;
        }
    }
    let _span = Span::new("apply.rest");
    let convs = tx.store(CONVERSATIONS)?;
    for c in &p.changes {
        let mut rec = ConversationRecord::from(&c.conversation);
        rec.last_seq = c.last_seq;
        convs.put(&to_js(&rec)?).map_err(js_error)?;
    }
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
    /// to apply) in one transaction, as the engine's `sync::batch::plan` decides, its reads and
    /// writes in slices `reads` and `writes` size; returns the plan, for the caller to report and to hand on what must be
    /// pushed again.
    pub async fn apply_sync_batch(
        &self,
        batch: Vec<(Doc, String)>,
        reads: &mut dyn WritePace,
        writes: &mut dyn WritePace,
    ) -> Result<Plan, StoreError> {
        let tx = self.tx(
            &[
                SYNC_DOCS,
                CONVERSATIONS,
                MESSAGES,
                SUMMARIES,
                ENTITIES,
                ATTACHMENTS,
            ],
            true,
        )?;
        let span = Span::new("apply.held");
        let held = match held(&tx, &batch, reads).await {
            Ok(h) => h,
            Err(e) => return tx.fail(e).await,
        };
        drop(span);
        let span = Span::new("apply.plan");
        let p = plan(batch, &held);
        drop(span);
        if let Err(e) = write(&tx, &p, writes).await {
            return tx.fail(e).await;
        }
        tx.done().await?;
        Ok(p)
    }
}
