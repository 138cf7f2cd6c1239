//! Summary versioning: the next [`ConversationSummary`] version from a parsed reply, and restoring an
//! older version's text as a new version. Versions only ever grow; every version is kept by the store.
//! Above `super::supersede` (its claims) and `super::prompt` (the span); must not import
//! `super::read`, which uses it. Sentences and their notes are `super::sentence`'s.
//! Must not import anything outside `crate::engine`.

use super::error::MemoryError;
use super::prompt::UpdateSpan;
use super::sentence::{is_past, note_of, said_on, sentences};
use super::supersede::{claims, superseded_by};

pub use super::sentence::USER_SAYS;
use crate::engine::model::{ConversationSummary, Millis};

/// The latest version among `versions` (highest `version`), if any.
pub fn latest(versions: &[ConversationSummary]) -> Option<&ConversationSummary> {
    versions.iter().max_by_key(|s| s.version)
}

/// The next summary version after `previous`: `version + 1` (1 for the first), the new text,
/// `covers_up_to_seq` = the update span's last seq (never below the previous one), the conversation's
/// message count, and `updated_at = now`.
pub fn next_summary(
    previous: Option<&ConversationSummary>,
    conversation_id: &str,
    text: &str,
    span: &UpdateSpan,
    message_count: u64,
    now: Millis,
) -> ConversationSummary {
    ConversationSummary {
        conversation_id: conversation_id.to_string(),
        version: previous.map_or(1, |p| p.version.saturating_add(1)),
        text: text.to_string(),
        covers_up_to_seq: previous.map_or(span.to_seq, |p| p.covers_up_to_seq.max(span.to_seq)),
        message_count,
        updated_at: now,
    }
}
/// The summary that makes version `version` of `versions` (a conversation's stored summaries)
/// current again: [`restore_summary`] of it over the latest.
pub fn restore_version(
    versions: &[ConversationSummary],
    version: u32,
    now: Millis,
) -> Result<ConversationSummary, MemoryError> {
    let older = versions
        .iter()
        .find(|s| s.version == version)
        .ok_or(MemoryError::RestoreMissing { version })?;
    // `older` is among them, so there is a latest.
    let latest = versions.iter().max_by_key(|s| s.version).unwrap_or(older);
    restore_summary(latest, older, now)
}

/// Restores `older`'s text as a new version on top of `latest`. The new version covers only what
/// `older` covered (its `covers_up_to_seq` and `message_count`), so the messages summarised after it are
/// summarised again by the next update instead of being silently lost.
pub fn restore_summary(
    latest: &ConversationSummary,
    older: &ConversationSummary,
    now: Millis,
) -> Result<ConversationSummary, MemoryError> {
    if latest.conversation_id != older.conversation_id {
        return Err(MemoryError::RestoreOtherConversation);
    }
    if older.version >= latest.version {
        return Err(MemoryError::RestoreNotOlder {
            older: older.version,
            latest: latest.version,
        });
    }
    Ok(ConversationSummary {
        conversation_id: latest.conversation_id.clone(),
        version: latest.version.saturating_add(1),
        text: older.text.clone(),
        covers_up_to_seq: older.covers_up_to_seq,
        message_count: older.message_count,
        updated_at: now,
    })
}

/// The longest summary [`carry_forward`] builds by default; past it the oldest carried sentences are
/// left out (the model's own text is never cut here).
pub const CARRY_MAX_CHARS: usize = 6000;

/// How long a carried-forward summary may grow for a conversation with this config: about half the
/// prompt budget (at 4 characters per token), between 600 and [`CARRY_MAX_CHARS`] characters. When the
/// prompt cannot take all of it beside the recent messages, the assembly keeps its most telling
/// sentences ([`shorten`]); a third of the budget lost three of ten planted facts in the recall bench.
pub fn summary_max_chars(config: &crate::engine::model::MemoryConfig) -> usize {
    let budget = config
        .context_tokens
        .saturating_sub(config.reply_reserve_tokens) as usize;
    (budget * 2).clamp(600, CARRY_MAX_CHARS)
}

/// Short words that start a clause when capitalised; never names.
const CLAUSE_STARTS: &[&str] = &[
    "a", "an", "and", "as", "at", "but", "by", "for", "he", "her", "here", "his", "how", "i", "if",
    "in", "is", "it", "its", "my", "no", "not", "of", "on", "or", "our", "she", "so", "the", "to",
    "we", "who", "why", "yes", "you",
];

/// Words too common to tell two sentences apart.
const COMMON: &[&str] = &[
    "about",
    "after",
    "also",
    "because",
    "been",
    "before",
    "being",
    "could",
    "does",
    "from",
    "have",
    "into",
    "just",
    "like",
    "more",
    "most",
    "much",
    "only",
    "other",
    "over",
    "really",
    "said",
    "says",
    "should",
    "some",
    "than",
    "that",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "very",
    "want",
    "wants",
    "were",
    "what",
    "when",
    "which",
    "while",
    "will",
    "with",
    "would",
    "your",
    "user",
    "assistant",
    "conversation",
    "summary",
    "mentioned",
    "told",
    "talked",
];

/// The sentences of `text`, as the summary rules split them (for tests and the memory pane).
pub fn sentences_of(text: &str) -> Vec<&str> {
    sentences(text)
}

/// The words of a sentence that carry its facts: names and numbers (any word with a capital letter
/// after the first word, or a digit) and other words of four letters or more that are not common.
/// Returns (names and numbers, other words), lowercased.
fn key_terms(sentence: &str) -> (Vec<String>, Vec<String>) {
    let (mut names, mut words) = (Vec::new(), Vec::new());
    for (i, w) in sentence
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .enumerate()
    {
        let lower = w.to_lowercase();
        // A capital after a list marker or a colon starts a clause, not a name: "1) You can…".
        let capital = i > 0
            && w.chars().next().is_some_and(char::is_uppercase)
            && !CLAUSE_STARTS.contains(&lower.as_str())
            && !COMMON.contains(&lower.as_str());
        if capital || w.chars().any(|c| c.is_ascii_digit()) {
            names.push(lower);
        } else if w.chars().count() >= 4 && !COMMON.contains(&lower.as_str()) {
            words.push(lower);
        }
    }
    (names, words)
}

/// Whether `sentence`'s facts are all in `text` (lowercased): every name and number, and most other
/// words. A sentence with nothing distinctive counts as covered.
fn covered(sentence: &str, text: &str) -> bool {
    let (names, words) = key_terms(sentence);
    // A crude stem, so "lives" finds "live" and "named" finds "name".
    let has = |w: &String| {
        let stem = ["ing", "ed", "es", "s"]
            .iter()
            .find_map(|suffix| w.strip_suffix(suffix).filter(|s| s.chars().count() >= 3))
            .unwrap_or(w);
        text.contains(stem)
    };
    if !names.iter().all(has) {
        return false;
    }
    let present = words.iter().filter(|w| has(w)).count();
    words.is_empty() || present * 5 >= words.len() * 3
}

/// A sentence longer than this is a run-on (a small model's loop); it is cut at a word.
pub const MAX_SENTENCE_CHARS: usize = 240;

/// `s`, cut at the last word boundary within [`MAX_SENTENCE_CHARS`] and closed with `….` when
/// longer, so it stays one sentence when the stored summary is split again.
fn bounded(s: &str) -> String {
    if s.len() <= MAX_SENTENCE_CHARS {
        return s.to_string();
    }
    let mut end = MAX_SENTENCE_CHARS;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let cut = s[..end].rfind(' ').unwrap_or(end);
    format!("{}….", s[..cut].trim_end_matches([',', ';', ':', ' ']))
}

/// The summary a memory update stores: the model's new summary, preceded by the sentences of the
/// previous summary whose facts it left out (a small model often rewrites only what it just read, and
/// a summary that silently drops an early fact loses it for good). Sentences repeated by the model are
/// kept once; a statement of the user's (`User: …`) is left out only when a new statement of theirs
/// covers it, never for the model's rewording. Past `max_chars` (see [`summary_max_chars`]) the new sentences keep up to half of it and the rest
/// is chosen by what each sentence adds for its length ([`select_within`]); a run-on sentence is
/// cut first ([`MAX_SENTENCE_CHARS`]). Returns the text and how
/// many sentences were carried.
pub fn carry_forward(previous: Option<&str>, new: &str, max_chars: usize) -> (String, usize) {
    let mut seen: Vec<String> = Vec::new();
    let mut fresh: Vec<String> = Vec::new();
    for s in sentences(new).into_iter().map(bounded) {
        let key = s.to_lowercase();
        if !seen.contains(&key) {
            seen.push(key);
            fresh.push(s);
        }
    }
    let text_of = |user_only: bool| {
        fresh
            .iter()
            .filter(|s| !user_only || s.starts_with(USER_SAYS))
            .map(|s| note_of(s).0)
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    // The user's own statement is covered only by a statement of theirs: the model's rewording of
    // it may be garbled, or dropped by a later update.
    let (lower, lower_user) = (text_of(false), text_of(true));
    // The claims the new text makes as current: a previous sentence they supersede is not carried.
    let newer: Vec<_> = fresh
        .iter()
        .filter(|s| !is_past(s))
        .map(|s| claims(s))
        .collect();
    let mut carried: Vec<String> = Vec::new();
    for s in sentences(previous.unwrap_or("")).into_iter().map(bounded) {
        let key = s.to_lowercase();
        // A request stored as the user's statement by an older version is not carried.
        let request = s.starts_with(USER_SAYS) && is_request(&s);
        let stale = !is_past(&s) && superseded_by(&s, &newer);
        let by = if s.starts_with(USER_SAYS) {
            &lower_user
        } else {
            &lower
        };
        if !request && !stale && !covered(note_of(&s).0, by) && !seen.contains(&key) {
            seen.push(key);
            carried.push(s);
        }
    }
    let all: Vec<&str> = carried.iter().chain(&fresh).map(String::as_str).collect();
    let keep = if all.iter().map(|s| s.len() + 1).sum::<usize>() <= max_chars + 1 {
        vec![true; all.len()]
    } else {
        select_within(&all, carried.len(), max_chars)
    };
    let count = keep[..carried.len()].iter().filter(|k| **k).count();
    let kept: Vec<&str> = all
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(s, _)| *s)
        .collect();
    (kept.join(" "), count)
}

/// At most this much of the user's own statements is added to one update's summary.
pub const MAX_USER_STATEMENT_CHARS: usize = 1000;

/// The summary of an update: the model's `summary`, then each statement of `user_said` (a sentence
/// of the user's own messages that tells something: not a question nor a request ([`is_request`]),
/// with a name or number or two words of substance) that the summary does not cover, marked [`USER_SAYS`], up to
/// [`MAX_USER_STATEMENT_CHARS`] (a pasted document is material, not facts). `None` when both are empty.
/// A small model's summary often leaves out a fact the user gave, or is empty; once the update is
/// stored, those messages leave the prompt, and the fact with them.
pub fn with_user_statements(summary: Option<&str>, user_said: &[String]) -> Option<String> {
    let said: Vec<(&str, Option<Millis>)> = user_said.iter().map(|m| (m.as_str(), None)).collect();
    with_dated_user_statements(summary, &said)
}

/// [`with_user_statements`] for messages with the time each was written: each statement added
/// carries the day it was said (`User: I live in Oslo (said 2026-11-20).`, see [`super::supersede`]).
/// A statement that makes a claim (lives in, works as, …) always tells something, and only the same
/// claims in the summary's current sentences cover it; the summary's past sentences never count as
/// covering one.
pub fn with_dated_user_statements(
    summary: Option<&str>,
    user_said: &[(&str, Option<Millis>)],
) -> Option<String> {
    let mut out = summary.map(str::trim).unwrap_or_default().to_string();
    let mut said = Said::of(&out);
    let mut added = 0;
    'messages: for (message, at) in user_said {
        for (len, s) in said.statements(message, *at) {
            added += len;
            if added > MAX_USER_STATEMENT_CHARS {
                break 'messages;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&s);
            said.add(&s);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// What a summary says as current, as [`with_dated_user_statements`] reads it to tell whether a
/// statement of the user's is said already: its current sentences, lower case, and the claims they
/// make. Built once and grown statement by statement, so a long summary is read once, not once per
/// message.
#[derive(Debug, Clone)]
pub struct Said {
    lower: String,
    made: Vec<super::supersede::Claim>,
}

impl Said {
    /// What `text` says as current.
    pub fn of(text: &str) -> Said {
        let current: Vec<&str> = sentences(text)
            .into_iter()
            .filter(|s| !is_past(s))
            .collect();
        Said {
            lower: current
                .iter()
                .map(|s| note_of(s).0)
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase(),
            made: current.into_iter().flat_map(claims).collect(),
        }
    }

    /// Adds `statement` (one sentence, current) to what is said.
    pub fn add(&mut self, statement: &str) {
        if !self.lower.is_empty() {
            self.lower.push(' ');
        }
        self.lower.push_str(&note_of(statement).0.to_lowercase());
        self.made.extend(claims(statement));
    }

    /// The statements of `message` this does not say yet, each marked [`USER_SAYS`] and with the day
    /// of `at`: not questions nor requests, with a name or number or two words of substance; a
    /// statement that makes a claim (lives in, works as, …) always tells something, and only the
    /// same claims, of any subject, cover it ("Ingrid lives in Trondheim" covers "I live in
    /// Trondheim"; words in common are not enough: "The user works as a nurse" does not cover "I
    /// don't work as a nurse anymore, I work as a pilot now"). Earlier statements of the message
    /// count as said for the later ones. Each comes with the length of the sentence as the message
    /// said it (what [`MAX_USER_STATEMENT_CHARS`] counts).
    pub fn statements(&self, message: &str, at: Option<Millis>) -> Vec<(usize, String)> {
        let mut said = std::borrow::Cow::Borrowed(self);
        let mut out = Vec::new();
        for s in sentences(message).into_iter().map(bounded) {
            let (names, words) = key_terms(&s);
            let own = claims(&s);
            let tells = !names.is_empty() || words.len() >= 2 || !own.is_empty();
            let said_already = covered(&s, &said.lower)
                && own.iter().all(|c| {
                    said.made.iter().any(|m| {
                        m.attribute == c.attribute && m.value == c.value && m.negated == c.negated
                    })
                });
            if is_question(&s) || is_request(&s) || !tells || said_already {
                continue;
            }
            let len = s.len();
            let s = match s.chars().last() {
                Some('.' | '!' | '…') => s,
                _ => format!("{s}."),
            };
            let s = match at {
                Some(at) => said_on(&s, at),
                None => s,
            };
            let s = format!("{USER_SAYS}{s}");
            said.to_mut().add(&s);
            out.push((len, s));
        }
        out
    }
}

/// `text` cut to at most `max_chars` by leaving whole sentences out, the ones that add the least
/// first (the rule of [`carry_forward`]); the kept ones stay in their order. For a prompt whose
/// budget cannot take the whole summary: most of the memory is worth more than none of it.
pub fn shorten(text: &str, max_chars: usize) -> String {
    let all: Vec<String> = sentences(text).into_iter().map(bounded).collect();
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    if all.iter().map(|s| s.len() + 1).sum::<usize>() <= max_chars + 1 {
        return all.join(" ");
    }
    let keep = select_within(&all, all.len(), max_chars);
    all.iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(s, _)| *s)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a sentence asks rather than tells: a question the user asked, restated, remembers nothing
/// about them. (SmolLM2-135M's summaries of a question turn are often the question itself.)
fn is_question(sentence: &str) -> bool {
    sentence.trim_end().ends_with('?')
}

/// Words that open a request ("Give me one tip…", "Tell me about…").
const IMPERATIVES: &[&str] = &[
    "give",
    "tell",
    "show",
    "help",
    "explain",
    "write",
    "list",
    "describe",
    "recommend",
    "suggest",
    "find",
    "make",
    "let",
    "lets",
    "remind",
    "send",
    "translate",
    "summarize",
    "summarise",
    "compare",
    "create",
    "generate",
    "draft",
    "teach",
    "check",
    "calculate",
    "define",
    "continue",
    "repeat",
    "fix",
    "say",
    "answer",
    "imagine",
    "pretend",
];
/// Words that open a question even without its question mark.
const ASKING: &[&str] = &[
    "what", "whats", "how", "why", "where", "when", "who", "whom", "which", "whose", "can",
    "could", "would", "will", "do", "does", "did", "are", "is", "am", "was", "were", "may",
    "might", "shall", "should", "must", "have", "has", "any",
];
/// Words before the first that do not change what a sentence is ("Ok, so give me…").
const OPENERS: &[&str] = &[
    "ok", "okay", "so", "and", "then", "hi", "hey", "hello", "well", "oh", "but", "also", "now",
    "thanks", "thank", "user", "please",
];

/// Whether the user's `sentence` asks for something rather than telling about them: it opens (after
/// "ok", "so", "hi", "User:" …) with an imperative ("Give me one tip…", "Tell me about…"), a question
/// word or an auxiliary ("Can you…", "What is…", even without "?"), or says "I want / need / would
/// like you to…". Requests restated as facts ("User: Give me one tip for sleeping better.") told
/// nothing about the user.
pub fn is_request(sentence: &str) -> bool {
    if is_question(sentence) {
        return true;
    }
    let w = super::normalize::words(sentence);
    let w: Vec<&str> = w
        .iter()
        .map(String::as_str)
        .skip_while(|w| OPENERS.contains(w))
        .collect();
    let Some(first) = w.first() else {
        return false;
    };
    if IMPERATIVES.contains(first) || ASKING.contains(first) {
        return true;
    }
    // "I want you to…", "I'd like you to…", "I would like you to…", "I need you to…".
    w.first() == Some(&"i") && w.iter().take(5).any(|x| *x == "you")
}

/// Which of `all` (the carried sentences, then from `first_new` the model's new ones) stay within
/// `max_chars`. Statements come before questions ([`is_question`]), whatever their age. The new
/// statements come first, in order, up to half the cap (a model that loops
/// cannot push every earlier fact out). Then the most distinct facts outlive the rest: sentences are
/// kept one at a time, each time the one that adds the most terms not yet kept for its length (new
/// names per word first, then new words per word, a number counting half; newer first among equals). A small model that loops writes the same
/// sentence with new numbers again and again: after the first, the others add little, and an early
/// fact with its own name still gets in.
fn select_within(all: &[&str], first_new: usize, max_chars: usize) -> Vec<bool> {
    let terms: Vec<(Vec<String>, Vec<String>)> = all.iter().map(|s| key_terms(s)).collect();
    let mut keep = vec![false; all.len()];
    let mut known: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut room = max_chars;
    let take = |i: usize,
                room: &mut usize,
                keep: &mut Vec<bool>,
                known: &mut std::collections::HashSet<String>| {
        *room -= all[i].len() + 1;
        keep[i] = true;
        known.extend(terms[i].0.iter().cloned());
        known.extend(terms[i].1.iter().cloned());
    };
    let mut new_room = max_chars / 2;
    for (i, s) in all.iter().enumerate().skip(first_new) {
        if is_question(s) {
            continue;
        }
        if s.len() + 1 > new_room {
            break;
        }
        new_room -= s.len() + 1;
        take(i, &mut room, &mut keep, &mut known);
    }
    loop {
        let gain = |i: usize| {
            let (names, words) = &terms[i];
            let is_number = |w: &str| w.chars().all(|c| c.is_ascii_digit());
            // (new names, new words, new numbers), each counted once.
            let mut new: [Vec<&str>; 3] = Default::default();
            for w in names.iter().chain(words) {
                let w = w.as_str();
                let tier = if is_number(w) {
                    2
                } else if names.iter().any(|n| n == w) {
                    0
                } else {
                    1
                };
                if !known.contains(w) && !new[tier].contains(&w) {
                    new[tier].push(w);
                }
            }
            // Per word of the sentence (a short fact beats a long ramble that mentions as much):
            // new names first, then new words (a number counts half a word).
            let per_word = |n: usize| n * 1000 / (all[i].split_whitespace().count() + 2);
            (
                !is_question(all[i]),
                per_word(new[0].len()),
                per_word(2 * new[1].len() + new[2].len()),
            )
        };
        // `max_by_key` takes the last of equals: the newest.
        let best = (0..all.len())
            .filter(|&i| !keep[i] && all[i].len() < room)
            .max_by_key(|&i| gain(i));
        let Some(i) = best else { break };
        take(i, &mut room, &mut keep, &mut known);
    }
    keep
}
