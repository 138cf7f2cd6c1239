//! Temporary chats: a conversation only the page holds. What one is made of, what memory it may use
//! and where its next message goes. It uses none of the stored memory (the facts about the user, the
//! shared entities) unless the user turns "Use memory about me" on for it, and even then never what
//! Settings turn off; it never has a memory update (nothing of it is stored for one to cover), so
//! the prompt is its own messages under the budget. The session keeps it in memory only
//! (`session/chat/temporary.rs`): no conversation, message, draft, summary, entity or fact of it
//! reaches IndexedDB, another tab or sync.
//! Must not import anything outside `crate::engine`.

use crate::engine::model::{
    Conversation, MemoryConfig, MemoryOverrides, Message, MessageMeta, Millis,
};

/// A new temporary chat `id`, begun at `now`, answering with `model` (`None`: as in Settings),
/// using no memory until asked.
pub fn conversation(id: String, now: Millis, model: Option<String>) -> Conversation {
    Conversation {
        id,
        title: String::new(),
        title_is_custom: false,
        created_at: now,
        updated_at: now,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: MemoryOverrides {
            model,
            user_memory: Some(false),
            ..Default::default()
        },
    }
}

/// "Use memory about me" in a temporary chat: on, it uses memory as Settings say (never more);
/// off, none.
pub fn use_memory(c: &mut Conversation, on: bool) {
    c.memory_overrides.user_memory = if on { None } else { Some(false) };
}

/// True when a temporary chat's prompts carry memory (the facts about the user, the shared
/// entities): the user asked for it and `settings` (the memory config in Settings) allow it.
pub fn uses_memory(c: &Conversation, settings: &MemoryConfig) -> bool {
    c.memory_overrides.apply(settings).user_memory
}

/// The meta of the next message of a temporary chat holding `messages` (ascending): it follows the
/// last one.
pub fn next_meta(messages: &[Message]) -> (u64, MessageMeta) {
    let seq = messages.last().map_or(1, |m| m.seq + 1);
    let meta = MessageMeta {
        after: messages.last().map(|m| m.id.clone()),
        ..Default::default()
    };
    (seq, meta)
}

/// Puts message `m` in the temporary chat's `messages`: in place of the one with its id, or after
/// the last. Its turn count follows.
pub fn keep(c: &mut Conversation, messages: &mut Vec<Message>, m: &Message) {
    match messages.iter_mut().find(|x| x.id == m.id) {
        Some(x) => *x = m.clone(),
        None => {
            messages.push(m.clone());
            c.message_count = messages.len() as u64;
        }
    }
    c.updated_at = c.updated_at.max(m.created_at);
}

/// The history a temporary chat's next prompt reads: its last `limit` messages.
pub fn history(messages: &[Message], limit: usize) -> Vec<Message> {
    messages[messages.len().saturating_sub(limit)..].to_vec()
}
