//! Benchmark: assembling a prompt from a 10,000-message conversation of ~1 KB messages, with a
//! summary and 200 entities. Prints `bench assemble_10k_ms <median> ms` (median of 21 runs), and the
//! heuristic estimator's throughput as `bench estimate_mb_per_s <median> MB/s`.
use memoire::engine::assemble::{assemble, AssemblyInput};
use memoire::engine::model::*;
use memoire::engine::tokens::{HeuristicEstimator, TokenEstimator};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

const WORDS: &[&str] = &[
    "the",
    "memory",
    "conversation",
    "agent",
    "remembers",
    "what",
    "was",
    "said",
    "before",
    "and",
    "after",
    "restart",
    "context",
    "budget",
    "tokens",
    "summary",
    "entity",
    "graph",
    "Paris",
    "Ada",
];

fn text(seed: u64, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 16);
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    while s.len() < bytes {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s.push_str(WORDS[(x >> 33) as usize % WORDS.len()]);
        s.push(if (x >> 20) % 13 == 0 { '.' } else { ' ' });
    }
    s
}

fn main() {
    let history: Vec<Message> = (1..=10_000u64)
        .map(|seq| Message {
            id: format!("msg-{seq:06}"),
            conversation_id: "c".into(),
            seq,
            role: if seq % 2 == 1 {
                Role::User
            } else {
                Role::Assistant
            },
            content: text(seq, 1000),
            status: MessageStatus::Complete,
            created_at: seq as i64 * 1000,
            meta: MessageMeta::default(),
        })
        .collect();
    let entities: Vec<EntityNode> = (0..200usize)
        .map(|i| EntityNode {
            id: format!("ent-{i}"),
            scope: EntityScope::Conversation("c".into()),
            entity_type: EntityType::ALL[i % 6],
            name: format!("Entity {i}"),
            aliases: vec![format!("E{i}")],
            description: text(i as u64 + 99_999, 120),
            properties: BTreeMap::from([("since".to_string(), "2024".to_string())]),
            property_since: Default::default(),
            past_properties: Default::default(),
            relationships: vec![Relationship {
                target_id: format!("ent-{}", (i + 1) % 200),
                relationship: "related to".into(),
                strength: 0.5,
                valid_from: 0,
                valid_to: None,
            }],
            source_message_ids: vec![],
            updated_at: 0,
        })
        .collect();
    let summary = ConversationSummary {
        conversation_id: "c".into(),
        version: 12,
        text: text(7, 3000),
        covers_up_to_seq: 9_980,
        message_count: 9_980,
        updated_at: 0,
    };
    let new = Message {
        id: "msg-new".into(),
        conversation_id: "c".into(),
        seq: 10_001,
        role: Role::User,
        content: "What did we decide about the memory budget?".into(),
        status: MessageStatus::Complete,
        created_at: 0,
        meta: MessageMeta::default(),
    };
    let config = MemoryConfig {
        context_tokens: 32_768,
        reply_reserve_tokens: 2_048,
        ..MemoryConfig::default()
    };
    let input = AssemblyInput {
        system_prompt: "You are a helpful assistant with a long memory.",
        summary: Some(&summary),
        entities: &entities,
        history: &history,
        new_message: &new,
        config: &config,
        protocol: Protocol::OpenAiChat,
        user_facts: &[],
        project: None,
        recall: &[],
    };
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..21 {
        let t = Instant::now();
        let a = assemble(black_box(&input), &HeuristicEstimator);
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        last = Some(a);
    }
    let a = last.unwrap();
    assert!(!a.over_budget && a.included_message_ids.len() > 10 && a.dropped.len() > 9_000);
    times.sort_by(|x, y| x.total_cmp(y));
    println!("bench assemble_10k_ms {:.3} ms", times[times.len() / 2]);

    let corpus: String = history[..2000].iter().map(|m| m.content.as_str()).collect();
    let mut rates = Vec::new();
    for _ in 0..11 {
        let t = Instant::now();
        black_box(HeuristicEstimator.estimate(black_box(&corpus)));
        rates.push(corpus.len() as f64 / 1e6 / t.elapsed().as_secs_f64());
    }
    rates.sort_by(|x, y| x.total_cmp(y));
    println!("bench estimate_mb_per_s {:.0} MB/s", rates[rates.len() / 2]);
}
