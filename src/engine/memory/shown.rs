//! What the memory pane shows of facts that changed: the summary split into its sentences, each
//! current or past with its days readable ("said 1 Mar 2026, until 20 Nov 2026", from the note
//! [`super::supersede`] writes), and an entity's properties and relationships, current ones and
//! those that no longer hold (past properties, relationships closed with `valid_to`) with when they
//! held. The view only renders these: a past item struck through, with [`PAST_LABEL`] for screen
//! readers.
//! Must not import anything outside `crate::engine`.

use super::sentence::{note_of, sentences};
use crate::engine::format::{day, day_of};
use crate::engine::model::{EntityNode, Millis, Relationship};

/// What a screen reader says of a past item (its struck-through text says it to the eye).
pub const PAST_LABEL: &str = "no longer true";

/// Whether a fact holds now or held once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Current,
    Past,
}

impl Status {
    /// `current` or `past` (the pane's `data-status`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Current => "current",
            Status::Past => "past",
        }
    }
}

/// One sentence of a summary as the pane shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownSentence {
    /// The sentence without its note, with its closing punctuation; the sentence as written when it
    /// has no note.
    pub text: String,
    pub status: Status,
    /// When it was said and until when it held, readable: "said 1 Mar 2026, until 20 Nov 2026";
    /// empty without a note.
    pub dates: String,
    /// It starts a new line in the summary (the text had a line break before it).
    pub new_line: bool,
}

/// The sentences of a summary `text` (as the summary rules split them), each with its status (past
/// when its note has `until`) and its days.
pub fn summary_sentences(text: &str) -> Vec<ShownSentence> {
    let mut last_end = 0;
    sentences(text)
        .into_iter()
        .map(|s| {
            // `sentences` returns slices of `text`: where this one starts in it.
            let start = s.as_ptr() as usize - text.as_ptr() as usize;
            let new_line = text[last_end.min(start)..start].contains('\n');
            last_end = start + s.len();
            let (body, note) = note_of(s);
            let status = if note.until.is_some() {
                Status::Past
            } else {
                Status::Current
            };
            let dates = [
                note.said.map(|d| format!("said {}", day_of(&d))),
                note.until.map(|d| format!("until {}", day_of(&d))),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ");
            let text = if body.len() == s.len() {
                s.to_string()
            } else {
                let end = if s.trim_end().ends_with('!') {
                    "!"
                } else {
                    "."
                };
                format!("{}{end}", body.trim_end_matches(['.', '!', '…']))
            };
            ShownSentence {
                text,
                status,
                dates,
                new_line,
            }
        })
        .collect()
}

/// One property of an entity as the pane shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownProperty {
    pub key: String,
    pub value: String,
    pub status: Status,
    /// "since 1 Mar 2026" for a current value whose day is known; "from 1 Mar 2026 until 20 Nov 2026"
    /// (or "until …" when the day it started is unknown) for a past one; else empty.
    pub dates: String,
}

/// "since D" (`from` known), or "".
fn since(from: Millis) -> String {
    if from > 0 {
        format!("since {}", day(from))
    } else {
        String::new()
    }
}

/// "from D until D'" (or "until D'" when `from` is unknown).
fn held(from: Millis, to: Millis) -> String {
    if from > 0 {
        format!("from {} until {}", day(from), day(to))
    } else {
        format!("until {}", day(to))
    }
}

/// `e`'s properties by key: each key's current value first, then its past values, latest first;
/// keys only past values remain of come after the others, in key order.
pub fn entity_properties(e: &EntityNode) -> Vec<ShownProperty> {
    let mut out = Vec::new();
    let past_of = |key: &str, out: &mut Vec<ShownProperty>| {
        let mut past: Vec<_> = e.past_properties.iter().filter(|p| p.key == key).collect();
        past.sort_by(|a, b| {
            b.valid_to
                .cmp(&a.valid_to)
                .then(b.valid_from.cmp(&a.valid_from))
        });
        out.extend(past.into_iter().map(|p| ShownProperty {
            key: p.key.clone(),
            value: p.value.clone(),
            status: Status::Past,
            dates: held(p.valid_from, p.valid_to),
        }));
    };
    for (k, v) in &e.properties {
        out.push(ShownProperty {
            key: k.clone(),
            value: v.clone(),
            status: Status::Current,
            dates: e
                .property_since
                .get(k)
                .map_or_else(String::new, |t| since(*t)),
        });
        past_of(k, &mut out);
    }
    let mut only_past: Vec<&str> = e
        .past_properties
        .iter()
        .map(|p| p.key.as_str())
        .filter(|k| !e.properties.contains_key(*k))
        .collect();
    only_past.sort_unstable();
    only_past.dedup();
    for k in only_past {
        past_of(k, &mut out);
    }
    out
}

/// One relationship of an entity as the pane shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownRelationship {
    pub relationship: String,
    pub target_id: String,
    pub strength: f32,
    /// Past when it was closed (`valid_to`).
    pub status: Status,
    /// "since D" for a current one whose start is known; "from D until D'" (or "until D'") for a
    /// closed one.
    pub dates: String,
}

/// `e`'s relationships, current ones first, then the closed ones (latest closed first); each group
/// in the graph's order.
pub fn entity_relationships(e: &EntityNode) -> Vec<ShownRelationship> {
    let mut order: Vec<&Relationship> = e.relationships.iter().collect();
    // Stable: current ones keep their order, closed ones latest closed first.
    order.sort_by_key(|r| {
        (
            r.valid_to.is_some(),
            std::cmp::Reverse(r.valid_to.unwrap_or(0)),
        )
    });
    order
        .into_iter()
        .map(|r| ShownRelationship {
            relationship: r.relationship.clone(),
            target_id: r.target_id.clone(),
            strength: r.strength,
            status: if r.valid_to.is_some() {
                Status::Past
            } else {
                Status::Current
            },
            dates: match r.valid_to {
                Some(to) => held(r.valid_from, to),
                None => since(r.valid_from),
            },
        })
        .collect()
}
