//! Export as a readable Markdown transcript of one conversation. Dates are UTC (the engine has no
//! time zone). Must not import anything outside `crate::engine`.

use crate::engine::format::{date_time, one_line};
use crate::engine::model::{Conversation, Message, MessageStatus, Millis, Role};
use crate::engine::sort;

/// A readable Markdown transcript of one conversation: title, dates, one `**User**` /
/// `**Assistant**` heading per message, and a note on interrupted or failed replies.
/// Dates are UTC (the engine has no time zone); `messages` are written in seq order.
pub fn export_markdown(conversation: &Conversation, messages: &[Message]) -> String {
    let mut out = String::new();
    let title = one_line(&conversation.title);
    let title = if title.is_empty() {
        "Untitled conversation"
    } else {
        &title
    };
    out.push_str(&format!("# {title}\n\n"));
    out.push_str(&format!(
        "Created {} · Updated {} · {}\n\n---\n\n",
        utc(conversation.created_at),
        utc(conversation.updated_at),
        crate::engine::format::plural(messages.len(), "message", "messages")
    ));
    let mut sorted: Vec<&Message> = messages.iter().collect();
    sort::sort_by_key(&mut sorted, |m| m.seq);
    for m in sorted {
        let who = match m.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::System => "System",
            Role::Tool => "Tool",
        };
        out.push_str(&format!("**{who}** · {}\n\n", utc(m.created_at)));
        let content = m.content.trim_end();
        if !content.is_empty() {
            out.push_str(content);
            out.push_str("\n\n");
        }
        for call in &m.meta.tool_calls {
            out.push_str(&format!("> Tool call: `{}`\n\n", one_line(&call.name)));
        }
        match m.status {
            MessageStatus::Interrupted | MessageStatus::Streaming => {
                out.push_str("> *This reply was interrupted before it finished.*\n\n");
            }
            MessageStatus::Error => {
                let why = m.meta.error.as_deref().map(one_line).unwrap_or_default();
                if why.is_empty() {
                    out.push_str("> *This reply failed.*\n\n");
                } else {
                    out.push_str(&format!("> *This reply failed: {why}*\n\n"));
                }
            }
            MessageStatus::Complete => {}
        }
    }
    out
}

/// `YYYY-MM-DD HH:MM UTC`.
fn utc(ms: Millis) -> String {
    format!("{} UTC", date_time(ms))
}
