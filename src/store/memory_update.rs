//! What a live memory update reads and writes (`engine::memory::update`), one transaction each: the
//! conversation, its latest summary (read once), the messages after it, the last failure and the
//! setting naming the branch on screen; the
//! entity graph, the form remembered for the endpoint and the failure; and its result, written
//! whole or not at all: the new memory (only while the latest summary is still the one the update
//! was built on, checked inside the same transaction), the failure cleared or recorded, the form
//! the endpoint took. Must not import `ui`, `session`, `transport`.

use js_sys::Array;
use wasm_bindgen::JsValue;
use web_sys::{IdbCursorDirection, IdbObjectStore};

use super::conversations::get_record;
use super::error::StoreError;
use super::idb::{collect_cursor, from_js, js_error, prefix_range, request, seq_range, to_js};
use super::memory_state::{failure_key, failure_of, failure_value, form_of, forms_with, FORMS_KEY};
use super::records::{read, scope_key, EntityRecord, MessageRecord, SummaryRecord};
use super::schema::{BY_CONV_SEQ, CONVERSATIONS, ENTITIES, MESSAGES, SETTINGS, SUMMARIES};
use super::settings::{put_setting_in, setting_in};
use super::Store;
use crate::engine::memory::update::{LoadedGraph, Write};
use crate::engine::memory::MemoryFailure;
use crate::engine::model::{Conversation, ConversationSummary, EntityNode, EntityScope, Message};

/// What [`Store::load_memory_span`] read.
#[derive(Debug, Clone)]
pub struct MemorySpan {
    /// `None`: no such conversation.
    pub conversation: Option<Conversation>,
    pub previous: Option<ConversationSummary>,
    /// After the summary's `covers_up_to_seq`, or the last `window` without one; ascending.
    pub messages: Vec<Message>,
    pub failure: Option<MemoryFailure>,
    /// The setting under the `branch_key` asked for (the branch on screen), if any.
    pub branch: Option<serde_json::Value>,
}

impl Store {
    /// A conversation, its latest summary, the messages after it (the last `window` without one),
    /// its last failed update and the setting under `branch_key`, in one transaction.
    pub async fn load_memory_span(
        &self,
        id: &str,
        window: usize,
        branch_key: &str,
    ) -> Result<MemorySpan, StoreError> {
        let tx = self.tx(&[CONVERSATIONS, SUMMARIES, MESSAGES, SETTINGS], false)?;
        let Some(rec) = get_record(&tx.store(CONVERSATIONS)?, id).await? else {
            return Ok(MemorySpan {
                conversation: None,
                previous: None,
                messages: Vec::new(),
                failure: None,
                branch: None,
            });
        };
        let last_seq = rec.last_seq;
        let conversation = Conversation::try_from(rec)?;
        let previous = latest_in(&tx.store(SUMMARIES)?, id).await?;
        let messages = tx.store(MESSAGES)?;
        let messages = match previous.as_ref().map(|s| s.covers_up_to_seq) {
            Some(seq) => since_in(&messages, id, seq).await?,
            None => last_in(&messages, id, last_seq, window).await?,
        };
        let settings = tx.store(SETTINGS)?;
        let failure = failure_of(setting_in(&settings, &failure_key(id)).await?)?;
        let branch = setting_in(&settings, branch_key).await?;
        Ok(MemorySpan {
            conversation: Some(conversation),
            previous,
            messages,
            failure,
            branch,
        })
    }

    /// A conversation's entities, the form remembered for the memory endpoint `endpoint_key` and
    /// the conversation's last failed update, in one transaction.
    pub async fn load_memory_graph(
        &self,
        id: &str,
        endpoint_key: &str,
    ) -> Result<LoadedGraph, StoreError> {
        let tx = self.tx(&[ENTITIES, SETTINGS], false)?;
        let scope = EntityScope::Conversation(id.to_string());
        let req = tx
            .store(ENTITIES)?
            .get_all_with_key(&prefix_range(scope_key(&scope))?)
            .map_err(js_error)?;
        let all: Array = request(&req).await?.into();
        let existing = all
            .iter()
            .map(|v| EntityNode::try_from(from_js::<EntityRecord>(v, "entity")?))
            .collect::<Result<Vec<_>, _>>()?;
        let settings = tx.store(SETTINGS)?;
        let remembered = form_of(setting_in(&settings, FORMS_KEY).await?, endpoint_key)?;
        let failure = failure_of(setting_in(&settings, &failure_key(id)).await?)?;
        Ok(LoadedGraph {
            existing,
            remembered,
            failure,
        })
    }

    /// Writes a memory update's result in one transaction (see the module docs). Returns whether
    /// its new memory was stored (false: there was none, or another update landed first and
    /// nothing of it was written). A node of another scope is refused, nothing written.
    pub async fn write_memory_update(&self, id: &str, w: &Write) -> Result<bool, StoreError> {
        if let Some(n) = w
            .memory
            .as_ref()
            .and_then(|m| m.nodes.iter().find(|n| n.scope != m.scope))
        {
            return Err(StoreError::Encode(format!(
                "entity '{}' belongs to another scope than the graph being saved",
                n.id
            )));
        }
        let tx = self.tx(&[SUMMARIES, ENTITIES, SETTINGS], true)?;
        let (stored, settings) = match self.put_memory(&tx, id, w).await {
            Ok(stored) => (stored, tx.store(SETTINGS)?),
            Err(e) => return tx.fail(e).await,
        };
        let rest = async {
            if let Some(f) = &w.failure {
                put_setting_in(&settings, &failure_key(id), &failure_value(f)?)?;
            }
            if let Some((key, form)) = &w.form {
                let forms = setting_in(&settings, FORMS_KEY).await?;
                put_setting_in(&settings, FORMS_KEY, &forms_with(forms, key, *form)?)?;
            }
            Ok::<(), StoreError>(())
        };
        if let Err(e) = rest.await {
            return tx.fail(e).await;
        }
        tx.done().await?;
        Ok(stored)
    }

    /// The new memory of `w`, when the latest summary is still the one it was built on: the
    /// summary, the scope's graph replaced, the failure cleared. Returns whether it was put.
    async fn put_memory(
        &self,
        tx: &super::idb::Tx,
        id: &str,
        w: &Write,
    ) -> Result<bool, StoreError> {
        let Some(m) = &w.memory else {
            return Ok(false);
        };
        let latest = latest_in(&tx.store(SUMMARIES)?, id).await?;
        if latest.map(|s| s.version) != m.expected {
            return Ok(false);
        }
        if let Some(s) = &m.summary {
            tx.store(SUMMARIES)?
                .put(&to_js(&SummaryRecord::from(s))?)
                .map_err(js_error)?;
        }
        let entities = tx.store(ENTITIES)?;
        entities
            .delete(&prefix_range(scope_key(&m.scope))?)
            .map_err(js_error)?;
        for n in &m.nodes {
            entities
                .put(&to_js(&EntityRecord::from(n))?)
                .map_err(js_error)?;
        }
        tx.store(SETTINGS)?
            .delete(&JsValue::from_str(&failure_key(id)))
            .map_err(js_error)?;
        Ok(true)
    }
}

/// The latest summary of conversation `id` in `summaries`.
async fn latest_in(
    summaries: &IdbObjectStore,
    id: &str,
) -> Result<Option<ConversationSummary>, StoreError> {
    let req = summaries
        .open_cursor_with_range_and_direction(&prefix_range(id)?, IdbCursorDirection::Prev)
        .map_err(js_error)?;
    match collect_cursor(&req, 1).await?.into_iter().next() {
        None => Ok(None),
        Some(v) => Ok(Some(read(
            from_js::<SummaryRecord>(v, "summary")?,
            "summary",
        )?)),
    }
}

/// Every message of `id` after `after_seq`, ascending.
async fn since_in(
    messages: &IdbObjectStore,
    id: &str,
    after_seq: u64,
) -> Result<Vec<Message>, StoreError> {
    let index = messages.index(BY_CONV_SEQ).map_err(js_error)?;
    let range = seq_range(id, after_seq as f64, true, None, false)?;
    let all: Array = request(&index.get_all_with_key(&range).map_err(js_error)?)
        .await?
        .into();
    decode(all.iter())
}

/// The last `k` messages of `id` (whose last seq is `top`), ascending: one bounded read when the
/// seqs below `top` have no gap, else a walk back along the index.
async fn last_in(
    messages: &IdbObjectStore,
    id: &str,
    top: u64,
    k: usize,
) -> Result<Vec<Message>, StoreError> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let index = messages.index(BY_CONV_SEQ).map_err(js_error)?;
    let lo = top.saturating_sub(k as u64 - 1);
    let range = seq_range(id, lo as f64, false, Some(top as f64), false)?;
    let got: Array = request(&index.get_all_with_key(&range).map_err(js_error)?)
        .await?
        .into();
    let n = u64::from(got.length());
    if n == top - lo + 1 || (lo == 0 && n == top) {
        return decode(got.iter());
    }
    let req = index
        .open_cursor_with_range_and_direction(&prefix_range(id)?, IdbCursorDirection::Prev)
        .map_err(js_error)?;
    let mut values = collect_cursor(&req, k).await?;
    values.reverse();
    decode(values)
}

fn decode(values: impl IntoIterator<Item = JsValue>) -> Result<Vec<Message>, StoreError> {
    values
        .into_iter()
        .map(|v| Message::try_from(from_js::<MessageRecord>(v, "message")?))
        .collect()
}
