//! The one merge of two versions of a synced document, used for push conflicts (409: re-read,
//! merge, retry), for pulled `_conflicts` (the merged winner is written, the losing leaves deleted)
//! and for applying pulled documents locally. It is a join: commutative, associative and idempotent
//! (property-tested in `tests/engine_sync_merge.rs`), so devices converge whatever order they see
//! versions in. Rules:
//! - a tombstone wins over any live version (delete wins over concurrent edits); two tombstones keep
//!   the later stamp;
//! - registers keep the later stamp (equal stamps: the greater value); sets are unions; maps of
//!   registers keep every key; `created_at` keeps the earliest, `updated_at` and a conversation's
//!   `cleared` the latest;
//! - messages and summaries are immutable: two versions of one can only differ if a device rewrote
//!   it (say, a reply finished); the final status wins, then the later stamp, then the greater content;
//! - edges keep the strongest strength and the earliest closing time (a closed edge stays closed);
//! - a fact about the user keeps its words by register, and the earliest `forgotten` and
//!   `valid_to`: forgotten on any device is forgotten on every device, past on one is past on all
//!   (a fact is never deleted; `forgotten` is its tombstone, which keeps its words).
//!
//! Must not import anything outside `crate::engine`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use super::doc::{
    Body, ConversationDoc, Doc, EdgeDoc, EntityDoc, FactDoc, Lww, MessageDoc, Tombstone,
};
use crate::engine::model::Millis;

/// Merges two versions of one document. Versions of different `_id`s never meet; if they do, the
/// greater `_id` is kept so the result is still deterministic.
pub fn merge(a: &Doc, b: &Doc) -> Doc {
    match a.id.cmp(&b.id) {
        Ordering::Less => return b.clone(),
        Ordering::Greater => return a.clone(),
        Ordering::Equal => {}
    }
    Doc {
        id: a.id.clone(),
        body: merge_body(&a.body, &b.body),
    }
}

/// Merges any number of versions (none: `None`).
pub fn merge_all<'a>(versions: impl IntoIterator<Item = &'a Doc>) -> Option<Doc> {
    versions.into_iter().fold(None, |acc, d| {
        Some(match acc {
            None => d.clone(),
            Some(m) => merge(&m, d),
        })
    })
}

fn merge_body(a: &Body, b: &Body) -> Body {
    match (a, b) {
        (Body::Tombstone(x), Body::Tombstone(y)) => Body::Tombstone(Tombstone {
            kind: x.kind.max(y.kind),
            at: x.at.clone().max(y.at.clone()),
        }),
        (Body::Tombstone(_), _) => a.clone(),
        (_, Body::Tombstone(_)) => b.clone(),
        (Body::Conversation(x), Body::Conversation(y)) => Body::Conversation(conversation(x, y)),
        (Body::Message(x), Body::Message(y)) => Body::Message(message(x, y).clone()),
        (Body::Entity(x), Body::Entity(y)) => Body::Entity(entity(x, y)),
        (Body::Edge(x), Body::Edge(y)) => Body::Edge(edge(x, y)),
        (Body::Summary(x), Body::Summary(y)) => Body::Summary(x.max(y).clone()),
        (Body::Fact(x), Body::Fact(y)) => Body::Fact(merge_fact(x, y)),
        // Different kinds under one `_id` cannot come from Memoire; keep the greater kind whole.
        _ => {
            if a.kind() >= b.kind() {
                a.clone()
            } else {
                b.clone()
            }
        }
    }
}

fn lww<T: Ord + Clone>(a: &Lww<T>, b: &Lww<T>) -> Lww<T> {
    match a.at.cmp(&b.at).then_with(|| a.v.cmp(&b.v)) {
        Ordering::Less => b.clone(),
        _ => a.clone(),
    }
}

fn registers<T: Ord + Clone>(
    a: &BTreeMap<String, Lww<T>>,
    b: &BTreeMap<String, Lww<T>>,
) -> BTreeMap<String, Lww<T>> {
    let mut out = a.clone();
    for (k, v) in b {
        let merged = match out.get(k) {
            Some(mine) => lww(mine, v),
            None => v.clone(),
        };
        out.insert(k.clone(), merged);
    }
    out
}

fn union(a: &BTreeSet<String>, b: &BTreeSet<String>) -> BTreeSet<String> {
    a.union(b).cloned().collect()
}

fn greater_text(a: &str, b: &str) -> String {
    a.max(b).to_string()
}

fn conversation(a: &ConversationDoc, b: &ConversationDoc) -> ConversationDoc {
    ConversationDoc {
        id: greater_text(&a.id, &b.id),
        created_at: a.created_at.min(b.created_at),
        title: lww(&a.title, &b.title),
        fields: registers(&a.fields, &b.fields),
        cleared: a.cleared.clone().max(b.cleared.clone()),
    }
}

/// The version of a message that wins: final over streaming, then the later stamp, then the greater
/// canonical JSON (so even two different rewrites at one stamp resolve the same way everywhere).
fn message<'a>(a: &'a MessageDoc, b: &'a MessageDoc) -> &'a MessageDoc {
    // The usual case (a page the server confirmed, a copy pulled again): nothing to rank, and no
    // JSON to write for the tie-break.
    if a == b {
        return a;
    }
    let rank = |m: &MessageDoc| (m.status != "streaming", m.at.clone());
    let json = |m: &MessageDoc| serde_json::to_string(m).unwrap_or_default();
    match rank(a).cmp(&rank(b)).then_with(|| json(a).cmp(&json(b))) {
        Ordering::Less => b,
        _ => a,
    }
}

fn entity(a: &EntityDoc, b: &EntityDoc) -> EntityDoc {
    EntityDoc {
        id: greater_text(&a.id, &b.id),
        scope: a.scope.clone().max(b.scope.clone()),
        entity_type: lww(&a.entity_type, &b.entity_type),
        name: lww(&a.name, &b.name),
        description: lww(&a.description, &b.description),
        aliases: union(&a.aliases, &b.aliases),
        properties: registers(&a.properties, &b.properties),
        property_since: registers(&a.property_since, &b.property_since),
        past_properties: a
            .past_properties
            .union(&b.past_properties)
            .cloned()
            .collect(),
        sources: union(&a.sources, &b.sources),
        updated_at: a.updated_at.max(b.updated_at),
    }
}

fn edge(a: &EdgeDoc, b: &EdgeDoc) -> EdgeDoc {
    let valid_to = match (a.valid_to, b.valid_to) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    let strength = if a.strength.total_cmp(&b.strength) == Ordering::Less {
        b.strength
    } else {
        a.strength
    };
    // The identity fields are equal for one `_id`; take the greater so the result is still a join.
    EdgeDoc {
        scope: a.scope.clone().max(b.scope.clone()),
        source: greater_text(&a.source, &b.source),
        label: greater_text(&a.label, &b.label),
        target: greater_text(&a.target, &b.target),
        valid_from: a.valid_from.max(b.valid_from),
        strength,
        valid_to,
    }
}

/// The earlier of two ends; an end wins over none.
fn earliest(a: Option<Millis>, b: Option<Millis>) -> Option<Millis> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// Two versions of one fact (see the module rules).
pub fn merge_fact(a: &FactDoc, b: &FactDoc) -> FactDoc {
    FactDoc {
        id: greater_text(&a.id, &b.id),
        words: lww(&a.words, &b.words),
        source: a.source.clone().max(b.source.clone()),
        valid_from: a.valid_from.min(b.valid_from),
        valid_to: earliest(a.valid_to, b.valid_to),
        forgotten: earliest(a.forgotten, b.forgotten),
        updated_at: a.updated_at.max(b.updated_at),
    }
}
