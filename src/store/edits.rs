//! Writes that change several records at once, each in ONE transaction so nothing is half-written:
//! finishing a message with its metadata (a deleted message's tombstone too), clearing a conversation
//! (messages and memory, keeping the conversation), saving a memory update (summary version +
//! entity graph), and writing a validated backup import (its messages in slices a [`WritePace`]
//! sizes, still one transaction with its memory and facts about the user; a stop aborts it). Also the id lookups an import validates
//! against. Imports no engine decision code; the plans come from `engine::backup`.

use std::collections::{BTreeMap, HashMap};

use js_sys::Array;
use wasm_bindgen::JsValue;
use web_sys::IdbRequest;

use super::conversations::{delete_contents, get_record, not_found};
use super::error::StoreError;
use super::idb::{from_js, get_each, js_error, maybe_stored, prefix_range, request, to_js, Tx};
use super::messages::add_all;
use super::records::{
    read, scope_key, ConversationRecord, EntityRecord, MessageRecord, ProjectRecord, SummaryRecord,
    UserFactRecord,
};
use super::schema::{
    ATTACHMENTS, BY_CONV_SEQ, CONVERSATIONS, ENTITIES, MESSAGES, PROJECTS, SUMMARIES, USER_FACTS,
};
use super::Store;
use crate::engine::backup::{CheckedImport, ExistingIds, ImportPlan};
use crate::engine::model::{
    Conversation, ConversationSummary, EntityNode, EntityScope, Message, MessageMeta,
    MessageStatus, Millis,
};

impl Store {
    /// Replaces content, status and metadata of one message (a reply's saves while and after
    /// streaming). One get and one put; seq and conversation are kept.
    pub async fn update_message(
        &self,
        id: &str,
        content: &str,
        status: MessageStatus,
        meta: &MessageMeta,
    ) -> Result<(), StoreError> {
        let tx = self.tx(&[MESSAGES], true)?;
        let messages = tx.store(MESSAGES)?;
        let v = request(&messages.get(&JsValue::from_str(id)).map_err(js_error)?).await?;
        if v.is_undefined() {
            return tx
                .fail(StoreError::NotFound {
                    what: "message",
                    id: id.to_string(),
                })
                .await;
        }
        let mut m = match from_js::<MessageRecord>(v, "message").and_then(Message::try_from) {
            Ok(m) => m,
            Err(e) => return tx.fail(e).await,
        };
        m.content = content.to_string();
        m.status = status;
        m.meta = meta.clone();
        messages
            .put(&to_js(&MessageRecord::from(&m))?)
            .map_err(js_error)?;
        tx.done().await
    }

    /// Every message of a conversation, oldest first (for export).
    pub async fn load_all_messages(
        &self,
        conversation_id: &str,
    ) -> Result<Vec<Message>, StoreError> {
        let tx = self.tx(&[MESSAGES], false)?;
        let index = tx.store(MESSAGES)?.index(BY_CONV_SEQ).map_err(js_error)?;
        let all: Array = request(
            &index
                .get_all_with_key(&prefix_range(conversation_id)?)
                .map_err(js_error)?,
        )
        .await?
        .into();
        all.iter()
            .map(|v| Message::try_from(from_js::<MessageRecord>(v, "message")?))
            .collect()
    }

    /// Deletes a conversation's messages, summaries and entities, keeping the conversation (its
    /// counters reset, its remote session dropped: the agent must not resume what was cleared).
    pub async fn clear_conversation(
        &self,
        id: &str,
        now: Millis,
    ) -> Result<Conversation, StoreError> {
        let tx = self.tx(
            &[CONVERSATIONS, MESSAGES, SUMMARIES, ENTITIES, ATTACHMENTS],
            true,
        )?;
        let convs = tx.store(CONVERSATIONS)?;
        let Some(mut rec) = get_record(&convs, id).await? else {
            return tx.fail(not_found(id)).await;
        };
        delete_contents(&tx, id).await?;
        rec.message_count = 0;
        rec.remote_handle = None;
        rec.last_path = None;
        rec.updated_at = rec.updated_at.max(now);
        convs.put(&to_js(&rec)?).map_err(js_error)?;
        let conv = match Conversation::try_from(rec) {
            Ok(c) => c,
            Err(e) => return tx.fail(e).await,
        };
        tx.done().await?;
        Ok(conv)
    }

    /// Saves a memory update: the new summary version (if any) and the scope's whole entity graph,
    /// in one transaction.
    pub async fn save_memory(
        &self,
        summary: Option<&ConversationSummary>,
        scope: &EntityScope,
        nodes: &[EntityNode],
    ) -> Result<(), StoreError> {
        if let Some(n) = nodes.iter().find(|n| &n.scope != scope) {
            return Err(StoreError::Encode(format!(
                "entity '{}' belongs to another scope than the graph being saved",
                n.id
            )));
        }
        let tx = self.tx(&[SUMMARIES, ENTITIES], true)?;
        if let Some(s) = summary {
            tx.store(SUMMARIES)?
                .put(&to_js(&SummaryRecord::from(s))?)
                .map_err(js_error)?;
        }
        let entities = tx.store(ENTITIES)?;
        entities
            .delete(&prefix_range(scope_key(scope))?)
            .map_err(js_error)?;
        for n in nodes {
            if let Err(e) =
                to_js(&EntityRecord::from(n)).and_then(|v| entities.put(&v).map_err(js_error))
            {
                return tx.fail(e).await;
            }
        }
        tx.done().await
    }

    /// What the store holds of the records a checked backup names (only those are looked up).
    pub async fn existing_ids_for(&self, named: &CheckedImport) -> Result<ExistingIds, StoreError> {
        let mut out = ExistingIds {
            messages: self.existing_message_ids(named.message_ids()).await?,
            ..ExistingIds::default()
        };
        let tx = self.tx(&[CONVERSATIONS, SUMMARIES, ENTITIES], false)?;
        let convs = tx.store(CONVERSATIONS)?;
        // Only the conversations the key range holds are read (an import of 500 new ones: one
        // `getAllKeys` instead of 500 `get`s, ~30 ms of the page's time at 10k messages).
        let conv_reqs = maybe_stored(&convs, named.conversation_ids())
            .await?
            .into_iter()
            .map(|id| {
                convs
                    .get(&JsValue::from_str(id))
                    .map(|r| (id.to_string(), r))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(js_error)?;
        let summaries = tx.store(SUMMARIES)?;
        // Summary versions are looked up only for the conversations whose file holds some.
        let mut conv_ids: Vec<&str> = named.conversation_ids_with_summaries().collect();
        // Equal `&str`s are indistinguishable, so the shared stable sort gives the same order.
        crate::engine::sort::sort_by(&mut conv_ids, |a, b| a.cmp(b));
        conv_ids.dedup();
        let sum_reqs = conv_ids
            .iter()
            .map(|id| {
                prefix_range(id).and_then(|r| summaries.get_all_with_key(&r).map_err(js_error))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let entities = tx.store(ENTITIES)?;
        let ent_reqs = named
            .entity_keys()
            .map(|(scope, id)| {
                let key = Array::of2(
                    &JsValue::from_str(scope_key(&scope)),
                    &JsValue::from_str(id),
                );
                entities
                    .get(&key)
                    .map(|r| ((id.to_string(), scope), r))
                    .map_err(js_error)
            })
            .collect::<Result<Vec<_>, _>>()?;
        for (id, r) in conv_reqs {
            let v = request(&r).await?;
            if !v.is_undefined() {
                // Other apps' exports append what is new after the stored conversation's last seq.
                let rec = from_js::<ConversationRecord>(v, "conversation")?;
                out.last_seqs.insert(id.clone(), rec.last_seq);
                out.conversations.insert(id);
            }
        }
        for r in sum_reqs {
            let all: Array = request(&r).await?.into();
            for v in all.iter() {
                let s: ConversationSummary =
                    read(from_js::<SummaryRecord>(v, "summary")?, "summary")?;
                out.summaries.insert((s.conversation_id, s.version));
            }
        }
        for ((id, scope), r) in ent_reqs {
            if !request(&r).await?.is_undefined() {
                out.entities.insert(id, scope);
            }
        }
        if named.has_user_facts() {
            out.user_facts = self.load_user_facts().await?;
        }
        if named.has_projects() {
            out.projects = self.load_projects().await?;
        }
        Ok(out)
    }

    /// Writes a validated import plan in ONE transaction: all of it, or (on any failure, e.g. a full
    /// disk) none of it. Messages keep their seqs; conversation counters are brought up to date.
    /// Returns the conversations as stored by it (new ones, and existing ones with raised counters).
    /// Issues every record at once; [`Store::write_import_paced`] slices the messages.
    pub async fn write_import(&self, plan: &ImportPlan) -> Result<Vec<Conversation>, StoreError> {
        self.write_import_paced(plan, &mut AllAtOnce).await
    }

    /// [`Store::write_import`], its records (conversations, then messages) queued in slices `pace`
    /// sizes, still in ONE transaction.
    /// A slice is queued once the first `add` of the one before has succeeded (the others are still
    /// pending, so the storage backend never runs dry and the transaction, which commits when a
    /// task ends with nothing pending, stays open); between the two the page runs its other tasks.
    /// When `pace` says stop, the transaction is aborted and nothing is written
    /// ([`StoreError::Cancelled`]).
    ///
    /// Order of the queue: the reads of the conversations already stored (none for an import of
    /// new ones), awaited before anything else is queued (so no read waits behind the messages'
    /// adds), then the conversations, the messages, summaries and entities. Queuing the adds before the reads had returned looked faster (the first add ~20 ms
    /// sooner) but made the whole write slower: ~1.2-1.4x the plain-JS floor instead of ~1.0x.
    pub async fn write_import_paced(
        &self,
        plan: &ImportPlan,
        pace: &mut dyn WritePace,
    ) -> Result<Vec<Conversation>, StoreError> {
        let tx = self.tx(
            &[
                CONVERSATIONS,
                MESSAGES,
                SUMMARIES,
                ENTITIES,
                USER_FACTS,
                PROJECTS,
            ],
            true,
        )?;
        let records = match conversation_records(&tx, plan).await {
            Ok(r) => r,
            Err(e) => return tx.fail(e).await,
        };
        // The conversations, then the messages, in slices: record i is conversation i, then message
        // i - records.len().
        let total = records.len() + plan.messages.len();
        let mut done = 0;
        while done < total {
            let Some(n) = pace.next(done, total) else {
                return tx.fail(StoreError::Cancelled).await;
            };
            let end = done.saturating_add(n.max(1)).min(total);
            let first = match queue_slice(&tx, &records, plan, done..end) {
                Ok(first) => first,
                Err(e) => return tx.fail(e).await,
            };
            pace.issued(end - done);
            done = end;
            if let Some(first) = first {
                if let Err(e) = request(&first).await {
                    return tx.abort_with(e).await;
                }
            }
        }
        if pace.next(total, total).is_none() {
            return tx.fail(StoreError::Cancelled).await;
        }
        if let Err(e) = queue_memory(&tx, plan) {
            return tx.fail(e).await;
        }
        tx.done().await?;
        records
            .into_iter()
            .map(|w| Conversation::try_from(w.rec))
            .collect()
    }
}

/// Decides, between the slices of an import's write, how many records the next slice queues, or
/// that the write stops (then nothing is written). The decision is the caller's (the session asks
/// the engine's pace and reads the clock); the store only moves records.
pub trait WritePace {
    /// Before each slice (and once more at the end): `done` of `total` records queued (the
    /// conversations, then the messages). `None` aborts the write.
    fn next(&mut self, done: usize, total: usize) -> Option<usize>;
    /// The slice of `n` records was queued (the main thread's part of it is over).
    fn issued(&mut self, n: usize);
}

/// Everything in one slice, never stopping.
struct AllAtOnce;

impl WritePace for AllAtOnce {
    fn next(&mut self, _: usize, _: usize) -> Option<usize> {
        Some(usize::MAX)
    }
    fn issued(&mut self, _: usize) {}
}

/// A conversation record an import writes, and whether the plan found it new (then it is `add`ed:
/// should another tab have stored it since the preview, the `add` fails and nothing is written) or
/// stored (then it was read in this transaction and is `put` back with its counters raised).
struct ConversationWrite {
    rec: ConversationRecord,
    new: bool,
}

/// The conversation records an import writes: the plan's new ones as they are, the stored ones
/// read in this transaction, each with its counters raised by what the plan adds. Only the stored
/// ones are read: a new conversation's record needs no read, so an import of new conversations
/// queues its first record at once (reading 500 of them first held the first `add` back ~130 ms).
async fn conversation_records(
    tx: &Tx,
    plan: &ImportPlan,
) -> Result<Vec<ConversationWrite>, StoreError> {
    let convs = tx.store(CONVERSATIONS)?;
    // Per conversation: (messages added, highest seq, latest created_at).
    let mut totals: BTreeMap<&str, (u64, u64, Millis)> = plan
        .conversations
        .iter()
        .map(|c| (c.id.as_str(), (0, 0, Millis::MIN)))
        .collect();
    for m in &plan.messages {
        let t = totals
            .entry(m.conversation_id.as_str())
            .or_insert((0, 0, Millis::MIN));
        *t = (t.0 + 1, t.1.max(m.seq), t.2.max(m.created_at));
    }
    let new: HashMap<&str, &Conversation> = plan
        .conversations
        .iter()
        .map(|c| (c.id.as_str(), c))
        .collect();
    let stored_ids: Vec<&str> = totals
        .keys()
        .copied()
        .filter(|id| !new.contains_key(id))
        .collect();
    let mut stored: HashMap<&str, JsValue> = stored_ids
        .iter()
        .copied()
        .zip(get_each(&convs, &stored_ids).await?)
        .collect();
    let mut records = Vec::with_capacity(totals.len());
    for (id, &(added, max_seq, last_at)) in &totals {
        let mut w = match new.get(id) {
            Some(c) => ConversationWrite {
                rec: ConversationRecord::from(*c),
                new: true,
            },
            None => match stored.remove(id).filter(|v| !v.is_undefined()) {
                Some(v) => ConversationWrite {
                    rec: from_js::<ConversationRecord>(v, "conversation")?,
                    new: false,
                },
                None => return Err(not_found(id)),
            },
        };
        let rec = &mut w.rec;
        rec.message_count = if w.new {
            added
        } else {
            rec.message_count + added
        };
        rec.last_seq = rec.last_seq.max(max_seq);
        rec.updated_at = rec.updated_at.max(last_at);
        records.push(w);
    }
    Ok(records)
}

/// Queues records `range` of an import (conversation records first, then the plan's messages);
/// returns the first request queued.
fn queue_slice(
    tx: &Tx,
    records: &[ConversationWrite],
    plan: &ImportPlan,
    range: std::ops::Range<usize>,
) -> Result<Option<IdbRequest>, StoreError> {
    let mut first = None;
    let convs_end = range.end.min(records.len());
    if range.start < convs_end {
        let convs = tx.store(CONVERSATIONS)?;
        for w in &records[range.start..convs_end] {
            let v = to_js(&w.rec)?;
            let req = if w.new { convs.add(&v) } else { convs.put(&v) }.map_err(js_error)?;
            first.get_or_insert(req);
        }
    }
    let from = range.start.max(records.len()) - records.len();
    let to = range.end.max(records.len()) - records.len();
    if from < to {
        let slice = plan.messages[from..to]
            .iter()
            .map(|m| (m, m.conversation_id.as_str(), m.seq));
        let req = add_all(&tx.store(MESSAGES)?, slice)?;
        first = first.or(req);
    }
    Ok(first)
}

/// Queues the plan's summaries, entities, facts about the user and projects.
fn queue_memory(tx: &Tx, plan: &ImportPlan) -> Result<(), StoreError> {
    let projects = tx.store(PROJECTS)?;
    for p in &plan.projects {
        projects
            .put(&to_js(&ProjectRecord::from(p))?)
            .map_err(js_error)?;
    }
    let facts = tx.store(USER_FACTS)?;
    for f in &plan.user_facts {
        facts
            .put(&to_js(&UserFactRecord::from(f))?)
            .map_err(js_error)?;
    }
    let summaries = tx.store(SUMMARIES)?;
    for s in &plan.summaries {
        summaries
            .put(&to_js(&SummaryRecord::from(s))?)
            .map_err(js_error)?;
    }
    let entities = tx.store(ENTITIES)?;
    for e in &plan.entities {
        entities
            .put(&to_js(&EntityRecord::from(e))?)
            .map_err(js_error)?;
    }
    Ok(())
}
