//! ChatGPT's data export (`conversations.json`): a list of conversations whose `mapping` is a tree
//! of nodes `{id, message or null, parent, children}`; the shown branch is the path from
//! `current_node` up through `parent` to the root. Keeps what ChatGPT shows: user and assistant
//! text to `all`, not visually hidden, of content type `text` or `multimodal_text`, its citation
//! markers made what ChatGPT shows (`citations.rs`).
//! Must not import anything outside `crate::engine`.

use super::super::json::{id_at, secs, str_at};
use super::super::{ImportError, Imported, ImportedConversation, ImportedMessage, Skipped, Source};
use super::citations::readable;
use super::{conv_name, shape};
use super::{read_items, shown};
use super::{said, Said};
use crate::engine::model::Role;
use serde_json::Value;
use std::collections::HashMap;

const SOURCE: Source = Source::ChatGpt;

pub fn read(items: &[Value]) -> Result<Imported, ImportError> {
    read_items(SOURCE, items, conversation)
}

pub(super) fn conversation(
    i: usize,
    item: &Value,
    skipped: &mut Skipped,
) -> Result<ImportedConversation, ImportError> {
    let at = || conv_name(i, item, "title");
    let mapping = item
        .get("mapping")
        .and_then(Value::as_object)
        .ok_or_else(|| shape(SOURCE, at(), "\"mapping\" is not an object"))?;
    let mut parent_of: HashMap<&str, Option<&str>> = HashMap::with_capacity(mapping.len());
    for (id, node) in mapping {
        if !node.is_object() {
            return Err(shape(SOURCE, at(), format!("node {id} is not an object")));
        }
        parent_of.insert(id.as_str(), str_at(node, "parent"));
    }
    let current = match item.get("current_node") {
        Some(Value::String(s)) => s.as_str(),
        _ => return Err(shape(SOURCE, at(), "it has no \"current_node\"")),
    };
    let path = shown(
        SOURCE,
        &at,
        &parent_of,
        current,
        "current_node",
        "in \"mapping\"",
    )?;
    // Visible messages on other branches: the regenerated answers and edits not shown.
    let on_path: std::collections::HashSet<&str> = path.iter().copied().collect();
    skipped.other_branches += mapping
        .iter()
        .filter(|(id, n)| {
            !on_path.contains(id.as_str())
                && n.get("message")
                    .is_some_and(|m| m.is_object() && visible(m).is_ok())
        })
        .count();
    let mut messages = Vec::new();
    for id in path {
        let Some(m) = mapping.get(id).and_then(|n| n.get("message")) else {
            continue;
        };
        if !m.is_object() {
            continue;
        }
        match visible(m) {
            Ok((role, content)) => messages.push(ImportedMessage {
                source_id: id_at(m, "id").or_else(|| Some(id.to_string())),
                role,
                content,
                created_at: secs(m.get("create_time")),
                model: m
                    .get("metadata")
                    .and_then(|md| str_at(md, "model_slug"))
                    .map(str::to_string),
                hidden: false,
                reasoning: None,
            }),
            Err(why) => why.count(skipped),
        }
    }
    Ok(ImportedConversation {
        source_id: id_at(item, "conversation_id").or_else(|| id_at(item, "id")),
        title: str_at(item, "title").unwrap_or("").to_string(),
        created_at: secs(item.get("create_time")),
        updated_at: secs(item.get("update_time")),
        system_prompt: None,
        summary: None,
        messages,
    })
}

/// Why a message is not shown.
enum Why {
    Hidden,
    Tool,
    Reasoning,
    Empty,
}

impl Why {
    fn count(self, s: &mut Skipped) {
        match self {
            Why::Hidden => s.hidden += 1,
            Why::Tool => s.tool += 1,
            Why::Reasoning => s.reasoning += 1,
            Why::Empty => s.empty += 1,
        }
    }
}

/// The role and text of a message ChatGPT shows, or why it does not.
fn visible(m: &Value) -> Result<(Role, String), Why> {
    let role = m.get("author").and_then(|a| str_at(a, "role"));
    let role = match said(role) {
        Said::Chat(role) => role,
        Said::Tool => return Err(Why::Tool),
        Said::System | Said::Other => return Err(Why::Hidden),
    };
    let meta = m.get("metadata");
    if meta
        .and_then(|md| md.get("is_visually_hidden_from_conversation"))
        .and_then(Value::as_bool)
        == Some(true)
    {
        return Err(Why::Hidden);
    }
    match str_at(m, "recipient") {
        None | Some("all") => {}
        Some(_) => return Err(Why::Tool),
    }
    let content = m.get("content");
    match content.and_then(|c| str_at(c, "content_type")) {
        Some("text" | "multimodal_text") => {}
        Some("thoughts" | "reasoning_recap") => return Err(Why::Reasoning),
        Some(
            "code"
            | "execution_output"
            | "tether_browsing_display"
            | "tether_quote"
            | "system_error"
            | "computer_output",
        ) => return Err(Why::Tool),
        _ => return Err(Why::Hidden),
    }
    let parts = content
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut text: Vec<String> = Vec::new();
    for p in parts {
        match p {
            Value::String(s) if !s.is_empty() => text.push(s.clone()),
            Value::Object(_) => match str_at(p, "content_type") {
                Some("audio_transcription") => {
                    if let Some(t) = str_at(p, "text").filter(|t| !t.is_empty()) {
                        text.push(t.to_string());
                    }
                }
                Some(t) if t.contains("image") => text.push("[image]".into()),
                Some(t) if t.contains("audio") => text.push("[audio]".into()),
                _ => text.push("[attachment]".into()),
            },
            _ => {}
        }
    }
    // Citation markers as ChatGPT shows them: their source's readable text, or nothing.
    let text = readable(&text.join("\n\n"), meta);
    if text.trim().is_empty() {
        return Err(Why::Empty);
    }
    Ok((role, text))
}
