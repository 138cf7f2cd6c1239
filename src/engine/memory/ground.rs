//! Grounding a parsed update in what the model read: what the reply claims is kept only when the
//! request supports it. Rules:
//! - **Aliases** ([`ground_aliases`]): an alias whose words appear nowhere in the update's request
//!   (the previous summary, the known entities and the new messages) was invented, and is dropped with
//!   a note. (In the recall bench SmolLM2-135M gave "Ingrid Valcourt" the aliases "Einar", "Sjøbenkarl"
//!   and "Naradaglade"; every invented alias takes room in each later prompt and can match another
//!   entity.)
//! - **Names** ([`ground_names`]): the same rule for an entity's name; an entity whose name the
//!   conversation never used ("bien sûr e.g.E1A21417FE…") is dropped whole.
//! - **Facts** ([`ground_facts`]): a description sentence, property or relationship is kept only when a
//!   message the update read says it near the entity: within [`NEAR_WORDS`] words of the entity's
//!   name or alias in one sentence, or anywhere in the user's own messages when the entity is the user
//!   (named so: "I am Marta", "my name is Marta", or "User"). Most of the fact's words (at least
//!   half, crude stems, the entity's own names left out) must be there. So Sofia does not get Marta's
//!   "I live in Lisbon and I work as a nurse". The entity's sources become the messages that name it
//!   or state a kept fact, not the whole span.
//! - **Summary sentences** ([`drop_unsupported`]): a sentence of the model's summary of three terms
//!   or more (crude stems, three letters or more, [`STOP`] and the words every summary uses left
//!   out) is kept only when what the update read (the previous summary and the new messages) holds
//!   one of them. SmolLM2-135M wrote a Portuguese sentence after English messages: memory of what
//!   nobody said. The rule stays loose on purpose: a larger model's summary is abstractive ("The
//!   user greeted the assistant in French" after "Bonjour !").
//! - **Ids** ([`drop_id_sentences`]): a summary sentence that holds an entity id (a known one, or a
//!   token that looks like one: 16 letters and digits or more, four of each) is the entity list
//!   repeated, not memory (SmolLM2-135M wrote "Reuse these ids: e1a21524ca22… | person | Marta | …",
//!   600 characters that pushed the user's facts out of the summary).
//! - **Instruction echo** ([`drop_instruction_echo`]): a summary sentence that is mostly the words of
//!   one of the engine's own instruction sentences (`super::prompt::instruction_sentences`) is the
//!   prompt repeated, not memory.
//!
//! Below superseding, summaries and reading a reply (`super::supersede`, `super::summary`,
//! `super::read`, which use it): it imports none of them; what the request showed
//! ([`ReadMessage`], [`KnownNames`]) comes from `super::prompt` and is re-exported here.
//! Must not import anything outside `crate::engine`.

use std::collections::HashSet;

use super::normalize::{for_each_word, words};
use super::parse::{ParsedEntity, ParsedUpdate};
use super::sentence::{note_of, sentences};
use crate::engine::model::Role;

pub use super::prompt::{KnownNames, ReadMessage};

/// How far (in words, within one sentence) a fact may be from the entity's name and still be said
/// about it.
pub const NEAR_WORDS: usize = 5;

/// The words of `source`, with the first letters of all of them (a one-letter word is an initial).
struct Vocabulary {
    known: HashSet<String>,
    initials: HashSet<char>,
}

impl Vocabulary {
    fn of(source: &str) -> Vocabulary {
        let mut known: HashSet<String> = HashSet::new();
        let mut initials: HashSet<char> = HashSet::new();
        for_each_word(source, |w| {
            initials.extend(w.chars().next());
            known.insert(w.to_string());
        });
        Vocabulary { known, initials }
    }

    /// Whether every word of `name` is in the source (a one-letter word: an initial of any word).
    fn grounds(&self, name: &str) -> bool {
        words(name).iter().all(|w| {
            let mut chars = w.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => self.initials.contains(&c),
                _ => self.known.contains(w),
            }
        })
    }
}

/// Drops from `parsed` every alias with a word that `source` does not contain (case-insensitive,
/// whole words; a one-letter word is an initial of any word), noting each one.
pub fn ground_aliases(parsed: &mut ParsedUpdate, source: &str) {
    let vocabulary = Vocabulary::of(source);
    let mut notes = Vec::new();
    for e in &mut parsed.entities {
        e.aliases.retain(|a| {
            let grounded = vocabulary.grounds(a);
            if !grounded {
                notes.push(format!(
                    "{}: alias '{a}' appears nowhere in the conversation, dropped",
                    e.name
                ));
            }
            grounded
        });
    }
    parsed.notes.extend(notes);
}

/// Drops from `parsed` every entity whose name has a word that `source` does not contain (the rule of
/// [`ground_aliases`]), noting each one.
pub fn ground_names(parsed: &mut ParsedUpdate, source: &str) {
    let vocabulary = Vocabulary::of(source);
    let mut notes = Vec::new();
    parsed.entities.retain(|e| {
        let grounded = vocabulary.grounds(&e.name);
        if !grounded {
            notes.push(format!(
                "entity '{}': its name appears nowhere in the conversation, dropped",
                e.name
            ));
        }
        grounded
    });
    parsed.notes.extend(notes);
}

/// Words that say nothing on their own: never a fact's evidence.
const STOP: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "from",
    "that",
    "this",
    "who",
    "whom",
    "has",
    "have",
    "had",
    "was",
    "were",
    "are",
    "his",
    "her",
    "hers",
    "she",
    "him",
    "they",
    "their",
    "them",
    "its",
    "not",
    "but",
    "also",
    "very",
    "you",
    "your",
    "our",
    "hi",
    "hey",
    "hello",
    "am",
    "is",
    "be",
    "been",
    "an",
    "a",
    "of",
    "to",
    "in",
    "on",
    "at",
    "as",
    "by",
    "it",
    "i",
    "me",
    "my",
    "mine",
    "we",
    "us",
    "he",
    "or",
    "so",
    "do",
    "does",
    "did",
    "there",
    "here",
    "what",
    "which",
    "when",
    "where",
    "now",
    "then",
    "just",
    "really",
    "named",
    "called",
    "name",
    "user",
    "assistant",
];

/// A crude stem, so "lives" meets "live" and "nurses" meets "nurse".
pub(crate) fn stem(w: &str) -> &str {
    ["ing", "ed", "es", "s"]
        .iter()
        .find_map(|suffix| w.strip_suffix(suffix).filter(|s| s.chars().count() >= 3))
        .unwrap_or(w)
}

/// The stems of `text`'s words that can be evidence: two letters or more (or a digit), not in [`STOP`].
fn evidence(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| {
        let digit = w.chars().any(|c| c.is_ascii_digit());
        if (digit || w.chars().count() >= 2) && !STOP.contains(&w) {
            out.push(stem(w).to_string());
        }
    });
    out
}

/// Whether the entity named by `names` (name first) is the user: named "user", "me" or "I", or
/// introduced in a user message ("I am X", "I'm X", "my name is X", "call me X").
fn is_the_user(names: &[String], read: &[ReadMessage]) -> bool {
    let firsts: Vec<String> = names
        .iter()
        .filter_map(|n| words(n).into_iter().next())
        .collect();
    if names.iter().any(|n| {
        matches!(
            words(n).join(" ").as_str(),
            "user" | "the user" | "me" | "i"
        )
    }) {
        return true;
    }
    read.iter().filter(|m| m.role == Role::User).any(|m| {
        let w = words(&m.content);
        (0..w.len()).any(|i| {
            let next = |k: usize| w.get(i + k).map(String::as_str);
            let after = match (w[i].as_str(), next(1), next(2)) {
                ("i", Some("am"), _) | ("i", Some("m"), _) | ("call", Some("me"), _) => next(2),
                ("name", Some("is"), _) if i > 0 && w[i - 1] == "my" => next(2),
                _ => None,
            };
            after.is_some_and(|a| firsts.iter().any(|f| f == a))
        })
    })
}

/// What one message says near one entity: the evidence stems (see [`evidence`]).
struct Near {
    message: usize,
    stems: HashSet<String>,
}

/// The evidence near the entity with `keys` (the lowercase words of its names, [`STOP`] words left
/// out) in each message of `read`; every sentence of the user's messages when `user`.
fn near(keys: &HashSet<String>, user: bool, read: &[ReadMessage]) -> Vec<Near> {
    let mut out = Vec::new();
    for (i, m) in read.iter().enumerate() {
        let mut stems = HashSet::new();
        for s in sentences(&m.content) {
            let w = words(s);
            if user && m.role == Role::User {
                stems.extend(evidence(s));
                continue;
            }
            for (at, word) in w.iter().enumerate() {
                if keys.contains(word) {
                    let from = at.saturating_sub(NEAR_WORDS);
                    let to = (at + NEAR_WORDS + 1).min(w.len());
                    stems.extend(evidence(&w[from..to].join(" ")));
                }
            }
        }
        if !stems.is_empty() {
            out.push(Near { message: i, stems });
        }
    }
    out
}

/// Whether `claim` is said in `near` (see the module rules): the messages that say any of its
/// evidence when at least half of it is said, else `None`. A claim with no evidence words (nothing
/// to check) is supported by nothing in particular.
fn support(claim: &str, own: &HashSet<String>, near: &[Near]) -> Option<Vec<usize>> {
    let stems: Vec<String> = evidence(claim)
        .into_iter()
        .filter(|s| !own.contains(s))
        .collect();
    if stems.is_empty() {
        return Some(Vec::new());
    }
    let found = stems
        .iter()
        .filter(|s| near.iter().any(|n| n.stems.contains(*s)))
        .count();
    (found * 2 >= stems.len()).then(|| {
        near.iter()
            .filter(|n| stems.iter().any(|s| n.stems.contains(s)))
            .map(|n| n.message)
            .collect()
    })
}

/// Keeps of each entity's description sentences, properties and relationships only those that a
/// message of `read` says near the entity (the module rules), noting each one dropped, and sets its
/// sources to the messages that name it or state a kept fact. Relationship targets are looked up in
/// this update's entities and in `known`.
pub fn ground_facts(parsed: &mut ParsedUpdate, read: &[ReadMessage], known: &[KnownNames]) {
    let targets = relationship_targets(&parsed.entities, known);
    let mut notes = Vec::new();
    for e in &mut parsed.entities {
        ground_entity(e, read, &targets, &mut notes);
    }
    parsed.notes.extend(notes);
}

/// Every name (name and aliases) of each target the relationships can use: the `known` entities by
/// id, this update's `entities` by id and by name.
fn relationship_targets(
    entities: &[ParsedEntity],
    known: &[KnownNames],
) -> Vec<(String, Vec<String>)> {
    let mut targets: Vec<(String, Vec<String>)> = known
        .iter()
        .map(|k| (k.id.clone(), k.names.clone()))
        .collect();
    for e in entities {
        let names: Vec<String> = std::iter::once(&e.name)
            .chain(&e.aliases)
            .cloned()
            .collect();
        if let Some(id) = &e.id {
            targets.push((id.clone(), names.clone()));
        }
        targets.push((e.name.clone(), names));
    }
    targets
}

/// The names of `e` (name, then aliases) and their words that are not stop words.
fn names_and_keys(e: &ParsedEntity) -> (Vec<String>, HashSet<String>) {
    let names: Vec<String> = std::iter::once(&e.name)
        .chain(&e.aliases)
        .cloned()
        .collect();
    let keys: HashSet<String> = names
        .iter()
        .flat_map(|n| words(n))
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect();
    (names, keys)
}

/// [`ground_facts`] for one entity `e`: its unsupported facts dropped (each with a note in
/// `notes`), its sources and `said_at` set.
fn ground_entity(
    e: &mut ParsedEntity,
    read: &[ReadMessage],
    targets: &[(String, Vec<String>)],
    notes: &mut Vec<String>,
) {
    let (names, keys) = names_and_keys(e);
    let own: HashSet<String> = keys.iter().map(|k| stem(k).to_string()).collect();
    let user = is_the_user(&names, read);
    let near = near(&keys, user, read);
    let mut cited: Vec<usize> = read
        .iter()
        .enumerate()
        .filter(|(_, m)| words(&m.content).iter().any(|w| keys.contains(w)))
        .map(|(i, _)| i)
        .collect();
    let mut keep =
        |claim: &str, what: &str, notes: &mut Vec<String>| match support(claim, &own, &near) {
            Some(by) => {
                cited.extend(by);
                true
            }
            None => {
                notes.push(format!(
                    "{}: {what} '{claim}' is not said of it in the messages, dropped",
                    e.name
                ));
                false
            }
        };
    let description: Vec<&str> = sentences(&e.description)
        .into_iter()
        .filter(|s| keep(s, "description", notes))
        .collect();
    let description = description.join(" ");
    let mut properties = std::mem::take(&mut e.properties);
    properties.retain(|k, v| {
        let claim = if evidence(v).iter().any(|s| !own.contains(s)) {
            v.clone()
        } else {
            k.clone()
        };
        keep(&claim, "property", notes)
    });
    let mut extra = Vec::new();
    let mut relationships = std::mem::take(&mut e.relationships);
    relationships.retain(|r| {
        let target_names: Vec<String> = targets
            .iter()
            .find(|(id, _)| *id == r.target)
            .map_or_else(|| vec![r.target.clone()], |(_, n)| n.clone());
        // "My daughter Sofia": a user's sentence that names the entity speaks of the user.
        let of_user = near.iter().find(|n| read[n.message].role == Role::User);
        if let Some(n) = of_user.filter(|_| is_the_user(&target_names, read)) {
            extra.push(n.message);
            return true;
        }
        // The label is the model's wording ("lives_in"); the target's names are the evidence.
        keep(&target_names.join(" "), "relationship", notes)
    });
    cited.extend(extra);
    e.description = description;
    e.properties = properties;
    e.relationships = relationships;
    cited.sort_unstable();
    cited.dedup();
    e.said_at = cited.iter().map(|&i| read[i].created_at).max();
    e.sources = cited.into_iter().map(|i| read[i].id.clone()).collect();
}

/// The words of a sentence that decide whether it echoes an instruction: [`evidence`] stems of
/// three letters or more.
fn echo_terms(sentence: &str) -> HashSet<String> {
    evidence(sentence)
        .into_iter()
        .filter(|w| w.chars().count() >= 3)
        .collect()
}

/// `summary` without the sentences that repeat one of `instructions` (the engine's own instruction
/// sentences): four or more words, at least 70% of them in one instruction sentence. Returns the
/// text and how many sentences were dropped.
pub fn drop_instruction_echo(summary: &str, instructions: &[String]) -> (String, usize) {
    let pieces: Vec<HashSet<String>> = instructions.iter().map(|i| echo_terms(i)).collect();
    let mut dropped = 0;
    let kept: Vec<&str> = sentences(summary)
        .into_iter()
        .filter(|s| {
            let terms = echo_terms(s);
            let echo = terms.len() >= 4
                && pieces.iter().any(|p| {
                    let shared = terms.iter().filter(|t| p.contains(*t)).count();
                    shared * 10 >= terms.len() * 7
                });
            dropped += usize::from(echo);
            !echo
        })
        .collect();
    (kept.join(" "), dropped)
}

/// Words any summary uses of its conversation, which say nothing of what was read.
const SUMMARY_WORDS: &[&str] = &[
    "user",
    "assistant",
    "mention",
    "said",
    "say",
    "told",
    "tell",
    "talk",
    "ask",
    "conversation",
    "message",
    "also",
    "about",
    "they",
    "their",
    "she",
    "he",
];

/// The words of `text` that can support a summary sentence: [`evidence`] stems of three letters or
/// more, not [`SUMMARY_WORDS`].
pub(crate) fn support_terms(text: &str) -> HashSet<String> {
    evidence(text)
        .into_iter()
        .filter(|w| w.chars().count() >= 3 && !SUMMARY_WORDS.contains(&w.as_str()))
        .collect()
}

/// `summary` without the sentences that `source` (what the update read) does not support: three
/// terms or more, none of them in it (the module rules). A shorter sentence ("Hi!", "The user
/// greeted the assistant in French") is kept. Returns the text and how many sentences were dropped.
pub fn drop_unsupported(summary: &str, source: &str) -> (String, usize) {
    let known = support_terms(source);
    let mut dropped = 0;
    let kept: Vec<&str> = sentences(summary)
        .into_iter()
        .filter(|s| {
            let terms = support_terms(note_of(s).0);
            let found = terms.iter().filter(|t| known.contains(*t)).count();
            let unsupported = found == 0 && terms.len() >= 3;
            dropped += usize::from(unsupported);
            !unsupported
        })
        .collect();
    (kept.join(" "), dropped)
}

/// Whether `word` looks like an id: 16 letters and digits or more, at least four of each.
fn looks_like_id(word: &str) -> bool {
    let digits = word.chars().filter(char::is_ascii_digit).count();
    let letters = word.chars().filter(char::is_ascii_alphabetic).count();
    word.chars().all(|c| c.is_ascii_alphanumeric())
        && word.len() >= 16
        && digits >= 4
        && letters >= 4
}

/// `summary` without the sentences that hold one of `known_ids` (six characters or more) or a token
/// that [`looks_like_id`] (the module rules). Returns the text and how many sentences were dropped.
pub fn drop_id_sentences(summary: &str, known_ids: &[&str]) -> (String, usize) {
    let mut dropped = 0;
    let kept: Vec<&str> = sentences(summary)
        .into_iter()
        .filter(|s| {
            let id = s
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_')
                .any(|w| looks_like_id(w) || (w.len() >= 6 && known_ids.contains(&w)));
            dropped += usize::from(id);
            !id
        })
        .collect();
    (kept.join(" "), dropped)
}
