//! Recall of past conversations: when the new message refers to something said before ("last
//! time", "do you remember", "I told you", "we talked about"), which of its words to look up in the
//! search index, and which of the messages found in other conversations the prompt carries, each
//! quoted with its conversation's title and the day it was said. The session reads the index
//! (`store::search`) and the assembly places the passages within [`RECALL_SHARE_PERCENT`] of the
//! budget (`engine::assemble`). The same switches as the facts about the user turn it off.
//!
//! Why a cue and not every message: a search per send would cost every turn a read of the index,
//! and a prompt that quotes old conversations the user did not ask about misleads more than it
//! helps. The cues are English ones here and those of the other languages' tables
//! (`super::lang`: "erinnerst du dich", "la dernière fois", "¿recuerdas?"), whose pronouns, articles
//! and cue words are never looked up either.
//!
//! Ranking: a passage must hold at least two of the looked-up words (one when only one was looked
//! up); words held by fewer of the messages found weigh more (an inverse document frequency over what
//! the search returned); then the user's own words before the agent's, newer before older. At most
//! [`MAX_PASSAGES`], at most [`PER_CONVERSATION`] from one conversation.
//!
//! Must not import anything outside `crate::engine`; reads only `normalize` and `lang`.

use crate::engine::format::{date, one_line};
use crate::engine::memory::lang;
use crate::engine::memory::normalize::{for_each_word, truncate_chars};
use crate::engine::model::{Message, MessageStatus, Millis, Role};
use crate::engine::search::{index_terms, matches, MAX_TERM_CHARS};
use std::collections::{HashMap, HashSet};

/// The share of the prompt budget passages may take, in percent.
pub const RECALL_SHARE_PERCENT: u32 = 10;
/// Most passages a prompt carries.
pub const MAX_PASSAGES: usize = 3;
/// Most passages from one conversation.
pub const PER_CONVERSATION: usize = 2;
/// Longest passage, in characters (a longer message is cut around its first matched word).
pub const PASSAGE_CHARS: usize = 320;
/// Most words looked up per message (one index range read each).
pub const MAX_LOOKUPS: usize = 4;
/// The section's heading inside the system text.
pub const RECALL_HEADING: &str = "## From the user's other conversations (quoted as said then; the recent messages may refer to them)";

/// Single words that say the user refers to something said before.
const CUE_WORDS: &[&str] = &[
    "remember",
    "remembered",
    "recall",
    "remind",
    "earlier",
    "previously",
    "mentioned",
    "told",
    "discussed",
    "talked",
    "spoke",
];

/// Pairs of words that say it.
const CUE_PAIRS: &[(&str, &str)] = &[
    ("last", "time"),
    ("other", "day"),
    ("other", "conversation"),
    ("other", "chat"),
    ("another", "conversation"),
    ("another", "chat"),
    ("past", "conversation"),
    ("you", "said"),
    ("i", "said"),
    ("we", "said"),
];

/// Words that are never looked up: they say nothing of what was said.
const STOP: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "from",
    "that",
    "this",
    "these",
    "those",
    "there",
    "their",
    "what",
    "where",
    "when",
    "which",
    "who",
    "whom",
    "whose",
    "why",
    "how",
    "did",
    "does",
    "doing",
    "done",
    "you",
    "your",
    "yours",
    "our",
    "ours",
    "was",
    "were",
    "are",
    "is",
    "been",
    "being",
    "have",
    "has",
    "had",
    "can",
    "could",
    "would",
    "should",
    "will",
    "shall",
    "may",
    "might",
    "must",
    "about",
    "again",
    "tell",
    "know",
    "think",
    "said",
    "say",
    "says",
    "something",
    "anything",
    "thing",
    "things",
    "some",
    "any",
    "all",
    "not",
    "but",
    "just",
    "also",
    "then",
    "than",
    "them",
    "they",
    "she",
    "her",
    "his",
    "him",
    "its",
    "it's",
    "into",
    "onto",
    "over",
    "under",
    "out",
    "our",
    "one",
    "ones",
    "very",
    "much",
    "more",
    "most",
    "time",
    "times",
    "day",
    "days",
    "week",
    "conversation",
    "conversations",
    "chat",
    "chats",
    "other",
    "another",
    "last",
    "past",
    "please",
    "thanks",
    "thank",
    "okay",
    "yes",
    "get",
    "got",
    "let",
    "lets",
    "let's",
    "like",
    "want",
    "need",
    "make",
    "made",
    "give",
    "gave",
    "way",
    "still",
    "now",
    "back",
];

/// True when `text` refers to something said before (a cue word or pair, see the module doc).
pub fn refers_back(text: &str) -> bool {
    let mut prev = String::new();
    let mut found = false;
    for_each_word(text, |w| {
        if found {
            return;
        }
        found = CUE_WORDS.contains(&w) || CUE_PAIRS.iter().any(|&(a, b)| prev == a && w == b);
        prev.clear();
        prev.push_str(w);
    });
    found || lang::refers_back(text)
}

/// The words of `text` to look up, most selective first (the longest; ties in the order written):
/// at most [`MAX_LOOKUPS`], none a cue or a stop word, three characters or more (or a number).
pub fn lookup_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for_each_word(text, |w| {
        let w = truncate_chars(w, MAX_TERM_CHARS);
        let long = w.chars().count() >= 3 || w.chars().all(|c| c.is_ascii_digit());
        let cue = CUE_WORDS.contains(&w) || lang::is_stop(w);
        if long && !cue && !STOP.contains(&w) && !words.iter().any(|x| x == w) {
            words.push(w.to_string());
        }
    });
    // Stable: among equals, the order written.
    words.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
    words.truncate(MAX_LOOKUPS);
    words
}

/// A message the search found, with its conversation's title.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub message: Message,
    pub title: String,
    /// Memory about the user is off in its conversation: never a source.
    pub private: bool,
}

/// A passage a prompt carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    pub conversation_id: String,
    pub message_id: String,
    pub title: String,
    pub role: Role,
    pub said_at: Millis,
    /// The message on one line, cut to [`PASSAGE_CHARS`] around its first matched word.
    pub text: String,
}

/// The passages for a prompt of conversation `here`, from the messages `found` by looking up
/// `words` (in any order, duplicates allowed), best first, at most [`MAX_PASSAGES`] (see the
/// module doc). Nothing of `here` or of a private conversation, and no deleted, failed or empty
/// message.
pub fn rank(found: Vec<Found>, words: &[String], here: &str) -> Vec<Passage> {
    let mut seen = HashSet::new();
    let usable: Vec<(Found, Vec<usize>)> = found
        .into_iter()
        .filter(|f| {
            let m = &f.message;
            m.conversation_id != here
                && !f.private
                && !m.meta.deleted
                && !m.meta.hidden
                && m.status != MessageStatus::Error
                && !m.content.trim().is_empty()
                && seen.insert(m.id.clone())
        })
        .map(|f| {
            let terms = index_terms(&f.message.content);
            let held = (0..words.len())
                .filter(|&i| matches(&terms, std::slice::from_ref(&words[i])))
                .collect();
            (f, held)
        })
        .collect();
    let need = words.len().min(2);
    let weight = weights(&usable, words.len());
    let mut scored: Vec<(f64, &Found, &[usize])> = usable
        .iter()
        .filter(|(_, held)| need > 0 && held.len() >= need)
        .map(|(f, held)| (held.iter().map(|&i| weight[i]).sum(), f, held.as_slice()))
        .collect();
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then((b.1.message.role == Role::User).cmp(&(a.1.message.role == Role::User)))
            .then(b.1.message.created_at.cmp(&a.1.message.created_at))
            .then(a.1.message.id.cmp(&b.1.message.id))
    });
    let mut per: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::new();
    for (_, f, held) in scored {
        let n = per.entry(f.message.conversation_id.as_str()).or_default();
        if *n >= PER_CONVERSATION {
            continue;
        }
        *n += 1;
        out.push(passage(f, &words[held[0]]));
        if out.len() == MAX_PASSAGES {
            break;
        }
    }
    out
}

/// Each word's weight: rarer among the messages found, heavier (`ln(1 + n / held_by)`).
fn weights(usable: &[(Found, Vec<usize>)], words: usize) -> Vec<f64> {
    let n = usable.len().max(1) as f64;
    (0..words)
        .map(|i| {
            let held_by = usable.iter().filter(|(_, h)| h.contains(&i)).count().max(1);
            (1.0 + n / held_by as f64).ln()
        })
        .collect()
}

/// The passage of `f`: its text on one line, cut around the first word starting with `word`.
fn passage(f: &Found, word: &str) -> Passage {
    let m = &f.message;
    Passage {
        conversation_id: m.conversation_id.clone(),
        message_id: m.id.clone(),
        title: f.title.clone(),
        role: m.role,
        said_at: m.created_at,
        text: around(&one_line(&m.content), word, PASSAGE_CHARS),
    }
}

/// At most `max` characters of `text`, from a little before the first word starting with `word`
/// (case-insensitively), with `…` where cut.
fn around(text: &str, word: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return text.to_string();
    }
    let at = first_word_at(&chars, word).unwrap_or(0);
    let start = at.saturating_sub(max / 3).min(chars.len() - max);
    let body: String = chars[start..start + max].iter().collect();
    let head = if start > 0 { "…" } else { "" };
    let tail = if start + max < chars.len() { "…" } else { "" };
    format!("{head}{}{tail}", body.trim())
}

/// Where the first word of `chars` that starts with `word` (lowercase) begins.
fn first_word_at(chars: &[char], word: &str) -> Option<usize> {
    let target: Vec<char> = word.chars().collect();
    (0..chars.len()).find(|&i| {
        (i == 0 || !chars[i - 1].is_alphanumeric())
            && chars.len() - i >= target.len()
            && chars[i..]
                .iter()
                .zip(&target)
                .all(|(c, t)| c.to_lowercase().eq(std::iter::once(*t)))
    })
}

/// The section's line for passage `p`: who said it, where and when, then the quote.
pub fn passage_line(p: &Passage) -> String {
    let who = match p.role {
        Role::User => "The user",
        _ => "The assistant",
    };
    let title = if p.title.trim().is_empty() {
        "an untitled conversation".to_string()
    } else {
        format!("“{}”", one_line(&p.title))
    };
    format!("- {who}, in {title} on {}: \"{}\"", date(p.said_at), p.text)
}

/// What the inspector says of the passages carried: their conversations and days.
pub fn passages_detail(passages: &[Passage]) -> String {
    passages
        .iter()
        .map(|p| {
            let title = if p.title.trim().is_empty() {
                "untitled"
            } else {
                p.title.as_str()
            };
            format!("“{}”, {}", one_line(title), date(p.said_at))
        })
        .collect::<Vec<_>>()
        .join("; ")
}
