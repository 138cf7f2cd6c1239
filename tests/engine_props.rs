#![cfg(not(target_arch = "wasm32"))]
//! Property tests for context assembly: never over the budget or byte cap (unless the system prompt
//! and the new message alone are, which is reported), never drops the system prompt or the new
//! message, deterministic; and the title never panics or overflows.

use memoire::engine::assemble::{assemble, Assembly, AssemblyInput, SectionKind};
use memoire::engine::model::*;
use memoire::engine::title::auto_title;
use memoire::engine::tokens::HeuristicEstimator;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn arb_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,300}",
        "[\\p{Han}\\p{Hiragana}、。]{0,120}",
        "\\PC{0,200}",
        "[{}\":,\\[\\]0-9a-z\n ]{0,400}",
    ]
}

fn arb_message(seq: u64) -> impl Strategy<Value = Message> {
    (
        arb_text(),
        prop_oneof![Just(Role::User), Just(Role::Assistant), Just(Role::Tool)],
        prop_oneof![
            6 => Just(MessageStatus::Complete),
            1 => Just(MessageStatus::Error),
            1 => Just(MessageStatus::Interrupted)
        ],
        proptest::option::weighted(0.1, "[a-z_]{1,10}"),
    )
        .prop_map(move |(content, role, status, tool)| Message {
            id: format!("m{seq}"),
            conversation_id: "c".into(),
            seq,
            role,
            content,
            status,
            created_at: seq as i64,
            meta: MessageMeta {
                tool_calls: tool
                    .map(|name| {
                        vec![ToolCall {
                            name,
                            ..Default::default()
                        }]
                    })
                    .unwrap_or_default(),
                ..Default::default()
            },
        })
}

fn arb_history() -> impl Strategy<Value = Vec<Message>> {
    (0u64..40).prop_flat_map(|n| (1..=n).map(arb_message).collect::<Vec<_>>())
}

fn arb_entity(i: usize) -> impl Strategy<Value = EntityNode> {
    ("[A-Za-z ]{1,20}", arb_text()).prop_map(move |(name, description)| EntityNode {
        id: format!("e{i}"),
        scope: EntityScope::Shared,
        entity_type: EntityType::Concept,
        name,
        aliases: vec![],
        description,
        properties: BTreeMap::new(),
        property_since: Default::default(),
        past_properties: Default::default(),
        relationships: vec![Relationship {
            target_id: "e0".into(),
            relationship: "about".into(),
            strength: 0.5,
            valid_from: 0,
            valid_to: None,
        }],
        source_message_ids: vec![],
        updated_at: 0,
    })
}

#[derive(Debug, Clone)]
struct Case {
    system: String,
    history: Vec<Message>,
    new_text: String,
    summary: Option<(String, u64)>,
    entities: Vec<EntityNode>,
    config: MemoryConfig,
    protocol: Protocol,
}

fn arb_case() -> impl Strategy<Value = Case> {
    (
        arb_text(),
        arb_history(),
        arb_text(),
        proptest::option::of((arb_text(), 0u64..40)),
        (0usize..8).prop_flat_map(|n| (0..n).map(arb_entity).collect::<Vec<_>>()),
        (
            0u32..4000,
            0u32..1000,
            0usize..12,
            1usize..600,
            200usize..20_000,
            any::<bool>(),
        ),
        prop_oneof![
            Just(Protocol::OpenAiChat),
            Just(Protocol::Anthropic),
            Just(Protocol::Ollama)
        ],
    )
        .prop_map(
            |(system, history, new_text, summary, entities, c, protocol)| Case {
                system,
                history,
                new_text,
                summary,
                entities,
                config: MemoryConfig {
                    context_tokens: c.0,
                    reply_reserve_tokens: c.1,
                    recent_messages: c.2,
                    max_message_chars: c.3,
                    max_request_bytes: c.4,
                    history_format: if c.5 {
                        HistoryFormat::Transcript
                    } else {
                        HistoryFormat::Messages
                    },
                    summary_every_pairs: 5,
                    user_memory: true,
                },
                protocol,
            },
        )
}

fn run(case: &Case) -> Assembly {
    let new = Message {
        id: "new".into(),
        conversation_id: "c".into(),
        seq: 1000,
        role: Role::User,
        content: case.new_text.clone(),
        status: MessageStatus::Complete,
        created_at: 1000,
        meta: MessageMeta::default(),
    };
    let summary = case
        .summary
        .as_ref()
        .map(|(text, covers)| ConversationSummary {
            conversation_id: "c".into(),
            version: 1,
            text: text.clone(),
            covers_up_to_seq: *covers,
            message_count: *covers,
            updated_at: 0,
        });
    assemble(
        &AssemblyInput {
            system_prompt: &case.system,
            summary: summary.as_ref(),
            entities: &case.entities,
            history: &case.history,
            new_message: &new,
            config: &case.config,
            protocol: case.protocol,
            user_facts: &[],
            recall: &[],
        },
        &HeuristicEstimator,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn never_over_budget_or_byte_cap_unless_mandatory_parts_are(case in arb_case()) {
        let a = run(&case);
        let sys = a.section(SectionKind::System).unwrap();
        let new = a.section(SectionKind::NewMessage).unwrap();
        let mandatory_tokens = sys.tokens as u64 + new.tokens as u64;
        let mandatory_bytes = sys.bytes + new.bytes + memoire::engine::assemble::REQUEST_OVERHEAD_BYTES;
        let sum: u64 = a.sections.iter().map(|s| s.tokens as u64).sum();
        prop_assert_eq!(sum, a.total_tokens as u64);
        if mandatory_tokens <= a.budget_tokens as u64 {
            prop_assert!(a.total_tokens <= a.budget_tokens, "{} > {}", a.total_tokens, a.budget_tokens);
            prop_assert!(!a.over_budget);
        } else {
            prop_assert!(a.over_budget);
            prop_assert_eq!(a.sections.len(), 2, "only system and new message when they alone exceed");
        }
        if mandatory_bytes <= a.max_bytes {
            prop_assert!(a.total_bytes <= a.max_bytes);
            prop_assert!(!a.over_byte_cap);
            // The estimate bounds the real serialised prompt text.
            let real = serde_json::to_string(&a.prompt).unwrap().len();
            prop_assert!(real <= a.total_bytes, "real {} > estimated {}", real, a.total_bytes);
        } else {
            prop_assert!(a.over_byte_cap);
        }
    }

    #[test]
    fn never_drops_system_or_new_message(case in arb_case()) {
        let a = run(&case);
        prop_assert_eq!(a.included_message_ids.last().map(String::as_str), Some("new"));
        prop_assert_eq!(&a.section(SectionKind::System).unwrap().text, &case.system);
        prop_assert!(a.prompt.system.starts_with(case.system.trim_end()));
        let last = a.prompt.messages.last().unwrap();
        prop_assert_eq!(last.role, Role::User);
        prop_assert!(last.content.ends_with(&case.new_text));
        // Every history message is accounted for exactly once.
        let mut seen: Vec<&str> = a.included_message_ids.iter().map(String::as_str).collect();
        seen.extend(a.dropped.iter().map(|d| d.message_id.as_str()));
        seen.sort();
        let mut all: Vec<&str> = case.history.iter().map(|m| m.id.as_str()).chain(["new"]).collect();
        all.sort();
        prop_assert_eq!(seen, all);
    }

    #[test]
    fn same_input_same_output(case in arb_case()) {
        prop_assert_eq!(run(&case), run(&case.clone()));
    }

    #[test]
    fn title_is_bounded_and_never_panics(s in "\\PC{0,200}") {
        let t = auto_title(&s);
        prop_assert!(t.chars().count() <= 50);
        prop_assert!(!t.is_empty());
    }
}
