//! Claude.ai's data export (`conversations.json`): a list of `{uuid, name, created_at,
//! chat_messages[]}`; each message has `sender` (`human`/`assistant`) and `content` blocks, of which
//! `text` blocks are the message, and the artifacts Claude wrote beside them (`artifacts.rs`: an
//! `artifacts` `tool_use` that creates or rewrites one, an `<antArtifact>` in the text) fenced
//! blocks in it; `thinking` blocks are its reasoning (`redacted_thinking` is dropped); another
//! `tool_use` is a tool call of the reply (its `id`, else one made from the message's, its `name`
//! and `input`), and a `tool_result` its result (paired by `tool_use_id`, else with the newest call
//! of its name still without one: [`answer`]; its text blocks, `is_error` a failure); a result no
//! call takes, an `artifacts` edit that is not shown and its results, and other tool blocks, are
//! dropped as tool items; `text` is read only when there are
//! no content blocks (older
//! exports). Older exports carry the thinking inline in the text as `<antThinking>…</antThinking>`:
//! it becomes the message's reasoning too ([`ant_thinking`]). Attachments become a note. When the
//! conversation names its `current_leaf_message_uuid` and messages carry `parent_message_uuid`
//! (edited or retried prompts), only the branch from that leaf up to the root is kept.
//! Must not import anything outside `crate::engine`.

use super::super::json::{any_time, id_at, str_at};
use super::super::{ImportError, Imported, ImportedConversation, ImportedMessage, Skipped, Source};
use super::artifacts;
use super::said;
use super::{answer, imported_call};
use super::{attachment_notes, conv_name, list, with_notes};
use super::{keep, read_items, shown};
use crate::engine::model::ToolCall;
use serde_json::Value;

const SOURCE: Source = Source::Claude;

pub fn read(items: &[Value]) -> Result<Imported, ImportError> {
    read_items(SOURCE, items, conversation)
}

pub(super) fn conversation(
    i: usize,
    item: &Value,
    skipped: &mut Skipped,
) -> Result<ImportedConversation, ImportError> {
    let at = || conv_name(i, item, "name");
    let mut messages = Vec::new();
    let all = list(SOURCE, &at, item, "chat_messages")?;
    for m in branch(all, item, &at, skipped)? {
        let Some(role) = said(str_at(m, "sender")).keep(skipped) else {
            continue;
        };
        let blocks = list(SOURCE, &at, m, "content")?;
        let mut text: Vec<String> = Vec::new();
        let mut thinking: Vec<String> = Vec::new();
        let mut calls = Vec::new();
        for b in blocks {
            match str_at(b, "type") {
                Some("text") => text.extend(
                    str_at(b, "text")
                        .filter(|t| !t.is_empty())
                        .map(artifacts::in_text),
                ),
                Some("thinking") => thinking.extend(
                    str_at(b, "thinking")
                        .filter(|t| !t.is_empty())
                        .map(str::to_string),
                ),
                Some("redacted_thinking") => skipped.reasoning += 1,
                Some("tool_use") if artifacts::from_tool_use(b).is_some() => {
                    text.extend(artifacts::from_tool_use(b));
                }
                Some("tool_use" | "tool_result") if tool_block(m, b, &mut calls) => {}
                Some(t) if t.starts_with("tool") || t.ends_with("tool_use") => skipped.tool += 1,
                _ => {}
            }
        }
        let mut text = text.join("\n\n");
        if blocks.is_empty() {
            text = artifacts::in_text(str_at(m, "text").unwrap_or(""));
        }
        let (inline, text) = ant_thinking(&text);
        thinking.extend(inline);
        let reasoning = (!thinking.is_empty()).then(|| thinking.join("\n\n"));
        let mut notes = attachment_notes(list(SOURCE, &at, m, "attachments")?, &["file_name"]);
        notes.extend(attachment_notes(
            list(SOURCE, &at, m, "files")?,
            &["file_name"],
        ));
        let text = with_notes(text, &notes);
        keep(
            &mut messages,
            &mut skipped.empty,
            ImportedMessage {
                source_id: id_at(m, "uuid"),
                role,
                content: text,
                created_at: any_time(m.get("created_at")),
                model: None,
                reasoning,
                images: Vec::new(),
                hidden: false,
                tool_calls: calls,
            },
        );
    }
    Ok(ImportedConversation {
        source_id: id_at(item, "uuid"),
        title: str_at(item, "name").unwrap_or("").to_string(),
        created_at: any_time(item.get("created_at")),
        updated_at: any_time(item.get("updated_at")),
        system_prompt: None,
        summary: None,
        messages,
    })
}

/// A `tool_use` block kept as a call of the reply, or a `tool_result` given to its call (module
/// doc); `false`: left out (an `artifacts` edit not shown, its results, a result no call takes).
fn tool_block(m: &Value, b: &Value, calls: &mut Vec<ToolCall>) -> bool {
    let name = str_at(b, "name");
    if name == Some("artifacts") {
        return false;
    }
    if str_at(b, "type") == Some("tool_result") {
        return tool_result(calls, b);
    }
    let Some(name) = name else {
        return false;
    };
    let id = id_at(b, "id")
        .unwrap_or_else(|| format!("{}-{}", str_at(m, "uuid").unwrap_or("call"), calls.len()));
    calls.push(imported_call(
        id,
        name,
        b.get("input").unwrap_or(&Value::Null),
    ));
    true
}

/// A `tool_result` block given to the call it answers (module doc); whether one took it. Its
/// content is a text or a list of blocks, of which the text ones are read (others named).
fn tool_result(calls: &mut [ToolCall], b: &Value) -> bool {
    let text = match b.get("content") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match str_at(p, "type") {
                Some("text") => str_at(p, "text").unwrap_or("").to_string(),
                Some(kind) => format!("[{kind}]"),
                None => String::new(),
            })
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    let failed = b.get("is_error").and_then(Value::as_bool) == Some(true);
    answer(
        calls,
        str_at(b, "tool_use_id"),
        str_at(b, "name"),
        &text,
        failed,
    )
}

const ANT_OPEN: &str = "<antThinking>";
const ANT_CLOSE: &str = "</antThinking>";

/// The `<antThinking>…</antThinking>` passages of an older export's text (each trimmed, empty ones
/// left out), and the text without them (trimmed; the blank lines around a passage collapse to
/// one paragraph break). One never closed runs to the end of the text.
pub(super) fn ant_thinking(text: &str) -> (Vec<String>, String) {
    if !text.contains(ANT_OPEN) {
        return (Vec::new(), text.to_string());
    }
    let mut thoughts = Vec::new();
    let mut rest = String::with_capacity(text.len());
    let mut tail = text;
    while let Some(at) = tail.find(ANT_OPEN) {
        push_paragraph(&mut rest, &tail[..at]);
        let inside = &tail[at + ANT_OPEN.len()..];
        let (thought, after) = match inside.find(ANT_CLOSE) {
            Some(end) => (&inside[..end], &inside[end + ANT_CLOSE.len()..]),
            None => (inside, ""),
        };
        if !thought.trim().is_empty() {
            thoughts.push(thought.trim().to_string());
        }
        tail = after;
    }
    push_paragraph(&mut rest, tail);
    (thoughts, rest)
}

/// Appends a piece of text, one blank line from what is there.
fn push_paragraph(out: &mut String, piece: &str) {
    let piece = piece.trim_matches(['\n', '\r']).trim_end();
    if piece.trim().is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(piece);
}

/// The messages shown: the parent chain up from `current_leaf_message_uuid` when the file has the
/// links, else every message in file order.
fn branch<'a>(
    all: &'a [Value],
    item: &Value,
    at: &dyn Fn() -> String,
    skipped: &mut Skipped,
) -> Result<Vec<&'a Value>, ImportError> {
    let leaf = str_at(item, "current_leaf_message_uuid");
    let linked = all.iter().any(|m| m.get("parent_message_uuid").is_some());
    let Some(leaf) = leaf.filter(|_| linked) else {
        return Ok(all.iter().collect());
    };
    let mut by_id = std::collections::HashMap::with_capacity(all.len());
    let mut parent_of = std::collections::HashMap::with_capacity(all.len());
    for m in all {
        if let Some(id) = str_at(m, "uuid") {
            by_id.insert(id, m);
            parent_of.insert(id, str_at(m, "parent_message_uuid"));
        }
    }
    let path = shown(
        SOURCE,
        &at,
        &parent_of,
        leaf,
        "current_leaf_message_uuid",
        "among its messages",
    )?;
    skipped.other_branches += all.len().saturating_sub(path.len());
    Ok(path
        .into_iter()
        .filter_map(|id| by_id.get(id).copied())
        .collect())
}
