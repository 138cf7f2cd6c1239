//! Walking JSON text without parsing it: which bytes are structure and where each string starts
//! and ends. The one scanner behind the backup's depth check, the memory reply's repairs (trailing
//! commas, raw control characters, a reply cut off mid-way) and splitting a top-level array.
//! Written here rather than taken from a crate: serde_json's tokenizer is private, and the
//! streaming JSON crates parse values (what these callers must not do before a check passes).
//! Must not import anything outside `crate::engine`.

/// One step of the walk: a structural byte outside strings, or a whole string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// A byte outside any string that is not whitespace (`{`, `[`, `,`, a digit, a letter…), at
    /// its offset.
    Byte(usize, u8),
    /// A string: `start` is the offset of its opening `"`, `end` just past the closing one, or the
    /// end of the text when it is never closed (`closed` false).
    Str {
        start: usize,
        end: usize,
        closed: bool,
    },
}

/// The tokens of `text`, in order. Never fails: any byte sequence is walked to its end.
pub fn tokens(text: &[u8]) -> Tokens<'_> {
    Tokens { bytes: text, i: 0 }
}

/// Iterator returned by [`tokens`].
pub struct Tokens<'a> {
    bytes: &'a [u8],
    i: usize,
}

impl Iterator for Tokens<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        while let Some(&b) = self.bytes.get(self.i) {
            let at = self.i;
            self.i += 1;
            if b == b'"' {
                let end = string_end(self.bytes, self.i);
                self.i = end;
                // Closed when it ends in a quote that is not the opening one and not escaped.
                let closed = end > at + 1
                    && self.bytes[end - 1] == b'"'
                    && !ends_in_escape(&self.bytes[at + 1..end - 1]);
                return Some(Token::Str {
                    start: at,
                    end,
                    closed,
                });
            }
            if !b.is_ascii_whitespace() {
                return Some(Token::Byte(at, b));
            }
        }
        None
    }
}

/// Whether `body` (a string's contents) ends in an escape backslash that is not itself escaped.
pub fn ends_in_escape(body: &[u8]) -> bool {
    body.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

/// The index just past the `"` that closes the string whose contents start at `i` (or the end of
/// `bytes` if it is never closed). Escapes are honoured: `\"` does not close it. Most of a chat
/// file's bytes are string contents, so they are skipped 8 bytes at a time (about 3x faster than
/// byte by byte on a 4 MB file).
pub fn string_end(bytes: &[u8], mut i: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // True if any byte of `w` equals `b` (exact: the classic zero-byte test on `w ^ b...b`).
    let has = |w: u64, b: u8| {
        let v = w ^ (ONES * u64::from(b));
        v.wrapping_sub(ONES) & !v & HIGHS != 0
    };
    loop {
        while let Some(chunk) = bytes.get(i..i + 8) {
            let w = u64::from_ne_bytes(chunk.try_into().unwrap_or([b'"'; 8]));
            if has(w, b'"') || has(w, b'\\') {
                break;
            }
            i += 8;
        }
        match bytes.get(i) {
            None => return i,
            Some(b'"') => return i + 1,
            Some(b'\\') => i = (i + 2).min(bytes.len()),
            Some(_) => i += 1,
        }
    }
}

/// The deepest nesting of arrays and objects in `text` (strings skipped).
pub fn max_depth(text: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for t in tokens(text) {
        match t {
            Token::Byte(_, b'{' | b'[') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            Token::Byte(_, b'}' | b']') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Splits the top-level JSON array that starts at `text[0] == '['` into its elements' slices
/// (untrimmed). Returns the elements and whether the array was closed; no elements when `text`
/// does not start with `[`.
pub fn split_array(text: &str) -> (Vec<&str>, bool) {
    if !text.starts_with('[') {
        return (Vec::new(), false);
    }
    let mut elems = Vec::new();
    let mut depth = 0usize;
    let mut start = 1;
    for t in tokens(text.as_bytes()) {
        match t {
            Token::Byte(_, b'[' | b'{') => depth += 1,
            Token::Byte(i, b']' | b'}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    elems.push(&text[start.min(i)..i]);
                    return (elems, true);
                }
            }
            Token::Byte(i, b',') if depth == 1 => {
                elems.push(&text[start.min(i)..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    elems.push(&text[start.min(text.len())..]);
    (elems, false)
}
