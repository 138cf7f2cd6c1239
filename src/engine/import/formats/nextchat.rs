//! NextChat (ChatGPT-Next-Web) backup JSON: `"chat-next-web-store".sessions[]`, each with `topic`,
//! `messages[{id, date, role, content, isError}]` (content a string or text/image parts),
//! `memoryPrompt` (the app's summary, imported as the conversation's summary, covering the first
//! `lastSummarizeIndex` messages) and `mask.context` (its system messages are the system prompt).
//! `isError` messages are dropped. `access-control` and `app-config` (API keys) are never read.
//! Must not import anything outside `crate::engine`.

use super::super::json::{any_time, bool_at, id_at, millis, str_at};
use super::super::{ImportError, Imported, ImportedConversation, ImportedMessage, Skipped, Source};
use super::said;
use super::{content_text, conv_name, list, shape};
use super::{finish, keep};
use serde_json::Value;

const SOURCE: Source = Source::NextChat;

/// Reads NextChat's backup file (module rules).
pub fn read(root: &Value) -> Result<Imported, ImportError> {
    let store = root
        .get("chat-next-web-store")
        .filter(|s| s.is_object())
        .ok_or_else(|| {
            shape(
                SOURCE,
                "the file",
                "\"chat-next-web-store\" is not an object",
            )
        })?;
    let top = || "the chat store".to_string();
    let mut skipped = Skipped::default();
    let mut conversations = Vec::new();
    for (i, s) in list(SOURCE, &top, store, "sessions")?.iter().enumerate() {
        if !s.is_object() {
            return Err(shape(
                SOURCE,
                format!("session {}", i + 1),
                "it is not an object",
            ));
        }
        let at = || conv_name(i, s, "topic");
        let last_update = millis(s.get("lastUpdate"));
        let raw = list(SOURCE, &at, s, "messages")?;
        let summarized = s
            .get("lastSummarizeIndex")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        let (messages, covered) = messages_of(raw, summarized, &mut skipped);
        let context = s
            .get("mask")
            .map(|mask| list(SOURCE, &at, mask, "context"))
            .transpose()?
            .unwrap_or(&[]);
        let system: Vec<String> = context
            .iter()
            .filter(|m| str_at(m, "role") == Some("system"))
            .map(|m| content_text(m.get("content")))
            .filter(|t| !t.trim().is_empty())
            .collect();
        let memory = str_at(s, "memoryPrompt").filter(|t| !t.trim().is_empty());
        let covered = if covered == 0 {
            messages.len()
        } else {
            covered
        };
        conversations.push(ImportedConversation {
            source_id: id_at(s, "id"),
            title: str_at(s, "topic").unwrap_or("").to_string(),
            created_at: None,
            updated_at: last_update,
            system_prompt: (!system.is_empty()).then(|| system.join("\n\n")),
            summary: memory.map(|t| (t.to_string(), covered)),
            messages,
        });
    }
    finish(SOURCE, conversations, skipped, true)
}

/// The messages of one session to import (errors and empty ones counted in `skipped`), and how
/// many of them come from its first `summarized` (0 when none do).
fn messages_of(
    raw: &[Value],
    summarized: usize,
    skipped: &mut Skipped,
) -> (Vec<ImportedMessage>, usize) {
    let mut messages = Vec::new();
    let mut covered = 0;
    for (j, m) in raw.iter().enumerate() {
        if bool_at(m, "isError") {
            skipped.errors += 1;
            continue;
        }
        let Some(role) = said(str_at(m, "role")).keep(skipped) else {
            continue;
        };
        let text = content_text(m.get("content"));
        keep(
            &mut messages,
            &mut skipped.empty,
            ImportedMessage {
                source_id: id_at(m, "id"),
                role,
                content: text,
                // `date` is usually the browser's locale string; only ISO text is read.
                created_at: any_time(m.get("date")),
                model: str_at(m, "model").map(str::to_string),
                hidden: false,
                reasoning: None,
                images: Vec::new(),
                tool_calls: Vec::new(),
            },
        );
        if j < summarized {
            covered = messages.len();
        }
    }
    (messages, covered)
}
