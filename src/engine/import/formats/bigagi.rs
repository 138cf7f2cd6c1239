//! big-AGI's `.agi.json` backup (`{conversations[], folders, models}`) and single-conversation JSON
//! (`{id, messages, systemPurposeId, ...}`): each message's text comes from its `fragments` of type
//! text (`{ft: "content", part: {pt: "text", text}}`; older files have `text`); reasoning, error and
//! tool fragments are dropped; a `system` message is the system prompt. `models.sources` (API keys)
//! is never read.
//! Must not import anything outside `crate::engine`.

use super::super::json::{any_time, id_at, str_at};
use super::super::{ImportError, Imported, ImportedConversation, ImportedMessage, Skipped, Source};
use super::said;
use super::{conv_name, list};
use super::{finish, keep};
use serde_json::Value;

const SOURCE: Source = Source::BigAgi;

pub fn read(root: &Value) -> Result<Imported, ImportError> {
    let top = || "the file".to_string();
    let items = list(SOURCE, &top, root, "conversations")?;
    let mut skipped = Skipped::default();
    let mut conversations = Vec::new();
    for (i, c) in items.iter().enumerate() {
        if c.is_null() {
            continue;
        }
        conversations.push(conversation(i, c, &mut skipped)?);
    }
    done(conversations, skipped, root.get("models").is_some())
}

pub fn read_one(root: &Value) -> Result<Imported, ImportError> {
    let mut skipped = Skipped::default();
    let c = conversation(0, root, &mut skipped)?;
    done(vec![c], skipped, false)
}

fn done(
    conversations: Vec<ImportedConversation>,
    skipped: Skipped,
    settings_ignored: bool,
) -> Result<Imported, ImportError> {
    finish(SOURCE, conversations, skipped, settings_ignored)
}

fn conversation(
    i: usize,
    c: &Value,
    skipped: &mut Skipped,
) -> Result<ImportedConversation, ImportError> {
    let at = || conv_name(i, c, "userTitle");
    let mut system_prompt = None;
    let mut messages = Vec::new();
    for m in list(SOURCE, &at, c, "messages")? {
        let text = message_text(m, &at, skipped)?;
        let Some((role, text)) =
            said(str_at(m, "role")).keep_or_system(text, &mut system_prompt, skipped)
        else {
            continue;
        };
        keep(
            &mut messages,
            &mut skipped.empty,
            ImportedMessage {
                source_id: id_at(m, "id"),
                role,
                content: text,
                created_at: any_time(m.get("created")),
                model: str_at(m, "originLLM").map(str::to_string),
                hidden: false,
                reasoning: None,
                images: Vec::new(),
                tool_calls: Vec::new(),
            },
        );
    }
    let title = str_at(c, "userTitle")
        .filter(|t| !t.trim().is_empty())
        .or_else(|| str_at(c, "autoTitle"))
        .unwrap_or("")
        .to_string();
    Ok(ImportedConversation {
        source_id: id_at(c, "id"),
        title,
        created_at: any_time(c.get("created")),
        updated_at: any_time(c.get("updated")),
        system_prompt,
        summary: None,
        messages,
    })
}

fn message_text(
    m: &Value,
    at: &dyn Fn() -> String,
    skipped: &mut Skipped,
) -> Result<String, ImportError> {
    let fragments = list(SOURCE, at, m, "fragments")?;
    if fragments.is_empty() {
        return Ok(str_at(m, "text").unwrap_or("").to_string());
    }
    let mut out: Vec<String> = Vec::new();
    for f in fragments {
        let part = f.get("part");
        let pt = part.and_then(|p| str_at(p, "pt"));
        match (str_at(f, "ft"), pt) {
            (Some("content"), Some("text")) => {
                out.extend(part.and_then(|p| str_at(p, "text")).map(str::to_string))
            }
            (Some("content"), Some("error")) => skipped.errors += 1,
            (_, Some("ma" | "reasoning")) | (Some("void"), _) => skipped.reasoning += 1,
            (_, Some(p)) if p.starts_with("tool") => skipped.tool += 1,
            (Some("content"), Some(p)) if p.contains("image") => out.push("[image]".into()),
            (Some("attachment"), _) => {
                let name = str_at(f, "title").unwrap_or("file");
                out.push(format!(
                    "[attachment: {}]",
                    crate::engine::format::clip(name, 100)
                ));
            }
            _ => {}
        }
    }
    out.retain(|s| !s.is_empty());
    Ok(out.join("\n\n"))
}
