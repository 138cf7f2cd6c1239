//! A JSON text parsed into a `serde_json::Value` a slice at a time ([`ValueParse`]), and JSON Lines
//! split and parsed a slice at a time ([`LinesParse`]), so that every export that is not a list of
//! conversations (our backup, NextChat, LobeChat, big-AGI, llama.cpp, SillyTavern) is read without
//! one long task. The result is `serde_json`'s own for every text this accepts: scalars and small
//! subtrees are handed to `serde_json` itself, and anything this does not accept (bad syntax,
//! nesting deeper than the limit, trailing text, and with `strict`, a repeated key) is refused, so
//! the caller reads that file whole and gets exactly the whole-file answer or error.
//! Why not a push parser crate (actson, json-event-parser's low-level parser): they yield events,
//! and building the `Value` from them would redo serde_json's number and string decoding, where the
//! sliced result must be serde_json's own so it equals the whole-file route (property-tested); here
//! serde_json itself decodes every scalar and small subtree. Not measured against them.
//! Owns the resumable parse; never reads a clock (the caller sizes each slice in bytes). Must not
//! import anything outside `crate::engine`.

use crate::engine::json_text::string_end;
use serde_json::{Map, Value};

/// Where a slice of parsing left the text.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed<T> {
    /// More bytes to parse.
    More,
    /// The whole text, parsed.
    Done(T),
    /// Not JSON this parse accepts: read the file whole for its answer.
    Refused,
}

/// What the parse expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A value.
    Value,
    /// A value or `]` (just after `[`).
    FirstItem,
    /// A key or `}` (just after `{`).
    FirstKey,
    /// A key (after a `,` in an object).
    Key,
    /// The `:` after a key.
    Colon,
    /// A `,` or the container's close.
    Next,
    /// Only whitespace: the top-level value is complete.
    End,
}

/// An open array or object.
#[derive(Debug, Clone)]
enum Frame {
    Array(Vec<Value>),
    Object(Map<String, Value>, Option<String>),
}

/// The key `serde_json` reserves for its raw values.
const RAW_VALUE_KEY: &str = "$serde_json::private::RawValue";

const fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// A resumable parse of one JSON text into a [`Value`]: call [`ValueParse::advance`] with the same
/// text until it is done. Containers are walked here; a container that closes within what is left
/// of the slice (not in `strict` mode), and every string and number, is parsed by `serde_json`.
#[derive(Debug, Clone)]
pub struct ValueParse {
    pos: usize,
    stack: Vec<Frame>,
    expect: Expect,
    max_depth: usize,
    /// Refuse a key an object already has (a typed parse refuses a repeated field; a `Value`
    /// keeps the last), and walk every container here, so such a key is always seen.
    strict: bool,
    result: Option<Value>,
    refused: bool,
}

impl ValueParse {
    /// Parses the text from byte `start` (after a byte-order mark); containers deeper than
    /// `max_depth` are refused.
    pub fn new(start: usize, max_depth: usize, strict: bool) -> ValueParse {
        ValueParse {
            pos: start,
            stack: Vec::new(),
            expect: Expect::Value,
            max_depth,
            strict,
            result: None,
            refused: false,
        }
    }

    /// Bytes parsed so far (from the text's start).
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Parses about `budget` more bytes of `text` (the same text on every call).
    pub fn advance(&mut self, text: &[u8], budget: usize) -> Parsed<Value> {
        let stop = self.pos.saturating_add(budget.max(1)).min(text.len());
        while !self.refused && self.pos < stop {
            let b = text[self.pos];
            if is_ws(b) {
                self.pos += 1;
                continue;
            }
            self.token(text, b, stop);
        }
        if self.refused {
            return Parsed::Refused;
        }
        if self.pos < text.len() {
            return Parsed::More;
        }
        match (self.expect, self.result.take()) {
            (Expect::End, Some(v)) => Parsed::Done(v),
            // The text ended inside the value.
            _ => {
                self.refused = true;
                Parsed::Refused
            }
        }
    }

    fn token(&mut self, text: &[u8], b: u8, stop: usize) {
        match self.expect {
            Expect::End => self.refused = true,
            Expect::Colon if b == b':' => {
                self.pos += 1;
                self.expect = Expect::Value;
            }
            Expect::Colon => self.refused = true,
            Expect::Next => self.next(b),
            Expect::FirstKey if b == b'}' => {
                self.pos += 1;
                self.close();
            }
            Expect::FirstKey | Expect::Key if b == b'"' => match self.string(text) {
                Some(key) => self.key(key),
                None => self.refused = true,
            },
            Expect::FirstKey | Expect::Key => self.refused = true,
            Expect::FirstItem if b == b']' => {
                self.pos += 1;
                self.close();
            }
            Expect::Value | Expect::FirstItem => self.value(text, b, stop),
        }
    }

    fn next(&mut self, b: u8) {
        match (b, self.stack.last()) {
            (b',', Some(Frame::Array(_))) => self.expect = Expect::Value,
            (b',', Some(Frame::Object(..))) => self.expect = Expect::Key,
            (b']', Some(Frame::Array(_))) | (b'}', Some(Frame::Object(..))) => {
                self.pos += 1;
                self.close();
                return;
            }
            _ => {
                self.refused = true;
                return;
            }
        }
        self.pos += 1;
    }

    fn key(&mut self, key: String) {
        // `serde_json` (with its `raw_value` feature) reads an object with this key as the value
        // its string holds: such a text is left to it.
        if key == RAW_VALUE_KEY {
            self.refused = true;
            return;
        }
        match self.stack.last_mut() {
            Some(Frame::Object(map, slot)) if !(self.strict && map.contains_key(&key)) => {
                *slot = Some(key);
                self.expect = Expect::Colon;
            }
            _ => self.refused = true,
        }
    }

    fn value(&mut self, text: &[u8], b: u8, stop: usize) {
        let v = match b {
            b'{' | b'[' => return self.open(text, b, stop),
            b'"' => self.string(text).map(Value::String),
            b't' => self.literal(text, b"true", Value::Bool(true)),
            b'f' => self.literal(text, b"false", Value::Bool(false)),
            b'n' => self.literal(text, b"null", Value::Null),
            b'-' | b'0'..=b'9' => self.number(text),
            _ => None,
        };
        match v {
            Some(v) => self.push(v),
            None => self.refused = true,
        }
    }

    /// A container: parsed by `serde_json` whole when it closes before `stop`, else walked.
    fn open(&mut self, text: &[u8], b: u8, stop: usize) {
        let depth = self.stack.len() + 1;
        if depth > self.max_depth {
            self.refused = true;
            return;
        }
        if !self.strict {
            if let Some((end, inner)) = subtree_end(text, self.pos, stop) {
                if self.stack.len() + inner > self.max_depth {
                    self.refused = true;
                    return;
                }
                match serde_json::from_slice::<Value>(&text[self.pos..end]) {
                    Ok(v) => {
                        self.pos = end;
                        self.push(v);
                    }
                    Err(_) => self.refused = true,
                }
                return;
            }
        }
        self.pos += 1;
        if b == b'[' {
            self.stack.push(Frame::Array(Vec::new()));
            self.expect = Expect::FirstItem;
        } else {
            self.stack.push(Frame::Object(Map::new(), None));
            self.expect = Expect::FirstKey;
        }
    }

    fn close(&mut self) {
        let v = match self.stack.pop() {
            Some(Frame::Array(items)) => Value::Array(items),
            Some(Frame::Object(map, _)) => Value::Object(map),
            None => {
                self.refused = true;
                return;
            }
        };
        self.push(v);
    }

    fn push(&mut self, v: Value) {
        self.expect = Expect::Next;
        match self.stack.last_mut() {
            None => {
                self.result = Some(v);
                self.expect = Expect::End;
            }
            Some(Frame::Array(items)) => items.push(v),
            Some(Frame::Object(map, slot)) => match slot.take() {
                Some(k) => {
                    map.insert(k, v);
                }
                None => self.refused = true,
            },
        }
    }

    /// The string starting at `self.pos` (its `"`), moved past.
    fn string(&mut self, text: &[u8]) -> Option<String> {
        let start = self.pos;
        let end = string_end(text, start + 1);
        if end < start + 2 || text.get(end - 1) != Some(&b'"') {
            return None;
        }
        let inner = &text[start + 1..end - 1];
        let s = if inner.iter().all(|&c| c != b'\\' && c >= 0x20) {
            // No escape: the bytes are the string (the text is checked UTF-8, cut at quotes).
            std::str::from_utf8(inner).ok()?.to_string()
        } else {
            serde_json::from_slice::<String>(&text[start..end]).ok()?
        };
        self.pos = end;
        Some(s)
    }

    fn literal(&mut self, text: &[u8], word: &[u8], v: Value) -> Option<Value> {
        if text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Some(v)
        } else {
            None
        }
    }

    fn number(&mut self, text: &[u8]) -> Option<Value> {
        let start = self.pos;
        let mut end = start;
        while end < text.len()
            && matches!(text[end], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        {
            end += 1;
        }
        match serde_json::from_slice::<Value>(&text[start..end]) {
            Ok(v @ Value::Number(_)) => {
                self.pos = end;
                Some(v)
            }
            _ => None,
        }
    }
}

/// Where the container opening at `start` closes (just past it) and how deep it nests, if that is
/// before `stop`. Brackets are only counted (strings skipped): `serde_json` checks the rest.
fn subtree_end(text: &[u8], start: usize, stop: usize) -> Option<(usize, usize)> {
    let (mut depth, mut deepest, mut i) = (0usize, 0usize, start);
    while i < stop {
        match text[i] {
            b'"' => {
                i = string_end(text, i + 1);
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some((i + 1, deepest));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// JSON Lines split and parsed a slice at a time: every line that is not blank must be one JSON
/// value no deeper than the limit, as the whole-file reader requires; anything else is refused.
#[derive(Debug, Clone)]
pub struct LinesParse {
    pos: usize,
    max_depth: usize,
    lines: Vec<Value>,
}

impl LinesParse {
    pub fn new(start: usize, max_depth: usize) -> LinesParse {
        LinesParse {
            pos: start,
            max_depth,
            lines: Vec::new(),
        }
    }

    /// Bytes split so far (from the text's start).
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Parses whole lines worth about `budget` bytes of `text` (the same text on every call).
    pub fn advance(&mut self, text: &[u8], budget: usize) -> Parsed<Vec<Value>> {
        let stop = self.pos.saturating_add(budget.max(1));
        while self.pos < text.len() && self.pos < stop {
            let end = text[self.pos..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(text.len(), |i| self.pos + i);
            let Ok(line) = std::str::from_utf8(&text[self.pos..end]) else {
                return Parsed::Refused;
            };
            self.pos = (end + 1).min(text.len());
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if crate::engine::json_text::max_depth(line.as_bytes()) > self.max_depth {
                return Parsed::Refused;
            }
            match serde_json::from_str::<Value>(line) {
                Ok(v) => self.lines.push(v),
                Err(_) => return Parsed::Refused,
            }
        }
        if self.pos < text.len() {
            return Parsed::More;
        }
        // One line is a JSON text, not JSON Lines (the whole-file reader says so).
        if self.lines.len() > 1 {
            Parsed::Done(std::mem::take(&mut self.lines))
        } else {
            Parsed::Refused
        }
    }
}
