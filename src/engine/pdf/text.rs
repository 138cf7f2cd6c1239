//! A page's text: its content stream run for the text operators only (`Tj`, `TJ`, `'`, `"`, with
//! `Td`, `TD`, `T*` and `Tm` for line breaks and wide gaps for spaces, `Do` into form XObjects), each
//! string decoded through its font: the font's `ToUnicode` map when it has one (`bfchar`,
//! `bfrange`, one- or two-byte codes), else its simple encoding (WinAnsi, with `/Differences` by
//! glyph name). A composite font without a map has no readable text; it is counted, so that the
//! caller can say so. Must not import anything outside `crate::engine`.

use std::collections::HashMap;
use std::rc::Rc;

use super::doc::Doc;
use super::lex::{get, Dict, Lexer, Value};
use super::PdfError;

/// Most entries one `ToUnicode` map may hold (a full two-byte map is 65,536).
const MAX_MAP: usize = 1 << 17;
/// Most entries the maps of one document hold together (a thousand fonts of full maps would
/// otherwise take seconds and a gigabyte); past it, maps stay as they are.
const MAX_MAPS: usize = 1 << 20;
/// Deepest nesting of form XObjects followed.
const MAX_FORMS: usize = 8;
/// Most form XObjects run in one document (a form drawn inside itself twenty times a level would
/// otherwise run millions of times); past it, forms are left out.
const MAX_FORM_RUNS: usize = 10_000;
/// A `TJ` adjustment (thousandths of the font size) wider than this is a space between words.
const WORD_GAP: f64 = 200.0;

/// How a font's string bytes become text.
#[derive(Debug, Default)]
pub struct Font {
    /// Codes are two bytes (a composite font, or a map whose code space says so).
    two_byte: bool,
    /// Code -> text, from `ToUnicode`.
    map: HashMap<u32, String>,
    /// Byte -> char for a simple font (`None`: a composite font, whose codes need the map).
    simple: Option<Vec<char>>,
}

impl Font {
    fn decode(&self, bytes: &[u8], unread: &mut usize) -> String {
        let mut out = String::new();
        let step = if self.two_byte { 2 } else { 1 };
        for code in bytes.chunks(step) {
            let c = code.iter().fold(0u32, |a, &b| a << 8 | b as u32);
            if let Some(t) = self.map.get(&c) {
                out.push_str(t);
            } else if let Some(ch) = self.simple.as_ref().and_then(|s| s.get(c as usize)) {
                if *ch != '\0' {
                    out.push(*ch);
                }
            } else {
                *unread += 1;
            }
        }
        out
    }
}

/// WinAnsi's 0x80-0x9F (the rest of the encoding is Latin-1).
const WIN_ANSI_HIGH: [char; 32] = [
    '€', '\0', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\0', 'Ž', '\0', '\0', '‘',
    '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\0', 'ž', 'Ÿ',
];

fn win_ansi() -> Vec<char> {
    (0u32..256)
        .map(|b| match b {
            0x80..=0x9f => WIN_ANSI_HIGH[(b - 0x80) as usize],
            0x20..=0x7e | 0xa0..=0xff => char::from_u32(b).unwrap_or('\0'),
            9 | 10 | 13 => ' ',
            _ => '\0',
        })
        .collect()
}

/// Adobe glyph names of the characters documents use most, for `/Differences`.
const NAMES: &[(&str, char)] = &[
    ("space", ' '),
    ("exclam", '!'),
    ("quotedbl", '"'),
    ("numbersign", '#'),
    ("dollar", '$'),
    ("percent", '%'),
    ("ampersand", '&'),
    ("quotesingle", '\''),
    ("parenleft", '('),
    ("parenright", ')'),
    ("asterisk", '*'),
    ("plus", '+'),
    ("comma", ','),
    ("hyphen", '-'),
    ("period", '.'),
    ("slash", '/'),
    ("colon", ':'),
    ("semicolon", ';'),
    ("less", '<'),
    ("equal", '='),
    ("greater", '>'),
    ("question", '?'),
    ("at", '@'),
    ("bracketleft", '['),
    ("backslash", '\\'),
    ("bracketright", ']'),
    ("asciicircum", '^'),
    ("underscore", '_'),
    ("grave", '`'),
    ("braceleft", '{'),
    ("bar", '|'),
    ("braceright", '}'),
    ("asciitilde", '~'),
    ("quoteleft", '‘'),
    ("quoteright", '’'),
    ("quotedblleft", '“'),
    ("quotedblright", '”'),
    ("endash", '–'),
    ("emdash", '—'),
    ("bullet", '•'),
    ("ellipsis", '…'),
    ("minus", '−'),
    ("fi", 'ﬁ'),
    ("fl", 'ﬂ'),
    ("ff", 'ﬀ'),
    ("ffi", 'ﬃ'),
    ("ffl", 'ﬄ'),
    ("degree", '°'),
    ("copyright", '©'),
    ("registered", '®'),
    ("section", '§'),
    ("dagger", '†'),
    ("germandbls", 'ß'),
    ("eacute", 'é'),
    ("egrave", 'è'),
    ("ecircumflex", 'ê'),
    ("agrave", 'à'),
    ("aacute", 'á'),
    ("adieresis", 'ä'),
    ("odieresis", 'ö'),
    ("udieresis", 'ü'),
    ("ccedilla", 'ç'),
    ("ntilde", 'ñ'),
    ("Eacute", 'É'),
    ("nbspace", '\u{a0}'),
    ("periodcentered", '·'),
    ("guillemotleft", '«'),
    ("guillemotright", '»'),
    ("quotesinglbase", '‚'),
    ("quotedblbase", '„'),
];

/// The character of an Adobe glyph name (the common ones; `uniXXXX` and `uXXXX[XX]` too).
pub fn glyph(name: &[u8]) -> Option<char> {
    let s = std::str::from_utf8(name).ok()?;
    if s.len() == 1 && s.as_bytes()[0].is_ascii_alphabetic() {
        return s.chars().next();
    }
    let hex = s.strip_prefix("uni").or_else(|| s.strip_prefix('u'));
    if let Some(h) = hex.filter(|h| (4..=6).contains(&h.len())) {
        if let Some(c) = u32::from_str_radix(h, 16).ok().and_then(char::from_u32) {
            return Some(c);
        }
    }
    const DIGITS: [&str; 10] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    if let Some(d) = DIGITS.iter().position(|d| *d == s) {
        return char::from_digit(d as u32, 10);
    }
    NAMES.iter().find(|(n, _)| *n == s).map(|(_, c)| *c)
}

/// The text of a `ToUnicode` destination (UTF-16BE).
fn utf16(bytes: &[u8]) -> String {
    let units: Vec<u16> = bytes
        .chunks(2)
        .map(|c| (c[0] as u16) << 8 | *c.get(1).unwrap_or(&0) as u16)
        .collect();
    String::from_utf16_lossy(&units)
}

fn code(bytes: &[u8]) -> u32 {
    bytes.iter().take(4).fold(0u32, |a, &b| a << 8 | b as u32)
}

/// Reads a `ToUnicode` CMap into `font` (its code width and map, at most `max` entries).
fn read_cmap(data: &[u8], font: &mut Font, max: usize) -> Result<(), PdfError> {
    let mut lex = Lexer::new(data, 0);
    let mut operands: Vec<Value> = Vec::new();
    while let Some(v) = lex.value()? {
        let Value::Op(op) = v else {
            if operands.len() < 4 * 100 + 4 {
                operands.push(v);
            }
            continue;
        };
        match op.as_slice() {
            b"endcodespacerange" => {
                if let Some(Value::Str(lo)) = operands.first() {
                    font.two_byte = lo.len() >= 2;
                }
            }
            b"endbfchar" => {
                for pair in operands.chunks(2).take(max.saturating_sub(font.map.len())) {
                    if let [Value::Str(src), Value::Str(dst)] = pair {
                        font.map.insert(code(src), utf16(dst));
                    }
                }
            }
            b"endbfrange" => bf_ranges(&operands, font, max),
            _ => {}
        }
        operands.clear();
        if font.map.len() >= max {
            break;
        }
    }
    Ok(())
}

fn bf_ranges(operands: &[Value], font: &mut Font, max: usize) {
    for triple in operands.chunks(3) {
        let [Value::Str(lo), Value::Str(hi), dst] = triple else {
            continue;
        };
        let (lo, hi) = (code(lo), code(hi));
        if hi < lo || hi - lo > 0xffff {
            continue;
        }
        for (i, c) in (lo..=hi).enumerate() {
            let text = match dst {
                Value::Str(d) if !d.is_empty() => {
                    let mut d = d.clone();
                    let last = d.len() - 1;
                    let v = d[last] as usize + i;
                    d[last] = (v & 0xff) as u8;
                    if last > 0 {
                        d[last - 1] = d[last - 1].wrapping_add((v >> 8) as u8);
                    }
                    utf16(&d)
                }
                Value::Array(a) => match a.get(i) {
                    Some(Value::Str(d)) => utf16(d),
                    _ => continue,
                },
                _ => continue,
            };
            font.map.insert(c, text);
            if font.map.len() >= max {
                return;
            }
        }
    }
}

/// The font of dictionary `d`, its map at most `room` entries.
fn load_font(doc: &mut Doc, d: &Dict, room: usize) -> Result<Font, PdfError> {
    let composite = get(d, b"Subtype").and_then(Value::as_name) == Some(b"Type0");
    let mut font = Font {
        two_byte: composite,
        map: HashMap::new(),
        simple: (!composite).then(win_ansi),
    };
    if let (Some(simple), Some(enc)) = (font.simple.as_mut(), get(d, b"Encoding")) {
        let enc = doc.resolve(enc).clone();
        if let Some(Value::Array(diffs)) = enc.as_dict().and_then(|e| get(e, b"Differences")) {
            let mut at = 0usize;
            for item in diffs {
                match item {
                    Value::Num(n) => at = *n as usize,
                    Value::Name(name) => {
                        if let (Some(slot), Some(c)) = (simple.get_mut(at), glyph(name)) {
                            *slot = c;
                        }
                        at += 1;
                    }
                    _ => {}
                }
            }
        }
    }
    if let Some(to_unicode) = get(d, b"ToUnicode").cloned() {
        if let Some(data) = doc.stream_of(&to_unicode)? {
            read_cmap(&data, &mut font, room.min(MAX_MAP))?;
            font.two_byte |= composite;
        }
    }
    Ok(font)
}

/// What the run of a page gathers.
#[derive(Default)]
pub struct Gathered {
    pub text: String,
    /// Character codes shown that no font could turn into text.
    pub unread: usize,
}

impl Gathered {
    fn newline(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
    }
    fn space(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with([' ', '\n']) {
            self.text.push(' ');
        }
    }
}

/// Fonts read so far, by object number (a document's pages share them), the entries of their
/// maps, held to [`MAX_MAPS`], and the forms run.
#[derive(Default)]
pub struct FontCache {
    fonts: HashMap<u32, Rc<Font>>,
    entries: usize,
    /// Form XObjects run so far, held to [`MAX_FORM_RUNS`].
    forms: usize,
}

/// The state of one content stream's run.
struct Run<'c> {
    cache: &'c mut FontCache,
    resources: Option<Value>,
    font: Option<Rc<Font>>,
    line_y: Option<f64>,
    depth: usize,
}

/// Runs the content `contents` (a stream or an array of them) of a page with `resources`.
pub fn page_text(
    doc: &mut Doc,
    cache: &mut FontCache,
    contents: Option<&Value>,
    resources: Option<Value>,
    out: &mut Gathered,
) -> Result<(), PdfError> {
    let parts = match contents.map(|c| doc.resolve(c).clone()) {
        Some(Value::Array(a)) => a,
        Some(_) => contents.cloned().into_iter().collect(),
        None => Vec::new(),
    };
    let mut data = Vec::new();
    for p in parts {
        if let Some(bytes) = doc.stream_of(&p)? {
            data.extend_from_slice(&bytes);
            data.push(b'\n');
        }
    }
    let mut run = Run {
        cache,
        resources,
        font: None,
        line_y: None,
        depth: 0,
    };
    run.content(doc, &data, out)
}

impl Run<'_> {
    fn content(&mut self, doc: &mut Doc, data: &[u8], out: &mut Gathered) -> Result<(), PdfError> {
        let mut lex = Lexer::new(data, 0);
        let mut operands: Vec<Value> = Vec::new();
        while let Some(v) = lex.value()? {
            let Value::Op(op) = v else {
                if operands.len() < 64 {
                    operands.push(v);
                }
                continue;
            };
            if op == b"ID" {
                skip_inline_image(&mut lex);
            } else {
                self.operator(doc, &op, &operands, out)?;
            }
            operands.clear();
        }
        Ok(())
    }

    fn operator(
        &mut self,
        doc: &mut Doc,
        op: &[u8],
        args: &[Value],
        out: &mut Gathered,
    ) -> Result<(), PdfError> {
        let num = |i: usize| args.get(i).and_then(Value::as_num).unwrap_or(0.0);
        match op {
            b"Tf" => self.font = self.font_named(doc, args.first())?,
            b"Tj" => self.show(args.last(), out),
            b"'" | b"\"" => {
                out.newline();
                self.show(args.last(), out);
            }
            b"TJ" => {
                for item in args.last().into_iter().flat_map(array_items) {
                    match item {
                        Value::Num(n) if -n > WORD_GAP => out.space(),
                        v => self.show(Some(v), out),
                    }
                }
            }
            b"Td" | b"TD" if num(1).abs() > 0.01 => out.newline(),
            b"Td" | b"TD" if num(0) > 0.0 => out.space(),
            b"T*" => out.newline(),
            b"Tm" => {
                let y = num(5);
                match self.line_y.replace(y) {
                    Some(prev) if (prev - y).abs() < 0.01 => out.space(),
                    _ => out.newline(),
                }
            }
            b"BT" => self.line_y = None,
            b"Do" => self.form(doc, args.first(), out)?,
            _ => {}
        }
        Ok(())
    }

    fn show(&self, v: Option<&Value>, out: &mut Gathered) {
        let (Some(Value::Str(s)), Some(font)) = (v, self.font.as_ref()) else {
            if let Some(Value::Str(s)) = v {
                // No font chosen: read as the default encoding.
                let f = Font {
                    simple: Some(win_ansi()),
                    ..Font::default()
                };
                out.text.push_str(&f.decode(s, &mut out.unread));
            }
            return;
        };
        let text = font.decode(s, &mut out.unread);
        out.text.push_str(&text);
    }

    /// The resource of kind `kind` (`Font`, `XObject`) named `name`.
    fn resource(&self, doc: &Doc, kind: &[u8], name: Option<&Value>) -> Option<Value> {
        let name = name?.as_name()?;
        let res = doc.dict(self.resources.as_ref()?)?;
        let group = doc.dict(get(res, kind)?)?;
        get(group, name).cloned()
    }

    fn font_named(
        &mut self,
        doc: &mut Doc,
        name: Option<&Value>,
    ) -> Result<Option<Rc<Font>>, PdfError> {
        let Some(v) = self.resource(doc, b"Font", name) else {
            return Ok(None);
        };
        let key = match v {
            Value::Ref(n) => Some(n),
            _ => None,
        };
        if let Some(f) = key.and_then(|k| self.cache.fonts.get(&k)) {
            return Ok(Some(f.clone()));
        }
        let Some(d) = doc.dict(&v).cloned() else {
            return Ok(None);
        };
        let room = MAX_MAPS.saturating_sub(self.cache.entries);
        let font = Rc::new(load_font(doc, &d, room)?);
        self.cache.entries += font.map.len();
        if let Some(k) = key {
            self.cache.fonts.insert(k, font.clone());
        }
        Ok(Some(font))
    }

    /// `Do`: a form XObject's content, run with its own resources (or the page's).
    fn form(
        &mut self,
        doc: &mut Doc,
        name: Option<&Value>,
        out: &mut Gathered,
    ) -> Result<(), PdfError> {
        if self.depth >= MAX_FORMS || self.cache.forms >= MAX_FORM_RUNS {
            return Ok(());
        }
        self.cache.forms += 1;
        let Some(v) = self.resource(doc, b"XObject", name) else {
            return Ok(());
        };
        let Some(d) = doc.dict(&v).cloned() else {
            return Ok(());
        };
        if get(&d, b"Subtype").and_then(Value::as_name) != Some(b"Form") {
            return Ok(());
        }
        let Some(data) = doc.stream_of(&v)? else {
            return Ok(());
        };
        let resources = get(&d, b"Resources").cloned().or(self.resources.clone());
        let mut inner = Run {
            cache: &mut *self.cache,
            resources,
            font: None,
            line_y: None,
            depth: self.depth + 1,
        };
        inner.content(doc, &data, out)
    }
}

fn array_items(v: &Value) -> impl Iterator<Item = &Value> {
    match v {
        Value::Array(a) => a.iter(),
        _ => [].iter(),
    }
}

/// Past an inline image's data: to the `EI` that follows white space.
fn skip_inline_image(lex: &mut Lexer) {
    let b = lex.buf;
    let mut i = lex.pos + 1;
    while i + 2 <= b.len() {
        if &b[i..i + 2] == b"EI"
            && i > 0
            && super::lex::is_space(b[i - 1])
            && b.get(i + 2).is_none_or(|&c| super::lex::is_space(c))
        {
            lex.pos = i + 2;
            return;
        }
        i += 1;
    }
    lex.pos = b.len();
}
