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
use super::{
    bundle, detect, Detected, ImportError, Imported, ImportedConversation, Skipped, Source,
};
use crate::engine::backup::{CheckBuilder, CheckedImport, ImportLimits};
use crate::engine::model::Millis;
use serde_json::Value;
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
        Pace::new(WRITE_PACE.0, WRITE_PACE.1)
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

/// Progress units of the checking phase: the scan is the first tenth, reading items the next
/// seven, checking the conversations the last two.
const CHECK_UNITS: u64 = 1000;

/// Reads and checks one file in slices: call [`Prepare::step`] until it returns the result.
#[derive(Debug, Clone)]
pub struct Prepare {
    bytes: Vec<u8>,
    /// Where the text starts (after a byte-order mark).
    base: usize,
    limits: ImportLimits,
    now: Millis,
    stage: Stage,
    pace: Pace,
    /// Units the last step did (for [`Pace::observe`]).
    last_units: usize,
}

#[derive(Debug, Clone)]
enum Stage {
    Start,
    Scan(ItemScan),
    Read(Box<Reading>),
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
struct Checking {
    imported: Imported,
    next: usize,
    builder: CheckBuilder,
    messages_total: usize,
    messages_done: usize,
}

impl Prepare {
    /// `now` stands in for missing times, as in [`super::to_checked`].
    pub fn new(bytes: Vec<u8>, now: Millis, limits: &ImportLimits) -> Prepare {
        Prepare {
            bytes,
            base: 0,
            limits: limits.clone(),
            now,
            stage: Stage::Start,
            pace: Pace::new(SCAN_PACE.0, SCAN_PACE.1),
            last_units: 0,
        }
    }

    /// How far the checking phase is.
    pub fn progress(&self) -> Progress {
        let part = |from: u64, width: u64, done: usize, total: usize| {
            from + (width as f64 * done as f64 / total.max(1) as f64) as u64
        };
        let len = self.bytes.len() - self.base;
        let done = match &self.stage {
            Stage::Start | Stage::Whole => 0,
            Stage::Scan(s) => part(0, 100, s.pos(), len),
            Stage::Read(r) => part(100, 700, r.bytes_done, r.bytes_total),
            Stage::Check(c) => part(800, 200, c.messages_done, c.messages_total),
            Stage::Finished => CHECK_UNITS,
        };
        Progress {
            phase: Phase::Checking,
            done: done.min(CHECK_UNITS),
            total: CHECK_UNITS,
        }
    }

    /// Does one slice of the work; `last_ms` is how long the previous call took (`None` for the
    /// first). Returns the result once there is one; an error ends it (nothing was written).
    pub fn step(&mut self, last_ms: Option<f64>) -> Result<Option<Prepared>, ImportError> {
        if let Some(ms) = last_ms {
            self.pace.observe(self.last_units, ms);
        }
        self.last_units = 0;
        let budget = self.pace.size();
        match std::mem::replace(&mut self.stage, Stage::Finished) {
            Stage::Start => self.start(),
            Stage::Scan(mut scan) => {
                let from = scan.pos();
                let state = scan.advance(&self.bytes[self.base..], budget);
                self.last_units = scan.pos() - from;
                match state {
                    ScanState::Scanning => self.stage = Stage::Scan(scan),
                    ScanState::NotAList => self.stage = Stage::Whole,
                    ScanState::Done => self.read_stage(scan.into_items()),
                }
            }
            Stage::Read(r) => return self.read(r, budget),
            Stage::Check(c) => return self.check(c, budget),
            Stage::Whole => return self.whole(),
            Stage::Finished => {}
        }
        Ok(None)
    }

    fn start(&mut self) {
        let bytes = &self.bytes;
        let sliced = bytes.len() <= self.limits.max_bytes
            && !super::zip::is_zip(bytes)
            && std::str::from_utf8(bytes).is_ok();
        if !sliced {
            self.stage = Stage::Whole;
            return;
        }
        self.base = if bytes.starts_with("\u{FEFF}".as_bytes()) {
            3
        } else {
            0
        };
        let first = bytes[self.base..].iter().find(|b| !is_ws(**b));
        self.stage = if first == Some(&b'[') {
            Stage::Scan(ItemScan::new(self.limits.max_depth))
        } else {
            Stage::Whole
        };
    }

    fn read_stage(&mut self, items: Vec<Range<usize>>) {
        if items.is_empty() {
            self.stage = Stage::Whole;
            return;
        }
        // A new stage starts its own pace; the last step's rate was another stage's.
        self.pace = Pace::new(PARSE_PACE.0, PARSE_PACE.1);
        self.last_units = 0;
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

    /// Parses and reads items worth about `budget` bytes. Anything unexpected (an item that is not
    /// JSON, a source read whole, an item its reader refuses) sends the file through [`detect`],
    /// so the error is exactly the one the whole file gets.
    fn read(
        &mut self,
        mut r: Box<Reading>,
        budget: usize,
    ) -> Result<Option<Prepared>, ImportError> {
        let mut did = 0;
        while r.next < r.items.len() && did < budget {
            let range = r.items[r.next].clone();
            let i = r.next;
            r.next += 1;
            did += range.len();
            let text = &self.bytes[self.base + range.start..self.base + range.end];
            let Ok(item) = serde_json::from_slice::<Value>(text) else {
                return self.whole();
            };
            if item.is_null() {
                continue;
            }
            if r.reader.is_none() {
                r.reader = formats::item_reader(&item);
            }
            let Some((_, read)) = r.reader else {
                return self.whole();
            };
            match read(i, &item, &mut r.skipped) {
                Ok(c) => r.conversations.push(c),
                Err(_) => return self.whole(),
            }
        }
        r.bytes_done += did;
        self.last_units = did;
        if r.next < r.items.len() {
            self.stage = Stage::Read(r);
            return Ok(None);
        }
        let Some((source, _)) = r.reader else {
            return self.whole();
        };
        match formats::finish(source, r.conversations, r.skipped, false) {
            Ok(imported) => self.check_stage(imported),
            Err(_) => return self.whole(),
        }
        Ok(None)
    }

    fn check_stage(&mut self, imported: Imported) {
        self.pace = Pace::new(CHECK_PACE.0, CHECK_PACE.1);
        self.last_units = 0;
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
        match detect(&self.bytes, &self.limits)? {
            Detected::Backup(checked) => Ok(Some(Prepared::Backup(checked))),
            Detected::Foreign(imported) => {
                self.check_stage(imported);
                Ok(None)
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
