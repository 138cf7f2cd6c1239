//! Shared by the native memory tests (`engine_memory.rs`, `engine_memory_catchup.rs`): messages of
//! conversation `c1` from a compact spec, one character per message.

use memoire::engine::model::*;

/// Messages from a compact spec, seq = position + `first`, created at seq × 1000 ms:
/// u/a = user/assistant complete, U/A = errored, e = empty (blank) assistant, s = streaming
/// assistant, i = interrupted assistant, t = tool, y = system, L = a long user message (900 chars).
pub fn msgs_from(spec: &str, first: u64) -> Vec<Message> {
    spec.chars()
        .enumerate()
        .map(|(i, c)| {
            let seq = i as u64 + first;
            let (role, status, content) = match c {
                'u' => (
                    Role::User,
                    MessageStatus::Complete,
                    format!("user says {seq}"),
                ),
                'a' => (
                    Role::Assistant,
                    MessageStatus::Complete,
                    format!("assistant says {seq}"),
                ),
                'U' => (
                    Role::User,
                    MessageStatus::Error,
                    format!("user failed {seq}"),
                ),
                'A' => (
                    Role::Assistant,
                    MessageStatus::Error,
                    format!("assistant failed {seq}"),
                ),
                'e' => (
                    Role::Assistant,
                    MessageStatus::Complete,
                    "  \n ".to_string(),
                ),
                's' => (
                    Role::Assistant,
                    MessageStatus::Streaming,
                    format!("partial {seq}"),
                ),
                'i' => (
                    Role::Assistant,
                    MessageStatus::Interrupted,
                    format!("cut off {seq}"),
                ),
                't' => (
                    Role::Tool,
                    MessageStatus::Complete,
                    format!("tool result {seq}"),
                ),
                'y' => (
                    Role::System,
                    MessageStatus::Complete,
                    format!("system note {seq}"),
                ),
                'L' => (
                    Role::User,
                    MessageStatus::Complete,
                    format!("{seq} {}", "x".repeat(900)),
                ),
                other => panic!("bad spec char {other}"),
            };
            Message {
                id: format!("m{seq}"),
                conversation_id: "c1".into(),
                seq,
                role,
                content,
                status,
                created_at: seq as i64 * 1000,
                meta: MessageMeta::default(),
            }
        })
        .collect()
}

/// [`msgs_from`] starting at seq 1.
pub fn msgs(spec: &str) -> Vec<Message> {
    msgs_from(spec, 1)
}
