//! The backup file's own shapes (format version 1) and the one place that maps the engine's model
//! to and from them. Field names are the file's; do not rename. The model may change, the file may
//! not: a type that mirrors the model is one field table (`engine::shape::mirror!`, which derives
//! both conversions from it), the others (a message with its meta, an entity without its scope, the
//! stats whose speed is checked) destructure their source without `..`; either way a field added
//! to a model type fails to compile here until it is written to the file or deliberately left out.
//! `tests/engine_shape.rs` pins the file byte for byte.
//! Must not import anything outside `crate::engine` (serde is the only crate it uses).

use super::ImportError;
use crate::engine::format::clip;
use crate::engine::model::{
    Attachment, AttachmentKind, Conversation, ConversationSummary, EntityNode, EntityScope,
    EntityType, FactKind, FactSource, GenerationStats, HistoryFormat, MemoryOverrides, Message,
    MessageMeta, MessageStatus, Millis, PastProperty, Project, Reasoning, Relationship,
    RemoteHandle, Role, ToolCall, ToolStatus, TurnPath, Usage, UserFact,
};
use crate::engine::shape::{mirror, take, Field};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A string enum of the file format and its model twin, mapped both ways by exhaustive matches.
/// Deserialised through a string, so a `null` or a number gets a "wrong type" error and an unknown
/// word an "unknown variant" error (serde_json reports both as a syntax error for plain enums).
macro_rules! wire_enum {
    ($name:ident <-> $model:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
        #[serde(try_from = "String")]
        pub(super) enum $name {
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
        impl From<$model> for $name {
            fn from(v: $model) -> Self {
                match v {
                    $($model::$variant => $name::$variant,)+
                }
            }
        }
        impl From<$name> for $model {
            fn from(v: $name) -> Self {
                match v {
                    $($name::$variant => $model::$variant,)+
                }
            }
        }
        impl Field<$model> for $name {
            fn put(m: &$model) -> Self {
                (*m).into()
            }
            fn take(self) -> Result<$model, String> {
                Ok(self.into())
            }
        }
    };
}

/// The model's value of what the file holds for `record` (named in the error, `conversation c1`).
pub(super) fn read<M, R: Field<M>>(
    r: R,
    record: impl FnOnce() -> String,
) -> Result<M, ImportError> {
    r.take().map_err(|detail| ImportError::InvalidValue {
        record: record(),
        detail,
    })
}

/// [`read`] for each of a list; `name` names one in the error.
pub(super) fn read_all<M, R: Field<M>>(
    rs: Vec<R>,
    name: impl Fn(&R) -> String,
) -> Result<Vec<M>, ImportError> {
    rs.into_iter()
        .map(|r| {
            let n = name(&r);
            read(r, || n)
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct BackupFile {
    pub(super) format: String,
    pub(super) version: u64,
    pub(super) exported_at: Millis,
    pub(super) conversations: Vec<BConversationBundle>,
    /// Entities shared by all conversations.
    #[serde(default)]
    pub(super) shared_entities: Vec<BEntity>,
    /// The facts about the user, forgotten ones (tombstones) included; absent in files written
    /// before facts were carried (then there are none to import).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) user_facts: Vec<BUserFact>,
    /// The projects, deleted ones (tombstones) included; absent in files written before projects
    /// were carried. A conversation's membership is its overrides' `project`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) projects: Vec<BProject>,
    /// The images' bytes (base64), once per content hash; absent in files written before
    /// attachments, and in those whose messages hold no image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) blobs: Vec<BBlob>,
}

/// An image's stored bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct BBlob {
    pub(super) hash: String,
    pub(super) mime: String,
    /// Standard base64.
    pub(super) data: String,
}

mirror! {
    /// A project (`engine::project`).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub(super) struct BProject for Project {
        pub(super) id: String,
        pub(super) name: String,
        #[serde(default)]
        pub(super) instructions: String,
        pub(super) created_at: Millis,
        pub(super) updated_at: Millis,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(super) deleted: Option<Millis>,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct BConversationBundle {
    pub(super) conversation: BConversation,
    pub(super) messages: Vec<BMessage>,
    /// Every version, oldest first.
    pub(super) summaries: Vec<BSummary>,
    /// Entities scoped to this conversation.
    pub(super) entities: Vec<BEntity>,
}

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub(super) struct BConversation for Conversation {
        pub(super) id: String,
        pub(super) title: String,
        pub(super) title_is_custom: bool,
        pub(super) created_at: Millis,
        pub(super) updated_at: Millis,
        pub(super) message_count: u64,
        pub(super) endpoint_profile_id: Option<String>,
        pub(super) remote_handle: Option<BRemoteHandle>,
        pub(super) last_path: Option<BTurnPath>,
        pub(super) memory_overrides: BOverrides,
    }
}

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub(super) struct BRemoteHandle for RemoteHandle {
        pub(super) id: String,
        pub(super) endpoint_key: String,
        pub(super) covers_up_to_seq: u64,
        pub(super) confirmed_at: Millis,
        pub(super) dead: bool,
    }
}

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub(super) struct BOverrides for MemoryOverrides {
        pub(super) recent_messages: Option<u64>,
        pub(super) summary_every_pairs: Option<u64>,
        pub(super) context_tokens: Option<u32>,
        pub(super) reply_reserve_tokens: Option<u32>,
        pub(super) max_message_chars: Option<u64>,
        pub(super) history_format: Option<BHistoryFormat>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(super) memory_model: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(super) model: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(super) system_prompt: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(super) user_memory: Option<bool>,
        /// The project the conversation is in (optional: older backups have none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(super) project: Option<String>,
    }
}

wire_enum!(BHistoryFormat <-> HistoryFormat {
    Messages = "messages",
    Transcript = "transcript",
});

wire_enum!(BTurnPath <-> TurnPath {
    Resumed = "resumed",
    Reinjected = "reinjected",
    Fresh = "fresh",
});

wire_enum!(BRole <-> Role {
    System = "system",
    User = "user",
    Assistant = "assistant",
    Tool = "tool",
});

wire_enum!(BToolStatus <-> ToolStatus {
    Waiting = "waiting",
    Running = "running",
    Done = "done",
    Denied = "denied",
    Failed = "failed",
    Interrupted = "interrupted",
});

wire_enum!(BStatus <-> MessageStatus {
    Complete = "complete",
    Streaming = "streaming",
    Interrupted = "interrupted",
    Error = "error",
});

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct BMessage {
    pub(super) id: String,
    pub(super) conversation_id: String,
    pub(super) seq: u64,
    pub(super) role: BRole,
    pub(super) content: String,
    pub(super) status: BStatus,
    pub(super) created_at: Millis,
    pub(super) tool_calls: Vec<BToolCall>,
    pub(super) usage: Option<BUsage>,
    pub(super) error: Option<String>,
    pub(super) path: Option<BTurnPath>,
    pub(super) model: Option<String>,
    /// The branch links and the tombstone (`engine::branch`); absent in files written before
    /// branches, which read as a linear chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) replaces: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) deleted: bool,
    /// Hidden from the model (an imported message its source kept out of the prompt); absent in
    /// older files, where no message is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) hidden: bool,
    /// The model's reasoning before the reply; absent in files written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) reasoning: Option<BReasoning>,
    /// How the reply was generated (tokens, time to first token, speed); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) stats: Option<BStats>,
    /// The user's images and files; absent in files written before attachments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) attachments: Vec<BAttachment>,
    /// Cut by the reply cap; absent in older files and for every other message.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) capped: bool,
}

mirror! {
    /// An attachment (`model::Attachment`); an image's bytes are in the file's `blobs` by `hash`.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub(super) struct BAttachment for Attachment {
        pub(super) kind: BAttachmentKind,
        pub(super) name: String,
        pub(super) mime: String,
        pub(super) size: u64,
        pub(super) hash: String,
        #[serde(default)]
        pub(super) width: u32,
        #[serde(default)]
        pub(super) height: u32,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub(super) text: String,
    }
}

wire_enum!(BAttachmentKind <-> AttachmentKind { Image = "image", File = "file" });

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct BStats {
    pub(super) tokens: u32,
    #[serde(default)]
    pub(super) first_token_ms: Option<u32>,
    #[serde(default)]
    pub(super) tokens_per_s: Option<f32>,
    /// Prompt tokens the server read from its cache; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) cached_tokens: Option<u32>,
}

/// Written as the model has it; read with the speed checked (not a mirror for that).
impl Field<GenerationStats> for BStats {
    fn put(s: &GenerationStats) -> Self {
        let GenerationStats {
            tokens,
            first_token_ms,
            tokens_per_s,
            cached_tokens,
        } = *s;
        BStats {
            tokens,
            first_token_ms,
            tokens_per_s,
            cached_tokens,
        }
    }
    fn take(self) -> Result<GenerationStats, String> {
        let BStats {
            tokens,
            first_token_ms,
            tokens_per_s,
            cached_tokens,
        } = self;
        Ok(GenerationStats {
            tokens,
            first_token_ms,
            // A file may say anything: a speed that is not a finite positive number is none.
            tokens_per_s: tokens_per_s.filter(|v| v.is_finite() && *v > 0.0),
            cached_tokens,
        })
    }
}

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub(super) struct BReasoning for Reasoning {
        pub(super) text: String,
        pub(super) started_at: Millis,
        #[serde(default)]
        pub(super) ended_at: Option<Millis>,
    }
}

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub(super) struct BToolCall for ToolCall {
        pub(super) id: String,
        pub(super) name: String,
        pub(super) arguments: String,
        pub(super) result: Option<String>,
        /// Absent in older files (and while a call has none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(super) status: Option<BToolStatus>,
    }
}

mirror! {
    #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
    pub(super) struct BUsage for Usage {
        pub(super) prompt_tokens: u32,
        pub(super) completion_tokens: u32,
    }
}

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub(super) struct BSummary for ConversationSummary {
        pub(super) conversation_id: String,
        pub(super) version: u32,
        pub(super) text: String,
        pub(super) covers_up_to_seq: u64,
        pub(super) message_count: u64,
        pub(super) updated_at: Millis,
    }
}

wire_enum!(BEntityType <-> EntityType {
    Person = "person",
    Place = "place",
    Concept = "concept",
    Event = "event",
    Task = "task",
    Other = "other",
});

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct BEntity {
    pub(super) id: String,
    #[serde(rename = "type")]
    pub(super) entity_type: BEntityType,
    pub(super) name: String,
    pub(super) aliases: Vec<String>,
    pub(super) description: String,
    pub(super) properties: BTreeMap<String, String>,
    /// When each current property became true; absent in files written before validity (then
    /// every property reads as current, since unknown).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) property_since: BTreeMap<String, Millis>,
    /// Superseded property values; absent in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) past_properties: Vec<BPastProperty>,
    pub(super) relationships: Vec<BRelationship>,
    pub(super) source_message_ids: Vec<String>,
    pub(super) updated_at: Millis,
}

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub(super) struct BPastProperty for PastProperty {
        pub(super) key: String,
        pub(super) value: String,
        pub(super) valid_from: Millis,
        pub(super) valid_to: Millis,
    }
}

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub(super) struct BRelationship for Relationship {
        pub(super) target_id: String,
        pub(super) relationship: String,
        pub(super) strength: Strength,
        pub(super) valid_from: Millis,
        pub(super) valid_to: Option<Millis>,
    }
}

/// A relationship's strength as the file holds it: written between 0 and 1 (JSON cannot hold NaN
/// or infinity: every export stays importable), read as it is (the import checks it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub(super) struct Strength(pub(super) f32);

impl Field<f32> for Strength {
    fn put(m: &f32) -> Self {
        Strength(if m.is_finite() {
            m.clamp(0.0, 1.0)
        } else {
            0.0
        })
    }
    fn take(self) -> Result<f32, String> {
        Ok(self.0)
    }
}

/// A fact's kind is a word in the file, read leniently: a kind this version does not know is
/// `other`, so a newer file's facts still import.
impl Field<FactKind> for String {
    fn put(m: &FactKind) -> Self {
        m.as_str().to_string()
    }
    fn take(self) -> Result<FactKind, String> {
        Ok(FactKind::parse_lenient(&self))
    }
}

mirror! {
    /// A fact about the user. `kind` is text, read leniently (a kind this version does not know is
    /// `other`), so a newer file's kinds still import.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub(super) struct BUserFact for UserFact {
        pub(super) id: String,
        pub(super) text: String,
        pub(super) kind: String,
        pub(super) claim_key: String,
        pub(super) source: Option<BFactSource>,
        pub(super) valid_from: Millis,
        pub(super) valid_to: Option<Millis>,
        /// When the user forgot it: the fact is a tombstone, kept so it is never taken in again.
        pub(super) forgotten: Option<Millis>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(super) scope: Option<String>,
        pub(super) updated_at: Millis,
    }
}

mirror! {
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub(super) struct BFactSource for FactSource {
        pub(super) conversation_id: String,
        pub(super) message_id: String,
        pub(super) said_at: Millis,
    }
}

// ---------------------------------------------------------------------------------------------
// Model -> file (export) and file -> model (import). Sources are destructured without `..`.

impl From<&Message> for BMessage {
    fn from(m: &Message) -> Self {
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
        BMessage {
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
            after: after.clone(),
            replaces: replaces.clone(),
            deleted: *deleted,
            hidden: *hidden,
            reasoning: Field::put(reasoning),
            stats: Field::put(stats),
            attachments: Field::put(attachments),
            capped: *capped,
        }
    }
}

impl BMessage {
    /// The model's message. Nothing is streaming an imported message: a `streaming` record
    /// arrives as `interrupted`.
    pub(super) fn into_model(self) -> Result<Message, ImportError> {
        let BMessage {
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
            after,
            replaces,
            deleted,
            hidden,
            reasoning,
            stats,
            attachments,
            capped,
        } = self;
        let status = match status.into() {
            MessageStatus::Streaming => MessageStatus::Interrupted,
            s => s,
        };
        let meta = || -> Result<MessageMeta, String> {
            Ok(MessageMeta {
                tool_calls: take("tool_calls", tool_calls)?,
                usage: take("usage", usage)?,
                error,
                path: take("path", path)?,
                model,
                after,
                replaces,
                deleted,
                hidden,
                reasoning: take("reasoning", reasoning)?,
                stats: take("stats", stats)?,
                attachments: take("attachments", attachments)?,
                capped,
            })
        };
        let meta = meta().map_err(|detail| ImportError::InvalidValue {
            record: format!("message {id}"),
            detail,
        })?;
        Ok(Message {
            id,
            conversation_id,
            seq,
            role: role.into(),
            content,
            status,
            created_at,
            meta,
        })
    }
}

impl From<&EntityNode> for BEntity {
    /// The scope is not written here: the file says it by where the entity is listed.
    fn from(e: &EntityNode) -> Self {
        let EntityNode {
            id,
            scope: _,
            entity_type,
            name,
            aliases,
            description,
            properties,
            property_since,
            past_properties,
            relationships,
            source_message_ids,
            updated_at,
        } = e;
        BEntity {
            id: id.clone(),
            entity_type: Field::put(entity_type),
            name: name.clone(),
            aliases: aliases.clone(),
            description: description.clone(),
            properties: properties.clone(),
            property_since: property_since.clone(),
            past_properties: Field::put(past_properties),
            relationships: Field::put(relationships),
            source_message_ids: source_message_ids.clone(),
            updated_at: *updated_at,
        }
    }
}

impl BEntity {
    /// The model's entity, in the scope the file listed it under.
    pub(super) fn into_model(self, scope: EntityScope) -> Result<EntityNode, ImportError> {
        let BEntity {
            id,
            entity_type,
            name,
            aliases,
            description,
            properties,
            property_since,
            past_properties,
            relationships,
            source_message_ids,
            updated_at,
        } = self;
        let parts = || -> Result<_, String> {
            Ok((
                take("past_properties", past_properties)?,
                take("relationships", relationships)?,
            ))
        };
        let (past_properties, relationships) =
            parts().map_err(|detail| ImportError::InvalidValue {
                record: format!("entity {id}"),
                detail,
            })?;
        Ok(EntityNode {
            id,
            scope,
            entity_type: entity_type.into(),
            name,
            aliases,
            description,
            properties,
            property_since,
            past_properties,
            relationships,
            source_message_ids,
            updated_at,
        })
    }
}
