//! What the user said that memory has not taken in yet. Between a user's message and the memory update
//! that covers it there may be many turns: a small local server cannot run the update while the user
//! keeps typing (`super::schedule`), and an update may fail. Meanwhile the messages stay in the prompt
//! while they fit; when they no longer fit, the facts the user gave in them would leave the prompt
//! with them. So the prompt carries the user's statements from those messages, as the summary would
//! add them ([`super::summary::with_dated_user_statements`]: no questions nor requests, nothing the
//! summary already says, each with the day it was said), until an update covers them.
//!
//! Changed facts stay truthful here too: a statement a later one supersedes (lives in, works as, is
//! called, has a, likes: `super::supersede`) is left out, and a summary sentence a pending statement
//! supersedes is carried as past (`… (until 2026-11-20).`), never as current, and so is one that
//! only names the place or job that no longer holds (`super::supersede::mentions_gone`).
//! Must not import anything outside `crate::engine`.

use super::summary::{sentences_of, Said, MAX_USER_STATEMENT_CHARS};
use super::supersede::{
    claims, ended_values, gone_values, is_past, mentions_ended, mentions_gone, past_since,
    superseded_by, Claim,
};
use crate::engine::model::Millis;

/// What [`pending`] gives the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pending {
    /// The user's statements memory does not hold yet, oldest first, each one sentence (marked
    /// `User: `, with the day it was said), with the index in `said` of the message it comes from.
    pub statements: Vec<(usize, String)>,
    /// The summary with the sentences a user message supersedes made past; `None` when the summary
    /// is unchanged (or there is none).
    pub summary: Option<String>,
}

/// The pending statements of `said` (each message's text, when it was written, and whether its
/// statements may be carried; oldest first) against the summary the prompt carries. Every message's
/// claims count for what is superseded, carried or not (the new message, one history carries whole).
pub fn pending(summary: Option<&str>, said: &[(&str, Millis, bool)]) -> Pending {
    let base = summary.map(str::trim).unwrap_or_default();
    // Each message's statements, as the summary would add them (the summary read once).
    let base_said = Said::of(base);
    let mut added: Vec<(usize, String)> = Vec::new();
    for (i, (text, at, _)) in said.iter().enumerate() {
        let mut chars = 0;
        for (len, s) in base_said.statements(text, Some(*at)) {
            chars += len;
            if chars > MAX_USER_STATEMENT_CHARS {
                break;
            }
            added.push((i, s));
        }
    }
    let claimed: Vec<_> = added.iter().map(|(_, s)| claims(s)).collect();
    // A statement a later one supersedes is no longer true: left out.
    let statements: Vec<(usize, String)> = added
        .iter()
        .enumerate()
        .filter(|(k, (i, s))| said[*i].2 && !superseded_by(s, &claimed[k + 1..]))
        .map(|(_, (i, s))| (*i, s.clone()))
        .collect();
    // Each statement with the time its message was written, and its claims.
    let dated: Vec<(Millis, &Vec<Claim>)> = added
        .iter()
        .zip(&claimed)
        .map(|((i, _), c)| (said[*i].1, c))
        .collect();
    Pending {
        statements,
        summary: made_past(base, &dated),
    }
}

/// The summary `base` with the sentences that the user's `statements` (each with the time it was
/// said and its claims) make past: those a statement supersedes, since it was said, then those that
/// only name a place or job that no longer holds, or a thing said to be gone; `None` when none is.
fn made_past(base: &str, statements: &[(Millis, &Vec<Claim>)]) -> Option<String> {
    let mut changed = false;
    let mut first: Option<Millis> = None;
    let rewritten: Vec<String> = sentences_of(base)
        .into_iter()
        .map(|s| {
            // The sentence's claims read once, however many statements there are.
            let mine = claims(s);
            let by = statements
                .iter()
                .filter(|(_, c)| c.iter().any(|n| mine.iter().any(|o| n.supersedes(o))))
                .map(|(at, _)| *at)
                .min();
            match by {
                Some(at) if !is_past(s) => {
                    changed = true;
                    first = Some(first.map_or(at, |f: Millis| f.min(at)));
                    past_since(s, at)
                }
                _ => s.trim().to_string(),
            }
        })
        .collect();
    // A sentence that only names a place or job that no longer holds is past with it.
    let now_past: Vec<Vec<Claim>> = rewritten
        .iter()
        .filter(|s| is_past(s))
        .map(|s| claims(s))
        .collect();
    let still: Vec<Vec<Claim>> = rewritten
        .iter()
        .filter(|s| !is_past(s))
        .map(|s| claims(s))
        .chain(statements.iter().map(|(_, c)| (*c).clone()))
        .collect();
    let gone = gone_values(now_past.iter().flatten(), still.iter().flatten());
    let ended = ended_values(statements.iter().flat_map(|(_, c)| c.iter()));
    let ended_on = statements
        .iter()
        .filter(|(_, c)| c.iter().any(|c| c.attribute == "ended"))
        .map(|(at, _)| *at)
        .min();
    let rewritten: Vec<String> = rewritten
        .into_iter()
        .map(|s| match (first, ended_on) {
            (Some(at), _) if mentions_gone(&s, &gone) => {
                changed = true;
                past_since(&s, at)
            }
            (_, Some(at)) if mentions_ended(&s, &ended) => {
                changed = true;
                past_since(&s, at)
            }
            _ => s,
        })
        .collect();
    changed.then(|| rewritten.join(" "))
}
