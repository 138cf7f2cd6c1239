//! A summary sentence as the engine writes and reads it: splitting a text into sentences
//! ([`sentences`]), the mark of the user's own statement ([`USER_SAYS`]), and the note a sentence may
//! end with ([`note_of`]): `User: I live in Oslo now (said 2026-11-20).` for a current statement,
//! `User: I live in Lisbon (said 2026-03-01; until 2026-11-20).` for a past one ([`is_past`]).
//! A leaf of `engine::memory`: it imports no other memory module (grounding, summaries, superseding
//! and the memory pane all read sentences through it). Must not import anything outside
//! `crate::engine`.

use crate::engine::format::date;
use crate::engine::model::Millis;

/// The sentences of `text` (ending at `.`, `!`, `?` or a line break), trimmed, empty ones left out.
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let end_here = b == b'\n'
            || (matches!(b, b'.' | b'!' | b'?')
                && bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace()));
        if end_here {
            let s = text[start..=i].trim();
            if !s.is_empty() {
                out.push(s);
            }
            start = i + 1;
        }
    }
    let s = text[start..].trim();
    if !s.is_empty() {
        out.push(s);
    }
    out
}

/// How a user statement is marked in a summary: the summary speaks of the user, and a bare "I" in
/// it would read as the agent.
pub const USER_SAYS: &str = "User: ";

/// What a sentence's note says: the day it was said and the day it stopped holding, as written
/// (`YYYY-MM-DD`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Note {
    pub said: Option<String>,
    pub until: Option<String>,
}

fn is_day(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
}

/// The sentence without its note, and the note (see the module header). A sentence without one is
/// itself with an empty note.
pub fn note_of(sentence: &str) -> (&str, Note) {
    let t = sentence.trim_end();
    let inner = t.trim_end_matches(['.', '!', '…']).trim_end();
    let Some(open) = inner.rfind('(').filter(|_| inner.ends_with(')')) else {
        return (t, Note::default());
    };
    let mut note = Note::default();
    for part in inner[open + 1..inner.len() - 1].split(';') {
        let part = part.trim();
        if let Some(d) = part.strip_prefix("said ").filter(|d| is_day(d)) {
            note.said = Some(d.to_string());
        } else if let Some(d) = part.strip_prefix("until ").filter(|d| is_day(d)) {
            note.until = Some(d.to_string());
        } else {
            return (t, Note::default());
        }
    }
    (inner[..open].trim_end(), note)
}

/// Whether the sentence is a past one (its note has `until`).
pub fn is_past(sentence: &str) -> bool {
    note_of(sentence).1.until.is_some()
}

/// `body` with `note`, closed with a full stop (or its own `!`).
pub fn with_note(body: &str, note: &Note) -> String {
    let body = body.trim_end();
    let end = if body.ends_with('!') { "!" } else { "." };
    let body = body.trim_end_matches(['.', '!', '…']);
    let parts: Vec<String> = note
        .said
        .iter()
        .map(|d| format!("said {d}"))
        .chain(note.until.iter().map(|d| format!("until {d}")))
        .collect();
    if parts.is_empty() {
        format!("{body}{end}")
    } else {
        format!("{body} ({}){end}", parts.join("; "))
    }
}

/// `sentence` as said on the day of `at`.
pub fn said_on(sentence: &str, at: Millis) -> String {
    let (body, mut note) = note_of(sentence);
    note.said = Some(date(at));
    with_note(body, &note)
}

/// `sentence` as past since the day of `at` (its said day kept).
pub fn past_since(sentence: &str, at: Millis) -> String {
    let (body, mut note) = note_of(sentence);
    note.until = Some(date(at));
    with_note(body, &note)
}
