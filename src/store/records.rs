//! The store's own record types (what is on disk, with explicit field names) and their explicit
//! conversions to and from the engine's types: the one place the model meets the stored shape. A
//! record that mirrors a model type is one field table (`engine::shape::mirror!`: the struct, and
//! both conversions derived from it); a record with fields of the store's own (a conversation's
//! `last_seq`, a message's index terms) converts by hand, destructuring without `..`. Either way a
//! new model field fails to compile here until it is stored. How a field's stored form differs
//! from the model's (an enum as its word, a scope as its key) is one `Field` impl below. Reading a
//! record never panics: unknown roles, statuses, paths or entity scopes are
//! [`StoreError::BadRecord`]. `tests/browser_store_shapes.rs` pins every record byte for byte.
//! Imports only `crate::engine` (the model, `shape`, `search`) and serde.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::StoreError;
use crate::engine::model::GenerationStats;
use crate::engine::model::{
    Attachment, AttachmentKind, Conversation, ConversationSummary, EntityNode, EntityScope,
    EntityType, HistoryFormat, MemoryOverrides, Message, MessageMeta, MessageStatus, Millis,
    PastProperty, Reasoning, Relationship, RemoteHandle, Role, ToolCall, ToolStatus, TurnPath,
    Usage,
};
use crate::engine::model::{FactKind, FactSource, Project, UserFact};
use crate::engine::search::index_terms;
use crate::engine::shape::take;
use crate::engine::shape::{mirror, Field};

/// Scope key of entities shared by every conversation (conversation ids never start with NUL).
pub const SHARED_SCOPE: &str = "\u{0}shared";

fn bad(what: &'static str, detail: String) -> StoreError {
    StoreError::BadRecord { what, detail }
}

/// The model's value of a record (`what` names it in the error).
pub fn read<M, R: Field<M>>(r: R, what: &'static str) -> Result<M, StoreError> {
    r.take().map_err(|detail| bad(what, detail))
}

/// Model enums stored as their word: an unknown word is a bad record (never a panic).
macro_rules! stored_as_word {
    ($($model:ident: $name:literal, $as_str:expr, $parse:expr;)*) => {
        $(impl Field<$model> for String {
            fn put(m: &$model) -> Self {
                $as_str(*m).to_string()
            }
            fn take(self) -> Result<$model, String> {
                $parse(&self).ok_or_else(|| format!(concat!("unknown ", $name, " '{}'"), self))
            }
        })*
    };
}

stored_as_word! {
    Role: "role", Role::as_str, Role::parse;
    MessageStatus: "status", MessageStatus::as_str, MessageStatus::parse;
    TurnPath: "turn path", TurnPath::as_str, TurnPath::parse;
    HistoryFormat: "history format", format_str, format_parse;
    AttachmentKind: "kind", AttachmentKind::as_str, AttachmentKind::parse;
    EntityType: "entity type", EntityType::as_str, entity_type_parse;
    ToolStatus: "tool status", ToolStatus::as_str, ToolStatus::parse;
}

fn format_str(f: HistoryFormat) -> &'static str {
    match f {
        HistoryFormat::Messages => "messages",
        HistoryFormat::Transcript => "transcript",
    }
}

fn format_parse(s: &str) -> Option<HistoryFormat> {
    [HistoryFormat::Messages, HistoryFormat::Transcript]
        .into_iter()
        .find(|f| format_str(*f) == s)
}

/// Strict, unlike `EntityType::parse_lenient`: a stored type is always one this build wrote.
fn entity_type_parse(s: &str) -> Option<EntityType> {
    EntityType::ALL.into_iter().find(|t| t.as_str() == s)
}

// ---------------------------------------------------------------- conversations

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct RemoteHandleRecord for RemoteHandle {
        pub id: String,
        pub endpoint_key: String,
        pub covers_up_to_seq: u64,
        pub confirmed_at: Millis,
        pub dead: bool,
    }
}

mirror! {
    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    pub struct OverridesRecord for MemoryOverrides {
        pub recent_messages: Option<u64>,
        pub summary_every_pairs: Option<u64>,
        pub context_tokens: Option<u32>,
        pub reply_reserve_tokens: Option<u32>,
        pub max_message_chars: Option<u64>,
        pub history_format: Option<String>,
        #[serde(default)]
        pub memory_model: Option<String>,
        #[serde(default)]
        pub model: Option<String>,
        #[serde(default)]
        pub system_prompt: Option<String>,
        #[serde(default)]
        pub user_memory: Option<bool>,
        /// The project the conversation is in (`engine::project`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub project: Option<String>,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationRecord {
    pub id: String,
    pub title: String,
    pub title_is_custom: bool,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub message_count: u64,
    /// Highest seq given out in this conversation (the next append gets `last_seq + 1`).
    pub last_seq: u64,
    pub endpoint_profile_id: Option<String>,
    pub remote_handle: Option<RemoteHandleRecord>,
    pub last_path: Option<String>,
    #[serde(default)]
    pub overrides: OverridesRecord,
    /// The title's search terms (`engine::search::index_terms`), under the `by_title_term`
    /// multiEntry index; derived from `title` on every write, never read back into the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub title_terms: Vec<String>,
}

impl From<&Conversation> for ConversationRecord {
    fn from(c: &Conversation) -> Self {
        // Destructured without `..`: a new model field fails to compile here until it is stored.
        let Conversation {
            id,
            title,
            title_is_custom,
            created_at,
            updated_at,
            message_count,
            endpoint_profile_id,
            remote_handle,
            last_path,
            memory_overrides,
        } = c;
        ConversationRecord {
            id: id.clone(),
            title: title.clone(),
            title_is_custom: *title_is_custom,
            created_at: *created_at,
            updated_at: *updated_at,
            message_count: *message_count,
            last_seq: 0,
            endpoint_profile_id: endpoint_profile_id.clone(),
            remote_handle: Field::put(remote_handle),
            last_path: Field::put(last_path),
            overrides: Field::put(memory_overrides),
            title_terms: index_terms(title),
        }
    }
}

impl TryFrom<ConversationRecord> for Conversation {
    type Error = StoreError;
    fn try_from(r: ConversationRecord) -> Result<Self, StoreError> {
        // `last_seq` and `title_terms` are the store's own (derived on every write).
        let ConversationRecord {
            id,
            title,
            title_is_custom,
            created_at,
            updated_at,
            message_count,
            last_seq: _,
            endpoint_profile_id,
            remote_handle,
            last_path,
            overrides,
            title_terms: _,
        } = r;
        let bad = |detail| bad("conversation", detail);
        Ok(Conversation {
            id,
            title,
            title_is_custom,
            created_at,
            updated_at,
            message_count,
            endpoint_profile_id,
            remote_handle: take("remote_handle", remote_handle).map_err(bad)?,
            last_path: take("last_path", last_path).map_err(bad)?,
            memory_overrides: take("overrides", overrides).map_err(bad)?,
        })
    }
}

// ---------------------------------------------------------------- messages

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ToolCallRecord for ToolCall {
        pub id: String,
        pub name: String,
        pub arguments: String,
        pub result: Option<String>,
        /// Absent in records of older builds (and while a call has none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub status: Option<String>,
    }
}

mirror! {
    #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
    pub struct UsageRecord for Usage {
        pub prompt_tokens: u32,
        pub completion_tokens: u32,
    }
}

mirror! {
    /// How a reply was generated: tokens, time to first token (ms), tokens per second.
    #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
    pub struct StatsRecord for GenerationStats {
        pub tokens: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub first_token_ms: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub tokens_per_s: Option<f32>,
        /// Prompt tokens the server read from its cache; none in older records.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub cached_tokens: Option<u32>,
    }
}

mirror! {
    /// A reply's reasoning (the model's thinking), with when it started and ended.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ReasoningRecord for Reasoning {
        pub text: String,
        pub started_at: Millis,
        #[serde(default)]
        pub ended_at: Option<Millis>,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageRecord {
    pub id: String,
    pub conversation_id: String,
    pub seq: u64,
    pub role: String,
    pub content: String,
    pub status: String,
    pub created_at: Millis,
    #[serde(default)]
    pub tool_calls: Vec<ToolCallRecord>,
    #[serde(default)]
    pub usage: Option<UsageRecord>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// `Some(1)` only while the message is streaming, absent otherwise: the `by_streaming` index is
    /// sparse (IndexedDB skips records without the key), so finished messages cost no index entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<u8>,
    /// The content's search terms (`engine::search::index_terms`), under the `by_term` multiEntry
    /// index; derived from `content` on every write, never read back into the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<String>,
    /// Branch links and the tombstone (`engine::branch`). Records written before branches have
    /// none of them and read as a linear chain, so no migration rewrites them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// Hidden from the model (`MessageMeta::hidden`); absent in records written before it, where
    /// no message is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// The reply's reasoning; records written before it was kept have none (no migration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningRecord>,
    /// The reply's generation figures; none in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<StatsRecord>,
    /// Cut by the reply cap (`MessageMeta::capped`); older records read as not (no migration).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capped: bool,
    /// The user's images and files (records written before attachments have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentRecord>,
    /// The hashes of the images' Blobs (`schema::ATTACHMENTS`), under the `by_attachment`
    /// multiEntry index: whether any message still uses a Blob is one index count. Derived from
    /// `attachments` on every write, never read back into the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachment_hashes: Vec<String>,
}

mirror! {
    /// One attachment as stored on its message (an image's bytes are a Blob in
    /// `schema::ATTACHMENTS` under `hash`; a file's text is here).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct AttachmentRecord for Attachment {
        pub kind: String,
        pub name: String,
        pub mime: String,
        pub size: u64,
        pub hash: String,
        #[serde(default, skip_serializing_if = "is_zero")]
        pub width: u32,
        #[serde(default, skip_serializing_if = "is_zero")]
        pub height: u32,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub text: String,
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The Blob hashes a message's attachments use (images only: a file's text lives on the message).
pub fn blob_hashes(attachments: &[Attachment]) -> Vec<String> {
    let mut out: Vec<String> = attachments
        .iter()
        .filter(|a| a.kind == AttachmentKind::Image && !a.hash.is_empty())
        .map(|a| a.hash.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The sparse-index marker for a status.
pub fn streaming_marker(status: MessageStatus) -> Option<u8> {
    (status == MessageStatus::Streaming).then_some(1)
}

impl From<&Message> for MessageRecord {
    fn from(m: &Message) -> Self {
        // Destructured without `..`: a new model field fails to compile here until it is stored.
        let Message {
            id,
            conversation_id,
            seq,
            role,
            content,
            status,
            created_at,
            meta,
        } = m;
        let MessageMeta {
            tool_calls,
            usage,
            error,
            path,
            model,
            after,
            replaces,
            deleted,
            hidden,
            reasoning,
            stats,
            attachments,
            capped,
        } = meta;
        MessageRecord {
            id: id.clone(),
            conversation_id: conversation_id.clone(),
            seq: *seq,
            role: Field::put(role),
            content: content.clone(),
            status: Field::put(status),
            created_at: *created_at,
            tool_calls: Field::put(tool_calls),
            usage: Field::put(usage),
            error: error.clone(),
            path: Field::put(path),
            model: model.clone(),
            streaming: streaming_marker(*status),
            terms: index_terms(content),
            after: after.clone(),
            replaces: replaces.clone(),
            deleted: *deleted,
            hidden: *hidden,
            reasoning: Field::put(reasoning),
            stats: Field::put(stats),
            capped: *capped,
            attachment_hashes: blob_hashes(attachments),
            attachments: Field::put(attachments),
        }
    }
}

impl TryFrom<MessageRecord> for Message {
    type Error = StoreError;
    fn try_from(r: MessageRecord) -> Result<Self, StoreError> {
        // `streaming`, `terms` and `attachment_hashes` are the store's own (derived on each write).
        let MessageRecord {
            id,
            conversation_id,
            seq,
            role,
            content,
            status,
            created_at,
            tool_calls,
            usage,
            error,
            path,
            model,
            streaming: _,
            terms: _,
            after,
            replaces,
            deleted,
            hidden,
            reasoning,
            stats,
            capped,
            attachments,
            attachment_hashes: _,
        } = r;
        let bad = |detail| bad("message", detail);
        Ok(Message {
            id,
            conversation_id,
            seq,
            role: take("role", role).map_err(bad)?,
            content,
            status: take("status", status).map_err(bad)?,
            created_at,
            meta: MessageMeta {
                tool_calls: take("tool_calls", tool_calls).map_err(bad)?,
                usage: take("usage", usage).map_err(bad)?,
                error,
                path: take("path", path).map_err(bad)?,
                model,
                after,
                replaces,
                deleted,
                hidden,
                reasoning: take("reasoning", reasoning).map_err(bad)?,
                stats: take("stats", stats).map_err(bad)?,
                attachments: take("attachments", attachments).map_err(bad)?,
                capped,
            },
        })
    }
}

// ---------------------------------------------------------------- summaries

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct SummaryRecord for ConversationSummary {
        pub conversation_id: String,
        pub version: u32,
        pub text: String,
        pub covers_up_to_seq: u64,
        pub message_count: u64,
        pub updated_at: Millis,
    }
}

// ---------------------------------------------------------------- entities

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct RelationshipRecord for Relationship {
        pub target_id: String,
        pub relationship: String,
        pub strength: f32,
        pub valid_from: Millis,
        pub valid_to: Option<Millis>,
    }
}

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct PastPropertyRecord for PastProperty {
        pub key: String,
        pub value: String,
        pub valid_from: Millis,
        pub valid_to: Millis,
    }
}

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct EntityRecord for EntityNode {
        /// Conversation id, or [`SHARED_SCOPE`]. Key is `[scope, id]`.
        pub scope: String,
        pub id: String,
        pub entity_type: String,
        pub name: String,
        pub aliases: Vec<String>,
        pub description: String,
        pub properties: BTreeMap<String, String>,
        /// When each current property became true; absent in records stored before validity (then
        /// every property reads as current, since unknown).
        #[serde(default)]
        pub property_since: BTreeMap<String, Millis>,
        /// Superseded property values; absent in older records.
        #[serde(default)]
        pub past_properties: Vec<PastPropertyRecord>,
        pub relationships: Vec<RelationshipRecord>,
        pub source_message_ids: Vec<String>,
        pub updated_at: Millis,
    }
}

/// An entity's scope as its key string: a conversation id, or [`SHARED_SCOPE`].
impl Field<EntityScope> for String {
    fn put(m: &EntityScope) -> Self {
        scope_key(m).to_string()
    }
    fn take(self) -> Result<EntityScope, String> {
        match self.as_str() {
            "" => Err("empty".into()),
            SHARED_SCOPE => Ok(EntityScope::Shared),
            _ => Ok(EntityScope::Conversation(self)),
        }
    }
}

impl TryFrom<EntityRecord> for EntityNode {
    type Error = StoreError;
    fn try_from(r: EntityRecord) -> Result<Self, StoreError> {
        read(r, "entity")
    }
}

/// The key string of a scope.
pub fn scope_key(scope: &EntityScope) -> &str {
    match scope {
        EntityScope::Conversation(c) => c,
        EntityScope::Shared => SHARED_SCOPE,
    }
}

// ---------------------------------------------------------------- projects

mirror! {
    /// A project as stored. Fields added later need `#[serde(default)]`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ProjectRecord for Project {
        pub id: String,
        pub name: String,
        #[serde(default)]
        pub instructions: String,
        pub created_at: Millis,
        pub updated_at: Millis,
        #[serde(default)]
        pub deleted: Option<Millis>,
    }
}

// ---------------------------------------------------------------- facts about the user

mirror! {
    /// A fact as stored. Fields added later need `#[serde(default)]`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct UserFactRecord for UserFact {
        pub id: String,
        pub text: String,
        pub kind: FactKind,
        pub claim_key: String,
        pub source: Option<FactSourceRecord>,
        pub valid_from: Millis,
        pub valid_to: Option<Millis>,
        pub forgotten: Option<Millis>,
        pub scope: Option<String>,
        pub updated_at: Millis,
    }
}

mirror! {
    /// Where a fact was said, as stored.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct FactSourceRecord for FactSource {
        pub conversation_id: String,
        pub message_id: String,
        pub said_at: Millis,
    }
}
