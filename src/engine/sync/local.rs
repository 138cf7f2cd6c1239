//! Sync's decisions on this device's side, so that the session's driver is a loop that moves data:
//! - which local change is tracked at all ([`observed`]: a streaming reply is not, until it ends or
//!   is deleted; an import's many conversations are one each), and what each reads from the store
//!   before the engine's `track_*` turn it into documents ([`Tracked::reads`]; a removed
//!   conversation already a tombstone produces nothing, [`track_removed`]);
//! - the outbox of changes waiting to be tracked ([`Outbox`]: recorded in order by one task at a
//!   time; a deletion that failed because sync's code could not be fetched waits at its head);
//! - what a recorded document becomes ([`Recording`]: merged into its stored copy, keeping its
//!   revision; the same `_id` twice in one call merged into the first);
//! - what an applied batch reports ([`reports`]) and says of versions older than the held copy
//!   ([`older_refusals`]);
//! - what the memory's effects change after a batch ([`group`]: summary versions in order, the
//!   register-like kinds' documents, and each scope's graph at once; [`change_graph`],
//!   [`join_facts`]).
//!
//! The register-like kinds (facts about the user, projects) have no arm here: a change of one
//! reads `Reads::Register` of the kind the table says (`kinds::tracked_by`), and their effects
//! group as `Effect::Register`, whatever the kind. Adding one is its row in the table
//! (`kinds.rs` says what that is); adding any other kind is its arm here in [`Reads`] and
//! [`group`] besides its document (`doc.rs`), conversion (`convert.rs`) and `track_*` and
//! `Effect` (`track.rs`), and its moves in the session.
//! Must not import anything outside `crate::engine`.

use super::batch::Plan;
use super::doc::{conversation_id, id_part, message_id, Doc, EdgeDoc, Kind};
use super::hlc::Clock;
use super::kinds::tracked_by;
use super::memory::{put_edge, put_entity, remove_edge, remove_entity};
use super::replicate::LocalDoc;
use super::track::{self, Effect};
use crate::engine::model::{EntityNode, EntityScope, MessageStatus, Millis, UserFact};
use crate::engine::tabs::Change;
use std::collections::{HashMap, VecDeque};

/// A local change to track: a shared change of this tab, or an entity the user deleted in the
/// memory pane.
#[derive(Debug, Clone, PartialEq)]
pub enum Tracked {
    Change(Change),
    EntityDeleted {
        conversation: String,
        entity: String,
    },
}

/// What the session reads for a tracked change before `track_*` make its documents.
#[derive(Debug, Clone, PartialEq)]
pub enum Reads {
    /// The conversation's stored document `doc` (`track::track_conversation`).
    Conversation { doc: String },
    /// The stored document `doc` of a removed conversation ([`track_removed`]).
    Removed { doc: String },
    /// The message's stored document `doc` (`track::track_message`).
    Message { doc: String },
    /// The conversation's summaries and graph, and the shared graph (`track_summary`,
    /// `track_entity`).
    Memory { conversation: String },
    /// Every record of a register-like kind and their stored documents (`kinds::Register`).
    Register(Kind),
    /// Every stored document under `prefixes`, and the conversation's `doc`
    /// (`track::track_clear`).
    Cleared {
        conversation: String,
        prefixes: Vec<String>,
        doc: String,
    },
    /// The entity's stored documents in the conversation's scope and the shared one, with their
    /// relationships (`track::track_entity_delete`).
    EntityDeleted {
        conversation: String,
        entity: String,
    },
}

impl Tracked {
    /// What kind of change it is, for recording (`track::records`, `track::waits_for_code`).
    pub fn change(&self) -> track::Change {
        match self {
            Tracked::EntityDeleted { .. }
            | Tracked::Change(Change::ConversationRemoved(_))
            | Tracked::Change(Change::MessagesCleared(_)) => track::Change::Delete,
            Tracked::Change(_) => track::Change::Write,
        }
    }

    /// What to read for it (`None`: it produces no document).
    pub fn reads(&self) -> Option<Reads> {
        let change = match self {
            Tracked::EntityDeleted {
                conversation,
                entity,
            } => {
                return Some(Reads::EntityDeleted {
                    conversation: conversation.clone(),
                    entity: entity.clone(),
                })
            }
            Tracked::Change(c) => c,
        };
        Some(match change {
            Change::Conversation(c) => Reads::Conversation {
                doc: conversation_id(&c.id),
            },
            Change::ConversationRemoved(id) => Reads::Removed {
                doc: conversation_id(id),
            },
            Change::MessageAdded(m) | Change::MessageProgress(m) => Reads::Message {
                doc: message_id(&m.id),
            },
            Change::MemoryChanged(id) => Reads::Memory {
                conversation: id.clone(),
            },
            Change::MessagesCleared(id) => Reads::Cleared {
                conversation: id.clone(),
                prefixes: vec![
                    "m:".to_string(),
                    format!("e:{}:", id_part(id)),
                    format!("r:{}:", id_part(id)),
                ],
                doc: conversation_id(id),
            },
            c => Reads::Register(tracked_by(c)?),
        })
    }
}

/// The changes a shared change of this tab offers for tracking: an import's many conversations
/// one by one; a message only once it is no longer streaming (or is deleted); nothing for what
/// syncs no document (settings, branches, progress).
pub fn observed(e: &Change) -> Vec<Tracked> {
    let relevant = match e {
        Change::Conversations(cs) => {
            return cs
                .iter()
                .map(|c| Tracked::Change(Change::Conversation(c.clone())))
                .collect()
        }
        Change::Conversation(_)
        | Change::ConversationRemoved(_)
        | Change::MessagesCleared(_)
        | Change::MemoryChanged(_) => true,
        Change::MessageAdded(m) | Change::MessageProgress(m) => {
            m.status != MessageStatus::Streaming || m.meta.deleted
        }
        c => tracked_by(c).is_some(),
    };
    match relevant {
        true => vec![Tracked::Change(e.clone())],
        false => Vec::new(),
    }
}

/// The tombstone of a removed record, unless its stored document `prev` already is one.
pub fn track_removed(prev: Option<&Doc>, id: &str, clock: &mut Clock, now: Millis) -> Option<Doc> {
    match prev {
        Some(p) if p.body.is_tombstone() => None,
        _ => track::track_delete(id, clock, now),
    }
}

/// How recording one tracked change went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    Done,
    /// Sync's code could not be fetched (the split point `sync`, offline).
    NoCode,
    /// Any other failure (the session says it in the console).
    Failed,
}

/// The changes waiting to be tracked, recorded in order by one task at a time.
#[derive(Debug, Default)]
pub struct Outbox {
    queue: VecDeque<Tracked>,
    busy: bool,
}

impl Outbox {
    /// Offers a change: queued when `track::records` says it is recorded with these settings
    /// (`enabled`, `set_up`: a server is named).
    pub fn handle_change(&mut self, t: Tracked, enabled: bool, set_up: bool) {
        if track::records(enabled, set_up, t.change()) {
            self.queue.push_back(t);
        }
    }

    /// Whether the session starts a task recording the queue now (something waits and no task
    /// records already); the task is then busy until [`Outbox::poll_next`] gives nothing.
    pub fn poll_start(&mut self) -> bool {
        let start = !self.queue.is_empty() && !self.busy;
        self.busy |= start;
        start
    }

    /// The next change to record; `None` ends the task.
    pub fn poll_next(&mut self) -> Option<Tracked> {
        let next = self.queue.pop_front();
        self.busy = next.is_some();
        next
    }

    /// How recording `t` went: `false` ends the task (a deletion that waits for sync's code is
    /// back at the head, for the next change or the sync loop's next start).
    pub fn handle_recorded(&mut self, t: Tracked, r: Recorded) -> bool {
        if r == Recorded::NoCode && track::waits_for_code(t.change()) {
            self.queue.push_front(t);
            self.busy = false;
            return false;
        }
        true
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// Local edits recorded as synced documents: each merged into its stored copy (keeping the
/// revision), the same `_id` twice merged into the first. Fed a slice at a time.
#[derive(Debug, Default)]
pub struct Recording {
    known: HashMap<String, LocalDoc>,
    out: Vec<LocalDoc>,
    at: HashMap<String, usize>,
}

impl Recording {
    /// Over the stored copies of the documents to record (others are new).
    pub fn new(known: impl IntoIterator<Item = LocalDoc>) -> Recording {
        let known = known.into_iter().map(|d| (d.doc.id.clone(), d)).collect();
        Recording {
            known,
            ..Recording::default()
        }
    }

    pub fn handle_doc(&mut self, d: Doc) {
        if let Some(&k) = self.at.get(&d.id) {
            self.out[k].doc = super::merge(&self.out[k].doc, &d);
            return;
        }
        let (doc, rev) = match self.known.remove(&d.id) {
            Some(p) => (super::merge(&p.doc, &d), p.rev),
            None => (d, None),
        };
        self.at.insert(doc.id.clone(), self.out.len());
        self.out.push(LocalDoc { doc, rev });
    }

    /// The documents to store as waiting to be pushed, and to hand to the replicator.
    pub fn finish(self) -> Vec<LocalDoc> {
        self.out
    }
}

/// What an applied batch reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reports {
    /// Conversations whose messages now have alternatives: marked branched before any report.
    pub branched: Vec<String>,
    /// The changes to report (`Core::applied`), in order: per conversation, the conversation and
    /// its one new message, or a `BranchChanged` when more came (or alternatives); the
    /// conversations deleted elsewhere; one `BranchChanged` per conversation with messages
    /// deleted elsewhere.
    pub changes: Vec<Change>,
}

/// What an applied batch `plan` reports.
pub fn reports(plan: &Plan) -> Reports {
    let mut out = Reports::default();
    for c in &plan.changes {
        let id = c.conversation.id.clone();
        if c.branched {
            out.branched.push(id.clone());
        }
        out.changes
            .push(Change::Conversation(c.conversation.clone()));
        match c.added.as_slice() {
            [] => {}
            [m] if !c.branched => out.changes.push(Change::MessageAdded(m.clone())),
            _ => out.changes.push(Change::BranchChanged(id)),
        }
    }
    for id in &plan.removed {
        out.changes.push(Change::ConversationRemoved(id.clone()));
    }
    let mut branches: Vec<&String> = Vec::new();
    for m in &plan.blanked {
        if !branches.contains(&&m.conversation_id) {
            branches.push(&m.conversation_id);
        }
    }
    for c in branches {
        out.changes.push(Change::BranchChanged(c.clone()));
    }
    out
}

/// The refusals said of pulled versions older than the copy held here (`Plan::older`).
pub fn older_refusals(older: &[String]) -> Vec<String> {
    older
        .iter()
        .map(|id| {
            format!("{id}: older than the copy this device holds; not taken (this device's copy goes back up)")
        })
        .collect()
}

/// The memory's effects of a batch, grouped as they are applied: summary versions and clears in
/// order, then the register-like kinds' documents (each kind's records joined and written once),
/// and each scope's graph (loaded, changed by all its effects in order, saved once).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grouped {
    /// `Effect::Summary` and `Effect::SummariesCleared`, in order.
    pub summaries: Vec<Effect>,
    /// `Effect::Register`'s documents, in order, every kind of the table (`kinds::Register::of_doc`
    /// picks its own).
    pub registers: Vec<Doc>,
    pub graphs: Vec<(EntityScope, Vec<Effect>)>,
}

/// The scope an entity or edge document of scope `id` belongs to.
pub fn scope_of(id: Option<&String>) -> EntityScope {
    id.cloned()
        .map_or(EntityScope::Shared, EntityScope::Conversation)
}

/// The conversation a scope is of (`None`: shared).
pub fn scope_id(scope: &EntityScope) -> Option<&str> {
    match scope {
        EntityScope::Conversation(c) => Some(c),
        EntityScope::Shared => None,
    }
}

/// The scope a graph effect changes (`None`: not a graph effect).
fn graph_scope(e: &Effect) -> Option<EntityScope> {
    match e {
        Effect::Entity(n) => Some(n.scope.clone()),
        Effect::Edge(e) => Some(scope_of(e.scope.as_ref())),
        Effect::Delete {
            kind: Kind::Entity | Kind::Edge,
            scope,
            ..
        } => Some(scope_of(scope.as_ref())),
        _ => None,
    }
}

/// Groups the memory's effects a batch leaves for after its transaction.
pub fn group(effects: Vec<Effect>) -> Grouped {
    let mut g = Grouped::default();
    for e in effects {
        match e {
            Effect::Register(d) => g.registers.push(d),
            Effect::Summary(_) | Effect::SummariesCleared { .. } => g.summaries.push(e),
            e => {
                let Some(scope) = graph_scope(&e) else {
                    continue;
                };
                match g.graphs.iter_mut().find(|(s, _)| *s == scope) {
                    Some((_, list)) => list.push(e),
                    None => g.graphs.push((scope, vec![e])),
                }
            }
        }
    }
    g
}

/// Whether changing a graph by `effects` needs the scope's stored edge documents (a pulled
/// entity takes the relationships they already hold).
pub fn needs_edges(effects: &[Effect]) -> bool {
    effects.iter().any(|e| matches!(e, Effect::Entity(_)))
}

/// Changes a scope's graph `nodes` by `effects` in order; whether any changed it.
pub fn change_graph(nodes: &mut Vec<EntityNode>, edges: &[EdgeDoc], effects: Vec<Effect>) -> bool {
    let mut changed = false;
    for e in effects {
        changed |= match e {
            Effect::Entity(n) => {
                let id = n.id.clone();
                put_entity(nodes, n);
                for e in edges.iter().filter(|e| e.source == id) {
                    put_edge(nodes, e);
                }
                true
            }
            Effect::Edge(e) => put_edge(nodes, &e),
            Effect::Delete {
                kind: Kind::Entity,
                parts,
                ..
            } => parts.first().is_some_and(|id| remove_entity(nodes, id)),
            Effect::Delete {
                kind: Kind::Edge,
                parts,
                ..
            } => remove_edge(nodes, &parts),
            _ => false,
        };
    }
    changed
}

/// The facts to write for pulled ones: each joined with the stored record of its id, or the one
/// this batch already joined (`memory::pulled_fact`); none when nothing changes.
pub fn join_facts(stored: &[UserFact], pulled: Vec<UserFact>) -> Vec<UserFact> {
    let stored: HashMap<&str, &UserFact> = stored.iter().map(|f| (f.id.as_str(), f)).collect();
    let mut out: Vec<UserFact> = Vec::new();
    for f in pulled {
        let here = out.iter().position(|o| o.id == f.id);
        let before = here
            .map(|k| &out[k])
            .or_else(|| stored.get(f.id.as_str()).copied());
        if let Some(next) = super::memory::pulled_fact(before, f) {
            match here {
                Some(k) => out[k] = next,
                None => out.push(next),
            }
        }
    }
    out
}
