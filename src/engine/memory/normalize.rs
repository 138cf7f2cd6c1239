//! Text normalisation shared by merging and retrieval: the "same name" key of an entity, relationship
//! label keys, word tokenisation (Unicode-aware, CJK one character per word) and char-safe truncation.
//! Must not import anything outside `crate::engine` (it imports nothing at all).
//!
//! Written by hand rather than with a crate (unicode-segmentation would do word splitting) because the
//! rule we need is small, must be identical on both sides (names and message text), and the crate is
//! not among the dependencies.

/// Characters that belong to a word: letters, digits, and `+`/`#` (so "C", "C++" and "C#" differ).
#[inline]
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '+' || c == '#'
}

/// Scripts written without spaces between words: each character is its own word, so a name such as
/// "東京" matches inside "東京に行きました".
#[inline]
fn is_unspaced_script(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK Extension A
        | 0x4E00..=0x9FFF // CJK Unified Ideographs
        | 0xF900..=0xFAFF // CJK Compatibility Ideographs
        | 0xFF66..=0xFF9F // Half-width Katakana
        | 0x20000..=0x2FA1F // CJK Extensions B.. and compatibility supplement
        | 0x0E00..=0x0E7F // Thai
        | 0x0E80..=0x0EFF // Lao
        | 0x1000..=0x109F // Myanmar
        | 0x1780..=0x17FF // Khmer
    )
}

/// Calls `f` with each lowercase word of `text`, in order. `buf` is reused between calls.
pub fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    for c in text.chars() {
        if c.is_ascii() {
            // Fast path for the common case.
            if c.is_ascii_alphanumeric() || c == '+' || c == '#' {
                word.push(c.to_ascii_lowercase());
            } else if !word.is_empty() {
                f(&word);
                word.clear();
            }
        } else if is_unspaced_script(c) {
            if !word.is_empty() {
                f(&word);
                word.clear();
            }
            word.push(c);
            f(&word);
            word.clear();
        } else if is_word_char(c) {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            f(&word);
            word.clear();
        }
    }
    if !word.is_empty() {
        f(&word);
    }
}

/// Appends the lowercase words of `text` to `buf` and their byte ranges in `buf` to `spans` (the same
/// words as [`for_each_word`]; a byte-level fast path for ASCII, used to scan many messages).
pub fn push_words(text: &str, buf: &mut String, spans: &mut Vec<(usize, usize)>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut start: Option<usize> = None;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            if b.is_ascii_alphanumeric() || b == b'+' || b == b'#' {
                start.get_or_insert(buf.len());
                buf.push(char::from(b.to_ascii_lowercase()));
            } else if let Some(s) = start.take() {
                spans.push((s, buf.len()));
            }
            i += 1;
            continue;
        }
        // `i` always sits on a char boundary: it only advances by whole characters.
        let c = text[i..]
            .chars()
            .next()
            .unwrap_or(char::REPLACEMENT_CHARACTER);
        i += c.len_utf8();
        if is_unspaced_script(c) {
            if let Some(s) = start.take() {
                spans.push((s, buf.len()));
            }
            let s = buf.len();
            buf.push(c);
            spans.push((s, buf.len()));
        } else if is_word_char(c) {
            start.get_or_insert(buf.len());
            buf.extend(c.to_lowercase());
        } else if let Some(s) = start.take() {
            spans.push((s, buf.len()));
        }
    }
    if let Some(s) = start {
        spans.push((s, buf.len()));
    }
}

/// The lowercase words of `text`.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_string()));
    out
}

/// Lowercase words of `text` joined by `sep`, built in one pass and one allocation (the same words
/// [`for_each_word`] yields).
fn join_words(text: &str, sep: char) -> String {
    let mut key = String::with_capacity(text.len());
    let mut in_word = false;
    for c in text.chars() {
        if c.is_ascii() {
            if c.is_ascii_alphanumeric() || c == '+' || c == '#' {
                if !in_word && !key.is_empty() {
                    key.push(sep);
                }
                key.push(c.to_ascii_lowercase());
                in_word = true;
            } else {
                in_word = false;
            }
        } else if is_unspaced_script(c) {
            if !key.is_empty() {
                key.push(sep);
            }
            key.push(c);
            in_word = false;
        } else if is_word_char(c) {
            if !in_word && !key.is_empty() {
                key.push(sep);
            }
            key.extend(c.to_lowercase());
            in_word = true;
        } else {
            in_word = false;
        }
    }
    key
}

/// The key under which two names are "the same": lowercase words joined by one space, so case,
/// whitespace and punctuation do not matter ("Dr. Ada  Lovelace" == "dr ada lovelace").
/// Empty when the name has no word characters at all.
pub fn name_key(name: &str) -> String {
    join_words(name, ' ')
}

/// The key under which two relationship labels are the same: lowercase words joined by `_`
/// ("Works at" == "works_at" == "WORKS-AT").
pub fn label_key(label: &str) -> String {
    join_words(label, '_')
}

/// Collapses runs of whitespace into one space and trims the ends.
pub fn collapse_ws(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for part in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(part);
    }
    out
}

/// The first `max_chars` characters of `s` (never splits a character).
pub fn truncate_chars(s: &str, max_chars: usize) -> &str {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// A fast, deterministic hasher for the graph's string-keyed indexes (the FxHash mixing step used by
/// rustc). The std SipHash is DoS-resistant but several times slower on short keys; here keys are
/// entity names and ids from one's own conversation, and parse caps bound their number and size.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(b)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write(&[i]);
    }
    fn write_usize(&mut self, i: usize) {
        self.0 = (self.0.rotate_left(5) ^ i as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<FastHasher>>;
