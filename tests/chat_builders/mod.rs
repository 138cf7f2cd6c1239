//! Shared by the native chat tests (`engine_turn.rs`, `engine_assemble.rs`, `engine_history.rs`,
//! `engine_tools.rs`): messages of conversation `c1`, a conversation, an endpoint, a summary, an
//! entity, a history of alternating messages and a memory config.
#![allow(dead_code)] // each test file uses only some of these

use memoire::engine::model::*;
use std::collections::BTreeMap;

pub fn msg(seq: u64, role: Role, content: &str) -> Message {
    Message {
        id: format!("m{seq}"),
        conversation_id: "c1".into(),
        seq,
        role,
        content: content.into(),
        status: MessageStatus::Complete,
        created_at: seq as i64 * 1000,
        meta: MessageMeta::default(),
    }
}

pub fn with_status(mut m: Message, status: MessageStatus) -> Message {
    m.status = status;
    m
}

pub fn convo(id: &str) -> Conversation {
    Conversation {
        id: id.into(),
        title: String::new(),
        title_is_custom: false,
        created_at: 0,
        updated_at: 0,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: MemoryOverrides::default(),
    }
}

pub fn endpoint(protocol: Protocol) -> EndpointProfile {
    EndpointProfile {
        id: "e1".into(),
        base_url: "http://localhost:8080/v1".into(),
        protocol,
        model: "m".into(),
        api_key: None,
        key_origin: String::new(),
        system_prompt: "You are helpful.".into(),
        no_user_memory: false,
    }
}

pub fn summary(text: &str, covers: u64) -> ConversationSummary {
    ConversationSummary {
        conversation_id: "c1".into(),
        version: 1,
        text: text.into(),
        covers_up_to_seq: covers,
        message_count: covers,
        updated_at: 0,
    }
}

pub fn entity(id: &str, name: &str) -> EntityNode {
    EntityNode {
        id: id.into(),
        scope: EntityScope::Conversation("c1".into()),
        entity_type: EntityType::Person,
        name: name.into(),
        aliases: vec![],
        description: format!("{name} is someone the user mentioned."),
        properties: BTreeMap::new(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: vec![],
        source_message_ids: vec![],
        updated_at: 0,
    }
}

/// Alternating user/assistant history of `n` messages, seq 1..=n, each `len` chars.
pub fn history(n: u64, len: usize) -> Vec<Message> {
    (1..=n)
        .map(|s| {
            let role = if s % 2 == 1 {
                Role::User
            } else {
                Role::Assistant
            };
            let body =
                format!("message {s} ") + &"lorem ipsum dolor sit amet ".repeat(len / 27 + 1);
            msg(s, role, &body[..len.max(10)])
        })
        .collect()
}

pub fn config(context_tokens: u32, n: usize) -> MemoryConfig {
    MemoryConfig {
        recent_messages: n,
        context_tokens,
        reply_reserve_tokens: 100,
        ..MemoryConfig::default()
    }
}
