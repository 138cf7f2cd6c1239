//! Reading and checking a large import in slices, so the page never blocks on it: the driver calls
//! [`Prepare::step`] in a loop, yielding to the browser between calls, and passes in how long the
//! previous call took; this module decides how much each call does ([`Pace`]) and reports progress.
//!
//! A top-level JSON list (ChatGPT's, Claude.ai's and Open WebUI's exports) is split into its items'
//! byte ranges by a resumable scan that also bounds the nesting depth ([`ItemScan`]), then each item
//! is parsed and read into a conversation on its own, then each conversation is converted and
//! checked like a backup's records ([`CheckBuilder`]). Anything else (our backup, an object, JSON
//! Lines, a ZIP) and any file the sliced path finds a problem in goes through [`detect`] whole, so
//! the result and every error are exactly [`detect`]'s (property-tested).
//! Owns the stages, the slice sizes and the progress figures; never reads a clock (the driver
//! passes each step's time in). Must not import anything outside `crate::engine`.

use super::formats::{self, ItemReader};
use super::value::{LinesParse, Parsed, ValueParse};
use super::zip::{ImageReader, ImageStep, Unzip};
use super::{
    bundle, detect, Detected, ImportError, Imported, ImportedConversation, Skipped, Source,
};
use crate::engine::attach;
use crate::engine::backup::{self, BackupBuilder, CheckBuilder, CheckedImport, ImportLimits};
use crate::engine::model::{Attachment, AttachmentKind, Millis};
use serde_json::Value;
use std::collections::HashMap;
use std::ops::Range;

/// Which part of an import is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Phase {
    /// The file's bytes are being read.
    Reading,
    /// The content is being parsed, read and checked.
    Checking,
    /// The records are being written.
    Writing,
}

impl Phase {
    /// The word the progress bar shows.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Reading => "Reading",
            Phase::Checking => "Checking",
            Phase::Writing => "Writing",
        }
    }
    /// The name tests and styles read (`data-phase`).
    pub fn key(self) -> &'static str {
        match self {
            Phase::Reading => "reading",
            Phase::Checking => "checking",
            Phase::Writing => "writing",
        }
    }
}

/// How far an import is: `done` of `total` units of its phase (bytes while reading and checking,
/// records while writing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Progress {
    pub phase: Phase,
    pub done: u64,
    pub total: u64,
}

/// The main-thread time one slice aims at, in ms. The browser counts a task over 50 ms as long; a
/// loaded machine can run a slice two or three times slower than the last one predicted.
pub const SLICE_TARGET_MS: f64 = 8.0;

/// Sizes slices so each takes about [`SLICE_TARGET_MS`]: after each slice the driver reports how
/// many units it did and how long it took, and the next size follows the measured rate (growing
/// at most 2x a step, shrinking at once).
#[derive(Debug, Clone, PartialEq)]
pub struct Pace {
    size: usize,
    min: usize,
    max: usize,
    target_ms: f64,
}

impl Pace {
    /// Starts at `min` units a slice; never goes below `min` nor above `max`.
    pub fn new(min: usize, max: usize) -> Pace {
        Pace {
            size: min.max(1),
            min: min.max(1),
            max: max.max(min.max(1)),
            target_ms: SLICE_TARGET_MS,
        }
    }
    /// Units the next slice may do.
    pub fn size(&self) -> usize {
        self.size
    }
    /// A slice did `units` in `took_ms`.
    pub fn observe(&mut self, units: usize, took_ms: f64) {
        if units == 0 || !took_ms.is_finite() {
            return;
        }
        let rate = units as f64 / took_ms.max(0.05);
        let want = (rate * self.target_ms) as usize;
        self.size = want
            .min(self.size.saturating_mul(2))
            .clamp(self.min, self.max);
    }
}

/// Records a write slice starts with, and its bounds (the store queues them; the session
/// sizes the slices with [`Pace::write`]).
const WRITE_PACE: (usize, usize) = (100, 20_000);

/// The main-thread time one write slice aims at, in ms. Each slice waits for the storage to take
/// its first record, but by then the storage still has the slice before it to write, so the slices'
/// size hardly bears on the write's speed (the storage is the bottleneck): at 8 ms, 10k messages
/// wrote in ~1.08x the plain-JS floor with a longest task of 28 ms (load ~1). 16 ms was tried in
/// session 8 and could not be told apart from 8 ms at a load of 7-9; 8 ms keeps the known margin
/// under the 50 ms line.
pub const WRITE_TARGET_MS: f64 = 8.0;

/// Conversations an announcing slice starts with, and its bounds.
const ANNOUNCE_PACE: (usize, usize) = (20, 10_000);

/// Synced documents (or messages) a sync slice starts with, and its bounds: a document costs
/// more than an import's record (its JSON, a merge), and a first sync runs them by the thousand.
/// The cap keeps a slice short when the machine gets busier than the last slice measured (at a
/// load average of 7-10, slices of 128-256 records took 30-47 ms).
const SYNC_PACE: (usize, usize) = (16, 64);

impl Pace {
    /// The pace of an import's write, in records (conversations, then messages).
    pub fn write() -> Pace {
        Pace {
            target_ms: WRITE_TARGET_MS,
            ..Pace::new(WRITE_PACE.0, WRITE_PACE.1)
        }
    }
    /// The pace of sync's long loops: a page of merged documents written, local documents
    /// recorded for the push (the driver keeps one pace, so it starts each page at the last rate).
    pub fn sync() -> Pace {
        Pace::new(SYNC_PACE.0, SYNC_PACE.1)
    }
    /// The pace of announcing what an import wrote (one event per conversation: the sidebar and
    /// the other tabs follow each).
    pub fn announce() -> Pace {
        Pace::new(ANNOUNCE_PACE.0, ANNOUNCE_PACE.1)
    }
}

/// Bytes a scan slice starts with, and its bounds (the scan runs at ~100 MB/s natively).
const SCAN_PACE: (usize, usize) = (64 * 1024, 16 * 1024 * 1024);
/// Bytes of items a parse-and-read slice starts with, and its bounds.
const PARSE_PACE: (usize, usize) = (16 * 1024, 4 * 1024 * 1024);
/// Messages a check slice starts with, and its bounds.
const CHECK_PACE: (usize, usize) = (200, 100_000);
/// Messages of our backup a read-and-check slice starts with, and its bounds.
const BACKUP_PACE: (usize, usize) = (100, 100_000);
/// Bytes an unzip slice starts inflating, and its bounds.
const UNZIP_PACE: (usize, usize) = (64 * 1024, 16 * 1024 * 1024);

/// Where a top-level JSON list's items are: a resumable byte scan (strings and escapes honoured)
/// that also refuses nesting deeper than the limit, as [`detect`]'s depth check does. It only
/// finds where items are; an item that is not valid JSON is found when it is parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemScan {
    pos: usize,
    depth: usize,
    max_depth: usize,
    part: Part,
    /// Where the item being scanned began.
    start: Option<usize>,
    /// A `,` was seen and no item after it yet.
    after_comma: bool,
    items: Vec<Range<usize>>,
}

/// Which part of the text a scan is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Before the list's `[`.
    Open,
    /// Inside the list.
    Items,
    /// After its `]`: only whitespace may follow.
    Tail,
    /// Not a list, not well-formed, or too deep.
    Refused,
}

/// Where a scan stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanState {
    /// More bytes to scan.
    Scanning,
    /// The list was closed and only whitespace follows.
    Done,
    /// Not a list, not well-formed, or too deep: the file goes through [`detect`] whole.
    NotAList,
}

const fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl ItemScan {
    pub fn new(max_depth: usize) -> ItemScan {
        ItemScan {
            pos: 0,
            depth: 0,
            max_depth,
            part: Part::Open,
            start: None,
            after_comma: false,
            items: Vec::new(),
        }
    }

    /// Bytes scanned so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The items' byte ranges found so far (all of them once [`ScanState::Done`]).
    pub fn items(&self) -> &[Range<usize>] {
        &self.items
    }

    /// Takes the items' byte ranges.
    pub fn into_items(self) -> Vec<Range<usize>> {
        self.items
    }

    /// Scans about `budget` more bytes of `bytes` (the same bytes on every call).
    pub fn advance(&mut self, bytes: &[u8], budget: usize) -> ScanState {
        let stop = self.pos.saturating_add(budget.max(1)).min(bytes.len());
        while self.part != Part::Refused && self.pos < stop {
            self.byte(bytes);
        }
        match self.part {
            Part::Refused => ScanState::NotAList,
            _ if self.pos < bytes.len() => ScanState::Scanning,
            Part::Tail => ScanState::Done,
            // The text ended before or inside the list.
            _ => {
                self.part = Part::Refused;
                ScanState::NotAList
            }
        }
    }

    fn byte(&mut self, bytes: &[u8]) {
        let b = bytes[self.pos];
        match self.part {
            Part::Open | Part::Tail if is_ws(b) => self.pos += 1,
            Part::Open if b == b'[' => {
                self.pos += 1;
                self.depth = 1;
                self.part = Part::Items;
            }
            Part::Open | Part::Tail | Part::Refused => self.part = Part::Refused,
            Part::Items => self.in_list(bytes, b),
        }
    }

    fn in_list(&mut self, bytes: &[u8], b: u8) {
        if self.depth == 1 && self.start.is_none() {
            if is_ws(b) {
                self.pos += 1;
                return;
            }
            match b {
                // `[]`, or the end after an item (never right after a comma).
                b']' if !self.after_comma => {
                    self.pos += 1;
                    self.part = Part::Tail;
                    return;
                }
                b',' | b']' | b'}' => {
                    self.part = Part::Refused;
                    return;
                }
                _ if !self.items.is_empty() && !self.after_comma => {
                    // Two items without a comma between them.
                    self.part = Part::Refused;
                    return;
                }
                _ => {
                    self.start = Some(self.pos);
                    self.after_comma = false;
                }
            }
        }
        match b {
            b'"' => self.pos = crate::engine::json_text::string_end(bytes, self.pos + 1),
            b'{' | b'[' => {
                self.pos += 1;
                self.depth += 1;
                if self.depth > self.max_depth {
                    self.part = Part::Refused;
                }
            }
            b'}' | b']' if self.depth > 1 => {
                self.pos += 1;
                self.depth -= 1;
            }
            b']' => {
                self.end_item(bytes);
                self.pos += 1;
                self.depth = 0;
                self.part = Part::Tail;
            }
            b'}' => self.part = Part::Refused,
            b',' if self.depth == 1 => {
                self.end_item(bytes);
                self.pos += 1;
                self.after_comma = true;
            }
            _ => self.pos += 1,
        }
    }

    /// The item that began at `start` ends before `self.pos` (trailing whitespace left out).
    fn end_item(&mut self, bytes: &[u8]) {
        if let Some(start) = self.start.take() {
            let mut end = self.pos;
            while end > start && is_ws(bytes[end - 1]) {
                end -= 1;
            }
            self.items.push(start..end);
        }
    }
}

/// What a file turned out to be, read and checked, ready to be planned against what is stored.
#[derive(Debug, Clone, PartialEq)]
pub enum Prepared {
    /// Our own backup.
    Backup(CheckedImport),
    /// Another app's export: what was read (for the preview) and its records, checked.
    Foreign {
        imported: Imported,
        checked: CheckedImport,
    },
}

/// Progress units of the checking phase: unzipping or scanning is the first tenth, parsing and
/// reading the next seven, checking the conversations the last two (never going back: a ZIP's
/// files each run the stages after the unzip).
const CHECK_UNITS: u64 = 1000;

/// Reads and checks one file in slices: call [`Prepare::step`] until it returns the result.
///
/// Every route is sliced: a ZIP is inflated a slice at a time ([`zip::Unzip`]); then each text
/// (the file, or each file the ZIP holds) is a list export (scanned into items, each read on its
/// own), our backup (parsed, then each conversation read and checked on its own), another JSON
/// export (parsed a slice at a time, then read by its format's reader) or JSON Lines (a slice of
/// lines at a time). Whatever the sliced route refuses goes through [`detect`] whole, so the
/// answer, an error included, is always [`prepare_whole`]'s.
#[derive(Debug)]
pub struct Prepare {
    bytes: Vec<u8>,
    /// The files a ZIP held (name, contents), once inflated; empty for a file that is its text.
    files: Vec<(String, Vec<u8>)>,
    zipped: bool,
    /// Which of `files` is being read.
    current: usize,
    /// What the ZIP's files read so far gave (merged as [`detect`] merges them).
    merged: Option<Imported>,
    /// Where the current text starts (after a byte-order mark).
    base: usize,
    limits: ImportLimits,
    now: Millis,
    stage: Stage,
    pace: Pace,
    /// Units the last step did (for [`Pace::observe`]).
    last_units: usize,
    /// The progress shown last (it never goes back).
    shown: u64,
    /// The file went through [`detect`] whole (one long task on a large file).
    read_whole: bool,
}

#[derive(Debug)]
enum Stage {
    Start,
    Unzip(Box<Unzip>),
    Scan(ItemScan),
    Read(Box<Reading>),
    /// A JSON text parsed into a value; `true`: our backup (parsed strictly).
    Parse(Box<ValueParse>, bool),
    Lines(Box<LinesParse>),
    Backup(Box<BackupReading>),
    /// A ZIP's images, read one at a time and handed to the driver.
    Images(Box<Imaging>),
    Check(Box<Checking>),
    /// The whole file at once, through [`detect`].
    Whole,
    Finished,
}

#[derive(Debug, Clone)]
struct Reading {
    items: Vec<Range<usize>>,
    bytes_total: usize,
    next: usize,
    bytes_done: usize,
    reader: Option<(Source, ItemReader)>,
    conversations: Vec<ImportedConversation>,
    skipped: Skipped,
}

#[derive(Debug, Clone)]
struct BackupReading {
    builder: BackupBuilder,
    items: std::vec::IntoIter<Value>,
    total: usize,
    done: usize,
}

#[derive(Debug, Clone)]
struct Checking {
    imported: Imported,
    next: usize,
    builder: CheckBuilder,
    messages_total: usize,
    messages_done: usize,
}

/// The images of an export's ZIP being read: each file an image points to, read a slice at a
/// time, checked by its bytes, handed to the driver ([`Prepare::take_image`]) to be resized,
/// hashed and kept, and answered ([`Prepare::give_image`]) before the next step.
#[derive(Debug)]
struct Imaging {
    imported: Imported,
    reader: ImageReader,
    /// An image read and checked, for the driver to take.
    out: Option<FoundImage>,
    /// The id of the image the driver took and has not answered yet.
    waiting: Option<String>,
    /// The images stored, by file id.
    found: HashMap<String, Attachment>,
}

/// An image file found in an export's ZIP, its type told by its bytes, for the driver to resize,
/// hash and keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundImage {
    /// The file id the messages point to it by.
    pub id: String,
    pub mime: &'static str,
    pub bytes: Vec<u8>,
}

/// What the driver made of a [`FoundImage`]: the image as stored (resized as a composer's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredImage {
    pub hash: String,
    pub mime: String,
    pub size: u64,
    pub width: u32,
    pub height: u32,
}

/// How a text is read (see [`Prepare::begin_text`]).
enum Route {
    Whole,
    Backup,
    List,
    Value,
}

/// What a slice of reading one text led to.
enum TextStep {
    /// More to do (the stage is set).
    More,
    /// The text was read.
    Read(Detected),
    /// The sliced route cannot say: read the whole file.
    Whole,
}

impl Prepare {
    /// `now` stands in for missing times, as in [`super::to_checked`].
    pub fn new(bytes: Vec<u8>, now: Millis, limits: &ImportLimits) -> Prepare {
        Prepare {
            bytes,
            files: Vec::new(),
            zipped: false,
            current: 0,
            merged: None,
            base: 0,
            limits: limits.clone(),
            now,
            stage: Stage::Start,
            pace: Pace::new(SCAN_PACE.0, SCAN_PACE.1),
            last_units: 0,
            shown: 0,
            read_whole: false,
        }
    }

    /// Whether the file was read in slices up to its check (else through [`detect`] whole: a
    /// file the sliced route refused, an error included).
    pub fn sliced(&self) -> bool {
        !self.read_whole
    }

    /// The text being read: the file, or the ZIP's current file.
    fn text(&self) -> &[u8] {
        match self.files.get(self.current) {
            Some((_, t)) if self.zipped => t,
            _ => &self.bytes,
        }
    }

    /// How far the checking phase is.
    pub fn progress(&mut self) -> Progress {
        let part = |from: u64, width: u64, done: usize, total: usize| {
            from + (width as f64 * done as f64 / total.max(1) as f64) as u64
        };
        let len = self.text().len().saturating_sub(self.base);
        let done = match &self.stage {
            Stage::Start | Stage::Whole => 0,
            Stage::Unzip(u) => {
                let (done, total) = u.progress();
                part(0, 100, done, total)
            }
            Stage::Scan(s) => part(0, 100, s.pos(), len),
            Stage::Read(r) => part(100, 700, r.bytes_done, r.bytes_total),
            Stage::Parse(p, _) => part(100, 700, p.pos() - self.base, len),
            Stage::Lines(p) => part(100, 700, p.pos() - self.base, len),
            Stage::Backup(b) => part(800, 200, b.done, b.total),
            Stage::Images(im) => {
                let (done, total) = im.reader.progress();
                part(800, 100, done, total)
            }
            Stage::Check(c) => part(800, 200, c.messages_done, c.messages_total),
            Stage::Finished => CHECK_UNITS,
        };
        self.shown = self.shown.max(done.min(CHECK_UNITS));
        Progress {
            phase: Phase::Checking,
            done: self.shown,
            total: CHECK_UNITS,
        }
    }

    /// A new stage starts its own pace; the last step's rate was another stage's.
    fn stage_pace(&mut self, (min, max): (usize, usize)) {
        self.pace = Pace::new(min, max);
        self.last_units = 0;
    }

    /// Does one slice of the work; `last_ms` is how long the previous call took (`None` for the
    /// first). Returns the result once there is one; an error ends it (nothing was written).
    pub fn step(&mut self, last_ms: Option<f64>) -> Result<Option<Prepared>, ImportError> {
        if let Some(ms) = last_ms {
            self.pace.observe(self.last_units, ms);
        }
        self.last_units = 0;
        let budget = self.pace.size();
        let step = match std::mem::replace(&mut self.stage, Stage::Finished) {
            Stage::Start => {
                self.start();
                TextStep::More
            }
            Stage::Unzip(u) => self.unzip(u, budget),
            Stage::Scan(scan) => self.scan(scan, budget),
            Stage::Read(r) => self.read(r, budget),
            Stage::Parse(p, backup) => self.parse(p, backup, budget),
            Stage::Lines(p) => self.lines(p, budget),
            Stage::Backup(b) => self.backup(b, budget),
            Stage::Images(im) => {
                self.images(im, budget);
                TextStep::More
            }
            Stage::Check(c) => return self.check(c, budget),
            Stage::Whole => return self.whole(),
            Stage::Finished => TextStep::More,
        };
        match step {
            TextStep::More => Ok(None),
            TextStep::Read(d) => self.text_read(d),
            TextStep::Whole => self.whole(),
        }
    }

    fn start(&mut self) {
        if self.bytes.len() > self.limits.max_bytes {
            self.stage = Stage::Whole;
        } else if super::zip::is_zip(&self.bytes) {
            self.stage = match Unzip::new(&self.bytes, self.limits.max_bytes) {
                Ok(u) => Stage::Unzip(Box::new(u)),
                Err(_) => Stage::Whole,
            };
            self.stage_pace(UNZIP_PACE);
        } else {
            self.begin_text();
        }
    }

    fn unzip(&mut self, mut u: Box<Unzip>, budget: usize) -> TextStep {
        let (before, _) = u.progress();
        match u.step(&self.bytes, budget) {
            Ok(None) => {
                self.last_units = budget;
                self.stage = Stage::Unzip(u);
                TextStep::More
            }
            Ok(Some(files)) => {
                self.last_units = u.progress().0 - before;
                self.files = files;
                self.zipped = true;
                self.current = 0;
                self.begin_text();
                TextStep::More
            }
            Err(_) => TextStep::Whole,
        }
    }

    /// Chooses the route of the current text, as [`detect`] would: our backup, a list, or any
    /// other JSON text (then JSON Lines if it is not one).
    fn begin_text(&mut self) {
        let Ok(text) = std::str::from_utf8(self.text()) else {
            self.stage = Stage::Whole;
            return;
        };
        let base = if text.starts_with('\u{FEFF}') { 3 } else { 0 };
        let trimmed = text[base..].trim_start();
        let route = if trimmed.trim_end().is_empty() {
            Route::Whole
        } else if trimmed.starts_with('{') && super::looks_like_backup(trimmed) {
            Route::Backup
        } else if trimmed.starts_with('[') {
            Route::List
        } else {
            Route::Value
        };
        self.base = base;
        let depth = self.limits.max_depth;
        self.stage = match route {
            Route::Whole => Stage::Whole,
            Route::Backup => {
                self.stage_pace(PARSE_PACE);
                Stage::Parse(Box::new(ValueParse::new(base, depth, true)), true)
            }
            Route::List => {
                self.stage_pace(SCAN_PACE);
                Stage::Scan(ItemScan::new(depth))
            }
            Route::Value => self.parse_stage(),
        };
    }

    /// The current text parsed as one JSON value.
    fn parse_stage(&mut self) -> Stage {
        self.stage_pace(PARSE_PACE);
        Stage::Parse(
            Box::new(ValueParse::new(self.base, self.limits.max_depth, false)),
            false,
        )
    }

    fn scan(&mut self, mut scan: ItemScan, budget: usize) -> TextStep {
        let from = scan.pos();
        let state = scan.advance(&self.text()[self.base..], budget);
        self.last_units = scan.pos() - from;
        match state {
            ScanState::Scanning => self.stage = Stage::Scan(scan),
            ScanState::NotAList => self.stage = self.parse_stage(),
            ScanState::Done => self.read_stage(scan.into_items()),
        }
        TextStep::More
    }

    fn read_stage(&mut self, items: Vec<Range<usize>>) {
        if items.is_empty() {
            self.stage = self.parse_stage();
            return;
        }
        self.stage_pace(PARSE_PACE);
        self.stage = Stage::Read(Box::new(Reading {
            bytes_total: items.iter().map(|r| r.len()).sum(),
            items,
            next: 0,
            bytes_done: 0,
            reader: None,
            conversations: Vec::new(),
            skipped: Skipped::default(),
        }));
    }

    /// Parses and reads items worth about `budget` bytes. A list whose items are not read one at a
    /// time is parsed as one value; an item that is not JSON or that its reader refuses sends the
    /// file through [`detect`], so the error is exactly the one the whole file gets.
    fn read(&mut self, mut r: Box<Reading>, budget: usize) -> TextStep {
        let mut did = 0;
        while r.next < r.items.len() && did < budget {
            let range = r.items[r.next].clone();
            let i = r.next;
            r.next += 1;
            did += range.len();
            let text = &self.text()[self.base + range.start..self.base + range.end];
            let Ok(item) = serde_json::from_slice::<Value>(text) else {
                return TextStep::Whole;
            };
            if item.is_null() {
                continue;
            }
            if r.reader.is_none() {
                r.reader = formats::item_reader(&item);
            }
            let Some((_, read)) = r.reader else {
                // Read whole by its format (llama.cpp's list): parsed a slice at a time.
                self.stage = self.parse_stage();
                return TextStep::More;
            };
            match read(i, &item, &mut r.skipped) {
                Ok(c) => r.conversations.push(c),
                Err(_) => return TextStep::Whole,
            }
        }
        r.bytes_done += did;
        self.last_units = did;
        if r.next < r.items.len() {
            self.stage = Stage::Read(r);
            return TextStep::More;
        }
        let Some((source, _)) = r.reader else {
            return TextStep::Whole;
        };
        match formats::finish(source, r.conversations, r.skipped, false) {
            Ok(imported) => TextStep::Read(Detected::Foreign(imported)),
            Err(_) => TextStep::Whole,
        }
    }

    /// Parses about `budget` bytes of a JSON text; once it is parsed, our backup is read a
    /// conversation at a time, any other export by its format's reader; a text that is not one
    /// JSON value may be JSON Lines.
    fn parse(&mut self, mut p: Box<ValueParse>, backup: bool, budget: usize) -> TextStep {
        let from = p.pos();
        let parsed = p.advance(self.text(), budget);
        self.last_units = p.pos() - from;
        match parsed {
            Parsed::More => {
                self.stage = Stage::Parse(p, backup);
                TextStep::More
            }
            Parsed::Refused if backup => TextStep::Whole,
            Parsed::Refused => {
                self.stage_pace(PARSE_PACE);
                self.stage =
                    Stage::Lines(Box::new(LinesParse::new(self.base, self.limits.max_depth)));
                TextStep::More
            }
            Parsed::Done(v) if backup => match BackupBuilder::from_value(v, &self.limits) {
                Ok((builder, items)) => {
                    self.stage_pace(BACKUP_PACE);
                    self.stage = Stage::Backup(Box::new(BackupReading {
                        builder,
                        total: items.len(),
                        items: items.into_iter(),
                        done: 0,
                    }));
                    TextStep::More
                }
                Err(_) => TextStep::Whole,
            },
            // A backup whose header is not where [`detect`] looks first: read whole.
            Parsed::Done(v) if v.get("format").and_then(Value::as_str) == Some(backup::FORMAT) => {
                TextStep::Whole
            }
            Parsed::Done(v) => match formats::read(v) {
                Ok(imported) => TextStep::Read(Detected::Foreign(imported)),
                Err(_) => TextStep::Whole,
            },
        }
    }

    fn lines(&mut self, mut p: Box<LinesParse>, budget: usize) -> TextStep {
        let from = p.pos();
        let parsed = p.advance(self.text(), budget);
        self.last_units = p.pos() - from;
        match parsed {
            Parsed::More => {
                self.stage = Stage::Lines(p);
                TextStep::More
            }
            Parsed::Done(lines) => match formats::jsonl(lines) {
                Ok(imported) => TextStep::Read(Detected::Foreign(imported)),
                Err(_) => TextStep::Whole,
            },
            Parsed::Refused => TextStep::Whole,
        }
    }

    /// Reads and checks about `budget` messages of our backup's conversations.
    fn backup(&mut self, mut b: Box<BackupReading>, budget: usize) -> TextStep {
        let mut did = 0;
        while did < budget {
            let Some(item) = b.items.next() else {
                return match b.builder.finish() {
                    Ok(checked) => TextStep::Read(Detected::Backup(checked)),
                    Err(_) => TextStep::Whole,
                };
            };
            did += 1 + item
                .get("messages")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if b.builder.push(item).is_err() {
                return TextStep::Whole;
            }
            b.done += 1;
        }
        self.last_units = did;
        self.stage = Stage::Backup(b);
        TextStep::More
    }

    /// A text was read: the answer for a file, or (a ZIP) merged as [`detect`] merges its files.
    fn text_read(&mut self, d: Detected) -> Result<Option<Prepared>, ImportError> {
        if !self.zipped {
            return Ok(self.detected(d));
        }
        let single = self.files.len() == 1;
        match d {
            Detected::Backup(b) if single => return Ok(Some(Prepared::Backup(b))),
            Detected::Backup(_) => {}
            Detected::Foreign(i) => match &mut self.merged {
                None => self.merged = Some(i),
                Some(m) if m.source == i.source => {
                    m.conversations.extend(i.conversations);
                    m.skipped.add(&i.skipped);
                    m.settings_ignored |= i.settings_ignored;
                }
                Some(_) => {}
            },
        }
        self.current += 1;
        if self.current < self.files.len() {
            self.begin_text();
            return Ok(None);
        }
        match self.merged.take() {
            Some(i) => Ok(self.detected(Detected::Foreign(i))),
            None => self.whole(),
        }
    }

    fn detected(&mut self, d: Detected) -> Option<Prepared> {
        match d {
            Detected::Backup(checked) => Some(Prepared::Backup(checked)),
            Detected::Foreign(imported) => {
                self.images_stage(imported);
                None
            }
        }
    }

    /// A ZIP's images come next when its messages point to files it holds; else the check.
    fn images_stage(&mut self, imported: Imported) {
        let mut ids: Vec<String> = imported
            .conversations
            .iter()
            .flat_map(|c| &c.messages)
            .flat_map(|m| m.images.iter().map(|i| i.id.clone()))
            .collect();
        ids.sort();
        ids.dedup();
        if ids.is_empty() || !super::zip::is_zip(&self.bytes) {
            return self.check_stage(imported);
        }
        let cap = usize::try_from(attach::MAX_IMAGE_BYTES).unwrap_or(usize::MAX);
        let reader = ImageReader::new(&self.bytes, &ids, cap, self.limits.max_bytes);
        if reader.found() == 0 {
            return self.check_stage(imported);
        }
        self.stage_pace(UNZIP_PACE);
        self.stage = Stage::Images(Box::new(Imaging {
            imported,
            reader,
            out: None,
            waiting: None,
            found: HashMap::new(),
        }));
    }

    /// Reads about `budget` bytes of the images; an image read whole ends the step, for the
    /// driver to take. One the driver left (not taken, or not answered) stays a placeholder.
    fn images(&mut self, mut im: Box<Imaging>, budget: usize) {
        im.out = None;
        im.waiting = None;
        let (before, _) = im.reader.progress();
        match im.reader.step(&self.bytes, budget) {
            ImageStep::More => {}
            ImageStep::Read(id, bytes) => {
                let sized = bytes.len() as u64 <= attach::MAX_IMAGE_BYTES;
                if let (Some(mime), true) = (attach::sniff_image(&bytes), sized) {
                    im.out = Some(FoundImage { id, mime, bytes });
                }
            }
            ImageStep::Done => {
                let Imaging {
                    mut imported,
                    found,
                    ..
                } = *im;
                attach_found(&mut imported, &found);
                return self.check_stage(imported);
            }
        }
        self.last_units = im.reader.progress().0 - before;
        self.stage = Stage::Images(im);
    }

    /// The image read by the last step, if any, for the driver to resize, hash and keep; answer
    /// it with [`Prepare::give_image`] before the next step.
    pub fn take_image(&mut self) -> Option<FoundImage> {
        let Stage::Images(im) = &mut self.stage else {
            return None;
        };
        let out = im.out.take()?;
        im.waiting = Some(out.id.clone());
        Some(out)
    }

    /// The driver's answer for the image it took: how it was stored, or `None` (it could not be
    /// decoded or stored: the messages keep a placeholder). An image whose stored form is not
    /// one a composer could have made (`attach::check`) stays a placeholder too.
    pub fn give_image(&mut self, id: &str, stored: Option<StoredImage>) {
        let Stage::Images(im) = &mut self.stage else {
            return;
        };
        if im.waiting.as_deref() != Some(id) {
            return;
        }
        im.waiting = None;
        let Some(s) = stored else {
            return;
        };
        let a = Attachment {
            kind: AttachmentKind::Image,
            name: id.to_string(),
            mime: s.mime,
            size: s.size,
            hash: s.hash,
            width: s.width,
            height: s.height,
            text: String::new(),
        };
        if attach::check(&a).is_ok() {
            im.found.insert(id.to_string(), a);
        }
    }

    fn check_stage(&mut self, imported: Imported) {
        self.stage_pace(CHECK_PACE);
        self.stage = Stage::Check(Box::new(Checking {
            messages_total: imported
                .conversations
                .iter()
                .map(|c| c.messages.len() + 1)
                .sum(),
            imported,
            next: 0,
            builder: CheckBuilder::new(self.now, &self.limits),
            messages_done: 0,
        }));
    }

    /// Converts and checks conversations worth about `budget` messages.
    fn check(
        &mut self,
        mut c: Box<Checking>,
        budget: usize,
    ) -> Result<Option<Prepared>, ImportError> {
        let mut did = 0;
        while c.next < c.imported.conversations.len() && did < budget {
            let conv = &c.imported.conversations[c.next];
            did += conv.messages.len() + 1;
            c.builder.push(&bundle(c.imported.source, conv, self.now))?;
            c.next += 1;
        }
        c.messages_done += did;
        self.last_units = did;
        if c.next < c.imported.conversations.len() {
            self.stage = Stage::Check(c);
            return Ok(None);
        }
        let Checking {
            imported, builder, ..
        } = *c;
        Ok(Some(Prepared::Foreign {
            imported,
            checked: builder.finish(),
        }))
    }

    /// The whole file at once: [`detect`], then the conversations checked in slices.
    fn whole(&mut self) -> Result<Option<Prepared>, ImportError> {
        self.read_whole = true;
        self.zipped = false;
        self.files = Vec::new();
        self.base = 0;
        match detect(&self.bytes, &self.limits)? {
            Detected::Backup(checked) => Ok(Some(Prepared::Backup(checked))),
            Detected::Foreign(imported) => {
                self.images_stage(imported);
                Ok(None)
            }
        }
    }
}

/// Each image of `imported` whose file was stored becomes its attachment, under the name the
/// message gave it.
fn attach_found(imported: &mut Imported, found: &HashMap<String, Attachment>) {
    for c in &mut imported.conversations {
        for m in &mut c.messages {
            for i in &mut m.images {
                i.attachment = found.get(&i.id).map(|a| Attachment {
                    name: attach::short_name(&i.name),
                    ..a.clone()
                });
            }
        }
    }
}

/// Runs [`Prepare`] to the end in one go (what the driver does in slices), with the smallest
/// slices: for tests, and for callers that do not need to yield.
pub fn prepare_all(
    bytes: Vec<u8>,
    now: Millis,
    limits: &ImportLimits,
) -> Result<Prepared, ImportError> {
    let mut p = Prepare::new(bytes, now, limits);
    loop {
        if let Some(done) = p.step(Some(1e9))? {
            return Ok(done);
        }
    }
}

/// The whole-file answer [`Prepare`] must equal: [`detect`], then [`super::to_checked`].
pub fn prepare_whole(
    bytes: &[u8],
    now: Millis,
    limits: &ImportLimits,
) -> Result<Prepared, ImportError> {
    Ok(match detect(bytes, limits)? {
        Detected::Backup(checked) => Prepared::Backup(checked),
        Detected::Foreign(imported) => Prepared::Foreign {
            checked: super::to_checked(&imported, now, limits)?,
            imported,
        },
    })
}
