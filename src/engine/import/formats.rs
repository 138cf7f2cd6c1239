//! Which reader a parsed file goes to, decided by its shape (never the file name), and the helpers
//! the readers share (the error for a wrong shape, lists, the shown branch, text cleaning, keeping
//! a message, the tool calls an export kept and their results ([`imported_call`], [`answer`]),
//! the result).
//! Must not import anything outside `crate::engine`.

use super::json::str_at;
use super::tree::{shown_branch, Walk};
use super::{ImportError, Imported, ImportedConversation, ImportedMessage, Skipped, Source};
use crate::engine::model::{Role, ToolCall, ToolStatus};
use crate::engine::tools::cap_result;
use serde_json::Value;
use std::collections::HashMap;

mod artifacts;
mod bigagi;
mod chatgpt;
mod citations;
mod claude;
mod llamacpp;
mod lobechat;
mod nextchat;
mod openwebui;
mod sillytavern;

/// A parsed JSON document (not a backup) to the reader its shape names.
pub fn read(v: Value) -> Result<Imported, ImportError> {
    match &v {
        Value::Object(o) => {
            if o.contains_key("chat-next-web-store") {
                return nextchat::read(&v);
            }
            if o.contains_key("exportType") && o.contains_key("state") {
                return lobechat::read(&v);
            }
            if o.contains_key("conv") && o.contains_key("messages") {
                return llamacpp::read(std::slice::from_ref(&v));
            }
            if o.contains_key("conversations") {
                return bigagi::read(&v);
            }
            if o.contains_key("messages") && o.contains_key("systemPurposeId") {
                return bigagi::read_one(&v);
            }
            if let Some(source) = list_source(&v) {
                return read_list(source, std::slice::from_ref(&v));
            }
            if o.contains_key("user_name") && o.contains_key("character_name") {
                return sillytavern::read(std::slice::from_ref(&v));
            }
            Err(ImportError::UnknownFormat {
                found: format!("a JSON object with {}", keys_of(&v)),
            })
        }
        Value::Array(items) => {
            let Some(first) = items.iter().find(|i| !i.is_null()) else {
                return Err(ImportError::UnknownFormat {
                    found: "an empty list".into(),
                });
            };
            match list_source(first) {
                Some(source) => read_list(source, items),
                None => Err(ImportError::UnknownFormat {
                    found: format!("a list whose first item has {}", keys_of(first)),
                }),
            }
        }
        other => Err(ImportError::UnknownFormat {
            found: format!("a JSON {}", kind(other)),
        }),
    }
}

/// JSON Lines: SillyTavern's chat file (a header line with the names) or llama.cpp's (a
/// `session` line, then `message` lines).
pub fn jsonl(lines: Vec<Value>) -> Result<Imported, ImportError> {
    let first = &lines[0];
    if first.get("user_name").is_some() || first.get("character_name").is_some() {
        return sillytavern::read(&lines);
    }
    let tagged = |t: &str| lines.iter().any(|l| str_at(l, "type") == Some(t));
    if tagged("session") || tagged("message") || first.get("conv").is_some() {
        return llamacpp::read_jsonl(&lines);
    }
    if lines
        .iter()
        .all(|l| l.get("mes").is_some() || l.get("is_user").is_some())
    {
        return sillytavern::read(&lines);
    }
    Err(ImportError::UnknownFormat {
        found: format!("JSON lines whose first line has {}", keys_of(first)),
    })
}

/// The source of a list item (one conversation) by its keys.
fn list_source(item: &Value) -> Option<Source> {
    let has = |k: &str| item.get(k).is_some();
    if has("mapping") {
        Some(Source::ChatGpt)
    } else if has("chat_messages") {
        Some(Source::Claude)
    } else if item.get("chat").is_some_and(Value::is_object) {
        Some(Source::OpenWebUi)
    } else if has("conv") && has("messages") {
        Some(Source::LlamaCpp)
    } else {
        None
    }
}

/// Reads one item of a list export into its conversation: `(position, item, skipped)`.
pub type ItemReader = fn(usize, &Value, &mut Skipped) -> Result<ImportedConversation, ImportError>;

/// The per-item reader of a list whose first item is `first`, for the sources read one item at a
/// time (`slice.rs`); `None` for anything else (read whole by [`read`]).
pub fn item_reader(first: &Value) -> Option<(Source, ItemReader)> {
    match list_source(first)? {
        Source::ChatGpt => Some((Source::ChatGpt, chatgpt::conversation as ItemReader)),
        Source::Claude => Some((Source::Claude, claude::conversation as ItemReader)),
        Source::OpenWebUi => Some((Source::OpenWebUi, openwebui::conversation as ItemReader)),
        _ => None,
    }
}

fn read_list(source: Source, items: &[Value]) -> Result<Imported, ImportError> {
    match source {
        Source::ChatGpt => chatgpt::read(items),
        Source::Claude => claude::read(items),
        Source::OpenWebUi => openwebui::read(items),
        _ => llamacpp::read(items),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

fn keys_of(v: &Value) -> String {
    match v.as_object() {
        Some(o) if !o.is_empty() => {
            let keys: Vec<String> = o
                .keys()
                .take(6)
                .map(|k| format!("\"{}\"", crate::engine::format::clip(k, 30)))
                .collect();
            format!("the fields {}", keys.join(", "))
        }
        Some(_) => "no fields".into(),
        None => format!("a {}", kind(v)),
    }
}

/// The error for a value that is not what the source's format says.
fn shape(source: Source, at: impl Into<String>, detail: impl Into<String>) -> ImportError {
    ImportError::Shape {
        source_name: source.name(),
        at: at.into(),
        detail: detail.into(),
    }
}

/// Names a conversation in an error: its position, and its title if it has one.
fn conv_name(i: usize, item: &Value, title_key: &str) -> String {
    match str_at(item, title_key).filter(|t| !t.trim().is_empty()) {
        Some(t) => format!(
            "conversation {} (\"{}\")",
            i + 1,
            crate::engine::format::clip(t, 40)
        ),
        None => format!("conversation {}", i + 1),
    }
}

/// An array field that must be an array when present.
fn list<'a>(
    source: Source,
    at: &dyn Fn() -> String,
    v: &'a Value,
    key: &str,
) -> Result<&'a [Value], ImportError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(other) => Err(shape(
            source,
            at(),
            format!("\"{key}\" is a {}, not a list", kind(other)),
        )),
    }
}

/// Text parts of an OpenAI-style content value: a string, or a list of `{type: "text", text}`
/// parts (others become a short note such as `[image]`).
fn content_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut out: Vec<String> = Vec::new();
            for p in parts {
                match p {
                    Value::String(s) => out.push(s.clone()),
                    Value::Object(_) => match str_at(p, "type") {
                        Some("text") => out.push(str_at(p, "text").unwrap_or("").to_string()),
                        Some(t) if t.contains("image") => out.push("[image]".into()),
                        Some(t) => out.push(format!("[{}]", crate::engine::format::clip(t, 30))),
                        None => {}
                    },
                    _ => {}
                }
            }
            out.retain(|s| !s.is_empty());
            out.join("\n\n")
        }
        _ => String::new(),
    }
}

/// Notes for attachments a message referred to (the files themselves are not in the export).
fn attachment_notes(items: &[Value], name_keys: &[&str]) -> Vec<String> {
    items
        .iter()
        .filter_map(|a| {
            name_keys
                .iter()
                .find_map(|k| str_at(a, k))
                .map(|n| format!("[attachment: {}]", crate::engine::format::clip(n, 100)))
        })
        .collect()
}

/// `text` with the notes appended on their own lines.
fn with_notes(text: String, notes: &[String]) -> String {
    if notes.is_empty() {
        return text;
    }
    let mut out = text;
    for n in notes {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(n);
    }
    out
}

/// Reads a list of conversations, one `conversation(position, item, skipped)` per item that is not
/// null, and finishes it.
fn read_items(
    source: Source,
    items: &[Value],
    mut conversation: impl FnMut(
        usize,
        &Value,
        &mut Skipped,
    ) -> Result<ImportedConversation, ImportError>,
) -> Result<Imported, ImportError> {
    let mut skipped = Skipped::default();
    let mut conversations = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if !item.is_null() {
            conversations.push(conversation(i, item, &mut skipped)?);
        }
    }
    finish(source, conversations, skipped, false)
}

/// What a reader found, or the error for a file without a single conversation.
pub(super) fn finish(
    source: Source,
    conversations: Vec<ImportedConversation>,
    skipped: Skipped,
    settings_ignored: bool,
) -> Result<Imported, ImportError> {
    if conversations.is_empty() {
        return Err(ImportError::NoConversations {
            source_name: source.name(),
        });
    }
    Ok(Imported {
        source,
        conversations,
        skipped,
        settings_ignored,
    })
}

/// Keeps a message that has text left; counts one that has none as empty.
fn keep(messages: &mut Vec<ImportedMessage>, empty: &mut usize, m: ImportedMessage) {
    if m.content.trim().is_empty() && m.tool_calls.is_empty() {
        *empty += 1;
    } else {
        messages.push(m);
    }
}

/// The most characters of one imported tool result kept (the rest cut with its marker, as a result
/// that comes live is: `tools::cap_result`).
pub const IMPORTED_RESULT_CHARS: usize = 20_000;

/// A tool call an export kept, its result not known yet (an import's calls have no status:
/// `ToolCall::status` reads one with a result as done, one without as not run). `arguments`: the
/// JSON the model wrote (an object is kept as JSON text) or the call's text (ChatGPT's code).
pub(super) fn imported_call(id: String, name: &str, arguments: &Value) -> ToolCall {
    ToolCall {
        id,
        name: name.to_string(),
        arguments: match arguments {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            v => v.to_string(),
        },
        result: None,
        status: None,
    }
}

/// Gives `result` (capped at [`IMPORTED_RESULT_CHARS`]) to the call it answers: the one of `id`
/// when the export names it, else the newest call still without a result (named `name`, when the
/// export gives the tool's name); `failed`: the export says the tool failed. Whether a call took
/// it.
pub(super) fn answer(
    calls: &mut [ToolCall],
    id: Option<&str>,
    name: Option<&str>,
    result: &str,
    failed: bool,
) -> bool {
    let open = |c: &ToolCall| c.result.is_none() && name.is_none_or(|n| c.name == n);
    let by_id = id.and_then(|id| calls.iter().position(|c| c.id == id && c.result.is_none()));
    let at = by_id.or_else(|| calls.iter().rposition(open));
    let Some(call) = at.map(|i| &mut calls[i]) else {
        return false;
    };
    call.result = Some(cap_result(result, IMPORTED_RESULT_CHARS));
    if failed {
        call.status = Some(ToolStatus::Failed);
    }
    true
}

/// The shown branch up from `current` (see [`shown_branch`]), with the reader's errors: a current
/// node that is not there names its `field` and where it was looked for (`place`).
fn shown<'a>(
    source: Source,
    at: &dyn Fn() -> String,
    parent_of: &HashMap<&'a str, Option<&'a str>>,
    current: &'a str,
    field: &str,
    place: &str,
) -> Result<Vec<&'a str>, ImportError> {
    shown_branch(parent_of, current).map_err(|e| match e {
        Walk::MissingCurrent(id) => shape(
            source,
            at(),
            format!(
                "\"{field}\" {} is not {place}",
                crate::engine::format::clip(&id, 60)
            ),
        ),
        Walk::Cycle => ImportError::Cycle {
            source_name: source.name(),
            at: at(),
        },
    })
}

/// What a source's role string makes of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Said {
    /// A chat message: `user` (Claude's `human`) or `assistant`.
    Chat(Role),
    /// A system message (some readers take the first as the system prompt).
    System,
    /// A tool call or result (`tool`, `function`).
    Tool,
    /// Anything else: not shown as chat.
    Other,
}

/// Reads a message's role string.
pub(super) fn said(role: Option<&str>) -> Said {
    match role {
        Some("user" | "human") => Said::Chat(Role::User),
        Some("assistant") => Said::Chat(Role::Assistant),
        Some("system") => Said::System,
        Some("tool" | "function") => Said::Tool,
        _ => Said::Other,
    }
}

impl Said {
    /// The role of a message the reader keeps; anything else is counted in `skipped` (tool
    /// messages as tool, the rest as hidden) and gives `None`.
    pub(super) fn keep(self, skipped: &mut Skipped) -> Option<Role> {
        match self {
            Said::Chat(role) => Some(role),
            Said::Tool => {
                skipped.tool += 1;
                None
            }
            Said::System | Said::Other => {
                skipped.hidden += 1;
                None
            }
        }
    }

    /// As [`Said::keep`], except that the first system message with text becomes the
    /// conversation's `system_prompt` (and is not a chat message).
    pub(super) fn keep_or_system(
        self,
        text: String,
        system_prompt: &mut Option<String>,
        skipped: &mut Skipped,
    ) -> Option<(Role, String)> {
        if self == Said::System && system_prompt.is_none() && !text.trim().is_empty() {
            *system_prompt = Some(text);
            return None;
        }
        Some((self.keep(skipped)?, text))
    }
}
