//! Messages: idempotent append with seq assigned in the same readwrite transaction that bumps the
//! conversation's counters, bounded reads through the `[conversation_id, seq]` index (last K, page
//! before a seq, everything after a seq), the bulk record path ([`add_all`]) that imports write
//! through, crash recovery of `streaming` messages, and the snippet around a search match (`search.rs`
//! finds the matches).

use std::collections::HashMap;

use serde::Serialize;

use js_sys::Array;
use wasm_bindgen::prelude::*;
use web_sys::{IdbCursorDirection, IdbObjectStore, IdbRequest};

use super::conversations::{get_record, not_found};
use super::error::StoreError;
use super::idb::{
    collect_cursor, from_js, get_each, js_error, maybe_stored, prefix_range, request, seq_range,
    to_js,
};
use super::records::{
    streaming_marker, MessageRecord, ReasoningRecord, StatsRecord, ToolCallRecord, UsageRecord,
};
use super::schema::{BY_CONV_SEQ, BY_STREAMING, CONVERSATIONS, MESSAGES};
use super::Store;
use crate::engine::backup::ExistingMessage;
use crate::engine::model::{Message, MessageMeta, MessageStatus, Millis, ToolStatus};
use crate::engine::shape::Field;

/// Result of [`Store::append_message`].
#[derive(Debug, Clone, PartialEq)]
pub struct AppendOutcome {
    /// The stored message (with its seq). For a repeated id, the message already stored.
    pub message: Message,
    /// False when a message with this id already existed (nothing was written).
    pub inserted: bool,
}

/// A [`MessageRecord`] as the bulk paths write it: borrowed from the [`Message`] and slim: empty
/// `tool_calls` and absent optional fields are left out instead of being written as `[]`/`null`
/// (reading fills them in with `#[serde(default)]`). Fewer properties make each structured clone,
/// and so each IndexedDB `add`, cheaper; the stored shape is otherwise exactly `MessageRecord`'s.
#[derive(Serialize)]
struct BulkMessage<'a> {
    id: &'a str,
    conversation_id: &'a str,
    seq: u64,
    role: &'a str,
    content: &'a str,
    status: &'a str,
    created_at: Millis,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tool_calls: Vec<ToolCallRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<UsageRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    streaming: Option<u8>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    terms: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    after: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    replaces: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    deleted: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    hidden: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stats: Option<StatsRecord>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    capped: bool,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    attachments: Vec<super::records::AttachmentRecord>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    attachment_hashes: Vec<String>,
}

impl<'a> BulkMessage<'a> {
    fn new(m: &'a Message, conversation_id: &'a str, seq: u64) -> Self {
        // Destructured without `..`: a new metadata field fails to compile here until it is written.
        let MessageMeta {
            tool_calls,
            usage,
            error,
            path,
            model,
            after,
            replaces,
            deleted,
            hidden,
            reasoning,
            stats,
            attachments,
            capped,
        } = &m.meta;
        BulkMessage {
            id: &m.id,
            conversation_id,
            seq,
            role: m.role.as_str(),
            content: &m.content,
            status: m.status.as_str(),
            created_at: m.created_at,
            tool_calls: Field::put(tool_calls),
            usage: Field::put(usage),
            error: error.as_deref(),
            path: path.map(|p| p.as_str()),
            model: model.as_deref(),
            streaming: streaming_marker(m.status),
            terms: crate::engine::search::index_terms(&m.content),
            after: after.as_deref(),
            replaces: replaces.as_deref(),
            deleted: *deleted,
            hidden: *hidden,
            reasoning: Field::put(reasoning),
            stats: Field::put(stats),
            capped: *capped,
            attachments: Field::put(attachments),
            attachment_hashes: super::records::blob_hashes(attachments),
        }
    }
}

/// Queues one `add` per message, in order, on `store` (bulk writes). `records` yields each message
/// with the conversation and seq it is stored under. Returns the first `add`'s request (none for no
/// records): a sliced write awaits it before queuing the next slice.
///
/// The records cross into JS as one JSON text per batch of [`BULK_BATCH`], turned into objects by
/// the engine's `JSON.parse`: building each object field by field from Rust (serde-wasm-bindgen, or
/// `Reflect::set`) costs one JS call per field and one UTF-8 decode per string, ~3x the time of
/// `serde_json` + `JSON.parse` (measured on 100k records: 0.9 s against 0.3 s). Batches are small, so
/// the first `add` leaves within a fraction of a millisecond and the storage backend (which works
/// in parallel with the page, and is the slower of the two) starts at once; a batch of 8,192 held
/// it back ~30-50 ms on a 10k import. They also bound the text held at once to ~150 KB.
pub(crate) fn add_all<'a>(
    store: &IdbObjectStore,
    records: impl IntoIterator<Item = (&'a Message, &'a str, u64)>,
) -> Result<Option<IdbRequest>, StoreError> {
    let mut records = records.into_iter().peekable();
    let mut batch = Vec::with_capacity(BULK_BATCH);
    let mut first = None;
    while records.peek().is_some() {
        batch.clear();
        batch.extend(
            records
                .by_ref()
                .take(BULK_BATCH)
                .map(|(m, conv, seq)| BulkMessage::new(m, conv, seq)),
        );
        let text = serde_json::to_string(&batch).map_err(|e| StoreError::Encode(e.to_string()))?;
        let objects: Array = js_sys::JSON::parse(&text).map_err(js_error)?.into();
        for v in objects.iter() {
            let req = store.add(&v).map_err(js_error)?;
            first.get_or_insert(req);
        }
    }
    Ok(first)
}

/// Messages per JSON text on the bulk path (see [`add_all`]).
const BULK_BATCH: usize = 512;

fn decode_all(values: impl IntoIterator<Item = JsValue>) -> Result<Vec<Message>, StoreError> {
    values
        .into_iter()
        .map(|v| Message::try_from(from_js::<MessageRecord>(v, "message")?))
        .collect()
}

/// Case-insensitive find; returns a snippet around the first match.
pub fn snippet_for(text: &str, query_lower: &str, context_chars: usize) -> Option<String> {
    if query_lower.is_empty() {
        return None;
    }
    // Lowercase char by char, remembering where each lowercased byte came from.
    let mut lower = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len());
    for (i, ch) in text.char_indices() {
        for l in ch.to_lowercase() {
            let start = lower.len();
            lower.push(l);
            origin.extend(std::iter::repeat_n(i, lower.len() - start));
        }
    }
    let at = lower.find(query_lower)?;
    let end_lower = at + query_lower.len();
    let start = origin[at];
    let end = if end_lower < origin.len() {
        origin[end_lower]
    } else {
        text.len()
    };
    let begin = text[..start]
        .char_indices()
        .rev()
        .nth(context_chars.saturating_sub(1))
        .map(|(i, _)| i)
        .unwrap_or(0);
    let stop = text[end..]
        .char_indices()
        .nth(context_chars)
        .map(|(i, _)| end + i)
        .unwrap_or(text.len());
    let mut s = String::new();
    if begin > 0 {
        s.push('…');
    }
    s.push_str(&text[begin..stop]);
    if stop < text.len() {
        s.push('…');
    }
    Some(s)
}

impl Store {
    /// Appends `m` to its conversation. The same id twice is a no-op (returns the stored message).
    /// `m.seq` is ignored: seq = conversation's last seq + 1, assigned in this transaction, which also
    /// updates the conversation's `message_count` and `updated_at`.
    pub async fn append_message(&self, m: &Message) -> Result<AppendOutcome, StoreError> {
        let tx = self.tx(&[CONVERSATIONS, MESSAGES], true)?;
        let messages = tx.store(MESSAGES)?;
        let existing = request(&messages.get(&JsValue::from_str(&m.id)).map_err(js_error)?).await?;
        if !existing.is_undefined() {
            let message =
                match from_js::<MessageRecord>(existing, "message").and_then(Message::try_from) {
                    Ok(x) => x,
                    Err(e) => return tx.fail(e).await,
                };
            tx.done().await?;
            return Ok(AppendOutcome {
                message,
                inserted: false,
            });
        }
        let convs = tx.store(CONVERSATIONS)?;
        let Some(mut conv) = get_record(&convs, &m.conversation_id).await? else {
            return tx.fail(not_found(&m.conversation_id)).await;
        };
        let mut rec = MessageRecord::from(m);
        rec.seq = conv.last_seq + 1;
        conv.last_seq = rec.seq;
        conv.message_count += 1;
        conv.updated_at = conv.updated_at.max(m.created_at);
        messages.add(&to_js(&rec)?).map_err(js_error)?;
        convs.put(&to_js(&conv)?).map_err(js_error)?;
        tx.done().await?;
        let mut message = m.clone();
        message.seq = rec.seq;
        Ok(AppendOutcome {
            message,
            inserted: true,
        })
    }

    /// One message by id.
    pub async fn get_message(&self, id: &str) -> Result<Option<Message>, StoreError> {
        let tx = self.tx(&[MESSAGES], false)?;
        let v = request(
            &tx.store(MESSAGES)?
                .get(&JsValue::from_str(id))
                .map_err(js_error)?,
        )
        .await?;
        if v.is_undefined() {
            return Ok(None);
        }
        Message::try_from(from_js::<MessageRecord>(v, "message")?).map(Some)
    }

    /// Up to `k` messages of `conv` with seq < `before` (or the last ones), oldest first.
    /// Seqs are gap-free (from 1, or from 0 in an import), so the wanted messages are exactly
    /// `[top - k + 1, top]`: one bounded
    /// `getAll` (one round trip to the storage backend). If the range comes back short (an import
    /// skipped known ids, leaving a gap), the index is walked backwards with a cursor instead.
    async fn read_back(
        &self,
        conv: &str,
        before: Option<u64>,
        k: usize,
    ) -> Result<Vec<Message>, StoreError> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let tx = self.tx(&[CONVERSATIONS, MESSAGES], false)?;
        let index = tx.store(MESSAGES)?.index(BY_CONV_SEQ).map_err(js_error)?;
        let top = match before {
            Some(0) => return Ok(Vec::new()),
            Some(b) => Some(b - 1),
            None => get_record(&tx.store(CONVERSATIONS)?, conv)
                .await?
                .map(|c| c.last_seq),
        };
        if let Some(top) = top {
            // Seqs start at 1 (appends) or at 0 (imports): a range reaching 0 is whole either way.
            let lo = top.saturating_sub(k as u64 - 1);
            let range = seq_range(conv, lo as f64, false, Some(top as f64), false)?;
            let got: Array = request(&index.get_all_with_key(&range).map_err(js_error)?)
                .await?
                .into();
            let n = u64::from(got.length());
            if n == top - lo + 1 || (lo == 0 && n == top) {
                return decode_all(got.iter());
            }
        }
        let range = match before {
            Some(b) => seq_range(conv, 0.0, false, Some(b as f64), true)?,
            None => prefix_range(conv)?,
        };
        let req: IdbRequest = index
            .open_cursor_with_range_and_direction(&range, IdbCursorDirection::Prev)
            .map_err(js_error)?;
        let mut values = collect_cursor(&req, k).await?;
        values.reverse();
        decode_all(values)
    }

    /// The last `k` messages of a conversation, oldest first.
    pub async fn load_last(
        &self,
        conversation_id: &str,
        k: usize,
    ) -> Result<Vec<Message>, StoreError> {
        self.read_back(conversation_id, None, k).await
    }

    /// Up to `k` messages with seq < `before_seq`, oldest first (the page above what is shown).
    pub async fn load_before(
        &self,
        conversation_id: &str,
        before_seq: u64,
        k: usize,
    ) -> Result<Vec<Message>, StoreError> {
        self.read_back(conversation_id, Some(before_seq), k).await
    }

    /// Every message with seq > `after_seq`, oldest first (input of a memory update).
    pub async fn load_since(
        &self,
        conversation_id: &str,
        after_seq: u64,
    ) -> Result<Vec<Message>, StoreError> {
        let tx = self.tx(&[MESSAGES], false)?;
        let index = tx.store(MESSAGES)?.index(BY_CONV_SEQ).map_err(js_error)?;
        let range = seq_range(conversation_id, after_seq as f64, true, None, false)?;
        let all: Array = request(&index.get_all_with_key(&range).map_err(js_error)?)
            .await?
            .into();
        decode_all(all.iter())
    }

    /// Up to `k` messages with seq > `after_seq`, oldest first (the page below what is shown).
    pub async fn load_after(
        &self,
        conversation_id: &str,
        after_seq: u64,
        k: usize,
    ) -> Result<Vec<Message>, StoreError> {
        let tx = self.tx(&[MESSAGES], false)?;
        let index = tx.store(MESSAGES)?.index(BY_CONV_SEQ).map_err(js_error)?;
        let range = seq_range(conversation_id, after_seq as f64, true, None, false)?;
        let limit = u32::try_from(k).unwrap_or(u32::MAX);
        let got: Array = request(
            &index
                .get_all_with_key_and_limit(&range, limit)
                .map_err(js_error)?,
        )
        .await?
        .into();
        decode_all(got.iter())
    }

    /// Which of `ids` are already stored, and where (for an import's skip/collision checks).
    ///
    /// Bulk path: [`maybe_stored`] (one `getAllKeys` over `[min id, max id]`), then one `get` per
    /// id it found, every `get` queued before the first is awaited; one read transaction.
    pub(crate) async fn existing_message_ids<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a str>,
    ) -> Result<HashMap<String, ExistingMessage>, StoreError> {
        let ids: Vec<&str> = ids.into_iter().collect();
        let mut out = HashMap::new();
        if ids.is_empty() {
            return Ok(out);
        }
        let tx = self.tx(&[MESSAGES], false)?;
        let store = tx.store(MESSAGES)?;
        let candidates = maybe_stored(&store, ids).await?;
        for v in get_each(&store, &candidates).await? {
            if !v.is_undefined() {
                let rec: MessageRecord = from_js(v, "message")?;
                out.insert(
                    rec.id,
                    ExistingMessage {
                        conversation_id: rec.conversation_id,
                        seq: rec.seq,
                    },
                );
            }
        }
        Ok(out)
    }

    /// Turns every message left `streaming` (the tab died mid-reply, or while its tool calls waited
    /// or ran) into `interrupted`, keeping its partial content; its calls not answered become
    /// interrupted (as `engine::tools::interrupt_pending` does), never run again. Call once after opening. Returns how many were changed.
    /// They are counted first in a read-only transaction, so a start with none (nearly every start)
    /// commits no readwrite transaction.
    pub async fn mark_interrupted_streams(&self) -> Result<usize, StoreError> {
        let key = JsValue::from_f64(1.0);
        let ro = self.tx(&[MESSAGES], false)?;
        let index = ro.store(MESSAGES)?.index(BY_STREAMING).map_err(js_error)?;
        let left = request(&index.count_with_key(&key).map_err(js_error)?).await?;
        drop(ro);
        if left.as_f64().unwrap_or(0.0) < 1.0 {
            return Ok(0);
        }
        // Rare (a page closed mid-reply): its own function, out of the opening's (`outlined`).
        super::outlined(self.mark_streams(key)).await
    }

    /// Marks the replies indexed as streaming under `key` interrupted, in one transaction.
    async fn mark_streams(&self, key: JsValue) -> Result<usize, StoreError> {
        let tx = self.tx(&[MESSAGES], true)?;
        let messages = tx.store(MESSAGES)?;
        let index = messages.index(BY_STREAMING).map_err(js_error)?;
        let all: Array = request(&index.get_all_with_key(&key).map_err(js_error)?)
            .await?
            .into();
        let n = all.length() as usize;
        for v in all.iter() {
            let mut rec: MessageRecord = match from_js(v, "message") {
                Ok(r) => r,
                Err(e) => return tx.fail(e).await,
            };
            rec.status = MessageStatus::Interrupted.as_str().to_string();
            rec.streaming = None;
            // Its tool calls waiting or running may or may not have run: never run again.
            for c in rec.tool_calls.iter_mut() {
                let status = c.status.as_deref().and_then(ToolStatus::parse);
                if status.is_some_and(|s| !s.is_settled()) {
                    c.status = Some(ToolStatus::Interrupted.as_str().to_string());
                }
            }
            messages.put(&to_js(&rec)?).map_err(js_error)?;
        }
        tx.done().await?;
        Ok(n)
    }
}
