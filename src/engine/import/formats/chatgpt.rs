//! ChatGPT's data export (`conversations.json`): a list of conversations whose `mapping` is a tree
//! of nodes `{id, message or null, parent, children}`; the shown branch is the path from
//! `current_node` up through `parent` to the root. Keeps what ChatGPT shows: user and assistant
//! text to `all`, not visually hidden, of content type `text` or `multimodal_text`, its citation
//! markers made what ChatGPT shows (`citations.rs`). An `image_asset_pointer` part (an upload, or a
//! DALL·E image on the assistant's side) is an [`ImportedImage`] by its file id, which the ZIP's
//! file of that id may fill (`slice.rs`); without it, a `[image: name]` line. A tool call (an
//! assistant message to a `recipient` other than `all`: its `code` or text as the arguments, the
//! recipient as the tool) and its result (the `tool` message of that name after it: its output,
//! browsing display or text; `system_error` a failure) are kept on the turn's next reply shown
//! (else on its last one; a turn that showed no reply leaves them out, counted as tool items).
//! Must not import anything outside `crate::engine`.

use super::super::json::{id_at, secs, str_at};
use super::super::zip::file_id;
use super::super::{
    ImportError, Imported, ImportedConversation, ImportedImage, ImportedMessage, Skipped, Source,
};
use super::citations::readable;
use super::{answer, imported_call};
use super::{conv_name, shape};
use super::{read_items, shown};
use super::{said, Said};
use crate::engine::model::{Role, ToolCall};
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
    let mut calls = Calls::default();
    for id in path {
        let Some(m) = mapping.get(id).and_then(|n| n.get("message")) else {
            continue;
        };
        if !m.is_object() || calls.took(m, id) {
            continue;
        }
        let answered = calls.answered(m);
        match visible(m) {
            Ok(shown) => {
                let tool_calls = calls.for_message(shown.0, &mut messages, skipped);
                messages.push(message(m, id, shown, tool_calls));
            }
            Err(Why::Tool) if answered => {}
            Err(why) => why.count(skipped),
        }
    }
    calls.for_message(Role::User, &mut messages, skipped);
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

/// A message shown (`visible`'s role, text and images) with the calls it made.
fn message(
    m: &Value,
    node: &str,
    (role, content, images): (Role, String, Vec<ImportedImage>),
    tool_calls: Vec<ToolCall>,
) -> ImportedMessage {
    ImportedMessage {
        source_id: id_at(m, "id").or_else(|| Some(node.to_string())),
        role,
        content,
        created_at: secs(m.get("create_time")),
        model: m
            .get("metadata")
            .and_then(|md| str_at(md, "model_slug"))
            .map(str::to_string),
        hidden: false,
        reasoning: None,
        images,
        tool_calls,
    }
}

/// The tool calls of the assistant's turn under way (module doc): made by assistant messages to
/// a `recipient` other than `all`, answered by the `tool` messages after them, and put on the
/// turn's next reply shown (else on its last one).
#[derive(Default)]
struct Calls {
    open: Vec<ToolCall>,
    /// `tool` messages whose result a call took (not counted as skipped, unless the call is).
    results: usize,
}

impl Calls {
    /// `m` is a call (an assistant message to a tool): kept, and nothing to show.
    fn took(&mut self, m: &Value, node: &str) -> bool {
        let role = m.get("author").and_then(|a| str_at(a, "role"));
        let to = str_at(m, "recipient").filter(|r| *r != "all");
        let (Some("assistant"), Some(to)) = (role, to) else {
            return false;
        };
        let id = id_at(m, "id").unwrap_or_else(|| node.to_string());
        let arguments = Value::String(content_text(m.get("content")));
        self.open.push(imported_call(id, to, &arguments));
        true
    }

    /// `m` is a `tool` message and gave its result to a call; it still shows what it shows
    /// (`tool_images`).
    fn answered(&mut self, m: &Value) -> bool {
        let author = m.get("author");
        if author.and_then(|a| str_at(a, "role")) != Some("tool") {
            return false;
        }
        let name = author.and_then(|a| str_at(a, "name"));
        let content = m.get("content");
        let failed = content.and_then(|c| str_at(c, "content_type")) == Some("system_error");
        let took = answer(&mut self.open, None, name, &content_text(content), failed);
        self.results += took as usize;
        took
    }

    /// The calls for a message of `role` about to be shown: an assistant's reply takes them; before
    /// a user's message they go on the last reply of the turn, if it showed one (else they and
    /// their results are counted as tool items left out).
    fn for_message(
        &mut self,
        role: Role,
        messages: &mut [ImportedMessage],
        skipped: &mut Skipped,
    ) -> Vec<ToolCall> {
        let calls = std::mem::take(&mut self.open);
        let results = std::mem::take(&mut self.results);
        if role == Role::Assistant || calls.is_empty() {
            return calls;
        }
        match messages.last_mut().filter(|m| m.role == Role::Assistant) {
            Some(reply) => reply.tool_calls.extend(calls),
            None => skipped.tool += calls.len() + results,
        }
        Vec::new()
    }
}

/// A call's or a tool message's text: `text` (code, an execution's output, a quote), `result` (a
/// browsing display), else its text parts.
fn content_text(content: Option<&Value>) -> String {
    let Some(c) = content else {
        return String::new();
    };
    if let Some(t) = str_at(c, "text").or_else(|| str_at(c, "result")) {
        return t.to_string();
    }
    let parts = c.get("parts").and_then(Value::as_array);
    let texts: Vec<&str> = parts
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    texts.join("\n\n")
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

/// The role, text and images of a message ChatGPT shows, or why it does not.
fn visible(m: &Value) -> Result<(Role, String, Vec<ImportedImage>), Why> {
    let role = m.get("author").and_then(|a| str_at(a, "role"));
    let role = match said(role) {
        Said::Chat(role) => role,
        // A generated image (DALL·E, the image tool) comes on a tool message: ChatGPT shows it as
        // the assistant's, without the tool's text.
        Said::Tool => return tool_images(m).ok_or(Why::Tool),
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
    let mut images = Vec::new();
    for p in parts {
        match p {
            Value::String(s) if !s.is_empty() => text.push(s.clone()),
            Value::Object(_) => match str_at(p, "content_type") {
                Some("audio_transcription") => {
                    if let Some(t) = str_at(p, "text").filter(|t| !t.is_empty()) {
                        text.push(t.to_string());
                    }
                }
                Some(t) if t.contains("image") => match image(p, meta) {
                    Some(i) => images.push(i),
                    None => text.push("[image]".into()),
                },
                Some(t) if t.contains("audio") => text.push("[audio]".into()),
                _ => text.push("[attachment]".into()),
            },
            _ => {}
        }
    }
    // Citation markers as ChatGPT shows them: their source's readable text, or nothing.
    let text = readable(&text.join("\n\n"), meta);
    if text.trim().is_empty() && images.is_empty() {
        return Err(Why::Empty);
    }
    Ok((role, text, images))
}

/// The images a tool message shows to all, as the assistant's message; `None` if it shows none.
fn tool_images(m: &Value) -> Option<(Role, String, Vec<ImportedImage>)> {
    if !matches!(str_at(m, "recipient"), None | Some("all")) {
        return None;
    }
    let content = m.get("content")?;
    if str_at(content, "content_type") != Some("multimodal_text") {
        return None;
    }
    let images: Vec<ImportedImage> = content
        .get("parts")
        .and_then(Value::as_array)?
        .iter()
        .filter(|p| str_at(p, "content_type").is_some_and(|t| t.contains("image")))
        .filter_map(|p| image(p, m.get("metadata")))
        .collect();
    (!images.is_empty()).then(|| (Role::Assistant, String::new(), images))
}

/// An `image_asset_pointer` part: its file id (from `file-service://file-…` or
/// `sediment://file_…`), named by the upload it came from (`metadata.attachments`, by id), else
/// by the prompt that made it (`metadata.dalle.prompt`), else by its id.
fn image(part: &Value, meta: Option<&Value>) -> Option<ImportedImage> {
    let pointer = str_at(part, "asset_pointer")?;
    let path = pointer.split_once("://").map_or(pointer, |(_, p)| p);
    let id = file_id(path.split(['?', '#']).next().unwrap_or(path))?;
    let name = meta
        .and_then(|md| md.get("attachments"))
        .and_then(Value::as_array)
        .and_then(|list| {
            list.iter()
                .find(|a| str_at(a, "id").and_then(file_id) == Some(id))
        })
        .and_then(|a| str_at(a, "name"))
        .or_else(|| {
            part.get("metadata")
                .and_then(|md| md.get("dalle"))
                .and_then(|d| str_at(d, "prompt"))
        })
        .filter(|n| !n.trim().is_empty())
        .map_or_else(
            || id.to_string(),
            |n| crate::engine::format::clip(&crate::engine::format::one_line(n), 80),
        );
    Some(ImportedImage {
        id: id.to_string(),
        name,
        attachment: None,
    })
}
