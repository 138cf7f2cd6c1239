//! Importing other chat apps' exports: detecting the format from the content (never the file name),
//! reading a ZIP in memory, and one reader per source (ChatGPT, Claude.ai, Open WebUI, NextChat,
//! LobeChat, llama.cpp's web UI, SillyTavern, big-AGI) that keeps what the source app shows: its
//! active branch, without hidden, reasoning or error items, tool items kept only where the export
//! ties calls to results (ChatGPT, Claude.ai: [`ImportedMessage::tool_calls`]). Our own backup is
//! recognised here
//! and handed to `engine::backup` unchanged.
//! Owns the detection order, the shared [`Imported`] shape with its skip counts, the conversion to
//! backup bundles (deterministic ids from source + source id, so a second import adds only what is
//! new) and this module's [`ImportError`]. The result goes through `engine::backup`'s checks and
//! plan, so the store writes it in one transaction exactly as a backup.
//! Must not import anything outside `crate::engine` (serde_json, thiserror and miniz_oxide are the
//! only crates it uses). Never imports credentials: settings, key vaults and model sources in a
//! file are ignored and the result says so.
//!
//! Hostile input: the byte size, the ZIP's entries and inflated size, and the JSON nesting depth are
//! checked before parsing; parent chains are walked with a visited set (a cycle is an error); every
//! string is bounded later by the backup checks. Nothing here panics on any input (property-tested).

mod formats;
mod json;
pub mod slice;
mod tree;
pub mod value;
pub mod zip;

use super::backup::{self, CheckedImport, ConversationBundle, ImportLimits};
use super::format::plural;
use super::model::{
    Attachment, Conversation, ConversationSummary, MemoryOverrides, Message, MessageMeta,
    MessageStatus, Millis, Reasoning, Role, ToolCall,
};
use super::title::auto_title;
use serde_json::Value;

/// Which app wrote the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    ChatGpt,
    Claude,
    OpenWebUi,
    NextChat,
    LobeChat,
    LlamaCpp,
    SillyTavern,
    BigAgi,
}

impl Source {
    /// Every source (an import's ids start with one of their keys).
    pub const ALL: [Source; 8] = [
        Source::ChatGpt,
        Source::Claude,
        Source::OpenWebUi,
        Source::NextChat,
        Source::LobeChat,
        Source::LlamaCpp,
        Source::SillyTavern,
        Source::BigAgi,
    ];

    /// The name shown to the user.
    pub fn name(self) -> &'static str {
        match self {
            Source::ChatGpt => "ChatGPT",
            Source::Claude => "Claude.ai",
            Source::OpenWebUi => "Open WebUI",
            Source::NextChat => "NextChat",
            Source::LobeChat => "LobeChat",
            Source::LlamaCpp => "llama.cpp web UI",
            Source::SillyTavern => "SillyTavern",
            Source::BigAgi => "big-AGI",
        }
    }
    /// The prefix of every id made for this source's records (`chatgpt-<source id>`).
    pub fn key(self) -> &'static str {
        match self {
            Source::ChatGpt => "chatgpt",
            Source::Claude => "claude",
            Source::OpenWebUi => "openwebui",
            Source::NextChat => "nextchat",
            Source::LobeChat => "lobechat",
            Source::LlamaCpp => "llamacpp",
            Source::SillyTavern => "sillytavern",
            Source::BigAgi => "bigagi",
        }
    }
}

/// What was left out, and why. Counted per message (or per block inside a message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Skipped {
    /// Hidden by the source app (system scaffolding, hidden flags, context items, SillyTavern's
    /// hidden messages).
    pub hidden: usize,
    /// Tool calls, tool results and tool messages.
    pub tool: usize,
    /// Reasoning / thinking blocks.
    pub reasoning: usize,
    /// Messages on branches the app does not show (regenerated answers, edits, swipes).
    pub other_branches: usize,
    /// Failed replies.
    pub errors: usize,
    /// Messages with no text left.
    pub empty: usize,
}

impl Skipped {
    fn add(&mut self, o: &Skipped) {
        self.hidden += o.hidden;
        self.tool += o.tool;
        self.reasoning += o.reasoning;
        self.other_branches += o.other_branches;
        self.errors += o.errors;
        self.empty += o.empty;
    }
}

/// One message on the shown branch, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedMessage {
    /// The source's id, if it has one (else the message's position is used).
    pub source_id: Option<String>,
    pub role: Role,
    pub content: String,
    pub created_at: Option<Millis>,
    pub model: Option<String>,
    /// Kept out of the prompt by the source app, shown in its chat (`MessageMeta::hidden`).
    pub hidden: bool,
    /// The model's thinking before this reply, when the source kept it apart from the text.
    pub reasoning: Option<String>,
    /// The images it showed, in order (ChatGPT's); each an attachment once its file was found in
    /// the export's ZIP and stored, else a `[image: name]` line before the text.
    pub images: Vec<ImportedImage>,
    /// The tool calls this reply made, with their results, where the export kept them (ChatGPT's
    /// calls and `tool` messages, Claude's `tool_use` and `tool_result` blocks).
    pub tool_calls: Vec<ToolCall>,
}

/// An image a message showed, by the id its source gave its file.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedImage {
    /// The file id (`file-AbC…`, `file_00…`: `zip::file_id`), which names its file in the ZIP.
    pub id: String,
    /// The name shown: the upload's file name, else the id.
    pub name: String,
    /// Its bytes found, checked and stored (`slice::Prepare::give_image`); `None`: a placeholder.
    pub attachment: Option<Attachment>,
}

/// One conversation as the source app shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedConversation {
    /// The source's id; `None` when the format has none (an id is then derived from the content).
    pub source_id: Option<String>,
    /// May be empty: the title then comes from the first user message.
    pub title: String,
    pub created_at: Option<Millis>,
    pub updated_at: Option<Millis>,
    /// A configuration-level system prompt (stored as the conversation's first, system message).
    pub system_prompt: Option<String>,
    /// A summary the source app kept (NextChat's memory prompt), with how many of the imported
    /// messages it covers.
    pub summary: Option<(String, usize)>,
    pub messages: Vec<ImportedMessage>,
}

/// Everything read from another app's export.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub source: Source,
    pub conversations: Vec<ImportedConversation>,
    pub skipped: Skipped,
    /// The file also held settings (possibly API keys) that were not imported.
    pub settings_ignored: bool,
}

/// What a file turned out to be.
#[derive(Debug)]
pub enum Detected {
    /// Our own backup, checked by `engine::backup`.
    Backup(CheckedImport),
    /// Another app's export, read.
    Foreign(Imported),
}

/// Why a file cannot be imported. Nothing has been written when this is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error("The file is empty. Choose a Memoire backup or another chat app's export.")]
    Empty,
    #[error("The file is {size} bytes; the limit is {limit} bytes. Export fewer conversations at a time.")]
    TooLarge { size: usize, limit: usize },
    #[error(
        "The file is not UTF-8 text (bad byte at offset {offset}). Choose the .json, .jsonl or .zip \
         file the app exported."
    )]
    NotUtf8 { offset: usize },
    #[error("The file is not valid JSON (line {line}, column {column}: {detail}).")]
    InvalidJson {
        line: usize,
        column: usize,
        detail: String,
    },
    #[error(
        "This file is not a Memoire backup nor another app's export Memoire can read ({found}). \
         Supported: Memoire backups, ChatGPT and Claude.ai conversations.json (or their ZIP), Open \
         WebUI, NextChat, LobeChat, llama.cpp web UI, SillyTavern chats and big-AGI backups."
    )]
    UnknownFormat { found: String },
    #[error("The {source_name} export has a problem in {at}: {detail}.")]
    Shape {
        source_name: &'static str,
        at: String,
        detail: String,
    },
    #[error(
        "The {source_name} export has a loop in its message links in {at}: the file is corrupt."
    )]
    Cycle {
        source_name: &'static str,
        at: String,
    },
    #[error("The {source_name} export holds no conversations.")]
    NoConversations { source_name: &'static str },
    #[error("The ZIP file cannot be read: {detail}.")]
    Zip { detail: String },
    #[error(
        "The ZIP file holds no export Memoire can read (looked for conversations.json and .json or \
         .jsonl files)."
    )]
    ZipHasNoExport,
    #[error(
        "The ZIP file unpacks to more than {limit} bytes, which is more than Memoire imports at once \
         (or it is a ZIP bomb)."
    )]
    ZipTooLarge { limit: usize },
    #[error("{0}")]
    Backup(#[from] backup::ImportError),
}

/// Reads any supported file: a ZIP is opened first, then the content decides the format.
/// Never panics, whatever the bytes.
pub fn detect(bytes: &[u8], limits: &ImportLimits) -> Result<Detected, ImportError> {
    if bytes.len() > limits.max_bytes {
        return Err(ImportError::TooLarge {
            size: bytes.len(),
            limit: limits.max_bytes,
        });
    }
    if zip::is_zip(bytes) {
        let files = zip::read_candidates(bytes, limits.max_bytes)?;
        return detect_files(&files, limits);
    }
    detect_text(bytes, limits)
}

/// Several files from one ZIP: `conversations.json` alone if present, else every JSON(L) file,
/// all of one source, merged.
fn detect_files(
    files: &[(String, Vec<u8>)],
    limits: &ImportLimits,
) -> Result<Detected, ImportError> {
    let mut merged: Option<Imported> = None;
    for (name, bytes) in files {
        match detect_text(bytes, limits) {
            Ok(Detected::Backup(b)) if files.len() == 1 => return Ok(Detected::Backup(b)),
            Ok(Detected::Backup(_)) => {}
            Ok(Detected::Foreign(i)) => match &mut merged {
                None => merged = Some(i),
                Some(m) if m.source == i.source => {
                    m.conversations.extend(i.conversations);
                    m.skipped.add(&i.skipped);
                    m.settings_ignored |= i.settings_ignored;
                }
                Some(_) => {}
            },
            // One file in the ZIP: its own error says most.
            Err(e) if files.len() == 1 => {
                return Err(match e {
                    ImportError::UnknownFormat { found } => ImportError::UnknownFormat {
                        found: format!("{name} in the ZIP: {found}"),
                    },
                    e => e,
                })
            }
            Err(_) => {}
        }
    }
    merged
        .map(Detected::Foreign)
        .ok_or(ImportError::ZipHasNoExport)
}

fn detect_text(bytes: &[u8], limits: &ImportLimits) -> Result<Detected, ImportError> {
    let text = std::str::from_utf8(bytes).map_err(|e| ImportError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let trimmed = text.trim_start();
    if trimmed.trim_end().is_empty() {
        return Err(ImportError::Empty);
    }
    // Our backup writes `format` first: route it without a second parse.
    if trimmed.starts_with('{') && looks_like_backup(trimmed) {
        return Ok(Detected::Backup(backup::check_import(bytes, limits)?));
    }
    backup::check_depth(text.as_bytes(), limits.max_depth)?;
    match serde_json::from_str::<Value>(text) {
        Ok(v) => detect_value(v, bytes, limits),
        Err(whole) => {
            // JSON Lines: every non-empty line a JSON value.
            if let Some(lines) = json_lines(text) {
                return formats::jsonl(lines).map(Detected::Foreign);
            }
            Err(json_error(&whole))
        }
    }
}

pub(super) fn looks_like_backup(text: &str) -> bool {
    let head = match text.char_indices().nth(400) {
        Some((i, _)) => &text[..i],
        None => text,
    };
    head.contains("\"format\"") && head.contains(&format!("\"{}\"", backup::FORMAT))
}

fn json_lines(text: &str) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        out.push(serde_json::from_str::<Value>(line).ok()?);
    }
    (out.len() > 1).then_some(out)
}

fn detect_value(v: Value, bytes: &[u8], limits: &ImportLimits) -> Result<Detected, ImportError> {
    if v.get("format").and_then(Value::as_str) == Some(backup::FORMAT) {
        return Ok(Detected::Backup(backup::check_import(bytes, limits)?));
    }
    formats::read(v).map(Detected::Foreign)
}

fn json_error(e: &serde_json::Error) -> ImportError {
    let msg = e.to_string();
    let detail = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    ImportError::InvalidJson {
        line: e.line(),
        column: e.column(),
        detail: crate::engine::format::clip(&detail, 200),
    }
}

// ---------------------------------------------------------------------------------------------
// Conversion to backup bundles.

/// Longest source id kept as is inside a record id; longer ones are hashed.
const MAX_SOURCE_ID: usize = 100;

/// FNV-1a, 64 bits: a stable id for what has none (or too long a one). Not for security.
fn fnv(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("h{h:016x}")
}

/// `id` if it is usable inside a record id (and the page URL, `#/c/<id>`): ASCII letters, digits
/// and `-_.:@` only, at most [`MAX_SOURCE_ID`] long; else its hash.
fn id_part(id: &str) -> String {
    let clean = !id.is_empty()
        && id.len() <= MAX_SOURCE_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:@".contains(&b));
    if clean {
        id.to_string()
    } else {
        fnv(&[id])
    }
}

/// The conversation id an imported conversation gets: `<source>-<source id>`. The same file (or a
/// newer export of the same app) gives the same ids, which is what makes a re-import idempotent.
pub fn conversation_id(source: Source, c: &ImportedConversation) -> String {
    let part = match &c.source_id {
        Some(id) => id_part(id),
        None => {
            let first = c.messages.first().map(|m| m.content.as_str()).unwrap_or("");
            let created = c.created_at.unwrap_or(0).to_string();
            fnv(&[&c.title, &created, first])
        }
    };
    format!("{}-{}", source.key(), part)
}

/// Converts what was read into backup bundles (one per conversation, messages at seqs 0..n, the
/// system prompt as the conversation's own) and checks them like a backup's records. `now` stands in for missing times.
pub fn to_checked(
    imported: &Imported,
    now: Millis,
    limits: &ImportLimits,
) -> Result<CheckedImport, ImportError> {
    let bundles = to_bundles(imported, now);
    Ok(CheckedImport::from_bundles(&bundles, now, limits)?)
}

/// The bundles [`to_checked`] checks (exposed for tests and the preview).
pub fn to_bundles(imported: &Imported, now: Millis) -> Vec<ConversationBundle> {
    imported
        .conversations
        .iter()
        .map(|c| bundle(imported.source, c, now))
        .collect()
}

/// The conversation `c` as stored: its messages, summary and title, under the id the import gives
/// it. Its system prompt becomes the conversation's own (`MemoryOverrides::system_prompt`), which
/// the import preview lists before anything is written, never a stored `system` message (those go
/// out as quoted text: `history::render_message`).
fn bundle(source: Source, c: &ImportedConversation, now: Millis) -> ConversationBundle {
    let id = conversation_id(source, c);
    let created = c
        .created_at
        .or_else(|| c.messages.iter().find_map(|m| m.created_at))
        .unwrap_or(now);
    let (messages, last_at) = bundle_messages(&id, c, created);
    let updated = c.updated_at.unwrap_or(last_at).max(last_at);
    let summaries = bundle_summaries(&id, c, updated);
    ConversationBundle {
        conversation: Conversation {
            id,
            title: bundle_title(c),
            title_is_custom: true,
            created_at: created,
            updated_at: updated,
            message_count: messages.len() as u64,
            endpoint_profile_id: None,
            remote_handle: None,
            last_path: None,
            memory_overrides: MemoryOverrides {
                system_prompt: c
                    .system_prompt
                    .as_deref()
                    .filter(|s| !s.trim().is_empty())
                    .map(str::to_string),
                ..MemoryOverrides::default()
            },
        },
        messages,
        summaries,
        entities: Vec::new(),
    }
}

/// The messages of `c` (conversation `id`, created at `created`) as stored, times only moving
/// forward; and the time of the last one.
fn bundle_messages(id: &str, c: &ImportedConversation, created: Millis) -> (Vec<Message>, Millis) {
    let mut messages = Vec::with_capacity(c.messages.len());
    let mut last_at = created;
    for (i, m) in c.messages.iter().enumerate() {
        // Times only move forward, so the order shown is the order stored.
        let at = m.created_at.unwrap_or(last_at).max(last_at);
        last_at = at;
        let part = match &m.source_id {
            Some(s) => id_part(s),
            None => format!("{i}"),
        };
        let (content, attachments) = with_images(m);
        messages.push(Message {
            id: format!("{id}/{part}"),
            conversation_id: id.to_string(),
            seq: messages.len() as u64,
            role: m.role,
            content,
            status: MessageStatus::Complete,
            created_at: at,
            meta: MessageMeta {
                model: m.model.clone(),
                hidden: m.hidden,
                // The source kept no times for it: "Thoughts", not "Thought for N s".
                reasoning: m.reasoning.as_ref().map(|text| Reasoning {
                    text: text.clone(),
                    started_at: at,
                    ended_at: None,
                }),
                attachments,
                tool_calls: m.tool_calls.clone(),
                ..MessageMeta::default()
            },
        });
    }
    (messages, last_at)
}

/// A message's text and attachments: each image stored becomes an attachment (at most
/// `attach::MAX_ATTACHMENTS`, as a composer's message), each other one a `[image: name]` line
/// before the text, where the source showed it (nothing is lost).
fn with_images(m: &ImportedMessage) -> (String, Vec<Attachment>) {
    if m.images.is_empty() {
        return (m.content.clone(), Vec::new());
    }
    let mut attachments = Vec::new();
    let mut lines = Vec::new();
    for i in &m.images {
        match &i.attachment {
            Some(a) if attachments.len() < crate::engine::attach::MAX_ATTACHMENTS => {
                attachments.push(a.clone())
            }
            _ => lines.push(format!(
                "[image: {}]",
                crate::engine::attach::short_name(&i.name)
            )),
        }
    }
    if !m.content.trim().is_empty() {
        lines.push(m.content.clone());
    }
    (lines.join("\n\n"), attachments)
}

/// The summary `c` came with, as the first version of conversation `id`, covering the messages it
/// covered; none when it has none.
fn bundle_summaries(
    id: &str,
    c: &ImportedConversation,
    updated: Millis,
) -> Vec<ConversationSummary> {
    match &c.summary {
        Some((text, covers)) if !text.trim().is_empty() => {
            let covered = (*covers).min(c.messages.len());
            vec![ConversationSummary {
                conversation_id: id.to_string(),
                version: 1,
                text: text.clone(),
                covers_up_to_seq: covered.saturating_sub(1) as u64,
                message_count: covered as u64,
                updated_at: updated,
            }]
        }
        _ => Vec::new(),
    }
}

/// The title of `c`: its own, else one made from its first user message.
fn bundle_title(c: &ImportedConversation) -> String {
    if c.title.trim().is_empty() {
        let first = c
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .unwrap_or("");
        auto_title(first)
    } else {
        crate::engine::format::one_line(&c.title)
    }
}

/// The preview's text for our own backup: what the file holds, before anything is written.
pub fn describe_backup(checked: &CheckedImport) -> String {
    let (conversations, messages) = checked.counts();
    format!(
        "Memoire backup: {}, {}.",
        plural(conversations, "conversation", "conversations"),
        plural(messages, "message", "messages")
    )
}

/// The preview's text: what was found in the file and what was left out, before anything is written.
pub fn describe(imported: &Imported) -> String {
    let messages: usize = imported
        .conversations
        .iter()
        .map(|c| c.messages.len())
        .sum();
    let mut out = format!(
        "{} export: {}, {}.",
        imported.source.name(),
        plural(
            imported.conversations.len(),
            "conversation",
            "conversations"
        ),
        plural(messages, "message", "messages")
    );
    let images = imported
        .conversations
        .iter()
        .flat_map(|c| &c.messages)
        .flat_map(|m| &m.images);
    let (with, without) = images.fold((0, 0), |(w, o), i| match i.attachment {
        Some(_) => (w + 1, o),
        None => (w, o + 1),
    });
    if with + without > 0 {
        out.push_str(&format!(
            " Images: {} brought in, {} kept as a name (not in the file, or not an image).",
            with, without
        ));
    }
    let s = &imported.skipped;
    let parts: Vec<String> = [
        (
            s.other_branches,
            "on a branch not shown",
            "on branches not shown",
        ),
        (s.hidden, "hidden", "hidden"),
        (s.tool, "tool call or result", "tool calls or results"),
        (s.reasoning, "reasoning", "reasoning"),
        (s.errors, "failed reply", "failed replies"),
        (s.empty, "empty", "empty"),
    ]
    .iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|(n, one, many)| plural(*n, one, many))
    .collect();
    if !parts.is_empty() {
        out.push_str(&format!(" Left out: {}.", parts.join(", ")));
    }
    out.push_str(" Settings and API keys are never imported.");
    out
}
