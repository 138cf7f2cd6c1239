//! The model values every format's golden and round-trip tests use (`engine_shape.rs` for the
//! backup file and the sync documents, `browser_store_shapes.rs` for the store records): a fully
//! populated value of each type (every `Option` is `Some`, every `Vec` and map non-empty, every
//! flag set), so a format that drops a field fails its round trip, and a minimal one (every
//! `Option` `None`, every `Vec` empty), so a format that writes an absent field fails its golden.
#![allow(dead_code)]

use memoire::engine::model::*;
use std::collections::BTreeMap;

pub const T0: Millis = 1_763_700_000_000;

pub fn full_overrides() -> MemoryOverrides {
    MemoryOverrides {
        recent_messages: Some(4),
        summary_every_pairs: Some(3),
        context_tokens: Some(4096),
        reply_reserve_tokens: Some(512),
        max_message_chars: Some(1500),
        history_format: Some(HistoryFormat::Transcript),
        memory_model: Some("qwen-mem".into()),
        model: Some("qwen-chat".into()),
        user_memory: Some(false),
        system_prompt: Some("Answer as a ship's cook.".into()),
        project: Some("p-galley".into()),
    }
}

pub fn full_conversation() -> Conversation {
    Conversation {
        id: "c-full".into(),
        title: "Trip planning".into(),
        title_is_custom: true,
        created_at: T0,
        updated_at: T0 + 60_000,
        message_count: 7,
        endpoint_profile_id: Some("profile-1".into()),
        remote_handle: Some(RemoteHandle {
            id: "resp_123".into(),
            endpoint_key: "openai-responses|https://api.example|gpt".into(),
            covers_up_to_seq: 6,
            confirmed_at: T0 + 1000,
            dead: true,
        }),
        last_path: Some(TurnPath::Resumed),
        memory_overrides: full_overrides(),
    }
}

pub fn minimal_conversation() -> Conversation {
    Conversation {
        id: "c-min".into(),
        title: String::new(),
        title_is_custom: false,
        created_at: T0,
        updated_at: T0,
        message_count: 0,
        endpoint_profile_id: None,
        remote_handle: None,
        last_path: None,
        memory_overrides: MemoryOverrides::default(),
    }
}

pub fn image() -> Attachment {
    Attachment {
        kind: AttachmentKind::Image,
        name: "boat.png".into(),
        mime: "image/png".into(),
        size: 2048,
        hash: "ab".repeat(32),
        width: 640,
        height: 480,
        text: String::new(),
    }
}

pub fn file() -> Attachment {
    Attachment {
        kind: AttachmentKind::File,
        name: "notes.txt".into(),
        mime: "text/plain".into(),
        size: 11,
        hash: "cd".repeat(32),
        width: 0,
        height: 0,
        text: "hello notes".into(),
    }
}

/// Every field of the message and its meta set (`deleted` aside: see [`full_message_deleted`]).
pub fn full_message() -> Message {
    Message {
        id: "m-full".into(),
        conversation_id: "c-full".into(),
        seq: 5,
        role: Role::Assistant,
        content: "Lyon, then Nice.".into(),
        status: MessageStatus::Error,
        created_at: T0 + 5000,
        meta: MessageMeta {
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "search".into(),
                arguments: "{\"q\":\"lyon\"}".into(),
                result: Some("found".into()),
                status: None,
            }],
            usage: Some(Usage {
                prompt_tokens: 120,
                completion_tokens: 30,
            }),
            error: Some("HTTP 500".into()),
            path: Some(TurnPath::Reinjected),
            model: Some("qwen-chat".into()),
            after: Some("m-3".into()),
            replaces: Some("m-4".into()),
            deleted: false,
            hidden: true,
            reasoning: Some(Reasoning {
                text: "Thinking of trains".into(),
                started_at: T0 + 4000,
                ended_at: Some(T0 + 4500),
            }),
            stats: Some(GenerationStats {
                tokens: 30,
                first_token_ms: Some(412),
                tokens_per_s: Some(48.5),
                cached_tokens: Some(2840),
            }),
            attachments: vec![image(), file()],
            capped: true,
        },
    }
}

/// [`full_message`] deleted (a tombstone): the store and the backup keep it, sync does not send it.
pub fn full_message_deleted() -> Message {
    let mut m = full_message();
    m.meta.deleted = true;
    m
}

pub fn minimal_message() -> Message {
    Message {
        id: "m-min".into(),
        conversation_id: "c-full".into(),
        seq: 1,
        role: Role::User,
        content: "hi".into(),
        status: MessageStatus::Complete,
        created_at: T0 + 1000,
        meta: MessageMeta::default(),
    }
}

pub fn summary() -> ConversationSummary {
    ConversationSummary {
        conversation_id: "c-full".into(),
        version: 2,
        text: "They plan a trip.".into(),
        covers_up_to_seq: 4,
        message_count: 5,
        updated_at: T0 + 7000,
    }
}

pub fn full_entity(scope: EntityScope) -> EntityNode {
    EntityNode {
        id: "e-full".into(),
        scope,
        entity_type: EntityType::Person,
        name: "Ana".into(),
        aliases: vec!["Annie".into(), "Ann".into()],
        description: "A traveller".into(),
        properties: BTreeMap::from([
            ("home".to_string(), "Lyon".to_string()),
            ("job".to_string(), "cook".to_string()),
        ]),
        property_since: BTreeMap::from([("home".to_string(), T0 + 3)]),
        past_properties: vec![PastProperty {
            key: "home".into(),
            value: "Nice".into(),
            valid_from: T0,
            valid_to: T0 + 3,
        }],
        relationships: vec![Relationship {
            target_id: "e-other".into(),
            relationship: "sister_of".into(),
            strength: 0.5,
            valid_from: T0 + 1,
            valid_to: Some(T0 + 2),
        }],
        source_message_ids: vec!["m-3".into(), "m-4".into()],
        updated_at: T0 + 8000,
    }
}

pub fn minimal_entity(scope: EntityScope) -> EntityNode {
    EntityNode {
        id: "e-min".into(),
        scope,
        entity_type: EntityType::Other,
        name: "Thing".into(),
        aliases: vec![],
        description: String::new(),
        properties: BTreeMap::new(),
        property_since: BTreeMap::new(),
        past_properties: vec![],
        relationships: vec![],
        source_message_ids: vec![],
        updated_at: T0,
    }
}

pub fn full_fact() -> UserFact {
    UserFact {
        id: "f-full".into(),
        text: "I live in Lyon now.".into(),
        kind: FactKind::Home,
        claim_key: "lives_in".into(),
        source: Some(FactSource {
            conversation_id: "c-full".into(),
            message_id: "m-3".into(),
            said_at: T0 + 3000,
        }),
        valid_from: T0 + 3000,
        valid_to: Some(T0 + 9000),
        forgotten: Some(T0 + 9500),
        scope: Some("p-galley".into()),
        updated_at: T0 + 9500,
    }
}

pub fn minimal_fact() -> UserFact {
    UserFact {
        id: "f-min".into(),
        text: "I like tea.".into(),
        kind: FactKind::Preference,
        claim_key: String::new(),
        source: None,
        valid_from: T0,
        valid_to: None,
        forgotten: None,
        scope: None,
        updated_at: T0,
    }
}

pub fn full_project() -> Project {
    Project {
        id: "p-galley".into(),
        name: "Galley".into(),
        instructions: "Speak of food.".into(),
        created_at: T0,
        updated_at: T0 + 100,
        deleted: Some(T0 + 200),
    }
}

pub fn minimal_project() -> Project {
    Project {
        id: "p-min".into(),
        name: "Min".into(),
        instructions: String::new(),
        created_at: T0,
        updated_at: T0,
        deleted: None,
    }
}
