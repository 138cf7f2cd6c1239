//! A PDF's objects and pages. The file is scanned for its `N G obj` definitions rather than read
//! through its cross-reference table (a damaged or edited file reads the same: a later definition
//! wins), objects packed in object streams (`/Type /ObjStm`) are unpacked, and the page tree is
//! walked from the catalog (each page with the resources it inherits). Streams are inflated
//! (`FlateDecode`, through `miniz_oxide`; `ASCIIHexDecode`, `ASCII85Decode`) within the byte budget of [`super::Limits`]; an
//! encrypted file is refused. The memory the reader holds is counted here ([`Doc::room`]): the
//! objects' values, and the decoded streams a page's run holds while it reads them
//! ([`Doc::hold`]); what would go past `max_memory` is refused. Must not import anything outside
//! `crate::engine`.

use std::collections::{HashMap, HashSet};

use miniz_oxide::inflate::stream::InflateState;
use miniz_oxide::{DataFormat, MZFlush, MZStatus};

use super::lex::{get, is_space, Dict, Lexer, Value};
use super::{Limits, PdfError};

/// One object: its value, and where its stream's bytes are in the file (if it has one).
#[derive(Debug, Clone)]
struct Obj {
    value: Value,
    stream: Option<(usize, usize)>,
    /// What its value takes in memory ([`super::lex::value_cost`]).
    cost: usize,
}

/// A page: its content (a stream or an array of them) and the resources in force.
#[derive(Debug, Clone)]
pub struct Page {
    pub contents: Option<Value>,
    pub resources: Option<Value>,
}

/// The document: the file's bytes and its objects by number.
pub struct Doc {
    bytes: Vec<u8>,
    objects: HashMap<u32, Obj>,
    /// Bytes decoded so far (every stream read, each time it is read: a form run a thousand times
    /// counts a thousand times), held to the limit.
    inflated: usize,
    /// Bytes the objects' values take, and bytes of decoded streams held now.
    held: usize,
    transient: usize,
    limits: Limits,
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// The object number of an `N G obj` whose `obj` starts at `i`.
fn header_before(b: &[u8], i: usize) -> Option<u32> {
    let after = b.get(i + 3).copied();
    if after.is_some_and(|c| !is_space(c) && !b"<[(/%".contains(&c)) {
        return None;
    }
    let mut j = i;
    let digits = |j: &mut usize| -> Option<(usize, usize)> {
        while *j > 0 && is_space(b[*j - 1]) {
            *j -= 1;
        }
        let end = *j;
        while *j > 0 && b[*j - 1].is_ascii_digit() && end - *j < 10 {
            *j -= 1;
        }
        (end > *j).then_some((*j, end))
    };
    if j == 0 || !is_space(b[j - 1]) {
        return None;
    }
    digits(&mut j)?;
    let (s, e) = digits(&mut j)?;
    if j > 0 && !is_space(b[j - 1]) && !b"]>)".contains(&b[j - 1]) {
        return None;
    }
    std::str::from_utf8(&b[s..e]).ok()?.parse().ok()
}

impl Doc {
    /// Reads the objects of `bytes`. Refused: not a PDF, encrypted, too many objects, too deep.
    pub fn open(bytes: Vec<u8>, limits: Limits) -> Result<Doc, PdfError> {
        let head = &bytes[..bytes.len().min(1024)];
        if find(head, b"%PDF-", 0).is_none() {
            return Err(PdfError::NotPdf);
        }
        let mut doc = Doc {
            bytes,
            objects: HashMap::new(),
            inflated: 0,
            held: 0,
            transient: 0,
            limits,
        };
        doc.scan()?;
        if doc.encrypted()? {
            return Err(PdfError::Encrypted);
        }
        doc.unpack_object_streams()?;
        Ok(doc)
    }

    fn scan(&mut self) -> Result<(), PdfError> {
        let mut at = 0;
        while let Some(i) = find(&self.bytes, b"obj", at) {
            at = i + 3;
            let Some(num) = header_before(&self.bytes, i) else {
                continue;
            };
            let mut lex = Lexer::new(&self.bytes, i + 3).within(self.room());
            let Some(value) = lex.value()? else {
                break;
            };
            let cost = lex.spent();
            let stream = self.stream_after(&value, &mut lex);
            at = stream.map_or(lex.pos, |(_, end)| end).max(at);
            self.keep(
                num,
                Obj {
                    value,
                    stream,
                    cost,
                },
            );
            if self.objects.len() > self.limits.max_objects {
                return Err(PdfError::TooManyObjects(self.limits.max_objects));
            }
        }
        Ok(())
    }

    /// Where the stream data of an object whose dictionary was just read lies, if it has one.
    fn stream_after(&self, value: &Value, lex: &mut Lexer) -> Option<(usize, usize)> {
        let dict = value.as_dict()?;
        let back = lex.pos;
        lex.skip_space();
        if !self.bytes[lex.pos..].starts_with(b"stream") {
            lex.pos = back;
            return None;
        }
        let mut start = lex.pos + 6;
        if self.bytes.get(start) == Some(&b'\r') {
            start += 1;
        }
        if self.bytes.get(start) == Some(&b'\n') {
            start += 1;
        }
        let declared = get(dict, b"Length")
            .and_then(Value::as_num)
            .map(|n| start.saturating_add(n.max(0.0) as usize))
            .filter(|&end| {
                end <= self.bytes.len() && {
                    let mut l = Lexer::new(&self.bytes, end);
                    l.skip_space();
                    self.bytes[l.pos..].starts_with(b"endstream")
                }
            });
        let end = declared.unwrap_or_else(|| {
            let e = find(&self.bytes, b"endstream", start).unwrap_or(self.bytes.len());
            let mut e = e.max(start);
            while e > start && matches!(self.bytes[e - 1], b'\r' | b'\n') {
                e -= 1;
            }
            e
        });
        lex.pos = end;
        Some((start, end))
    }

    /// True when a trailer (or a cross-reference stream) names an `/Encrypt` dictionary.
    fn encrypted(&self) -> Result<bool, PdfError> {
        let mut at = 0;
        while let Some(i) = find(&self.bytes, b"trailer", at) {
            at = i + 7;
            if let Some(Value::Dict(d)) = Lexer::new(&self.bytes, at).within(self.room()).value()? {
                if get(&d, b"Encrypt").is_some() {
                    return Ok(true);
                }
            }
        }
        Ok(self.objects.values().any(|o| {
            o.value.as_dict().is_some_and(|d| {
                get(d, b"Type").and_then(Value::as_name) == Some(b"XRef")
                    && get(d, b"Encrypt").is_some()
            })
        }))
    }

    fn unpack_object_streams(&mut self) -> Result<(), PdfError> {
        let mut packs: Vec<u32> = self
            .objects
            .iter()
            .filter(|(_, o)| {
                o.value.as_dict().and_then(|d| get(d, b"Type"))
                    == Some(&Value::Name(b"ObjStm".into()))
            })
            .map(|(n, _)| *n)
            .collect();
        packs.sort_unstable();
        for num in packs {
            let Ok(data) = self.stream_data(num) else {
                continue;
            };
            let Some(dict) = self.objects[&num].value.as_dict().cloned() else {
                continue;
            };
            self.unpack(&dict, &data)?;
        }
        Ok(())
    }

    fn unpack(&mut self, dict: &Dict, data: &[u8]) -> Result<(), PdfError> {
        let count = get(dict, b"N").and_then(Value::as_num).unwrap_or(0.0) as usize;
        let first = get(dict, b"First").and_then(Value::as_num).unwrap_or(0.0) as usize;
        let mut head = Lexer::new(data, 0).within(self.room());
        let mut entries = Vec::new();
        for _ in 0..count.min(self.limits.max_objects) {
            match (head.value()?, head.value()?) {
                (Some(Value::Num(n)), Some(Value::Num(off))) => {
                    entries.push((n as u32, off as usize))
                }
                _ => break,
            }
        }
        for (num, off) in entries {
            let Some(at) = first.checked_add(off).filter(|&a| a < data.len()) else {
                continue;
            };
            if self.objects.contains_key(&num) {
                continue;
            }
            let mut lex = Lexer::new(data, at).within(self.room());
            let Some(value) = lex.value()? else {
                continue;
            };
            let cost = lex.spent();
            self.keep(
                num,
                Obj {
                    value,
                    stream: None,
                    cost,
                },
            );
            if self.objects.len() > self.limits.max_objects {
                return Err(PdfError::TooManyObjects(self.limits.max_objects));
            }
        }
        Ok(())
    }

    /// Keeps object `num` (a later definition replaces an earlier one), its value counted as held.
    fn keep(&mut self, num: u32, obj: Obj) {
        self.held += obj.cost;
        if let Some(old) = self.objects.insert(num, obj) {
            self.held -= old.cost;
        }
    }

    /// Bytes the reader may still take: `max_memory` less the objects' values and the decoded
    /// streams held now.
    pub fn room(&self) -> usize {
        self.limits
            .max_memory
            .saturating_sub(self.held.saturating_add(self.transient))
    }

    /// Counts `n` bytes of decoded streams as held (a page's content while it runs), or (`false`)
    /// lets them go again.
    pub fn hold(&mut self, n: usize, held: bool) {
        self.transient = match held {
            true => self.transient.saturating_add(n),
            false => self.transient.saturating_sub(n),
        };
    }

    /// The value of object `num`.
    pub fn object(&self, num: u32) -> Option<&Value> {
        self.objects.get(&num).map(|o| &o.value)
    }

    /// `v`, or what it refers to (following a few references at most).
    pub fn resolve<'v>(&'v self, v: &'v Value) -> &'v Value {
        let mut v = v;
        for _ in 0..8 {
            match v {
                Value::Ref(n) => match self.object(*n) {
                    Some(o) => v = o,
                    None => return &Value::Null,
                },
                _ => return v,
            }
        }
        &Value::Null
    }

    /// The dictionary `v` is or refers to.
    pub fn dict<'v>(&'v self, v: &'v Value) -> Option<&'v Dict> {
        self.resolve(v).as_dict()
    }

    /// The decoded bytes of the stream `v` refers to (`None`: not a stream).
    pub fn stream_of(&mut self, v: &Value) -> Result<Option<Vec<u8>>, PdfError> {
        match v {
            Value::Ref(n) if self.objects.get(n).is_some_and(|o| o.stream.is_some()) => {
                self.stream_data(*n).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The decoded bytes of object `num`'s stream: filters applied, within the inflate budget.
    /// A filter this reader does not know gives no bytes.
    fn stream_data(&mut self, num: u32) -> Result<Vec<u8>, PdfError> {
        let Some(Obj {
            value,
            stream: Some((s, e)),
            ..
        }) = self.objects.get(&num)
        else {
            return Ok(Vec::new());
        };
        let filters = filters(value);
        let mut data = self.bytes[*s..*e].to_vec();
        for f in filters {
            data = match f.as_slice() {
                b"FlateDecode" | b"Fl" => self.inflate(&data)?,
                b"ASCIIHexDecode" | b"AHx" => hex_decode(&data),
                b"ASCII85Decode" | b"A85" => a85_decode(&data),
                _ => return Ok(Vec::new()),
            };
        }
        self.inflated += data.len();
        if self.inflated > self.limits.max_inflated {
            return Err(PdfError::Bomb(self.limits.max_inflated));
        }
        Ok(data)
    }

    /// A decoding of the stream `v` refers to, read a piece at a time ([`Doc::decode_more`];
    /// `None`: not a stream).
    pub fn decoding(&self, v: &Value) -> Option<Decoding> {
        let Value::Ref(num) = v else {
            return None;
        };
        let obj = self.objects.get(num).filter(|o| o.stream.is_some())?;
        let flate =
            matches!(filters(&obj.value).as_slice(), [f] if f == b"FlateDecode" || f == b"Fl");
        Some(Decoding {
            num: *num,
            inflate: flate.then(|| InflateState::new_boxed(DataFormat::Zlib)),
            at: 0,
            done: false,
        })
    }

    /// Appends about `want` more decoded bytes of `d` to `out` (all of them, when `d` is not
    /// inflated a piece at a time), counted as held ([`Doc::hold`]: the caller lets them go);
    /// false once `d` is finished. Within the byte budget and the memory room.
    pub fn decode_more(
        &mut self,
        d: &mut Decoding,
        out: &mut Vec<u8>,
        want: usize,
    ) -> Result<bool, PdfError> {
        let before = out.capacity();
        let more = self.decode_into(d, out, want);
        self.hold(out.capacity().saturating_sub(before), true);
        if self.room() == 0 {
            return Err(PdfError::TooLarge);
        }
        more
    }

    fn decode_into(
        &mut self,
        d: &mut Decoding,
        out: &mut Vec<u8>,
        want: usize,
    ) -> Result<bool, PdfError> {
        use miniz_oxide::inflate::stream::inflate;
        if d.done {
            return Ok(false);
        }
        let (Some(state), Some((s, e))) = (d.inflate.as_mut(), self.objects[&d.num].stream) else {
            d.done = true;
            out.extend_from_slice(&self.stream_data(d.num)?);
            return Ok(false);
        };
        let mut window = vec![0u8; 1 << 15];
        let target = out.len().saturating_add(want);
        while out.len() < target {
            let r = inflate(state, &self.bytes[s + d.at..e], &mut window, MZFlush::None);
            d.at += r.bytes_consumed;
            self.inflated += r.bytes_written;
            if self.inflated > self.limits.max_inflated {
                return Err(PdfError::Bomb(self.limits.max_inflated));
            }
            out.extend_from_slice(&window[..r.bytes_written]);
            let stuck = r.bytes_consumed == 0 && r.bytes_written == 0;
            if stuck || r.status != Ok(MZStatus::Ok) {
                d.done = true;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A `FlateDecode` stream inflated within the byte budget and the memory room: its size found
    /// first, then inflated into a buffer of exactly that size (a buffer grown by doubling would
    /// hold half as much again, twice, while it grows).
    fn inflate(&mut self, data: &[u8]) -> Result<Vec<u8>, PdfError> {
        let budget = self.limits.max_inflated.saturating_sub(self.inflated);
        let memory = self.room();
        let size = inflate_into(data, budget.min(memory).saturating_add(1), None);
        if size > budget {
            return Err(PdfError::Bomb(self.limits.max_inflated));
        }
        if size > memory {
            return Err(PdfError::TooLarge);
        }
        let mut out = Vec::with_capacity(size);
        inflate_into(data, size, Some(&mut out));
        Ok(out)
    }

    /// The pages in order, from the catalog's page tree (or, without one, every `/Type /Page`).
    pub fn pages(&self) -> Vec<Page> {
        let root = self
            .objects
            .iter()
            .filter(|(_, o)| self.type_of(&o.value) == Some(b"Catalog"))
            .max_by_key(|(n, _)| **n)
            .and_then(|(_, o)| o.value.as_dict().and_then(|d| get(d, b"Pages")).cloned());
        let mut pages = root.map(|r| self.walk(r)).unwrap_or_default();
        if pages.is_empty() {
            let mut loose: Vec<(&u32, &Obj)> = self
                .objects
                .iter()
                .filter(|(_, o)| self.type_of(&o.value) == Some(b"Page"))
                .collect();
            loose.sort_by_key(|(n, _)| **n);
            pages = loose
                .into_iter()
                .take(self.limits.max_pages)
                .filter_map(|(_, o)| self.page(o.value.as_dict()?, None))
                .collect();
        }
        pages
    }

    fn type_of<'v>(&self, v: &'v Value) -> Option<&'v [u8]> {
        v.as_dict()
            .and_then(|d| get(d, b"Type"))
            .and_then(Value::as_name)
    }

    fn page(&self, d: &Dict, inherited: Option<&Value>) -> Option<Page> {
        Some(Page {
            contents: get(d, b"Contents").cloned(),
            resources: get(d, b"Resources").or(inherited).cloned(),
        })
    }

    /// The page tree under `root`, depth first, each node once (a cycle ends the walk there).
    fn walk(&self, root: Value) -> Vec<Page> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![(root, None::<Value>)];
        while let Some((node, inherited)) = stack.pop() {
            if let Value::Ref(n) = node {
                if !seen.insert(n) {
                    continue;
                }
            }
            let Some(d) = self.dict(&node) else {
                continue;
            };
            let resources = get(d, b"Resources").cloned().or(inherited);
            match get(d, b"Kids").map(|k| self.resolve(k)) {
                Some(Value::Array(kids)) if self.type_of(self.resolve(&node)) != Some(b"Page") => {
                    for kid in kids.iter().rev() {
                        stack.push((kid.clone(), resources.clone()));
                    }
                }
                _ => out.extend(self.page(d, resources.as_ref())),
            }
            if out.len() >= self.limits.max_pages || seen.len() > self.limits.max_objects {
                break;
            }
        }
        out
    }
}

/// A stream's filters, by name.
fn filters(value: &Value) -> Vec<Vec<u8>> {
    match value.as_dict().and_then(|d| get(d, b"Filter")) {
        Some(Value::Name(n)) => vec![n.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|f| f.as_name().map(<[u8]>::to_vec))
            .collect(),
        _ => Vec::new(),
    }
}

/// A stream being decoded a piece at a time: `FlateDecode` alone (what content streams use) is
/// inflated as it is read, so a hostile stream is refused at the piece that shows it; any other
/// filters are decoded whole at once.
pub struct Decoding {
    num: u32,
    inflate: Option<Box<InflateState>>,
    /// Bytes of the stream's raw data inflated so far.
    at: usize,
    done: bool,
}

/// Inflates the zlib stream `data` through a small window: how many bytes come out, at most `max`
/// (appended to `out` when given). A damaged or truncated stream gives what came out before the
/// damage.
fn inflate_into(data: &[u8], max: usize, mut out: Option<&mut Vec<u8>>) -> usize {
    use miniz_oxide::inflate::stream::inflate;
    let mut state = InflateState::new_boxed(DataFormat::Zlib);
    let mut window = vec![0u8; 1 << 15];
    let (mut at, mut total) = (0, 0);
    loop {
        let r = inflate(&mut state, &data[at..], &mut window, MZFlush::None);
        at += r.bytes_consumed;
        let n = r.bytes_written.min(max - total);
        if let Some(o) = out.as_deref_mut() {
            o.extend_from_slice(&window[..n]);
        }
        total += n;
        let stuck = r.bytes_consumed == 0 && r.bytes_written == 0;
        if total >= max || stuck || r.status != Ok(MZStatus::Ok) {
            return total;
        }
    }
}

/// ASCII base-85 (`<~ … ~>`, `z` for four zero bytes), to its end marker or a character outside it.
fn a85_decode(data: &[u8]) -> Vec<u8> {
    let body = data.strip_prefix(b"<~").unwrap_or(data);
    let mut out = Vec::with_capacity(body.len() * 4 / 5);
    let (mut group, mut n) = (0u64, 0usize);
    for &c in body {
        match c {
            b'z' if n == 0 => out.extend_from_slice(&[0; 4]),
            b'!'..=b'u' => {
                group = group * 85 + (c - b'!') as u64;
                n += 1;
                if n == 5 {
                    out.extend_from_slice(&(group as u32).to_be_bytes());
                    (group, n) = (0, 0);
                }
            }
            c if is_space(c) => {}
            _ => break,
        }
    }
    if n > 1 {
        for _ in n..5 {
            group = group * 85 + 84;
        }
        out.extend_from_slice(&(group as u32).to_be_bytes()[..n - 1]);
    }
    out
}

fn hex_decode(data: &[u8]) -> Vec<u8> {
    let mut s = data.to_vec();
    s.insert(0, b'<');
    s.push(b'>');
    match Lexer::new(&s, 0).value() {
        Ok(Some(Value::Str(v))) => v,
        _ => Vec::new(),
    }
}
