//! The memory's side of sync: which local summary versions become documents, and what a pulled
//! entity, edge or summary document does to this device's graph and summary versions.
//!
//! - A summary version is the same version on every device when its text and the seq it covers are
//!   the same (each device numbers its versions itself). A pulled version is stored after the local
//!   ones unless a local version already says the same or the latest local one covers more: the
//!   active summary is the one covering the most.
//! - A pulled entity's content replaces the local node of the same id (the document is already the
//!   merge of both sides); its relationships come as edge documents, attached to their source node
//!   whichever arrives first.
//! - A tombstone removes the entity, or the one edge; a conversation cleared on any device removes
//!   its summary versions made until then ([`cleared_versions`]); nothing else removes memory.
//! - A pulled fact about the user ([`pulled_fact`]) takes the document's words, and keeps the
//!   stored record's end or tombstone if the document lacks it (a fact forgotten here since the
//!   document was last written stays forgotten; the next tracking pushes it).
//!
//! Must not import anything outside `crate::engine`.

use super::convert::to_summary;
use super::doc::{EdgeDoc, SummaryDoc};
use super::hlc::Hlc;
use crate::engine::model::{ConversationSummary, EntityNode, Millis, Relationship, UserFact};

/// The local summary versions no synced document holds yet, oldest first.
pub fn untracked_summaries<'a>(
    synced: &[SummaryDoc],
    local: &'a [ConversationSummary],
) -> Vec<&'a ConversationSummary> {
    let mut out: Vec<&ConversationSummary> = local
        .iter()
        .filter(|s| {
            !synced
                .iter()
                .any(|d| d.conversation_id == s.conversation_id && same_summary(&to_summary(d), s))
        })
        .collect();
    out.sort_by_key(|s| s.version);
    out
}

/// The same version: the same text covering the same messages (version numbers are each device's).
fn same_summary(a: &ConversationSummary, b: &ConversationSummary) -> bool {
    a.covers_up_to_seq == b.covers_up_to_seq && a.text == b.text
}

/// The version to store for a pulled summary: numbered after the latest local one, or `None` when
/// a local version already says the same or the latest local one covers more messages.
pub fn pulled_summary(
    local: &[ConversationSummary],
    pulled: &ConversationSummary,
) -> Option<ConversationSummary> {
    if local.iter().any(|s| same_summary(pulled, s)) {
        return None;
    }
    let latest = local.iter().max_by_key(|s| s.version);
    if latest.is_some_and(|l| l.covers_up_to_seq > pulled.covers_up_to_seq) {
        return None;
    }
    Some(ConversationSummary {
        conversation_id: pulled.conversation_id.clone(),
        version: latest.map_or(1, |l| l.version.saturating_add(1)),
        text: pulled.text.clone(),
        covers_up_to_seq: pulled.covers_up_to_seq,
        message_count: pulled.message_count,
        updated_at: pulled.updated_at,
    })
}

/// The local summary versions a clear at `at` deletes: those whose synced document (the same
/// version, [`same_summary`]) was made at or before the clear. A version no document holds yet was
/// made here after the last sync and is left alone (it is tracked with a later stamp).
pub fn cleared_versions(
    local: &[ConversationSummary],
    synced: &[SummaryDoc],
    at: &Hlc,
) -> Vec<u32> {
    local
        .iter()
        .filter(|s| {
            synced.iter().any(|d| {
                d.conversation_id == s.conversation_id
                    && d.cleared_by(Some(at))
                    && same_summary(&to_summary(d), s)
            })
        })
        .map(|s| s.version)
        .collect()
}

/// Puts a pulled node into `nodes`: its content replaces the node of the same id, whose
/// relationships are kept and joined by `pulled`'s own (from the edge documents already held).
pub fn put_entity(nodes: &mut Vec<EntityNode>, pulled: EntityNode) {
    match nodes.iter_mut().find(|n| n.id == pulled.id) {
        Some(n) => {
            let mut relationships = std::mem::take(&mut n.relationships);
            for r in &pulled.relationships {
                put_relationship(&mut relationships, r.clone());
            }
            *n = EntityNode {
                property_since: Default::default(),
                past_properties: Default::default(),
                relationships,
                ..pulled
            };
        }
        None => nodes.push(pulled),
    }
}

/// Puts a pulled edge on its source node (the same target, label and start are the same edge: the
/// pulled strength and end replace the local ones). `false` when the source is not here yet: the
/// edge joins it when the node's document arrives.
pub fn put_edge(nodes: &mut [EntityNode], e: &EdgeDoc) -> bool {
    let Some(n) = nodes.iter_mut().find(|n| n.id == e.source) else {
        return false;
    };
    put_relationship(
        &mut n.relationships,
        Relationship {
            target_id: e.target.clone(),
            relationship: e.label.clone(),
            strength: e.strength,
            valid_from: e.valid_from,
            valid_to: e.valid_to,
        },
    );
    true
}

fn put_relationship(all: &mut Vec<Relationship>, r: Relationship) {
    match all.iter_mut().find(|x| {
        x.target_id == r.target_id
            && x.relationship == r.relationship
            && x.valid_from == r.valid_from
    }) {
        Some(x) => *x = r,
        None => all.push(r),
    }
}

/// Removes the node `id` (a tombstone: deleted on another device, or unified into another node).
/// Returns whether it was there.
pub fn remove_entity(nodes: &mut Vec<EntityNode>, id: &str) -> bool {
    let before = nodes.len();
    nodes.retain(|n| n.id != id);
    nodes.len() != before
}

/// Removes one edge named by its tombstone's `_id` parts (source, label, target, start). Returns
/// whether it was there.
pub fn remove_edge(nodes: &mut [EntityNode], parts: &[String]) -> bool {
    let [source, label, target, from] = parts else {
        return false;
    };
    let Ok(from) = from.parse::<i64>() else {
        return false;
    };
    let Some(n) = nodes.iter_mut().find(|n| &n.id == source) else {
        return false;
    };
    let before = n.relationships.len();
    n.relationships
        .retain(|r| !(&r.target_id == target && &r.relationship == label && r.valid_from == from));
    n.relationships.len() != before
}

/// What to store for a pulled fact, given the stored record of its id (if any): the pulled one,
/// with the stored end and tombstone joined in (the earliest of each); `None` when that is
/// what is stored already.
pub fn pulled_fact(stored: Option<&UserFact>, pulled: UserFact) -> Option<UserFact> {
    let Some(here) = stored else {
        return Some(pulled);
    };
    let earliest = |a: Option<Millis>, b: Option<Millis>| match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    let next = UserFact {
        valid_to: earliest(pulled.valid_to, here.valid_to),
        forgotten: earliest(pulled.forgotten, here.forgotten),
        updated_at: pulled.updated_at.max(here.updated_at),
        ..pulled
    };
    (next != *here).then_some(next)
}
