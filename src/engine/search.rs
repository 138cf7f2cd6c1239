//! Search over titles and message text: which terms a text is indexed under, how a query becomes
//! words, which index range one query word reads, and whether an indexed text matches. The store keeps
//! the terms on each record under an IndexedDB `multiEntry` index (an inverted index the browser
//! maintains on every write), so a search reads the records of one word's range instead of scanning.
//! Must not import anything outside `crate::engine`.
//!
//! The rule: words are [`crate::engine::memory::normalize::for_each_word`]'s (lowercase, Unicode,
//! one CJK character per word); a text matches a query when every query word is the beginning of one
//! of its terms (so "par" finds "Paris" while it is being typed, and word order does not matter).

use crate::engine::memory::normalize::for_each_word;

/// Longest term kept, in chars: a longer word is indexed by its beginning (a query word longer than
/// this is cut the same way, so it still finds it).
pub const MAX_TERM_CHARS: usize = 32;
/// Most terms one text is indexed under (a huge message keeps its first distinct words).
pub const MAX_TERMS: usize = 1024;
/// The last character of a prefix range (`[word, word + END)` holds every term starting with `word`).
pub const PREFIX_END: char = '\u{ffff}';

fn cut(w: &str) -> &str {
    crate::engine::memory::normalize::truncate_chars(w, MAX_TERM_CHARS)
}

/// The distinct terms `text` is indexed under, sorted, at most [`MAX_TERMS`].
pub fn index_terms(text: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for_each_word(text, |w| {
        if out.len() < MAX_TERMS && seen.insert(cut(w).to_string()) {
            out.push(cut(w).to_string());
        }
    });
    out.sort_unstable();
    out
}

/// The words of a query, distinct, in the order typed.
pub fn query_words(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for_each_word(query, |w| {
        let w = cut(w).to_string();
        if !out.contains(&w) {
            out.push(w);
        }
    });
    out
}

/// The word whose index range is read: the longest (the most selective by a wide margin in real
/// text; ties go to the first typed).
pub fn key_word(words: &[String]) -> Option<&str> {
    words
        .iter()
        .enumerate()
        .max_by(|(i, a), (j, b)| a.chars().count().cmp(&b.chars().count()).then(j.cmp(i)))
        .map(|(_, w)| w.as_str())
}

/// The index range of terms that start with `word`: `(lower, upper)`, both inclusive.
pub fn prefix_range(word: &str) -> (String, String) {
    let mut upper = word.to_string();
    upper.push(PREFIX_END);
    (word.to_string(), upper)
}

/// True when every query word begins one of `terms` (sorted, as [`index_terms`] gives them).
pub fn matches(terms: &[String], words: &[String]) -> bool {
    !words.is_empty()
        && words.iter().all(|w| {
            let at = terms.partition_point(|t| t.as_str() < w.as_str());
            terms.get(at).is_some_and(|t| t.starts_with(w.as_str()))
        })
}
