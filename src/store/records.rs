//! The store's own record types (what is on disk, with explicit field names) and their explicit
//! conversions to and from the engine's types. Reading a record never panics: unknown roles, statuses,
//! paths or entity scopes are [`StoreError::BadRecord`]. Imports only `crate::engine::model` and serde.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::StoreError;
use crate::engine::model::{
    Conversation, ConversationSummary, EntityNode, EntityScope, EntityType, HistoryFormat,
    MemoryOverrides, Message, MessageMeta, MessageStatus, Millis, Relationship, RemoteHandle, Role,
    ToolCall, TurnPath, Usage,
};

/// Scope key of entities shared by every conversation (conversation ids never start with NUL).
pub const SHARED_SCOPE: &str = "\u{0}shared";

fn bad(what: &'static str, detail: String) -> StoreError {
    StoreError::BadRecord { what, detail }
}

// ---------------------------------------------------------------- conversations

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteHandleRecord {
    pub id: String,
    pub endpoint_key: String,
    pub covers_up_to_seq: u64,
    pub confirmed_at: Millis,
    pub dead: bool,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OverridesRecord {
    pub recent_messages: Option<u64>,
    pub summary_every_pairs: Option<u64>,
    pub context_tokens: Option<u32>,
    pub reply_reserve_tokens: Option<u32>,
    pub max_message_chars: Option<u64>,
    pub history_format: Option<String>,
    #[serde(default)]
    pub memory_model: Option<String>,
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
}

fn format_str(f: HistoryFormat) -> &'static str {
    match f {
        HistoryFormat::Messages => "messages",
        HistoryFormat::Transcript => "transcript",
    }
}

impl From<&Conversation> for ConversationRecord {
    fn from(c: &Conversation) -> Self {
        let o = &c.memory_overrides;
        ConversationRecord {
            id: c.id.clone(),
            title: c.title.clone(),
            title_is_custom: c.title_is_custom,
            created_at: c.created_at,
            updated_at: c.updated_at,
            message_count: c.message_count,
            last_seq: 0,
            endpoint_profile_id: c.endpoint_profile_id.clone(),
            remote_handle: c.remote_handle.as_ref().map(|h| RemoteHandleRecord {
                id: h.id.clone(),
                endpoint_key: h.endpoint_key.clone(),
                covers_up_to_seq: h.covers_up_to_seq,
                confirmed_at: h.confirmed_at,
                dead: h.dead,
            }),
            last_path: c.last_path.map(|p| p.as_str().to_string()),
            overrides: OverridesRecord {
                recent_messages: o.recent_messages.map(|v| v as u64),
                summary_every_pairs: o.summary_every_pairs.map(|v| v as u64),
                context_tokens: o.context_tokens,
                reply_reserve_tokens: o.reply_reserve_tokens,
                max_message_chars: o.max_message_chars.map(|v| v as u64),
                history_format: o.history_format.map(|f| format_str(f).to_string()),
                memory_model: o.memory_model.clone(),
            },
        }
    }
}

fn usize_of(v: Option<u64>, field: &str) -> Result<Option<usize>, StoreError> {
    v.map(|n| {
        usize::try_from(n).map_err(|_| bad("conversation", format!("{field} out of range: {n}")))
    })
    .transpose()
}

impl TryFrom<ConversationRecord> for Conversation {
    type Error = StoreError;
    fn try_from(r: ConversationRecord) -> Result<Self, StoreError> {
        let last_path = match r.last_path.as_deref() {
            None => None,
            Some(s) => Some(
                TurnPath::parse(s)
                    .ok_or_else(|| bad("conversation", format!("unknown turn path '{s}'")))?,
            ),
        };
        let history_format = match r.overrides.history_format.as_deref() {
            None => None,
            Some("messages") => Some(HistoryFormat::Messages),
            Some("transcript") => Some(HistoryFormat::Transcript),
            Some(s) => return Err(bad("conversation", format!("unknown history format '{s}'"))),
        };
        Ok(Conversation {
            memory_overrides: MemoryOverrides {
                recent_messages: usize_of(r.overrides.recent_messages, "recent_messages")?,
                summary_every_pairs: usize_of(
                    r.overrides.summary_every_pairs,
                    "summary_every_pairs",
                )?,
                context_tokens: r.overrides.context_tokens,
                reply_reserve_tokens: r.overrides.reply_reserve_tokens,
                max_message_chars: usize_of(r.overrides.max_message_chars, "max_message_chars")?,
                history_format,
                memory_model: r.overrides.memory_model,
            },
            id: r.id,
            title: r.title,
            title_is_custom: r.title_is_custom,
            created_at: r.created_at,
            updated_at: r.updated_at,
            message_count: r.message_count,
            endpoint_profile_id: r.endpoint_profile_id,
            remote_handle: r.remote_handle.map(|h| RemoteHandle {
                id: h.id,
                endpoint_key: h.endpoint_key,
                covers_up_to_seq: h.covers_up_to_seq,
                confirmed_at: h.confirmed_at,
                dead: h.dead,
            }),
            last_path,
        })
    }
}

// ---------------------------------------------------------------- messages

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    pub id: String,
    pub name: String,
    pub arguments: String,
    pub result: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UsageRecord {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
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
}

/// The sparse-index marker for a status.
pub fn streaming_marker(status: MessageStatus) -> Option<u8> {
    (status == MessageStatus::Streaming).then_some(1)
}

impl From<&Message> for MessageRecord {
    fn from(m: &Message) -> Self {
        MessageRecord {
            id: m.id.clone(),
            conversation_id: m.conversation_id.clone(),
            seq: m.seq,
            role: m.role.as_str().to_string(),
            content: m.content.clone(),
            status: m.status.as_str().to_string(),
            created_at: m.created_at,
            tool_calls: m
                .meta
                .tool_calls
                .iter()
                .map(|t| ToolCallRecord {
                    id: t.id.clone(),
                    name: t.name.clone(),
                    arguments: t.arguments.clone(),
                    result: t.result.clone(),
                })
                .collect(),
            usage: m.meta.usage.map(|u| UsageRecord {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
            }),
            error: m.meta.error.clone(),
            path: m.meta.path.map(|p| p.as_str().to_string()),
            model: m.meta.model.clone(),
            streaming: streaming_marker(m.status),
        }
    }
}

impl TryFrom<MessageRecord> for Message {
    type Error = StoreError;
    fn try_from(r: MessageRecord) -> Result<Self, StoreError> {
        let role = Role::parse(&r.role)
            .ok_or_else(|| bad("message", format!("unknown role '{}'", r.role)))?;
        let status = MessageStatus::parse(&r.status)
            .ok_or_else(|| bad("message", format!("unknown status '{}'", r.status)))?;
        let path = match r.path.as_deref() {
            None => None,
            Some(s) => Some(
                TurnPath::parse(s)
                    .ok_or_else(|| bad("message", format!("unknown turn path '{s}'")))?,
            ),
        };
        Ok(Message {
            id: r.id,
            conversation_id: r.conversation_id,
            seq: r.seq,
            role,
            content: r.content,
            status,
            created_at: r.created_at,
            meta: MessageMeta {
                tool_calls: r
                    .tool_calls
                    .into_iter()
                    .map(|t| ToolCall {
                        id: t.id,
                        name: t.name,
                        arguments: t.arguments,
                        result: t.result,
                    })
                    .collect(),
                usage: r.usage.map(|u| Usage {
                    prompt_tokens: u.prompt_tokens,
                    completion_tokens: u.completion_tokens,
                }),
                error: r.error,
                path,
                model: r.model,
            },
        })
    }
}

// ---------------------------------------------------------------- summaries

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRecord {
    pub conversation_id: String,
    pub version: u32,
    pub text: String,
    pub covers_up_to_seq: u64,
    pub message_count: u64,
    pub updated_at: Millis,
}

impl From<&ConversationSummary> for SummaryRecord {
    fn from(s: &ConversationSummary) -> Self {
        SummaryRecord {
            conversation_id: s.conversation_id.clone(),
            version: s.version,
            text: s.text.clone(),
            covers_up_to_seq: s.covers_up_to_seq,
            message_count: s.message_count,
            updated_at: s.updated_at,
        }
    }
}

impl From<SummaryRecord> for ConversationSummary {
    fn from(r: SummaryRecord) -> Self {
        ConversationSummary {
            conversation_id: r.conversation_id,
            version: r.version,
            text: r.text,
            covers_up_to_seq: r.covers_up_to_seq,
            message_count: r.message_count,
            updated_at: r.updated_at,
        }
    }
}

// ---------------------------------------------------------------- entities

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelationshipRecord {
    pub target_id: String,
    pub relationship: String,
    pub strength: f32,
    pub valid_from: Millis,
    pub valid_to: Option<Millis>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityRecord {
    /// Conversation id, or [`SHARED_SCOPE`]. Key is `[scope, id]`.
    pub scope: String,
    pub id: String,
    pub entity_type: String,
    pub name: String,
    pub aliases: Vec<String>,
    pub description: String,
    pub properties: BTreeMap<String, String>,
    pub relationships: Vec<RelationshipRecord>,
    pub source_message_ids: Vec<String>,
    pub updated_at: Millis,
}

/// The key string of a scope.
pub fn scope_key(scope: &EntityScope) -> &str {
    match scope {
        EntityScope::Conversation(c) => c,
        EntityScope::Shared => SHARED_SCOPE,
    }
}

impl From<&EntityNode> for EntityRecord {
    fn from(n: &EntityNode) -> Self {
        EntityRecord {
            scope: scope_key(&n.scope).to_string(),
            id: n.id.clone(),
            entity_type: n.entity_type.as_str().to_string(),
            name: n.name.clone(),
            aliases: n.aliases.clone(),
            description: n.description.clone(),
            properties: n.properties.clone(),
            relationships: n
                .relationships
                .iter()
                .map(|r| RelationshipRecord {
                    target_id: r.target_id.clone(),
                    relationship: r.relationship.clone(),
                    strength: r.strength,
                    valid_from: r.valid_from,
                    valid_to: r.valid_to,
                })
                .collect(),
            source_message_ids: n.source_message_ids.clone(),
            updated_at: n.updated_at,
        }
    }
}

impl TryFrom<EntityRecord> for EntityNode {
    type Error = StoreError;
    fn try_from(r: EntityRecord) -> Result<Self, StoreError> {
        let entity_type = EntityType::ALL
            .into_iter()
            .find(|t| t.as_str() == r.entity_type)
            .ok_or_else(|| bad("entity", format!("unknown entity type '{}'", r.entity_type)))?;
        if r.scope.is_empty() {
            return Err(bad(
                "entity",
                format!("entity '{}' has an empty scope", r.id),
            ));
        }
        let scope = if r.scope == SHARED_SCOPE {
            EntityScope::Shared
        } else {
            EntityScope::Conversation(r.scope)
        };
        Ok(EntityNode {
            id: r.id,
            scope,
            entity_type,
            name: r.name,
            aliases: r.aliases,
            description: r.description,
            properties: r.properties,
            relationships: r
                .relationships
                .into_iter()
                .map(|x| Relationship {
                    target_id: x.target_id,
                    relationship: x.relationship,
                    strength: x.strength,
                    valid_from: x.valid_from,
                    valid_to: x.valid_to,
                })
                .collect(),
            source_message_ids: r.source_message_ids,
            updated_at: r.updated_at,
        })
    }
}
