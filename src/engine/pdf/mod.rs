//! The text of a PDF, for attaching it to a message as a named text file: the limits a PDF is held
//! to, the extraction a page at a time ([`Extraction`], so the shell can yield between pages), the
//! cleanup of the text (ligatures, spaces, blank lines), the cut at the attachment size with a
//! visible note, and the words of every refusal. The parser is behind split point `pdf`
//! (session/chat/attach.rs): a wasm chunk fetched the first time a PDF is attached.
//!
//! Why our own reader on `miniz_oxide` rather than a crate: `lopdf` (and `pdf-extract`, built on
//! it) was weighed, not built here: it is a general PDF library (editing, writing, encryption,
//! dates), far more code than reading text needs in a chunk users download, and its loading offers
//! no setting we found for the bounds a hostile file needs (bytes inflated, nesting, object count:
//! a decompression bomb, ten thousand nested arrays). The engine already has `miniz_oxide`, whose
//! inflate takes a limit. What this reads is what text extraction needs and no more: objects found by scanning for `N G obj` (no
//! cross-reference table to trust), object streams, `FlateDecode`, `ASCIIHexDecode` and `ASCII85Decode`, the page
//! tree, fonts' `ToUnicode` maps and simple encodings, and the text operators (`text.rs`).
//! Untrusted input: every limit is in [`Limits`], every failure a [`PdfError`], never a panic.
//! Must not import anything outside `crate::engine`.

pub mod doc;
pub mod lex;
pub mod text;

use crate::engine::attach::{human_bytes, short_name, MAX_FILE_BYTES};
use doc::{Doc, Page};
use text::{FontCache, Gathered};

/// What a PDF is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest file taken.
    pub max_bytes: u64,
    /// Most objects read (a long book has tens of thousands).
    pub max_objects: usize,
    /// Most bytes decoded from all its streams together, each time one is read (a decompression
    /// bomb, or a form drawn inside itself over and over, stops here).
    pub max_inflated: usize,
    /// Most pages read.
    pub max_pages: usize,
    /// Most bytes of text kept (the attachment's limit); the rest is cut with a note.
    pub max_text_bytes: usize,
    /// Most bytes the reader holds beyond the file itself, about: the values of its objects, the
    /// streams decoded at one time and the values read from them (a hundred-kilobyte file of
    /// arrays of zeros would otherwise take a gigabyte of the tab's memory, which WebAssembly
    /// never gives back). The fonts' maps have their own bound (`text.rs`).
    pub max_memory: usize,
}

/// The limits in force (README, "Chat").
pub const LIMITS: Limits = Limits {
    max_bytes: 20 * 1024 * 1024,
    max_objects: 200_000,
    max_inflated: 64 * 1024 * 1024,
    max_pages: 2_000,
    max_text_bytes: MAX_FILE_BYTES as usize,
    max_memory: 128 * 1024 * 1024,
};

/// The longest the shell reads pages before it lets the browser run (ms): a page is the unit, so a
/// long document never holds the tab for more than about one page past this.
pub const SLICE_MS: f64 = 8.0;

/// Why a PDF gives no text. Each reads after the file's name ([`PdfError::message`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdfError {
    #[error("is not a PDF that can be read (it does not start with %PDF-).")]
    NotPdf,
    #[error("is encrypted (protected by a password or against copying), so its text cannot be read. Save a copy without protection and attach that.")]
    Encrypted,
    #[error("holds more than {0} objects, more than a PDF attachment may; it was refused.")]
    TooManyObjects(usize),
    #[error("nests its contents deeper than a real document does (over {} levels); it was refused as damaged.", lex::MAX_DEPTH)]
    TooDeep,
    #[error("unpacks to more than {}, more than a PDF attachment may; it was refused.", human_bytes(*.0 as u64))]
    Bomb(usize),
    #[error("holds a list longer than a real document does (over {} entries); it was refused as damaged.", lex::MAX_WIDTH)]
    TooWide,
    #[error("needs more memory to read than a PDF attachment may ({}); it was refused.", human_bytes(LIMITS.max_memory as u64))]
    TooLarge,
    #[error("has no pages that could be read (the file may be damaged).")]
    NoPages,
    #[error("has no text layer (it is probably scanned pages or pictures), so there is no text to attach. Attach images of its pages instead, or paste its text.")]
    NoText,
    #[error("shows its text in fonts without a Unicode map, so its text cannot be read. Attach images of its pages instead, or paste its text.")]
    Unreadable,
}

impl PdfError {
    /// The whole sentence the user reads: “name” and why.
    pub fn message(&self, name: &str) -> String {
        format!("“{}” {self}", short_name(name))
    }
}

/// Whether a PDF of `size` bytes may be attached; the words of the refusal when not.
pub fn size_check(name: &str, size: u64) -> Result<(), String> {
    if size > LIMITS.max_bytes {
        return Err(format!(
            "“{}” is {}: PDFs up to {} can be attached.",
            short_name(name),
            human_bytes(size),
            human_bytes(LIMITS.max_bytes)
        ));
    }
    Ok(())
}

/// A PDF's text being read, a page per [`Extraction::step`].
pub struct Extraction {
    doc: Doc,
    pages: Vec<Page>,
    next: usize,
    fonts: FontCache,
    text: String,
    unread: usize,
    /// The page the text was cut in (1-based), when it was.
    cut_at: Option<usize>,
    limits: Limits,
}

impl Extraction {
    /// Reads the file's objects and page tree (refused: not a PDF, encrypted, over a limit).
    pub fn open(bytes: Vec<u8>, limits: Limits) -> Result<Extraction, PdfError> {
        let doc = Doc::open(bytes, limits)?;
        let pages = doc.pages();
        if pages.is_empty() {
            return Err(PdfError::NoPages);
        }
        Ok(Extraction {
            doc,
            pages,
            next: 0,
            fonts: FontCache::default(),
            text: String::new(),
            unread: 0,
            cut_at: None,
            limits,
        })
    }

    /// Pages read, and pages in all.
    pub fn progress(&self) -> (usize, usize) {
        (self.next, self.pages.len())
    }

    /// Reads the next page; false once every page is read (or the text reached its limit).
    pub fn step(&mut self) -> Result<bool, PdfError> {
        if self.next >= self.pages.len() || self.cut_at.is_some() {
            return Ok(false);
        }
        let page = self.pages[self.next].clone();
        self.next += 1;
        // A page's raw text, before it is tidied, may be twice its limit.
        let mut got = Gathered::within(self.limits.max_text_bytes.saturating_mul(2));
        text::page_text(
            &mut self.doc,
            &mut self.fonts,
            page.contents.as_ref(),
            page.resources,
            &mut got,
        )?;
        self.unread += got.unread;
        let page_text = clean(&got.text);
        if !page_text.is_empty() {
            if !self.text.is_empty() {
                self.text.push_str("\n\n");
            }
            self.text.push_str(&page_text);
        }
        let room = self.limits.max_text_bytes.saturating_sub(NOTE_ROOM);
        if got.full && self.text.len() <= room {
            self.cut_at = Some(self.next);
        } else if self.text.len() > room {
            let mut end = room;
            while !self.text.is_char_boundary(end) {
                end -= 1;
            }
            self.text.truncate(end);
            self.cut_at = Some(self.next);
        }
        Ok(self.next < self.pages.len() && self.cut_at.is_none())
    }

    /// The text read (every page stepped through), or why there is none.
    pub fn finish(self, name: &str) -> Result<String, PdfError> {
        if self.text.trim().is_empty() {
            return Err(if self.unread > 0 {
                PdfError::Unreadable
            } else {
                PdfError::NoText
            });
        }
        let mut text = self.text;
        if let Some(page) = self.cut_at {
            text.push_str(&format!(
                "\n\n[{} cut at {}: its text up to page {page} of {}]",
                short_name(name),
                human_bytes(self.limits.max_text_bytes as u64),
                self.pages.len()
            ));
        }
        Ok(text)
    }
}

/// Room kept under the text limit for the note that says where the text was cut.
const NOTE_ROOM: usize = 512;

/// A PDF's text in one go (tests, benchmarks; the app steps through [`Extraction`]).
pub fn extract(bytes: Vec<u8>, name: &str, limits: Limits) -> Result<String, PdfError> {
    let mut ex = Extraction::open(bytes, limits)?;
    while ex.step()? {}
    ex.finish(name)
}

/// A page's text tidied: ligatures spelled out, soft hyphens and control characters dropped, runs
/// of spaces made one, lines trimmed, at most one blank line in a row.
pub fn clean(raw: &str) -> String {
    let raw = raw.replace("\r\n", "\n");
    let mut spelled = String::with_capacity(raw.len());
    for c in raw.chars() {
        match c {
            'ﬀ' => spelled.push_str("ff"),
            'ﬁ' => spelled.push_str("fi"),
            'ﬂ' => spelled.push_str("fl"),
            'ﬃ' => spelled.push_str("ffi"),
            'ﬄ' => spelled.push_str("ffl"),
            '\u{ad}' | '\u{feff}' => {}
            '\r' => spelled.push('\n'),
            '\n' => spelled.push('\n'),
            c if c.is_whitespace() => spelled.push(' '),
            c if c.is_control() => {}
            c => spelled.push(c),
        }
    }
    let mut out = String::with_capacity(spelled.len());
    let mut blank = 0;
    for line in spelled.lines() {
        let words: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();
        if words.is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(&words.join(" "));
    }
    out
}
