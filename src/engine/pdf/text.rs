//! A page's text: its content stream run for the text operators only (`Tj`, `TJ`, `'`, `"`, `Do`
//! into form XObjects), each string placed where the text matrix (`BT`, `Tm`, `Td`, `TD`, `T*`,
//! `TL`) and the widths of the glyphs before it put it: on another line, a line break; a gap of more
//! than [`GAP_EM`] of the font size on the same line, a space (a writer that places every run with
//! `Td`, as Chromium does, gets no space inside a word); a `TJ` adjustment past [`WORD_GAP`], a
//! space. Each string is decoded through its font: the font's `ToUnicode` map when it has one (`bfchar`,
//! `bfrange`, one- or two-byte codes), else its simple encoding (WinAnsi, with `/Differences` by
//! glyph name). A composite font without a map has no readable text; it is counted, so that the
//! caller can say so. Must not import anything outside `crate::engine`.

use std::collections::HashMap;
use std::rc::Rc;

use super::doc::{Decoding, Doc};
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
/// A gap on a line wider than this (of the font size) is a space between words.
const GAP_EM: f64 = 0.15;
/// A glyph's width (thousandths of the font size) when the font does not give it.
const DEFAULT_WIDTH: f64 = 500.0;

/// How a font's string bytes become text.
#[derive(Debug, Default)]
pub struct Font {
    /// Codes are two bytes (a composite font, or a map whose code space says so).
    two_byte: bool,
    /// Code -> text, from `ToUnicode`.
    map: HashMap<u32, String>,
    /// Byte -> char for a simple font (`None`: a composite font, whose codes need the map).
    simple: Option<Vec<char>>,
    /// Glyph widths by code (thousandths of the font size), and the width of any other.
    widths: HashMap<u32, f64>,
    default_width: f64,
}

impl Font {
    /// The text of `bytes`, and how far its glyphs move the pen (thousandths of the font size).
    fn decode(&self, bytes: &[u8], unread: &mut usize) -> (String, f64) {
        let mut out = String::new();
        let mut advance = 0.0;
        let step = if self.two_byte { 2 } else { 1 };
        for code in bytes.chunks(step) {
            let c = code.iter().fold(0u32, |a, &b| a << 8 | b as u32);
            advance += self.widths.get(&c).copied().unwrap_or(self.default_width);
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
        (out, advance)
    }

    /// The font strings are read in before any `Tf`.
    fn fallback() -> Font {
        Font {
            simple: Some(win_ansi()),
            default_width: DEFAULT_WIDTH,
            ..Font::default()
        }
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

/// Reads the `ToUnicode` CMap `to_unicode` (a stream) into `font`: its code width and map, at most
/// `max` entries; a piece at a time, as a page's content is read.
fn read_cmap(
    doc: &mut Doc,
    to_unicode: Value,
    font: &mut Font,
    max: usize,
) -> Result<(), PdfError> {
    let mut src = Source::new(vec![to_unicode]);
    let mut operands: Vec<Value> = Vec::new();
    let read = read_values(doc, &mut src, |_, v| {
        let Value::Op(op) = v else {
            if operands.len() < 4 * 100 + 4 {
                operands.push(v);
            }
            return Ok(Then::Keep);
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
        Ok(if font.map.len() >= max {
            Then::Stop
        } else {
            Then::Clear
        })
    });
    src.release(doc);
    read
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
        widths: HashMap::new(),
        default_width: DEFAULT_WIDTH,
    };
    read_widths(doc, d, composite, &mut font);
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
        read_cmap(doc, to_unicode, &mut font, room.min(MAX_MAP))?;
        font.two_byte |= composite;
    }
    Ok(font)
}

/// A font's glyph widths: a simple font's `/FirstChar` and `/Widths`, a composite font's
/// descendant's `/DW` and `/W` (`c [w1 w2 …]` and `c_first c_last w`), at most [`MAX_MAP`].
fn read_widths(doc: &Doc, d: &Dict, composite: bool, font: &mut Font) {
    let num = |v: &Value| doc.resolve(v).as_num();
    if !composite {
        let first = get(d, b"FirstChar").and_then(num).unwrap_or(0.0).max(0.0) as u32;
        if let Some(Value::Array(w)) = get(d, b"Widths").map(|w| doc.resolve(w)) {
            for (i, v) in w.iter().take(MAX_MAP).enumerate() {
                if let Some(n) = num(v) {
                    font.widths.insert(first.saturating_add(i as u32), n);
                }
            }
        }
        return;
    }
    let Some(Value::Array(desc)) = get(d, b"DescendantFonts").map(|v| doc.resolve(v)) else {
        return;
    };
    let Some(cid) = desc.first().and_then(|f| doc.dict(f)) else {
        return;
    };
    font.default_width = get(cid, b"DW").and_then(num).unwrap_or(1000.0);
    let Some(Value::Array(w)) = get(cid, b"W").map(|w| doc.resolve(w)) else {
        return;
    };
    let mut i = 0;
    while i + 1 < w.len() && font.widths.len() < MAX_MAP {
        let first = num(&w[i]).unwrap_or(0.0).max(0.0) as u32;
        match (doc.resolve(&w[i + 1]), w.get(i + 2).and_then(num)) {
            (Value::Array(list), _) => {
                for (k, v) in list.iter().take(MAX_MAP).enumerate() {
                    font.widths
                        .insert(first.saturating_add(k as u32), num(v).unwrap_or(0.0));
                }
                i += 2;
            }
            (last, Some(width)) => {
                let last = last.as_num().unwrap_or(0.0).max(0.0) as u32;
                for c in first..=last.min(first.saturating_add(0xffff)) {
                    font.widths.insert(c, width);
                }
                i += 3;
            }
            _ => break,
        }
    }
}

/// What the run of a page gathers.
#[derive(Default)]
pub struct Gathered {
    pub text: String,
    /// Character codes shown that no font could turn into text.
    pub unread: usize,
    /// Most bytes of text kept (past it, strings are decoded for nothing: the attachment is cut
    /// there anyway), and whether some were left out for it.
    pub room: usize,
    pub full: bool,
}

impl Gathered {
    /// Gathers at most `room` bytes of text.
    pub fn within(room: usize) -> Gathered {
        Gathered {
            room,
            ..Gathered::default()
        }
    }

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

/// Where the text is: the text matrix's scale and origin (`a`, `d`, `e`, `f`; rotation and skew
/// are not followed), the line's start in text space, the pen's advance along the line, the font
/// size and leading; and where the last string shown ended (user space: its line's y, its end x).
#[derive(Debug, Clone, Copy)]
struct Pen {
    tm: [f64; 4],
    line: (f64, f64),
    x: f64,
    size: f64,
    leading: f64,
    last: Option<(f64, f64)>,
}

impl Pen {
    fn new() -> Pen {
        Pen {
            tm: [1.0, 1.0, 0.0, 0.0],
            line: (0.0, 0.0),
            x: 0.0,
            size: 1.0,
            leading: 0.0,
            last: None,
        }
    }

    /// `Td`: the next line, `tx`, `ty` from the start of this one.
    fn next_line(&mut self, tx: f64, ty: f64) {
        self.line = (self.line.0 + tx, self.line.1 + ty);
        self.x = 0.0;
    }

    /// Where the pen is, in user space.
    fn at(&self) -> (f64, f64) {
        let [a, d, e, f] = self.tm;
        (e + (self.line.0 + self.x) * a, f + self.line.1 * d)
    }

    /// What goes between the last string and one shown now: a line break, a space or nothing.
    fn separate(&self, out: &mut Gathered) {
        let Some((last_y, last_x)) = self.last else {
            return;
        };
        let (x, y) = self.at();
        let [a, d, ..] = self.tm;
        if (y - last_y).abs() > 0.5 * self.size * d.abs().max(1e-9) {
            out.newline();
        } else if x - last_x > GAP_EM * self.size * a.abs() {
            out.space();
        }
    }
}

/// The state of one content stream's run.
struct Run<'c> {
    cache: &'c mut FontCache,
    resources: Option<Value>,
    font: Option<Rc<Font>>,
    pen: Pen,
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
    let mut run = Run {
        cache,
        resources,
        font: None,
        pen: Pen::new(),
        depth: 0,
    };
    let mut src = Source::new(parts);
    let ran = run.content(doc, &mut src, out);
    src.release(doc);
    ran
}

/// Bytes of a content stream decoded at a time (or as many as the piece read so far holds, when
/// one value spans it: the value is read again from its start, so a value is read at most about
/// twice in all).
const PIECE: usize = 1 << 20;

/// A page's content read a piece at a time: its streams one after another (a line break between
/// two), decoded as the run reads them and let go once read; a hostile stream is refused at the
/// piece that shows it, and a long one never held whole.
struct Source {
    parts: std::vec::IntoIter<Value>,
    now: Option<Decoding>,
    buf: Vec<u8>,
    /// `buf` holds the whole stream: no more comes.
    finished: bool,
}

impl Source {
    fn new(parts: Vec<Value>) -> Source {
        Source {
            parts: parts.into_iter(),
            now: None,
            buf: Vec::new(),
            finished: false,
        }
    }

    /// Lets go of the bytes before `from` and decodes more after the rest (`finished` once none
    /// is left).
    fn more(&mut self, doc: &mut Doc, from: usize) -> Result<(), PdfError> {
        self.buf.drain(..from.min(self.buf.len()));
        let len = self.buf.len();
        while self.buf.len() == len {
            let Some(d) = self.now.as_mut() else {
                let Some(p) = self.parts.next() else {
                    self.finished = true;
                    return Ok(());
                };
                self.now = doc.decoding(&p);
                if self.now.is_some() && !self.buf.is_empty() {
                    self.buf.push(b'\n');
                }
                continue;
            };
            if !doc.decode_more(d, &mut self.buf, PIECE.max(len))? {
                self.now = None;
            }
        }
        Ok(())
    }

    /// The memory its buffer held, let go.
    fn release(self, doc: &mut Doc) {
        doc.hold(self.buf.capacity(), false);
    }
}

/// What a reader of values asks for after each one ([`read_values`]).
enum Then {
    /// Read on, the value kept (an operand).
    Keep,
    /// Read on; the values kept so far were let go (an operator ran).
    Clear,
    /// Skip an inline image's data (after `ID`), the values kept let go.
    Image,
    Stop,
}

/// Reads the values of `src` a piece at a time, each handed to `each`: a value that reaches the end
/// of a piece is read again once the next is there (an inline image's data skipped likewise), and
/// the values kept between two operators are held to the reader's memory room.
fn read_values(
    doc: &mut Doc,
    src: &mut Source,
    mut each: impl FnMut(&mut Doc, Value) -> Result<Then, PdfError>,
) -> Result<(), PdfError> {
    // Bytes the values kept take; where the next read starts; inside an inline image.
    let (mut kept, mut at, mut image) = (0usize, 0usize, false);
    src.more(doc, 0)?;
    loop {
        let mut lex = Lexer::new(&src.buf, at).within(doc.room().saturating_sub(kept));
        loop {
            if !image {
                lex.skip_space();
            }
            let start = lex.pos;
            lex.clear_edge();
            if image {
                skip_inline_image(&mut lex);
                image = lex.pos >= lex.buf.len() && !src.finished;
                if image {
                    at = start;
                    break;
                }
                continue;
            }
            let before = lex.spent();
            let v = lex.value()?;
            if lex.at_edge() && !src.finished {
                (at, kept) = (start, kept + before);
                break;
            }
            let Some(v) = v else {
                return Ok(());
            };
            match each(doc, v)? {
                Then::Keep => continue,
                Then::Clear => {}
                Then::Image => image = true,
                Then::Stop => return Ok(()),
            }
            kept = 0;
            lex.refill(doc.room());
        }
        src.more(doc, at)?;
        at = 0;
    }
}

impl Run<'_> {
    /// Runs the content of `src` for its text operators.
    fn content(
        &mut self,
        doc: &mut Doc,
        src: &mut Source,
        out: &mut Gathered,
    ) -> Result<(), PdfError> {
        let mut operands: Vec<Value> = Vec::new();
        read_values(doc, src, |doc, v| {
            let Value::Op(op) = v else {
                if operands.len() < 64 {
                    operands.push(v);
                }
                return Ok(Then::Keep);
            };
            let then = match op.as_slice() {
                b"ID" => Then::Image,
                _ => {
                    self.operator(doc, &op, &operands, out)?;
                    Then::Clear
                }
            };
            operands.clear();
            Ok(then)
        })
    }

    fn operator(
        &mut self,
        doc: &mut Doc,
        op: &[u8],
        args: &[Value],
        out: &mut Gathered,
    ) -> Result<(), PdfError> {
        let num = |i: usize| args.get(i).and_then(Value::as_num).unwrap_or(0.0);
        let pen = &mut self.pen;
        match op {
            b"Tf" => {
                pen.size = num(1).abs().max(1e-3);
                self.font = self.font_named(doc, args.first())?;
            }
            b"Tj" => self.show(args.last(), true, out),
            b"'" | b"\"" => {
                pen.next_line(0.0, -pen.leading);
                if pen.last.is_some() {
                    out.newline();
                }
                self.show(args.last(), true, out);
            }
            b"TJ" => self.show_adjusted(args.last(), out),
            b"Td" => pen.next_line(num(0), num(1)),
            b"TD" => {
                pen.leading = -num(1);
                pen.next_line(num(0), num(1));
            }
            b"TL" => pen.leading = num(0),
            // A next line even when no leading was set.
            b"T*" => {
                pen.next_line(0.0, -pen.leading);
                if pen.last.is_some() {
                    out.newline();
                }
            }
            b"Tm" => {
                pen.tm = [num(0), num(3), num(4), num(5)];
                pen.line = (0.0, 0.0);
                pen.x = 0.0;
            }
            b"BT" => {
                pen.tm = [1.0, 1.0, 0.0, 0.0];
                pen.line = (0.0, 0.0);
                pen.x = 0.0;
            }
            b"Do" => self.form(doc, args.first(), out)?,
            _ => {}
        }
        Ok(())
    }

    /// `TJ`: its strings, moved by the adjustments between them; a wide one is a space.
    fn show_adjusted(&mut self, v: Option<&Value>, out: &mut Gathered) {
        let mut first = true;
        for item in v.into_iter().flat_map(array_items) {
            match item {
                Value::Num(n) => {
                    if -n > WORD_GAP {
                        out.space();
                    }
                    self.pen.x -= n / 1000.0 * self.pen.size;
                }
                v => {
                    self.show(Some(v), first, out);
                    first = false;
                }
            }
        }
    }

    /// Shows a string: separated from the last one by where it is (when `place`), decoded, the pen
    /// moved past its glyphs.
    fn show(&mut self, v: Option<&Value>, place: bool, out: &mut Gathered) {
        let Some(Value::Str(s)) = v else {
            return;
        };
        if place {
            self.pen.separate(out);
        }
        let fallback;
        let font = match self.font.as_ref() {
            Some(f) => f.as_ref(),
            None => {
                fallback = Font::fallback();
                &fallback
            }
        };
        let (text, advance) = font.decode(s, &mut out.unread);
        if out.text.len() < out.room {
            out.text.push_str(&text);
        } else {
            out.full |= !text.is_empty();
        }
        self.pen.x += advance / 1000.0 * self.pen.size;
        let (x, y) = self.pen.at();
        self.pen.last = Some((y, x));
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
        let resources = get(&d, b"Resources").cloned().or(self.resources.clone());
        let mut inner = Run {
            cache: &mut *self.cache,
            resources,
            font: None,
            pen: Pen::new(),
            depth: self.depth + 1,
        };
        let mut src = Source::new(vec![v]);
        let ran = inner.content(doc, &mut src, out);
        src.release(doc);
        ran?;
        // What follows the form starts apart from it.
        self.pen.last = None;
        out.space();
        Ok(())
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
