//! Open WebUI's "Export Chats" JSON: a list of `{id, title, chat: {history: {messages: {id:
//! {parentId, childrenIds, role, content, timestamp}}, currentId}, params: {system}}, created_at,
//! updated_at}`. The shown branch is the `parentId` chain up from `currentId`; `chat.params.system`
//! (or the older `chat.system`) is the system prompt; `<details type="reasoning">` and tool-call
//! `<details>` blocks are dropped from the text. Older exports without `history` keep
//! `chat.messages` in order. Times are seconds.
//! Must not import anything outside `crate::engine`.

use super::super::json::{any_time, id_at, str_at};
use super::super::{ImportError, Imported, ImportedConversation, ImportedMessage, Skipped, Source};
use super::said;
use super::{content_text, conv_name, list, shape};
use super::{keep, read_items, shown};
use serde_json::Value;
use std::collections::HashMap;

const SOURCE: Source = Source::OpenWebUi;

pub fn read(items: &[Value]) -> Result<Imported, ImportError> {
    read_items(SOURCE, items, conversation)
}

pub(super) fn conversation(
    i: usize,
    item: &Value,
    skipped: &mut Skipped,
) -> Result<ImportedConversation, ImportError> {
    let at = || conv_name(i, item, "title");
    let chat = item
        .get("chat")
        .filter(|c| c.is_object())
        .ok_or_else(|| shape(SOURCE, at(), "\"chat\" is not an object"))?;
    let raw: Vec<&Value> = match chat.get("history").filter(|h| !h.is_null()) {
        Some(history) => branch(history, &at, skipped)?,
        None => list(SOURCE, &at, chat, "messages")?.iter().collect(),
    };
    let mut messages = Vec::new();
    for m in raw {
        let Some(role) = said(str_at(m, "role")).keep(skipped) else {
            continue;
        };
        let text = strip_details(&content_text(m.get("content")), skipped);
        keep(
            &mut messages,
            &mut skipped.empty,
            ImportedMessage {
                source_id: id_at(m, "id"),
                role,
                content: text,
                created_at: any_time(m.get("timestamp")),
                model: str_at(m, "model").map(str::to_string),
                hidden: false,
                reasoning: None,
                images: Vec::new(),
                tool_calls: Vec::new(),
            },
        );
    }
    let system = chat
        .get("params")
        .and_then(|p| str_at(p, "system"))
        .or_else(|| str_at(chat, "system"))
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string);
    let title = str_at(item, "title")
        .or_else(|| str_at(chat, "title"))
        .unwrap_or("")
        .to_string();
    Ok(ImportedConversation {
        source_id: id_at(item, "id").or_else(|| id_at(chat, "id")),
        title,
        created_at: any_time(item.get("created_at")),
        updated_at: any_time(item.get("updated_at")),
        system_prompt: system,
        summary: None,
        messages,
    })
}

/// The messages on the shown branch of `history`, root first.
fn branch<'a>(
    history: &'a Value,
    at: &dyn Fn() -> String,
    skipped: &mut Skipped,
) -> Result<Vec<&'a Value>, ImportError> {
    let map = history
        .get("messages")
        .and_then(Value::as_object)
        .ok_or_else(|| shape(SOURCE, at(), "\"history.messages\" is not an object"))?;
    if map.is_empty() {
        return Ok(Vec::new());
    }
    let mut parent_of = HashMap::with_capacity(map.len());
    for (id, m) in map {
        if !m.is_object() {
            return Err(shape(
                SOURCE,
                at(),
                format!("message {id} is not an object"),
            ));
        }
        parent_of.insert(id.as_str(), str_at(m, "parentId"));
    }
    let current = str_at(history, "currentId")
        .ok_or_else(|| shape(SOURCE, at(), "\"history.currentId\" is missing"))?;
    let path = shown(
        SOURCE,
        &at,
        &parent_of,
        current,
        "currentId",
        "among the messages",
    )?;
    skipped.other_branches += map.len() - path.len();
    Ok(path.into_iter().filter_map(|id| map.get(id)).collect())
}

/// The text without `<details type="reasoning">` (and tool-call / code-interpreter) blocks, which
/// Open WebUI folds into the content; each dropped block is counted.
fn strip_details(text: &str, skipped: &mut Skipped) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<details") {
        let open_end = match rest[start..].find('>') {
            Some(e) => start + e + 1,
            None => break,
        };
        let tag = &rest[start..open_end];
        let kind = if tag.contains("type=\"reasoning\"") {
            Some(true)
        } else if tag.contains("type=\"tool_calls\"") || tag.contains("type=\"code_interpreter\"") {
            Some(false)
        } else {
            None
        };
        let Some(is_reasoning) = kind else {
            out.push_str(&rest[..open_end]);
            rest = &rest[open_end..];
            continue;
        };
        // Nested <details> inside the block are skipped with it.
        let mut depth = 1usize;
        let mut i = open_end;
        while depth > 0 {
            let next_open = rest[i..].find("<details");
            let next_close = rest[i..].find("</details>");
            match (next_open, next_close) {
                (Some(o), Some(c)) if o < c => {
                    depth += 1;
                    i += o + "<details".len();
                }
                (_, Some(c)) => {
                    depth -= 1;
                    i += c + "</details>".len();
                }
                (_, None) => {
                    i = rest.len();
                    break;
                }
            }
        }
        if is_reasoning {
            skipped.reasoning += 1;
        } else {
            skipped.tool += 1;
        }
        out.push_str(&rest[..start]);
        rest = &rest[i..];
    }
    out.push_str(rest);
    out.trim().to_string()
}
