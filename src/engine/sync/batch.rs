//! A batch of merged documents (a `_changes` page pulled, or a `_bulk_docs` page pushed and
//! confirmed) applied in one go: what the store holds goes in ([`Held`]: the stored copies, the
//! conversations, which messages are already there), one write plan comes out ([`Plan`]: the synced
//! documents to keep, the conversations and messages to write, the messages deleted elsewhere
//! (blanked: their record stays as a tombstone) and the conversations deleted elsewhere (removed
//! with their contents), what must be pushed again, one [`Change`] per conversation touched, and
//! the memory's effects, which the session applies per scope).
//! The store writes the plan in the transaction it read [`Held`] in, so a 200-document batch costs
//! one transaction instead of about seven per document.
//!
//! The decisions are the ones the driver made document by document: the server's copy merged into
//! the stored one ([`apply_remote`]); only a copy that changed asks anything of the local records
//! ([`effect`]); a message already stored is never written again; a message whose conversation was
//! deleted (its document is a tombstone) is not added; a message that arrives before its
//! conversation's document waits in a conversation of that id, which the document then fills in;
//! messages take this device's next seq, in the order given (see the driver's `in_order`); a
//! message tombstone blanks the stored message (text, tool calls and error gone, `deleted` set)
//! once; a conversation tombstone removes a stored conversation (and whatever the batch planned
//! for it).
//! Must not import anything outside `crate::engine`.

use std::collections::{HashMap, HashSet};

use super::convert::{apply_conversation, new_conversation};
use super::doc::{conversation_id, Body, Doc, Kind};
use super::replicate::{apply_remote, LocalDoc};
use super::track::{effect, Effect};
use crate::engine::model::{Conversation, Message, MessageMeta};

/// What the store holds that a batch's decisions depend on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Held {
    /// Stored synced documents by `_id` (with whether each waits to be pushed): the batch's, and
    /// the conversation documents of its messages.
    pub docs: HashMap<String, (LocalDoc, bool)>,
    /// Stored conversations by id, with the last seq each gave out.
    pub conversations: HashMap<String, (Conversation, u64)>,
    /// The batch's messages (added, or deleted by a tombstone) that are already stored.
    pub messages: HashMap<String, Message>,
}

/// The `_id`s of the stored documents [`plan`] needs for `batch`: its own, and the conversation
/// documents of its messages and summary versions.
pub fn wanted_docs(batch: &[(Doc, String)]) -> Vec<String> {
    let mut out = Vec::with_capacity(batch.len());
    let mut seen = HashSet::new();
    for (d, _) in batch {
        if seen.insert(d.id.clone()) {
            out.push(d.id.clone());
        }
        let parent = match &d.body {
            Body::Message(m) => Some(&m.conversation_id),
            Body::Summary(s) => Some(&s.conversation_id),
            _ => None,
        };
        if let Some(cid) = parent.map(|c| conversation_id(c)) {
            if seen.insert(cid.clone()) {
                out.push(cid);
            }
        }
    }
    out
}

/// The conversation ids and message ids whose records [`plan`] needs for `batch`, given the stored
/// documents: only documents that change their stored copy touch records, so a page the server
/// just confirmed (a push) needs none. A tombstone needs the record it deletes.
pub fn wanted_records(
    batch: &[(Doc, String)],
    docs: &HashMap<String, (LocalDoc, bool)>,
) -> (Vec<String>, Vec<String>) {
    let mut conversations = Vec::new();
    let mut messages = Vec::new();
    let mut seen = HashSet::new();
    for (d, rev) in batch {
        let prev = docs.get(&d.id).map(|(l, _)| l);
        if prev.is_some_and(|p| apply_remote(Some(p), d, rev).local.doc == p.doc) {
            continue;
        }
        let conversation = match &d.body {
            Body::Message(m) => {
                messages.push(m.id.clone());
                &m.conversation_id
            }
            Body::Conversation(c) => &c.id,
            Body::Tombstone(_) => match effect(d) {
                Some(Effect::Delete {
                    kind: Kind::Message,
                    parts,
                    ..
                }) => {
                    messages.extend(parts.into_iter().next());
                    continue;
                }
                Some(Effect::Delete {
                    kind: Kind::Conversation,
                    parts,
                    ..
                }) => match parts.into_iter().next() {
                    Some(id) if seen.insert(id.clone()) => {
                        conversations.push(id);
                        continue;
                    }
                    _ => continue,
                },
                _ => continue,
            },
            _ => continue,
        };
        if seen.insert(conversation.clone()) {
            conversations.push(conversation.clone());
        }
    }
    (conversations, messages)
}

/// One conversation a batch created, changed or added messages to.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Its state after the batch, and the last seq it gave out.
    pub conversation: Conversation,
    pub last_seq: u64,
    /// The messages added, in order, with their seqs.
    pub added: Vec<Message>,
    /// One of them replaces another: the conversation now has alternatives.
    pub branched: bool,
}

/// What to write for a batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// The synced documents to store (one per `_id`, its final state; none the store holds as is)
    /// and whether each waits to be pushed.
    pub docs: Vec<(LocalDoc, bool)>,
    /// Merged copies that differ from the server's: hand them to the replicator to push.
    pub requeue: Vec<LocalDoc>,
    /// The conversations to write (created, changed or grown), in the order first touched.
    pub changes: Vec<Change>,
    /// Stored messages deleted on another device: their records blanked as tombstones.
    pub blanked: Vec<Message>,
    /// Stored conversations deleted on another device: removed with their messages and memory.
    pub removed: Vec<String>,
    /// Effects applied after the plan is written, in order: the memory's.
    pub later: Vec<Effect>,
    /// Pulled versions older than the copy this device holds, in sync with the server as far as
    /// it knows (not waiting to be pushed): each adds nothing the held copy lacks, so nothing of
    /// it is taken (a rollback, or a stale answer); the held copy goes back up over it
    /// (`requeue`). Their `_id`s, to report.
    pub older: Vec<String>,
}

struct Planner<'a> {
    held: &'a Held,
    plan: Plan,
    /// `_id` -> index in `plan.docs`.
    doc_at: HashMap<String, usize>,
    /// Conversation id -> index in `plan.changes`.
    change_at: HashMap<String, usize>,
    added: HashSet<String>,
    blanked: HashSet<String>,
}

impl Planner<'_> {
    fn doc(&self, id: &str) -> Option<&LocalDoc> {
        self.held_doc(id).map(|(l, _)| l)
    }

    /// The copy of `id` the batch has left so far, and whether it waits to be pushed.
    fn held_doc(&self, id: &str) -> Option<(&LocalDoc, bool)> {
        match self.doc_at.get(id) {
            Some(&k) => self.plan.docs.get(k).map(|(l, d)| (l, *d)),
            None => self.held.docs.get(id).map(|(l, d)| (l, *d)),
        }
    }

    /// Whether `remote`, at `rev`, is older than the held copy of its id: that copy is in sync
    /// (not waiting to be pushed) at another revision, differs from `remote` and already holds all
    /// of it (the merge is a join: any later version of a document holds all of an earlier one).
    /// At the held revision itself it is not said to be older: a conflict's winner merged after
    /// its losing leaves comes so.
    fn older(&self, remote: &Doc, rev: &str) -> bool {
        self.held_doc(&remote.id).is_some_and(|(h, dirty)| {
            !dirty
                && h.rev.as_deref() != Some(rev)
                && h.doc != *remote
                && super::merge::merge(&h.doc, remote) == h.doc
        })
    }

    /// When conversation `id` was last cleared, as the batch has left its document so far.
    fn cleared(&self, id: &str) -> Option<&crate::engine::sync::Hlc> {
        match &self.doc(&conversation_id(id))?.doc.body {
            Body::Conversation(c) => c.cleared.as_ref(),
            _ => None,
        }
    }

    /// Keeps `d`, unless the store already holds exactly that (a page this device pushed itself
    /// coming back through `_changes`).
    fn keep(&mut self, d: LocalDoc, dirty: bool) {
        if !self.doc_at.contains_key(&d.doc.id)
            && self.held.docs.get(&d.doc.id) == Some(&(d.clone(), dirty))
        {
            return;
        }
        match self.doc_at.get(&d.doc.id) {
            Some(&k) => self.plan.docs[k] = (d, dirty),
            None => {
                self.doc_at.insert(d.doc.id.clone(), self.plan.docs.len());
                self.plan.docs.push((d, dirty));
            }
        }
    }

    /// The conversation `id` as the batch has left it so far, if it exists.
    fn change(&mut self, id: &str) -> Option<&mut Change> {
        if !self.change_at.contains_key(id) {
            let (c, last_seq) = self.held.conversations.get(id)?.clone();
            self.change_at
                .insert(id.to_string(), self.plan.changes.len());
            self.plan.changes.push(Change {
                conversation: c,
                last_seq,
                added: Vec::new(),
                branched: false,
            });
        }
        let k = self.change_at[id];
        Some(&mut self.plan.changes[k])
    }

    fn create(&mut self, c: Conversation) -> &mut Change {
        self.change_at.insert(c.id.clone(), self.plan.changes.len());
        self.plan.changes.push(Change {
            conversation: c,
            last_seq: 0,
            added: Vec::new(),
            branched: false,
        });
        self.plan.changes.last_mut().expect("just pushed")
    }

    fn message(&mut self, mut m: Message) {
        if self.held.messages.contains_key(&m.id) || self.added.contains(&m.id) {
            return;
        }
        let parent = conversation_id(&m.conversation_id);
        if self.doc(&parent).is_some_and(|p| p.doc.body.is_tombstone()) {
            return;
        }
        self.added.insert(m.id.clone());
        let cid = m.conversation_id.clone();
        let change = match self.change(&cid) {
            Some(c) => c,
            None => self.create(placeholder(&m)),
        };
        change.last_seq += 1;
        m.seq = change.last_seq;
        change.conversation.message_count += 1;
        change.conversation.updated_at = change.conversation.updated_at.max(m.created_at);
        change.branched |= m.meta.replaces.is_some();
        change.added.push(m);
    }

    fn apply(&mut self, e: Effect) {
        match e {
            Effect::Conversation(d) => match self.change(&d.id) {
                Some(c) => apply_conversation(&d, &mut c.conversation),
                None => {
                    self.create(new_conversation(&d));
                }
            },
            Effect::Message(m) => self.message(m),
            Effect::Delete {
                kind: Kind::Message,
                parts,
                ..
            } => {
                if let Some(m) = parts.first().and_then(|id| self.held.messages.get(id)) {
                    if !m.meta.deleted && !self.blanked.contains(&m.id) {
                        self.blanked.insert(m.id.clone());
                        self.plan.blanked.push(blank(m.clone()));
                    }
                }
            }
            Effect::Delete {
                kind: Kind::Conversation,
                parts,
                ..
            } => {
                if let Some(id) = parts.into_iter().next() {
                    if self.held.conversations.contains_key(&id) && !self.plan.removed.contains(&id)
                    {
                        self.plan.removed.push(id);
                    }
                }
            }
            other => self.plan.later.push(other),
        }
    }
}

/// A message deleted on another device: its text goes, its record stays (a tombstone).
fn blank(m: Message) -> Message {
    Message {
        content: String::new(),
        meta: MessageMeta {
            deleted: true,
            tool_calls: Vec::new(),
            error: None,
            ..m.meta
        },
        ..m
    }
}

/// The summary versions a merged conversation document deletes: its `cleared` moved past the
/// stored copy's.
fn newly_cleared(prev: Option<&LocalDoc>, merged: &LocalDoc) -> Option<Effect> {
    let Body::Conversation(c) = &merged.doc.body else {
        return None;
    };
    let before = match prev.map(|p| &p.doc.body) {
        Some(Body::Conversation(p)) => p.cleared.as_ref(),
        _ => None,
    };
    let at = c.cleared.as_ref().filter(|at| before < Some(*at))?;
    Some(Effect::SummariesCleared {
        conversation: c.id.clone(),
        at: at.clone(),
    })
}

/// A conversation that holds a message whose conversation's document has not arrived yet.
fn placeholder(m: &Message) -> Conversation {
    Conversation {
        id: m.conversation_id.clone(),
        title: String::new(),
        title_is_custom: false,
        created_at: m.created_at,
        updated_at: m.created_at,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: Default::default(),
    }
}

/// The writes for `batch` (the server's documents with their revisions, in the order to apply)
/// given what the store `held` before it.
pub fn plan(batch: Vec<(Doc, String)>, held: &Held) -> Plan {
    let mut p = Planner {
        held,
        plan: Plan::default(),
        doc_at: HashMap::new(),
        change_at: HashMap::new(),
        added: HashSet::new(),
        blanked: HashSet::new(),
    };
    for (remote, rev) in batch {
        if p.older(&remote, &rev) {
            p.plan.older.push(remote.id.clone());
        }
        let prev = p.doc(&remote.id).cloned();
        let a = apply_remote(prev.as_ref(), &remote, &rev);
        let changed = prev.as_ref().map(|l| &l.doc) != Some(&a.local.doc);
        if a.dirty {
            p.plan.requeue.push(a.local.clone());
        }
        let e = changed.then(|| effect(&a.local.doc)).flatten();
        let cleared = changed
            .then(|| newly_cleared(prev.as_ref(), &a.local))
            .flatten();
        let dead = match &a.local.doc.body {
            Body::Summary(s) => s.cleared_by(p.cleared(&s.conversation_id)),
            _ => false,
        };
        p.keep(a.local, a.dirty);
        if let Some(e) = e.filter(|_| !dead) {
            p.apply(e);
        }
        p.plan.later.extend(cleared);
    }
    let mut plan = p.plan;
    // Whatever the batch planned for a conversation it also deleted goes with it.
    plan.changes
        .retain(|c| !plan.removed.contains(&c.conversation.id));
    plan.blanked
        .retain(|m| !plan.removed.contains(&m.conversation_id));
    plan
}
