//! Temporary chats (`engine::temporary`): memory only when asked and never past Settings, messages
//! kept in order in place, the history cut to its limit.

use memoire::engine::model::{MemoryConfig, Message, MessageMeta, MessageStatus, Role};
use memoire::engine::temporary::{conversation, history, keep, next_meta, use_memory, uses_memory};

const T0: i64 = 1_763_700_000_000;

fn message(id: &str, seq: u64, role: Role, at: i64) -> Message {
    let mut m = Message::from_user(
        id.into(),
        "t1",
        format!("text {id}"),
        at,
        MessageMeta::default(),
    );
    m.seq = seq;
    m.role = role;
    m
}

/// A temporary chat, its memory switch set to `asked` (`None`: never touched), uses memory in its
/// prompts exactly when `expected`, with Settings' "Remember me" at `global`.
fn check_memory(asked: Option<bool>, global: bool, expected: bool) {
    let mut c = conversation("t1".into(), T0, None);
    if let Some(on) = asked {
        use_memory(&mut c, on);
    }
    let base = MemoryConfig {
        user_memory: global,
        ..Default::default()
    };
    assert_eq!(
        uses_memory(&c, &base),
        expected,
        "asked {asked:?}, global {global}"
    );
}

#[test]
fn memory_only_when_asked_and_never_past_settings() {
    check_memory(None, true, false);
    check_memory(None, false, false);
    check_memory(Some(false), true, false);
    check_memory(Some(true), true, true);
    check_memory(Some(true), false, false);
}

#[test]
fn a_new_temporary_chat_is_empty_and_keeps_the_model_picked() {
    let c = conversation("t1".into(), T0, Some("qwen".into()));
    assert_eq!((c.message_count, c.created_at, c.updated_at), (0, T0, T0));
    assert_eq!(c.memory_overrides.model.as_deref(), Some("qwen"));
    assert!(c.title.is_empty() && c.remote_handle.is_none());
}

#[test]
fn the_next_message_follows_the_last() {
    assert_eq!(next_meta(&[]).0, 1);
    assert_eq!(next_meta(&[]).1.after, None);
    let ms = [
        message("a", 1, Role::User, T0),
        message("b", 2, Role::Assistant, T0),
    ];
    let (seq, meta) = next_meta(&ms);
    assert_eq!((seq, meta.after.as_deref()), (3, Some("b")));
}

#[test]
fn keeping_a_message_adds_it_once_and_updates_it_in_place() {
    let mut c = conversation("t1".into(), T0, None);
    let mut ms = Vec::new();
    keep(&mut c, &mut ms, &message("a", 1, Role::User, T0 + 5));
    let mut reply = message("b", 2, Role::Assistant, T0 + 6);
    reply.status = MessageStatus::Streaming;
    keep(&mut c, &mut ms, &reply);
    reply.content = "grown".into();
    reply.status = MessageStatus::Complete;
    keep(&mut c, &mut ms, &reply);
    let ids: Vec<_> = ms
        .iter()
        .map(|m| (m.id.as_str(), m.content.as_str()))
        .collect();
    assert_eq!(ids, [("a", "text a"), ("b", "grown")]);
    assert_eq!((c.message_count, c.updated_at), (2, T0 + 6));
}

#[test]
fn the_history_is_the_last_messages_up_to_the_limit() {
    let ms: Vec<_> = (1..=5)
        .map(|i| message(&format!("m{i}"), i, Role::User, T0))
        .collect();
    let seqs = |limit| {
        history(&ms, limit)
            .iter()
            .map(|m| m.seq)
            .collect::<Vec<_>>()
    };
    assert_eq!(seqs(2), [4, 5]);
    assert_eq!(seqs(5), [1, 2, 3, 4, 5]);
    assert_eq!(seqs(50), [1, 2, 3, 4, 5]);
    assert!(seqs(0).is_empty());
}
