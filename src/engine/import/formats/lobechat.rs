//! LobeChat's "export all" JSON (`{exportType, state, version}`): `state.messages` carry `sessionId`,
//! `topicId`, `parentId`, `createdAt`; one conversation per topic (`state.topics`), plus one per
//! session for its messages outside any topic. The session's `config.systemRole` is the system
//! prompt. Tool and error messages are dropped (and `reasoning`). Messages are ordered as LobeChat
//! shows them: by `createdAt`, file order for ties. Settings and key vaults are never read.
//! Must not import anything outside `crate::engine`.

use super::super::json::{any_time, id_at, str_at};
use super::super::{ImportError, Imported, ImportedConversation, ImportedMessage, Skipped, Source};
use super::finish;
use super::said;
use super::{content_text, list, shape};
use crate::engine::model::Millis;
use serde_json::Value;
use std::collections::HashMap;

const SOURCE: Source = Source::LobeChat;

/// Reads LobeChat's "export all" file (module rules).
pub fn read(root: &Value) -> Result<Imported, ImportError> {
    let state = root
        .get("state")
        .filter(|s| s.is_object())
        .ok_or_else(|| shape(SOURCE, "the file", "\"state\" is not an object"))?;
    let at = || "the file's state".to_string();
    let sessions = list(SOURCE, &at, state, "sessions")?;
    let topics = list(SOURCE, &at, state, "topics")?;
    let all = list(SOURCE, &at, state, "messages")?;
    let settings_ignored = state.get("settings").is_some() || root.get("settings").is_some();

    let groups = group_by_conversation(all);
    let topic_of = by_id(topics);
    let session_of = by_id(sessions);
    let mut skipped = Skipped::default();
    let mut conversations = Vec::new();
    for (key, mut msgs) in groups {
        let time = |m: &Value| any_time(m.get("createdAt")).unwrap_or(Millis::MAX);
        crate::engine::sort::sort_by_key(&mut msgs, |m| time(m));
        let topic = topic_of.get(&key).copied();
        let session_id = topic
            .and_then(|t| id_at(t, "sessionId"))
            .or_else(|| msgs.iter().find_map(|m| id_at(m, "sessionId")));
        let session = session_id.as_ref().and_then(|s| session_of.get(s).copied());
        let messages = messages_of(msgs, &mut skipped);
        let session_title = session
            .and_then(|s| s.get("meta"))
            .and_then(|meta| str_at(meta, "title"));
        let title = match topic.and_then(|t| str_at(t, "title")) {
            Some(t) => t.to_string(),
            None => session_title.unwrap_or("").to_string(),
        };
        let system = session
            .and_then(|s| s.get("config"))
            .and_then(|c| str_at(c, "systemRole"))
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string);
        conversations.push(ImportedConversation {
            source_id: Some(key),
            title,
            created_at: topic.and_then(|t| any_time(t.get("createdAt"))),
            updated_at: topic.and_then(|t| any_time(t.get("updatedAt"))),
            system_prompt: system,
            summary: None,
            messages,
        });
    }
    finish(SOURCE, conversations, skipped, settings_ignored)
}

/// The messages grouped by conversation, in the order each first appears: the key is the topic id,
/// or `<session id>:default` for messages outside topics.
fn group_by_conversation(all: &[Value]) -> Vec<(String, Vec<&Value>)> {
    let mut groups: Vec<(String, Vec<&Value>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for m in all {
        let key = match (id_at(m, "topicId"), id_at(m, "sessionId")) {
            (Some(t), _) => t,
            (None, Some(s)) => format!("{s}:default"),
            (None, None) => "inbox:default".to_string(),
        };
        let slot = *index.entry(key.clone()).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[slot].1.push(m);
    }
    groups
}

/// The objects of `items` by their `id`.
fn by_id(items: &[Value]) -> HashMap<String, &Value> {
    items
        .iter()
        .filter_map(|t| id_at(t, "id").map(|id| (id, t)))
        .collect()
}

/// One conversation's messages to import, in order; errors, tool-only and empty ones (and the
/// `reasoning` kept out of them) counted in `skipped`.
fn messages_of(msgs: Vec<&Value>, skipped: &mut Skipped) -> Vec<ImportedMessage> {
    let mut messages = Vec::new();
    for m in msgs {
        if m.get("error").is_some_and(|e| !e.is_null()) {
            skipped.errors += 1;
            continue;
        }
        let Some(role) = said(str_at(m, "role")).keep(skipped) else {
            continue;
        };
        if m.get("reasoning").is_some_and(|r| !r.is_null()) {
            skipped.reasoning += 1;
        }
        let text = content_text(m.get("content"));
        if text.trim().is_empty() {
            // An assistant message that only called tools.
            if m.get("tools").is_some_and(|t| !t.is_null()) {
                skipped.tool += 1;
            } else {
                skipped.empty += 1;
            }
            continue;
        }
        messages.push(ImportedMessage {
            source_id: id_at(m, "id"),
            role,
            content: text,
            created_at: any_time(m.get("createdAt")),
            model: str_at(m, "model").map(str::to_string),
            hidden: false,
            reasoning: None,
            images: Vec::new(),
            tool_calls: Vec::new(),
        });
    }
    messages
}
