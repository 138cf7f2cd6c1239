//! The synced document model: which record becomes which CouchDB document, its stable `_id`, and its
//! JSON form. One document per record:
//!
//! | record | `_id` | body |
//! | --- | --- | --- |
//! | conversation metadata | `c:{conversation}` | the title, and every other field (the per-conversation overrides; later `pinned`) as a named last-writer-wins register; `cleared`, the stamp of its last `/clear` |
//! | message | `m:{message}` | immutable: role, content, status, origin seq, what it replaces and follows, its attachments (kind, name, type, size, hash; a file's text); a deleted message is a tombstone |
//! | image bytes | `a:{sha-256}` | not a [`Body`]: the image as a CouchDB attachment, one document per content hash (`sync::blob`; the replicator skips these ids) |
//! | entity | `e:{scope}:{entity}` | type, name, description as registers; aliases and sources as sets; properties (facts) and the day each became true as maps of registers; past property values as a set |
//! | edge | `r:{scope}:{source}:{label}:{target}:{valid_from}` | strength (strongest kept), `valid_to` (closed wins) |
//! | summary version | `s:{conversation}:{stamp}` | immutable text and the seq it covers; dead once its conversation's `cleared` is at or after its stamp |
//! | project | `p:{project}` | its name and instructions as one register; when it was made; `deleted` (the project's tombstone: wins over any live version, earliest kept) |
//! | fact about the user | `f:{fact}` | its words (text, kind, claim key) as one register; where it was said; when it began; `valid_to` (past wins) and `forgotten` (the fact's tombstone: wins over any live version, and keeps its words so the same sentence is never taken in again) |
//!
//! Deleting turns a document into a [`Body::Tombstone`] (a live CouchDB document saying "deleted at
//! stamp"); CouchDB's own `_deleted` is only used for losing conflict leaves. Settings and API keys
//! have no document kind: they cannot be synced. A fact about the user is never deleted: forgetting
//! it sets its `forgotten`, which every device keeps.
//! Must not import anything outside `crate::engine`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::hlc::Hlc;
use crate::engine::model::{EntityType, Millis, Role};

/// A value with the stamp of the edit that set it. Merging keeps the later stamp (equal stamps: the
/// greater value, so the result never depends on the order of arguments).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lww<T> {
    pub v: T,
    pub at: Hlc,
}

impl<T> Lww<T> {
    pub fn new(v: T, at: &Hlc) -> Lww<T> {
        Lww { v, at: at.clone() }
    }
}

/// What a document is about (the first part of its `_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Conversation,
    Message,
    Entity,
    Edge,
    Summary,
    /// A fact about the user (older builds skip these documents: an unknown `type`).
    Fact,
    /// A project (older builds skip these documents: an unknown `type`).
    Project,
}

impl Kind {
    pub fn prefix(self) -> &'static str {
        match self {
            Kind::Conversation => "c",
            Kind::Message => "m",
            Kind::Entity => "e",
            Kind::Edge => "r",
            Kind::Summary => "s",
            Kind::Fact => "f",
            Kind::Project => "p",
        }
    }
    /// The kind named by an `_id`'s prefix.
    pub fn of_id(id: &str) -> Option<Kind> {
        let (p, _) = id.split_once(':')?;
        [
            Kind::Conversation,
            Kind::Message,
            Kind::Entity,
            Kind::Edge,
            Kind::Summary,
            Kind::Fact,
            Kind::Project,
        ]
        .into_iter()
        .find(|k| k.prefix() == p)
    }
}

/// One `_id` component: `%`, `:` and `~` are escaped so the parts never run together.
pub fn id_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            ':' => out.push_str("%3A"),
            '~' => out.push_str("%7E"),
            c => out.push(c),
        }
    }
    out
}

/// The `_id` part of an entity scope: a conversation id, or `~` for entities every conversation shares.
pub fn scope_part(scope: Option<&str>) -> String {
    scope.map_or_else(|| "~".to_string(), id_part)
}

pub fn conversation_id(conversation: &str) -> String {
    format!("c:{}", id_part(conversation))
}
pub fn message_id(message: &str) -> String {
    format!("m:{}", id_part(message))
}
pub fn entity_id(scope: Option<&str>, entity: &str) -> String {
    format!("e:{}:{}", scope_part(scope), id_part(entity))
}
pub fn edge_id(e: &EdgeDoc) -> String {
    format!(
        "r:{}:{}:{}:{}:{}",
        scope_part(e.scope.as_deref()),
        id_part(&e.source),
        id_part(&e.label),
        id_part(&e.target),
        e.valid_from
    )
}
pub fn summary_id(conversation: &str, made: &Hlc) -> String {
    format!("s:{}:{}", id_part(conversation), id_part(&made.key()))
}
pub fn fact_id(fact: &str) -> String {
    format!("f:{}", id_part(fact))
}
pub fn project_id(project: &str) -> String {
    format!("p:{}", id_part(project))
}

/// A project's name and instructions: they change by the user's hand, so they are one register.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProjectWords {
    pub name: String,
    pub instructions: String,
}

/// A project (`engine::project`). Deleting it sets `deleted`, which wins over any live version
/// (the earliest kept): it is never taken back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectDoc {
    pub id: String,
    pub words: Lww<ProjectWords>,
    pub created_at: Millis,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<Millis>,
}

/// The user's title and whether the user set it (auto-titles never overwrite a user's title).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Title {
    pub text: String,
    pub custom: bool,
}

/// Conversation metadata: every field a register of its own, so two devices editing different fields
/// both keep their edit. Only what the user chose is synced (not counts, session handles or badges).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationDoc {
    pub id: String,
    pub created_at: Millis,
    pub title: Lww<Title>,
    /// The other fields by name (`recent_messages`, `history_format`, `memory_model`, …) as the text
    /// of their value, `None` for "use the global setting"; names from newer versions are kept.
    pub fields: BTreeMap<String, Lww<Option<String>>>,
    /// When the conversation was last cleared (`/clear`), a max register: every summary version
    /// made at or before it is dead on every device ([`SummaryDoc::cleared_by`]), since summary
    /// versions are immutable documents without tombstones of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleared: Option<Hlc>,
}

/// A tool call as synced.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ToolCallDoc {
    pub id: String,
    pub name: String,
    pub arguments: String,
    pub result: Option<String>,
    /// The call's status word (`ToolStatus`); absent in older documents (and while a call has
    /// none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// A message. Written once when it is final; an edit or a regeneration is a new message whose
/// `replaces` names the one it replaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageDoc {
    pub id: String,
    pub conversation_id: String,
    /// The seq on the device that wrote it (each device places pulled messages after its own).
    pub seq: u64,
    pub role: Role,
    pub content: String,
    /// `complete`, `interrupted` or `error` (a reply still streaming is not synced yet).
    pub status: String,
    pub created_at: Millis,
    #[serde(default)]
    pub replaces: Option<String>,
    /// The message it follows when that is not the one before it (`engine::branch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCallDoc>,
    #[serde(default)]
    pub usage: Option<(u32, u32)>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// Hidden from the model (`MessageMeta::hidden`); absent in older documents, where no message is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// The model's reasoning before the reply: its text, when it started and ended (absent in
    /// documents written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningDoc>,
    /// How the reply was generated: tokens, time to first token (ms), tenths of a token per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<(u32, Option<u32>, Option<u32>)>,
    /// Prompt tokens the server read from its cache (`GenerationStats::cached_tokens`), apart from
    /// `stats`, whose shape older devices read; absent in older documents and when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<u32>,
    /// Cut by the reply cap (`MessageMeta::capped`); absent in older documents, where none is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capped: bool,
    /// The images and files the user attached: what they are and their content hash (a file's text
    /// travels here; an image's bytes travel once per hash in a blob document, `sync::blob`).
    /// Absent in documents written before sync carried attachments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentDoc>,
    /// When it was written, for ordering and for the clock.
    pub at: Hlc,
}

/// One attachment of a message document (`engine::model::Attachment`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentDoc {
    /// `image` or `file`.
    pub kind: String,
    pub name: String,
    pub mime: String,
    pub size: u64,
    pub hash: String,
    #[serde(default)]
    pub width: u32,
    #[serde(default)]
    pub height: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// A message's reasoning in a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningDoc {
    pub text: String,
    pub started_at: Millis,
    #[serde(default)]
    pub ended_at: Option<Millis>,
}

/// An entity node without its edges. `scope` is the conversation id, `None` when shared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntityDoc {
    pub id: String,
    pub scope: Option<String>,
    pub entity_type: Lww<EntityType>,
    pub name: Lww<String>,
    pub description: Lww<String>,
    pub aliases: BTreeSet<String>,
    /// Properties (facts): every key ever set is kept; each value is a register.
    pub properties: BTreeMap<String, Lww<String>>,
    /// When each current property became true, a register per key; absent in documents written
    /// before validity (then every property reads as current, since unknown).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub property_since: BTreeMap<String, Lww<Millis>>,
    /// Superseded property values: a set that only grows, so a past value is never lost by merging.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub past_properties: BTreeSet<PastPropertyDoc>,
    pub sources: BTreeSet<String>,
    pub updated_at: Millis,
}

/// A superseded property value of an entity document.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PastPropertyDoc {
    pub key: String,
    pub value: String,
    pub valid_from: Millis,
    pub valid_to: Millis,
}

/// One relationship of the entity graph, its own document (`valid_from` is part of its identity: a
/// closed edge asserted again is a new edge).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EdgeDoc {
    pub scope: Option<String>,
    pub source: String,
    pub label: String,
    pub target: String,
    pub valid_from: Millis,
    pub strength: f32,
    pub valid_to: Option<Millis>,
}

/// One summary version, never changed once written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SummaryDoc {
    pub conversation_id: String,
    /// When it was made; also its identity.
    pub made: Hlc,
    pub version: u32,
    pub covers_up_to_seq: u64,
    pub message_count: u64,
    pub updated_at: Millis,
    pub text: String,
}

impl SummaryDoc {
    /// Whether a clear of its conversation at `cleared` deleted this version (it was made at or
    /// before the clear, so it summarises what the clear deleted).
    pub fn cleared_by(&self, cleared: Option<&Hlc>) -> bool {
        cleared.is_some_and(|c| self.made <= *c)
    }
}

/// A fact's words and where it belongs: they change by the user's hand (an edit, a move to about
/// you), so they are one register, the newer change winning.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FactWords {
    pub text: String,
    /// `name`, `home`, … (`FactKind`; an unknown one reads as `other`).
    pub kind: String,
    pub claim_key: String,
    /// A project id; `None`: about the user. The user may move a project's fact to "about you",
    /// so it is part of the register: the copy changed last says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// Where a fact was said (never changes).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FactSourceDoc {
    pub conversation_id: String,
    pub message_id: String,
    pub said_at: Millis,
}

/// A fact about the user (`engine::memory::user`). Its words are a register; the rest only moves
/// one way: once past (`valid_to`) or forgotten it stays so on every device, whatever order the
/// versions meet in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactDoc {
    pub id: String,
    pub words: Lww<FactWords>,
    pub source: Option<FactSourceDoc>,
    pub valid_from: Millis,
    /// When a newer fact superseded it (the earliest such end is kept).
    pub valid_to: Option<Millis>,
    /// When the user forgot it (the earliest is kept): a tombstone that wins over any live version.
    pub forgotten: Option<Millis>,
    pub updated_at: Millis,
}

/// A deleted record: the only way anything is deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tombstone {
    pub kind: Kind,
    pub at: Hlc,
}

/// A document's content (the `type` field tells which). Read by `Body::from_value`, not serde's
/// internally tagged derive: that one buffers every document into serde's private `Content` and
/// compiles each variant's deserializer a second time for it (about 25 KB of wasm).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Body {
    Conversation(ConversationDoc),
    Message(MessageDoc),
    Entity(EntityDoc),
    Edge(EdgeDoc),
    Summary(SummaryDoc),
    Fact(FactDoc),
    Project(ProjectDoc),
    Tombstone(Tombstone),
}

impl Body {
    /// The content from its JSON object: `type` names the variant, the other fields are its own.
    pub fn from_value(v: Value) -> Result<Body, serde_json::Error> {
        use serde::de::Error;
        let Value::Object(mut fields) = v else {
            return Err(Error::custom("document content is not an object"));
        };
        let tag = match fields.remove("type") {
            Some(Value::String(t)) => t,
            _ => return Err(Error::missing_field("type")),
        };
        let rest = Value::Object(fields);
        Ok(match tag.as_str() {
            "conversation" => Body::Conversation(serde_json::from_value(rest)?),
            "message" => Body::Message(serde_json::from_value(rest)?),
            "entity" => Body::Entity(serde_json::from_value(rest)?),
            "edge" => Body::Edge(serde_json::from_value(rest)?),
            "summary" => Body::Summary(serde_json::from_value(rest)?),
            "fact" => Body::Fact(serde_json::from_value(rest)?),
            "project" => Body::Project(serde_json::from_value(rest)?),
            "tombstone" => Body::Tombstone(serde_json::from_value(rest)?),
            other => {
                return Err(Error::unknown_variant(
                    other,
                    &[
                        "conversation",
                        "message",
                        "entity",
                        "edge",
                        "summary",
                        "fact",
                        "project",
                        "tombstone",
                    ],
                ))
            }
        })
    }

    pub fn kind(&self) -> Kind {
        match self {
            Body::Conversation(_) => Kind::Conversation,
            Body::Message(_) => Kind::Message,
            Body::Entity(_) => Kind::Entity,
            Body::Edge(_) => Kind::Edge,
            Body::Summary(_) => Kind::Summary,
            Body::Fact(_) => Kind::Fact,
            Body::Project(_) => Kind::Project,
            Body::Tombstone(t) => t.kind,
        }
    }

    /// The `_id` this content belongs under (a tombstone has none of its own).
    pub fn doc_id(&self) -> Option<String> {
        Some(match self {
            Body::Conversation(c) => conversation_id(&c.id),
            Body::Message(m) => message_id(&m.id),
            Body::Entity(e) => entity_id(e.scope.as_deref(), &e.id),
            Body::Edge(e) => edge_id(e),
            Body::Summary(s) => summary_id(&s.conversation_id, &s.made),
            Body::Fact(f) => fact_id(&f.id),
            Body::Project(p) => project_id(&p.id),
            Body::Tombstone(_) => return None,
        })
    }

    pub fn is_tombstone(&self) -> bool {
        matches!(self, Body::Tombstone(_))
    }

    /// The latest stamp in this content: a device passes every pulled document's to
    /// [`super::hlc::Clock::observe`], so its next edit comes after everything it has seen (even
    /// when its own wall clock is behind).
    pub fn latest_stamp(&self) -> Option<&Hlc> {
        match self {
            Body::Conversation(c) => std::iter::once(&c.title.at)
                .chain(c.fields.values().map(|r| &r.at))
                .chain(&c.cleared)
                .max(),
            Body::Message(m) => Some(&m.at),
            Body::Entity(e) => [&e.entity_type.at, &e.name.at, &e.description.at]
                .into_iter()
                .chain(e.properties.values().map(|r| &r.at))
                .chain(e.property_since.values().map(|r| &r.at))
                .max(),
            Body::Edge(_) => None,
            Body::Summary(s) => Some(&s.made),
            Body::Fact(f) => Some(&f.words.at),
            Body::Project(p) => Some(&p.words.at),
            Body::Tombstone(t) => Some(&t.at),
        }
    }
}

/// A synced document: its `_id` and content (the CouchDB revision travels beside it).
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub id: String,
    pub body: Body,
}

impl Doc {
    /// A live document under its own `_id`.
    pub fn new(body: Body) -> Doc {
        let id = body.doc_id().unwrap_or_default();
        Doc { id, body }
    }

    /// The tombstone that deletes document `id`.
    pub fn tombstone(id: &str, at: &Hlc) -> Option<Doc> {
        Some(Doc {
            id: id.to_string(),
            body: Body::Tombstone(Tombstone {
                kind: Kind::of_id(id)?,
                at: at.clone(),
            }),
        })
    }

    /// The JSON CouchDB stores: `_id`, `_rev` when given, then the content.
    pub fn to_json(&self, rev: Option<&str>) -> Value {
        let mut obj = match serde_json::to_value(&self.body) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        obj.insert("_id".into(), Value::String(self.id.clone()));
        if let Some(r) = rev {
            obj.insert("_rev".into(), Value::String(r.to_string()));
        }
        Value::Object(obj)
    }

    /// Reads a document as CouchDB returns it. `Err` names what is wrong; the caller skips such a
    /// document (it never deletes or overwrites anything local).
    pub fn from_json(v: &Value) -> Result<Couch, String> {
        let obj = v.as_object().ok_or("document is not an object")?;
        let id = obj
            .get("_id")
            .and_then(Value::as_str)
            .ok_or("document has no _id")?
            .to_string();
        let rev = obj
            .get("_rev")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{id}: no _rev"))?
            .to_string();
        let conflicts = obj
            .get("_conflicts")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|r| r.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let mut content = obj.clone();
        content.retain(|k, _| !k.starts_with('_'));
        let body = Body::from_value(Value::Object(content))
            .map_err(|e| format!("{id}: unreadable document ({e})"))?;
        let id_kind = Kind::of_id(&id).ok_or_else(|| format!("{id}: not a Memoire document"))?;
        if id_kind != body.kind() || body.doc_id().is_some_and(|own| own != id) {
            return Err(format!("{id}: content does not match its _id"));
        }
        Ok(Couch {
            doc: Doc { id, body },
            rev,
            conflicts,
        })
    }
}

/// A document read from the server with its revision and its conflicting leaves, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Couch {
    pub doc: Doc,
    pub rev: String,
    pub conflicts: Vec<String>,
}
