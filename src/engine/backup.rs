//! The backup exchange format: export (versioned JSON and a readable Markdown transcript) and
//! validation of an import before anything is written.
//! Owns the file format's own serde types (they never change when `model.rs` changes; conversions are
//! explicit), the import limits and the import plan. Must not import anything outside `crate::engine`
//! (serde/serde_json/thiserror are the only crates it uses).
//!
//! Never exported: API keys and endpoint profiles (only a conversation's profile *id* travels).
//!
//! Import is validate-then-write: [`check_import`] checks everything that does not depend on what is
//! stored (size, UTF-8, nesting depth before parsing, format and version, types, string lengths, ids,
//! references; one parse of the file), the store looks up only the records the file names, and
//! [`CheckedImport::plan`] returns an [`ImportPlan`] of exactly what to write ([`validate_import`]
//! is both steps); the store writes it in one transaction. Records that already exist by id are
//! skipped and counted; an id that exists under a *different* conversation is an error, never an
//! overwrite.

use super::model::{
    Conversation, ConversationSummary, EntityNode, EntityScope, EntityType, HistoryFormat,
    MemoryOverrides, Message, MessageMeta, MessageStatus, Millis, Relationship, RemoteHandle, Role,
    ToolCall, TurnPath, Usage,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The `format` field of every backup file.
pub const FORMAT: &str = "memoire-backup";
/// The version this code writes and reads.
pub const VERSION: u64 = 1;

// ---------------------------------------------------------------------------------------------
// The format (version 1). Field names are the file's; do not rename.

/// A string enum of the file format. Deserialised through a string, so a `null` or a number gets a
/// "wrong type" error and an unknown word an "unknown variant" error (serde_json reports both as a
/// syntax error for plain enums).
macro_rules! wire_enum {
    ($name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
        #[serde(try_from = "String")]
        enum $name {
            $(#[serde(rename = $text)] $variant),+
        }
        impl TryFrom<String> for $name {
            type Error = String;
            fn try_from(s: String) -> Result<Self, String> {
                match s.as_str() {
                    $($text => Ok($name::$variant),)+
                    _ => Err(format!(
                        "unknown value {:?}, expected one of: {}",
                        clip(&s, 40),
                        [$($text),+].join(", ")
                    )),
                }
            }
        }
    };
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct BackupFile {
    format: String,
    version: u64,
    exported_at: Millis,
    conversations: Vec<BConversationBundle>,
    /// Entities shared by all conversations.
    #[serde(default)]
    shared_entities: Vec<BEntity>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct BConversationBundle {
    conversation: BConversation,
    messages: Vec<BMessage>,
    /// Every version, oldest first.
    summaries: Vec<BSummary>,
    /// Entities scoped to this conversation.
    entities: Vec<BEntity>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct BConversation {
    id: String,
    title: String,
    title_is_custom: bool,
    created_at: Millis,
    updated_at: Millis,
    message_count: u64,
    endpoint_profile_id: Option<String>,
    remote_handle: Option<BRemoteHandle>,
    last_path: Option<BTurnPath>,
    memory_overrides: BOverrides,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct BRemoteHandle {
    id: String,
    endpoint_key: String,
    covers_up_to_seq: u64,
    confirmed_at: Millis,
    dead: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct BOverrides {
    recent_messages: Option<u64>,
    summary_every_pairs: Option<u64>,
    context_tokens: Option<u32>,
    reply_reserve_tokens: Option<u32>,
    max_message_chars: Option<u64>,
    history_format: Option<BHistoryFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory_model: Option<String>,
}

wire_enum!(BHistoryFormat {
    Messages = "messages",
    Transcript = "transcript",
});

wire_enum!(BTurnPath {
    Resumed = "resumed",
    Reinjected = "reinjected",
    Fresh = "fresh",
});

wire_enum!(BRole {
    System = "system",
    User = "user",
    Assistant = "assistant",
    Tool = "tool",
});

wire_enum!(BStatus {
    Complete = "complete",
    Streaming = "streaming",
    Interrupted = "interrupted",
    Error = "error",
});

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct BMessage {
    id: String,
    conversation_id: String,
    seq: u64,
    role: BRole,
    content: String,
    status: BStatus,
    created_at: Millis,
    tool_calls: Vec<BToolCall>,
    usage: Option<BUsage>,
    error: Option<String>,
    path: Option<BTurnPath>,
    model: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct BToolCall {
    id: String,
    name: String,
    arguments: String,
    result: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct BUsage {
    prompt_tokens: u32,
    completion_tokens: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct BSummary {
    conversation_id: String,
    version: u32,
    text: String,
    covers_up_to_seq: u64,
    message_count: u64,
    updated_at: Millis,
}

wire_enum!(BEntityType {
    Person = "person",
    Place = "place",
    Concept = "concept",
    Event = "event",
    Task = "task",
    Other = "other",
});

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct BEntity {
    id: String,
    #[serde(rename = "type")]
    entity_type: BEntityType,
    name: String,
    aliases: Vec<String>,
    description: String,
    properties: BTreeMap<String, String>,
    relationships: Vec<BRelationship>,
    source_message_ids: Vec<String>,
    updated_at: Millis,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct BRelationship {
    target_id: String,
    relationship: String,
    strength: f32,
    valid_from: Millis,
    valid_to: Option<Millis>,
}

// ---------------------------------------------------------------------------------------------
// Explicit conversions, model <-> format.

impl From<TurnPath> for BTurnPath {
    fn from(p: TurnPath) -> Self {
        match p {
            TurnPath::Resumed => BTurnPath::Resumed,
            TurnPath::Reinjected => BTurnPath::Reinjected,
            TurnPath::Fresh => BTurnPath::Fresh,
        }
    }
}
impl From<BTurnPath> for TurnPath {
    fn from(p: BTurnPath) -> Self {
        match p {
            BTurnPath::Resumed => TurnPath::Resumed,
            BTurnPath::Reinjected => TurnPath::Reinjected,
            BTurnPath::Fresh => TurnPath::Fresh,
        }
    }
}
impl From<HistoryFormat> for BHistoryFormat {
    fn from(f: HistoryFormat) -> Self {
        match f {
            HistoryFormat::Messages => BHistoryFormat::Messages,
            HistoryFormat::Transcript => BHistoryFormat::Transcript,
        }
    }
}
impl From<BHistoryFormat> for HistoryFormat {
    fn from(f: BHistoryFormat) -> Self {
        match f {
            BHistoryFormat::Messages => HistoryFormat::Messages,
            BHistoryFormat::Transcript => HistoryFormat::Transcript,
        }
    }
}
impl From<Role> for BRole {
    fn from(r: Role) -> Self {
        match r {
            Role::System => BRole::System,
            Role::User => BRole::User,
            Role::Assistant => BRole::Assistant,
            Role::Tool => BRole::Tool,
        }
    }
}
impl From<BRole> for Role {
    fn from(r: BRole) -> Self {
        match r {
            BRole::System => Role::System,
            BRole::User => Role::User,
            BRole::Assistant => Role::Assistant,
            BRole::Tool => Role::Tool,
        }
    }
}
impl From<MessageStatus> for BStatus {
    fn from(s: MessageStatus) -> Self {
        match s {
            MessageStatus::Complete => BStatus::Complete,
            MessageStatus::Streaming => BStatus::Streaming,
            MessageStatus::Interrupted => BStatus::Interrupted,
            MessageStatus::Error => BStatus::Error,
        }
    }
}
impl From<BStatus> for MessageStatus {
    /// Nothing is streaming an imported message: a `streaming` record arrives as `interrupted`.
    fn from(s: BStatus) -> Self {
        match s {
            BStatus::Complete => MessageStatus::Complete,
            BStatus::Streaming | BStatus::Interrupted => MessageStatus::Interrupted,
            BStatus::Error => MessageStatus::Error,
        }
    }
}
impl From<EntityType> for BEntityType {
    fn from(t: EntityType) -> Self {
        match t {
            EntityType::Person => BEntityType::Person,
            EntityType::Place => BEntityType::Place,
            EntityType::Concept => BEntityType::Concept,
            EntityType::Event => BEntityType::Event,
            EntityType::Task => BEntityType::Task,
            EntityType::Other => BEntityType::Other,
        }
    }
}
impl From<BEntityType> for EntityType {
    fn from(t: BEntityType) -> Self {
        match t {
            BEntityType::Person => EntityType::Person,
            BEntityType::Place => EntityType::Place,
            BEntityType::Concept => EntityType::Concept,
            BEntityType::Event => EntityType::Event,
            BEntityType::Task => EntityType::Task,
            BEntityType::Other => EntityType::Other,
        }
    }
}

impl From<&Conversation> for BConversation {
    fn from(c: &Conversation) -> Self {
        let o = &c.memory_overrides;
        BConversation {
            id: c.id.clone(),
            title: c.title.clone(),
            title_is_custom: c.title_is_custom,
            created_at: c.created_at,
            updated_at: c.updated_at,
            message_count: c.message_count,
            endpoint_profile_id: c.endpoint_profile_id.clone(),
            remote_handle: c.remote_handle.as_ref().map(|h| BRemoteHandle {
                id: h.id.clone(),
                endpoint_key: h.endpoint_key.clone(),
                covers_up_to_seq: h.covers_up_to_seq,
                confirmed_at: h.confirmed_at,
                dead: h.dead,
            }),
            last_path: c.last_path.map(Into::into),
            memory_overrides: BOverrides {
                recent_messages: o.recent_messages.map(|v| v as u64),
                summary_every_pairs: o.summary_every_pairs.map(|v| v as u64),
                context_tokens: o.context_tokens,
                reply_reserve_tokens: o.reply_reserve_tokens,
                max_message_chars: o.max_message_chars.map(|v| v as u64),
                history_format: o.history_format.map(Into::into),
                memory_model: o.memory_model.clone(),
            },
        }
    }
}

impl BConversation {
    fn into_model(self) -> Result<Conversation, ImportError> {
        let o = self.memory_overrides;
        let size = |field: &'static str, v: Option<u64>| -> Result<Option<usize>, ImportError> {
            v.map(|v| {
                usize::try_from(v).map_err(|_| ImportError::InvalidValue {
                    record: format!("conversation {}", self.id),
                    detail: format!("{field} {v} is too large"),
                })
            })
            .transpose()
        };
        Ok(Conversation {
            memory_overrides: MemoryOverrides {
                recent_messages: size("recent_messages", o.recent_messages)?,
                summary_every_pairs: size("summary_every_pairs", o.summary_every_pairs)?,
                context_tokens: o.context_tokens,
                reply_reserve_tokens: o.reply_reserve_tokens,
                max_message_chars: size("max_message_chars", o.max_message_chars)?,
                history_format: o.history_format.map(Into::into),
                memory_model: o.memory_model,
            },
            id: self.id,
            title: self.title,
            title_is_custom: self.title_is_custom,
            created_at: self.created_at,
            updated_at: self.updated_at,
            message_count: self.message_count,
            endpoint_profile_id: self.endpoint_profile_id,
            remote_handle: self.remote_handle.map(|h| RemoteHandle {
                id: h.id,
                endpoint_key: h.endpoint_key,
                covers_up_to_seq: h.covers_up_to_seq,
                confirmed_at: h.confirmed_at,
                dead: h.dead,
            }),
            last_path: self.last_path.map(Into::into),
        })
    }
}

impl From<&Message> for BMessage {
    fn from(m: &Message) -> Self {
        BMessage {
            id: m.id.clone(),
            conversation_id: m.conversation_id.clone(),
            seq: m.seq,
            role: m.role.into(),
            content: m.content.clone(),
            status: m.status.into(),
            created_at: m.created_at,
            tool_calls: m
                .meta
                .tool_calls
                .iter()
                .map(|t| BToolCall {
                    id: t.id.clone(),
                    name: t.name.clone(),
                    arguments: t.arguments.clone(),
                    result: t.result.clone(),
                })
                .collect(),
            usage: m.meta.usage.map(|u| BUsage {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
            }),
            error: m.meta.error.clone(),
            path: m.meta.path.map(Into::into),
            model: m.meta.model.clone(),
        }
    }
}

impl From<BMessage> for Message {
    fn from(m: BMessage) -> Self {
        Message {
            id: m.id,
            conversation_id: m.conversation_id,
            seq: m.seq,
            role: m.role.into(),
            content: m.content,
            status: m.status.into(),
            created_at: m.created_at,
            meta: MessageMeta {
                tool_calls: m
                    .tool_calls
                    .into_iter()
                    .map(|t| ToolCall {
                        id: t.id,
                        name: t.name,
                        arguments: t.arguments,
                        result: t.result,
                    })
                    .collect(),
                usage: m.usage.map(|u| Usage {
                    prompt_tokens: u.prompt_tokens,
                    completion_tokens: u.completion_tokens,
                }),
                error: m.error,
                path: m.path.map(Into::into),
                model: m.model,
            },
        }
    }
}

impl From<&ConversationSummary> for BSummary {
    fn from(s: &ConversationSummary) -> Self {
        BSummary {
            conversation_id: s.conversation_id.clone(),
            version: s.version,
            text: s.text.clone(),
            covers_up_to_seq: s.covers_up_to_seq,
            message_count: s.message_count,
            updated_at: s.updated_at,
        }
    }
}

impl From<BSummary> for ConversationSummary {
    fn from(s: BSummary) -> Self {
        ConversationSummary {
            conversation_id: s.conversation_id,
            version: s.version,
            text: s.text,
            covers_up_to_seq: s.covers_up_to_seq,
            message_count: s.message_count,
            updated_at: s.updated_at,
        }
    }
}

impl From<&EntityNode> for BEntity {
    fn from(e: &EntityNode) -> Self {
        BEntity {
            id: e.id.clone(),
            entity_type: e.entity_type.into(),
            name: e.name.clone(),
            aliases: e.aliases.clone(),
            description: e.description.clone(),
            properties: e.properties.clone(),
            relationships: e
                .relationships
                .iter()
                .map(|r| BRelationship {
                    target_id: r.target_id.clone(),
                    relationship: r.relationship.clone(),
                    // JSON cannot hold NaN or infinity; keep every export importable.
                    strength: if r.strength.is_finite() {
                        r.strength.clamp(0.0, 1.0)
                    } else {
                        0.0
                    },
                    valid_from: r.valid_from,
                    valid_to: r.valid_to,
                })
                .collect(),
            source_message_ids: e.source_message_ids.clone(),
            updated_at: e.updated_at,
        }
    }
}

impl BEntity {
    fn into_model(self, scope: EntityScope) -> EntityNode {
        EntityNode {
            id: self.id,
            scope,
            entity_type: self.entity_type.into(),
            name: self.name,
            aliases: self.aliases,
            description: self.description,
            properties: self.properties,
            relationships: self
                .relationships
                .into_iter()
                .map(|r| Relationship {
                    target_id: r.target_id,
                    relationship: r.relationship,
                    strength: r.strength,
                    valid_from: r.valid_from,
                    valid_to: r.valid_to,
                })
                .collect(),
            source_message_ids: self.source_message_ids,
            updated_at: self.updated_at,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Export.

/// One conversation with everything that belongs to it, as read from (or to be written to) the store.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationBundle {
    pub conversation: Conversation,
    pub messages: Vec<Message>,
    /// All versions.
    pub summaries: Vec<ConversationSummary>,
    /// Entities scoped to this conversation.
    pub entities: Vec<EntityNode>,
}

/// The backup JSON for `bundles` (one conversation or all of them) and the shared entities.
///
/// Messages are written in seq order and summaries in version order. A bundle entity whose scope is
/// `Shared` is written once among the shared entities; every other bundle entity belongs to its
/// bundle's conversation. API keys and endpoint profiles are never part of the file.
pub fn export_json(
    bundles: &[ConversationBundle],
    shared_entities: &[EntityNode],
    exported_at: Millis,
) -> String {
    let mut shared: Vec<BEntity> = Vec::new();
    let mut shared_ids = HashSet::new();
    let mut push_shared = |e: &EntityNode, shared: &mut Vec<BEntity>| {
        if shared_ids.insert(e.id.clone()) {
            shared.push(e.into());
        }
    };
    for e in shared_entities {
        push_shared(e, &mut shared);
    }
    let mut conversations = Vec::with_capacity(bundles.len());
    for b in bundles {
        let mut messages: Vec<&Message> = b.messages.iter().collect();
        crate::engine::sort::sort_by_key(&mut messages, |m| m.seq);
        let mut summaries: Vec<&ConversationSummary> = b.summaries.iter().collect();
        crate::engine::sort::sort_by_key(&mut summaries, |s| s.version);
        let mut entities = Vec::new();
        for e in &b.entities {
            match e.scope {
                EntityScope::Shared => push_shared(e, &mut shared),
                EntityScope::Conversation(_) => entities.push(BEntity::from(e)),
            }
        }
        conversations.push(BConversationBundle {
            conversation: (&b.conversation).into(),
            messages: messages.into_iter().map(Into::into).collect(),
            summaries: summaries.into_iter().map(Into::into).collect(),
            entities,
        });
    }
    let file = BackupFile {
        format: FORMAT.to_string(),
        version: VERSION,
        exported_at,
        conversations,
        shared_entities: shared,
    };
    // Plain data with string keys and finite numbers: serialisation cannot fail.
    serde_json::to_string_pretty(&file).unwrap_or_default()
}

/// A readable Markdown transcript of one conversation: title, dates, one `**User**` /
/// `**Assistant**` heading per message, and a note on interrupted or failed replies.
/// Dates are UTC (the engine has no time zone); `messages` are written in seq order.
pub fn export_markdown(conversation: &Conversation, messages: &[Message]) -> String {
    let mut out = String::new();
    let title = one_line(&conversation.title);
    let title = if title.is_empty() {
        "Untitled conversation"
    } else {
        &title
    };
    out.push_str(&format!("# {title}\n\n"));
    out.push_str(&format!(
        "Created {} · Updated {} · {} messages\n\n---\n\n",
        format_utc(conversation.created_at),
        format_utc(conversation.updated_at),
        messages.len()
    ));
    let mut sorted: Vec<&Message> = messages.iter().collect();
    crate::engine::sort::sort_by_key(&mut sorted, |m| m.seq);
    for m in sorted {
        let who = match m.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::System => "System",
            Role::Tool => "Tool",
        };
        out.push_str(&format!("**{who}** · {}\n\n", format_utc(m.created_at)));
        let content = m.content.trim_end();
        if !content.is_empty() {
            out.push_str(content);
            out.push_str("\n\n");
        }
        for call in &m.meta.tool_calls {
            out.push_str(&format!("> Tool call: `{}`\n\n", one_line(&call.name)));
        }
        match m.status {
            MessageStatus::Interrupted | MessageStatus::Streaming => {
                out.push_str("> *This reply was interrupted before it finished.*\n\n");
            }
            MessageStatus::Error => {
                let why = m.meta.error.as_deref().map(one_line).unwrap_or_default();
                if why.is_empty() {
                    out.push_str("> *This reply failed.*\n\n");
                } else {
                    out.push_str(&format!("> *This reply failed: {why}*\n\n"));
                }
            }
            MessageStatus::Complete => {}
        }
    }
    out
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `YYYY-MM-DD HH:MM UTC` from milliseconds since the epoch (proleptic Gregorian calendar).
pub fn format_utc(ms: Millis) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

// ---------------------------------------------------------------------------------------------
// Import.

/// Limits an import must respect. `Default` gives the app's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportLimits {
    /// Largest file accepted, in bytes.
    pub max_bytes: usize,
    /// Deepest JSON nesting accepted (objects and arrays), checked before parsing.
    pub max_depth: usize,
    /// Longest id, in characters.
    pub max_id_chars: usize,
    /// Longest short string (title, names, model, keys...), in characters.
    pub max_short_chars: usize,
    /// Longest text (message content, tool arguments and results, summaries, descriptions), in chars.
    pub max_text_chars: usize,
}

impl Default for ImportLimits {
    fn default() -> Self {
        ImportLimits {
            max_bytes: 50 * 1024 * 1024,
            max_depth: 64,
            max_id_chars: 256,
            max_short_chars: 4096,
            max_text_chars: 1_000_000,
        }
    }
}

/// What the store already holds, so the import can skip existing records and refuse collisions.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExistingIds {
    pub conversations: HashSet<String>,
    /// Message id -> where it lives.
    pub messages: HashMap<String, ExistingMessage>,
    /// `(conversation id, summary version)`.
    pub summaries: HashSet<(String, u32)>,
    /// Entity id -> its scope.
    pub entities: HashMap<String, EntityScope>,
    /// Stored conversation id -> its highest message seq (read for other apps' exports, which
    /// append what is new; a backup's plan does not use it).
    pub last_seqs: HashMap<String, u64>,
}

/// Where an existing message lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingMessage {
    pub conversation_id: String,
    pub seq: u64,
}

/// Records per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImportCounts {
    pub conversations: usize,
    pub messages: usize,
    pub summaries: usize,
    pub entities: usize,
}

/// Exactly what an import writes (new records only), and what it skipped because it already exists.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImportPlan {
    pub exported_at: Millis,
    pub conversations: Vec<Conversation>,
    pub messages: Vec<Message>,
    pub summaries: Vec<ConversationSummary>,
    pub entities: Vec<EntityNode>,
    pub added: ImportCounts,
    pub skipped: ImportCounts,
}

/// Why a file cannot be imported. Nothing has been written when this is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error("The file is empty. Choose a Memoire backup (.json) file.")]
    Empty,
    #[error(
        "The file is {size} bytes; the limit is {limit} bytes. Export fewer conversations at a time \
         and import them one by one."
    )]
    TooLarge { size: usize, limit: usize },
    #[error(
        "The file is not UTF-8 text (bad byte at offset {offset}). Choose the .json file Memoire \
         exported, not a compressed or binary file."
    )]
    NotUtf8 { offset: usize },
    #[error(
        "The file nests data more than {limit} levels deep, which no Memoire backup does. It is not \
         a backup or it was tampered with."
    )]
    TooDeep { limit: usize },
    #[error(
        "The file ends too early (line {line}, column {column}): it was cut off while downloading \
         or copying. Export it again."
    )]
    Truncated { line: usize, column: usize },
    #[error("The file is not valid JSON (line {line}, column {column}: {detail}).")]
    InvalidJson {
        line: usize,
        column: usize,
        detail: String,
    },
    #[error(
        "This is not a Memoire backup (format {found}). Choose a file made by Memoire's export."
    )]
    NotABackup { found: String },
    #[error(
        "This backup is format version {found}; this Memoire reads version 1. Update Memoire to \
         import it."
    )]
    UnsupportedVersion { found: String },
    #[error("The backup is missing a field (line {line}, column {column}: {detail}).")]
    MissingField {
        line: usize,
        column: usize,
        detail: String,
    },
    #[error("The backup has a value of the wrong type (line {line}, column {column}: {detail}).")]
    WrongType {
        line: usize,
        column: usize,
        detail: String,
    },
    #[error("The backup has an invalid value in {record}: {detail}.")]
    InvalidValue { record: String, detail: String },
    #[error("{field} of {record} is {len} characters long; the limit is {limit}.")]
    TooLong {
        record: String,
        field: &'static str,
        len: usize,
        limit: usize,
    },
    #[error(
        "Message {message_id} is listed under conversation {listed_under} but says it belongs to \
         {claims}. The file was edited by hand or is corrupt."
    )]
    ConversationMismatch {
        message_id: String,
        listed_under: String,
        claims: String,
    },
    #[error("The {kind} id {id} appears more than once in the file. The file is corrupt.")]
    DuplicateId { kind: &'static str, id: String },
    #[error(
        "Conversation {conversation_id} has two messages with seq {seq} in the file. The file is \
         corrupt."
    )]
    DuplicateSeq { conversation_id: String, seq: u64 },
    #[error(
        "The {kind} {id} already exists here in conversation {existing}, but the file puts it in \
         {incoming}. Nothing was imported; delete one of the two conversations first."
    )]
    IdCollision {
        kind: &'static str,
        id: String,
        existing: String,
        incoming: String,
    },
    #[error(
        "Conversation {conversation_id} already has a different message at position {seq} here: \
         the two copies have diverged. Nothing was imported; delete the local copy to import the \
         file's version."
    )]
    SeqCollision { conversation_id: String, seq: u64 },
}

/// Validate a backup file completely and plan what to write. Never panics, whatever the bytes.
/// The same as [`check_import`] followed by [`CheckedImport::plan`].
pub fn validate_import(
    bytes: &[u8],
    existing: &ExistingIds,
    limits: &ImportLimits,
) -> Result<ImportPlan, ImportError> {
    check_import(bytes, limits)?.plan(existing)
}

/// A backup file that passed every check that does not depend on what is stored: size, UTF-8,
/// nesting depth, format and version, types, string lengths, ids, duplicates and references inside
/// the file. Look up the records it names ([`CheckedImport::conversation_ids`] and friends), then
/// [`CheckedImport::plan`] against them.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedImport {
    file: BackupFile,
    /// Set for other apps' exports ([`CheckedImport::from_bundles`]): a message that is new to a
    /// conversation already stored is appended after its last seq instead of keeping the file's.
    append: bool,
}

/// Checks a backup file completely, except against what is stored. Never panics, whatever the bytes.
pub fn check_import(bytes: &[u8], limits: &ImportLimits) -> Result<CheckedImport, ImportError> {
    if bytes.len() > limits.max_bytes {
        return Err(ImportError::TooLarge {
            size: bytes.len(),
            limit: limits.max_bytes,
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| ImportError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(ImportError::Empty);
    }
    check_depth(text.as_bytes(), limits.max_depth)?;
    // A backup is an object; serde would also read a struct from an array, so check first.
    if !text.trim_start().starts_with('{') {
        // Still report a broken file as broken rather than as "not a backup".
        serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(json_error)?;
        return Err(ImportError::NotABackup {
            found: "not a JSON object".into(),
        });
    }
    // One parse for a good file. Only a file that fails is read again for its header, so a wrong
    // file gets "not a backup" or "unsupported version" rather than a field error.
    let file = match serde_json::from_str::<BackupFile>(text) {
        Ok(f) if f.format == FORMAT && f.version == VERSION => f,
        parsed => {
            check_header(text)?;
            return Err(match parsed {
                Err(e) => json_error(e),
                Ok(f) => ImportError::NotABackup {
                    found: clip(&f.format, 60),
                },
            });
        }
    };
    check_file(&file, limits)?;
    Ok(CheckedImport {
        file,
        append: false,
    })
}

impl CheckedImport {
    /// Every conversation id in the file.
    pub fn conversation_ids(&self) -> impl Iterator<Item = &str> {
        self.file
            .conversations
            .iter()
            .map(|b| b.conversation.id.as_str())
    }

    /// Every message id in the file.
    pub fn message_ids(&self) -> impl Iterator<Item = &str> {
        self.file
            .conversations
            .iter()
            .flat_map(|b| b.messages.iter().map(|m| m.id.as_str()))
    }

    /// Every entity in the file, as (scope, id).
    pub fn entity_keys(&self) -> impl Iterator<Item = (EntityScope, &str)> {
        let scoped = self.file.conversations.iter().flat_map(|b| {
            b.entities.iter().map(|e| {
                (
                    EntityScope::Conversation(b.conversation.id.clone()),
                    e.id.as_str(),
                )
            })
        });
        let shared = self
            .file
            .shared_entities
            .iter()
            .map(|e| (EntityScope::Shared, e.id.as_str()));
        scoped.chain(shared)
    }

    /// Plans the write against what is stored: skips records that exist by id, refuses ids or seqs
    /// that collide with different records.
    pub fn plan(self, existing: &ExistingIds) -> Result<ImportPlan, ImportError> {
        plan(self.file, existing, self.append)
    }

    /// Conversations converted from another app's export (`engine::import`), checked exactly like a
    /// backup file's records (ids, lengths, duplicates, references). Their plan differs in one way:
    /// a message that is new to a conversation already stored (a newer export of the same chat) is
    /// appended after that conversation's last seq ([`ExistingIds::last_seqs`]) rather than at the
    /// file's seq, so a chat continued here or in the other app never collides.
    pub fn from_bundles(
        bundles: &[ConversationBundle],
        exported_at: Millis,
        limits: &ImportLimits,
    ) -> Result<CheckedImport, ImportError> {
        let file = BackupFile {
            format: FORMAT.to_string(),
            version: VERSION,
            exported_at,
            conversations: bundles
                .iter()
                .map(|b| BConversationBundle {
                    conversation: (&b.conversation).into(),
                    messages: b.messages.iter().map(Into::into).collect(),
                    summaries: b.summaries.iter().map(Into::into).collect(),
                    entities: b.entities.iter().map(Into::into).collect(),
                })
                .collect(),
            shared_entities: Vec::new(),
        };
        check_file(&file, limits)?;
        Ok(CheckedImport { file, append: true })
    }

    /// How many conversations and messages the checked file holds.
    pub fn counts(&self) -> (usize, usize) {
        let messages = self
            .file
            .conversations
            .iter()
            .map(|b| b.messages.len())
            .sum();
        (self.file.conversations.len(), messages)
    }
}

/// Reject nesting deeper than `max` by scanning bytes, before any parser recurses. Inside a string
/// only `"` and `\\` matter, and most of a backup's bytes are string contents (message text), so
/// those are skipped 8 bytes at a time (about 3x faster than byte by byte on a 4 MB file).
pub(crate) fn check_depth(bytes: &[u8], max: usize) -> Result<(), ImportError> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        match b {
            b'"' => i = string_end(bytes, i),
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return Err(ImportError::TooDeep { limit: max });
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// The index just past the `"` that closes the string whose contents start at `i` (or the end of
/// `bytes` if it is never closed). Escapes are honoured: `\\"` does not close it.
fn string_end(bytes: &[u8], mut i: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // True if any byte of `w` equals `b` (exact: the classic zero-byte test on `w ^ b...b`).
    let has = |w: u64, b: u8| {
        let v = w ^ (ONES * u64::from(b));
        v.wrapping_sub(ONES) & !v & HIGHS != 0
    };
    loop {
        while let Some(chunk) = bytes.get(i..i + 8) {
            let w = u64::from_ne_bytes(chunk.try_into().unwrap_or([b'"'; 8]));
            if has(w, b'"') || has(w, b'\\') {
                break;
            }
            i += 8;
        }
        match bytes.get(i) {
            None => return i,
            Some(b'"') => return i + 1,
            Some(b'\\') => i += 2,
            Some(_) => i += 1,
        }
    }
}

/// Reads only `format` and `version` of a JSON object, so a wrong file gets the right message (not a
/// field error).
fn check_header(text: &str) -> Result<(), ImportError> {
    #[derive(Deserialize)]
    struct Header {
        format: Option<serde_json::Value>,
        version: Option<serde_json::Value>,
    }
    let header: Header = serde_json::from_str(text).map_err(json_error)?;
    match header.format {
        Some(serde_json::Value::String(f)) if f == FORMAT => {}
        Some(other) => {
            return Err(ImportError::NotABackup {
                found: clip(&other.to_string(), 60),
            })
        }
        None => {
            return Err(ImportError::NotABackup {
                found: "missing".into(),
            })
        }
    }
    match header.version {
        Some(v) if v.as_u64() == Some(VERSION) => Ok(()),
        Some(v) => Err(ImportError::UnsupportedVersion {
            found: clip(&v.to_string(), 60),
        }),
        None => Err(ImportError::UnsupportedVersion {
            found: "missing".into(),
        }),
    }
}

pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

fn json_error(e: serde_json::Error) -> ImportError {
    use serde_json::error::Category;
    let (line, column) = (e.line(), e.column());
    let detail = clip(&strip_position(&e.to_string()), 200);
    match e.classify() {
        Category::Eof => ImportError::Truncated { line, column },
        Category::Syntax | Category::Io => ImportError::InvalidJson {
            line,
            column,
            detail,
        },
        Category::Data if detail.starts_with("missing field") => ImportError::MissingField {
            line,
            column,
            detail,
        },
        Category::Data => ImportError::WrongType {
            line,
            column,
            detail,
        },
    }
}

/// serde_json appends " at line L column C"; the error carries those separately.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// String-length and id checks for one record. The record's name is only built for an error.
struct Checker<'a> {
    limits: &'a ImportLimits,
    name: &'a dyn Fn() -> String,
}

impl Checker<'_> {
    fn len(&self, field: &'static str, s: &str, limit: usize) -> Result<(), ImportError> {
        // Bytes bound chars from above: only count when it could matter.
        if s.len() > limit {
            let len = s.chars().count();
            if len > limit {
                return Err(ImportError::TooLong {
                    record: (self.name)(),
                    field,
                    len,
                    limit,
                });
            }
        }
        Ok(())
    }
    fn short(&self, field: &'static str, s: &str) -> Result<(), ImportError> {
        self.len(field, s, self.limits.max_short_chars)
    }
    fn text(&self, field: &'static str, s: &str) -> Result<(), ImportError> {
        self.len(field, s, self.limits.max_text_chars)
    }
    fn id(&self, field: &'static str, s: &str) -> Result<(), ImportError> {
        self.len(field, s, self.limits.max_id_chars)?;
        if s.trim().is_empty() || s.chars().any(char::is_control) {
            return Err(ImportError::InvalidValue {
                record: (self.name)(),
                detail: format!(
                    "{field} {:?} is empty or contains control characters",
                    clip(s, 40)
                ),
            });
        }
        Ok(())
    }
}

fn check_conversation(c: &BConversation, limits: &ImportLimits) -> Result<(), ImportError> {
    let k = Checker {
        limits,
        name: &|| format!("conversation {}", clip(&c.id, 60)),
    };
    k.id("id", &c.id)?;
    k.short("title", &c.title)?;
    if let Some(p) = &c.endpoint_profile_id {
        k.id("endpoint_profile_id", p)?;
    }
    if let Some(h) = &c.remote_handle {
        k.short("remote_handle.id", &h.id)?;
        k.short("remote_handle.endpoint_key", &h.endpoint_key)?;
    }
    if let Some(m) = &c.memory_overrides.memory_model {
        k.short("memory_overrides.memory_model", m)?;
    }
    Ok(())
}

fn check_message(m: &BMessage, limits: &ImportLimits) -> Result<(), ImportError> {
    let k = Checker {
        limits,
        name: &|| format!("message {}", clip(&m.id, 60)),
    };
    k.id("id", &m.id)?;
    k.id("conversation_id", &m.conversation_id)?;
    k.text("content", &m.content)?;
    for t in &m.tool_calls {
        k.short("tool_calls.id", &t.id)?;
        k.short("tool_calls.name", &t.name)?;
        k.text("tool_calls.arguments", &t.arguments)?;
        if let Some(r) = &t.result {
            k.text("tool_calls.result", r)?;
        }
    }
    if let Some(e) = &m.error {
        k.text("error", e)?;
    }
    if let Some(model) = &m.model {
        k.short("model", model)?;
    }
    Ok(())
}

fn check_summary(s: &BSummary, limits: &ImportLimits) -> Result<(), ImportError> {
    let k = Checker {
        limits,
        name: &|| {
            format!(
                "summary version {} of {}",
                s.version,
                clip(&s.conversation_id, 60)
            )
        },
    };
    k.id("conversation_id", &s.conversation_id)?;
    k.text("text", &s.text)
}

fn check_entity(e: &BEntity, limits: &ImportLimits) -> Result<(), ImportError> {
    let k = Checker {
        limits,
        name: &|| format!("entity {}", clip(&e.id, 60)),
    };
    k.id("id", &e.id)?;
    k.short("name", &e.name)?;
    for a in &e.aliases {
        k.short("aliases", a)?;
    }
    k.text("description", &e.description)?;
    for (key, value) in &e.properties {
        k.short("properties key", key)?;
        k.text("properties value", value)?;
    }
    for r in &e.relationships {
        k.id("relationships.target_id", &r.target_id)?;
        k.short("relationships.relationship", &r.relationship)?;
        if !r.strength.is_finite() || !(0.0..=1.0).contains(&r.strength) {
            return Err(ImportError::InvalidValue {
                record: (k.name)(),
                detail: format!(
                    "relationship strength {} is not between 0 and 1",
                    r.strength
                ),
            });
        }
    }
    for s in &e.source_message_ids {
        k.id("source_message_ids", s)?;
    }
    Ok(())
}

fn scope_owner(scope: &EntityScope) -> String {
    match scope {
        EntityScope::Conversation(id) => id.clone(),
        EntityScope::Shared => "(shared)".to_string(),
    }
}

/// Every record on its own, and duplicates and references inside the file.
fn check_file(file: &BackupFile, limits: &ImportLimits) -> Result<(), ImportError> {
    let mut conv_ids = HashSet::new();
    let mut msg_ids = HashSet::new();
    let mut entity_ids = HashSet::new();
    for b in &file.conversations {
        let c = &b.conversation;
        check_conversation(c, limits)?;
        if !conv_ids.insert(c.id.as_str()) {
            return Err(ImportError::DuplicateId {
                kind: "conversation",
                id: c.id.clone(),
            });
        }
        let mut seqs = HashSet::new();
        for m in &b.messages {
            check_message(m, limits)?;
            if m.conversation_id != c.id {
                return Err(ImportError::ConversationMismatch {
                    message_id: m.id.clone(),
                    listed_under: c.id.clone(),
                    claims: m.conversation_id.clone(),
                });
            }
            if !msg_ids.insert(m.id.as_str()) {
                return Err(ImportError::DuplicateId {
                    kind: "message",
                    id: m.id.clone(),
                });
            }
            if !seqs.insert(m.seq) {
                return Err(ImportError::DuplicateSeq {
                    conversation_id: c.id.clone(),
                    seq: m.seq,
                });
            }
        }
        let mut versions = HashSet::new();
        for s in &b.summaries {
            check_summary(s, limits)?;
            if s.conversation_id != c.id {
                return Err(ImportError::InvalidValue {
                    record: format!("summary version {}", s.version),
                    detail: format!(
                        "it is listed under conversation {} but says it belongs to {}",
                        c.id, s.conversation_id
                    ),
                });
            }
            if !versions.insert(s.version) {
                return Err(ImportError::DuplicateId {
                    kind: "summary version",
                    id: format!("{} of {}", s.version, c.id),
                });
            }
        }
        for e in &b.entities {
            check_entity(e, limits)?;
            if !entity_ids.insert(e.id.as_str()) {
                return Err(ImportError::DuplicateId {
                    kind: "entity",
                    id: e.id.clone(),
                });
            }
        }
    }
    for e in &file.shared_entities {
        check_entity(e, limits)?;
        if !entity_ids.insert(e.id.as_str()) {
            return Err(ImportError::DuplicateId {
                kind: "entity",
                id: e.id.clone(),
            });
        }
    }

    Ok(())
}

/// Plans a checked file against what already exists: skip the same record, refuse a different owner.
fn plan(file: BackupFile, existing: &ExistingIds, append: bool) -> Result<ImportPlan, ImportError> {
    let conv_ids: HashSet<&str> = file
        .conversations
        .iter()
        .map(|b| b.conversation.id.as_str())
        .collect();
    let mut taken_seqs: HashMap<(&str, u64), &str> = HashMap::new();
    for (id, m) in &existing.messages {
        if conv_ids.contains(m.conversation_id.as_str()) {
            taken_seqs.insert((m.conversation_id.as_str(), m.seq), id.as_str());
        }
    }
    let mut plan = ImportPlan {
        exported_at: file.exported_at,
        ..ImportPlan::default()
    };
    for b in file.conversations {
        let conv_id = b.conversation.id.clone();
        if existing.conversations.contains(&conv_id) {
            plan.skipped.conversations += 1;
        } else {
            plan.conversations.push(b.conversation.into_model()?);
            plan.added.conversations += 1;
        }
        // Other apps' exports: what is new to a stored conversation goes after its last message.
        let mut next_seq = match existing.last_seqs.get(&conv_id) {
            Some(&last) if append && existing.conversations.contains(&conv_id) => Some(last + 1),
            _ => None,
        };
        for mut m in b.messages {
            if let Some(found) = existing.messages.get(&m.id) {
                if found.conversation_id != conv_id {
                    return Err(ImportError::IdCollision {
                        kind: "message",
                        id: m.id,
                        existing: found.conversation_id.clone(),
                        incoming: conv_id,
                    });
                }
                plan.skipped.messages += 1;
                continue;
            }
            if let Some(seq) = next_seq.as_mut() {
                m.seq = *seq;
                *seq += 1;
                plan.messages.push(m.into());
                plan.added.messages += 1;
                continue;
            }
            if taken_seqs.contains_key(&(conv_id.as_str(), m.seq)) {
                return Err(ImportError::SeqCollision {
                    conversation_id: conv_id,
                    seq: m.seq,
                });
            }
            plan.messages.push(m.into());
            plan.added.messages += 1;
        }
        for s in b.summaries {
            if existing.summaries.contains(&(conv_id.clone(), s.version)) {
                plan.skipped.summaries += 1;
            } else {
                plan.summaries.push(s.into());
                plan.added.summaries += 1;
            }
        }
        let scope = EntityScope::Conversation(conv_id.clone());
        for e in b.entities {
            plan_entity(&mut plan, existing, e, scope.clone())?;
        }
    }
    for e in file.shared_entities {
        plan_entity(&mut plan, existing, e, EntityScope::Shared)?;
    }
    Ok(plan)
}

fn plan_entity(
    plan: &mut ImportPlan,
    existing: &ExistingIds,
    e: BEntity,
    scope: EntityScope,
) -> Result<(), ImportError> {
    match existing.entities.get(&e.id) {
        Some(found) if *found == scope => {
            plan.skipped.entities += 1;
            Ok(())
        }
        Some(found) => Err(ImportError::IdCollision {
            kind: "entity",
            id: e.id,
            existing: scope_owner(found),
            incoming: scope_owner(&scope),
        }),
        None => {
            plan.entities.push(e.into_model(scope));
            plan.added.entities += 1;
            Ok(())
        }
    }
}
