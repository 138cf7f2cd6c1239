//! Reading a ZIP archive in memory: the central directory, then the chosen entries, stored or
//! deflated, with their CRC-32 checked. ChatGPT and Claude.ai mail their export as a ZIP holding
//! `conversations.json`; llama.cpp's web UI zips one JSONL file per conversation.
//! Owns the choice of entries (`conversations.json` if present, else every `.json`/`.jsonl` file)
//! and the ZIP-bomb guard: the inflated total may not exceed the import's byte limit, whatever the
//! headers claim. Must not import anything outside `crate::engine`.
//!
//! Why not a ZIP crate: `zip` pulls in several compression back-ends and std::io plumbing we do not
//! need (and tens of KB of wasm); `rawzip` is a fine reader but we would still bring our own inflate.
//! Reading only the central directory and the local header offsets is ~150 lines; inflation is
//! `miniz_oxide` (pure Rust, no_std-capable, the back-end `flate2` itself uses), whose
//! `decompress_to_vec_with_limit` stops at the limit instead of allocating what a bomb asks for. No
//! start-up cost: nothing runs until a ZIP is chosen. ZIP64, encryption and methods other than
//! stored/deflate get a clear error.

use super::ImportError;

const LOCAL: u32 = 0x0403_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const END: u32 = 0x0605_4b50;
/// Most entries read from a directory (a ChatGPT export with images has a few thousand).
const MAX_ENTRIES: usize = 100_000;
/// Most JSON files read from one archive.
const MAX_FILES: usize = 10_000;

/// Files that come with ChatGPT's and Claude's exports but hold no conversations.
const NOT_CONVERSATIONS: &[&str] = &[
    "user.json",
    "users.json",
    "projects.json",
    "message_feedback.json",
    "shared_conversations.json",
    "model_comparisons.json",
    "group_chats.json",
    "memories.json",
];

/// True if the bytes start like a ZIP archive (a local file header, or an empty archive).
pub fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06")
}

fn err(detail: impl Into<String>) -> ImportError {
    ImportError::Zip {
        detail: detail.into(),
    }
}

// Offsets come from the file: every sum is checked (usize is 32 bits in wasm).
fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// One central-directory entry.
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    flags: u16,
    method: u16,
    crc: u32,
    compressed: usize,
    size: usize,
    local_offset: usize,
}

/// The entries worth reading, as (name, contents). `max_total` bounds the inflated bytes.
pub fn read_candidates(
    bytes: &[u8],
    max_total: usize,
) -> Result<Vec<(String, Vec<u8>)>, ImportError> {
    let wanted = wanted(directory(bytes)?)?;
    let mut budget = max_total;
    let mut out = Vec::with_capacity(wanted.len());
    for e in &wanted {
        let data = extract(bytes, e, budget, max_total)?;
        budget -= data.len();
        out.push((e.name.clone(), data));
    }
    Ok(out)
}

/// The entries to read: `conversations.json` if there is one, else every `.json`/`.jsonl` file
/// that is not known to hold something else.
fn wanted(entries: Vec<Entry>) -> Result<Vec<Entry>, ImportError> {
    let base = |n: &str| n.rsplit('/').next().unwrap_or(n).to_ascii_lowercase();
    let wanted: Vec<Entry> = match entries
        .iter()
        .find(|e| base(&e.name) == "conversations.json")
    {
        Some(e) => vec![e.clone()],
        None => entries
            .into_iter()
            .filter(|e| {
                let b = base(&e.name);
                !e.name.ends_with('/')
                    && !e.name.starts_with("__MACOSX/")
                    && !b.starts_with("._")
                    && (b.ends_with(".json") || b.ends_with(".jsonl"))
                    && !NOT_CONVERSATIONS.contains(&b.as_str())
            })
            .take(MAX_FILES)
            .collect(),
    };
    if wanted.is_empty() {
        return Err(ImportError::ZipHasNoExport);
    }
    Ok(wanted)
}

/// One file of an archive: its name and contents.
pub type Unzipped = (String, Vec<u8>);

/// [`read_candidates`] a slice at a time: each [`Unzip::step`] inflates about as many bytes as it
/// is given (the CRC-32 of each entry follows as it grows). It only has to be right for an archive
/// [`read_candidates`] reads: at any problem it stops with an error, and the caller reads the file
/// whole for the exact one.
#[derive(Debug)]
pub struct Unzip {
    wanted: Vec<Entry>,
    next: usize,
    budget: usize,
    max_total: usize,
    current: Option<Inflating>,
    out: Vec<Unzipped>,
    compressed_total: usize,
    compressed_done: usize,
}

/// The entry being inflated.
struct Inflating {
    data: std::ops::Range<usize>,
    consumed: usize,
    out: Vec<u8>,
    crc: u32,
    /// `None`: a stored entry, copied.
    state: Option<Box<miniz_oxide::inflate::stream::InflateState>>,
}

impl std::fmt::Debug for Inflating {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inflating")
            .field("data", &self.data)
            .field("consumed", &self.consumed)
            .field("out", &self.out.len())
            .finish()
    }
}

impl Unzip {
    /// Reads the directory and chooses the entries; nothing is inflated yet.
    pub fn new(bytes: &[u8], max_total: usize) -> Result<Unzip, ImportError> {
        let wanted = wanted(directory(bytes)?)?;
        Ok(Unzip {
            compressed_total: wanted.iter().map(|e| e.compressed).sum(),
            wanted,
            next: 0,
            budget: max_total,
            max_total,
            current: None,
            out: Vec::new(),
            compressed_done: 0,
        })
    }

    /// Compressed bytes read so far, of the total.
    pub fn progress(&self) -> (usize, usize) {
        let current = self.current.as_ref().map_or(0, |c| c.consumed);
        (self.compressed_done + current, self.compressed_total)
    }

    /// Inflates about `units` more bytes; the entries (name, contents) once all are read.
    pub fn step(
        &mut self,
        bytes: &[u8],
        units: usize,
    ) -> Result<Option<Vec<Unzipped>>, ImportError> {
        let mut left = units.max(1);
        while left > 0 {
            let Some(cur) = self.current.as_mut() else {
                let Some(e) = self.wanted.get(self.next) else {
                    return Ok(Some(std::mem::take(&mut self.out)));
                };
                self.current = Some(self.open(bytes, e)?);
                continue;
            };
            let (did, ended) = inflate_some(bytes, cur, left, self.budget, self.max_total)?;
            left = left.saturating_sub(did.max(1));
            if ended {
                self.end_entry()?;
            }
        }
        Ok(None)
    }

    fn open(&self, bytes: &[u8], e: &Entry) -> Result<Inflating, ImportError> {
        let data = entry_data(bytes, e, self.budget, self.max_total)?;
        let state = match e.method {
            0 => None,
            _ => Some(miniz_oxide::inflate::stream::InflateState::new_boxed(
                miniz_oxide::DataFormat::Raw,
            )),
        };
        Ok(Inflating {
            data,
            consumed: 0,
            out: Vec::new(),
            crc: !0,
            state,
        })
    }

    fn end_entry(&mut self) -> Result<(), ImportError> {
        let Some(cur) = self.current.take() else {
            return Ok(());
        };
        let e = &self.wanted[self.next];
        if !cur.crc != e.crc {
            return Err(err("an entry fails its checksum"));
        }
        self.budget -= cur.out.len();
        self.compressed_done += cur.data.len();
        self.out.push((e.name.clone(), cur.out));
        self.next += 1;
        Ok(())
    }
}

/// Inflates (or copies) up to about `units` bytes of the entry; (bytes out, whether it ended).
fn inflate_some(
    bytes: &[u8],
    cur: &mut Inflating,
    units: usize,
    budget: usize,
    max_total: usize,
) -> Result<(usize, bool), ImportError> {
    let data = &bytes[cur.data.clone()];
    let from = cur.out.len();
    let Some(state) = cur.state.as_mut() else {
        let n = units.min(data.len() - cur.consumed);
        cur.out
            .extend_from_slice(&data[cur.consumed..cur.consumed + n]);
        cur.consumed += n;
        if cur.out.len() > budget {
            return Err(ImportError::ZipTooLarge { limit: max_total });
        }
        cur.crc = crc_update(cur.crc, &cur.out[from..]);
        return Ok((n, cur.consumed == data.len()));
    };
    // One byte more than the budget allows, so a bomb is seen as one.
    let room = units
        .min(budget.saturating_add(1).saturating_sub(from))
        .max(1);
    cur.out.resize(from + room, 0);
    let r = miniz_oxide::inflate::stream::inflate(
        state,
        &data[cur.consumed..],
        &mut cur.out[from..],
        miniz_oxide::MZFlush::None,
    );
    cur.consumed += r.bytes_consumed;
    cur.out.truncate(from + r.bytes_written);
    if cur.out.len() > budget {
        return Err(ImportError::ZipTooLarge { limit: max_total });
    }
    cur.crc = crc_update(cur.crc, &cur.out[from..]);
    match r.status {
        Ok(miniz_oxide::MZStatus::StreamEnd) => Ok((r.bytes_written, true)),
        Ok(_) if r.bytes_written > 0 || r.bytes_consumed > 0 => Ok((r.bytes_written, false)),
        _ => Err(err("an entry cannot be decompressed")),
    }
}

/// Every entry of the central directory.
fn directory(b: &[u8]) -> Result<Vec<Entry>, ImportError> {
    // The end record is in the last 22 + 65535 (comment) bytes; search backwards.
    let min = b.len().saturating_sub(22 + 0xffff);
    let end = (min..=b.len().saturating_sub(22))
        .rev()
        .find(|&i| u32_at(b, i) == Some(END))
        .ok_or_else(|| err("its end record is missing (the file is cut off or not a ZIP)"))?;
    let count = usize::from(u16_at(b, end + 10).unwrap_or(0));
    let cd_size = u32_at(b, end + 12).unwrap_or(0);
    let cd_offset = u32_at(b, end + 16).unwrap_or(0);
    if count == 0xffff || cd_size == u32::MAX || cd_offset == u32::MAX {
        return Err(err("it is a ZIP64 archive, which Memoire does not read; zip the export again without ZIP64"));
    }
    let mut at = cd_offset as usize;
    let mut entries = Vec::with_capacity(count.min(MAX_ENTRIES));
    for _ in 0..count.min(MAX_ENTRIES) {
        if u32_at(b, at) != Some(CENTRAL) {
            return Err(err("its central directory is damaged"));
        }
        let field = |off: usize| {
            u16_at(b, at.saturating_add(off)).ok_or_else(|| err("its central directory is cut off"))
        };
        let word = |off: usize| {
            u32_at(b, at.saturating_add(off)).ok_or_else(|| err("its central directory is cut off"))
        };
        let flags = field(8)?;
        let method = field(10)?;
        let crc = word(16)?;
        let compressed = word(20)?;
        let size = word(24)?;
        let name_len = usize::from(field(28)?);
        let extra_len = usize::from(field(30)?);
        let comment_len = usize::from(field(32)?);
        let local_offset = word(42)?;
        if compressed == u32::MAX || size == u32::MAX || local_offset == u32::MAX {
            return Err(err("it uses ZIP64 entries, which Memoire does not read"));
        }
        let name_start = at.saturating_add(46);
        let name_bytes = b
            .get(name_start..name_start.saturating_add(name_len))
            .ok_or_else(|| err("its central directory is cut off"))?;
        entries.push(Entry {
            name: String::from_utf8_lossy(name_bytes).into_owned(),
            flags,
            method,
            crc,
            compressed: compressed as usize,
            size: size as usize,
            local_offset: local_offset as usize,
        });
        at = name_start.saturating_add(name_len + extra_len + comment_len);
    }
    Ok(entries)
}

/// Where one entry's stored bytes are, after the checks that come before inflating it.
fn entry_data(
    b: &[u8],
    e: &Entry,
    budget: usize,
    max_total: usize,
) -> Result<std::ops::Range<usize>, ImportError> {
    let name = crate::engine::format::clip(&e.name, 80);
    if e.flags & 1 != 0 {
        return Err(err(format!("{name} is encrypted")));
    }
    if e.size > budget {
        return Err(ImportError::ZipTooLarge { limit: max_total });
    }
    let at = e.local_offset;
    if u32_at(b, at) != Some(LOCAL) {
        return Err(err(format!("the entry {name} is damaged")));
    }
    let name_len = usize::from(u16_at(b, at.saturating_add(26)).unwrap_or(0));
    let extra_len = usize::from(u16_at(b, at.saturating_add(28)).unwrap_or(0));
    let start = at.saturating_add(30 + name_len + extra_len);
    let range = start
        .checked_add(e.compressed)
        .filter(|&end| end <= b.len())
        .map(|end| start..end)
        .ok_or_else(|| err(format!("the entry {name} is cut off")))?;
    match e.method {
        0 | 8 => Ok(range),
        m => Err(err(format!(
            "the entry {name} uses compression method {m}; only stored and deflate are read"
        ))),
    }
}

/// The contents of one entry, inflated within `budget` bytes.
fn extract(b: &[u8], e: &Entry, budget: usize, max_total: usize) -> Result<Vec<u8>, ImportError> {
    let name = crate::engine::format::clip(&e.name, 80);
    let data = &b[entry_data(b, e, budget, max_total)?];
    let out = match e.method {
        0 => data.to_vec(),
        _ => miniz_oxide::inflate::decompress_to_vec_with_limit(data, budget).map_err(|f| {
            if matches!(f.status, miniz_oxide::inflate::TINFLStatus::HasMoreOutput) {
                ImportError::ZipTooLarge { limit: max_total }
            } else {
                err(format!(
                    "the entry {name} cannot be decompressed (it is damaged)"
                ))
            }
        })?,
    };
    if out.len() > budget {
        return Err(ImportError::ZipTooLarge { limit: max_total });
    }
    if crc32(&out) != e.crc {
        return Err(err(format!(
            "the entry {name} fails its checksum (it is damaged)"
        )));
    }
    Ok(out)
}

const CRC_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// CRC-32 (IEEE), as ZIP stores it.
pub fn crc32(data: &[u8]) -> u32 {
    !crc_update(!0, data)
}

/// A running CRC-32 (start at `!0`, finish with `!`) over one more piece of the data.
fn crc_update(mut c: u32, data: &[u8]) -> u32 {
    for &b in data {
        c = CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    c
}

// ---------------------------------------------------------------------------------------------
// The images an export's messages point to (ChatGPT's `file-…`/`file_…` files).

/// The file id a name of the archive (or an asset pointer) holds: `file-` or `file_` and the
/// letters and digits after it, at the start of its last path part (`file-AbC-photo.png`,
/// `dalle-generations/file-XyZ-<uuid>.webp`, `user-1/file_00ab-<uuid>.png`, `file_00ab.dat`).
/// `None` for a name that holds none.
pub fn file_id(name: &str) -> Option<&str> {
    let base = name.rsplit('/').next().unwrap_or(name);
    let rest = base
        .strip_prefix("file-")
        .or_else(|| base.strip_prefix("file_"))?;
    let run = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
    (run > 0).then(|| &base[..5 + run])
}

/// What one slice of [`ImageReader::step`] led to.
#[derive(Debug, PartialEq)]
pub enum ImageStep {
    /// More to read.
    More,
    /// The file of this id was read whole (its checksum right): its bytes.
    Read(String, Vec<u8>),
    /// Every wanted file was read or passed over.
    Done,
}

/// Reads the files of the wanted ids out of an archive one after another, a slice at a time
/// (each [`ImageReader::step`] inflates about as many bytes as it is given). A file over `cap`,
/// damaged, encrypted or past what is left of `budget` (the inflated total of all of them) is
/// passed over: its id is simply not read, never an error, so the rest of the import goes on.
#[derive(Debug)]
pub struct ImageReader {
    /// The wanted ids with their entries, in the archive's order.
    entries: Vec<(String, Entry)>,
    next: usize,
    current: Option<Inflating>,
    budget: usize,
    cap: usize,
    compressed_total: usize,
    compressed_done: usize,
}

impl ImageReader {
    /// The entries of `ids` (each once, the first entry of an id winning; `__MACOSX/` metadata
    /// left out); an archive whose directory cannot be read has none.
    pub fn new(bytes: &[u8], ids: &[String], cap: usize, budget: usize) -> ImageReader {
        let wanted: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
        let mut seen = std::collections::HashSet::new();
        let mut entries = Vec::new();
        for e in directory(bytes).unwrap_or_default() {
            if e.name.ends_with('/') || e.name.starts_with("__MACOSX/") {
                continue;
            }
            let Some(id) = file_id(&e.name) else {
                continue;
            };
            if wanted.contains(id) && seen.insert(id.to_string()) {
                entries.push((id.to_string(), e));
            }
        }
        ImageReader {
            compressed_total: entries.iter().map(|(_, e)| e.compressed).sum(),
            entries,
            next: 0,
            current: None,
            budget,
            cap,
            compressed_done: 0,
        }
    }

    /// How many files of the wanted ids the archive holds.
    pub fn found(&self) -> usize {
        self.entries.len()
    }

    /// Compressed bytes read so far, of the total.
    pub fn progress(&self) -> (usize, usize) {
        let current = self.current.as_ref().map_or(0, |c| c.consumed);
        (self.compressed_done + current, self.compressed_total)
    }

    /// Inflates about `units` more bytes; stops early when a file is read whole.
    pub fn step(&mut self, bytes: &[u8], units: usize) -> ImageStep {
        let mut left = units.max(1);
        while left > 0 {
            let Some(cur) = self.current.as_mut() else {
                let Some((_, e)) = self.entries.get(self.next) else {
                    return ImageStep::Done;
                };
                let compressed = e.compressed;
                match self.open(bytes, e) {
                    Some(c) => self.current = Some(c),
                    None => self.pass(compressed),
                }
                continue;
            };
            let limit = self.cap.min(self.budget);
            match inflate_some(bytes, cur, left, limit, limit) {
                Ok((did, false)) => left = left.saturating_sub(did.max(1)),
                Ok((_, true)) => {
                    let Some(cur) = self.current.take() else {
                        continue;
                    };
                    let (id, e) = &self.entries[self.next];
                    let read = (!cur.crc == e.crc).then(|| (id.clone(), cur.out));
                    self.pass(cur.data.len());
                    if let Some((id, out)) = read {
                        self.budget -= out.len();
                        return ImageStep::Read(id, out);
                    }
                }
                Err(_) => {
                    let consumed = self.current.take().map_or(0, |c| c.data.len());
                    self.pass(consumed);
                }
            }
        }
        ImageStep::More
    }

    fn open(&self, bytes: &[u8], e: &Entry) -> Option<Inflating> {
        let limit = self.cap.min(self.budget);
        let data = entry_data(bytes, e, limit, limit).ok()?;
        let state = match e.method {
            0 => None,
            _ => Some(miniz_oxide::inflate::stream::InflateState::new_boxed(
                miniz_oxide::DataFormat::Raw,
            )),
        };
        Some(Inflating {
            data,
            consumed: 0,
            out: Vec::new(),
            crc: !0,
            state,
        })
    }

    /// The current file is done with (read or passed over): on to the next.
    fn pass(&mut self, compressed: usize) {
        self.compressed_done += compressed;
        self.next += 1;
    }
}
