//! Explicit conversions between the engine's model and the synced documents: a new document from a
//! record (every register stamped with one edit), an edited document (only the changed registers get
//! the new stamp, so an untouched field never overrides another device's edit), and back. Which
//! summary version is active is decided here too, and what a pulled fact about the user leaves
//! of the stored one. Documents are registers and sets, not mirrors of the model, so each
//! conversion is written out; every model -> document one destructures the model without `..`
//! (a new field fails to compile here until it is synced or said to stay local), and every
//! document -> model one builds a struct literal. `tests/engine_shape.rs` pins the documents.
//! Must not import anything outside `crate::engine`.

use std::collections::BTreeMap;

use super::doc::{
    AttachmentDoc, ConversationDoc, EdgeDoc, EntityDoc, FactDoc, FactSourceDoc, FactWords, Lww,
    MessageDoc, PastPropertyDoc, ProjectDoc, ProjectWords, ReasoningDoc, SummaryDoc, Title,
    ToolCallDoc,
};
use super::hlc::Hlc;
use crate::engine::model::{
    Attachment, AttachmentKind, Conversation, ConversationSummary, EntityNode, EntityScope,
    FactKind, FactSource, GenerationStats, HistoryFormat, MemoryOverrides, Message, MessageMeta,
    MessageStatus, PastProperty, Project, Reasoning, Relationship, ToolCall, ToolStatus, TurnPath,
    Usage, UserFact,
};

// ---------------------------------------------------------------- conversations

fn format_text(f: HistoryFormat) -> &'static str {
    match f {
        HistoryFormat::Messages => "messages",
        HistoryFormat::Transcript => "transcript",
    }
}

/// The synced fields of a conversation other than its title, by name.
fn fields_of(c: &Conversation) -> BTreeMap<String, Option<String>> {
    // Without `..`: a field added to the overrides fails to compile here until it is synced.
    let MemoryOverrides {
        recent_messages,
        summary_every_pairs,
        context_tokens,
        reply_reserve_tokens,
        max_message_chars,
        history_format,
        memory_model,
        model,
        user_memory,
        system_prompt,
        project,
    } = &c.memory_overrides;
    let text = |v: Option<u64>| v.map(|n| n.to_string());
    [
        ("recent_messages", text(recent_messages.map(|v| v as u64))),
        (
            "summary_every_pairs",
            text(summary_every_pairs.map(|v| v as u64)),
        ),
        ("context_tokens", text(context_tokens.map(u64::from))),
        (
            "reply_reserve_tokens",
            text(reply_reserve_tokens.map(u64::from)),
        ),
        (
            "max_message_chars",
            text(max_message_chars.map(|v| v as u64)),
        ),
        (
            "history_format",
            history_format.map(|f| format_text(f).to_string()),
        ),
        ("memory_model", memory_model.clone()),
        ("model", model.clone()),
        ("system_prompt", system_prompt.clone()),
        ("project", project.clone()),
    ]
    .into_iter()
    // Only once set: a conversation that never touched it keeps the document it had.
    .chain(user_memory.map(|on| ("user_memory", Some(on_off(on).to_string()))))
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn title_of(c: &Conversation) -> Title {
    Title {
        text: c.title.clone(),
        custom: c.title_is_custom,
    }
}

/// The document of a conversation first written at `at`.
pub fn conversation_doc(c: &Conversation, at: &Hlc) -> ConversationDoc {
    // Without `..`: a field added to the model fails to compile here until it is synced (in
    // `title_of` or `fields_of`) or said to stay local.
    let Conversation {
        id,
        title: _,
        title_is_custom: _,
        created_at,
        // Local to each device: its counts, session handle, badge and last change.
        updated_at: _,
        message_count: _,
        endpoint_profile_id: _,
        remote_handle: _,
        last_path: _,
        memory_overrides: _,
    } = c;
    ConversationDoc {
        id: id.clone(),
        created_at: *created_at,
        title: Lww::new(title_of(c), at),
        fields: fields_of(c)
            .into_iter()
            .map(|(k, v)| (k, Lww::new(v, at)))
            .collect(),
        cleared: None,
    }
}

/// `prev` after the local edit that left the conversation as `c`: only changed fields are stamped.
pub fn edit_conversation(prev: &ConversationDoc, c: &Conversation, at: &Hlc) -> ConversationDoc {
    let mut next = prev.clone();
    if prev.title.v != title_of(c) {
        next.title = Lww::new(title_of(c), at);
    }
    for (k, v) in fields_of(c) {
        // A register the document does not have reads as unset: a field added in a later
        // version (the project) gets a stamp only once it is set, so it never overrides
        // another device's value with an unset one.
        let before = prev.fields.get(&k).map(|r| &r.v).unwrap_or(&None);
        if before != &v {
            next.fields.insert(k, Lww::new(v, at));
        }
    }
    next
}

/// Sets the synced fields of `c` from the document (counts, handles and badges stay local). A field
/// whose text cannot be read (a newer version's value) leaves the local value alone.
pub fn apply_conversation(doc: &ConversationDoc, c: &mut Conversation) {
    c.title = doc.title.v.text.clone();
    c.title_is_custom = doc.title.v.custom;
    c.created_at = c.created_at.min(doc.created_at);
    let get = |k: &str| doc.fields.get(k).map(|r| r.v.clone());
    let o = &mut c.memory_overrides;
    fn num<T: std::str::FromStr>(v: Option<Option<String>>, keep: Option<T>) -> Option<T> {
        match v {
            None => keep,
            Some(None) => None,
            Some(Some(s)) => s.parse().ok().or(keep),
        }
    }
    o.recent_messages = num(get("recent_messages"), o.recent_messages);
    o.summary_every_pairs = num(get("summary_every_pairs"), o.summary_every_pairs);
    o.context_tokens = num(get("context_tokens"), o.context_tokens);
    o.reply_reserve_tokens = num(get("reply_reserve_tokens"), o.reply_reserve_tokens);
    o.max_message_chars = num(get("max_message_chars"), o.max_message_chars);
    o.history_format = match get("history_format") {
        None => o.history_format,
        Some(None) => None,
        Some(Some(s)) => match s.as_str() {
            "messages" => Some(HistoryFormat::Messages),
            "transcript" => Some(HistoryFormat::Transcript),
            _ => o.history_format,
        },
    };
    if let Some(v) = get("memory_model") {
        o.memory_model = v;
    }
    if let Some(v) = get("model") {
        o.model = v;
    }
    if let Some(v) = get("system_prompt") {
        o.system_prompt = v;
    }
    if let Some(v) = get("project") {
        o.project = v;
    }
    if let Some(v) = get("user_memory") {
        o.user_memory = match v.as_deref() {
            Some("on") => Some(true),
            Some("off") => Some(false),
            _ => None,
        };
    }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// A conversation known only from its document (first seen on another device).
pub fn new_conversation(doc: &ConversationDoc) -> Conversation {
    let mut c = Conversation {
        id: doc.id.clone(),
        title: String::new(),
        title_is_custom: false,
        created_at: doc.created_at,
        updated_at: doc.created_at,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: Default::default(),
    };
    apply_conversation(doc, &mut c);
    c
}

// ---------------------------------------------------------------- messages

/// The document of a final message written at `at`, with the message it replaces (an edit or a
/// regeneration) and the one it follows. A message still streaming is not synced yet (`None`), nor is
/// a deleted one (its document is a tombstone).
pub fn message_doc(m: &Message, at: &Hlc) -> Option<MessageDoc> {
    // Without `..`: a field added to the model fails to compile here until it is synced.
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
    if *status == MessageStatus::Streaming || *deleted {
        return None;
    }
    Some(MessageDoc {
        id: id.clone(),
        conversation_id: conversation_id.clone(),
        seq: *seq,
        role: *role,
        content: content.clone(),
        status: status.as_str().to_string(),
        created_at: *created_at,
        replaces: replaces.clone(),
        after: after.clone(),
        tool_calls: tool_calls.iter().map(tool_call_doc).collect(),
        usage: usage.map(|u| {
            let Usage {
                prompt_tokens,
                completion_tokens,
            } = u;
            (prompt_tokens, completion_tokens)
        }),
        error: error.clone(),
        path: path.map(|p| p.as_str().to_string()),
        model: model.clone(),
        hidden: *hidden,
        reasoning: reasoning.as_ref().map(reasoning_doc),
        stats: stats.map(stats_doc),
        cached: stats.and_then(|s| s.cached_tokens),
        capped: *capped,
        attachments: attachments.iter().map(attachment_doc).collect(),
        at: at.clone(),
    })
}

fn reasoning_doc(r: &Reasoning) -> ReasoningDoc {
    let Reasoning {
        text,
        started_at,
        ended_at,
    } = r;
    ReasoningDoc {
        text: text.clone(),
        started_at: *started_at,
        ended_at: *ended_at,
    }
}

/// Tokens, time to first token, tenths of a token per second; the cached tokens travel apart
/// (`MessageDoc::cached`): older devices read `stats` as this triple.
fn stats_doc(s: GenerationStats) -> (u32, Option<u32>, Option<u32>) {
    let GenerationStats {
        tokens,
        first_token_ms,
        tokens_per_s,
        cached_tokens: _,
    } = s;
    (
        tokens,
        first_token_ms,
        tokens_per_s.map(|v| (v * 10.0).round() as u32),
    )
}

fn tool_call_doc(t: &ToolCall) -> ToolCallDoc {
    let ToolCall {
        id,
        name,
        arguments,
        result,
        status,
    } = t;
    ToolCallDoc {
        id: id.clone(),
        name: name.clone(),
        arguments: arguments.clone(),
        result: result.clone(),
        status: status.map(|s| s.as_str().to_string()),
    }
}

/// An attachment as its message's document carries it.
pub fn attachment_doc(a: &Attachment) -> AttachmentDoc {
    let Attachment {
        kind,
        name,
        mime,
        size,
        hash,
        width,
        height,
        text,
    } = a;
    AttachmentDoc {
        kind: kind.as_str().to_string(),
        name: name.clone(),
        mime: mime.clone(),
        size: *size,
        hash: hash.clone(),
        width: *width,
        height: *height,
        text: text.clone(),
    }
}

/// The attachment a document carries; `None` for a kind this build does not know (`check` refuses
/// such a document before it gets here).
pub fn to_attachment(d: &AttachmentDoc) -> Option<Attachment> {
    Some(Attachment {
        kind: AttachmentKind::parse(&d.kind)?,
        name: d.name.clone(),
        mime: d.mime.clone(),
        size: d.size,
        hash: d.hash.clone(),
        width: d.width,
        height: d.height,
        text: d.text.clone(),
    })
}

/// The message a document holds, with the seq of the device that wrote it (the store gives it a
/// local seq). An unknown status reads as `complete`, an unknown path as none.
pub fn to_message(d: &MessageDoc) -> Message {
    Message {
        id: d.id.clone(),
        conversation_id: d.conversation_id.clone(),
        seq: d.seq,
        role: d.role,
        content: d.content.clone(),
        status: MessageStatus::parse(&d.status).unwrap_or(MessageStatus::Complete),
        created_at: d.created_at,
        meta: MessageMeta {
            tool_calls: d
                .tool_calls
                .iter()
                .map(|t| ToolCall {
                    id: t.id.clone(),
                    name: t.name.clone(),
                    arguments: t.arguments.clone(),
                    result: t.result.clone(),
                    // A word this build does not know reads as none (`ToolCall::status`).
                    status: t.status.as_deref().and_then(ToolStatus::parse),
                })
                .collect(),
            usage: d.usage.map(|(p, c)| Usage {
                prompt_tokens: p,
                completion_tokens: c,
            }),
            error: d.error.clone(),
            path: d.path.as_deref().and_then(TurnPath::parse),
            model: d.model.clone(),
            after: d.after.clone(),
            replaces: d.replaces.clone(),
            deleted: false,
            hidden: d.hidden,
            reasoning: d.reasoning.as_ref().map(|r| Reasoning {
                text: r.text.clone(),
                started_at: r.started_at,
                ended_at: r.ended_at,
            }),
            stats: d
                .stats
                .map(|(tokens, first_token_ms, speed)| GenerationStats {
                    tokens,
                    first_token_ms,
                    tokens_per_s: speed.filter(|v| *v > 0).map(|v| v as f32 / 10.0),
                    cached_tokens: d.cached,
                }),
            // The images' bytes follow in their blob documents (`sync::blob`).
            attachments: d.attachments.iter().filter_map(to_attachment).collect(),
            capped: d.capped,
        },
    }
}

// ---------------------------------------------------------------- entities and edges

fn scope_of(n: &EntityNode) -> Option<String> {
    match &n.scope {
        EntityScope::Conversation(c) => Some(c.clone()),
        EntityScope::Shared => None,
    }
}

/// An entity's document first written at `at`, and one document per relationship.
pub fn entity_docs(n: &EntityNode, at: &Hlc) -> (EntityDoc, Vec<EdgeDoc>) {
    // Without `..`: a field added to the model fails to compile here until it is synced.
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
        // Each its own document: `edge_docs`.
        relationships: _,
        source_message_ids,
        updated_at,
    } = n;
    let doc = EntityDoc {
        id: id.clone(),
        scope: scope_of(n),
        entity_type: Lww::new(*entity_type, at),
        name: Lww::new(name.clone(), at),
        description: Lww::new(description.clone(), at),
        aliases: aliases.iter().cloned().collect(),
        properties: properties
            .iter()
            .map(|(k, v)| (k.clone(), Lww::new(v.clone(), at)))
            .collect(),
        property_since: property_since
            .iter()
            .map(|(k, v)| (k.clone(), Lww::new(*v, at)))
            .collect(),
        past_properties: past_properties.iter().map(past_doc).collect(),
        sources: source_message_ids.iter().cloned().collect(),
        updated_at: *updated_at,
    };
    (doc, edge_docs(n))
}

/// One document per relationship of `n`.
pub fn edge_docs(n: &EntityNode) -> Vec<EdgeDoc> {
    n.relationships
        .iter()
        .map(|r| {
            let Relationship {
                target_id,
                relationship,
                strength,
                valid_from,
                valid_to,
            } = r;
            EdgeDoc {
                scope: scope_of(n),
                source: n.id.clone(),
                label: relationship.clone(),
                target: target_id.clone(),
                valid_from: *valid_from,
                strength: *strength,
                valid_to: *valid_to,
            }
        })
        .collect()
}

/// `prev` after the local edit that left the node as `n`: changed registers get `at`, aliases,
/// sources and properties are added (a set never shrinks by merging).
pub fn edit_entity(prev: &EntityDoc, n: &EntityNode, at: &Hlc) -> EntityDoc {
    let mut next = prev.clone();
    if prev.entity_type.v != n.entity_type {
        next.entity_type = Lww::new(n.entity_type, at);
    }
    if prev.name.v != n.name {
        next.name = Lww::new(n.name.clone(), at);
    }
    if prev.description.v != n.description {
        next.description = Lww::new(n.description.clone(), at);
    }
    next.aliases.extend(n.aliases.iter().cloned());
    next.sources.extend(n.source_message_ids.iter().cloned());
    for (k, v) in &n.properties {
        if prev.properties.get(k).map(|r| &r.v) != Some(v) {
            next.properties.insert(k.clone(), Lww::new(v.clone(), at));
        }
    }
    for (k, v) in &n.property_since {
        if prev.property_since.get(k).map(|r| r.v) != Some(*v) {
            next.property_since.insert(k.clone(), Lww::new(*v, at));
        }
    }
    next.past_properties
        .extend(n.past_properties.iter().map(past_doc));
    next.updated_at = next.updated_at.max(n.updated_at);
    next
}

fn past_doc(p: &PastProperty) -> PastPropertyDoc {
    let PastProperty {
        key,
        value,
        valid_from,
        valid_to,
    } = p;
    PastPropertyDoc {
        key: key.clone(),
        value: value.clone(),
        valid_from: *valid_from,
        valid_to: *valid_to,
    }
}

/// The node a document and its edges describe (edges of other sources are ignored).
pub fn to_entity(d: &EntityDoc, edges: &[EdgeDoc]) -> EntityNode {
    EntityNode {
        id: d.id.clone(),
        scope: d
            .scope
            .clone()
            .map_or(EntityScope::Shared, EntityScope::Conversation),
        entity_type: d.entity_type.v,
        name: d.name.v.clone(),
        aliases: d.aliases.iter().cloned().collect(),
        description: d.description.v.clone(),
        properties: d
            .properties
            .iter()
            .map(|(k, r)| (k.clone(), r.v.clone()))
            .collect(),
        // A key whose current value is also listed as past was superseded on another device and
        // set again here (or the other way round): the current register decides.
        property_since: d
            .property_since
            .iter()
            .filter(|(k, _)| d.properties.contains_key(*k))
            .map(|(k, r)| (k.clone(), r.v))
            .collect(),
        past_properties: d
            .past_properties
            .iter()
            .map(|p| PastProperty {
                key: p.key.clone(),
                value: p.value.clone(),
                valid_from: p.valid_from,
                valid_to: p.valid_to,
            })
            .collect(),
        relationships: edges
            .iter()
            .filter(|e| e.source == d.id && e.scope == d.scope)
            .map(|e| Relationship {
                target_id: e.target.clone(),
                relationship: e.label.clone(),
                strength: e.strength,
                valid_from: e.valid_from,
                valid_to: e.valid_to,
            })
            .collect(),
        source_message_ids: d.sources.iter().cloned().collect(),
        updated_at: d.updated_at,
    }
}

// ---------------------------------------------------------------- summaries

/// The document of a summary version made at `made`.
pub fn summary_doc(s: &ConversationSummary, made: &Hlc) -> SummaryDoc {
    let ConversationSummary {
        conversation_id,
        version,
        text,
        covers_up_to_seq,
        message_count,
        updated_at,
    } = s;
    SummaryDoc {
        conversation_id: conversation_id.clone(),
        made: made.clone(),
        version: *version,
        covers_up_to_seq: *covers_up_to_seq,
        message_count: *message_count,
        updated_at: *updated_at,
        text: text.clone(),
    }
}

pub fn to_summary(d: &SummaryDoc) -> ConversationSummary {
    ConversationSummary {
        conversation_id: d.conversation_id.clone(),
        version: d.version,
        text: d.text.clone(),
        covers_up_to_seq: d.covers_up_to_seq,
        message_count: d.message_count,
        updated_at: d.updated_at,
    }
}

/// The active version: the one covering the highest seq, the later stamp among equals.
pub fn active_summary(versions: &[SummaryDoc]) -> Option<&SummaryDoc> {
    versions
        .iter()
        .max_by(|a, b| (a.covers_up_to_seq, &a.made).cmp(&(b.covers_up_to_seq, &b.made)))
}

// ---------------------------------------------------------------- projects

fn project_words(p: &Project) -> ProjectWords {
    ProjectWords {
        name: p.name.clone(),
        instructions: p.instructions.clone(),
    }
}

/// The document of a project first written at `at`.
pub fn project_doc(p: &Project, at: &Hlc) -> ProjectDoc {
    let Project {
        id,
        name: _,
        instructions: _,
        created_at,
        updated_at: _,
        deleted,
    } = p;
    ProjectDoc {
        id: id.clone(),
        words: Lww::new(project_words(p), at),
        created_at: *created_at,
        deleted: *deleted,
    }
}

/// `prev` after the local change that left the project as `p`: new words get `at`; a deletion
/// is joined in (never taken back).
pub fn edit_project(prev: &ProjectDoc, p: &Project, at: &Hlc) -> ProjectDoc {
    let mut next = super::merge::merge_project(prev, &project_doc(p, &prev.words.at));
    next.words = if prev.words.v != project_words(p) {
        Lww::new(project_words(p), at)
    } else {
        prev.words.clone()
    };
    next
}

/// The project a document holds (`updated_at`: the wall time of its words' stamp, so the copy
/// changed last wins when it is joined with the stored one).
pub fn to_project(d: &ProjectDoc) -> Project {
    Project {
        id: d.id.clone(),
        name: d.words.v.name.clone(),
        instructions: d.words.v.instructions.clone(),
        created_at: d.created_at,
        updated_at: d.words.at.wall.max(d.deleted.unwrap_or(0)),
        deleted: d.deleted,
    }
}

// ---------------------------------------------------------------- facts about the user

fn words_of(f: &UserFact) -> FactWords {
    FactWords {
        text: f.text.clone(),
        kind: f.kind.as_str().to_string(),
        claim_key: f.claim_key.clone(),
        scope: f.scope.clone(),
    }
}

/// The document of a fact first written at `at`.
pub fn fact_doc(f: &UserFact, at: &Hlc) -> FactDoc {
    let UserFact {
        id,
        text: _,
        kind: _,
        claim_key: _,
        source,
        valid_from,
        valid_to,
        forgotten,
        scope: _,
        updated_at,
    } = f;
    FactDoc {
        id: id.clone(),
        words: Lww::new(words_of(f), at),
        source: source.as_ref().map(|s| {
            let FactSource {
                conversation_id,
                message_id,
                said_at,
            } = s;
            FactSourceDoc {
                conversation_id: conversation_id.clone(),
                message_id: message_id.clone(),
                said_at: *said_at,
            }
        }),
        valid_from: *valid_from,
        valid_to: *valid_to,
        forgotten: *forgotten,
        updated_at: *updated_at,
    }
}

/// `prev` after the local change that left the fact as `f`: new words get `at`; an end or a
/// tombstone is joined in (never taken back: a fact past or forgotten elsewhere stays so).
pub fn edit_fact(prev: &FactDoc, f: &UserFact, at: &Hlc) -> FactDoc {
    let mut next = super::merge::merge_fact(prev, &fact_doc(f, &prev.words.at));
    next.words = if prev.words.v != words_of(f) {
        Lww::new(words_of(f), at)
    } else {
        prev.words.clone()
    };
    next
}

/// The fact a document holds (an unknown kind reads as `other`).
pub fn to_fact(d: &FactDoc) -> UserFact {
    UserFact {
        id: d.id.clone(),
        text: d.words.v.text.clone(),
        kind: FactKind::parse_lenient(&d.words.v.kind),
        claim_key: d.words.v.claim_key.clone(),
        source: d.source.as_ref().map(|s| FactSource {
            conversation_id: s.conversation_id.clone(),
            message_id: s.message_id.clone(),
            said_at: s.said_at,
        }),
        valid_from: d.valid_from,
        valid_to: d.valid_to,
        forgotten: d.forgotten,
        scope: d.words.v.scope.clone(),
        updated_at: d.updated_at,
    }
}
