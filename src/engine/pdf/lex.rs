//! PDF syntax: the lexer (numbers, names, literal and hex strings, delimiters, keywords, comments)
//! and the object parser (arrays, dictionaries, `N G R` references), for the file's objects and the
//! page content streams alike. Nesting is bounded ([`MAX_DEPTH`]), and so is width ([`MAX_WIDTH`]
//! items in an array or entries in a dictionary) and the memory the values read take (the room a
//! caller gives, [`Lexer::within`]: each value costs [`value_cost`]); anything it cannot read is a
//! keyword or a value the caller skips, never a panic. Must not import anything outside
//! `crate::engine`.

use super::PdfError;

/// Deepest nesting of arrays and dictionaries read (real documents stay under ten).
pub const MAX_DEPTH: usize = 64;
/// Most items in one array or entries in one dictionary (real documents: a font's widths, a flat
/// page tree, a name tree's leaf hold thousands; a `TJ` array tens).
pub const MAX_WIDTH: usize = 100_000;

/// A PDF value. References keep their object number only (the generation is not needed to read).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Num(f64),
    Name(Vec<u8>),
    Str(Vec<u8>),
    Array(Vec<Value>),
    Dict(Dict),
    Ref(u32),
    /// A bare keyword: a content stream's operator, or `stream`, `endobj`, `R` in the file.
    Op(Vec<u8>),
}

/// A dictionary, in the order written (a later key of the same name wins in [`get`]).
pub type Dict = Vec<(Vec<u8>, Value)>;

/// The value under `key` in `d`.
pub fn get<'a>(d: &'a Dict, key: &[u8]) -> Option<&'a Value> {
    d.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
}

impl Value {
    pub fn as_dict(&self) -> Option<&Dict> {
        match self {
            Value::Dict(d) => Some(d),
            _ => None,
        }
    }
    pub fn as_num(&self) -> Option<f64> {
        match self {
            Value::Num(n) => Some(*n),
            _ => None,
        }
    }
    pub fn as_name(&self) -> Option<&[u8]> {
        match self {
            Value::Name(n) => Some(n),
            _ => None,
        }
    }
}

pub fn is_space(b: u8) -> bool {
    matches!(b, 0 | 9 | 10 | 12 | 13 | 32)
}

fn is_delim(b: u8) -> bool {
    matches!(
        b,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

/// One token.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Num(f64, bool),
    Name(Vec<u8>),
    Str(Vec<u8>),
    Open,
    Close,
    DictOpen,
    DictClose,
    Word(Vec<u8>),
}

/// The bytes a value of `payload` bytes takes in memory, about: the value itself and its bytes
/// (an array's or dictionary's items are charged one by one, a dictionary's keys with them).
pub fn value_cost(payload: usize) -> usize {
    std::mem::size_of::<Value>() + payload
}

/// Reads values from `buf` starting at `pos`.
pub struct Lexer<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    /// Bytes of values this lexer may still make ([`PdfError::TooLarge`] past it).
    room: usize,
    /// Bytes of values made so far.
    spent: usize,
    /// A read reached the end of `buf` (a value read from a stream decoded a piece at a time may
    /// go on in the next piece).
    edge: bool,
}

impl<'a> Lexer<'a> {
    /// A lexer whose values may take any memory (the caller bounds the input: a keyword, a header).
    pub fn new(buf: &'a [u8], pos: usize) -> Self {
        Lexer {
            buf,
            pos,
            room: usize::MAX,
            spent: 0,
            edge: false,
        }
    }

    /// The same, its values held to `room` bytes in all ([`value_cost`]).
    pub fn within(mut self, room: usize) -> Self {
        self.room = room;
        self
    }

    /// Bytes of values made so far.
    pub fn spent(&self) -> usize {
        self.spent
    }

    /// Gives the lexer `room` bytes again, counting from nothing (the values made so far were let
    /// go: a content stream's operands, once their operator ran).
    pub fn refill(&mut self, room: usize) {
        self.room = room;
        self.spent = 0;
    }

    fn charge(&mut self, payload: usize) -> Result<(), PdfError> {
        self.spent = self.spent.saturating_add(value_cost(payload));
        if self.spent > self.room {
            return Err(PdfError::TooLarge);
        }
        Ok(())
    }

    /// Skips white space and comments.
    pub fn skip_space(&mut self) {
        while let Some(&b) = self.buf.get(self.pos) {
            if is_space(b) {
                self.pos += 1;
            } else if b == b'%' {
                while self.pos < self.buf.len() && !matches!(self.buf[self.pos], b'\n' | b'\r') {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    fn regular(&mut self) -> &'a [u8] {
        let start = self.pos;
        while self
            .buf
            .get(self.pos)
            .is_some_and(|&b| !is_space(b) && !is_delim(b))
        {
            self.pos += 1;
        }
        &self.buf[start..self.pos]
    }

    /// Whether a read reached the end of the input since [`Lexer::clear_edge`].
    pub fn at_edge(&self) -> bool {
        self.edge
    }

    pub fn clear_edge(&mut self) {
        self.edge = false;
    }

    fn token(&mut self) -> Option<Token> {
        let t = self.token_at();
        self.edge |= self.pos >= self.buf.len();
        t
    }

    fn token_at(&mut self) -> Option<Token> {
        self.skip_space();
        let b = *self.buf.get(self.pos)?;
        let next = self.buf.get(self.pos + 1).copied();
        Some(match b {
            b'[' | b']' | b'{' | b'}' | b')' => {
                self.pos += 1;
                match b {
                    b'[' => Token::Open,
                    b']' => Token::Close,
                    _ => Token::Word(vec![b]),
                }
            }
            b'<' if next == Some(b'<') => {
                self.pos += 2;
                Token::DictOpen
            }
            b'>' if next == Some(b'>') => {
                self.pos += 2;
                Token::DictClose
            }
            b'>' => {
                self.pos += 1;
                Token::Word(vec![b])
            }
            b'<' => Token::Str(self.hex_string()),
            b'(' => Token::Str(self.literal_string()),
            b'/' => {
                self.pos += 1;
                Token::Name(unescape_name(self.regular()))
            }
            _ => {
                let word = self.regular();
                match number(word) {
                    Some((n, int)) => Token::Num(n, int),
                    None => Token::Word(word.to_vec()),
                }
            }
        })
    }

    fn hex_string(&mut self) -> Vec<u8> {
        self.pos += 1;
        let mut out = Vec::new();
        let mut high: Option<u8> = None;
        while let Some(&b) = self.buf.get(self.pos) {
            self.pos += 1;
            if b == b'>' {
                break;
            }
            let Some(d) = (b as char).to_digit(16) else {
                continue;
            };
            match high.take() {
                None => high = Some(d as u8),
                Some(h) => out.push(h << 4 | d as u8),
            }
        }
        if let Some(h) = high {
            out.push(h << 4);
        }
        out
    }

    fn literal_string(&mut self) -> Vec<u8> {
        self.pos += 1;
        let mut out = Vec::new();
        let mut depth = 1usize;
        while let Some(&b) = self.buf.get(self.pos) {
            self.pos += 1;
            match b {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                b'\\' => {
                    if let Some(c) = self.escape() {
                        out.push(c);
                    }
                    continue;
                }
                _ => {}
            }
            out.push(b);
        }
        out
    }

    /// The byte a backslash escape stands for (`None`: a line continuation).
    fn escape(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(match b {
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'b' => 8,
            b'f' => 12,
            b'0'..=b'7' => {
                let mut v = (b - b'0') as u32;
                for _ in 0..2 {
                    match self.buf.get(self.pos) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + (d - b'0') as u32;
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                v as u8
            }
            b'\r' => {
                if self.buf.get(self.pos) == Some(&b'\n') {
                    self.pos += 1;
                }
                return None;
            }
            b'\n' => return None,
            other => other,
        })
    }

    /// The next value (`None` at the end of the input). An unexpected `]` or `>>` comes back as
    /// an [`Value::Op`] for the caller to skip.
    pub fn value(&mut self) -> Result<Option<Value>, PdfError> {
        match self.token() {
            None => Ok(None),
            Some(t) => self.value_from(t, 0).map(Some),
        }
    }

    fn value_from(&mut self, t: Token, depth: usize) -> Result<Value, PdfError> {
        if depth > MAX_DEPTH {
            return Err(PdfError::TooDeep);
        }
        let payload = match &t {
            Token::Name(b) | Token::Str(b) | Token::Word(b) => b.len(),
            _ => 0,
        };
        self.charge(payload)?;
        Ok(match t {
            Token::Num(n, true) if n >= 0.0 => self.maybe_ref(n),
            Token::Num(n, _) => Value::Num(n),
            Token::Name(n) => Value::Name(n),
            Token::Str(s) => Value::Str(s),
            Token::Open => Value::Array(self.array(depth)?),
            Token::DictOpen => Value::Dict(self.dict(depth)?),
            Token::Close => Value::Op(b"]".to_vec()),
            Token::DictClose => Value::Op(b">>".to_vec()),
            Token::Word(w) => match w.as_slice() {
                b"true" => Value::Bool(true),
                b"false" => Value::Bool(false),
                b"null" => Value::Null,
                _ => Value::Op(w),
            },
        })
    }

    /// `N G R` is a reference; otherwise the number alone (the lexer goes back).
    fn maybe_ref(&mut self, n: f64) -> Value {
        let back = self.pos;
        if let Some(Token::Num(_, true)) = self.token() {
            if let Some(Token::Word(w)) = self.token() {
                if w == b"R" && n <= u32::MAX as f64 {
                    return Value::Ref(n as u32);
                }
            }
        }
        self.pos = back;
        Value::Num(n)
    }

    fn array(&mut self, depth: usize) -> Result<Vec<Value>, PdfError> {
        let mut out = Vec::new();
        loop {
            match self.token() {
                None | Some(Token::Close) => return Ok(out),
                Some(_) if out.len() >= MAX_WIDTH => return Err(PdfError::TooWide),
                Some(t) => out.push(self.value_from(t, depth + 1)?),
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Result<Dict, PdfError> {
        let mut out = Vec::new();
        loop {
            match self.token() {
                None | Some(Token::DictClose) => return Ok(out),
                Some(_) if out.len() >= MAX_WIDTH => return Err(PdfError::TooWide),
                Some(Token::Name(key)) => {
                    let Some(t) = self.token() else {
                        return Ok(out);
                    };
                    if t == Token::DictClose {
                        return Ok(out);
                    }
                    self.charge(key.len() + std::mem::size_of::<Vec<u8>>())?;
                    out.push((key, self.value_from(t, depth + 1)?));
                }
                // A value without a key: read past it.
                Some(t) => {
                    self.value_from(t, depth + 1)?;
                }
            }
        }
    }
}

/// A name with its `#xx` escapes decoded.
fn unescape_name(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let hex = raw
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (raw[i], hex) {
            (b'#', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// A PDF number (`12`, `-3.5`, `.5`, `4.`) and whether it is an integer.
pub fn number(w: &[u8]) -> Option<(f64, bool)> {
    let (neg, digits) = match w.first()? {
        b'-' => (true, &w[1..]),
        b'+' => (false, &w[1..]),
        _ => (false, w),
    };
    if digits.is_empty() || digits.len() > 40 {
        return None;
    }
    let (mut v, mut scale, mut seen_dot, mut any) = (0f64, 1f64, false, false);
    for &b in digits {
        match b {
            b'0'..=b'9' => {
                any = true;
                if seen_dot {
                    scale /= 10.0;
                    v += (b - b'0') as f64 * scale;
                } else {
                    v = v * 10.0 + (b - b'0') as f64;
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => return None,
        }
    }
    any.then_some((if neg { -v } else { v }, !seen_dot))
}
