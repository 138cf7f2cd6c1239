//! Facts about the user the memory model proposes (the update's `user_facts` and
//! `user_facts_ended`, `super::parse::Proposals`), kept only in the user's own words.
//!
//! - Grounding ([`ground_quote`]): a proposal's quote counts only when every content word of it
//!   occurs in one clause or sentence of ONE user message of the update's span (`super::user::
//!   said_units`): the user's own sentence, or one the model reordered or trimmed. Words are
//!   compared folded (case, accents, Greek tonos: `super::lang::fold`) and cut at Unicode word
//!   boundaries (`super::normalize::words`: letters and digits of any script; Chinese and Japanese
//!   characters, written without spaces, are each a word, which is what Unicode's word boundaries
//!   (UAX #29) give for ideographs, so a quote in those scripts is grounded character by
//!   character). Function words of the tables and English's articles may differ. A quote of one
//!   content word grounds only a clause of two at most.
//! - What is stored is the user's clause (lead-ins left out), never the model's wording; its kind
//!   is the model's. It is refused on the rules' grounds (`super::user::refuses`: a question, a
//!   request, a hypothetical, small talk, someone else) in the languages they know; in others the
//!   kind and the grounding decide. It is then placed as the rules' facts are
//!   (`super::user::place_said`: said already, superseded, supersedes), with its message as source.
//! - A fact said to hold no longer (`user_facts_ended`, a quote of two content words or more),
//!   grounded and not refused the same way: in a language the rules read, it makes past what its
//!   claims supersede (`super::user::supersede_said`, the rules' own supersession: a small model
//!   echoes its `user_facts` there, which must end nothing); in another, the current facts of its
//!   kind and scope said before it in another message that it names by a word no other such fact
//!   holds (an inflected form names the same thing: Polish "Krakowie" and "Krakowa").
//! - Bounded: at most [`super::parse::MAX_PROPOSALS`] of each list, clauses of at most
//!   `super::user::MAX_FACT_CHARS`.
//!
//! Uses the facts' rules (`super::user`) and the tables (`super::lang`); nothing imports it but the
//! memory's users. Must not import anything outside `crate::engine`.

use super::lang::{fold, is_stop};
use super::normalize::words;
use super::parse::{Proposals, ProposedFact};
use super::user::{
    candidate, place_said, refuses, rules_read, said_units, supersede_said, MAX_FACT_CHARS,
};
use crate::engine::model::{FactKind, FactSource, Millis, UserFact};

/// A user message of the span, as a proposal is held to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Said<'a> {
    pub message_id: &'a str,
    pub text: &'a str,
    pub at: Millis,
}

/// English words a quote may add or leave out (the tables' own are `lang::is_stop`).
const FUNCTION: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "at", "is", "am", "are", "m", "s", "and",
];

/// The folded words of `text`.
fn folded(text: &str) -> Vec<String> {
    words(&fold(text))
}

/// The words of `text` a quote must hold: folded, function words left out.
fn content(text: &str) -> Vec<String> {
    let mut out: Vec<String> = folded(text)
        .into_iter()
        .filter(|w| !FUNCTION.contains(&w.as_str()) && !is_stop(w))
        .collect();
    out.dedup();
    out
}

/// Where `quote` is grounded among `said` (module rules): the index of the message and the
/// user's clause that holds it, the first found, oldest message first, each message's clauses
/// before its whole sentences.
pub fn ground_quote(quote: &str, said: &[Said]) -> Option<(usize, String)> {
    let want = content(quote);
    if want.is_empty() {
        return None;
    }
    said.iter().enumerate().find_map(|(i, m)| {
        said_units(m.text)
            .into_iter()
            .filter(|u| u.len() <= MAX_FACT_CHARS)
            .find(|u| {
                let have = content(u);
                let all = want.iter().all(|w| have.contains(w));
                all && (want.len() >= 2 || have.len() <= 2)
            })
            .map(|u| (i, u))
    })
}

/// The stored fact a proposal makes: its grounded clause, when the rules do not refuse it, with its
/// message.
fn grounded(p: &ProposedFact, said: &[Said], known: &[UserFact]) -> Option<(usize, String)> {
    let (i, unit) = ground_quote(&p.quote, said)?;
    (!refuses(&unit, p.kind, known)).then_some((i, unit))
}

/// Takes in the model's `proposals` for a span of conversation `conversation_id` whose user
/// messages are `said` (oldest first), in a conversation of project `scope` (module rules): the
/// ended facts first, then the facts said. Whether `facts` changed.
pub fn handle_proposed_in(
    facts: &mut Vec<UserFact>,
    scope: Option<&str>,
    conversation_id: &str,
    said: &[Said],
    proposals: &Proposals,
    mut new_id: impl FnMut() -> String,
) -> bool {
    let source = |i: usize| FactSource {
        conversation_id: conversation_id.to_string(),
        message_id: said[i].message_id.to_string(),
        said_at: said[i].at,
    };
    let mut changed = false;
    for p in proposals
        .ended
        .iter()
        .filter(|p| content(&p.quote).len() >= 2)
    {
        let Some((i, unit)) = grounded(p, said, facts) else {
            continue;
        };
        changed |= if rules_read(&unit) {
            supersede_said(facts, &unit, said[i].at, scope)
        } else {
            end_named(facts, scope, p.kind, &unit, &source(i))
        };
    }
    for p in &proposals.said {
        let Some((i, unit)) = grounded(p, said, facts) else {
            continue;
        };
        if let Some(c) = candidate(&unit, p.kind) {
            changed |= place_said(facts, c, source(i), scope, &mut new_id);
        }
    }
    changed
}

/// Whether two folded words name one thing: the same word, or two forms of it (words of four
/// letters or more sharing all but two of the shorter one's letters, three at least: Polish
/// "krakowie" and "krakowa", "kawę" and "kawy").
fn same_word(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let shorter = a.chars().count().min(b.chars().count());
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    shorter >= 4 && common >= 3 && common + 2 >= shorter
}

/// The words of `text` that may name a thing: of three letters or more (any character of a script
/// written without spaces), function words left out.
fn naming_words(text: &str) -> Vec<String> {
    content(text)
        .into_iter()
        .filter(|w| w.chars().count() >= 3 || w.chars().all(|c| c as u32 >= 0x3040))
        .collect()
}

/// Makes past, from `source`'s time, the current facts of kind `kind` and scope `scope` said before
/// it in another message that the user's clause `unit` names by a word no other such fact holds.
/// Whether any changed.
fn end_named(
    facts: &mut [UserFact],
    scope: Option<&str>,
    kind: FactKind,
    unit: &str,
    source: &FactSource,
) -> bool {
    let at = source.said_at;
    let named = naming_words(unit);
    let open: Vec<usize> = (0..facts.len())
        .filter(|&i| {
            let f = &facts[i];
            f.is_current()
                && f.kind == kind
                && f.scope.as_deref() == scope
                && f.valid_from <= at
                && f.source
                    .as_ref()
                    .is_none_or(|s| s.message_id != source.message_id)
        })
        .collect();
    let words: Vec<Vec<String>> = open.iter().map(|&i| naming_words(&facts[i].text)).collect();
    let holds = |list: &[String], w: &str| list.iter().any(|x| same_word(x, w));
    let mut changed = false;
    for (k, &i) in open.iter().enumerate() {
        let distinct = words[k].iter().filter(|w| holds(&named, w)).any(|w| {
            words
                .iter()
                .enumerate()
                .all(|(j, other)| j == k || !holds(other, w))
        });
        if distinct {
            facts[i].valid_to = Some(at);
            facts[i].updated_at = facts[i].updated_at.max(at);
            changed = true;
        }
    }
    changed
}
