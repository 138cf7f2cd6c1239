//! SillyTavern's chat file (`.jsonl`): the first line is the header (`user_name`, `character_name`,
//! `create_date`), then one message per line: `mes` is the chosen reply (`swipes` are the
//! alternatives, dropped and counted as other branches), `is_user` gives the role; a message with
//! `is_system` (hidden from the prompt, shown in the chat: a `/hide`, a narrator's note) is kept,
//! hidden from the model (`MessageMeta::hidden`), and a narrator's message (`extra.type`
//! `narrator`) is kept as SillyTavern keeps it; `{{user}}` and `{{char}}` are replaced by the names.
//! Must not import anything outside `crate::engine`.

use super::super::json::{any_time, bool_at, str_at};
use super::super::{ImportError, Imported, ImportedConversation, ImportedMessage, Skipped, Source};
use super::keep;
use crate::engine::model::Role;
use serde_json::Value;

const SOURCE: Source = Source::SillyTavern;

pub fn read(lines: &[Value]) -> Result<Imported, ImportError> {
    let (header, body) = match lines.split_first() {
        Some((h, rest)) if h.get("mes").is_none() => (Some(h), rest),
        _ => (None, lines),
    };
    let user = header
        .and_then(|h| str_at(h, "user_name"))
        .unwrap_or("User");
    let char_name = header
        .and_then(|h| str_at(h, "character_name"))
        .unwrap_or("Assistant");
    let names = |s: &str| {
        s.replace("{{user}}", user)
            .replace("{{User}}", user)
            .replace("{{char}}", char_name)
            .replace("{{Char}}", char_name)
    };
    let mut skipped = Skipped::default();
    let mut messages = Vec::new();
    for (i, m) in body.iter().enumerate() {
        if !m.is_object() {
            return Err(ImportError::Shape {
                source_name: SOURCE.name(),
                at: format!("line {}", i + 2),
                detail: "it is not a JSON object".into(),
            });
        }
        if let Some(swipes) = m.get("swipes").and_then(Value::as_array) {
            skipped.other_branches += swipes.len().saturating_sub(1);
        }
        if m.get("extra")
            .and_then(|e| str_at(e, "reasoning"))
            .is_some_and(|r| !r.trim().is_empty())
        {
            skipped.reasoning += 1;
        }
        let text = names(str_at(m, "mes").unwrap_or(""));
        keep(
            &mut messages,
            &mut skipped.empty,
            ImportedMessage {
                source_id: None,
                role: if bool_at(m, "is_user") {
                    Role::User
                } else {
                    Role::Assistant
                },
                content: text,
                created_at: any_time(m.get("send_date")),
                model: None,
                // Shown in SillyTavern's chat, kept out of its prompt.
                hidden: bool_at(m, "is_system"),
                reasoning: None,
                images: Vec::new(),
                tool_calls: Vec::new(),
            },
        );
    }
    let created = header.and_then(|h| h.get("create_date"));
    let created_text = match created {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    };
    let source_id = header.map(|_| format!("{char_name}|{user}|{created_text}"));
    Ok(Imported {
        source: SOURCE,
        conversations: vec![ImportedConversation {
            source_id,
            title: format!("{char_name} and {user}"),
            created_at: any_time(created).or_else(|| messages.first().and_then(|m| m.created_at)),
            updated_at: None,
            system_prompt: None,
            summary: None,
            messages,
        }],
        skipped,
        settings_ignored: false,
    })
}
