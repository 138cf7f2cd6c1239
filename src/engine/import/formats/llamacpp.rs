//! llama.cpp's web UI export: `{conv: {id, name, currNode, lastModified}, messages: [{id, type,
//! role, content, parent, children, timestamp, thinking or reasoningContent, extra}]}`, a list of
//! those, or JSON Lines (a `session` line, then one `message` line each; several files in a ZIP).
//! The shown branch is the `parent` chain up from `currNode` (the newest message when `currNode` is
//! null); the `root` node is dropped, and so is the reasoning. Times are milliseconds.
//! Must not import anything outside `crate::engine`.

use super::super::json::{id_at, millis, str_at};
use super::super::{ImportError, Imported, ImportedConversation, ImportedMessage, Skipped, Source};
use super::said;
use super::{attachment_notes, conv_name, list, shape, with_notes};
use super::{finish, keep, read_items, shown};
use serde_json::Value;
use std::collections::HashMap;

const SOURCE: Source = Source::LlamaCpp;

/// A list of `{conv, messages}`.
pub fn read(items: &[Value]) -> Result<Imported, ImportError> {
    read_items(SOURCE, items, |i, item, skipped| {
        let conv = item.get("conv").filter(|c| c.is_object()).ok_or_else(|| {
            shape(
                SOURCE,
                format!("conversation {}", i + 1),
                "\"conv\" is not an object",
            )
        })?;
        let at = || conv_name(i, conv, "name");
        let messages: Vec<&Value> = list(SOURCE, &at, item, "messages")?.iter().collect();
        conversation(conv, &messages, &at, skipped)
    })
}

/// JSON Lines: a session line (`{"type": "session", ...}` with the conversation's fields, possibly
/// under `session` or `conv`), then message lines (`{"type": "message", ...}`, fields possibly
/// under `message`). A new session line starts a new conversation.
pub fn read_jsonl(lines: &[Value]) -> Result<Imported, ImportError> {
    let mut skipped = Skipped::default();
    let mut conversations = Vec::new();
    let mut current: Option<(&Value, Vec<&Value>)> = None;
    let mut n = 0;
    for (i, line) in lines.iter().enumerate() {
        let nested = |k: &str| line.get(k).filter(|v| v.is_object());
        let is_session = str_at(line, "type") == Some("session") || nested("conv").is_some();
        if is_session {
            if let Some((conv, msgs)) = current.take() {
                let at = || conv_name(n, conv, "name");
                conversations.push(conversation(conv, &msgs, &at, &mut skipped)?);
                n += 1;
            }
            let conv = nested("session").or_else(|| nested("conv")).unwrap_or(line);
            let mut msgs = Vec::new();
            // `{conv, messages}` on one line.
            if let Some(inline) = line.get("messages").and_then(Value::as_array) {
                msgs.extend(inline.iter());
            }
            current = Some((conv, msgs));
        } else {
            let Some((_, msgs)) = current.as_mut() else {
                return Err(shape(
                    SOURCE,
                    format!("line {}", i + 1),
                    "a message comes before any session line",
                ));
            };
            msgs.push(nested("message").unwrap_or(line));
        }
    }
    if let Some((conv, msgs)) = current.take() {
        let at = || conv_name(n, conv, "name");
        conversations.push(conversation(conv, &msgs, &at, &mut skipped)?);
    }
    finish(SOURCE, conversations, skipped, false)
}

/// The node the conversation shows: its `currNode`, else its newest message.
fn current_node(conv: &Value, all: &[&Value]) -> Option<String> {
    let newest = all
        .iter()
        .filter(|m| str_at(m, "type") != Some("root"))
        .max_by_key(|m| millis(m.get("timestamp")).unwrap_or(0))
        .and_then(|m| id_at(m, "id"));
    id_at(conv, "currNode").or(newest)
}

fn conversation(
    conv: &Value,
    all: &[&Value],
    at: &dyn Fn() -> String,
    skipped: &mut Skipped,
) -> Result<ImportedConversation, ImportError> {
    let mut by_id: HashMap<String, &Value> = HashMap::with_capacity(all.len());
    for m in all {
        let id = id_at(m, "id").ok_or_else(|| shape(SOURCE, at(), "a message has no \"id\""))?;
        by_id.insert(id, m);
    }
    let parents: HashMap<String, Option<String>> = by_id
        .iter()
        .map(|(id, m)| (id.clone(), id_at(m, "parent")))
        .collect();
    let parent_of: HashMap<&str, Option<&str>> = parents
        .iter()
        .map(|(id, p)| (id.as_str(), p.as_deref()))
        .collect();
    let current = current_node(conv, all);
    let path = match current.as_deref() {
        Some(c) => shown(SOURCE, &at, &parent_of, c, "currNode", "among its messages")?,
        None => Vec::new(),
    };
    let non_root = all
        .iter()
        .filter(|m| str_at(m, "type") != Some("root"))
        .count();
    let mut system_prompt = None;
    let mut messages = Vec::new();
    let mut on_path = 0;
    for id in path {
        let Some(m) = by_id.get(id) else { continue };
        if str_at(m, "type") == Some("root") {
            continue;
        }
        on_path += 1;
        let has_reasoning = ["thinking", "reasoningContent"]
            .iter()
            .any(|k| str_at(m, k).is_some_and(|t| !t.trim().is_empty()));
        if has_reasoning {
            skipped.reasoning += 1;
        }
        let notes = attachment_notes(list(SOURCE, at, m, "extra")?, &["name"]);
        let text = with_notes(str_at(m, "content").unwrap_or("").to_string(), &notes);
        let Some((role, text)) =
            said(str_at(m, "role")).keep_or_system(text, &mut system_prompt, skipped)
        else {
            continue;
        };
        keep(
            &mut messages,
            &mut skipped.empty,
            ImportedMessage {
                source_id: Some(id.to_string()),
                role,
                content: text,
                created_at: millis(m.get("timestamp")),
                model: str_at(m, "model").map(str::to_string),
                hidden: false,
                reasoning: None,
                images: Vec::new(),
                tool_calls: Vec::new(),
            },
        );
    }
    skipped.other_branches += non_root.saturating_sub(on_path);
    Ok(ImportedConversation {
        source_id: id_at(conv, "id"),
        title: str_at(conv, "name").unwrap_or("").to_string(),
        created_at: None,
        updated_at: millis(conv.get("lastModified")),
        system_prompt,
        summary: None,
        messages,
    })
}
