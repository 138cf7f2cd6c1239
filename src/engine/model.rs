//! The data model: conversations, messages, summaries, the entity graph, memory config and endpoint
//! profiles. Plain data with serde derives (used for in-memory transfer and tests); the store keeps its
//! own record types and converts to and from these explicitly.
//! Must not import anything outside `crate::engine` (no web crates, no clock, no randomness).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Milliseconds since the Unix epoch. The engine never reads a clock: callers pass `now` in.
pub type Millis = i64;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "system" => Some(Role::System),
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" => Some(Role::Tool),
            _ => None,
        }
    }
}

/// Lifecycle of a message. A user message is `Complete` as soon as it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageStatus {
    Complete,
    Streaming,
    Interrupted,
    Error,
}

impl MessageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Complete => "complete",
            MessageStatus::Streaming => "streaming",
            MessageStatus::Interrupted => "interrupted",
            MessageStatus::Error => "error",
        }
    }
    pub fn parse(s: &str) -> Option<MessageStatus> {
        match s {
            "complete" => Some(MessageStatus::Complete),
            "streaming" => Some(MessageStatus::Streaming),
            "interrupted" => Some(MessageStatus::Interrupted),
            "error" => Some(MessageStatus::Error),
            _ => None,
        }
    }
}

/// A tool call made by the assistant, with its result once known.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them (JSON text; not checked).
    pub arguments: String,
    /// What the model was (or will be) shown: the tool's output, capped (`engine::tools`), or the
    /// failure's or refusal's words.
    pub result: Option<String>,
    /// Where the call stands (`engine::tools`). `None`: stored before calls were run (an older
    /// build, an import), read by [`ToolCall::status`]; formats leave it out then, so what older
    /// builds wrote stays byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
}

impl ToolCall {
    /// The call's status: the stored one, else `Done` when it has a result and `Interrupted`
    /// when it has none (a call of an older build or an import that no one will run now).
    pub fn status(&self) -> ToolStatus {
        self.status.unwrap_or(if self.result.is_some() {
            ToolStatus::Done
        } else {
            ToolStatus::Interrupted
        })
    }
}

/// Where a tool call stands: the UI contract's `data-status` of `tool-call`. Serialised as its
/// [`ToolStatus::as_str`] by hand: serde's derive for an enum costs the first load about 1 KB of
/// wasm for six words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolStatus {
    /// Asked for; waiting for the user's Allow / Deny (or an "always allow").
    Waiting,
    /// Allowed and running.
    Running,
    /// Ran; its result is the tool's output.
    Done,
    /// The user said no; its result is the refusal the model is shown.
    Denied,
    /// Ran and failed; its result is the failure the model is shown.
    Failed,
    /// Stopped or cut off (Stop, a reload, the step cap) before it ran or finished: never run
    /// again.
    Interrupted,
}

impl ToolStatus {
    pub const ALL: [ToolStatus; 6] = [
        ToolStatus::Waiting,
        ToolStatus::Running,
        ToolStatus::Done,
        ToolStatus::Denied,
        ToolStatus::Failed,
        ToolStatus::Interrupted,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Waiting => "waiting",
            ToolStatus::Running => "running",
            ToolStatus::Done => "done",
            ToolStatus::Denied => "denied",
            ToolStatus::Failed => "failed",
            ToolStatus::Interrupted => "interrupted",
        }
    }
    pub fn parse(s: &str) -> Option<ToolStatus> {
        ToolStatus::ALL.into_iter().find(|t| t.as_str() == s)
    }
    /// Answered: nothing more will happen to the call.
    pub fn is_settled(self) -> bool {
        !matches!(self, ToolStatus::Waiting | ToolStatus::Running)
    }
}

impl Serialize for ToolStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ToolStatus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ToolStatus::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown tool status {s:?}")))
    }
}

/// Token usage as reported by an endpoint for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
}

/// Extra facts attached to a message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MessageMeta {
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    pub error: Option<String>,
    /// Which path the turn that produced this assistant message took.
    pub path: Option<TurnPath>,
    /// Endpoint model that produced it, if known.
    pub model: Option<String>,
    /// The message this one follows (its parent in the conversation's tree, see `engine::branch`).
    /// `None`: the message before it by seq, which is how every message stored before branches
    /// existed (and every import) reads: a linear chain.
    #[serde(default)]
    pub after: Option<String>,
    /// The message this one is an alternative of (a regenerated reply, an edited user message): it
    /// has that message's parent, and the user pages between them.
    #[serde(default)]
    pub replaces: Option<String>,
    /// Deleted by the user: a tombstone. The record stays without its text, so the messages after
    /// it keep their place in the tree.
    #[serde(default)]
    pub deleted: bool,
    /// Hidden from the model: shown in the chat (marked), never sent in a prompt nor read by a
    /// memory update. An import's: a message its source app kept out of the prompt (SillyTavern's
    /// `is_system`).
    #[serde(default)]
    pub hidden: bool,
    /// The model's reasoning before this reply (its thinking), apart from the content: kept and
    /// shown, never sent back in a prompt nor read by memory updates or titles.
    #[serde(default)]
    pub reasoning: Option<Reasoning>,
    /// How the reply was generated, where the server reported it (tokens, time to first token,
    /// speed); shown quietly under it.
    #[serde(default)]
    pub stats: Option<GenerationStats>,
    /// Images and files the user attached (`engine::attach`). Messages stored before attachments
    /// existed have none.
    #[serde(default)]
    pub attachments: Vec<Attachment>,
    /// The reply was cut by the reply cap the request carried (each protocol's own signal,
    /// `engine::turn::capped_by`): whole as far as it goes, and Continue asks for the rest. Records
    /// stored before replies had a cap read `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capped: bool,
}

/// What an attachment is: an image (its bytes a Blob in the store, content-addressed by `hash`) or
/// a text file (its text carried in [`Attachment::text`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentKind {
    #[default]
    Image,
    File,
}

impl AttachmentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AttachmentKind::Image => "image",
            AttachmentKind::File => "file",
        }
    }
    pub fn parse(s: &str) -> Option<AttachmentKind> {
        match s {
            "image" => Some(AttachmentKind::Image),
            "file" => Some(AttachmentKind::File),
            _ => None,
        }
    }
}

/// One image or file on a user message. `hash` is the SHA-256 (lowercase hex) of the stored bytes
/// (an image's resized encoding, a file's text), so the same content is stored once.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Attachment {
    pub kind: AttachmentKind,
    pub name: String,
    pub mime: String,
    /// Bytes stored (an image after resizing).
    pub size: u64,
    pub hash: String,
    /// Pixels, for images (0 for files): what the token rules read.
    #[serde(default)]
    pub width: u32,
    #[serde(default)]
    pub height: u32,
    /// A text file's text (empty for images).
    #[serde(default)]
    pub text: String,
}

/// Figures of one reply's generation: the tokens the server reported, and the time to the first
/// token and the speed it reported (llama.cpp `timings`, Ollama's durations) or, when it reported
/// none, as measured from the request and the stream's pieces.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct GenerationStats {
    pub tokens: u32,
    #[serde(default)]
    pub first_token_ms: Option<u32>,
    #[serde(default)]
    pub tokens_per_s: Option<f32>,
    /// Prompt tokens the server read from its cache, when it reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u32>,
}

/// What a reasoning model thought before it answered, and when.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Reasoning {
    pub text: String,
    /// When its first piece arrived.
    pub started_at: Millis,
    /// When the answer began (or the reply ended); `None` while the model is still thinking.
    #[serde(default)]
    pub ended_at: Option<Millis>,
}

impl Reasoning {
    /// Whole seconds the model thought, at least 1; `None` while it is still thinking.
    pub fn seconds(&self) -> Option<u64> {
        let ms = self.ended_at?.saturating_sub(self.started_at).max(0);
        Some(((ms as u64 + 500) / 1000).max(1))
    }
}

/// One message of a conversation. `id` is generated once by the caller and never changes;
/// `seq` is monotonic per conversation and assigned by the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    pub conversation_id: String,
    pub seq: u64,
    pub role: Role,
    pub content: String,
    pub status: MessageStatus,
    pub created_at: Millis,
    pub meta: MessageMeta,
}

impl Message {
    /// A new message the user wrote, complete, not yet stored (the store assigns `seq`); `meta`
    /// places it on a branch (`after`) or makes it an alternative (`replaces`).
    pub fn from_user(
        id: String,
        conversation_id: &str,
        content: String,
        now: Millis,
        meta: MessageMeta,
    ) -> Self {
        Message {
            id,
            conversation_id: conversation_id.to_string(),
            seq: 0,
            role: Role::User,
            content,
            status: MessageStatus::Complete,
            created_at: now,
            meta,
        }
    }
}

/// How a turn reached the agent. Recorded on every assistant message and on the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnPath {
    /// Continued a live remote session with only the new message.
    Resumed,
    /// Sent the full assembled context (stateless endpoint, or a dead remote session).
    Reinjected,
    /// First turn of a conversation: nothing to resume or re-inject.
    Fresh,
}

impl TurnPath {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnPath::Resumed => "resumed",
            TurnPath::Reinjected => "reinjected",
            TurnPath::Fresh => "fresh",
        }
    }
    pub fn parse(s: &str) -> Option<TurnPath> {
        match s {
            "resumed" => Some(TurnPath::Resumed),
            "reinjected" => Some(TurnPath::Reinjected),
            "fresh" => Some(TurnPath::Fresh),
            _ => None,
        }
    }
}

/// A server-side session the endpoint can continue (e.g. a Responses API `previous_response_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteHandle {
    pub id: String,
    /// The endpoint profile the handle belongs to; a handle is only valid for that endpoint.
    pub endpoint_key: String,
    /// Seq of the last message the remote side is known to have seen.
    pub covers_up_to_seq: u64,
    pub confirmed_at: Millis,
    /// Set once the endpoint said the session is gone; a dead handle is never used again.
    pub dead: bool,
}

/// How history is sent to the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum HistoryFormat {
    /// A structured messages array (chat APIs).
    #[default]
    Messages,
    /// One text block inside a `<conversation_history>` preamble (single-prompt endpoints).
    Transcript,
}

/// Memory settings. Every field has a default; a conversation may override any of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryConfig {
    /// N: recent messages always kept in the prompt (budget permitting).
    pub recent_messages: usize,
    /// M: user/assistant pairs between memory updates.
    pub summary_every_pairs: usize,
    /// The endpoint's context window, in tokens.
    pub context_tokens: u32,
    /// Tokens kept free for the reply.
    pub reply_reserve_tokens: u32,
    /// Longer messages are truncated with a visible `[truncated]` marker.
    pub max_message_chars: usize,
    pub history_format: HistoryFormat,
    /// Hard cap on the request body size, in bytes.
    pub max_request_bytes: usize,
    /// "Remember me across conversations": facts about the user are taken in from what they say
    /// and carried in every conversation's prompt. On unless the user turns it off (settings saved
    /// before it existed read as on).
    #[serde(default = "on")]
    pub user_memory: bool,
}

fn on() -> bool {
    true
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            recent_messages: 10,
            summary_every_pairs: 5,
            context_tokens: 8192,
            reply_reserve_tokens: 1024,
            max_message_chars: 2000,
            history_format: HistoryFormat::Messages,
            max_request_bytes: 1_000_000,
            user_memory: true,
        }
    }
}

/// Per-conversation overrides of [`MemoryConfig`]; `None` means "use the global setting".
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MemoryOverrides {
    pub recent_messages: Option<usize>,
    pub summary_every_pairs: Option<usize>,
    pub context_tokens: Option<u32>,
    pub reply_reserve_tokens: Option<u32>,
    pub max_message_chars: Option<usize>,
    pub history_format: Option<HistoryFormat>,
    /// The model this conversation's memory updates use (see `Settings::memory_endpoint_for`).
    #[serde(default)]
    pub memory_model: Option<String>,
    /// The chat model this conversation's turns use (the header's model picker); `None`: the
    /// model in Settings (see `Settings::chat_endpoint_for`).
    #[serde(default)]
    pub model: Option<String>,
    /// "Use memory about me" in this conversation (`None`: as Settings say): off, its prompts carry
    /// no fact about the user and what is said in it is not taken in.
    #[serde(default)]
    pub user_memory: Option<bool>,
    /// This conversation's system prompt, used instead of the one in Settings.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// The project the conversation belongs to (a [`Project`] id; `None`: none). Kept here, with the
    /// other settings that shape the conversation's prompts, so that the store records, backups,
    /// sync and the tab wire carry it as they carry the rest (see `engine::project`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

impl MemoryOverrides {
    /// The effective config: each override replaces the matching global field.
    pub fn apply(&self, base: &MemoryConfig) -> MemoryConfig {
        MemoryConfig {
            recent_messages: self.recent_messages.unwrap_or(base.recent_messages),
            summary_every_pairs: self.summary_every_pairs.unwrap_or(base.summary_every_pairs),
            context_tokens: self.context_tokens.unwrap_or(base.context_tokens),
            reply_reserve_tokens: self
                .reply_reserve_tokens
                .unwrap_or(base.reply_reserve_tokens),
            max_message_chars: self.max_message_chars.unwrap_or(base.max_message_chars),
            history_format: self.history_format.unwrap_or(base.history_format),
            max_request_bytes: base.max_request_bytes,
            user_memory: self.user_memory.unwrap_or(base.user_memory),
        }
    }
}

/// A conversation (thread).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    pub id: String,
    pub title: String,
    /// True once the user renamed it; auto-titling never overwrites a user title.
    pub title_is_custom: bool,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub message_count: u64,
    pub endpoint_profile_id: Option<String>,
    pub remote_handle: Option<RemoteHandle>,
    /// The path the last turn took, shown as the continuity badge.
    pub last_path: Option<TurnPath>,
    pub memory_overrides: MemoryOverrides,
}

/// A project: conversations grouped under a name, with their own instructions (joined to the
/// system prompt) and their own scope of facts about the user (`engine::project`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    pub id: String,
    pub name: String,
    /// Added after the system prompt of each of its conversations; empty: none.
    pub instructions: String,
    pub created_at: Millis,
    /// When its name or instructions last changed (the newer copy's win when two meet).
    pub updated_at: Millis,
    /// When it was deleted: a tombstone that syncs and wins over any live copy.
    pub deleted: Option<Millis>,
}

/// A version of the rolling summary. Every version is kept so a bad summary can be rolled back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationSummary {
    pub conversation_id: String,
    pub version: u32,
    pub text: String,
    /// Highest message seq the summary covers.
    pub covers_up_to_seq: u64,
    /// Messages in the conversation when the summary was made.
    pub message_count: u64,
    pub updated_at: Millis,
}

/// Kind of an entity in the memory graph. Unknown kinds parse as `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum EntityType {
    Person,
    Place,
    Concept,
    Event,
    Task,
    Other,
}

impl EntityType {
    pub const ALL: [EntityType; 6] = [
        EntityType::Person,
        EntityType::Place,
        EntityType::Concept,
        EntityType::Event,
        EntityType::Task,
        EntityType::Other,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            EntityType::Person => "person",
            EntityType::Place => "place",
            EntityType::Concept => "concept",
            EntityType::Event => "event",
            EntityType::Task => "task",
            EntityType::Other => "other",
        }
    }
    /// Lenient: case-insensitive, anything unknown is `Other`.
    pub fn parse_lenient(s: &str) -> EntityType {
        match s.trim().to_ascii_lowercase().as_str() {
            "person" => EntityType::Person,
            "place" => EntityType::Place,
            "concept" => EntityType::Concept,
            "event" => EntityType::Event,
            "task" => EntityType::Task,
            _ => EntityType::Other,
        }
    }
}

/// A directed, typed edge of the entity graph with a validity interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relationship {
    pub target_id: String,
    pub relationship: String,
    /// 0.0..=1.0
    pub strength: f32,
    pub valid_from: Millis,
    /// Set when a later update contradicts the relationship; it is closed, never deleted.
    pub valid_to: Option<Millis>,
}

/// A property value that no longer holds, with when it did (`valid_from` 0: unknown).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PastProperty {
    pub key: String,
    pub value: String,
    pub valid_from: Millis,
    pub valid_to: Millis,
}

/// Where an entity lives: in one conversation, or shared by all.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EntityScope {
    Conversation(String),
    Shared,
}

/// A node of the entity-memory graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityNode {
    pub id: String,
    pub scope: EntityScope,
    pub entity_type: EntityType,
    pub name: String,
    pub aliases: Vec<String>,
    pub description: String,
    /// The current properties (facts).
    pub properties: BTreeMap<String, String>,
    /// When each current property became true (the day of the message that said it); a key without
    /// one was stored before properties had validity: current, since unknown.
    #[serde(default)]
    pub property_since: BTreeMap<String, Millis>,
    /// Property values a newer one superseded, kept with when they held (oldest first); never
    /// carried into a prompt as current.
    #[serde(default)]
    pub past_properties: Vec<PastProperty>,
    pub relationships: Vec<Relationship>,
    /// Ids of the messages that contributed to this node.
    pub source_message_ids: Vec<String>,
    pub updated_at: Millis,
}

impl EntityNode {
    /// Moves the current property `key` to `past_properties`, held from its `property_since` (or
    /// unknown: 0) until `until` (never before it began). Whether there was one.
    pub fn retire_property(&mut self, key: &str, until: Millis) -> bool {
        let Some(value) = self.properties.remove(key) else {
            return false;
        };
        let since = self.property_since.remove(key).unwrap_or(0);
        self.past_properties.push(PastProperty {
            key: key.to_string(),
            value,
            valid_from: since,
            valid_to: until.max(since),
        });
        true
    }
}

/// What a fact about the user is about. Unknown kinds parse as `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum FactKind {
    Name,
    Home,
    Work,
    People,
    Pets,
    Preference,
    Health,
    Project,
    Other,
}

impl FactKind {
    pub const ALL: [FactKind; 9] = [
        FactKind::Name,
        FactKind::Home,
        FactKind::Work,
        FactKind::People,
        FactKind::Pets,
        FactKind::Preference,
        FactKind::Health,
        FactKind::Project,
        FactKind::Other,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            FactKind::Name => "name",
            FactKind::Home => "home",
            FactKind::Work => "work",
            FactKind::People => "people",
            FactKind::Pets => "pets",
            FactKind::Preference => "preference",
            FactKind::Health => "health",
            FactKind::Project => "project",
            FactKind::Other => "other",
        }
    }
    /// Lenient: case-insensitive, anything unknown is `Other`.
    pub fn parse_lenient(s: &str) -> FactKind {
        let s = s.trim().to_ascii_lowercase();
        FactKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .unwrap_or(FactKind::Other)
    }
    /// The always-on core a prompt carries first (who the user is, where they live and work, their
    /// people).
    pub fn is_core(self) -> bool {
        matches!(
            self,
            FactKind::Name | FactKind::Home | FactKind::Work | FactKind::People
        )
    }
}

/// Where a fact about the user was said: the conversation, the user's message, and when.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FactSource {
    pub conversation_id: String,
    pub message_id: String,
    pub said_at: Millis,
}

/// A durable fact about the user, shared by every conversation (`engine::memory::user`): one
/// sentence in the user's words, with where it was said. Superseded facts are kept as past
/// (`valid_to`), forgotten ones as tombstones (`forgotten`); neither is ever carried as current.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserFact {
    pub id: String,
    /// One sentence in the user's words ("I live in Oslo now."), or the user's edit of it.
    pub text: String,
    pub kind: FactKind,
    /// What the sentence claims, for supersession and grouping (`lives_in`, `job`, `name`,
    /// `has dog`, `likes coffee`, `ended biscuit`; several joined by `+`; empty when it makes no
    /// claim the rules know). Derived from `text` (`memory::user::claim_key`), again on an edit.
    pub claim_key: String,
    /// `None` for a fact the user added by hand.
    pub source: Option<FactSource>,
    /// When it began to hold: when it was said (or added).
    pub valid_from: Millis,
    /// When a newer fact superseded it: kept as past, never carried as current.
    pub valid_to: Option<Millis>,
    /// When the user forgot it: a tombstone that leaves every prompt, syncs, and keeps the same
    /// sentence from the same source from being added again.
    pub forgotten: Option<Millis>,
    /// A project id; `None`: about the user, in every conversation.
    pub scope: Option<String>,
    pub updated_at: Millis,
}

impl UserFact {
    /// Neither superseded nor forgotten.
    pub fn is_current(&self) -> bool {
        self.valid_to.is_none() && self.forgotten.is_none()
    }
}

/// The wire protocol an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Protocol {
    #[default]
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    #[serde(rename = "ollama")]
    Ollama,
    #[serde(rename = "anthropic")]
    Anthropic,
}

impl Protocol {
    pub const ALL: [Protocol; 4] = [
        Protocol::OpenAiChat,
        Protocol::OpenAiResponses,
        Protocol::Ollama,
        Protocol::Anthropic,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::OpenAiChat => "openai-chat",
            Protocol::OpenAiResponses => "openai-responses",
            Protocol::Ollama => "ollama",
            Protocol::Anthropic => "anthropic",
        }
    }
    pub fn parse(s: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.as_str() == s)
    }
    /// The protocol as people know it: the servers that speak it, never the wire name.
    pub fn label(self) -> &'static str {
        match self {
            Protocol::OpenAiChat => "OpenAI-compatible (Ollama, llama.cpp, LM Studio, vLLM)",
            Protocol::OpenAiResponses => "OpenAI Responses",
            Protocol::Ollama => "Ollama (native)",
            Protocol::Anthropic => "Anthropic",
        }
    }
    /// Whether the endpoint can keep a conversation server-side that a later turn may continue.
    pub fn is_stateful(self) -> bool {
        matches!(self, Protocol::OpenAiResponses)
    }
}

/// Where and how to reach an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct EndpointProfile {
    pub id: String,
    pub base_url: String,
    pub protocol: Protocol,
    pub model: String,
    /// Stored locally only; never exported.
    pub api_key: Option<String>,
    /// The origin (`scheme://host[:port]`) the key was given for: it is sent there only
    /// (`engine::settings::key_use`). Empty: not bound yet (a key saved before keys were bound, or
    /// typed before any URL), which binds it to the URL's origin when the settings are saved or read.
    #[serde(default)]
    pub key_origin: String,
    pub system_prompt: String,
    /// "Don't send memory about me to this endpoint": no request to it carries a fact about the
    /// user (for a cloud endpoint the user does not want to profile them).
    #[serde(default)]
    pub no_user_memory: bool,
}

impl EndpointProfile {
    /// Identifies the remote side a session handle belongs to (protocol + url + model).
    pub fn key(&self) -> String {
        format!(
            "{}|{}|{}",
            self.protocol.as_str(),
            self.base_url.trim_end_matches('/'),
            self.model
        )
    }
}

/// How hard a reasoning model should think, where its protocol has a knob for it (see
/// `engine::request::build_with_reasoning` for what each protocol is sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    pub const ALL: [ReasoningEffort; 3] = [
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }

    pub fn parse(s: &str) -> Option<ReasoningEffort> {
        ReasoningEffort::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// Anthropic's `thinking.budget_tokens` for this effort (its minimum is 1,024).
    pub fn anthropic_budget(self) -> u32 {
        match self {
            ReasoningEffort::Low => 2048,
            ReasoningEffort::Medium => 8192,
            ReasoningEffort::High => 24576,
        }
    }
}

/// One message as sent on the wire (after truncation and formatting).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireMessage {
    pub role: Role,
    pub content: String,
    /// The images the message carries (a user message's attachments), in order; the request
    /// builders put them in each protocol's form (`engine::request`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<WireImage>,
    /// The tool calls a stored reply made, with their results (results already cut to the
    /// message's share, `engine::history::render_message`): the request builders send them in
    /// each protocol's own form before the message's text (`engine::request`, "Tools").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

impl WireMessage {
    /// A message of text alone.
    pub fn text(role: Role, content: String) -> Self {
        WireMessage {
            role,
            content,
            images: Vec::new(),
            tool_calls: Vec::new(),
        }
    }
}

/// An image as a request carries it: the assembly names it (by hash, with its pixels for the token
/// rules); the driver fills `data` (base64 of the stored bytes) just before the request is built.
/// An image whose `data` stays empty (not stored on this device) goes as its `[image: name]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireImage {
    pub name: String,
    pub mime: String,
    pub hash: String,
    pub width: u32,
    pub height: u32,
    /// Bytes stored (what the request's byte count reads: base64 is 4/3 of it).
    #[serde(default)]
    pub size: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub data: String,
}

/// What a request carries, independent of protocol: the system text and the messages in order.
/// Protocol rules (Anthropic's separate system and alternation) are applied when it is built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Prompt {
    pub system: String,
    pub messages: Vec<WireMessage>,
}
