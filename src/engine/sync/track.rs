//! The two decisions between the local store and the synced documents, so the session only moves
//! data: which document a local record change produces (`track_*`: `None` when the stored document
//! already says the same, so nothing is pushed twice; a record whose document is a tombstone stays
//! deleted), whether a change is recorded at all ([`records`]), and what a merged document asks of the
//! local store ([`effect`]). Ids of tombstones are
//! read back from their `_id` ([`parse_id`]). Must not import anything outside `crate::engine`.

use super::convert::{
    conversation_doc, edge_docs, edit_conversation, edit_entity, edit_fact, edit_project,
    entity_docs, fact_doc, message_doc, project_doc, summary_doc, to_entity, to_message,
    to_summary,
};
use super::doc::{edge_id, message_id, Body, ConversationDoc, Doc, EdgeDoc, Kind};
use super::hlc::{Clock, Hlc};
use super::kinds::is_register;
use crate::engine::model::{
    Conversation, ConversationSummary, EntityNode, Message, Millis, Project, UserFact,
};

fn unescape(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// What kind of local change is offered for recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A record written or edited: the next sync start's seed finds it in the store anyway.
    Write,
    /// A conversation removed, a conversation cleared or an entity deleted: once gone from the
    /// store, nothing but its tombstone can tell another device.
    Delete,
}

/// Whether a local change is recorded as synced documents: always while sync is on; while it is
/// off, a deletion still is once a server has been set up (`set_up`), so that turning sync back on
/// pushes its tombstone and the other devices do not keep, or give back, what was deleted here.
pub fn records(enabled: bool, set_up: bool, change: Change) -> bool {
    enabled || (set_up && change == Change::Delete)
}

/// Whether a change that could not be recorded because sync's code could not be fetched (offline
/// before the split point `sync` ever loaded in this page) waits, in order, for the next try: a
/// deletion does (nothing else would ever tell the other devices); a write is let go, since the
/// seed of the sync loop's next start records it from the store.
pub fn waits_for_code(change: Change) -> bool {
    change == Change::Delete
}

/// The kind of an `_id` and its parts, unescaped (an entity's or edge's scope `~` reads as `None`).
/// `c:{conversation}`, `m:{message}`, `e:{scope}:{entity}`,
/// `r:{scope}:{source}:{label}:{target}:{valid_from}`, `s:{conversation}:{stamp}`.
pub fn parse_id(id: &str) -> Option<(Kind, Option<String>, Vec<String>)> {
    let kind = Kind::of_id(id)?;
    let mut parts = id.split(':').skip(1);
    let scoped = matches!(kind, Kind::Entity | Kind::Edge);
    let scope = if scoped {
        match parts.next()? {
            "~" => None,
            s => Some(unescape(s)?),
        }
    } else {
        None
    };
    let rest: Option<Vec<String>> = parts.map(unescape).collect();
    let rest = rest?;
    let want = match kind {
        Kind::Edge => 4,
        Kind::Summary => 2,
        // A conversation, a message, an entity, and every register-like kind (`kinds`).
        _ => 1,
    };
    (rest.len() == want).then_some((kind, scope, rest))
}

/// The document to push after conversation `c` was created or edited locally (title, overrides).
pub fn track_conversation(
    stored: Option<&Doc>,
    c: &Conversation,
    clock: &mut Clock,
    now: Millis,
) -> Option<Doc> {
    let next = match stored.map(|d| &d.body) {
        Some(Body::Tombstone(_)) => return None,
        Some(Body::Conversation(prev)) => {
            let probe = edit_conversation(prev, c, &clock.last());
            if probe == *prev {
                return None;
            }
            edit_conversation(prev, c, &clock.tick(now))
        }
        _ => conversation_doc(c, &clock.tick(now)),
    };
    Some(Doc::new(Body::Conversation(next)))
}

/// The document of a new final message (with the message it replaces and follows). A stored
/// message is never written again; a streaming one waits until it is final; a deleted one becomes a
/// tombstone (once).
pub fn track_message(
    stored: Option<&Doc>,
    m: &Message,
    clock: &mut Clock,
    now: Millis,
) -> Option<Doc> {
    if m.meta.deleted {
        return match stored {
            Some(d) if d.body.is_tombstone() => None,
            _ => track_delete(&message_id(&m.id), clock, now),
        };
    }
    if stored.is_some() {
        return None;
    }
    let at = clock.tick(now);
    message_doc(m, &at).map(|d| Doc::new(Body::Message(d)))
}

/// The documents to push after entity `n` was learned or edited: the node if it changed, and each
/// relationship that is new or changed (strength, closing).
pub fn track_entity(
    stored: Option<&Doc>,
    stored_edges: &[EdgeDoc],
    n: &EntityNode,
    clock: &mut Clock,
    now: Millis,
) -> Vec<Doc> {
    let mut out = Vec::new();
    match stored.map(|d| &d.body) {
        Some(Body::Tombstone(_)) => return out,
        Some(Body::Entity(prev)) => {
            if edit_entity(prev, n, &clock.last()) != *prev {
                out.push(Doc::new(Body::Entity(edit_entity(
                    prev,
                    n,
                    &clock.tick(now),
                ))));
            }
        }
        _ => out.push(Doc::new(Body::Entity(entity_docs(n, &clock.tick(now)).0))),
    }
    for e in edge_docs(n) {
        if !stored_edges.contains(&e) {
            out.push(Doc::new(Body::Edge(e)));
        }
    }
    out
}

/// The document of a new summary version (a stored version is never written again).
pub fn track_summary(
    stored: Option<&Doc>,
    s: &ConversationSummary,
    clock: &mut Clock,
    now: Millis,
) -> Option<Doc> {
    if stored.is_some() {
        return None;
    }
    Some(Doc::new(Body::Summary(summary_doc(s, &clock.tick(now)))))
}

/// The document to push after fact `f` was said, edited, made past or forgotten here (or
/// imported): `None` when its stored document already says as much (a fact past or forgotten in
/// the document stays so whatever the record says).
pub fn track_fact(
    stored: Option<&Doc>,
    f: &UserFact,
    clock: &mut Clock,
    now: Millis,
) -> Option<Doc> {
    let next = match stored.map(|d| &d.body) {
        Some(Body::Tombstone(_)) => return None,
        Some(Body::Fact(prev)) => {
            if edit_fact(prev, f, &clock.last()) == *prev {
                return None;
            }
            edit_fact(prev, f, &clock.tick(now))
        }
        _ => fact_doc(f, &clock.tick(now)),
    };
    Some(Doc::new(Body::Fact(next)))
}

/// The document to push after project `p` was made, renamed, given instructions or deleted here
/// (or imported): `None` when its stored document already says as much.
pub fn track_project(
    stored: Option<&Doc>,
    p: &Project,
    clock: &mut Clock,
    now: Millis,
) -> Option<Doc> {
    let next = match stored.map(|d| &d.body) {
        Some(Body::Tombstone(_)) => return None,
        Some(Body::Project(prev)) => {
            if edit_project(prev, p, &clock.last()) == *prev {
                return None;
            }
            edit_project(prev, p, &clock.tick(now))
        }
        _ => project_doc(p, &clock.tick(now)),
    };
    Some(Doc::new(Body::Project(next)))
}

/// The tombstones that delete entity `entity` everywhere after the user deleted it: its document
/// (unless already a tombstone or never synced) and every live relationship document from or to it
/// in its scope (`edges`: the scope's live edge documents).
pub fn track_entity_delete(
    stored: Option<&Doc>,
    edges: &[EdgeDoc],
    entity: &str,
    clock: &mut Clock,
    now: Millis,
) -> Vec<Doc> {
    let mut out = Vec::new();
    if let Some(d) = stored.filter(|d| !d.body.is_tombstone()) {
        out.extend(track_delete(&d.id, clock, now));
    }
    for e in edges
        .iter()
        .filter(|e| e.source == entity || e.target == entity)
    {
        out.extend(track_delete(&edge_id(e), clock, now));
    }
    out
}

/// What clearing a conversation pushes: the tombstones of every live synced message of
/// `conversation` and of every live entity and relationship of its own scope, and its document
/// with `cleared` stamped after all of them, which deletes its summary versions made until then
/// on every device, whenever they arrive (`docs`: the candidates, any kind, its document among
/// them once synced).
pub fn track_clear(docs: &[Doc], conversation: &str, clock: &mut Clock, now: Millis) -> Vec<Doc> {
    let scope = Some(conversation.to_string());
    let mut out: Vec<Doc> = docs
        .iter()
        .filter(|d| match &d.body {
            Body::Message(m) => m.conversation_id == conversation,
            Body::Entity(e) => e.scope == scope,
            Body::Edge(e) => e.scope == scope,
            _ => false,
        })
        .filter_map(|d| track_delete(&d.id, clock, now))
        .collect();
    let own = docs.iter().find_map(|d| match &d.body {
        Body::Conversation(c) if c.id == conversation => Some(c),
        _ => None,
    });
    if let Some(c) = own {
        out.push(Doc::new(Body::Conversation(ConversationDoc {
            cleared: Some(clock.tick(now)),
            ..c.clone()
        })));
    }
    out
}

/// The tombstone that deletes a record everywhere.
pub fn track_delete(id: &str, clock: &mut Clock, now: Millis) -> Option<Doc> {
    Doc::tombstone(id, &clock.tick(now))
}

/// What a merged document asks of the local store.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Create the conversation, or set its synced fields (`convert::apply_conversation`); counts,
    /// session handles and badges stay local.
    Conversation(ConversationDoc),
    /// Add the message if it is not there (at this device's next seq); an existing one is unchanged.
    Message(Message),
    /// Save the node with the relationships given.
    Entity(EntityNode),
    /// Save (or update) one relationship of node `source` in `scope`.
    Edge(EdgeDoc),
    /// Add the summary version if it is not there.
    Summary(ConversationSummary),
    /// Put the record a register-like kind's document holds, joined with the stored one
    /// (`kinds::Register`: `of_doc`, then `join`).
    Register(Doc),
    /// The conversation was cleared at `at` (on any device): delete its summary versions made at
    /// or before then (`memory::cleared_versions`).
    SummariesCleared { conversation: String, at: Hlc },
    /// Delete the record (a conversation with its messages, summaries and entities). `parts` are
    /// the `_id`'s parts after the scope (see [`parse_id`]): the record id first.
    Delete {
        kind: Kind,
        scope: Option<String>,
        parts: Vec<String>,
    },
}

/// The local change a merged document asks for (`None` for an `_id` that cannot be read).
pub fn effect(doc: &Doc) -> Option<Effect> {
    Some(match &doc.body {
        Body::Conversation(c) => Effect::Conversation(c.clone()),
        Body::Message(m) => Effect::Message(to_message(m)),
        Body::Entity(e) => Effect::Entity(to_entity(e, &[])),
        Body::Edge(e) => Effect::Edge(e.clone()),
        Body::Summary(s) => Effect::Summary(to_summary(s)),
        Body::Tombstone(t) => {
            let (kind, scope, parts) = parse_id(&doc.id)?;
            if kind != t.kind {
                return None;
            }
            Effect::Delete { kind, scope, parts }
        }
        b if is_register(b.kind()) => Effect::Register(doc.clone()),
        _ => return None,
    })
}
