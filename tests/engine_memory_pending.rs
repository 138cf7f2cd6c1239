#![cfg(not(target_arch = "wasm32"))]
//! What the user said that memory has not taken in yet (`engine::memory::pending`), and how the
//! prompt carries it (`engine::assemble`, section `Pending`): statements of the uncovered messages
//! history leaves out, changed facts never current.

use memoire::engine::assemble::{assemble, AssemblyInput, SectionKind, PENDING_HEADING};
use memoire::engine::memory::*;
use memoire::engine::model::*;
use memoire::engine::tokens::HeuristicEstimator;

const DAY: i64 = 86_400_000;
/// 2026-11-20 00:00 UTC.
const NOV_20: i64 = 1_795_132_800_000;

// ---------- pending ----------

/// `said`: (text, day offset from NOV_20, carried?).
fn check_pending(
    summary: Option<&str>,
    said: &[(&str, i64, bool)],
    statements: &[&str],
    past: &[&str],
) {
    let said: Vec<(&str, Millis, bool)> = said
        .iter()
        .map(|(t, d, c)| (*t, NOV_20 + d * DAY, *c))
        .collect();
    let p = memory_pending(summary, &said);
    let got: Vec<&str> = p.statements.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(got, statements, "statements of {said:?}");
    let rewritten = p.summary.clone().unwrap_or_default();
    for s in past {
        assert!(rewritten.contains(s), "{s:?} made past in {rewritten:?}");
    }
    if past.is_empty() {
        assert_eq!(p.summary, None, "the summary is unchanged");
    }
}

#[test]
fn the_users_statements_wait_for_memory() {
    check_pending(
        None,
        &[
            ("Hi! My name is Ingrid Valcourt.", 0, true),
            ("I have a cat called Zorblax.", 1, true),
        ],
        &[
            "User: My name is Ingrid Valcourt (said 2026-11-20).",
            "User: I have a cat called Zorblax (said 2026-11-21).",
        ],
        &[],
    );
    // Questions and requests tell nothing about the user.
    check_pending(
        None,
        &[
            ("Give me one tip for sleeping better.", 0, true),
            ("Can you explain tides?", 0, true),
        ],
        &[],
        &[],
    );
    // A message history carries whole is not repeated.
    check_pending(None, &[("I drive an old green Volvo.", 0, false)], &[], &[]);
    // What the summary already says is not repeated.
    check_pending(
        Some("User: I drive an old green Volvo (said 2026-11-19)."),
        &[("I drive an old green Volvo.", 0, true)],
        &[],
        &[],
    );
}

#[test]
fn a_changed_fact_is_never_pending_as_current() {
    // A later statement, carried or not, leaves the older one out.
    check_pending(
        None,
        &[
            ("I live in Lisbon, near the river.", 0, true),
            (
                "I moved to Oslo last month, so I live in Oslo now.",
                3,
                true,
            ),
        ],
        &["User: I moved to Oslo last month, so I live in Oslo now (said 2026-11-23)."],
        &[],
    );
    check_pending(
        None,
        &[
            ("I live in Lisbon, near the river.", 0, true),
            ("I live in Oslo now.", 3, false),
        ],
        &[],
        &[],
    );
    // The summary's sentence it supersedes is carried as past, from the day the change was said.
    check_pending(
        Some("User: I work as a nurse at the children's hospital (said 2026-11-01). Marta has a daughter."),
        &[("I changed careers: I am a pilot now.", 2, false)],
        &[],
        &["User: I work as a nurse at the children's hospital (said 2026-11-01; until 2026-11-22).", "Marta has a daughter."],
    );
    // A sentence that only names the old place goes past with it; one about the new place stays.
    check_pending(
        Some("User: I live in Lisbon (said 2026-11-01). Lisbon is a beautiful city. Oslo is cold."),
        &[("I moved to Oslo, so I live in Oslo now.", 2, false)],
        &[],
        &[
            "User: I live in Lisbon (said 2026-11-01; until 2026-11-22).",
            "Lisbon is a beautiful city (until 2026-11-22).",
            "Oslo is cold.",
        ],
    );
}

// ---------- in the prompt ----------

fn msg(seq: u64, role: Role, content: &str) -> Message {
    Message {
        id: format!("m{seq}"),
        conversation_id: "c".into(),
        seq,
        role,
        content: content.into(),
        status: MessageStatus::Complete,
        created_at: NOV_20 + seq as i64 * 60_000,
        meta: MessageMeta::default(),
    }
}

const LONG_REPLY: &str = "That is a good question, and there is a lot to say about it. In short it depends on a few \
things, and the most important ones are the conditions around you, how much time you have, and what you want in the \
end. Start small, check the result, and adjust step by step; most people find that a steady routine works better than \
one big effort. If you want, I can go into more detail on any part of it.";

/// The whole text of the prompt for `next` after `user` turns (each answered with a long reply),
/// under a 1,000-token budget, with `summary` covering up to `covers`.
fn prompt(user: &[&str], next: &str, summary: Option<(&str, u64)>) -> (String, Vec<SectionKind>) {
    let mut history = Vec::new();
    for u in user {
        let seq = history.len() as u64 + 1;
        history.push(msg(seq, Role::User, u));
        history.push(msg(seq + 1, Role::Assistant, LONG_REPLY));
    }
    let new = msg(history.len() as u64 + 1, Role::User, next);
    let summary = summary.map(|(text, covers)| ConversationSummary {
        conversation_id: "c".into(),
        version: 1,
        text: text.into(),
        covers_up_to_seq: covers,
        message_count: covers,
        updated_at: NOV_20,
    });
    let config = MemoryConfig {
        recent_messages: 4,
        context_tokens: 1400,
        reply_reserve_tokens: 400,
        ..MemoryConfig::default()
    };
    let a = assemble(
        &AssemblyInput {
            system_prompt: "You are a helpful assistant.",
            summary: summary.as_ref(),
            entities: &[],
            history: &history,
            new_message: &new,
            config: &config,
            protocol: Protocol::OpenAiChat,
            user_facts: &[],
            recall: &[],
        },
        &HeuristicEstimator,
    );
    assert!(!a.over_budget);
    let all = std::iter::once(a.prompt.system.clone())
        .chain(a.prompt.messages.iter().map(|m| m.content.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (all, a.sections.iter().map(|s| s.kind).collect())
}

const FILLER: [&str; 8] = [
    "How do ocean tides work?",
    "What is the difference between baking soda and baking powder?",
    "How do I keep basil alive in winter?",
    "Why is the sky blue?",
    "How does a bicycle stay upright?",
    "How do I learn chess openings?",
    "Suggest a stretching routine.",
    "How do noise cancelling headphones work?",
];

#[test]
fn facts_history_cannot_carry_stay_in_the_prompt_until_memory_covers_them() {
    let mut user = vec![
        "Hi! My name is Ingrid Valcourt.",
        "I have a cat called Zorblax.",
    ];
    user.extend(FILLER);
    let (system, kinds) = prompt(&user, "What do you remember about me?", None);
    assert!(kinds.contains(&SectionKind::Pending), "{kinds:?}");
    assert!(system.contains(PENDING_HEADING));
    assert!(
        system.contains("Ingrid Valcourt") && system.contains("Zorblax"),
        "{system}"
    );
    // The questions are not facts.
    assert!(!system.contains("User: How do"), "{system}");
    // Once the summary covers those messages, it carries them instead.
    let (system, kinds) = prompt(
        &user,
        "What do you remember about me?",
        Some((
            "Ingrid Valcourt has a cat called Zorblax.",
            user.len() as u64 * 2,
        )),
    );
    assert!(!kinds.contains(&SectionKind::Pending), "{kinds:?}");
    assert!(!system.contains(PENDING_HEADING));
    // Nothing left out, nothing pending.
    let (_, kinds) = prompt(&["I have a cat called Zorblax."], "And you?", None);
    assert!(!kinds.contains(&SectionKind::Pending), "{kinds:?}");
}

/// The prompt names Lisbon, and only in sentences carrying an "until" note.
fn check_lisbon_only_as_past(prompt: &str) {
    let lisbon: Vec<&str> = prompt
        .split_inclusive('.')
        .filter(|s| s.contains("Lisbon"))
        .collect();
    assert!(
        !lisbon.is_empty() && lisbon.iter().all(|s| s.contains("until ")),
        "{prompt}"
    );
}

#[test]
fn a_changed_fact_is_carried_as_past_or_not_at_all() {
    let mut user = vec!["I live in Lisbon, near the river.", "I work as a nurse."];
    user.extend(FILLER);
    user.push("I moved to Oslo last month, so I live in Oslo now.");
    user.extend(&FILLER[..3]);
    let (system, _) = prompt(&user, "Where do I live?", None);
    assert!(system.contains("Oslo"), "{system}");
    assert!(
        !system.contains("Lisbon"),
        "the old city is not pending: {system}"
    );
    assert!(system.contains("nurse"), "{system}");
    // The summary said Lisbon; a message it does not cover yet says Oslo.
    let (system, _) = prompt(
        &user,
        "Where do I live?",
        Some((
            "User: I live in Lisbon, near the river (said 2026-11-20).",
            2,
        )),
    );
    check_lisbon_only_as_past(&system);
    // ... also when the change is the new message itself.
    let (system, _) = prompt(
        &user[..4],
        "I moved to Oslo, I live in Oslo now.",
        Some((
            "User: I live in Lisbon, near the river (said 2026-11-20).",
            2,
        )),
    );
    check_lisbon_only_as_past(&system);
}

// ---------- an empty answer in the update's shape ----------

fn update_request(user: &str) -> UpdateRequest {
    let messages = vec![msg(1, Role::User, user), msg(2, Role::Assistant, "Lovely.")];
    build_update_request(
        None,
        &messages,
        &[],
        &UpdateLimits::from_config(&MemoryConfig::default()),
    )
    .expect("messages to summarise")
}

fn check_read(user: &str, reply: &str, want: Result<&str, MemoryError>) {
    let got = update_request(user)
        .read_reply(reply)
        .map(|p| p.summary.unwrap_or_default());
    match want {
        Ok(fact) => assert!(
            got.as_deref().is_ok_and(|s| s.contains(fact)),
            "{reply:?}: {got:?}"
        ),
        Err(e) => assert_eq!(got, Err(e), "{reply:?}"),
    }
}

#[test]
fn an_empty_answer_in_the_updates_shape_still_keeps_what_the_user_said() {
    let told = "My name is Ingrid and I keep alpacas on a farm near Tromsø.";
    check_read(
        told,
        r#"{"summary": "", "entities": [], "no_longer_true": []}"#,
        Ok("alpacas"),
    );
    check_read(told, r#"{"summary": ""}"#, Ok("Ingrid"));
    // Nothing the user said tells anything: still nothing to keep.
    check_read(
        "What is a good name for a boat?",
        r#"{"summary": "", "entities": []}"#,
        Err(MemoryError::NoMemory),
    );
    // A reply that is not the update's shape stays a failure, whatever the user said.
    check_read(
        told,
        "I'm sorry, I can't help with that.",
        Err(MemoryError::NoMemory),
    );
    check_read(told, "", Err(MemoryError::EmptyReply));
}
