//! ChatGPT's data export (`conversations.json`): a list of conversations whose `mapping` is a tree
//! of nodes `{id, message or null, parent, children}`; the shown branch is the path from
//! `current_node` up through `parent` to the root. Keeps what ChatGPT shows: user and assistant
//! text to `all`, not visually hidden, of content type `text` or `multimodal_text`, its citation
//! markers made what ChatGPT shows (`citations.rs`). An `image_asset_pointer` part (an upload, or a
//! DALL·E image on the assistant's side) is an [`ImportedImage`] by its file id, which the ZIP's
//! file of that id may fill (`slice.rs`); without it, a `[image: name]` line.
//! Must not import anything outside `crate::engine`.

use super::super::json::{id_at, secs, str_at};
use super::super::zip::file_id;
use super::super::{
    ImportError, Imported, ImportedConversation, ImportedImage, ImportedMessage, Skipped, Source,
};
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
            Ok((role, content, images)) => messages.push(ImportedMessage {
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
                images,
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
